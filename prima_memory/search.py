"""Rank sessions for a query. Knows the index's records, nothing of file formats.

Keyword scoring is the seed's table (docs/design.md § Keyword search): whole query in the title
20; each changed file whose path contains the whole query 10; each message containing a query
word, 2 per word it contains; recency up to 10, falling to 0 at seven days; 1 per changed file,
up to 5. Matching ignores case and finds words inside longer words.

A query is read as a person types it: filler words ("when did we", "the", "wie haben wir") and
the punctuation around words are not required to match, unless the query holds nothing else.
Combined search (the default) adds to a session's similarity what the words and the dates of the
question say of it (ranking.py): each word by how rare it is in the history, a long session not
ahead for its length, and the sessions of a date the question names first. `PRIMA_SEED_EXACT=1`
keeps the seed's arithmetic exactly: every word as typed, keyword points rescaled so the best is
100 (docs/evaluation.md).
"""
from __future__ import annotations

import heapq
import time

from . import ranking
from .settings import flag
from .storage import (AnyWords, SessionFacts, SessionRow, Store, Words, count_by_session, fold,
                      index_text, is_corruption)

from .timeparse import question_dates

TYPE_CHECKING = False  # (typing's own import, for the type checker alone)
if TYPE_CHECKING:
    from .semantic import Match

WEEK = 7 * 86400
_INF = float("inf")
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
                 files: list[str] | None = None, part: int = 0):
        self.row, self.score, self.title = row, score, title
        self.part = part  # the index it came from (run_many's parts)
        self.snippet = snippet
        self.message_id: int | None = None  # the turn that matched best (its message's id)
        self.matches: list[str] = []  # the matching lines, newest first
        self.files = files or []
        # what the score is: "points" (the seed's keyword table), "seed" (the seed's combined
        # score, 0..120), "similarity" (x 100) or "relevance" (0..100, the default combined)
        self.kind = "points"

    @property
    def match(self) -> int:
        """The score on the one scale a person reads in every mode, 0..100 % (its order the
        score's): relevance and similarity as they are; the seed's keyword points p as
        100 p / (p + POINTS_HALF); the seed's combined score capped at 100."""
        return match_of(self.score, self.kind)


POINTS_HALF = 20.0  # keyword points read as 50 %: the whole query in a session's title


def match_of(score: float, kind: str) -> int:
    if kind == "points":
        score = 100 * score / (score + POINTS_HALF) if score > 0 else 0.0
    return int(round(min(100.0, max(0.0, score))))


def clean_text(text: str) -> str:
    """Text that UTF-8 can hold: a lone surrogate (from a command line with bytes that are not
    UTF-8, or a cut emoji) becomes U+FFFD."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def seed_exact() -> bool:
    return flag("PRIMA_SEED_EXACT", default=False)


# Words a question is made of rather than about: not required to match, and not counted.
FILLER = frozenset("""
a about after again all also am an and any are as at be been before being but by can could
did do does doing done during each else ever for from get gets getting got had has have having
he her here him his how i i'd i'm i've if in into is it it's its just last let's like made make
me my myself no not now of on once one or our out over please remind same she should so some
something still tell than that the their them then there these they thing things this those
time to touch touched tried try up us use used using very was way we we'd we're we've were what when where
which while who why will with work worked working would yes yet you your
kind kinds type types sort many much might maybe based able mention mentioned say said says
part main particularly both recently lately
""".split()) | frozenset("""
aber als am an auch auf aus bei bis das dass dem den der des doch du ein eine einem
einen einer für gemacht haben hatte hatten ich ihr im in ist ja kann mit nach nicht
noch nun oder sich sie sind so über um und uns von vor waren warum was weil welche wenn wer
wie wieder wir wo zu zum zur
au aux avec ce ces comment dans de des du elle en est et été fait il ils je les leur mais
me mon ne nous on ou où pas pour quand que quel quelle qui sa se ses ta toi tu un
une vous
al cómo como cuál cuando cuándo de del donde dónde el en esta está fue hemos hicimos
las los me mi nos para pero por qué que se sus un una uno y yo
ao às como com das de do dos e foi fizemos isso mas na nas no nos o os para pelo pela por
quando que se um uma você
che del della di dove è gli il in ma nel non perché quando
sono un una
de een en hoe ik in is je niet of voor waarom wanneer wat we wij
zijn
""".split())  # German, French, Spanish, Portuguese, Italian, Dutch: words that are also
# English or code (die, bin, war, es, op, con) are left to count for how rare they are

_EDGE_PUNCT = "?!.,;:\"'()[]{}“”‘’«»"


def normalize_query(query: str) -> tuple[str, list[str]]:
    """The whole query, folded, and the words that must match: as typed for the seed; by
    default without the punctuation around them (a "?" ends a question, not a word) and without
    filler, unless that would leave none."""
    whole = fold(" ".join(query.split()))
    words = list(dict.fromkeys(whole.split()))
    if seed_exact():
        return whole, words
    bare = list(dict.fromkeys(w.strip(_EDGE_PUNCT) for w in words))
    bare = [w for w in bare if w] or words  # (a "?" alone after a space is no word)
    content = [w for w in bare if w.replace("’", "'") not in FILLER]
    return whole, content or bare


def word_match(store: Store, word: str) -> tuple[Words | None, bool]:
    """(query, exact): a word query whose messages include every message containing the word
    (case-insensitive substring), and whether they are exactly those. The word's tokens are
    looked up among the index terms that contain them: a word that is one token is then exact,
    one with punctuation must be checked against the messages' text. None: no usable token (or
    one inside too many terms to list), every text must be read; a false Words: no index term,
    so no message, holds it."""
    toks = store.token_list(word)
    groups: list[list[str]] = []
    for run in dict.fromkeys(toks):
        terms = store.terms_containing(run, TERMS_LIMIT)
        if terms is None:  # in too many terms to list
            return None, False
        if not terms:  # no index term contains it: no message does either
            return Words([[]]), True
        groups.append(terms)
    if not groups:
        return None, False
    return Words(groups), toks == [word]


def messages_containing(store: Store, word: str,
                        match: tuple[Words | None, bool] | None = None) -> dict[int, int]:
    """session -> number of its messages containing the word (case-insensitive substring);
    `match`: word_match()'s, when the caller has it."""
    expr, exact = match or word_match(store, word)
    if expr is None:
        return _per_session(mid for mid, text in store.all_message_texts(word)
                            if word in fold(text))
    if not expr:
        return {}
    if exact:
        return store.count_matching(expr)
    return store.count_holding(expr, word)


