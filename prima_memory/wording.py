"""Small text helpers every renderer shares (briefing, checkpoints, extracts, the CLI's text):
a text on one line within a limit, a duration, a path as its workspace sees it.

Standard library only and cheap: the hooks render with these.
"""
from __future__ import annotations

import os

from .paths import path_variants

_TRAILING = " ,;:-–—"  # left at a cut, they would read as if the text went on there


def cut(text: str, limit: int) -> str:
    """`text` within `limit` characters: whole when it fits, else cut after its last whole word
    that fits and ended by "…" (a single word longer than half the limit is cut inside)."""
    if len(text) <= limit:
        return text
    room = max(0, limit - 1)
    head = text[:room]
    if not text[room].isspace():  # the last word goes on past the cut: leave it out
        space = head.rfind(" ")
        if space >= room // 2:
            head = head[:space]
    return head.rstrip(_TRAILING) + "…"


def one_line(text: str | None, limit: int) -> str:
    """`text` with its white space collapsed, within `limit` characters (see `cut`)."""
    return cut(" ".join((text or "").split()), limit)


def duration(seconds: float) -> str:
    """"45m", or "2h 05m" from an hour on."""
    minutes = int(max(0, seconds) // 60)
    return f"{minutes // 60}h {minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def short_path(path: str, ws: str | None, cwd: str | None = None,
               variants: list[str] | None = None) -> str:
    """A recorded file path as a person reads it in this workspace: relative to the workspace
    when inside it (either spelling of a linked one), else relative to the folder its session
    worked in (a history recorded where the workspace used to be), else as recorded. The one
    rule for every listing; the data (`--json`, MCP) keeps the path as recorded. `variants`:
    path_variants(ws), for a caller with many paths (each is a realpath)."""
    if not os.path.isabs(path):
        return path
    if variants is None:
        variants = path_variants(ws) if ws else []
    for root in (*variants, cwd):
        if root and root != os.sep and (path == root
                                        or path.startswith(root.rstrip(os.sep) + os.sep)):
            return os.path.relpath(path, root).replace(os.sep, "/")
    return path
