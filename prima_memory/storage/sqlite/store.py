"""Store: the SQLite index of one workspace, every part of the chain as one (see
__init__.py), with what spans them: forgetting, tidying and scrubbing, counts, recovery."""
from __future__ import annotations

import time

import apsw

from ...forgotten import copies
from ..shared import (ForeignIndex, SHIFT, SessionRow)
from .core import (BUSY_MS, SCRUB_TRIES, SCRUB_TRY_MS, _connect, _lenient, _path, _Stepped,
                   errors_carry_the_path, owner_problem)
from .folding import index_text
from .schema import _BLOB_SESSION_COLUMNS
from .vectors import Vectors


class Store(Vectors):
    def scrub_words(self) -> None:
        """In the caller's write transaction, after a forget's deletes: vectors no exchange
        uses, and the vocabulary's words no message holds (a forgotten session's, and any it
        held once and lost: a reply replaced, a transcript rewritten shorter), gone; the
        full-text indexes merged, since FTS5 keeps a deleted row's tokens in its segments until
        they merge. The words wait (the caller owes them) while this write keeps keyword rows
        for its commit: the vocabulary of the index would not list theirs yet."""
        db = self.db
        self.drop_unlinked_vectors()
        self._settled()
        if self._unindexed:
            return
        # the words the keyword index holds now, as its vocabulary lists them (deletes counted)
        db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.prima_vocab "
                   "USING fts5vocab(main, messages_fts, row)")
        gone = list(db.execute("SELECT t.id, t.term FROM terms t WHERE NOT EXISTS "
                               "(SELECT 1 FROM temp.prima_vocab v WHERE v.term = t.term)"))
        indexed = int(self.get_meta("terms_indexed", 0))  # (see index_terms)
        for tid, t in gone:
            if tid <= indexed:  # terms_tri takes its text from terms: told what it indexed
                # first (told of a row it never indexed, FTS5 takes itself for corrupt)
                db.execute("INSERT INTO terms_tri(terms_tri, rowid, term) VALUES ('delete', ?, ?)",
                           (tid, t))
            db.execute("DELETE FROM terms WHERE id = ?", (tid,))
        last = db.execute("SELECT COALESCE(max(id), 0) FROM terms").get
        if gone and last < indexed:  # the newest went: a new term takes its id, unindexed
            self.set_meta("terms_indexed", last)
        for fts in ("messages_fts", "titles_tri", "terms_tri"):
            db.execute(f"INSERT INTO {fts}({fts}) VALUES ('optimize')")

    def scrub_free_space(self) -> bool:
        """After a forget has committed: the file rewritten whole (VACUUM: no free page or cell
        keeps text deleted before secure_delete was on), then the write-ahead log, which holds
        the pages' earlier images, checkpointed and emptied. False when a reader kept the log
        from being emptied (Memory notes it owed: the next run empties it)."""
        self.db.execute("VACUUM")
        return self.empty_log()

    def empty_log(self, tries: int = 0) -> bool:
        """The write-ahead log checkpointed into the file and emptied (after a forget: what a
        reader kept it from copying over the file's old pages). False while a reader is in the
        way, after `tries` tries (SCRUB_TRIES by default)."""
        db = self.db
        # (each try waits for the readers itself, up to the busy timeout: 50 tries of 5 s held
        # the writer lock, and a hook, for four minutes behind a reader that stayed)
        db.setbusytimeout(SCRUB_TRY_MS)
        try:
            for _ in range(tries or SCRUB_TRIES):
                got = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                if got is not None and not got[0]:  # (busy, frames in the log, frames copied)
                    return True
                time.sleep(0.05)
        finally:
            db.setbusytimeout(BUSY_MS)
        return False

    def clear_live(self) -> None:
        """For a rebuild: drop everything read from files that still exist; archived sessions stay."""
        db = self.db
        live = [r[0] for r in db.execute("SELECT id FROM sessions WHERE archived = 0")]
        db.execute("INSERT INTO messages_fts(messages_fts) VALUES ('delete-all')")
        db.execute("DELETE FROM messages WHERE session IN (SELECT id FROM sessions WHERE archived = 0)")
        db.executemany("INSERT INTO messages_fts(rowid, text) VALUES (?, ?)",
                       [(i, index_text(t)) for i, t in db.execute(
                           "SELECT id, text FROM messages WHERE text != ''")])
        db.execute("DELETE FROM file_changes WHERE session IN (SELECT id FROM sessions WHERE archived = 0)")
        db.execute("DELETE FROM tool_calls WHERE session IN (SELECT id FROM sessions WHERE archived = 0)")
        # archived sessions keep their rows: a file that comes back is then read afresh
        db.execute("DELETE FROM files WHERE session IS NULL OR session NOT IN "
                   "(SELECT id FROM sessions WHERE archived = 1)")
        db.execute("DELETE FROM meta WHERE key LIKE 'folders:%'")  # so every source is listed
        db.executemany("UPDATE sessions SET cwd = NULL, branch = NULL, title_custom = NULL, "
                       "title_summary = NULL, title_first = NULL, started_at = NULL, "
                       "ended_at = NULL, tags = '', decisions = '', message_count = 0, "
                       "files_count = 0, next_ord = 0, origin = NULL WHERE id = ?", ((i,) for i in live))

    def tidy(self, bulk: bool) -> None:
        """Merge the keyword index's segments: a query probes every segment, so after a bulk load
        one 'optimize' makes searches an order of magnitude faster; small runs do a bounded merge."""
        for table in ("messages_fts", "terms_tri"):
            if bulk:
                self.db.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
            else:
                self.db.execute(f"INSERT INTO {table}({table}, rank) VALUES ('merge', 200)")

    def owe(self, session_id: str) -> None:
        """A session whose Stop could not index it (busy, out of time): the next quick run does."""
        self.set_meta(f"owed:{session_id}", 1)

    def owed(self) -> list[str]:
        return [r[0][5:] for r in self.db.execute("SELECT key FROM meta WHERE key LIKE 'owed:%'")]

    def settle(self, session_ids) -> None:
        self.db.executemany("DELETE FROM meta WHERE key = ?", ((f"owed:{s}",) for s in session_ids))

    # -- recovery ------------------------------------------------------------------------------

    def recover_from(self, old_path: str, file_exists, *, unstamped: bool = False,
                     forgotten=None) -> int:
        """Copy from an old or damaged index the sessions no source file can give back any more.
        Only from an index stamped with this store's key (ForeignIndex otherwise): a planted one
        would otherwise bring its sessions in. `unstamped`: the user says an unstamped one is
        theirs (one from before stamps); it must still hold nothing prima-memory never makes.
        `forgotten`: the tombstones (forgotten.py): a copy made before a forget brings back
        none of what they name."""
        with self._errors():
            return self._recover_from(old_path, file_exists, unstamped, forgotten)

    def _recover_from(self, old_path: str, file_exists, unstamped: bool, gone) -> int:
        old = _connect(old_path, apsw.SQLITE_OPEN_READONLY)
        # A truncated file is refused outright unless SQLite is told to trust what it can read.
        old.execute("PRAGMA writable_schema=ON")
        old.execute("PRAGMA trusted_schema=OFF")
        try:
            if self.key is not None:
                why = owner_problem(old, self.key, unstamped=unstamped)
                if why:
                    raise ForeignIndex(old_path, why)
            sessions = _lenient(old, f"SELECT {_BLOB_SESSION_COLUMNS}, NULL FROM sessions")
            try:
                mains = {s: _path(p) for s, p in old.execute(
                    "SELECT session, path FROM files WHERE sidechain = 0")}
            except apsw.Error:
                mains = {}  # unreadable: treat every session as one that may be gone
            n = 0
            for r in sessions:
                row = SessionRow._make((*r[:-1], next(filter(None, r[7:10]), "Untitled Session")))
                if not row.archived and (not mains or (row.id in mains
                                                       and file_exists(mains[row.id]))):
                    continue  # its file is still there: the rebuild reads it
                if gone and gone.holds(row.source, row.session_id):
                    continue
                try:
                    msgs = _lenient(old, "SELECT m.key, m.role, m.ts, m.sidechain, u.key, "
                                         "CAST(m.text AS BLOB) FROM messages m LEFT JOIN messages u "
                                         "ON u.id = m.pair WHERE m.session = ? ORDER BY m.id",
                                    (row.id,))
                    changes = _lenient(old, "SELECT CAST(path AS BLOB), tool, CAST(explanation AS "
                                            "BLOB), ts, message_key FROM file_changes "
                                            "WHERE session = ? ORDER BY id", (row.id,))
                except (apsw.Error, UnicodeDecodeError):
                    continue  # this session's pages are unreadable
                try:
                    calls = _lenient(old, "SELECT message_key, call, ts, sidechain, CAST(tool AS "
                                          "BLOB), CAST(target AS BLOB), CAST(line AS BLOB), kind "
                                          "FROM tool_calls WHERE session = ? ORDER BY id",
                                     (row.id,))
                except (apsw.Error, UnicodeDecodeError):
                    calls = []  # an index from before schema 11, or pages unreadable
                if gone:  # a fork's copies of a forgotten session's lines, and its titles
                    out = copies(gone, row.source, [(m[0], m[5] or "") for m in msgs])
                    msgs = [m for m in msgs if m[0] not in out]
                    changes = [c for c in changes if c[4] not in out]
                    calls = [c for c in calls if c[0] not in out]
                    if gone.drops_title(row.title_custom):
                        row = row._replace(title_custom=None)
                    if gone.drops_title(row.title_summary):
                        row = row._replace(title_summary=None)
                with self.write():
                    new = self.session_for(row.source, row.session_id, row.label)
                    base = new.id << SHIFT
                    ids = {m[0]: base | i for i, m in enumerate(msgs)}
                    self.add_messages([(base | i, new.id, k, role, ts, side, ids.get(pair), text)
                                       for i, (k, role, ts, side, pair, text) in enumerate(msgs)])
                    terms = set()
                    for m in msgs:
                        terms |= self.tokens(m[5])
                    self.add_terms(terms)
                    self.index_terms()
                    self.add_file_changes([(new.id, *c) for c in changes])
                    self.add_tool_calls([(new.id, *c) for c in calls])
                    self.db.execute(
                        """UPDATE sessions SET cwd=?, branch=?, author=?, title_custom=?,
                             title_summary=?, title_first=?, started_at=?, ended_at=?, tags=?,
                             decisions=?, next_ord=?, archived=1, extract_path=? WHERE id=?""",
                        (row.cwd, row.branch, row.author, row.title_custom, row.title_summary,
                         row.title_first, row.started_at, row.ended_at, row.tags, row.decisions,
                         len(msgs), row.extract_path, new.id))
                    self.refresh_counts(new.id)
                n += 1
            self._recover_vectors(old)
            return n
        finally:
            old.close()

    def _recover_vectors(self, old) -> None:
        """Every vector the old index can still give: they are kept by text, so whatever is
        read again finds its own without the model (hours of embedding, not thrown away)."""
        rows: list[tuple] = []

        def keep():
            with self.write():
                self.db.executemany("INSERT OR IGNORE INTO vectors(text_hash, model, n, variant, "
                                    "vec) VALUES (?, ?, ?, ?, ?)", rows)
            rows.clear()
        try:
            for r in old.execute("SELECT text_hash, model, n, variant, vec FROM vectors"):
                rows.append(r)
                if len(rows) >= 5000:
                    keep()
        except (apsw.Error, UnicodeDecodeError):
            pass  # what came before the damage is kept
        keep()
        with self.write():  # from an index older than schema 9: to adopt or drop, like a migrated one
            self._list_legacy_keys()

    # -- status --------------------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        q = lambda sql: self.db.execute(sql).get  # noqa: E731
        return {
            "sessions": q("SELECT count(*) FROM sessions WHERE started_at IS NOT NULL "
                          "AND source != 'extract'"),
            "archived": q("SELECT count(*) FROM sessions WHERE archived = 1"),
            "messages": q("SELECT count(*) FROM messages WHERE text != ''"),
            "exchanges": q("SELECT count(*) FROM exchanges"),
            "file_changes": q("SELECT count(*) FROM file_changes"),
            "files": q("SELECT count(*) FROM files WHERE status = 'ok'"),
            "terms": q("SELECT count(*) FROM terms"),
        }

    def source_counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for source, n, archived in self.db.execute(
                "SELECT source, count(*), sum(archived) FROM sessions WHERE started_at IS NOT NULL "
                "GROUP BY source"):
            out[source] = {"sessions": n, "archived": archived or 0}
        return out

    def forget(self, sessions: list[int]) -> None:
        """In the caller's write transaction: the sessions gone with all they hold (messages,
        keyword rows, titles, file history, tool calls, links to vectors, edges, vectors no other
        exchange uses), deleted with SQLite's secure_delete (what is freed is overwritten), then
        what no message holds any more cleared (_scrubbed). Their forks' own messages are read
        again (see delete_session): a tombstone drops the copies."""
        self._settled()
        self.db.execute("PRAGMA secure_delete = ON")
        for sid in sessions:
            row = self.session(sid)
            if row is not None:
                self.settle([row.session_id])
            self.delete_session(sid)
        self.scrub_words()

    def summarize_again(self, session: int, *, retitle: bool) -> None:
        """A session's tags and decision lines made again from the messages and changes it
        holds now, and (`retitle`: its first prompt changed) its title from its first prompt,
        none when it has none: after messages were deleted from it (drop_keyed), nothing of
        theirs stays in its summary (the title index follows: see _TITLES_STAGED)."""
        from ... import tagging, titles  # (only where a forgotten session's copies are deleted)
        db = self.db
        joined = "\n".join(t for (t,) in db.execute(
            "SELECT text FROM messages WHERE session = ? AND text != '' ORDER BY id", (session,)))
        decisions = "\n".join(tagging.decision_lines(joined))[-20000:] if joined else ""
        tags = tagging.text_tags(joined, self.tokens(joined)) if joined else set()
        tags.update(filter(None, (tagging.language_tag(p) for (p,) in db.execute(
            "SELECT DISTINCT path FROM file_changes WHERE session = ?", (session,)))))
        if decisions:
            tags.add("decision")
        db.execute("UPDATE sessions SET tags = ?, decisions = ? WHERE id = ?",
                   (" ".join(sorted(tags)), decisions, session))
        if retitle:
            first = self.first_prompt(session)
            self.set_first_title(session, titles.clean_first_prompt(first) if first else None)

    def steps(self, max_bytes: int, max_seconds: float) -> _Stepped:
        """`with store.steps(...) as steps:` long work (an index run over many files) as one
        write committed in steps (see Steps): committed at the end, rolled back on an
        exception."""
        return _Stepped(self, max_bytes, max_seconds)

    def drop_keyed(self, source: str, keys) -> int:
        """In the caller's write transaction: the messages of `source`'s sessions under these
        keys (a forgotten session's lines that a fork copied before its tombstone named them),
        with the changes and calls they made, deleted as `forget` deletes, and what they made of
        their sessions' summaries made again from what is left (summarize_again). How many
        went."""
        self._settled()
        self.db.execute("PRAGMA secure_delete = ON")
        keys = list(keys)
        hit = {s for (s,) in self._chunked(
            "SELECT DISTINCT m.session FROM messages m JOIN sessions s ON s.id = m.session "
            "WHERE s.source = ? AND m.key IN ({})", keys, (source,))}
        if not hit:
            return 0
        n = 0
        for sid in sorted(hit):
            first = self.first_prompt(sid)
            for table, column in (("messages", "key"), ("file_changes", "message_key"),
                                  ("tool_calls", "message_key")):
                for part in range(0, len(keys), 500):
                    chunk = keys[part:part + 500]
                    self.db.execute(f"DELETE FROM {table} WHERE session = ? AND {column} IN "
                                    f"({','.join('?' * len(chunk))})", (sid, *chunk))
                    n += self.db.changes() if table == "messages" else 0
            self.refresh_counts(sid)
            self.summarize_again(sid, retitle=self.first_prompt(sid) != first)
        return n


errors_carry_the_path(Store)
