"""Rank sessions for a query. Knows the index's records, nothing of file formats.

Keyword scoring is the seed's table: whole query in the title 20; each changed file whose path
contains the whole query 10; each message containing a query word, 2 per word it contains;
recency up to 10, falling to 0 at seven days; 1 per changed file, up to 5. Matching ignores case
and finds words inside longer words.
"""
from __future__ import annotations

import re
import time

from .store import SHIFT, SessionRow, Store, fold, index_text, is_corruption

WEEK = 7 * 86400
TERMS_LIMIT = 4000  # a word inside more index terms than this is matched by reading the texts


class Filters:
    def __init__(self, since: float | None = None, until: float | None = None,
                 branch: str | None = None, tag: str | None = None, source: str | None = None):
        self.since, self.until = since, until
        self.branch, self.tag, self.source = branch, tag, source

    def __bool__(self) -> bool:  # any filter set
        return any(v is not None for v in (self.since, self.until, self.branch, self.tag,
                                           self.source))


class Hit:
    def __init__(self, row: SessionRow, score: float, title: str, snippet: str = "",
                 files: list[str] | None = None):
        self.row, self.score, self.title = row, score, title
        self.snippet = snippet
        self.message_id: int | None = None  # the turn that matched best (its message's id)
        self.matches: list[str] = []  # the matching lines, newest first
        self.files = files or []


def clean_text(text: str) -> str:
    """Text that UTF-8 can hold: a lone surrogate (from a command line with bytes that are not
    UTF-8, or a cut emoji) becomes U+FFFD."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def normalize_query(query: str) -> tuple[str, list[str]]:
    whole = fold(" ".join(query.split()))
    words = list(dict.fromkeys(whole.split()))
    return whole, words


def messages_containing(store: Store, word: str) -> dict[int, int]:
    """session -> number of its messages containing the word (case-insensitive substring).

    The word's tokens are looked up among the index terms that contain them; a word that is one
    token is then exact, one with punctuation is checked against the candidates' text, and one
    with no usable token (or inside too many terms to list) is matched by reading the texts.
    """
    toks = store.token_list(word)
    exprs: list[str] = []  # none: the texts are read
    for run in dict.fromkeys(toks):
        terms = store.terms_containing(run, TERMS_LIMIT)
        if terms is None:  # in too many terms to list
            exprs = []
            break
        if not terms:  # no index term contains it: no message does either
            return {}
        exprs.append(" OR ".join(f'"{t}"' for t in terms))
    if not exprs:
        return _per_session(mid for mid, text in store.all_message_texts() if word in fold(text))
    if toks == [word]:
        return store.count_matching(exprs[0])
    ids = set.intersection(*(store.message_ids_matching(e) for e in exprs))
    texts = store.message_texts(sorted(ids))
    return _per_session(mid for mid, text in texts.items() if word in fold(text))


def _per_session(ids) -> dict[int, int]:
    out: dict[int, int] = {}
    for mid in ids:
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


def _facts(store: Store, filters: Filters | None, deep: bool) -> list[tuple]:
    """(id, started, ended, files_count) of the sessions a search may return."""
    f = filters or Filters()
    return list(store.session_facts(f.since, f.until, f.branch, f.tag, f.source, deep))


def keyword_scores(store: Store, query: str, *, filters: Filters | None = None,
                   now: float | None = None, deep: bool = False,
                   facts: list[tuple] | None = None) -> list[tuple[float, int]]:
    """(score, session) of every session the query matches, best first (a tie goes to the
    session that ended last). `deep`: the extracts' records too; `facts`: _facts() when the
    caller has them already."""
    whole, words = normalize_query(query)
    if not words:
        return []
    now = time.time() if now is None else now
    counts = [messages_containing(store, w) for w in words]
    in_title = store.sessions_with_title_containing(whole)
    in_paths = store.sessions_with_path_containing(whole)
    matched = set(counts[0]).intersection(*counts[1:]) | in_title | set(in_paths)
    if not matched:
        return []
    total = counts[0] if len(counts) == 1 else {
        sid: sum(c.get(sid, 0) for c in counts) for sid in matched}
    recent = now - WEEK
    scored = []
    for sid, started, ended, files_count in (_facts(store, filters, deep) if facts is None
                                             else facts):
        if sid not in matched:
            continue
        score = 2 * total.get(sid, 0) + min(5, files_count)
        if sid in in_title:
            score += 20
        if sid in in_paths:
            score += 10 * in_paths[sid]
        if started > recent:
            score += recency_points(started, now)
        scored.append((-round(score, 2), -(ended or 0), sid))
    scored.sort()
    return [(-negscore, sid) for negscore, _, sid in scored]


def keyword(store: Store, query: str, *, limit: int = 10, filters: Filters | None = None,
            now: float | None = None, deep: bool = False) -> list[Hit]:
    """The best `limit` sessions by keyword, each with the lines that matched."""
    scored = keyword_scores(store, query, filters=filters, now=now, deep=deep)[:limit]
    words = normalize_query(query)[1]
    rows = {r.id: r for r in store.sessions_by_id([sid for _, sid in scored])}
    hits = [Hit(rows[sid], score, rows[sid].title) for score, sid in scored]
    for hit in hits:
        _decorate(store, hit, words)
    return hits


def _semantic_matches(store, embedder, query, limit, facts, floor):
    """Matches by meaning among the sessions in `facts` (see _facts)."""
    from . import semantic  # late: keyword search never needs it (nor its hashlib, 2.5 ms)
    return semantic.search(store, embedder, query, limit=limit,
                           admit={r[0] for r in facts}.__contains__,
                           floor=semantic.Settings().floor if floor is None else floor)


def _meaning_hit(store: Store, hit: Hit, match, embedder) -> None:
    """What a match by meaning shows: the part of its best exchange that matched (the window
    the best similarity came from), from its start."""
    from .semantic import Settings, exchange_text  # late: as in _semantic_matches
    prompt, reply = store.exchange_texts([match.exchange]).get(match.exchange, (None, ""))
    text = exchange_text(prompt, reply)
    if match.window and Settings().windows:
        pieces = embedder.windows(text)
        text = pieces[match.window] if match.window < len(pieces) else text
    hit.message_id = match.exchange
    text = " ".join(_FILLER.sub(r"\1", text).split())
    hit.snippet = text[:_SNIPPET] + ("…" if len(text) > _SNIPPET else "")
    hit.matches = [hit.snippet] if hit.snippet else []
    hit.files = store.changed_paths(hit.row.id)


def semantic(store: Store, embedder, query: str, *, limit: int = 10,
             filters: Filters | None = None, floor: float | None = None,
             deep: bool = False) -> list[Hit]:
    """Sessions by meaning: the best exchange's similarity x 100."""
    matches = _semantic_matches(store, embedder, query, limit, _facts(store, filters, deep),
                                floor)
    rows = {r.id: r for r in store.sessions_by_id([m.session for m in matches])}
    hits = []
    for m in (m for m in matches if m.session in rows):  # a session pruned meanwhile is gone
        hit = Hit(rows[m.session], round(m.similarity * 100, 2), rows[m.session].title)
        _meaning_hit(store, hit, m, embedder)
        hits.append(hit)
    return hits


