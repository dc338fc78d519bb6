"""Embeddings: the exchanges to embed, their vectors (by text hash, per model and variant),
and the similarity edges between exchanges (each keeps its EDGE_K nearest)."""
from __future__ import annotations

import apsw

from ... import jsontext
from ..shared import SHIFT
from .files import FileLedger


EDGE_K = 8  # the nearest kept per exchange: edges per exchange at most (see _EDGE_SCHEMA)


def _nearest(cands) -> list[int]:
    """The EDGE_K strongest of (other exchange, cosine): the highest cosine, then the oldest."""
    return [y for y, _c in sorted(cands, key=lambda yc: (-yc[1], yc[0]))[:EDGE_K]]

_LEGACY_KEYS = "legacy_vectors"  # meta: vector keys from before schema 9, not yet adopted


class Vectors(FileLedger):
    # -- embeddings ----------------------------------------------------------------------------

    # The exchanges worth embedding: main-thread replies, with the prompt they answer.
    _TO_EMBED = ("FROM exchanges e JOIN messages m ON m.id = e.id WHERE m.sidechain = 0 "
                 "AND NOT EXISTS (SELECT 1 FROM embedded x WHERE x.exchange = e.id AND x.model = ?)")

    def pending_exchanges(self, model: str) -> list[int]:
        """Ids of exchanges with no vectors from `model`, newest first. A scan of every message
        (10 ms at 1,000 sessions), kept until the index changes: a search that asked while its
        model loaded does not scan again once it has."""
        version = self.version()
        memo = self._pending.get(model)
        if memo is None or memo[0] != version:
            memo = self._pending[model] = (version, [r[0] for r in self.db.execute(
                f"SELECT e.id {self._TO_EMBED} ORDER BY e.ts DESC, e.id DESC", (model,))])
        return list(memo[1])

    def count_pending(self, model: str) -> int:
        memo = self._pending.get(model)
        if memo is not None and memo[0] == self.version():
            return len(memo[1])
        return self.db.execute(f"SELECT count(*) {self._TO_EMBED}", (model,)).get

    def count_embedded(self, model: str) -> int:
        return self.db.execute("SELECT count(*) FROM embedded WHERE model = ?",
                               (model,)).get

    def exchange_texts(self, ids) -> dict[int, tuple[str | None, str]]:
        """exchange id -> (prompt or None, reply)."""
        return {i: (prompt, reply) for i, prompt, reply in self._chunked(
            "SELECT id, prompt, reply FROM exchanges WHERE id IN ({})", ids)}

    def known_vectors(self, hashes, model: str,
                      variant: str | None = None) -> dict[bytes, list[bytes]]:
        """text hash -> its windows' vectors, for the hashes already embedded by `model` (by
        that backend, with `variant`)."""
        hashes = list(dict.fromkeys(hashes))
        out: dict[bytes, list[bytes]] = {}
        only = "" if variant is None else "AND variant = ? "
        for h, vec in self._chunked(
                f"SELECT text_hash, vec FROM vectors WHERE model = ? {only}AND text_hash IN "
                "({}) ORDER BY text_hash, n", hashes,
                (model, *([] if variant is None else [variant]))):
            out.setdefault(h, []).append(vec)
        return out

    def legacy_vector_keys(self) -> list[str]:
        """The keys vectors were filed under before builds were told apart, still to decide."""
        try:
            keys = jsontext.loads(self.get_meta(_LEGACY_KEYS) or "[]")
        except ValueError:
            return []
        return [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []

    def adopt_vectors(self, legacy: str, model: str, variant: str | None) -> None:
        """In the caller's write transaction: the vectors under `legacy` that `variant` made
        become `model`'s, with their exchanges' links and edges (variant None: none do); all
        else under `legacy` goes, and it is no longer listed."""
        db = self.db
        if variant is not None:
            db.execute("UPDATE OR IGNORE vectors SET model = ? WHERE model = ? AND variant = ?",
                       (model, legacy, variant))
            db.execute("INSERT OR IGNORE INTO embedded(exchange, model, text_hash) "
                       "SELECT x.exchange, ?1, x.text_hash FROM embedded x WHERE x.model = ?2 "
                       "AND EXISTS (SELECT 1 FROM vectors v WHERE v.text_hash = x.text_hash "
                       "AND v.model = ?1)", (model, legacy))
            db.execute("INSERT OR IGNORE INTO linked(exchange, model, text_hash) "
                       "SELECT l.exchange, ?1, l.text_hash FROM linked l JOIN embedded x "
                       "ON x.exchange = l.exchange AND x.model = ?1 AND x.text_hash = l.text_hash "
                       "WHERE l.model = ?2", (model, legacy))
            db.execute("INSERT OR IGNORE INTO similar(a, b, model, cosine) "
                       "SELECT s.a, s.b, ?1, s.cosine FROM similar s WHERE s.model = ?2 "
                       "AND EXISTS (SELECT 1 FROM embedded x WHERE x.exchange = s.a "
                       "AND x.model = ?1) AND EXISTS (SELECT 1 FROM embedded x "
                       "WHERE x.exchange = s.b AND x.model = ?1)", (model, legacy))
        for table in ("embedded", "linked", "similar", "vectors"):
            db.execute(f"DELETE FROM {table} WHERE model = ?", (legacy,))
        rest = [k for k in self.legacy_vector_keys() if k != legacy]
        if rest:
            self.set_meta(_LEGACY_KEYS, jsontext.dumps(rest))
        else:
            db.execute("DELETE FROM meta WHERE key = ?", (_LEGACY_KEYS,))

    def _list_legacy_keys(self) -> None:
        """Record the vector keys that name no build (model/policy: one slash; a build adds a
        second), merged with those listed already."""
        keys = set(self.legacy_vector_keys()) | {r[0] for r in self.db.execute(
            "SELECT DISTINCT model FROM vectors WHERE model NOT LIKE '%/%/%'")}
        if keys:
            self.set_meta(_LEGACY_KEYS, jsontext.dumps(sorted(keys)))

    def add_vectors(self, model: str, variant: str, rows) -> None:
        """rows: (text hash, [vector bytes per window]). A hash already held keeps its vectors."""
        self.db.executemany(
            "INSERT OR IGNORE INTO vectors(text_hash, model, n, variant, vec) VALUES (?,?,?,?,?)",
            ((h, model, n, variant, v) for h, vecs in rows for n, v in enumerate(vecs)))

    def link_exchanges(self, model: str, rows) -> None:
        """rows: (exchange id, text hash): the exchange is embedded as that text. Only where
        vectors for the text exist: an exchange is never counted embedded with none behind it."""
        self.db.executemany(
            "INSERT OR REPLACE INTO embedded(exchange, model, text_hash) SELECT ?1, ?2, ?3 "
            "WHERE EXISTS (SELECT 1 FROM vectors WHERE text_hash = ?3 AND model = ?2)",
            ((i, model, h) for i, h in rows))

    def exchange_vectors(self, model: str, exchanges=None):
        """(exchange id, window number, vector bytes) of every window of every embedded
        exchange (of those in `exchanges` if given)."""
        sql = ("SELECT x.exchange, v.n, v.vec FROM embedded x JOIN vectors v "
               "ON v.text_hash = x.text_hash AND v.model = x.model WHERE x.model = ?")
        if exchanges is None:
            return self.db.execute(sql, (model,))
        return list(self._chunked(sql + " AND x.exchange IN ({})", exchanges, (model,)))

    def embedded_hashes(self, model: str) -> dict[int, bytes]:
        """exchange -> the text hash it is embedded as (no vectors read)."""
        return dict(self.db.execute("SELECT exchange, text_hash FROM embedded WHERE model = ?",
                                    (model,)))

    def session_turns(self, sessions) -> dict[int, int]:
        """session -> its turns: the requests of its main thread."""
        out: dict[int, int] = {}
        for s in dict.fromkeys(sessions):
            out[s] = self.db.execute(
                "SELECT count(*) FROM messages WHERE id BETWEEN ? AND ? AND role = 'user' "
                "AND sidechain = 0 AND text != ''",
                (s << SHIFT, ((s + 1) << SHIFT) - 1)).get
        return out

    # -- SIMILAR_TO edges (see _EDGE_SCHEMA) ----------------------------------------------------

    def unlinked_exchanges(self, model: str) -> dict[int, bytes]:
        """exchange -> text hash, of the embedded exchanges whose edges are not computed for
        the text they are embedded as."""
        return dict(self.db.execute(
            "SELECT x.exchange, x.text_hash FROM embedded x WHERE x.model = ? AND NOT EXISTS "
            "(SELECT 1 FROM linked l WHERE l.exchange = x.exchange AND l.model = x.model "
            "AND l.text_hash = x.text_hash)", (model,)))

    def count_edges(self, model: str) -> int:
        """The SIMILAR_TO edges: pairs each in the other's nearest EDGE_K (a scan: for status)."""
        return self.db.execute(
            "WITH half(x, y, c) AS (SELECT a, b, cosine FROM similar WHERE model = ?1 "
            "UNION ALL SELECT b, a, cosine FROM similar WHERE model = ?1), "
            "near(x, y) AS (SELECT x, y FROM (SELECT x, y, row_number() OVER "
            "(PARTITION BY x ORDER BY c DESC, y) AS rk FROM half) WHERE rk <= ?2) "
            "SELECT count(*) FROM near p JOIN near q ON q.x = p.y AND q.y = p.x WHERE p.x < p.y",
            (model, EDGE_K)).get

    def count_similar_rows(self, model: str) -> int:
        """Rows of `similar`: the edges and the nearest lists that are not mutual."""
        return self.db.execute("SELECT count(*) FROM similar WHERE model = ?", (model,)).get

    def set_edges(self, model: str, done: dict[int, bytes], pairs) -> int:
        """Record the nearest of the exchanges in `done` (exchange -> the text hash they were
        computed for), in the caller's write transaction. `pairs`: (x, y, cosine) for x in
        `done` and every y it may be joined to (another session, another text, cosine >= the
        threshold). x keeps its EDGE_K nearest; an exchange linked before keeps its EDGE_K
        nearest of what it had and the new ones, and a pair it lets go stays only while the other
        end keeps it. An exchange embedded since as another text stays pending; a pair with an
        exchange no longer embedded is not kept. Returns the exchanges recorded."""
        ids = list(done)
        current = dict(self._chunked("SELECT exchange, text_hash FROM embedded WHERE model = ? "
                                     "AND exchange IN ({})", ids, before=(model,)))
        fresh = {x for x, h in done.items() if current.get(x) == h}
        # linked before as another text (its reply replaced in place): its rows are stale
        for x, h in list(self._chunked("SELECT exchange, text_hash FROM linked WHERE model = ? "
                                       "AND exchange IN ({})", fresh, before=(model,))):
            if h != done[x]:
                self.db.execute("DELETE FROM similar WHERE model = ? AND a = ?", (model, x))
                self.db.execute("DELETE FROM similar WHERE model = ? AND b = ?", (model, x))
        found: dict[int, dict[int, float]] = {}  # x -> candidate -> cosine
        for x, y, c in pairs:
            if x in fresh and y != x:
                found.setdefault(x, {})[y] = c
        near = {x: set(_nearest(cands.items())) for x, cands in found.items()}
        rows = {(min(x, y), max(x, y)): found[x][y] for x, ys in near.items() for y in ys}
        # the exchanges linked before that a new one may join: each keeps its nearest
        coming: dict[int, dict[int, float]] = {}
        for x, cands in found.items():
            for y, c in cands.items():
                if y not in fresh:
                    coming.setdefault(y, {})[x] = c
        olds = self._near_lists(model, self._linked_now(model, coming))
        dropped = []
        for y, had in olds.items():
            merged = dict(coming[y])
            merged.update(had)  # a pair already kept keeps its cosine
            near[y] = set(_nearest(merged.items()))
            rows.update(((min(x, y), max(x, y)), c) for x, c in coming[y].items() if x in near[y])
            dropped += [(y, w) for w in had if w not in near[y]]
        # a pair let go by one end stays while the other end keeps it
        others = self._near_lists(model, self._linked_now(
            model, {w for _y, w in dropped if w not in near}))
        for y, w in dropped:
            if y not in (near[w] if w in near else others.get(w, {})):
                self.db.execute("DELETE FROM similar WHERE model = ? AND a = ? AND b = ?",
                                (model, min(y, w), max(y, w)))
        self.db.executemany(
            "INSERT OR REPLACE INTO linked(exchange, model, text_hash) VALUES (?, ?, ?)",
            ((x, model, done[x]) for x in fresh))
        self.db.executemany(
            "INSERT OR REPLACE INTO similar(a, b, model, cosine) SELECT ?2, ?3, ?1, ?4 "
            "WHERE EXISTS (SELECT 1 FROM embedded WHERE exchange = ?2 AND model = ?1) "
            "AND EXISTS (SELECT 1 FROM embedded WHERE exchange = ?3 AND model = ?1)",
            ((model, a, b, c) for (a, b), c in rows.items()))
        return len(fresh)

    def _linked_now(self, model: str, ids) -> list[int]:
        """Those of `ids` whose edges are computed for the text they are embedded as."""
        return [r[0] for r in self._chunked(
            "SELECT l.exchange FROM linked l JOIN embedded x ON x.exchange = l.exchange "
            "AND x.model = l.model AND x.text_hash = l.text_hash WHERE l.model = ? "
            "AND l.exchange IN ({})", ids, before=(model,))]

    def _near_lists(self, model: str, ids) -> dict[int, dict[int, float]]:
        """exchange -> its nearest (other -> cosine), as kept: the EDGE_K strongest of its rows
        (every row is in the nearest of one end, so an exchange's own are its strongest)."""
        rows: dict[int, dict[int, float]] = {x: {} for x in ids}
        for x, y, c in self._chunked("SELECT a, b, cosine FROM similar WHERE model = ? "
                                     "AND a IN ({})", rows, before=(model,)):
            rows[x][y] = c
        for y, x, c in self._chunked("SELECT a, b, cosine FROM similar WHERE model = ? "
                                     "AND b IN ({})", rows, before=(model,)):
            rows[x][y] = c
        return {x: {y: have[y] for y in _nearest(have.items())} for x, have in rows.items()}

    def edges(self, model: str, exchange: int) -> list[tuple[int, float]]:
        """(other exchange, cosine) joined to this one, the most similar first: the pairs each
        in the other's nearest EDGE_K (at most EDGE_K)."""
        mine = self._near_lists(model, [exchange])[exchange]
        theirs = self._near_lists(model, mine)
        return sorted(((y, c) for y, c in mine.items() if exchange in theirs.get(y, {})),
                      key=lambda yc: (-yc[1], yc[0]))

    def bound_edges(self) -> bool:
        """Bring the edges of an index linked under another rule to this one's: an index made
        before the bound kept every pair (millions, where copies abound), which holds every
        exchange's nearest, so each keeps them and the rest go, with the pairs of copies (the
        same text). A bound raised since needs every exchange linked again. Once per index
        (meta 'similar_near'). Outside a transaction: what to keep is read first, then the rest
        deleted in steps, each a short write (a hook waits for none of them long); a step cut
        short leaves more rows, never fewer, and the next call goes on. True if rows went."""
        had = self.get_meta("similar_near")
        if had == str(EDGE_K):
            return False
        if had is not None and (not had.isdigit() or int(had) < EDGE_K):
            with self.write():
                self.db.execute("DELETE FROM similar")
                self.db.execute("DELETE FROM linked")
                self.set_meta("similar_near", EDGE_K)
            return True
        if not self.db.execute("SELECT 1 FROM similar LIMIT 1").fetchone():
            with self.write():
                self.set_meta("similar_near", EDGE_K)
            return False
        self.db.execute("DROP TABLE IF EXISTS temp.keep")
        self.db.execute("CREATE TEMP TABLE keep(a INTEGER, b INTEGER, model TEXT, "
                        "PRIMARY KEY(a, b, model)) WITHOUT ROWID")
        # each exchange's nearest of the pairs kept, copies' pairs left out (one statement: one
        # state of the index; the temporary table is this connection's, no write lock taken)
        self.db.execute(
            "WITH pairs(a, b, model, c) AS MATERIALIZED (SELECT a, b, model, cosine FROM similar s "
            "WHERE NOT EXISTS (SELECT 1 FROM embedded p JOIN embedded q ON q.text_hash = "
            "p.text_hash WHERE p.exchange = s.a AND p.model = s.model AND q.exchange = s.b "
            "AND q.model = s.model)), half(x, y, model, c) AS (SELECT a, b, model, c FROM pairs "
            "UNION ALL SELECT b, a, model, c FROM pairs) "
            "INSERT OR IGNORE INTO temp.keep(a, b, model) SELECT min(x, y), max(x, y), model "
            "FROM (SELECT x, y, model, row_number() OVER (PARTITION BY model, x "
            "ORDER BY c DESC, y) AS rk FROM half) WHERE rk <= ?", (EDGE_K,))
        starts = [r[0] for r in self.db.execute("SELECT DISTINCT a FROM similar ORDER BY a")]
        for i in range(0, len(starts), 2000):
            with self.write():
                self.db.execute(
                    "DELETE FROM similar WHERE a BETWEEN ? AND ? AND NOT EXISTS (SELECT 1 "
                    "FROM temp.keep k WHERE k.a = similar.a AND k.b = similar.b "
                    "AND k.model = similar.model)", (starts[i], starts[min(i + 1999, len(starts) - 1)]))
        with self.write():
            self.set_meta("similar_near", EDGE_K)
        self.db.execute("DROP TABLE temp.keep")
        return True

    def reclaim(self, share: float = 0.25) -> bool:
        """VACUUM when at least `share` of the file is free pages (after bound_edges let go of
        an old index's pairs): never from a hook, which must not wait seconds for it."""
        pages = self.db.execute("PRAGMA page_count").get
        free = self.db.execute("PRAGMA freelist_count").get
        if not pages or free < share * pages:
            return False
        try:
            self.db.execute("VACUUM")
        except apsw.BusyError:  # another process reads: the free pages are reused as it grows
            return False
        return True

    def vectors_generation(self) -> int:
        """Changes whenever an exchange's link to its vectors does (see _VECTOR_SCHEMA)."""
        return int(self.get_meta("vectors_gen", 0))

    def vectors_token(self) -> str | None:
        """What a file of this index's vectors must carry (see _VECTOR_TOKEN)."""
        return self.get_meta("vectors_token")

    def drop_unlinked_vectors(self) -> int:
        """Vectors no exchange uses any more (pruned, or grown past): kept until a prune or a
        rebuild ends, since a re-read text would find them again."""
        self.db.execute("DELETE FROM vectors WHERE NOT EXISTS (SELECT 1 FROM embedded x WHERE "
                        "x.text_hash = vectors.text_hash AND x.model = vectors.model)")
        return self.db.changes()
