"""Small text helpers every renderer shares (briefing, checkpoints, extracts, the CLI's text):
a text on one line within a limit, a duration, a path as its session saw it.

Standard library only and cheap: the hooks render with these.
"""
from __future__ import annotations


def one_line(text: str | None, limit: int) -> str:
    """`text` with its white space collapsed, cut to `limit` characters (ending in "…")."""
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def duration(seconds: float) -> str:
    """"45m", or "2h 05m" from an hour on."""
    minutes = int(max(0, seconds) // 60)
    return f"{minutes // 60}h {minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def short_path(path: str, cwd: str | None) -> str:
    """A changed file relative to the folder its session worked in, when it is inside it."""
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1:]
    return path
