"""Meaning: exchanges embedded and kept current, and searched by vector.

An exchange is one reply with the prompt it answers first (the seed's rule: docs/design.md
§ Semantic search), cut to 2,000 characters. The model reads only 256 tokens, so by default the
cut text is embedded as overlapping windows and an exchange scores by its best window: all 2,000
characters count.
Matches under 0.2 are dropped, not the seed's 0.3: short paraphrase queries score 0.2-0.3 against
the session they mean. Noise does too, so a query is answered only when its best match stands
out from its own background (Scored). `PRIMA_SEED_EXACT=1` gives the seed's exact behaviour
instead: the cut text as one input (the model reads its start) and the 0.3 floor alone. A session
scores by its best exchange.

Knows the index's records and the embedder's interface, nothing of file formats. numpy and the
model are imported only when used: hooks never come here.
"""
from __future__ import annotations

import hashlib
import math
import os
import random
import time
import weakref

from . import vectorfile
from .embed import numpy as _numpy
from .settings import flag
from .storage import Store, session_of

CUT = 2000  # the seed's characters per exchange
SEED_FLOOR = 0.3
FLOOR = 0.2  # the default floor (docs/evaluation.md: what each floor scored)
# The background rule's settings (Scored), measured on both evaluation sets (docs/evaluation.md):
STANDOUT = 1.0  # spreads over the query's mean similarity a match must stand
GATE = 2.5  # ... and the query's best match, for meaning to answer it at all
GATE_WORDLESS = 5.3  # ... when none of its words occurs anywhere in the history
LENGTH = 1.0  # how much of a session's expected best-by-chance its rank gives back
BUDGET = 20.0  # seconds of embedding before a search: the seed's lazy update ("up to 20 s")
ANSWER_BY = 1.5  # seconds from a search's start by which it stops embedding to answer: a first
#                  search in a project of hundreds of sessions (thousands of exchanges to embed)
#                  answers in under 2 s, the newest embedded first, the rest in the background
BATCH = 16  # exchanges per write: a search waits at most one batch past its budget


class Settings:
    """What decides how exchanges become vectors and how they are kept (from the environment)."""

    def __init__(self, environ=os.environ):
        self.seed_exact = flag("PRIMA_SEED_EXACT", default=False, environ=environ)
        self.windows = not self.seed_exact
        self.floor = (SEED_FLOOR if self.seed_exact
                      else _number(environ.get("PRIMA_SEMANTIC_FLOOR"), FLOOR, 0.0, 1.0))
        self.budget = _number(environ.get("PRIMA_EMBED_BUDGET"), BUDGET, 0.0, 600.0)
        # unless the user set the budget (or asked for the seed's arithmetic), a search embeds
        # only until it can answer by ANSWER_BY, and leaves the rest to the background
        self.answer_by = None if self.seed_exact or environ.get("PRIMA_EMBED_BUDGET") \
            else _number(environ.get("PRIMA_ANSWER_BY"), ANSWER_BY, 0.0, 600.0)
        # spreads over the query's background a match must stand out by (Scored); 0: off
        self.standout = 0.0 if self.seed_exact else _number(
            environ.get("PRIMA_SEMANTIC_STANDOUT"), STANDOUT, 0.0, 20.0)

    @property
    def policy(self) -> str:
        """Part of every text hash: vectors made one way are never read as made the other."""
        return "windows-v1" if self.windows else "seed-v1"


def _number(text: str | None, default: float, lo: float, hi: float) -> float:
    """A setting from the environment: a finite number within [lo, hi], else the default."""
    try:
        value = float(text) if text else default
    except ValueError:
        return default
    return min(hi, max(lo, value)) if math.isfinite(value) else default


def vector_key(model: str, settings: Settings | None = None, build: str = "") -> str:
    """What the index files an exchange's vectors under: the model, how texts were cut for it
    and the build that made them (an ONNX file by its checksum, or the reference), so a change
    of any makes every exchange pending (vectors kept by text survive). A damaged or another
    build's vectors are never taken for this one's. Without `build`: the key of an index from
    before builds were told apart (see Embedding.adopt)."""
    key = f"{model}/{(settings or Settings()).policy}"
    return f"{key}/{build}" if build else key


def key_of(embedder, settings: Settings | None = None) -> str:
    """The key of the vectors this loaded embedder makes."""
    return vector_key(embedder.model, settings,
                      getattr(embedder, "build", "") or embedder.variant)


