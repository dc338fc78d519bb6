"""Rank sessions for a query. Knows the index's records, nothing of file formats.

Keyword scoring is the seed's table: whole query in the title 20; each changed file whose path
contains the whole query 10; each message containing a query word, 2 per word it contains;
recency up to 10, falling to 0 at seven days; 1 per changed file, up to 5. Matching ignores case
and finds words inside longer words.
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field

from . import titles
from .store import SHIFT, SessionRow, Store

WEEK = 7 * 86400
TERMS_LIMIT = 4000  # a word inside more index terms than this is matched by reading the texts
SEMANTIC_UNAVAILABLE = ("semantic search is not available in this version yet: "
                        "showing keyword results")


@dataclass
class Filters:
    since: float | None = None
    until: float | None = None
    branch: str | None = None
    tag: str | None = None
    source: str | None = None

    def admit(self, row: SessionRow) -> bool:
        start = row.started_at or 0
        end = row.ended_at or start
        if self.since is not None and end < self.since:
            return False
        if self.until is not None and start > self.until:
            return False
        if self.branch is not None and (row.branch or "") != self.branch:
            return False
        if self.tag is not None and self.tag.lower() not in row.tag_list:
            return False
        if self.source is not None and row.source != self.source:
            return False
        return True


@dataclass
class Hit:
    row: SessionRow
    score: float
    title: str
    snippet: str = ""
    matches: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def normalize_query(query: str) -> tuple[str, list[str]]:
    whole = " ".join(query.split()).lower()
    words = list(dict.fromkeys(whole.split()))
    return whole, words


class _WordMatcher:
    """Which messages contain a query word, through the term index where it can."""

    def __init__(self, store: Store):
        self.store = store

    def plan(self, word: str):
        """('fts', expr, exact) or ('none',) or ('scan',)."""
        toks = self.store.token_list(word)
        if not toks:
            return ("scan",)
        exprs = []
        for run in dict.fromkeys(toks):
            terms = self.store.terms_containing(run, TERMS_LIMIT)
            if terms is None:
                return ("scan",)
            if not terms:
                return ("none",)
            exprs.append(" OR ".join(f'"{t}"' for t in terms))
        return ("fts", exprs, toks == [word])

    def counts(self, word: str, plan, session: int | None = None) -> dict[int, int]:
        """session -> number of messages containing the word."""
        kind = plan[0]
        if kind == "none":
            return {}
        if kind == "fts":
            exprs, exact = plan[1], plan[2]
            if exact:
                return self.store.sessions_matching(exprs[0], session)
            ids = None
            for expr in exprs:
                got = set(self.store.message_ids_matching(expr, session))
                ids = got if ids is None else ids & got
            texts = self.store.message_texts(sorted(ids or ()))
            return _count(word, texts.items())
        return _count(word, self.store.all_message_texts(session))

    def message_ids(self, word: str, plan, session: int) -> list[int] | None:
        """Ids of this session's messages that may contain the word (None: all of them)."""
        if plan[0] == "none":
            return []
        if plan[0] == "fts":
            ids = None
            for expr in plan[1]:
                got = set(self.store.message_ids_matching(expr, session))
                ids = got if ids is None else ids & got
            return sorted(ids or ())
        return None


def _count(word: str, rows) -> dict[int, int]:
    out: dict[int, int] = {}
    for mid, text in rows:
        if word in text.lower():
            s = mid >> SHIFT
            out[s] = out.get(s, 0) + 1
    return out


def recency_points(started_at: float | None, now: float) -> float:
    if started_at is None:
        return 0.0
    age = now - started_at
    if age >= WEEK:
        return 0.0
    return 10.0 * (1 - max(0.0, age) / WEEK)