BOTH = 1.2  # a session both halves find: the higher of its two scores plus 20 per cent


def combine(keyword_scored, meaning) -> list[tuple[float, int]]:
    """The seed's combined score. keyword_scored: (points, session); meaning: (similarity 0..1,
    session). Keyword points are rescaled so the best is 100; similarity counts x 100."""
    top = max((p for p, _ in keyword_scored), default=0)
    kw = {sid: (p / top * 100 if top > 0 else 0.0) for p, sid in keyword_scored}
    sem = {sid: sim * 100 for sim, sid in meaning}
    out = []
    for sid in kw.keys() | sem.keys():
        if sid in kw and sid in sem:
            score = max(kw[sid], sem[sid]) * BOTH
        else:
            score = kw.get(sid, sem.get(sid))
        out.append((round(score, 2), sid))
    return out


def combined(store: Store, embedder, query: str, *, limit: int = 10,
             filters: Filters | None = None, now: float | None = None,
             floor: float | None = None, deep: bool = False) -> list[Hit]:
    facts = _facts(store, filters, deep)  # read once for both halves
    kw = keyword_scores(store, query, now=now, facts=facts)
    pool = max(limit * 5, 50)  # a session deep in either list can still rise with the bonus
    matches = _semantic_matches(store, embedder, query, pool, facts, floor)
    scored = combine(kw, [(m.similarity, m.session) for m in matches])
    rows = {r.id: r for r in store.sessions_by_id([sid for _s, sid in scored])}
    scored = [x for x in scored if x[1] in rows]  # a session pruned meanwhile is gone
    scored.sort(key=lambda x: (-x[0], -(rows[x[1]].ended_at or 0)))
    scored = scored[:limit]
    by_meaning = {m.session: m for m in matches}
    kw_ids = {sid for _p, sid in kw}
    words = normalize_query(query)[1]
    hits = []
    for score, sid in scored:
        hit = Hit(rows[sid], score, rows[sid].title)
        if sid in kw_ids:
            _decorate(store, hit, words)
        else:
            _meaning_hit(store, hit, by_meaning[sid], embedder)
        hits.append(hit)
    return hits