def team_key(embedder) -> str:
    """What a team's server files vectors under: the model and how texts were cut, not the
    build (two builds of one model give one text the same vector, to 0.99 and better)."""
    return vector_key(embedder.model)


def exchange_text(prompt: str | None, reply: str | None) -> str:
    text = f"{prompt}\n\n{reply}" if prompt and reply else (prompt or reply or "")
    return text[:CUT]


def text_hash(policy: str, text: str) -> bytes:
    return hashlib.blake2b(f"{policy}\0{text}".encode("utf-8", "replace"), digest_size=16).digest()


ADOPT_SAMPLE = 32  # texts made again to prove vectors from before builds were told apart
ADOPT_COSINE = 0.9999  # one build gives one text the same vector; another build: 0.99 at best
ADOPT_LOOK = 4000  # pending exchanges looked at for that sample, at most


class Embedding:
    """Brings an index's vectors up to date with one loaded embedder."""

    def __init__(self, store: Store, embedder, settings: Settings | None = None):
        self.store = store
        self.embedder = embedder
        self.settings = settings or Settings()
        self.model = key_of(embedder, self.settings)

    def run(self, budget: float | None = None, *, progress=None, should_stop=None) -> tuple[int, int]:
        """Embed pending exchanges, newest first, until none is left or `budget` seconds are
        spent (checked between batches). Returns (embedded now, still pending)."""
        deadline = None if budget is None else time.monotonic() + budget
        self.adopt()
        ids = self.store.pending_exchanges(self.model)
        done = 0
        for i in range(0, len(ids), BATCH):
            if (deadline is not None and i and time.monotonic() >= deadline) or \
                    (should_stop is not None and should_stop()):
                return done, len(ids) - i
            done += self._batch(ids[i:i + BATCH])
            if progress is not None:
                progress(i + len(ids[i:i + BATCH]), len(ids))
        return done, 0

    def adopt(self) -> None:
        """Vectors filed before builds were told apart (under the model and policy alone) are
        of an unknown build: a damaged one's, maybe. Re-embedding them all costs as long as
        making them did, so a sample is made again by this build: if every one comes out the
        same, the vectors this backend made are this build's and are kept (with their links
        and SIMILAR_TO edges); if not, they are dropped, like the other backend's, and their
        exchanges are pending. Decided once, by the first embedder to run."""
        legacy = vector_key(self.embedder.model, self.settings)
        if legacy == self.model or legacy not in self.store.legacy_vector_keys():
            return

        np = _numpy()
        variant = self.embedder.variant
        ids = self.store.pending_exchanges(self.model)
        ids = random.sample(ids, min(len(ids), ADOPT_LOOK))  # the sample spans the history
        sample: list[tuple[str, list[bytes]]] = []
        for i in range(0, len(ids), 500):
            texts = self._texts(ids[i:i + 500])
            found = self.store.known_vectors([h for _t, h in texts.values()], legacy, variant)
            sample += [(t, found[h]) for t, h in texts.values() if h in found]
            if len(sample) >= ADOPT_SAMPLE:
                break
        sample = sample[:ADOPT_SAMPLE]
        same = bool(sample)
        for text, vecs in sample:
            windows = self.embedder.windows(text) if self.settings.windows else [text]
            if len(windows) != len(vecs):
                same = False
                break
            new = self.embedder.encode(windows).astype(np.float32)
            old = np.frombuffer(b"".join(vecs), dtype="<f4").reshape(len(vecs), -1)
            if old.shape != new.shape or not (np.sum(old * new, axis=1) >= ADOPT_COSINE).all():
                same = False
                break
        with self.store.write():
            self.store.adopt_vectors(legacy, self.model, variant if same else None)

    def _texts(self, ids) -> dict[int, tuple[str, bytes]]:
        policy = self.settings.policy
        out = {}
        for i, (prompt, reply) in self.store.exchange_texts(ids).items():
            text = exchange_text(prompt, reply)
            out[i] = (text, text_hash(policy, text))
        return out

    def _batch(self, ids) -> int:
        texts = self._texts(ids)
        known = self.store.known_vectors([h for _t, h in texts.values()], self.model)
        todo = {h: t for t, h in texts.values() if h not in known}
        new: dict[bytes, list[bytes]] = {}
        if todo:
            pieces = [(h, w) for h, t in todo.items()
                      for w in (self.embedder.windows(t) if self.settings.windows else [t])]
            vecs = self.embedder.encode([w for _h, w in pieces])
            for (h, _w), v in zip(pieces, vecs):
                new.setdefault(h, []).append(v.astype("<f4").tobytes())
        with self.store.write():
            # the texts again, under the write lock: a reply that grew while the model read it
            # stays pending rather than linked to vectors of its old text
            same = [(i, h) for i, (_t, h) in self._texts(ids).items()
                    if texts.get(i, (None, None))[1] == h]
            # only the vectors of texts still there: an exchange forgotten meanwhile (a forget
            # while this embedder ran) leaves none behind
            kept = {h for _i, h in same}
            self.store.add_vectors(self.model, self.embedder.variant,
                                   [(h, v) for h, v in new.items() if h in kept])
            self.store.link_exchanges(self.model, same)
        return len(same)