def word_sessions(store: Store, words: list[str]) -> list[dict[int, int]]:
    """For each word, session -> its messages containing the word."""
    return [messages_containing(store, w) for w in words]


def _per_session(ids) -> dict[int, int]:
    return count_by_session(ids)


class KeywordPoints:
    """The keyword score, in one place: a session's points are MESSAGE for each of its messages
    holding a query word (per word), FILE a file it changed (FILES_MAX at most), TITLE when its
    title holds the whole query, PATH for each changed path holding it, and up to RECENT when it
    started within the WEEK, rounded to 2 places. score() is the formula; best_by_keyword's
    bound and the store's order of the best sessions (Store.best_facts, given `files`) derive
    from the same constants."""
    MESSAGE = 2
    FILE = 1
    FILES_MAX = 5
    TITLE = 20
    PATH = 10
    RECENT = 10.0

    @property
    def files(self) -> tuple[int, int]:
        """(points a file changed, at most): the part of the score the store adds to a session's
        other points when it orders the best (Store.best_facts)."""
        return self.FILE, self.FILES_MAX

    def for_files(self, files_count: int) -> int:
        return min(self.FILES_MAX, self.FILE * files_count)

    def recency(self, started_at: float | None, now: float) -> float:
        if started_at is None:
            return 0.0
        age = now - started_at
        if age >= WEEK:
            return 0.0
        return self.RECENT * (1 - max(0.0, age) / WEEK)

    def score(self, facts: SessionFacts, counts, in_title, in_paths, now: float) -> float:
        """A session's keyword score (see keyword_scores), from its facts."""
        sid, started, _ended, files_count = facts
        score = self.MESSAGE * sum(c.get(sid, 0) for c in counts) + self.for_files(files_count)
        if sid in in_title:
            score += self.TITLE
        if sid in in_paths:
            score += self.PATH * in_paths[sid]
        if started > now - WEEK:
            score += self.recency(started, now)
        return round(score, 2)


KEYWORD = KeywordPoints()


def recency_points(started_at: float | None, now: float) -> float:
    return KEYWORD.recency(started_at, now)


def _facts(store: Store, filters: Filters | None, deep: bool, ids=None) -> list[SessionFacts]:
    """The facts of the sessions a search may return (of `ids` alone, when given)."""
    f = filters or Filters()
    return list(store.session_facts(f.since, f.until, f.branch, f.tag, f.source, deep, ids))


