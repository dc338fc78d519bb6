"""install.sh puts `prima-memory` on PATH: a link in ~/.local/bin to this install's command,
never replacing a file it did not make, and saying plainly when that folder is not on PATH and
the line to add. Runs the real install.sh in a fake HOME (its dependencies step is skipped: the
.venv is already up to date, so a run takes a few seconds)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO

VENV_CLI = REPO / ".venv" / "bin" / "prima-memory"
EXPORT = 'export PATH="$HOME/.local/bin:$PATH"'


@pytest.fixture
def home(tmp_path):
    if not VENV_CLI.is_file() or not (REPO / ".venv" / ".prima-memory-installed").is_file():
        pytest.skip("install.sh has not been run here (no .venv)")
    h = tmp_path / "home dir"
    h.mkdir()
    return h


def _install(home: Path, path: str = "/usr/bin:/bin", **extra) -> str:
    env = {"HOME": str(home), "PATH": path, "PRIMA_SKIP_PLUGIN": "1", "LANG": "C.UTF-8",
           **extra}
    p = subprocess.run(["bash", str(REPO / "install.sh"), "--no-run"], capture_output=True,
                       text=True, env=env, cwd=str(home), timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return p.stdout


def _runs_by_name(home: Path, path: str) -> None:
    p = subprocess.run(["bash", "-c", "prima-memory --version"], capture_output=True, text=True,
                       env={"HOME": str(home), "PATH": path}, cwd=str(home), timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("prima-memory "), p.stderr


def test_a_link_in_local_bin_and_the_line_to_add_when_it_is_not_on_path(home):
    out = _install(home)
    link = home / ".local" / "bin" / "prima-memory"
    assert link.is_symlink() and os.readlink(link) == str(VENV_CLI)
    assert f"{home}/.local/bin is not on your PATH" in out, out
    assert f"prima-memory install:   {EXPORT}" in out.splitlines(), out
    # the line, added as a user would, puts the command on PATH
    p = subprocess.run(["bash", "-c", f"{EXPORT}; prima-memory --version"], capture_output=True,
                       text=True, env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("prima-memory "), p.stderr
    # a second run changes nothing and says the same
    assert _install(home).count("is not on your PATH") == 1
    assert os.readlink(link) == str(VENV_CLI)


def test_on_path_it_says_so_and_the_name_runs(home):
    path = f"{home}/.local/bin:/usr/bin:/bin"
    out = _install(home, path)
    assert f"the prima-memory command is on your PATH: {home}/.local/bin/prima-memory" in out, out
    assert "not on your PATH" not in out
    _runs_by_name(home, path)


@pytest.mark.parametrize("what", ["a script of the user's", "a link of the user's elsewhere",
                                  "a folder"])
def test_a_file_it_did_not_make_is_left_as_it_is(home, what):
    bin_dir = home / ".local" / "bin"
    bin_dir.mkdir(parents=True)
    link = bin_dir / "prima-memory"
    if what == "a script of the user's":
        link.write_text("#!/bin/sh\necho mine\n")
        link.chmod(0o755)
    elif what == "a link of the user's elsewhere":  # e.g. a pipx install
        link.symlink_to(home / ".local" / "pipx" / "venvs" / "prima-memory" / "bin" / "prima-memory")
    else:
        link.mkdir()
    before = (link.is_symlink(), os.readlink(link) if link.is_symlink() else None,
              link.read_text() if link.is_file() and not link.is_symlink() else None)
    out = _install(home, f"{bin_dir}:/usr/bin:/bin")
    assert f"warning: {link} exists and install.sh did not make it: left as it is" in out, out
    assert (link.is_symlink(), os.readlink(link) if link.is_symlink() else None,
            link.read_text() if link.is_file() and not link.is_symlink() else None) == before
    assert "is not on your PATH" not in out  # no advice to put someone else's command first


def test_its_own_link_to_another_checkout_is_moved_to_this_one(home):
    """A link an install.sh made for an older or other checkout (even one since deleted) is
    install.sh's: the last install wins, as it does for the plugin's recorded Python."""
    bin_dir = home / ".local" / "bin"
    bin_dir.mkdir(parents=True)
    link = bin_dir / "prima-memory"
    link.symlink_to(home / "old checkout" / ".venv" / "bin" / "prima-memory")  # gone
    _install(home)
    assert os.readlink(link) == str(VENV_CLI)


def test_another_prima_memory_first_on_path_is_named(home, tmp_path):
    other = tmp_path / "other bin"
    other.mkdir()
    (other / "prima-memory").write_text("#!/bin/sh\necho other\n")
    (other / "prima-memory").chmod(0o755)
    out = _install(home, f"{other}:{home}/.local/bin:/usr/bin:/bin")
    assert f"warning: another prima-memory comes first on your PATH ({other}/prima-memory)" in out
    assert os.readlink(home / ".local" / "bin" / "prima-memory") == str(VENV_CLI)


def test_prima_bin_dir_chooses_the_folder(home, tmp_path):
    bin_dir = tmp_path / "my tools" / "bin"
    out = _install(home, PRIMA_BIN_DIR=str(bin_dir))
    assert os.readlink(bin_dir / "prima-memory") == str(VENV_CLI)
    assert not (home / ".local" / "bin").exists()
    line = next(ln for ln in out.splitlines() if "export PATH=" in ln)
    cmd = line.split("prima-memory install:", 1)[1].strip()
    p = subprocess.run(["bash", "-c", f"{cmd}; command -v prima-memory"], capture_output=True,
                       text=True, env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, timeout=60)
    assert p.stdout.strip() == str(bin_dir / "prima-memory"), (cmd, p.stderr)


def test_the_plugin_folder_carries_the_demo_sample_not_the_generator(home):
    """install.sh copies prima_memory/ into the plugin folder: the demo's sample and py.typed go
    with it, the history generator (bench/'s) does not, and the demo runs from that copy."""
    _install(home)
    plugin = home / ".local" / "share" / "prima-memory" / "plugin"
    assert (plugin / "prima_memory" / "sample" / "demo-history.zip").is_file()
    assert (plugin / "prima_memory" / "py.typed").is_file()
    assert not list(plugin.rglob("synthetic*"))
    work = home / "no history here"
    work.mkdir()
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PRIMA_BACKGROUND": "0",
           "PYTHONPATH": str(plugin), "XDG_CACHE_HOME": str(home / ".cache"),
           "CLAUDE_CONFIG_DIR": str(home / ".claude"), "CODEX_HOME": str(home / ".codex"),
           "PRIMA_VSCODE_USER_DIRS": str(home / "vscode")}
    py = str(REPO / ".venv" / "bin" / "python")
    p = subprocess.run([py, "-c", "import prima_memory.demo as d; print(d.SAMPLE)"],
                       capture_output=True, text=True, env=env, cwd=str(work), timeout=60)
    assert p.stdout.strip() == str(plugin / "prima_memory" / "sample" / "demo-history.zip"), p.stderr
    p = subprocess.run([py, "-m", "prima_memory", "quickstart", "--json"], capture_output=True,
                       text=True, env=env, cwd=str(work), timeout=120)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["index"]["sessions_updated"] == 12 and data["search"]["results"], data