# -- search -----------------------------------------------------------------------------------

class Match:
    def __init__(self, session: int, similarity: float, exchange: int, window: int = 0):
        self.session, self.similarity, self.exchange = session, similarity, exchange
        self.window = window  # which window of the exchange's text matched best
        self.rank = similarity  # what orders it (Scored.rank)


_LOADED: dict = {}  # (index path, inode, model) -> Held: a long-lived process (the MCP server)
# reads the vectors once, then only what changed
REREAD = 0.25  # past this share of exchanges changed, the vectors are read again whole


REWRITE = 0.1  # past this share of exchanges changed since, the file of vectors is written again


class Held:
    """The vectors of one model as read: a row per window, with the text hash each exchange was
    embedded as (what a later read compares) and, once asked for, each row's time. Rows live in
    buffers with room to grow, so new exchanges are appended without copying all the others.
    `hashes` may come as what makes them (a file's: read only when a later read compares)."""

    def __init__(self, gen: int, hashes, ids, windows, mat, times=None):
        self.gen, self._hashes = gen, hashes
        self._cols = [ids, windows, mat, times]
        self.n = len(ids)
        self._sizes: tuple = (-1, None)
        self.filed = False  # whether the file beside the index held these rows (at some gen)
        self.changed = 0  # exchanges changed since it did

    @property
    def hashes(self) -> dict:
        if callable(self._hashes):
            self._hashes = self._hashes()
        return self._hashes

    @hashes.setter
    def hashes(self, value: dict) -> None:
        self._hashes = value

    def sizes(self):
        """Each row's session's number of windows (kept until rows change)."""
        if self._sizes[0] != self.n:
            np = _numpy()
            _u, inv, counts = np.unique(session_of(self.ids), return_inverse=True,
                                        return_counts=True)
            self._sizes = (self.n, counts[inv])
        return self._sizes[1]

    ids = property(lambda self: self._cols[0][:self.n])
    windows = property(lambda self: self._cols[1][:self.n])
    mat = property(lambda self: self._cols[2][:self.n])

    @property
    def times(self):
        return None if self._cols[3] is None else self._cols[3][:self.n]

    @times.setter
    def times(self, values) -> None:
        self._cols[3] = values

    def append(self, ids, windows, mat, times=None) -> None:
        np = _numpy()
        if not len(ids):  # (the buffers first read are read-only: nothing is written to them)
            return
        need = self.n + len(ids)
        if need > len(self._cols[0]):  # double the room: appends cost their own rows, amortised
            room = max(need, 2 * len(self._cols[0]), 1024)
            for i, col in enumerate(self._cols):
                if col is not None:
                    grown = np.empty((room, *col.shape[1:]), dtype=col.dtype)
                    grown[:self.n] = col[:self.n]
                    self._cols[i] = grown
        for col, new in zip(self._cols, (ids, windows, mat, times)):
            if col is not None:
                col[self.n:need] = new
        self.n = need


def _key(store: Store, *what) -> tuple:
    try:  # an index moved aside and made anew starts its count again
        return (store.path, os.stat(store.path).st_ino, *what)
    except OSError:
        return (store.path, 0, *what)


def _held(store: Store, model: str, dim: int) -> Held:
    key = _key(store, model, dim)
    held = _LOADED.get(key)
    if held is None or held.gen != store.vectors_generation():
        with store.read():  # the count, the links and the vectors of one state
            held = _refresh(store, model, dim, held)
        _LOADED[key] = held
    return held


def _matrix(store: Store, model: str, dim: int):
    held = _held(store, model, dim)
    return held.ids, held.windows, held.mat


