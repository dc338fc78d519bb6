"""Session history summaries, the last search step: read only when the conversations find
nothing. First `.claude/state/state.json` and `.claude/state/projects/*.json` for the current
month, then `.claude/state/history/YYYY-MM.json` newest first, and that archive only when the
current month finds nothing (the seed's table; formats in DESIGN §9, read tolerantly).

Read by api.search when no conversation matches; never indexed.
"""
from __future__ import annotations

import os
import re
import time

from ..workspace import read_plain, stays_inside
from .text import load_json

LABEL = "Session History Summaries"
MAX_BYTES = 8 << 20
_MONTH_FILE = re.compile(r"^(\d{4})-(\d{2})\.json$")


def folder(ws: str) -> str:
    return os.path.join(ws, ".claude", "state")


def _load(path: str, problems: list[str], ws: str):
    if not stays_inside(path, ws):
        return None
    try:
        got = read_plain(path, MAX_BYTES)
        return load_json(got[0]) if got else None
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        problems.append(f"{path}: unreadable ({type(e).__name__})")
        return None


def _history(doc) -> list[dict]:
    """The entries of a file: a list, or an object with `sessionHistory`."""
    items = doc.get("sessionHistory") if isinstance(doc, dict) else doc
    return [e for e in items or () if isinstance(e, dict)
            and isinstance(e.get("summary"), str)] if isinstance(items, list) else []


def _entry(e: dict, path: str, ws: str) -> dict:
    """An entry as shown, redacted like every text the index holds (and matched so: a secret
    is no way to find one)."""
    from ..redact import scrub  # (only when the conversations found nothing)
    projects = e.get("projectsWorked")
    return {"date": str(e.get("date") or ""), "time": e.get("time") if isinstance(
                e.get("time"), str) else None,
            "summary": scrub(e["summary"]),
            "projects": [scrub(p) for p in projects if isinstance(p, str)]  # (names, no more)
            if isinstance(projects, list) else [],
            "file": os.path.relpath(path, ws), "label": LABEL}


def current_month(ws: str, problems: list[str], now: float | None = None) -> list[dict]:
    month = time.strftime("%Y-%m", time.localtime(time.time() if now is None else now))
    root = folder(ws)
    paths = [os.path.join(root, "state.json")]
    try:
        paths += sorted(os.path.join(root, "projects", n)
                        for n in os.listdir(os.path.join(root, "projects")) if n.endswith(".json"))
    except OSError:
        pass
    out = []
    for path in paths:
        out += [_entry(e, path, ws) for e in _history(_load(path, problems, ws))
                if str(e.get("date") or "").startswith(month)]
    return sorted(out, key=lambda e: (e["date"], e["time"] or ""), reverse=True)


def archive(ws: str, problems: list[str]):
    """(month, entries) of the monthly files, newest month first, read one at a time."""
    root = os.path.join(folder(ws), "history")
    try:
        names = sorted((n for n in os.listdir(root) if _MONTH_FILE.match(n)), reverse=True)
    except OSError:
        return
    for n in names:
        path = os.path.join(root, n)
        entries = [_entry(e, path, ws) for e in _history(_load(path, problems, ws))]
        yield n[:7], sorted(entries, key=lambda e: (e["date"], e["time"] or ""), reverse=True)


def search(ws: str, query: str, *, limit: int = 10, now: float | None = None
           ) -> tuple[list[dict], list[str]]:
    """Summaries holding every word of the query (any case): the current month's, else the
    archive's, newest month first, stopping at the first month that answers."""
    problems: list[str] = []
    words = [w for w in query.lower().split() if w]
    if not words:
        return [], problems

    def hits(entries):
        return [e for e in entries if all(w in e["summary"].lower() for w in words)]
    found = hits(current_month(ws, problems, now))
    if not found:
        for _month, entries in archive(ws, problems):
            found = hits(entries)
            if found:
                break
    return found[:limit], problems