def keyword_scores(store: Store, query: str, *, filters: Filters | None = None,
                   now: float | None = None, deep: bool = False,
                   facts: list[SessionFacts] | None = None,
                   counts: list[dict[int, int]] | None = None) -> list[tuple[float, int]]:
    """(score, session) of every session the query matches, best first (a tie goes to the
    session that ended last). `deep`: the extracts' records too; `facts`: _facts() and
    `counts`: word_sessions() when the caller has them already."""
    whole, words = normalize_query(query)
    if not words:
        return []
    now = time.time() if now is None else now
    counts = word_sessions(store, words) if counts is None else counts
    in_title = store.sessions_with_title_containing(whole)
    in_paths = store.sessions_with_path_containing(whole)
    matched = set(counts[0]).intersection(*counts[1:]) | in_title | set(in_paths)
    if not matched:
        return []
    if facts is None:
        facts = _facts(store, filters, deep)
    scored = sorted((-_points(f, counts, in_title, in_paths, now), -(f.ended_at or 0), f.id)
                    for f in facts if f.id in matched)
    return [(-negscore, sid) for negscore, _, sid in scored]


def best_by_keyword(part: Part, query: str, limit: int, now: float) -> list[tuple]:
    """(score, ended, session) of the part's best `limit` sessions by keyword, best first, as
    keyword_scores() ranks them, reading the facts (files changed, filters) of only the sessions
    that can still be among them: every other point is known from the matches, and the files
    add at most KEYWORD.FILES_MAX. So a common word's search costs its matches, not a look at
    each session."""
    whole, words = normalize_query(query)
    if not words:
        return []
    store = part.store
    counts = part.counts(words)
    in_title = store.sessions_with_title_containing(whole)
    in_paths = store.sessions_with_path_containing(whole)
    k = KEYWORD
    # every point but the files': MESSAGE a message per word (`base`: the messages of the sessions
    # holding every word), and those of the sessions with more (`with_extra`: the paths, the
    # title, the week's recency, and the messages of a session matched by title or path alone)
    base = counts[0]
    for c in counts[1:]:
        base = {sid: n + c[sid] for sid, n in base.items() if sid in c}

    def said(sid: int) -> int:
        """A session's points for its messages (one matched by title or path alone has some)."""
        return k.MESSAGE * (base[sid] if sid in base else sum(c.get(sid, 0) for c in counts))

    with_extra: dict[int, float] = {  # (a path can hold a common word: thousands of sessions)
        sid: k.MESSAGE * base.get(sid, 0) + k.PATH * n for sid, n in in_paths.items()} \
        if len(counts) == 1 else {sid: said(sid) + k.PATH * n for sid, n in in_paths.items()}
    for sid in in_title:
        with_extra[sid] = with_extra.get(sid, said(sid)) + k.TITLE
    for sid, started in store.started_since(now - WEEK).items():
        if sid in base or sid in with_extra:
            with_extra[sid] = with_extra.get(sid, said(sid)) + k.recency(started, now)
    # First ask for the best by these points (at least the best `limit` by messages or by all
    # these points, and their ties), whose files set the cut: the score of the last of them.
    # Then ask for the best of every other session that can still score the cut (its files add
    # FILES_MAX at most); one left out scores less than `cut` - 0.01, so after rounding less than all
    # of the best. When filters (or sessions no search returns) leave too few, the cut falls
    # to the last of them, or goes (every session left is asked), and so on.
    top = heapq.nlargest(limit, base.values())
    top_extra = heapq.nlargest(limit, with_extra.values())
    cut = max(k.MESSAGE * top[-1] if len(top) == limit else -_INF,
              top_extra[-1] if len(top_extra) == limit else -_INF)
    slack = 0
    near_floor = cut - k.FILES_MAX - 0.02  # (the second ask's floor, mostly: its cut ends past
    #                                          `cut` - 0.01)
    near: dict[int, float] = {sid: k.MESSAGE * n for sid, n in base.items()
                              if k.MESSAGE * n >= near_floor}

    def reaching(floor: float) -> dict[int, float]:
        """session -> its points, of those with `floor` or more."""
        pool = near if floor >= near_floor else {sid: k.MESSAGE * n for sid, n in base.items()}
        got = {sid: pts for sid, pts in pool.items() if pts >= floor}
        got.update((sid, pts) for sid, pts in with_extra.items() if pts >= floor)
        return got

    integral = not any(pts % 1 for pts in with_extra.values())  # (recency's aside, all are)
    asked: set[int] = set()
    found: list[tuple] = []
    while True:
        floor = cut - slack - 0.01
        ask = {sid: pts for sid, pts in reaching(floor).items() if sid not in asked}
        asked |= ask.keys()
        found = sorted(found + _best_asked(part, ask, limit, counts, in_title, in_paths, now,
                                           integral),
                       key=lambda x: (-x[0], -x[1], x[2]))[:limit]
        if floor == -_INF or (slack and len(found) == limit and found[-1][0] >= cut):
            return found
        cut, slack = (found[-1][0] if len(found) == limit else -_INF), k.FILES_MAX


