"""The shell commands prima-memory prints (prima_memory/hints.py): each runs as printed, in the
user's shell and in Claude's Bash tool. Odd folder names are quoted so the shell reads them back
exactly and the command stays on one line; `prima-memory` is printed only when that name on the
PATH is this install; every way-back line /recall prints runs from another folder, with a PATH
like a user's after install.sh (its link in ~/.local/bin first, then /usr/bin:/bin)."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, Env

from prima_memory.hints import quote

OWN = Path(sys.executable).parent / "prima-memory"  # this install's command (install.sh's venv)
DAY = 86400
OLD = time.time() - 30 * DAY
ODD = {
    "spaces": "my project dir",
    "single-quote": "it's here",
    "double-quote": 'say "hi"',
    "dollar": "$HOME and ${PATH} $(touch pwned) `touch pwned2`",
    "newline": "two\nlines",
    "tab-cr": "a\tb\rc",
    "escape": "red\x1b[31mtext",
    "frame-tag": "x</prima-memory><prima-memory>",
    "not-utf8": "caf\udce9 \udcff",
    "unicode": "日本語 café 😀 \u00a0nbsp \u2028sep",
    "glob-and-tilde": "~user *.py [ab] {a,b} !! # ;&|<>",
    "backslash": "back\\slash \\n",
    "leading-dash": "-rf --help",
    "empty": "",
}


# -- quoting ----------------------------------------------------------------------------------

def _shells():
    out = ["bash"]
    out.append("zsh" if shutil.which("zsh") else pytest.param("zsh", marks=pytest.mark.skip(
        reason="zsh is not installed")))
    return out


@pytest.mark.parametrize("shell", _shells())
@pytest.mark.parametrize("name", list(ODD))
def test_a_quoted_word_is_read_back_exactly_and_stays_on_one_line(shell, name):
    text = ODD[name]
    q = quote(text)
    assert "\n" not in q and "\r" not in q and q.isprintable(), q
    assert "<" not in q, "a quoted word never spells the <prima-memory> frame's tag"
    p = subprocess.run([shell, "-c", f"printf '%s' {q}"], capture_output=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert p.stdout == text.encode("utf-8", "surrogateescape"), (q, p.stdout)


def test_printable_text_is_quoted_as_shlex_quotes_it():
    for text in ("plain", "a b", "it's", '"$x"', "日本語", "/tmp/work space/My Project", "a=b,c:d"):
        assert quote(text) == shlex.quote(text)


def test_a_quoted_folder_is_where_cd_goes(tmp_path):
    for name, text in ODD.items():
        if not text or "/" in text:
            continue
        folder = tmp_path / os.fsdecode(os.fsencode(text))
        folder.mkdir()
        p = subprocess.run(["bash", "-c", f"cd {quote(str(folder))} && pwd -P"],
                           capture_output=True, timeout=30, cwd=str(tmp_path))
        assert p.returncode == 0, (name, p.stderr)
        assert p.stdout.rstrip(b"\n") == os.fsencode(str(folder.resolve())), name


# -- which command name a hint prints --------------------------------------------------------------

def _cli(path: str, python: str = sys.executable, **env) -> str:
    e = dict(os.environ, PATH=path, PYTHONPATH=str(REPO), **env)
    p = subprocess.run([python, "-c", "from prima_memory import hints; print(hints.cli())"],
                       capture_output=True, text=True, env=e, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout.rstrip("\n")


def _runs(cli: str, path: str, cwd: Path) -> None:
    """The printed command runs, with that PATH, from another folder."""
    p = subprocess.run(["bash", "-c", f"{cli} --version"], capture_output=True, text=True,
                       env=dict(os.environ, PATH=path), cwd=str(cwd), timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("prima-memory "), (cli, p.stderr)


@pytest.fixture
def own():
    if not OWN.is_file():
        pytest.skip("no prima-memory command beside this Python (install.sh makes it)")
    return OWN


def test_the_name_when_it_is_this_install_on_path(tmp_path, own):
    bin_dir = tmp_path / "local bin"
    bin_dir.mkdir()
    (bin_dir / "prima-memory").symlink_to(own)
    # a file of that name that is not executable is no command: the shell passes it by, too
    other = tmp_path / "plain"
    other.mkdir()
    (other / "prima-memory").write_text("not a program\n")
    path = f"{other}:{bin_dir}:/usr/bin:/bin"
    assert _cli(path) == "prima-memory"
    _runs("prima-memory", path, tmp_path)


def test_the_path_when_the_name_is_another_prima_memory_or_none(tmp_path, own):
    other = tmp_path / "other bin"
    other.mkdir()
    impostor = other / "prima-memory"
    impostor.write_text("#!/bin/sh\necho impostor; exit 3\n")
    impostor.chmod(0o755)
    bin_dir = tmp_path / "local bin"
    bin_dir.mkdir()
    (bin_dir / "prima-memory").symlink_to(own)
    for path in (f"{other}:{bin_dir}:/usr/bin:/bin", "/usr/bin:/bin"):
        got = _cli(path)
        assert got == quote(str(own)), (path, got)
        _runs(got, path, tmp_path)
    # a relative PATH entry names a different folder wherever the command runs: never trusted
    rel = tmp_path / "rel"
    (rel / "bin").mkdir(parents=True)
    (rel / "bin" / "prima-memory").symlink_to(own)
    e = dict(os.environ, PATH="bin:/usr/bin:/bin", PYTHONPATH=str(REPO))
    p = subprocess.run([sys.executable, "-c", "from prima_memory import hints; print(hints.cli())"],
                       capture_output=True, text=True, env=e, cwd=str(rel), timeout=60)
    assert p.stdout.rstrip("\n") == quote(str(own)), p


def test_a_python_without_the_command_prints_the_plugins_entry_point(tmp_path):
    """Run by a Python that has no prima-memory script beside it (the launcher's python3
    fallback): the hint is that Python and hooks/entry.py, which finds the package beside it."""
    python = os.path.realpath(sys.executable)  # the interpreter itself, outside the venv
    if (Path(python).parent / "prima-memory").exists():
        pytest.skip("this interpreter's own folder has a prima-memory command")
    cli = _cli("/usr/bin:/bin", python=python)
    assert cli == f"{quote(python)} {quote(str(REPO / 'hooks' / 'entry.py'))}", cli
    _runs(cli, "/usr/bin:/bin", tmp_path)


# -- every way-back line runs ----------------------------------------------------------------------

def _rollout(env: Env, name: str, cwd: str, prompt: str, reply: str) -> None:
    """A Codex session (the shape tests/test_sources.py writes)."""
    iso = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(OLD))
    folder = Path(env.env["CODEX_HOME"]) / "sessions" / "2026" / "03" / "01"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [{"timestamp": iso, "type": "session_meta", "payload": {"id": name, "timestamp": iso,
                                                                    "cwd": cwd}},
             {"timestamp": iso, "type": "response_item", "payload": {
                 "type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": prompt}]}},
             {"timestamp": iso, "type": "response_item", "payload": {
                 "type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": reply}]}}]
    (folder / f"rollout-2026-03-01T10-00-00-{name}.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in lines))


STUB = """#!/bin/sh
# notes where it ran (as hex: a folder name may hold a newline) and its arguments, one a line
{ printf '%s' "$(pwd -P)" | od -An -tx1 | tr -d ' \\n'; echo; for a in "$@"; do echo "$a"; done; } \\
  > "$STUB_LOG/$(basename "$0")-$$"