def _refresh(store: Store, model: str, dim: int, old: Held | None) -> Held:
    """The vectors now: the file beside the index when it holds them (vectorfile.py), else read
    whole the first time, then only the exchanges embedded (or embedded anew) since, the ones
    whose link went dropped: a new session costs its own rows. The file is written again when
    they were read whole, or too many have changed since it was."""
    np = _numpy()
    gen = store.vectors_generation()
    if old is None:
        old = _from_file(store, model, dim)
        if old is not None and old.gen == gen:
            return old
    hashes = store.embedded_hashes(model)
    if old is not None:
        gone = [x for x, h in old.hashes.items() if hashes.get(x) != h]
        new = [x for x, h in hashes.items() if old.hashes.get(x) != h]
        if len(gone) + len(new) <= REREAD * max(1, len(hashes)):
            ids, windows, mat = _read_matrix(store.exchange_vectors(model, new), dim)
            times = None if old.times is None else _row_times(store, ids)
            if gone:  # rows to drop: the rest is copied once, then the new appended
                keep = ~np.isin(old.ids, np.asarray(gone, dtype=np.int64))
                kept = Held(gen, hashes, old.ids[keep], old.windows[keep], old.mat[keep],
                            None if old.times is None else old.times[keep])
                kept.filed, kept.changed, old = old.filed, old.changed, kept
            old.gen, old.hashes = gen, hashes
            old.append(ids, windows, mat, times)
            old.changed += len(gone) + len(new)
            if old.filed and old.changed > REWRITE * max(1, len(hashes)):
                _file(store, model, old)
            return old
    held = Held(gen, hashes, *_read_matrix(store.exchange_vectors(model), dim))
    _file(store, model, held)
    return held


def _from_file(store: Store, model: str, dim: int) -> Held | None:
    """The vectors as the file beside the index holds them (at the gen it says), if it is this
    index's: see vectorfile.py."""
    got = vectorfile.read(vectorfile.path_for(store.path, model), store.vectors_token(), model,
                          dim)
    if got is None:
        return None
    held = Held(got.gen, got.hashes, got.ids, got.windows, got.mat)
    held.filed = True
    return held


def _file(store: Store, model: str, held: Held) -> None:
    """Keep `held` in the file beside the index, for the next process to map (not for a
    read-only index: its folder is not for writing either)."""
    if store.readonly:
        return
    if vectorfile.write(vectorfile.path_for(store.path, model), store.vectors_token(), model,
                        held.gen, held.ids, held.windows, held.mat, held.hashes):
        held.filed, held.changed = True, 0


def _read_matrix(rows, dim: int):
    np = _numpy()
    size = 4 * dim
    ids, windows, blobs = [], [], []
    for exchange, n, vec in rows:
        if isinstance(vec, bytes) and len(vec) == size:  # anything else was not made here
            ids.append(exchange)
            windows.append(n)
            blobs.append(vec)
    mat = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), dim)
    if not np.isfinite(mat).all():  # a damaged vector must not sort first (NaN) or everywhere
        mat = np.nan_to_num(mat, nan=0.0, posinf=0.0, neginf=0.0)
    return np.asarray(ids, dtype=np.int64), np.asarray(windows, dtype=np.int32), mat


def _row_times(store: Store, ids):
    """When each row's exchange was written (NaN if unknown)."""
    np = _numpy()
    ts = store.message_times(set(ids.tolist()))
    return np.asarray([np.nan if ts.get(x) is None else ts[x] for x in ids.tolist()],
                      dtype=np.float64)


def prefetch(store: Store, model: str, dim: int) -> None:
    """Have the vectors of `model` (a vector_key) ready, and the exchanges it has yet to embed
    known, before the model that gives the key is loaded: a search reads them while the model
    loads on another thread."""
    _held(store, model, dim)
    store.pending_exchanges(model)