def _best_asked(part: Part, ask: dict[int, float], limit: int, counts, in_title, in_paths,
                now: float, integral: bool) -> list[tuple]:
    """(score, ended, session) of the best `limit` of the asked sessions the part may return,
    best first. SQLite ranks them as the search does, but by their unrounded scores: those it
    leaves out score no more than its last, and can pass it only when rounding makes them
    equal (a tie goes to the latest to end): never when every score is whole (`integral`), else
    when within 0.01 of it. Then more are asked for."""
    n = limit + 10
    while True:
        rows = part.best_facts(ask, n)
        best = sorted(((_points(f, counts, in_title, in_paths, now), f.ended_at or 0, f.id)
                       for f in rows), key=lambda x: (-x[0], -x[1], x[2]))[:limit]
        if integral or len(rows) < n or len(best) < limit or \
                ask[rows[-1].id] + KEYWORD.for_files(rows[-1].files_count) < best[-1][0] - 0.01:
            return best
        n *= 4


_points = KEYWORD.score  # a session's keyword score (see keyword_scores), from its facts


class Part:
    """One index's share of a search over several as one (each project's, for a search of all
    projects; a workspace's search is one part): the sessions it may return (the filters' facts,
    less `exclude`: those another part holds as its own), and the query words' counts in it,
    read once."""

    def __init__(self, store: Store, filters: Filters | None = None, deep: bool = False,
                 exclude: frozenset[int] | set[int] = frozenset()):
        self.store, self.exclude = store, exclude
        self._filters, self._deep = filters, deep
        self._facts: list[SessionFacts] | None = None
        self._counts: list[dict[int, int]] | None = None
        self._matches: list[tuple[Words | None, bool]] | None = None
        self._lengths: dict[int, int] | None = None

    @property
    def facts(self) -> list[SessionFacts]:
        if self._facts is None:
            facts = _facts(self.store, self._filters, self._deep)
            self._facts = [f for f in facts if f.id not in self.exclude] if self.exclude \
                else facts
        return self._facts

    def best_facts(self, points: dict[int, float], limit: int) -> list[SessionFacts]:
        """Store.best_facts under this part's filters, less the sessions it leaves out."""
        if self.exclude:
            points = {sid: pts for sid, pts in points.items() if sid not in self.exclude}
        f = self._filters or Filters()
        return self.store.best_facts(points, limit, KEYWORD.files, f.since, f.until, f.branch,
                                     f.tag, f.source, self._deep)

    def matches(self, words: list[str]) -> list[tuple[Words | None, bool]]:
        """word_match() of each word, looked up once."""
        if self._matches is None:
            self._matches = [word_match(self.store, w) for w in words]
        return self._matches

    def any_word(self, words: list[str]) -> AnyWords | None:
        """A word query whose messages include every one holding any of the words (false when
        none can; None: a word can be found only by reading the texts)."""
        queries = [q for q, _exact in self.matches(words)]
        if any(q is None for q in queries):
            return None
        return AnyWords(queries)

    def counts(self, words: list[str]) -> list[dict[int, int]]:
        if self._counts is None:
            got = [messages_containing(self.store, w, m)
                   for w, m in zip(words, self.matches(words))]
            self._counts = [{k: n for k, n in c.items() if k not in self.exclude}
                            for c in got] if self.exclude else got
        return self._counts

    def sessions(self) -> int:
        return self.store.count_sessions() - len(self.exclude)

    def lengths(self) -> dict[int, int]:
        """session -> its messages, of every session it holds (ranking's length and rarity)."""
        if self._lengths is None:
            got = self.store.message_counts()
            self._lengths = {k: n for k, n in got.items() if k not in self.exclude}
        return self._lengths

    def word_counts(self, words: list[str]):
        """ranking.WordCounts of the words, in the sessions it may return."""
        return ranking.WordCounts(self.store, words, {f[0] for f in self.facts})


def _rows(parts: list[Part], keys) -> dict[tuple[int, int], SessionRow]:
    """(part, session) -> its row, for the keys still in their index (one pruned meanwhile is
    gone)."""
    wanted: dict[int, list[int]] = {}
    for i, sid in keys:
        wanted.setdefault(i, []).append(sid)
    return {(i, r.id): r for i, ids in wanted.items()
            for r in parts[i].store.sessions_by_id(ids)}