def keyword(store: Store, query: str, *, limit: int = 10, filters: Filters | None = None,
            now: float | None = None) -> list[Hit]:
    whole, words = normalize_query(query)
    if not words:
        return []
    now = time.time() if now is None else now
    filters = filters or Filters()
    rows = {r.id: r for r in store.sessions() if filters.admit(r)}
    if not rows:
        return []
    matcher = _WordMatcher(store)
    plans = {w: matcher.plan(w) for w in words}
    per_word = {w: matcher.counts(w, plans[w]) for w in words}
    path_hits: dict[int, int] = {}
    for sid, path in store.paths_by_session():
        if sid in rows and whole in path.lower():
            path_hits[sid] = path_hits.get(sid, 0) + 1
    hits = []
    for sid, row in rows.items():
        title = titles.pick_title(row.title_custom, row.title_summary, row.title_first)
        in_title = whole in title.lower()
        counts = [per_word[w].get(sid, 0) for w in words]
        if not (in_title or sid in path_hits or all(counts)):
            continue
        score = (20 * in_title + 10 * path_hits.get(sid, 0) + 2 * sum(counts)
                 + recency_points(row.started_at, now) + min(5, row.files_count))
        hits.append(Hit(row, round(score, 2), title))
    hits.sort(key=lambda h: (-h.score, -(h.row.ended_at or 0)))
    hits = hits[:limit]
    for hit in hits:
        _decorate(store, matcher, hit, words, plans)
    return hits


_SNIPPET = 220


def _decorate(store: Store, matcher: _WordMatcher, hit: Hit, words, plans) -> None:
    """The lines that matched, for the reader to judge the hit at a glance."""
    sid = hit.row.id
    hit.files = store.changed_paths(sid)
    ids: set[int] | None = set()
    for w in words:
        got = matcher.message_ids(w, plans[w], sid)
        if got is None:
            ids = None
            break
        ids |= set(got[-200:])
    texts = (dict(store.all_message_texts(sid)) if ids is None
             else store.message_texts(sorted(ids)))
    best, best_n = None, 0
    for mid in sorted(texts):
        low = texts[mid].lower()
        n = sum(w in low for w in words)
        if n and n >= best_n:
            best, best_n = mid, n
    lines: list[str] = []
    for mid in sorted(texts, reverse=True):
        for line in texts[mid].splitlines():
            low = line.lower()
            if any(w in low for w in words):
                lines.append(_around(line, low, words, 160))
                break
        if len(lines) >= 3:
            break
    hit.matches = lines
    if best is not None:
        text = texts[best]
        hit.snippet = _around(text, text.lower(), words, _SNIPPET)
    elif hit.files:
        hit.snippet = hit.files[0]


def _around(text: str, low: str, words, width: int) -> str:
    pos = min((p for p in (low.find(w) for w in words) if p >= 0), default=0)
    start = max(0, pos - width // 3)
    piece = " ".join(text[start:start + width].split())
    return ("…" if start > 0 else "") + piece + ("…" if start + width < len(text) else "")


def run(store: Store, query: str, *, mode: str = "combined", limit: int = 10,
        filters: Filters | None = None, deep: bool = False, workspace: str | None = None,
        now: float | None = None) -> tuple[list[Hit], list[str]]:
    """Search in a mode; returns hits and warnings (the seed's fallback says so at the top)."""
    warnings: list[str] = []
    hits = keyword(store, query, limit=limit, filters=filters, now=now)
    if mode in ("combined", "semantic"):
        warnings.append(SEMANTIC_UNAVAILABLE)
    if deep and workspace:
        hits = sorted(hits + extract_hits(workspace, query, filters), key=lambda h: -h.score)[:limit]
    return hits, warnings


_SESSION_LINE = re.compile(r"Session ID: `([^`]+)`")


def extract_hits(workspace: str, query: str, filters: Filters | None = None) -> list[Hit]:
    """Deep search: the markdown extracts and checkpoints, scored like messages (per paragraph)."""
    whole, words = normalize_query(query)
    root = os.path.join(workspace, ".prima-memory", "extracts")
    out = []
    for folder, _dirs, names in os.walk(root):
        for name in sorted(names):
            if not name.endswith(".md"):
                continue
            path = os.path.join(folder, name)
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except OSError:
                continue
            low = text.lower()
            if not all(w in low for w in words):
                continue
            paragraphs = low.split("\n\n")
            score = 2 * sum(w in p for p in paragraphs for w in words)
            m = _SESSION_LINE.search(text)
            title = next((ln[3:].strip() for ln in text.splitlines()
                          if ln.startswith("## ") and not ln.startswith("## Files")), name)
            mtime = os.path.getmtime(path)
            row = SessionRow(0, "extract", m.group(1) if m else "", "[extract]", None, None, None,
                             None, None, title, mtime, mtime, "", "", 0, 0, 0, path)
            if filters and not filters.admit(row):
                continue
            out.append(Hit(row, float(score), title,
                           snippet=_around(text, low, words, _SNIPPET), files=[path]))
    return out
