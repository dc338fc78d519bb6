"""A path's spellings: as given, resolved through links, and as text UTF-8 can hold (a name
whose bytes are not UTF-8). Neutral: every agent records paths so, and the workspace, the
renderers and the sources all compare by them. Standard library only (the hooks use it).
"""
from __future__ import annotations

import os


def path_variants(workspace: str) -> list[str]:
    """The spellings of a folder an agent may have recorded: as given, resolved, as UTF-8."""
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
