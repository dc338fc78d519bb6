"""The names of the files a workspace's history changed, one per line, in
`.prima-memory/changed-names` (issue #42). hooks/run.sh reads it before Claude edits a file: a
file whose name is not there has no history, so the edit costs the shell alone and Python never
starts. The shell only ever decides "nothing to say" from it; Python decides the rest. So the
list must hold every name the index holds (a name too many costs one Python start, never a
wrong note), and it is written again whenever an indexing or a forget leaves the index with
other names: a forgotten session's file names leave it with the session.

Names only, never paths: a name is what a prefilter can compare without knowing how the path
around it was spelled (through a link, say). The shell compares bytes, so a name beyond ASCII is
listed in both Unicode forms (macOS hands names back in NFD); one with a line break cannot be a
line, and is left out: Claude Code's JSON spells it with an escape, which sends it to Python."""
from __future__ import annotations

import os
import stat

from .workspace import read_plain, replace_whole

FILE = "changed-names"
LIMIT = 8 << 20  # bytes of the list read back to compare; a longer list is written again


def text(paths) -> str:
    """The list's text for the changed paths `paths` (as recorded: / or \\ separated)."""
    names = set()
    for p in paths:
        name = p.replace("\\", "/").rsplit("/", 1)[-1]
        if not name or "\n" in name or "\r" in name or not name.isascii() and _surrogate(name):
            continue
        names.add(name)
        if not name.isascii():
            import unicodedata  # (a name beyond ASCII only: not in every hook's imports)
            names.update(unicodedata.normalize(f, name) for f in ("NFC", "NFD"))
    return "".join(sorted(n + "\n" for n in names))


def _surrogate(name: str) -> bool:
    """A lone surrogate (a transcript's broken text): JSON spells it with an escape, which the
    shell sends to Python, and it is no line of a UTF-8 file."""
    try:
        name.encode()
        return False
    except UnicodeEncodeError:
        return True


def listed(folder: str) -> bool:
    """Whether a list is there for the shell to read (a regular file, not a link to one)."""
    try:
        return stat.S_ISREG(os.lstat(os.path.join(folder, FILE)).st_mode)
    except OSError:
        return False


def refresh(folder: str, paths) -> bool:
    """Write the list in the memory's `folder` when it differs from `paths`' names (never
    through a link: workspace.replace_whole). True when it was written."""
    want = text(paths)
    where = os.path.join(folder, FILE)
    try:
        got = read_plain(where, LIMIT)
    except OSError:
        got = None
    if got is not None and got[0] == want.encode():
        return False
    replace_whole(where, want)
    return True