def keyword(store: Store, query: str, *, limit: int = 10, filters: Filters | None = None,
            now: float | None = None, deep: bool = False) -> list[Hit]:
    """The best `limit` sessions by keyword, each with the lines that matched."""
    return keyword_many([Part(store, filters, deep)], query, limit=limit, now=now)


def keyword_many(parts: list[Part], query: str, *, limit: int = 10,
                 now: float | None = None) -> list[Hit]:
    """keyword() over several parts as one list: the seed's points are absolute (no part's
    best is rescaled), so a session scores the same whichever index holds it."""
    words = normalize_query(query)[1]
    now = time.time() if now is None else now
    scored = []
    for i, p in enumerate(parts):
        scored += [(-points, -(ended or 0), i, sid)
                   for points, ended, sid in best_by_keyword(p, query, limit, now)]
    scored.sort()
    top = scored[:limit]
    rows = _rows(parts, [(i, sid) for *_x, i, sid in top])
    hits = []
    for negscore, _e, i, sid in top:
        row = rows.get((i, sid))
        if row is not None:
            hit = Hit(row, -negscore, row.title, part=i)
            _decorate(parts[i], hit, words)
            hits.append(hit)
    return hits


def _scored(parts: list[Part], embedder, query: str, floor: float | None, counts):
    """The query scored by meaning in each part, and whether meaning answers it at all: its
    best match must stand out from its background, and more so when none of its words occurs
    anywhere in the history (`counts`: each part's word_sessions(), called only when the rule
    is on)."""
    from . import semantic  # late: keyword search never needs it (nor its hashlib, 2.5 ms)
    scoreds = semantic.score_queries([p.store for p in parts], embedder, meaning_query(query),
                                     floor=floor, skips=[p.exclude for p in parts])
    if not scoreds or not scoreds[0].standout:
        return scoreds, True
    bar = gate_of(counts(), sum(p.sessions() for p in parts))
    return scoreds, any(s.answers(bar) for s in scoreds)


def gate(store: Store, counts: list[dict[int, int]]) -> float:
    """How far a query's best match by meaning must stand out (semantic.Scored.answers): a
    query none of whose words the history holds is about something never discussed, unless
    its meaning says otherwise beyond doubt. The fewer the sessions, the less their words say:
    a new user's paraphrase is still answered."""
    return gate_of([counts], store.count_sessions())


def gate_of(counts: list[list[dict[int, int]]], sessions: int) -> float:
    """gate() over several parts: each part's word counts, and their sessions in all."""
    from . import semantic  # late: as in _scored
    if any(any(c) for c in counts):
        return semantic.GATE
    known = min(1.0, sessions / WORDLESS_SESSIONS)
    return semantic.GATE + known * (semantic.GATE_WORDLESS - semantic.GATE)


WORDLESS_SESSIONS = 100  # a history this big has the words of what it discussed


def meaning_query(query: str) -> str:
    """What the model reads of a query: a question's opening filler ("when did we", "how did
    I") matches every chatty prompt of a long session, not the subject asked about."""
    if seed_exact():
        return query
    words = query.split()
    start = 0
    while start < len(words) - 1 and fold(words[start]).strip(_EDGE_PUNCT) in FILLER:
        start += 1
    return " ".join(words[start:])


def _meaning_hit(store: Store, hit: Hit, match, embedder) -> None:
    """What a match by meaning shows: the part of its best exchange that matched (the window
    the best similarity came from), from its start."""
    from .semantic import Settings, exchange_text  # late: as in _scored
    prompt, reply = store.exchange_texts([match.exchange]).get(match.exchange, (None, ""))
    text = exchange_text(prompt, reply)
    if match.window and Settings().windows:
        pieces = embedder.windows(text)
        text = pieces[match.window] if match.window < len(pieces) else text
    hit.message_id = match.exchange
    text = _plain_line(text)
    hit.snippet = text[:_SNIPPET] + ("…" if len(text) > _SNIPPET else "") \
        if worth_showing(text) else ""
    hit.matches = [hit.snippet] if hit.snippet else []
    hit.files = store.changed_paths(hit.row.id)


def semantic(store: Store, embedder, query: str, *, limit: int = 10,
             filters: Filters | None = None, floor: float | None = None,
             deep: bool = False) -> list[Hit]:
    """Sessions by meaning: the best exchange's similarity x 100 (those that stand out: see
    semantic.Scored)."""
    return semantic_many([Part(store, filters, deep)], embedder, query, limit=limit,
                         floor=floor)