class Scored:
    """One query's similarity to every exchange window held, and the bar a match must clear.

    By default a match must stand out from the query's own background, not clear one absolute
    floor: paraphrases score 0.2-0.3 against the session they mean, and so does noise. The
    background is the query's similarity to the history as a whole: the mean and spread over
    every window, drawn towards what unrelated text scores while the history is small. A query
    is answered by meaning only when its best match stands out by `gate` spreads (the caller
    asks more of a query none of whose words the history holds); its matches are then those
    `standout` spreads over the mean, and over the floor. `PRIMA_SEED_EXACT` keeps the seed's
    0.3 floor alone (docs/evaluation.md: what each rule scored)."""

    def __init__(self, held: Held, sims, floor: float, settings: Settings,
                 against: tuple[float, float] | None = None):
        self.held, self.sims = held, sims
        # `against`: the background of every index searched together (score_queries)
        self.mean, self.spread = against or background(sims)
        self.standout = settings.standout
        self.bar = max(floor, self.mean + self.standout * self.spread) if self.standout \
            else floor
        # What ranks a row: its similarity, less what a session of that many windows reaches
        # by chance (the best of n draws grows as sqrt(2 ln n) spreads): a long session's best
        # window no longer outranks a short session that is about the query.
        np = _numpy()
        self.rank = sims if not self.standout or not len(sims) else \
            sims - LENGTH * self.spread * np.sqrt(2 * np.log(held.sizes()))

    def answers(self, gate: float) -> bool:
        """Whether the best match stands out `gate` spreads from the background (always, with
        the rule off)."""
        return not self.standout or (len(self.sims) > 0 and
                                     float(self.sims.max()) >= self.mean + gate * self.spread)

    def matches(self, limit: int, admit=None) -> list[Match]:
        """Sessions by their best window over the bar, best first, at most `limit`."""
        np = _numpy()
        sims, ids = self.sims, self.held.ids
        keep = np.nonzero(sims >= self.bar)[0]
        order = keep[np.argsort(-self.rank[keep], kind="stable")]
        out: list[Match] = []
        seen: set[int] = set()
        for k in order:  # best window first: a session's first row is its best exchange
            session = session_of(int(ids[k]))
            if session in seen:
                continue
            seen.add(session)
            if admit is not None and not admit(session):
                continue
            out.append(self._match(k))
            if len(out) >= limit:
                break
        return out

    def _match(self, k) -> Match:
        m = Match(session_of(int(self.held.ids[k])), float(self.sims[k]), int(self.held.ids[k]),
                  int(self.held.windows[k]))
        m.rank = float(self.rank[k])
        return m

    def at(self, turns: dict[int, tuple[int, int]]) -> dict[int, tuple[int, float]]:
        """session -> its most similar exchange holding one of the messages `turns[session]`
        (first, last), and that exchange's similarity (its best window's). An exchange holds the
        messages from its own (its request) to the next exchange's."""
        np = _numpy()
        ids = self.held.ids
        out: dict[int, tuple[int, float]] = {}
        if not turns or not len(ids):
            return out
        rows = np.nonzero(np.isin(session_of(ids), np.fromiter(turns, np.int64, len(turns))))[0]
        for sid, (first, last) in turns.items():
            mine = rows[session_of(ids[rows]) == sid]
            before = ids[mine][ids[mine] <= first]
            mine = mine[(ids[mine] >= (before.max() if len(before) else first))
                        & (ids[mine] <= last)]
            if len(mine):
                k = mine[np.argmax(self.sims[mine])]
                out[sid] = (int(ids[k]), float(self.sims[k]))
        return out

    def best(self, sessions) -> dict[int, Match]:
        """Each of `sessions`' best window, over the bar or not (one not embedded: none)."""
        np = _numpy()
        ids = self.held.ids
        wanted = np.asarray(sorted(sessions), dtype=np.int64)
        rows = np.nonzero(np.isin(session_of(ids), wanted))[0]
        out: dict[int, Match] = {}
        for k in rows[np.argsort(-self.rank[rows], kind="stable")]:
            session = session_of(int(ids[k]))
            if session not in out:
                out[session] = self._match(k)
        return out


# What an unrelated text scores against a query (all-MiniLM-L6-v2, measured on the evaluation
# histories), counted as this many windows: a small history's own spread says little.
PRIOR_MEAN, PRIOR_SPREAD, PRIOR_WEIGHT = 0.05, 0.08, 200


def background(sims) -> tuple[float, float]:
    """The query's mean similarity to the history and its spread (standard deviation), each
    drawn towards the prior's by the prior's weight."""
    n = len(sims)
    return background_of(n, float(sims.mean()) if n else 0.0, float(sims.var()) if n else 0.0)


def background_of(n: int, mean: float, var: float) -> tuple[float, float]:
    """background() of n similarities of this mean and variance."""
    w = PRIOR_WEIGHT
    m = (n * mean + w * PRIOR_MEAN) / (n + w)
    v = (n * (var + (mean - m) ** 2) + w * (PRIOR_SPREAD ** 2 + (PRIOR_MEAN - m) ** 2)) / (n + w)
    return m, v ** 0.5


def score_query(store: Store, embedder, query: str, *, floor: float | None = None,
                settings: Settings | None = None, timed: bool = False) -> Scored:
    """The query's similarity to every window held (`timed`: with each row's time)."""
    return score_queries([store], embedder, query, floor=floor, settings=settings,
                         timed=timed)[0]


