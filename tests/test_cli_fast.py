"""A plain search's command line is read without argparse (cli._plain_search), to the same
arguments argparse gives; anything else goes to argparse as before."""
from __future__ import annotations

import itertools
import random
import subprocess
import sys

import pytest

from conftest import REPO
from prima_memory import cli
from prima_memory.errors import UsageError

TOKENS = ["search", "recent", "show", "--mode", "keyword", "semantic", "--mode=combined",
          "--mode=fast", "--limit", "5", "0", "--limit=20", "-5", "--deep", "--deep=1", "--json",
          "--workspace", "/tmp/a b", "--workspace=/x", "--all-projects", "--since", "yesterday",
          "--until=2026-01-01", "--branch", "main", "--tag", "bugfix", "--source", "codex",
          "--context", "21", "--context=3", "login", "redirect loop", "-", "--", "-h", "--help",
          "--lim", "7", "--version", "-n", "x=y", "", "é", "--workspace=", "--since="]


def _argparse(argv):
    try:
        return vars(cli._parser(cli._command_in(argv)).parse_args(argv))
    except (UsageError, SystemExit):
        return None


def _check(argv):
    plain = cli._plain_search(list(argv))
    if plain is not None:  # only a command line argparse reads the same way
        assert vars(plain) == _argparse(list(argv)), argv
    return plain


def test_plain_searches_are_read_as_argparse_reads_them():
    for argv in (["search", "login"], ["search", "login", "redirect", "--mode", "keyword"],
                 ["--json", "search", "--mode=keyword", "a", "b", "--json"],
                 ["--workspace", "/w", "search", "q", "--workspace", "/v", "--limit", "3",
                  "--since", "3 days ago", "--until=today", "--branch", "main", "--tag", "t",
                  "--source", "codex", "--context", "2", "--deep", "--all-projects"],
                 ["search", "x=y", "--limit=1"], ["search", "--since=", "q"]):
        assert _check(argv) is not None, argv


@pytest.mark.parametrize("argv", [
    ["search"], ["search", "--mode", "fast", "q"], ["search", "q", "--limit", "0"],
    ["search", "a", "--deep", "b"], ["search", "q", "--lim", "3"], ["search", "-h"],
    ["search", "--", "q"], ["--mode", "keyword", "search", "q"], ["search", "q", "--deep=1"],
    ["search", "q", "--limit"], ["search", "q", "--limit", "-5"], ["recent"], ["--version"],
    ["search", "-x"], ["search", "q", "--context", "21"], [], ["search", "q", "-"]])
def test_anything_else_goes_to_argparse(argv):
    assert cli._plain_search(argv) is None


def test_random_command_lines():
    rng = random.Random(5)
    taken = 0
    for _ in range(4000):
        argv = ["search"] if rng.random() < 0.7 else []
        argv += [rng.choice(TOKENS) for _ in range(rng.randrange(6))]
        rng.shuffle(argv) if rng.random() < 0.2 else None
        taken += _check(argv) is not None
    for argv in itertools.permutations(["search", "q", "--json", "--deep", "--mode", "keyword"]):
        taken += _check(list(argv)) is not None
    assert taken > 400  # (the plain form is common among them)


def test_a_keyword_search_imports_neither_argparse_nor_re(env):
    env.transcript("a0000000-0000-4000-8000-00000000000a", start=1_790_000_000).exchange(
        "Fix the login loop", "Fixed.")
    env.run("index")
    for extra in ([], ["--json"]):
        p = subprocess.run([sys.executable, "-X", "importtime", "-c",
                            "import sys; from prima_memory.main import main; sys.exit(main())",
                            "search", "login", "--mode", "keyword", *extra],
                           capture_output=True, text=True, cwd=str(env.ws), env=env.env,
                           timeout=60)
        assert p.returncode == 0, p.stderr[-2000:]
        assert "Fix the login loop" in p.stdout
        imported = {line.split("|")[-1].strip() for line in p.stderr.splitlines()
                    if line.startswith("import time:")}
        assert "prima_memory.storage" in imported
        heavy = {"re", "json", "argparse", "gettext", "enum", "datetime", "orjson", "numpy",
                 "prima_memory.projects", "prima_memory.session_view", "prima_memory.redact",
                 "prima_memory.sources.jsonl", "prima_memory.sources.text"}
        assert imported & heavy == set(), imported & heavy


def _launcher_module():
    import importlib.util
    spec = importlib.util.spec_from_file_location("launcher", REPO / "scripts" / "launcher.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("folder", ["plain", "with space", "long-" + "x" * 130])
def test_the_command_runs_from_any_folder_its_python_is_in(tmp_path, folder):
    bindir = tmp_path / folder
    bindir.mkdir()
    python = bindir / "python"
    python.symlink_to(sys.executable)
    cmd = bindir / "prima-memory"
    p = subprocess.run([str(python), str(REPO / "scripts" / "launcher.py"), str(cmd)],
                       capture_output=True, text=True, env={"PYTHONPATH": str(REPO)})
    assert p.returncode == 0, p.stderr
    out = subprocess.run([str(cmd), "--version"], capture_output=True, text=True,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0 and out.stdout.startswith("prima-memory "), out.stderr
    assert cmd.read_text().startswith("#!/bin/sh" if (" " in folder or len(folder) > 100)
                                      else f"#!{python}")


def test_the_installed_command_is_the_lean_one():
    cmd = REPO / ".venv" / "bin" / "prima-memory"
    if not cmd.is_file():
        pytest.skip("install.sh has not been run here (no .venv)")
    assert cmd.read_text() == _launcher_module().launcher(str(REPO / ".venv" / "bin" / "python"))