def semantic_many(parts: list[Part], embedder, query: str, *, limit: int = 10,
                  floor: float | None = None) -> list[Hit]:
    words = normalize_query(query)[1]
    scoreds, answers = _scored(parts, embedder, query, floor,
                               lambda: [p.counts(words) for p in parts])
    found = []
    if answers:
        for i, (p, scored) in enumerate(zip(parts, scoreds)):
            admitted = {r[0] for r in p.facts}
            found += [(-m.rank, i, n, m) for n, m in enumerate(
                scored.matches(limit, admitted.__contains__))]
    found.sort(key=lambda x: x[:3])
    found = found[:limit]
    rows = _rows(parts, [(i, m.session) for _r, i, _n, m in found])
    hits = []
    for _r, i, _n, m in found:
        row = rows.get((i, m.session))
        if row is None:
            continue
        hit = Hit(row, round(m.similarity * 100, 2), row.title, part=i)
        hit.kind = "similarity"
        _meaning_hit(parts[i].store, hit, m, embedder)
        hits.append(hit)
    return hits


BOTH = 1.2  # a session both halves find: the higher of its two scores plus 20 per cent


def combine(keyword_scored, meaning) -> list:
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
    """Sessions by meaning, words and dates (the module's docstring)."""
    return combined_many([Part(store, filters, deep)], embedder, query, limit=limit, now=now,
                         floor=floor)


def combined_many(parts: list[Part], embedder, query: str, *, limit: int = 10,
                  now: float | None = None, floor: float | None = None) -> list[Hit]:
    """combined() over several parts as over one index holding them all (rank())."""
    if seed_exact():
        return _seed_combined(parts, embedder, query, limit=limit, now=now, floor=floor)
    got = rank(parts, embedder, query, limit=limit, now=now, floor=floor)
    hits = []
    for score, (i, sid) in got.top:
        row = got.rows[(i, sid)]
        hit = Hit(row, ranking.relevance(score), row.title, part=i)
        hit.kind = "relevance"
        if (i, sid) in got.best and (i, sid) not in got.said:
            _meaning_hit(parts[i].store, hit, got.best[(i, sid)], embedder)
        else:  # the lines holding the words say most at a glance
            _decorate(parts[i], hit, got.words)
        hits.append(hit)
    return hits


class Ranked:
    """A question ranked by the default search: `top`, its best sessions as (score, (part,
    session)), best first, with their `rows`; what found each (`best`: its best match by
    meaning; `said`: what its words say; `where`: the exchange where its words are said, and
    that exchange's similarity); `scoreds`, the query scored by meaning in each part."""

    def __init__(self, words: list[str]):
        self.words = words
        self.top: list[tuple[float, tuple[int, int]]] = []
        self.rows: dict[tuple[int, int], SessionRow] = {}
        self.best: dict[tuple[int, int], Match] = {}
        self.said: dict[tuple[int, int], float] = {}
        self.where: dict[tuple[int, int], tuple[int, float]] = {}
        self.scoreds: list = []