def score_queries(stores, embedder, query: str, *, floor: float | None = None,
                  settings: Settings | None = None, timed: bool = False,
                  skips: list | None = None) -> list[Scored]:
    """score_query over several indexes as over one holding them all: the query embedded once,
    and one background (the mean and spread of its similarity to every window of every index,
    less each index's `skips`: sessions another holds too), so a match stands out, and a
    session's rank reads, the same whichever index holds it."""
    np = _numpy()
    settings = settings or Settings()
    if any(getattr(s, "remote", False) for s in stores):  # a team's server: one store
        return [_remote(s, embedder, query, floor, settings) for s in stores]
    model, dim = key_of(embedder, settings), getattr(embedder, "dim", 384)
    helds = [_timed(s, model, dim) if timed else _held(s, model, dim) for s in stores]
    if not any(len(h.ids) for h in helds):
        return [Scored(h, np.zeros(0, dtype=np.float32), 1.0, settings) for h in helds]
    q = embedder.encode([query[:CUT]])[0].astype(np.float32)
    sims = [h.mat @ q for h in helds]
    against = None
    if len(sims) > 1:
        kept = [s[~np.isin(session_of(h.ids), np.fromiter(skip, np.int64, len(skip)))] if skip
                else s for h, s, skip in zip(helds, sims, skips or [()] * len(sims))]
        against = background(np.concatenate(kept))
    floor = settings.floor if floor is None else floor
    return [Scored(h, s, floor, settings, against) for h, s in zip(helds, sims)]


# The nearest windows a team's server returns for a query (its HNSW index), and the windows its
# background is drawn from (a sample: the server holds every member's).
NEAREST, SAMPLE = 400, 4000


class _Rows(Held):
    """Some of an index's windows (a server's nearest), with each one's session's size given
    (its other windows are not among them)."""

    def __init__(self, ids, windows, sizes):
        super().__init__(0, {}, ids, windows, None)
        self._given = sizes

    def sizes(self):
        return self._given


class RemoteScored(Scored):
    """Scored, over a team's server: its nearest windows (by HNSW) stand for every window, the
    background comes from a sample, and a session's own windows (best, at) are asked for."""

    def __init__(self, store, model: str, vec: str, floor: float, settings: Settings):
        np = _numpy()
        self.store, self.model, self.vec = store, model, vec
        self.floor, self.settings = floor, settings
        rows = store.nearest(model, vec, NEAREST)
        ids = np.asarray([r[0] for r in rows], dtype=np.int64)
        counts = store.window_counts(model, {session_of(int(i)) for i in ids})
        held = _Rows(ids, np.asarray([r[1] for r in rows], dtype=np.int64),
                     np.asarray([max(1, counts.get(session_of(int(i)), 1)) for i in ids]))
        super().__init__(held, np.asarray([r[2] for r in rows], dtype=np.float32), floor,
                         settings, against=background_of(*store.background(model, vec, SAMPLE)))

    def _of(self, sessions) -> Scored:
        """This query scored over every window of `sessions` (all of theirs: Held counts their
        sizes), on the same background."""
        np = _numpy()
        rows = self.store.best_windows(self.model, self.vec, sorted(sessions)) if sessions else []
        held = Held(0, {}, np.asarray([r[0] for r in rows], dtype=np.int64),
                    np.asarray([r[1] for r in rows], dtype=np.int64), None)
        return Scored(held, np.asarray([r[2] for r in rows], dtype=np.float32), self.floor,
                      self.settings, against=(self.mean, self.spread))

    def best(self, sessions) -> dict[int, Match]:
        return self._of(set(sessions)).best(sessions)

    def at(self, turns: dict[int, tuple[int, int]]) -> dict[int, tuple[int, float]]:
        return self._of(set(turns)).at(turns)


def vector_text(vec) -> str:
    """A vector as pgvector reads it."""
    return "[" + ",".join(f"{x:.7g}" for x in vec.tolist()) + "]"


def _remote(store, embedder, query: str, floor: float | None, settings: Settings) -> Scored:
    np = _numpy()
    q = embedder.encode([query[:CUT]])[0].astype(np.float32)
    return RemoteScored(store, team_key(embedder), vector_text(q),
                        settings.floor if floor is None else floor, settings)


def search(store: Store, embedder, query: str, *, limit: int, admit=None,
           floor: float | None = None, settings: Settings | None = None) -> list[Match]:
    """Sessions by their best exchange's similarity to the query (0..1), best first, those
    that clear the bar (Scored). `admit(session) -> bool` applies the filters."""
    return score_query(store, embedder, query, floor=floor, settings=settings).matches(limit,
                                                                                        admit)