_SNIPPET = 220


def _decorate(store: Store, hit: Hit, words: list[str]) -> None:
    """The lines that matched, for the reader to judge the hit at a glance: read the session's
    newest messages first and stop once enough are found (no index query per hit)."""
    hit.files = store.changed_paths(hit.row.id)
    best, best_n, seen = None, 0, 0
    for mid, text in store.session_message_texts(hit.row.id, newest_first=True):
        low = fold(text)
        n = sum(w in low for w in words)
        if not n:
            continue
        if len(low) != len(text):  # not NFC: shown as folded, so positions agree
            text = index_text(text)
        seen += 1
        if n > best_n:
            best, best_n, hit.message_id = text, n, mid
        if len(hit.matches) < 3:  # words hold no white space, so one line holds the match
            line = next((ln for ln in text.splitlines() if any(w in fold(ln) for w in words)), text)
            line = _around(line, fold(line), words, 160)
            if line not in hit.matches:  # a prompt quoted back in replies is shown once
                hit.matches.append(line)
        if best_n == len(words) and (len(hit.matches) >= 3 or seen >= 12):
            break
    if best is not None:
        hit.snippet = _around(best, fold(best), words, _SNIPPET)
    elif hit.files:
        hit.snippet = next((f for f in hit.files if " ".join(words) in fold(f)), hit.files[0])


# A run of one repeated symbol (rules, leaders, `·` shown for white space) says nothing in a
# snippet and would fill it: it is cut to one character.
_FILLER = re.compile(r"([^\w\s])\1{3,}")


def _around(text: str, low: str, words, width: int) -> str:
    """About `width` characters around the first query word, on one line, filler cut."""
    pos = min((p for p in (low.find(w) for w in words) if p >= 0), default=0)
    start = max(0, pos - width // 3)
    end = start + 2 * width  # room for filler that collapses
    piece = " ".join(_FILLER.sub(r"\1", text[start:end]).split())
    more = end < len(text) or len(piece) > width
    return ("…" if start > 0 else "") + piece[:width].rstrip() + ("…" if more else "")


MAX_QUERY_CHARS = 2000  # SQLite refuses LIKE patterns past 50,000 bytes; no one types more
MAX_QUERY_WORDS = 64


def _bounded(query: str, warnings: list[str]) -> str:
    """A pasted page as a query is answered on its start, with a warning saying so."""
    words = query.split()
    if len(query) <= MAX_QUERY_CHARS and len(words) <= MAX_QUERY_WORDS:
        return query
    cut = " ".join(words[:MAX_QUERY_WORDS])[:MAX_QUERY_CHARS]
    warnings.append(f"the query was cut to its first {len(cut.split())} words "
                    f"({len(cut)} characters) of {len(words)} ({len(query)} characters)")
    return cut


def unavailable(reason: str) -> str:
    return f"semantic search is unavailable ({reason}): showing keyword results"


def run(store: Store, query: str, *, mode: str = "combined", limit: int = 10,
        filters: Filters | None = None, deep: bool = False, now: float | None = None,
        embedder=None, why_not: str | None = None,
        floor: float | None = None) -> tuple[list[Hit], list[str]]:
    """Search in a mode; returns hits and warnings. Semantic and combined need `embedder`;
    without one they answer by keyword, with the seed's warning first (`why_not` says why).
    `deep`: prima-memory's extracts and checkpoints are searched too (as records)."""
    warnings: list[str] = []
    query = _bounded(query, warnings)
    if mode != "keyword" and embedder is not None:
        try:
            if mode == "semantic":
                return semantic(store, embedder, query, limit=limit, filters=filters,
                                floor=floor, deep=deep), warnings
            return combined(store, embedder, query, limit=limit, filters=filters, now=now,
                            floor=floor, deep=deep), warnings
        except Exception as e:  # whatever fails, the words still answer
            if is_corruption(e):
                raise
            why_not = " ".join(f"{type(e).__name__}: {e}".split())[:200]
    if mode != "keyword":
        warnings.insert(0, unavailable(why_not or "no model"))
    return keyword(store, query, limit=limit, filters=filters, now=now, deep=deep), warnings