def rank(parts: list[Part], embedder, query: str, *, limit: int = 10,
         now: float | None = None, floor: float | None = None) -> Ranked:
    """The default ranking, over several parts as over one index holding them all: one
    background for meaning, and each word's rarity among every part's sessions, so a small
    project's sessions are not lifted for being few. Its candidates: the sessions whose meaning
    stands out from the query's background, those holding any of its words, and those of the
    dates it names; each scored by ranking.score. Then a second pass over the best SECOND: a
    session whose words are said away from what it has most like the question loses
    ranking.WHERE x the difference in similarity."""
    asked = question_dates(query, now)
    got = Ranked(normalize_query(asked.text)[1] if asked.text.strip() else [])
    counts = [p.word_counts(got.words) for p in parts]
    lengths = [p.lengths() for p in parts]
    got.said = said = ranking.word_scores(counts, lengths)
    events = _event_windows(parts, asked.events, lengths)
    dated = {(i, f[0]): max(ranking.time_affinity(asked.windows, f[1], f[2]),
                            ranking.EVENT * ranking.time_affinity(events, f[1], f[2]))
             for i, p in enumerate(parts) for f in p.facts} if asked.windows or events else {}
    near = {k for k, a in dated.items() if a >= NEAR_DATE}
    best = got.best
    if got.words:
        got.scoreds, answers = _scored(parts, embedder, asked.text, floor,
                                       lambda: [c.sessions for c in counts])
        for i, (p, scored) in enumerate(zip(parts, got.scoreds)):
            mine = {m.session: m for m in scored.matches(
                max(limit * 5, 50), {f[0] for f in p.facts}.__contains__)} if answers else {}
            wanted = {sid for j, sid in heapq.nlargest(WORD_CANDIDATES, said, key=said.__getitem__)
                      if j == i} | {sid for j, sid in near if j == i}
            mine.update(scored.best(wanted - mine.keys()))
            best.update({(i, sid): m for sid, m in mine.items()})
    ranked = sorted(((ranking.score(best[k].rank if k in best else 0.0, said.get(k, 0.0),
                                    dated.get(k, 0.0)), k) for k in best.keys() | said.keys() | near),
                    reverse=True)
    if got.scoreds:  # (`where` of as many as find_similar shows; only SECOND read again)
        for i, (c, scored) in enumerate(zip(counts, got.scoreds)):
            turns = {sid: (c.turn[sid] - ranking.NEAR, c.turn[sid] + ranking.NEAR)
                     for _s, (j, sid) in ranked[:max(SECOND, limit)] if j == i and sid in c.turn}
            got.where.update({(i, sid): x for sid, x in scored.at(turns).items()})
        ranked = sorted([(s - ranking.WHERE * (best[k].similarity - got.where[k][1])
                          if k in best and k in got.where else s, k) for s, k in ranked[:SECOND]]
                        + ranked[SECOND:], reverse=True)
    # the rows of the best, and of any tied with the last of them (the latest to end goes first)
    cut = ranked[min(len(ranked), 2 * limit) - 1][0] if ranked else 0.0
    ranked = [x for x in ranked if x[0] >= cut]
    got.rows = _rows(parts, [k for _s, k in ranked])
    ranked = [x for x in ranked if x[1] in got.rows]  # a session pruned meanwhile is gone
    ranked.sort(key=lambda x: (-x[0], -(got.rows[x[1]].ended_at or 0), x[1]))
    got.top = ranked[:limit]
    return got


def _event_windows(parts: list[Part], events: list[tuple[str, str]], lengths) -> list:
    """The time of each event a question places itself by ("before the release"): the session
    whose words say it best (of those equal, the latest), whole: before it, up to its end; after
    it, from its start. An event no session speaks of names no time."""
    out: list[tuple[float | None, float | None]] = []
    for side, named in events:
        words = normalize_query(named)[1]
        said = ranking.word_scores([p.word_counts(words) for p in parts], lengths) if words \
            else {}
        times = {(i, f[0]): (f[1], f[2]) for i, p in enumerate(parts) for f in p.facts
                 if (i, f[0]) in said and f[1] is not None}
        if times:
            start, end = times[max(times, key=lambda k: (said[k], times[k][0]))]
            out.append((None, end if end is not None else start) if side == "before"
                       else (start, None))
    return out


NEAR_DATE = 0.5  # a session this near a date the question names is a candidate (ranking.DAYS)
WORD_CANDIDATES = 200  # the sessions the words rank best, whose similarity is looked up
SECOND = 20  # the best sessions the second pass reads again (rank())


def _seed_combined(parts: list[Part], embedder, query: str, *, limit: int,
                   now: float | None, floor: float | None) -> list[Hit]:
    from . import semantic  # late: as in _scored
    words = normalize_query(query)[1]
    kw = [(points, (i, sid)) for i, p in enumerate(parts)
          for points, sid in keyword_scores(p.store, query, now=now, facts=p.facts)]
    pool = max(limit * 5, 50)  # a session deep in either list can still rise with the bonus
    scoreds = semantic.score_queries([p.store for p in parts], embedder, query, floor=floor)
    by_meaning = {(i, m.session): m for i, (p, sc) in enumerate(zip(parts, scoreds))
                  for m in sc.matches(pool, {r[0] for r in p.facts}.__contains__)}
    scored = combine(kw, [(m.similarity, k) for k, m in by_meaning.items()])
    rows = _rows(parts, [k for _s, k in scored])
    scored = [x for x in scored if x[1] in rows]  # a session pruned meanwhile is gone
    scored.sort(key=lambda x: (-x[0], -(rows[x[1]].ended_at or 0), x[1]))
    kw_ids = {k for _p, k in kw}
    hits = []
    for score, (i, sid) in scored[:limit]:
        hit = Hit(rows[(i, sid)], score, rows[(i, sid)].title, part=i)
        hit.kind = "seed"
        if (i, sid) in kw_ids:
            _decorate(parts[i], hit, words)
        else:
            _meaning_hit(parts[i].store, hit, by_meaning[(i, sid)], embedder)
        hits.append(hit)
    return hits


