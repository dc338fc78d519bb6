"""Where Claude Code keeps a folder's history, and how it spells the folder: the config folder,
the project folder names, and a path's spellings (linked, not UTF-8) as Claude Code records them.

Imports nothing of the package, so workspace.py (host mode, a hook's workspace) and the Claude
Code source (sources/claude_code.py) both build on it without importing each other.
"""
from __future__ import annotations

import os

# every ASCII character but a letter or a digit, to '-' (str.translate: no pattern, whose re
# import would cost every hook's start)
_DASHES = {c: "-" for c in range(128) if not chr(c).isalnum()}
PREFIX_LEN = 200  # beyond this Claude Code cuts a folder name and appends a hash


def path_variants(workspace: str) -> list[str]:
    """The spellings of a folder Claude Code may have recorded: as given, resolved, as UTF-8."""
    out = [workspace]
    real = os.path.realpath(workspace)
    if real != workspace:
        out.append(real)  # Claude Code canonicalises with realpath
    for p in list(out):  # a name that is not UTF-8: Claude Code records it with U+FFFD
        shown = text_of(p)
        if shown not in out:
            out.append(shown)
    return out


def text_of(path: str) -> str:
    """A path as text that UTF-8 (SQLite, JSON, a terminal) can hold. A folder name whose bytes
    are not UTF-8 comes from os as surrogates; here each bad run is U+FFFD, as Node (Claude
    Code) decodes it, so the spelling matches the cwd its transcripts record."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        pass
    try:
        return os.fsencode(path).decode("utf-8", "replace")
    except UnicodeEncodeError:  # a surrogate no file name gives (from JSON, say)
        return path.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def claude_config_dir() -> str:
    """The config folder Claude Code itself uses (the first of claude_config_dirs)."""
    return claude_config_dirs()[0]


def claude_config_dirs() -> list[str]:
    """Claude Code's config folders: CLAUDE_CONFIG_DIR, or ~/.claude. Someone with several
    (an account each: `CLAUDE_CONFIG_DIR=~/.claude-work claude`) can name them all for
    prima-memory as a path list (~/.claude:~/.claude-work); a value that is one existing folder
    is that folder, whatever it holds."""
    given = os.environ.get("CLAUDE_CONFIG_DIR")
    if not given:
        return [os.path.abspath(os.path.expanduser(os.path.join("~", ".claude")))]
    # absolute, so a relative CLAUDE_CONFIG_DIR names the same files from any current folder
    whole = os.path.abspath(os.path.expanduser(given))
    if os.pathsep not in given or os.path.isdir(whole):
        return [whole]
    out = [os.path.abspath(os.path.expanduser(d)) for d in given.split(os.pathsep) if d]
    return list(dict.fromkeys(out)) or [whole]


def encode_project_dir(path: str) -> str:
    """Claude Code's folder name: every character outside [A-Za-z0-9] becomes '-', no collapsing.

    Claude Code does this in JavaScript, one UTF-16 code unit at a time, so a character beyond
    the Basic Multilingual Plane (an emoji) becomes two dashes."""
    if path.isascii():
        return path.translate(_DASHES)
    return "".join(c if c.isascii() and c.isalnum() else ("--" if ord(c) > 0xFFFF else "-")
                   for c in path)


def names(ws: str) -> list[str]:
    """The folder names Claude Code gives this workspace (a long one's only by its prefix)."""
    override = os.environ.get("CLAUDE_CODE_PROJECT_DIR_NAME")
    return ([override] if override else []) + [encode_project_dir(p)
                                               for p in path_variants(ws)]


def project_dirs(ws: str) -> list[str]:
    """The existing Claude Code project folders for this workspace (usually one)."""
    found: list[str] = []
    spelled = names(ws)
    long_prefixes = [n[:PREFIX_LEN] for n in spelled if len(n) > PREFIX_LEN]
    for config in claude_config_dirs():
        root = os.path.join(config, "projects")
        for name in spelled:
            if len(name) <= PREFIX_LEN:
                d = os.path.join(root, name)
                if os.path.isdir(d) and d not in found:
                    found.append(d)
        if long_prefixes:
            # Beyond 200 characters Claude Code appends a hash we cannot reproduce: match the
            # prefix.
            try:
                entries = os.listdir(root)
            except OSError:
                entries = []
            for entry in sorted(entries):
                if any(entry.startswith(p) for p in long_prefixes):
                    d = os.path.join(root, entry)
                    if os.path.isdir(d) and d not in found:
                        found.append(d)
    return found
