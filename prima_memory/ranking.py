"""What a question's words and dates add to a session's similarity, in the default search.

Words count as BM25 counts them, over the history searched: each word weighs by how rare it is
among the sessions (a name said in every session weighs next to nothing), a session's count of
messages holding it saturates (K1), and a long session is not ahead for its length (B). A word
matches the index terms that are its forms (`paint` finds painted, painting: see ENDINGS).
Beside the session's whole, its best turn: the weight of the query words said in one message
and its neighbours, so the session where they are said together wins over one where they are
strewn about. A session's changed paths are among its words: a path holding a word counts as
PATHS messages saying it, and one holding several as a turn that says them together; a word in
its title adds TITLE x the word's weight. All of it is taken over the weight of every word of
the query, a word the history never holds weighing most; and a session holding under HALF of
that weight gets little: the words of a paraphrase, found in sessions about something else,
then say little of them.

Dates a question names ("in March", "on 25 May, 2022", "last week", "during the summer":
timeparse.question_dates), and the events it places itself by ("before the release", dated by
the session speaking of it: search._event_windows), rank the sessions of that time first: one
in the window gets TIME, one outside gets less the further away it is (exp(-gap / DAYS): half
at about five days).

search.rank reads the best candidates a second time: a session whose words are said in an
exchange less like the question than its best one loses WHERE x the difference.

The constants were chosen on the development splits of LoCoMo and of the two coding sets
(bench/locomo.py, bench/eval.py); docs/evaluation.md gives every set's development and held-out
figures.
"""
from __future__ import annotations

import math

from .storage import Store, Words, count_by_session, session_of

K1 = 1.2
B = 0.4  # (0.75 is BM25's usual: sessions vary more in length than documents, and a long
#          session's extra messages are mostly about other things)
TURN = 1.0  # the best turn's weight beside the session's
NEAR = 2  # a turn's neighbours on each side, in messages: a question, its answer, around
WORDS = 0.15  # what the words' score (0..2 or so) counts beside a similarity (0..1)
HALF = 0.5  # a session holding less of the query words' weight than this gets only
STEEP = 4  # (its share / HALF) ** STEEP of what they say
WHERE = 0.3  # (search.rank's second pass) x how much less like the question a session is
#              where its words are said than at its best
TIME = 1.0  # a session inside a date the question names
DAYS = 7.0
EVENT = 0.25  # x TIME for the time of an event the question names: its session may be wrong
TITLE = 1.0  # x a word's weight, for a session whose title holds it: the title says what the
#             session is about ("when did we deploy feeds to canary", its title "Deploy feeds
#             to canary", among sessions that all say deploy, feeds and canary)
PATHS = 3  # a changed path holding a word counts as this many messages saying it
PATH_TURN = 2.0  # a changed path holding the words: the file, named, weighs more than a mention
TURN_IDS_MAX = 20000  # a word in more messages than this adds to the session's score alone


# A word matches the terms made of its stem and one of these endings: "paint" finds painted and
# paints, "adopt" adoption, "games" game; but "back" not backup, nor "art" party.
ENDINGS = ("", "s", "es", "e", "ed", "d", "ing", "er", "ers", "ion", "ions", "ation", "ations",
           "ly", "ment", "ments", "y", "ies", "ied", "al", "ness", "ity", "ful")
STEM_MIN = 4
FORMS_MAX = 64


def stem(token: str) -> str:
    """A token less its longest ENDING that leaves STEM_MIN characters or more."""
    for end in sorted(ENDINGS, key=len, reverse=True):
        if end and token.endswith(end) and len(token) - len(end) >= STEM_MIN:
            return token[:-len(end)]
    return token


def forms_query(store: Store, word: str) -> Words | None:
    """A word query for the messages holding each of a word's tokens in one of its forms (its
    stem and an ENDING); None when it has no token, a false Words when the index holds no form."""
    groups = []
    for tok in dict.fromkeys(store.token_list(word)):
        base = stem(tok)
        forms = [t for t in store.terms_starting(base, FORMS_MAX) if t[len(base):] in ENDINGS]
        if not forms:
            return Words([[]])
        groups.append(forms)
    return Words(groups) if groups else None


class WordCounts:
    """One index's counts of a query's words: for each word, session -> its messages holding
    it, and (for a word not too common) the ids of those messages."""

    def __init__(self, store: Store, words: list[str], admitted: set[int]):
        self.sessions: list[dict[int, int]] = []
        self.turns: list[set[int] | None] = []
        self.paths: dict[int, dict[str, set[int]]] = {}  # session -> changed path -> its words
        self.turn: dict[int, int] = {}  # session -> the message of its best turn (word_scores)
        self.titled: list[set[int]] = []  # each word's sessions whose title holds its stem
        for w in words:
            query = forms_query(store, w)
            # the messages holding it, read once: counted per session from their ids, unless
            # there are too many to list (then SQLite counts, and there is no best turn)
            ids = store.message_ids_matching(query, TURN_IDS_MAX + 1) if query else set()
            turns = ids if len(ids) <= TURN_IDS_MAX else None
            counts = count_by_session(ids) if turns is not None or not query else \
                store.count_matching(query)
            counts = {s: n for s, n in counts.items() if s in admitted}
            for path, sids in store.paths_containing(w).items():
                for s in sids:
                    if s in admitted:
                        counts[s] = counts.get(s, 0) + PATHS
                        self.paths.setdefault(s, {}).setdefault(path, set()).add(len(self.turns))
            self.sessions.append(counts)
            self.turns.append(turns)
            toks = store.token_list(w)  # (a stem of 3 letters or more: "go" is in every title)
            self.titled.append(set.intersection(*(store.sessions_with_title_containing(stem(t))
                                                  for t in toks)) & admitted
                               if toks and all(len(stem(t)) >= 3 for t in toks) else set())


