"""The shell commands prima-memory prints for a person or for Claude to run (the way back to a
session, how to search): each runs as printed, in Claude's Bash tool and in the user's shell.

Standard library only, and cheap: the SessionStart and UserPromptSubmit hooks print them.
"""
from __future__ import annotations

import os
import sys

# what shlex.quote leaves bare (its [\w@%+=:,./-], ASCII): a set, where a pattern would cost
# every hook's start re's import
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")
_cli: str | None = None


def quote(text: str) -> str:
    """One shell word for `text`, as shlex.quote makes it; but text with a character that cannot
    be shown (a newline, an escape, a byte that is not UTF-8) is written $'...' with \\xHH escapes,
    so the command stays on one line and nothing acts on a terminal (bash and zsh read $'...').
    So is a `<`: no quoted word can then spell the <prima-memory> frame's tag, which the frame
    would escape, and the command would no longer run as printed."""
    if text and _SAFE.issuperset(text):
        return text
    if "<" not in text and all(c.isprintable() for c in text):
        return "'" + text.replace("'", "'\"'\"'") + "'"
    return "$'" + "".join(_escaped(c) for c in text) + "'"


def _escaped(c: str) -> str:
    if c in "\\'":
        return "\\" + c
    if c.isprintable() and c != "<":
        return c
    if "\udc80" <= c <= "\udcff":  # a byte of a name that is not UTF-8 (os's surrogateescape)
        return f"\\x{ord(c) - 0xdc00:02x}"
    return "".join(f"\\x{b:02x}" for b in c.encode("utf-8", "surrogatepass"))


def _runnable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def cli() -> str:
    """How to run this prima-memory from a shell: `prima-memory` when that name, looked up on
    this process's PATH (the one Claude Code and its Bash tool have), is this install; otherwise
    this install's command by its absolute path. Worked out once per process."""
    global _cli
    if _cli is None:
        _cli = _find_cli()
    return _cli


def _find_cli() -> str:
    own = os.path.join(os.path.dirname(sys.executable), "prima-memory")  # the venv's script
    if _runnable(own):
        mine = os.path.realpath(own)
        for d in os.environ.get("PATH", "").split(os.pathsep):
            if not os.path.isabs(d):
                continue  # a relative entry means a different thing in every folder
            found = os.path.join(d, "prima-memory")
            if _runnable(found):  # the first one on PATH is the one a shell runs
                return "prima-memory" if os.path.realpath(found) == mine else quote(own)
        return quote(own)
    # no console script beside this Python (run from a checkout or the plugin folder): the
    # plugin's entry point, which finds the package beside itself, or the installed module
    entry = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "hooks", "entry.py")
    if os.path.isfile(entry):
        return f"{quote(sys.executable)} {quote(entry)}"
    return f"{quote(sys.executable)} -m prima_memory"


def show(session_id: str, ws: str | None, team: bool = False) -> str:
    """Prints a session, from any folder (`ws` None: found among all projects; `team`: on the
    team's server, which the workspace's join names)."""
    where = f"--workspace {quote(ws)}" if ws is not None else "--all-projects"
    if team:
        where = f"--team --workspace {quote(ws)}" if ws is not None else "--team"
    return f"{cli()} show {quote(session_id)} {where}"


def resume(template: str, session_id: str, folder: str, make: bool = False) -> str:
    """Continues a session in its agent (template: "claude --resume {id}"), from its own folder,
    where the agent looks for it (`make`: a folder that is gone, made again first)."""
    made = f"mkdir -p {quote(folder)} && " if make else ""
    return f"{made}cd {quote(folder)} && {template.format(id=quote(session_id))}"
