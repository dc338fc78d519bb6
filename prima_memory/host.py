"""The host: the agent whose hooks run prima-memory (Claude Code), and where it keeps a folder's
history: its config folders and how it names a project's folder.

A role, not a source: workspace.py asks it which folder a hook serves and what host mode allows;
the Claude Code source (sources/claude_code.py) builds on it for where its transcripts lie.
Imports only the neutral paths.py, so both can without importing each other.
"""
from __future__ import annotations

import os

from .paths import path_variants

# every ASCII character but a letter or a digit, to '-' (str.translate: no pattern, whose re
# import would cost every hook's start)
_DASHES = {c: "-" for c in range(128) if not chr(c).isalnum()}
PREFIX_LEN = 200  # beyond this Claude Code cuts a folder name and appends a hash


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