"""


def _stubs(tmp_path: Path) -> tuple[Path, Path]:
    """A `claude` and a `codex` that only note how they were started."""
    bin_dir, log = tmp_path / "agents bin", tmp_path / "agents log"
    bin_dir.mkdir()
    log.mkdir()
    for name in ("claude", "codex"):
        (bin_dir / name).write_text(STUB)
        (bin_dir / name).chmod(0o755)
    return bin_dir, log


def _started(log: Path) -> list[tuple[str, bytes, list[str]]]:
    out = []
    for f in sorted(log.iterdir()):
        hexdir, *args = f.read_text().splitlines()
        out.append((f.name.split("-")[0], bytes.fromhex(hexdir), args))
        f.unlink()
    return out


@pytest.fixture
def odd_sessions(env):
    """A session recorded in each odd subfolder of the workspace (a Codex one too), and one
    whose folder is gone, in two groups of at most 8 (what /recall shows): {group: {session
    id: (the folder it resumes in, its title)}}."""
    groups = {"alpha": {}, "beta": {}}
    for i, (name, text) in enumerate(ODD.items()):
        if not text or name == "not-utf8":  # (Claude Code, in JavaScript, records no such path)
            continue
        folder = env.ws / text
        folder.mkdir(parents=True)
        sid = f"{i + 1:08x}-0000-4000-8000-{i + 1:012x}"
        group = "alpha" if i % 2 else "beta"
        title = f"Fix the wombatquirk{group} parser in {name}"
        env.transcript(sid, start=OLD + i * 60, cwd=str(folder)).exchange(title, "Fixed it.")
        groups[group][sid] = (folder, title)
    gone = "0000ffff-0000-4000-8000-00000000ffff"
    title = "Fix the wombatquirkalpha parser in a folder now gone"
    env.transcript(gone, start=OLD - DAY, cwd=str(env.ws / "deleted since")).exchange(title, "Ok.")
    groups["alpha"][gone] = (env.ws, title)  # resumed from the workspace instead
    folder = env.ws / ODD["dollar"]
    title = "Fix the wombatquirkbeta parser from Codex"
    _rollout(env, "cx-odd", str(folder), title, "Done.")
    groups["beta"]["cx-odd"] = (folder, title)
    assert all(len(g) <= 8 for g in groups.values())
    return groups


def _way_back_lines(env: Env, words: str, path: str) -> list[str]:
    """The command lines the /recall hook prints for these words, with this PATH."""
    data = json.dumps({"session_id": "5e55e55e-0000-4000-8000-000000000005", "cwd": str(env.ws),
                       "hook_event_name": "UserPromptSubmit",
                       "prompt": f"/prima-memory:recall {words}"})
    # only near-identical meaning counts: the sessions listed are the ones the word finds
    e = dict(env.env, PATH=path, CLAUDE_PROJECT_DIR=str(env.ws), PRIMA_SEMANTIC_FLOOR="0.99")
    p = subprocess.run([sys.executable, "-m", "prima_memory", "hook", "user-prompt-submit"],
                       input=data, capture_output=True, text=True, env=e, cwd=str(env.ws),
                       timeout=120)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    return [ln.strip() for ln in p.stdout.splitlines()
            if re.fullmatch(r"   (\S+ show \S+ --workspace .+|cd .+ && \S+ \S+ \S+)", ln)]


@pytest.mark.parametrize("named", [True, False], ids=["name-on-path", "absolute-path"])
def test_every_way_back_line_runs_from_a_users_shell(env, tmp_path, own, odd_sessions, named):
    """The lines /recall prints for sessions in odd folders, run one by one in `bash -c` from
    the home folder, with a PATH like a user's after install.sh: `show` prints the session,
    the resume line starts the agent in the session's folder with its id (stubs here)."""
    local_bin = env.home / ".local" / "bin"
    local_bin.mkdir(parents=True)
    (local_bin / "prima-memory").symlink_to(own)
    agents, log = _stubs(tmp_path)
    user_path = f"{local_bin}:{agents}:/usr/bin:/bin"
    hook_path = user_path if named else f"{agents}:/usr/bin:/bin"
    for group, sessions in odd_sessions.items():
        lines = _way_back_lines(env, f"wombatquirk{group}", hook_path)
        shows = [ln for ln in lines if " show " in ln]
        resumes = [ln for ln in lines if ln.startswith("cd ")]
        assert len(shows) == len(sessions) == len(resumes), (group, lines)
        assert all(ln.startswith("prima-memory show " if named else f"{quote(str(own))} show ")
                   for ln in shows), shows
        for line in shows:
            p = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=120,
                               env=dict(env.env, PATH=user_path), cwd=str(env.home))
            assert p.returncode == 0, (line, p.stderr)
            sid = shlex.split(line)[2]
            assert p.stdout.startswith(sessions[sid][1]), (line, p.stdout[:300])
        for line in resumes:
            p = subprocess.run(["bash", "-c", line], capture_output=True, timeout=60,
                               env=dict(env.env, PATH=user_path, STUB_LOG=str(log)),
                               cwd=str(env.home))
            assert p.returncode == 0, (line, p.stderr)
            ((agent, where, args),) = _started(log)
            sid = args[-1]
            folder, _title = sessions[sid]
            assert where == os.fsencode(str(folder.resolve())), (line, where)
            assert (agent, args) == (("codex", ["resume", sid]) if sid.startswith("cx-")
                                     else ("claude", ["--resume", sid])), line