_SNIPPET = 220


def _decorate(part: Part, hit: Hit, words: list[str]) -> None:
    """The lines that matched, for the reader to judge the hit at a glance: read the session's
    newest messages that hold a word first (all of them, newest first, when a word can only be
    found by reading), and stop once enough are found."""
    store = part.store
    hit.files = store.changed_paths(hit.row.id)
    best, best_n, id_n, seen = None, 0, 0, 0
    expr = part.any_word(words)
    texts = (store.session_message_texts(hit.row.id, newest_first=True) if expr is None else
             store.session_matches(hit.row.id, expr) if expr else ())
    for mid, text in texts:
        low = fold(text)
        n = sum(w in low for w in words)
        if not n:
            continue
        if len(low) != len(text):  # not NFC: shown as folded, so positions agree
            text = index_text(text)
        seen += 1
        if n > id_n:
            hit.message_id, id_n = mid, n
        if n > best_n and worth_showing(text):  # ("continue" tells the reader nothing)
            best, best_n = text, n
        if len(hit.matches) < 3:  # words hold no white space, so one line holds the match
            line = next((ln for ln in text.splitlines() if any(w in fold(ln) for w in words)), text)
            line = _around(line, fold(line), words, 160)
            if line not in hit.matches and worth_showing(line):  # (a prompt quoted back in
                # replies is shown once)
                hit.matches.append(line)
        if best_n == len(words) and (len(hit.matches) >= 3 or seen >= 12):
            break
    if best is not None:
        hit.snippet = _around(best, fold(best), words, _SNIPPET)
    elif hit.files:
        hit.snippet = next((f for f in hit.files if " ".join(words) in fold(f)), hit.files[0])


def worth_showing(line: str) -> bool:
    """Whether a line shown under a hit tells its reader anything: "continue", "ok", "yes" (a
    prompt whose reply was all tool calls) do not."""
    return len(line.split()) > 1


def _plain_line(text: str) -> str:
    """Text on one line, its white space collapsed, a run of four or more of one symbol (a rule,
    a leader, `·` shown for white space: it says nothing in a snippet, and would fill it) cut
    to one. (The regex ([^\\w\\s])\\1{3,} by hand: re's import would cost every search.)"""
    runs = [c * 4 for c in set(text) if not (c.isalnum() or c == "_") and c * 4 in text]
    return " ".join(_runs_cut(w) if runs and any(r in w for r in runs) else w
                    for w in text.split())


def _runs_cut(word: str) -> str:
    out, i = [], 0
    while i < len(word):
        c, j = word[i], i + 1
        while j < len(word) and word[j] == c:
            j += 1
        out.append(c if j - i >= 4 and not (c.isalnum() or c == "_") else word[i:j])
        i = j
    return "".join(out)


def _around(text: str, low: str, words, width: int) -> str:
    """About `width` characters around the first query word, on one line, filler cut (a text
    that fits, whole: cut before a word it holds whole, it read as cut for nothing)."""
    if len(text) <= 2 * width:
        whole = _plain_line(text)
        if len(whole) <= width:
            return whole
    pos = min((p for p in (low.find(w) for w in words) if p >= 0), default=0)
    start = max(0, pos - width // 3)
    end = start + 2 * width  # room for filler that collapses
    piece = _plain_line(text[start:end])
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
    return run_many([Part(store, filters, deep)], query, mode=mode, limit=limit, now=now,
                    embedder=embedder, why_not=why_not, floor=floor)


def run_many(parts: list[Part], query: str, *, mode: str = "combined", limit: int = 10,
             now: float | None = None, embedder=None, why_not: str | None = None,
             floor: float | None = None) -> tuple[list[Hit], list[str]]:
    """run() over several parts (an index each, its filters applied) ranked as one list; each
    hit says which part it came from (Hit.part)."""
    warnings: list[str] = []
    query = _bounded(query, warnings)
    if mode != "keyword" and embedder is not None:
        try:
            if mode == "semantic":
                return semantic_many(parts, embedder, query, limit=limit, floor=floor), warnings
            return combined_many(parts, embedder, query, limit=limit, now=now,
                                 floor=floor), warnings
        except Exception as e:  # whatever fails, the words still answer
            if is_corruption(e):
                raise
            why_not = " ".join(f"{type(e).__name__}: {e}".split())[:200]
    if mode != "keyword":
        warnings.insert(0, unavailable(why_not or "no model"))
    return keyword_many(parts, query, limit=limit, now=now), warnings
