"""install.sh puts `prima-memory` on PATH: a link in ~/.local/bin to this install's command,
never replacing a file it did not make; a new login shell finds it (in a fresh HOME, where bash
reads no startup file, by a ~/.profile with Debian's lines for ~/.local/bin), and where the user's
own startup file lacks the folder, one line says what to add where, the file left as it is. Runs
the real install.sh in a fake HOME (its dependencies step is skipped: the .venv is already up to
date, so a run takes a few seconds)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO

VENV_CLI = REPO / ".venv" / "bin" / "prima-memory"
EXPORT = 'export PATH="$HOME/.local/bin:$PATH"'
SKEL = Path("/etc/skel/.profile")


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


def _login_shell(home: Path, command: str = "prima-memory --help") -> subprocess.CompletedProcess:
    """A new login shell, as a new terminal or an ssh session starts one: nothing inherited but
    HOME (/etc/profile sets PATH)."""
    return subprocess.run(["bash", "-lc", command], capture_output=True, text=True,
                          env={"HOME": str(home)}, cwd=str(home), stdin=subprocess.DEVNULL,
                          timeout=60)


def _path_lines(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if "PATH" in ln or "login shell" in ln]


def test_fresh_home_a_new_login_shell_runs_it_by_name(home):
    """The Done-when of #21: a fresh HOME, install.sh, then `prima-memory --help` in a new login
    shell. bash would read no startup file there, so install.sh writes ~/.profile with Debian's
    lines for ~/.local/bin, and says so in one line."""
    assert _login_shell(home).returncode != 0  # not found before
    out = _install(home)
    link = home / ".local" / "bin" / "prima-memory"
    assert link.is_symlink() and os.readlink(link) == str(VENV_CLI)
    assert _path_lines(out) == [
        "prima-memory install: made ~/.profile (Debian's lines that put ~/.local/bin on PATH): "
        "prima-memory runs by name in a new login shell"], out
    profile = (home / ".profile").read_text()
    assert 'if [ -d "$HOME/.local/bin" ] ; then\n    PATH="$HOME/.local/bin:$PATH"\nfi' in profile
    p = _login_shell(home)
    assert p.returncode == 0 and p.stdout.startswith("usage: prima-memory"), p.stderr
    # a second run changes nothing: the file is now the user's, and a login shell finds the link
    out = _install(home)
    assert (home / ".profile").read_text() == profile
    assert _path_lines(out) == ["prima-memory install: prima-memory runs by name in a new login "
                                f"shell; in this one, first run: {EXPORT}"], out
    assert os.readlink(link) == str(VENV_CLI)


def test_a_profile_without_the_folder_is_left_as_it_is_and_one_line_says_what_to_add(home):
    profile = home / ".profile"
    profile.write_text("# mine\nexport EDITOR=vi\n")
    out = _install(home)
    assert profile.read_text() == "# mine\nexport EDITOR=vi\n"
    assert _path_lines(out) == [
        f"prima-memory install: {home}/.local/bin is not on PATH: to run prima-memory by name, "
        f"add this line to ~/.profile and open a new login shell: {EXPORT}"], out
    assert _login_shell(home).returncode != 0
    # the line, added where it says, puts the command on PATH in a new login shell
    with open(profile, "a") as f:
        f.write(EXPORT + "\n")
    p = _login_shell(home)
    assert p.returncode == 0 and p.stdout.startswith("usage: prima-memory"), p.stderr


def test_the_line_names_the_file_bash_reads(home):
    """bash reads the first of ~/.bash_profile, ~/.bash_login, ~/.profile: that one is named,
    and no ~/.profile is made beside it (bash would not read it)."""
    (home / ".bash_profile").write_text("# mine\n")
    out = _install(home)
    assert not (home / ".profile").exists()
    assert "add this line to ~/.bash_profile and open a new login shell" in out, out
    assert (home / ".bash_profile").read_text() == "# mine\n"


@pytest.mark.skipif(not SKEL.is_file(), reason="no Debian /etc/skel/.profile here")
def test_debians_own_profile_finds_it_untouched(home):
    """Debian and Ubuntu's ~/.profile adds ~/.local/bin when it exists: a new login shell finds
    the link with nothing written."""
    profile = home / ".profile"
    profile.write_bytes(SKEL.read_bytes())
    out = _install(home)
    assert profile.read_bytes() == SKEL.read_bytes()
    assert "prima-memory runs by name in a new login shell" in out, out
    assert "add this line" not in out
    p = _login_shell(home)
    assert p.returncode == 0 and p.stdout.startswith("usage: prima-memory"), p.stderr


def test_prima_no_profile_writes_none(home):
    out = _install(home, PRIMA_NO_PROFILE="1")
    assert not (home / ".profile").exists()
    assert f"add this line to ~/.profile and open a new login shell: {EXPORT}" in out, out


def test_on_path_it_says_so_and_the_name_runs(home):
    path = f"{home}/.local/bin:/usr/bin:/bin"
    out = _install(home, path)
    assert f"the prima-memory command is on your PATH: {home}/.local/bin/prima-memory" in out, out
    assert "not on PATH" not in out and not (home / ".profile").exists()
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
    assert "PATH:" not in out  # no advice to put someone else's command first
    assert not (home / ".profile").exists()


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
    assert not (home / ".profile").exists()  # Debian's lines are for ~/.local/bin only
    line = next(ln for ln in out.splitlines() if "export PATH=" in ln)
    cmd = line[line.index("export PATH="):]
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