# -- find_similar (docs/design.md § Find similar) --------------------------------------------------

YEAR = 365 * 86400.0
TURNS = 50  # a session of this many turns gets the whole depth weight


class Similar:
    """An exchange as find_similar ranks it: 0.7 similarity + 0.2 recency (linear, zero at 365
    days) + 0.1 min(1, session turns / 50)."""

    def __init__(self, exchange: int, similarity: float, recency: float, turns: int,
                 window: int = 0):
        self.exchange, self.session = exchange, session_of(exchange)
        self.similarity, self.recency, self.turns, self.window = similarity, recency, turns, window
        self.score = score(similarity, recency, turns)


def score(similarity: float, recency: float, turns: int) -> float:
    return 0.7 * similarity + 0.2 * recency + 0.1 * min(1.0, turns / TURNS)


def recency(ts: float | None, now: float) -> float:
    """1 now, falling linearly to 0 at 365 days; an unknown time counts as old."""
    if ts is None:
        return 0.0
    return max(0.0, min(1.0, 1.0 - (now - ts) / YEAR))


def similar(store: Store, embedder, query: str, *, limit: int, admit=None,
            floor: float | None = None, settings: Settings | None = None,
            now: float | None = None, gate: float = GATE) -> list[Similar]:
    """The exchanges most like the query, by find_similar's score, best first: one per session
    (its best; the rest of a session is read with it). Exchanges under the bar are not
    candidates, and none is when the query's best match does not stand out by `gate` (Scored).
    Exact: every exchange is scored, turns counted only where they can decide."""
    return [m for _i, m in similar_many([store], embedder, query, limit=limit, admits=[admit],
                                        floor=floor, settings=settings, now=now, gate=gate)]


def similar_many(stores, embedder, query: str, *, limit: int, admits=None,
                 floor: float | None = None, settings: Settings | None = None,
                 now: float | None = None, gate: float = GATE) -> list[tuple[int, Similar]]:
    """similar() over several indexes as one (score_queries): (which store, exchange), best
    first. `admits`: each store's admit(session), or None."""
    np = _numpy()
    now = time.time() if now is None else now
    scoreds = score_queries(stores, embedder, query, floor=floor, settings=settings, timed=True)
    if not any(s.answers(gate) for s in scoreds):
        return []
    out: list[tuple[int, Similar]] = []
    for i, (store, scored) in enumerate(zip(stores, scoreds)):
        admit = admits[i] if admits else None
        held, sims = scored.held, scored.sims
        ids, windows, times = held.ids, held.windows, held.times
        if not len(ids):
            continue
        rec = np.clip(1.0 - (now - times) / YEAR, 0.0, 1.0)
        rec[np.isnan(rec)] = 0.0
        part = 0.7 * sims + 0.2 * rec  # the score before turns, which add at most 0.1
        keep = np.nonzero(sims >= scored.bar)[0]
        order = keep[np.argsort(-part[keep], kind="stable")]
        best: dict[int, int] = {}  # session -> row of its best exchange (by the score before turns)
        for k in order:
            session = session_of(int(ids[k]))
            if session in best or (admit is not None and not admit(session)):
                continue
            best[session] = int(k)
        rows = list(best.values())
        if len(rows) > limit:  # turns can lift a session by 0.1 at most: only those within reach
            cut = part[rows[limit - 1]] - 0.1
            rows = [k for k in rows if part[k] >= cut]
        turns = store.session_turns(session_of(int(ids[k])) for k in rows)
        out += [(i, Similar(int(ids[k]), float(sims[k]), float(rec[k]),
                            turns[session_of(int(ids[k]))], int(windows[k]))) for k in rows]
    out.sort(key=lambda im: (-im[1].score, im[0], -im[1].exchange))
    return out[:limit]


def _timed(store: Store, model: str, dim: int) -> Held:
    """The vectors with each row's time, read at find_similar's first use (then kept)."""
    held = _held(store, model, dim)
    if held.times is None:
        held.times = _row_times(store, held.ids)
    return held


# -- SIMILAR_TO edges ---------------------------------------------------------------------------

EDGE = 0.85  # docs/design.md § Find similar: exchange pairs at least this similar are joined
EDGE_BLOCK = 64  # pending exchanges per matrix product (x all windows) and per write