def word_scores(parts: list[WordCounts], lengths: list[dict[int, int]], *,
                turns: bool = True) -> dict:
    """(part, session) -> what the words say of it, for each session holding one of them: BM25
    over every part as one history, plus TURN x its best turn's weight, over the weight of all
    the query's words (a word the history never holds weighs most: a paraphrase's words found
    in a session about something else then say little); a session holding less than HALF of
    that weight gets its share of it. `turns` False: no best turn (it needs numpy, which a
    hook does not load for a prompt's match: api.prompt_match)."""
    if not parts or not parts[0].sessions:
        return {}
    n = sum(len(x) for x in lengths) or 1
    avg = sum(sum(x.values()) for x in lengths) / n or 1.0
    words = len(parts[0].sessions)
    idf = []
    for w in range(words):
        df = sum(len(p.sessions[w]) for p in parts)
        idf.append(math.log(1 + (n - df + 0.5) / (df + 0.5)))
    total = sum(idf)
    out: dict = {}
    held: dict = {}
    for i, (p, length) in enumerate(zip(parts, lengths)):
        for w, counts in enumerate(p.sessions):
            for sid, tf in counts.items():
                norm = K1 * (1 - B + B * max(1, length.get(sid, 1)) / avg)
                out[(i, sid)] = out.get((i, sid), 0.0) + idf[w] * tf * (K1 + 1) / (tf + norm)
                held[(i, sid)] = held.get((i, sid), 0.0) + idf[w]
        for w, titled in enumerate(p.titled):
            for sid in titled:
                if (i, sid) in out:  # (its words' share of the query, HALF's gate, as before)
                    out[(i, sid)] += TITLE * idf[w]
        if not turns:
            continue
        best_turns, p.turn = _best_turns(p, idf)
        for sid, paths in p.paths.items():  # a changed path is a turn of its own
            best_turns[sid] = max(best_turns.get(sid, 0.0), *(PATH_TURN * sum(idf[w] for w in ws)
                                                               for ws in paths.values()))
        for sid, best in best_turns.items():
            if (i, sid) in out:
                out[(i, sid)] += TURN * best
    return {k: v / total * min(1.0, held[k] / total / HALF) ** STEEP for k, v in out.items()}


def _best_turns(p: WordCounts, idf: list[float]) -> tuple[dict[int, float], dict[int, int]]:
    """session -> the most weight of query words said in one message and its NEAR neighbours,
    and session -> that message (of those tied, the one itself saying the most), with numpy,
    which the search by meaning has loaded: a common word's thousands of messages cost a
    millisecond, not tens."""
    from .embed import numpy  # (loaded already, as said)
    np = numpy()
    said = {w: np.fromiter(ids, np.int64, len(ids)) for w, ids in enumerate(p.turns)
            if ids and idf[w] > 0}  # each word's messages
    spans, words = [], []
    for w, got in said.items():
        for d in range(-NEAR, NEAR + 1):
            near = got + d
            near = near[session_of(near) == session_of(got)]
            spans.append(near)
            words.append(np.full(len(near), w, np.int64))
    if not spans:
        return {}, {}
    n, idf_ = len(idf), np.asarray(idf)  # (message, word) as one number: counted once in a turn
    pairs = np.unique(np.concatenate(spans) * n + np.concatenate(words))
    messages, at = np.unique(pairs // n, return_inverse=True)
    weight = np.bincount(at, weights=idf_[pairs % n], minlength=len(messages))
    own = np.zeros(len(messages))
    for w, got in said.items():
        own[np.searchsorted(messages, got)] += idf[w]
    order = np.lexsort((own, weight, session_of(messages)))  # by session, weight: its best last
    sessions = session_of(messages[order])
    top = order[np.r_[sessions[1:] != sessions[:-1], True]]
    sessions = session_of(messages[top]).tolist()
    return dict(zip(sessions, weight[top].tolist())), dict(zip(sessions, messages[top].tolist()))


def time_affinity(windows, started: float | None, ended: float | None) -> float:
    """0..1: 1 for a session overlapping one of the windows, less the further it is from the
    nearest (none named: 0)."""
    if not windows or started is None:
        return 0.0
    end = ended if ended is not None else started
    gap = min(max(0.0, (s if s is not None else -math.inf) - end,
                  started - (e if e is not None else math.inf)) for s, e in windows)
    return math.exp(-gap / (DAYS * 86400))


def score(similarity: float, words: float, affinity: float) -> float:
    return similarity + WORDS * words + TIME * affinity


def relevance(raw: float) -> float:
    """The score as a person reads it, 0..100, in the same order."""
    return round(100 * max(0.0, raw) / (1 + max(0.0, raw)), 1)
