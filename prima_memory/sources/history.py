"""Session history summaries, the last search step: read only when the conversations find
nothing. First the current files, `.claude/state/state.json` and `.claude/state/projects/*.json`,
whose entries count whatever their date; then `.claude/state/history/YYYY-MM.json` newest first,
that archive only when the current files find nothing (formats in docs/design.md § Session history,
read tolerantly).

The seed's table says "for the current month", but an entry is rotated into the archive only some
time after its month ends: on December 1st a summary of November 22nd still in state.json was
found nowhere (issue #20). An entry in both is found once.

Declared in the registry (SessionHistory): never indexed, read by its fallback_search when no
conversation matches a search of one workspace.
"""
from __future__ import annotations

import os
import re

from ..workspace import read_plain, stays_inside
from .names import SESSION_HISTORY
from .text import load_json, strip_private

LABEL = SESSION_HISTORY[1]  # (the registry's SessionHistory label)
MAX_BYTES = 8 << 20
_MONTH_FILE = re.compile(r"^(\d{4})-(\d{2})\.json$")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
FIELD_CHARS = 40  # a date or time longer than this is no date: shown cut, never dropped


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


def _field(value) -> str:
    """A date or time as written: a string (cut to FIELD_CHARS), a number, else ""."""
    if isinstance(value, str):
        return " ".join(value.split())[:FIELD_CHARS]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)[:FIELD_CHARS]
    return ""


def _entry(e: dict, path: str, ws: str) -> dict:
    """An entry as shown, redacted and its <private> spans out like every text the index holds
    (and matched so: a secret is no way to find one). Any date is kept as written, a missing or
    odd one as ""."""
    from ..redact import scrub  # (only when the conversations found nothing)
    projects = e.get("projectsWorked")
    return {"date": _field(e.get("date")), "time": _field(e.get("time")) or None,
            "summary": scrub(strip_private(e["summary"])),  # (a person's <private> spans out)
            "projects": [scrub(p) for p in projects if isinstance(p, str)]  # (names, no more)
            if isinstance(projects, list) else [],
            "file": os.path.relpath(path, ws), "label": LABEL}


def _newest_first(entries: list[dict]) -> list[dict]:
    """By date and time, newest first; entries whose date is no date last, as they came."""
    dated = [e for e in entries if _DATE.match(e["date"])]
    odd = [e for e in entries if not _DATE.match(e["date"])]
    return sorted(dated, key=lambda e: (e["date"], e["time"] or ""), reverse=True) + odd


def current(ws: str, problems: list[str]) -> list[dict]:
    """The entries of state.json and projects/*.json, whatever their date, newest first."""
    root = folder(ws)
    paths = [os.path.join(root, "state.json")]
    try:
        paths += sorted(os.path.join(root, "projects", n)
                        for n in os.listdir(os.path.join(root, "projects")) if n.endswith(".json"))
    except OSError:
        pass
    out = []
    for path in paths:
        out += [_entry(e, path, ws) for e in _history(_load(path, problems, ws))]
    return _newest_first(out)


def archive(ws: str, problems: list[str]):
    """(month, entries) of the monthly files, newest month first, read one at a time."""
    root = os.path.join(folder(ws), "history")
    try:
        names = sorted((n for n in os.listdir(root) if _MONTH_FILE.match(n)), reverse=True)
    except OSError:
        return
    for n in names:
        path = os.path.join(root, n)
        yield n[:7], _newest_first([_entry(e, path, ws)
                                    for e in _history(_load(path, problems, ws))])


def search(ws: str, words: list[str], *, limit: int = 10) -> tuple[list[dict], list[str]]:
    """Summaries holding every one of `words` (any case; the query's words as search reads
    them, filler left out): the current files', else the archive's, newest month first,
    stopping at the first month that answers. The same summary of the same day, written in
    two files (state.json and a project's file), is one."""
    problems: list[str] = []
    words = [w.lower() for w in words if w]
    if not words:
        return [], problems

    def hits(entries):
        seen: set[tuple[str, str]] = set()
        out = []
        for e in entries:
            key = (e["date"], " ".join(e["summary"].split()))
            if key not in seen and all(w in e["summary"].lower() for w in words):
                seen.add(key)
                out.append(e)
        return out
    found = hits(current(ws, problems))
    if not found:
        for _month, entries in archive(ws, problems):
            found = hits(entries)
            if found:
                break
    return found[:limit], problems