def link(store: Store, model: str, dim: int = 384, *, budget: float | None = None,
         should_stop=None) -> tuple[int, int]:
    """Compute the SIMILAR_TO edges of the exchanges embedded since their edges were last
    computed: their windows against every window, in blocks, newest vectors never against each
    other from scratch again. Two exchanges are as similar as their most similar windows; pairs
    within one session are not edges (it is read whole anyway), nor pairs of copies (the same
    text). Each exchange keeps its storage EDGE_K nearest and an edge joins two that keep each
    other (store._EDGE_SCHEMA), so a new exchange costs its own pairs and the rows of the
    exchanges it may join, whatever the history's size. Returns (exchanges linked now, still
    pending). When exchanges only come (none goes or changes its text), the result equals
    linking every exchange at once from scratch (cosines to 1e-6). One that goes (deleted, or
    its reply changed) takes its rows with it: an exchange that kept it among its nearest has
    one fewer, and may take the next of its rows for its own (a pair from the other end's
    nearest) where from scratch it would take one not stored, until a new exchange it may join
    comes; never more than EDGE_K edges. An index linked before the bound is brought to it
    first, once."""
    np = _numpy()
    bounded = store.bound_edges()
    if bounded and budget is None:  # nobody waits on this call: the old pairs' pages back
        store.reclaim()
    todo = store.unlinked_exchanges(model)
    if not todo:
        return 0, 0
    deadline = None if budget is None else time.monotonic() + budget
    held = _held(store, model, dim)
    if not held.filed or held.changed:  # (the background's work: a search then maps them)
        _file(store, model, held)
    ids, mat, codes = held.ids, held.mat, _text_codes(held)
    sessions = session_of(ids)
    pending = sorted(todo, reverse=True)  # newest first; one with no usable vector gets none
    rows_of: dict[int, list[int]] = {}
    wanted = np.isin(ids, np.asarray(pending, dtype=np.int64))
    for k in np.nonzero(wanted)[0]:
        rows_of.setdefault(int(ids[k]), []).append(int(k))
    done = 0
    for i in range(0, len(pending), EDGE_BLOCK):
        if (deadline is not None and i and time.monotonic() >= deadline) or \
                (should_stop is not None and should_stop()):
            return done, len(pending) - i
        block = pending[i:i + EDGE_BLOCK]
        rows = np.asarray([k for x in block for k in rows_of.get(x, ())], dtype=np.int64)
        pairs = _edges(ids, sessions, codes, mat, rows) if len(rows) else []
        with store.write():
            done += store.set_edges(model, {x: todo[x] for x in block}, pairs)
    return done, 0


def _text_codes(held: Held):
    """Each row's text as a number (the rows of copies, one text, share it), kept beside the
    rows held: counted again only for the rows appended since (held rows never change)."""
    np = _numpy()
    codes, number = _CODES.get(held, (np.empty(0, dtype=np.int64), {}))
    if len(codes) > held.n:
        codes, number = np.empty(0, dtype=np.int64), {}
    if len(codes) < held.n:
        new = [number.setdefault(held.hashes.get(x, x), len(number))
               for x in held.ids[len(codes):].tolist()]
        codes = np.concatenate([codes, np.asarray(new, dtype=np.int64)])
    _CODES[held] = (codes, number)
    return codes


_CODES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _edges(ids, sessions, codes, mat, rows) -> list[tuple[int, int, float]]:
    """(x, y, cosine) of the rows' exchanges x against every exchange y of another session and
    another text at least EDGE similar: the best window pair of each."""
    np = _numpy()
    sims = mat[rows] @ mat.T
    r, c = np.nonzero((sims >= EDGE - 1e-4) & (sessions[rows][:, None] != sessions[None, :])
                      & (codes[rows][:, None] != codes[None, :]))
    if not len(r):
        return []
    # the cosines again in float64, alike whichever end's product found them: which of two
    # near-equal pairs an exchange keeps, and whether one at 0.85 is a pair at all, must not
    # hang on the order of float32 sums
    cos = np.einsum("ij,ij->i", mat[rows][r].astype(np.float64), mat[c].astype(np.float64))
    near = cos >= EDGE  # (the float32 products only chose which to sum again)
    x, y, cos = ids[rows][r][near], ids[c][near], cos[near]
    order = np.lexsort((-cos, y, x))  # per pair, the best first
    x, y, cos = x[order], y[order], cos[order]
    first = np.ones(len(x), dtype=bool)
    first[1:] = (x[1:] != x[:-1]) | (y[1:] != y[:-1])
    return [(int(p), int(q), round(float(v), 6))
            for p, q, v in zip(x[first], y[first], cos[first])]
