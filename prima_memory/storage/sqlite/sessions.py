"""Sessions and what they hold: messages (their ids packed as `session << SHIFT | ordinal`),
exchanges, file changes and tool calls; writing them, reading them back, forgetting them."""
from __future__ import annotations

import os
from collections.abc import Iterator

from ...workspace import text_of
from ..shared import (ExchangeRow, FailedCall, FileChangeRow, LastCall, MessageRow, SHIFT, SessionRow,
                      TooManyMessages, ToolCallRow)
from .core import Core, _bind_path
from .folding import _NON_ASCII, fold
from .schema import SESSION_COLUMNS, _INSERT_MESSAGE, _OWN


def _folder_and_below(folder: str) -> tuple[str, int, str, str]:
    """The arguments of `cwd = ? OR substr(cwd, 1, ?) IN (?, ?)`: a folder, and the length and
    spellings of what a path inside it starts with."""
    folder = folder.rstrip("/\\") or folder[:1]  # (the root stays itself)
    if folder in ("/", "\\"):
        return folder, 1, folder, folder
    return folder, len(folder) + 1, folder + "/", folder + os.sep


class Sessions(Core):
    # -- writing -----------------------------------------------------------------------------

    def session_for(self, source: str, session_id: str, label: str) -> SessionRow:
        self.db.execute("INSERT INTO sessions(source, session_id, label) VALUES (?, ?, ?) "
                        "ON CONFLICT(source, session_id) DO NOTHING", (source, session_id, label))
        return self._session_where("source = ? AND session_id = ?", (source, session_id))[0]

    def new_message_ids(self, session: int, n: int) -> range:
        """Ids for a session's next n messages, `session << SHIFT | ordinal`, taken in the
        caller's transaction: a rollback gives them back."""
        first = self.db.execute("UPDATE sessions SET next_ord = next_ord + ? WHERE id = ? "
                                "RETURNING next_ord", (n, session)).get - n
        if first + n > 1 << SHIFT:
            raise TooManyMessages(f"session {session} has more than {1 << SHIFT} messages")
        base = session << SHIFT
        return range(base | first, base | (first + n))

    def update_session(self, session: int, *, cwd=None, branch=None, author=None,
                       custom_title=None, summary_title=None, first_prompt=None,
                       first_ts=None, last_ts=None, tags: str | None = None,
                       decisions: str | None = None) -> None:
        self.db.execute(
            """UPDATE sessions SET cwd = COALESCE(cwd, ?), branch = COALESCE(?, branch),
                 author = COALESCE(?, author), title_custom = COALESCE(?, title_custom),
                 title_summary = COALESCE(?, title_summary), title_first = COALESCE(title_first, ?),
                 started_at = min(COALESCE(started_at, ?), COALESCE(?, started_at)),
                 ended_at = max(COALESCE(ended_at, ?), COALESCE(?, ended_at)),
                 tags = COALESCE(?, tags), decisions = COALESCE(?, decisions),
                 archived = 0, unfinished = 1
               WHERE id = ?""",
            (cwd, branch, author, custom_title, summary_title, first_prompt, first_ts, first_ts,
             last_ts, last_ts, tags, decisions, session))

    def add_messages(self, rows) -> None:
        """New messages: rows of (id, session, key, role, ts, sidechain, pair id, text)."""
        self.db.executemany(_INSERT_MESSAGE, rows)
        for r in rows:
            self._unindex(r[0], r[7])

    def set_message_texts(self, rows) -> None:
        """Grown messages (a reply continued on later lines): rows of (id, new text)."""
        self.db.executemany("DELETE FROM messages_fts WHERE rowid = ?",
                            ((i,) for i, _t in rows if i not in self._unindexed))
        self.db.executemany("UPDATE messages SET text = ? WHERE id = ?", ((t, i) for i, t in rows))
        for i, t in rows:
            self._unindex(i, t)

    def messages_by_key(self, session: int, keys) -> dict[str, tuple[int, str]]:
        """key -> (id, text) for those of `keys` this session already has."""
        return {key: (mid, text) for key, mid, text in self._chunked(
            "SELECT key, id, text FROM messages WHERE session = ? AND key IN ({})", keys,
            (session,))}

    def holders(self, source: str, session: int, keys) -> dict[str, int]:
        """key -> the other session of `source` that holds the message of that key (a message
        is stored once: see Indexer._copies)."""
        return dict(self._chunked(
            # (CROSS JOIN: messages by key first; the planner would scan the source's sessions)
            "SELECT m.key, m.session FROM messages m CROSS JOIN sessions s ON s.id = m.session "
            "WHERE m.key IN ({}) AND m.session != ? AND s.source = ?", keys, (),
            (session, source)))

    def precedence(self, session: int) -> tuple[float | None, int | None]:
        """(start, its main file's time): of two sessions holding the same messages, the one
        that had them first has the smaller (the resumed one started, or stopped, earlier)."""
        row = self.db.execute(
            "SELECT started_at, (SELECT min(mtime_ns) FROM files WHERE session = s.id "
            "AND sidechain = 0) FROM sessions s WHERE id = ?", (session,)).fetchone()
        return (row[0], row[1]) if row else (None, None)

    def hand_over(self, holder: int, to: int, keys) -> None:
        """`to` had these messages first: the holder's copies go (it keeps its own), and the
        holder is now a fork of `to`."""
        for sql in ("DELETE FROM messages WHERE session = ? AND key IN ({})",
                    "DELETE FROM file_changes WHERE session = ? AND message_key IN ({})",
                    "DELETE FROM tool_calls WHERE session = ? AND message_key IN ({})"):
            list(self._chunked(sql, keys, (holder,)))
        self.db.execute("UPDATE sessions SET origin = ? WHERE id = ?", (to, holder))
        self.db.execute("UPDATE sessions SET origin = NULL WHERE id = ? AND origin = ?",
                        (to, holder))

    def first_prompt(self, session: int) -> str | None:
        """The text of a session's first main-thread prompt."""
        lo, hi = session << SHIFT, ((session + 1) << SHIFT) - 1
        row = self.db.execute("SELECT text FROM messages WHERE id BETWEEN ? AND ? AND role = "
                              "'user' AND sidechain = 0 AND text != '' ORDER BY id LIMIT 1",
                              (lo, hi)).fetchone()
        return row[0] if row else None

    def set_first_title(self, session: int, title: str | None) -> None:
        self.db.execute("UPDATE sessions SET title_first = ? WHERE id = ?", (title, session))

    def first_titles(self) -> list[tuple[int, str, str | None]]:
        """(session, its title from its first prompt, that prompt's text as stored) of every
        session titled so: to title them again when the rule changes."""
        return list(self.db.execute(
            f"SELECT s.id, s.title_first, (SELECT text FROM messages WHERE id BETWEEN s.id << "
            f"{SHIFT} AND ((s.id + 1) << {SHIFT}) - 1 AND role = 'user' AND sidechain = 0 AND "
            "text != '' ORDER BY id LIMIT 1) FROM sessions s WHERE s.title_first IS NOT NULL"))

    def set_origin(self, session: int, origin: int) -> None:
        self.db.execute("UPDATE sessions SET origin = ? WHERE id = ? AND origin IS NULL",
                        (origin, session))

    def origins(self, ids) -> dict[int, SessionRow]:
        """session -> the session it was forked or resumed from, for those of `ids` that were."""
        pairs = dict(self._chunked("SELECT id, origin FROM sessions WHERE origin IS NOT NULL "
                                   "AND id IN ({})", ids))
        rows = {r.id: r for r in self.sessions_by_id(set(pairs.values()))}
        return {s: rows[o] for s, o in pairs.items() if o in rows}

    def session_with_messages(self, source: str, session_id: str) -> int | None:
        row = self.db.execute(
            "SELECT s.id FROM sessions s WHERE s.source = ? AND s.session_id = ? AND EXISTS "
            "(SELECT 1 FROM messages m WHERE m.session = s.id)", (source, session_id)).fetchone()
        return row[0] if row else None

    def has_messages(self, session: int) -> bool:
        return self.db.execute("SELECT 1 FROM messages WHERE session = ? LIMIT 1",
                               (session,)).fetchone() is not None

    def add_file_changes(self, rows) -> None:
        """rows: (session, path, tool, explanation, ts, message_key)."""
        self.db.executemany("INSERT INTO file_changes(session, path, tool, explanation, ts, "
                            "message_key) VALUES (?, ?, ?, ?, ?, ?)", rows)

    def add_tool_calls(self, rows) -> None:
        """rows: (session, message_key, call id, ts, sidechain, tool, target, line, kind); a
        call already held (its session and id) is not added again."""
        self.db.executemany("INSERT OR IGNORE INTO tool_calls(session, message_key, call, ts, "
                            "sidechain, tool, target, line, kind) VALUES (?,?,?,?,?,?,?,?,?)",
                            rows)

    def add_call_errors(self, session: int, rows) -> None:
        """rows: (error line, its key, call id): the session's command call of that id failed
        so (a call this session does not hold, or no command's, is left alone)."""
        self.db.executemany("UPDATE tool_calls SET error = ?, error_key = ? WHERE session = ? "
                            "AND call = ? AND kind = 'command'",
                            ((e, k, session, c) for e, k, c in rows))

    def failed_calls(self, key: str) -> list[FailedCall]:
        """The command calls that failed with the error of this key (failures.key), the latest
        first."""
        return list(map(FailedCall._make, self.db.execute(
            "SELECT session, ts, tool, target, error FROM tool_calls WHERE error_key = ? "
            "ORDER BY ts DESC, id DESC", (key,))))

    def held_keys(self, session: int, keys) -> set[str]:
        """Those of `keys` that name a message this session holds."""
        return {r[0] for r in self._chunked(
            "SELECT key FROM messages WHERE session = ? AND key IN ({})", keys, (session,))}

    def refresh_counts(self, session: int) -> None:
        self.db.execute(
            """UPDATE sessions SET
                 message_count = (SELECT count(*) FROM messages WHERE session = ?1
                                  AND sidechain = 0 AND text != ''),
                 files_count = (SELECT count(DISTINCT path) FROM file_changes WHERE session = ?1)
               WHERE id = ?1""", (session,))

    def set_extract(self, session: int, path: str) -> None:
        # (as text: it says an extract was written, and is never opened again)
        self.db.execute("UPDATE sessions SET extract_path = ? WHERE id = ?",
                        (text_of(path), session))

    def unfinished_sessions(self) -> list[int]:
        """Sessions changed since their extract was last considered (a killed run leaves some)."""
        return [r[0] for r in self.db.execute("SELECT id FROM sessions WHERE unfinished = 1")]

    def mark_finished(self, session: int) -> None:
        self.db.execute("UPDATE sessions SET unfinished = 0 WHERE id = ?", (session,))

    def clear_session(self, session: int) -> None:
        """Forget what was read from a session's files (they are about to be read again)."""
        db = self.db
        db.execute("DELETE FROM messages WHERE session = ?", (session,))
        db.execute("DELETE FROM file_changes WHERE session = ?", (session,))
        db.execute("DELETE FROM tool_calls WHERE session = ?", (session,))
        db.execute("""UPDATE sessions SET cwd = NULL, branch = NULL, title_custom = NULL,
                        title_summary = NULL, title_first = NULL, started_at = NULL,
                        ended_at = NULL, tags = '', decisions = '', message_count = 0,
                        files_count = 0, origin = NULL WHERE id = ?""", (session,))
        db.execute("UPDATE files SET offset = 0, state = NULL, size = NULL WHERE session = ?",
                   (session,))

    def archive_missing(self, missing_paths) -> int:
        """Mark files gone; a session whose main file is gone is archived, still searchable."""
        n = 0
        for path in missing_paths:
            row = self.db.execute("SELECT session, sidechain FROM files WHERE path = ?",
                                  (_bind_path(path),)).fetchone()
            self.db.execute("UPDATE files SET status = 'missing' WHERE path = ?",
                            (_bind_path(path),))
            if row and row[0] is not None and not row[1]:
                self.db.execute("UPDATE sessions SET archived = 1 WHERE id = ?", (row[0],))
                n += 1
        return n

    def delete_session(self, sid: int) -> None:
        # its forks skipped the messages it held: they are read again, and keep them now
        for (fork,) in list(self.db.execute("SELECT id FROM sessions WHERE origin = ?", (sid,))):
            self.clear_session(fork)
        for sql in ("DELETE FROM messages WHERE session = ?", "DELETE FROM file_changes WHERE session = ?",
                    "DELETE FROM tool_calls WHERE session = ?",
                    "DELETE FROM files WHERE session = ?", "DELETE FROM sessions WHERE id = ?"):
            self.db.execute(sql, (sid,))

    def prune_archived(self) -> int:
        ids = [r[0] for r in self.db.execute("SELECT id FROM sessions WHERE archived = 1")]
        for sid in ids:
            self.delete_session(sid)
        self.db.execute("DELETE FROM files WHERE status = 'missing'")
        return len(ids)

    # -- forgetting (forgotten.py) ---------------------------------------------------------------

    def message_keys_and_texts(self, session: int) -> Iterator[tuple[str, str]]:
        """(key, text) of each message a session holds: what its tombstone hashes."""
        yield from self.db.execute("SELECT key, text FROM messages WHERE session = ? ORDER BY id",
                                   (session,))

    def sessions_holding(self, pairs) -> list[int]:
        """The ids of those of the (source, session id) pairs the index holds."""
        out = []
        for source, session_id in pairs:
            row = self.session_by_session_id(session_id, source)
            if row is not None:
                out.append(row.id)
        return out

    def sessions_ended_before(self, until: float, limit: int) -> list[SessionRow]:
        """Sessions that ended (or, never dated by a message, started) before `until`."""
        return self._session_where("COALESCE(ended_at, started_at) < ? AND source != 'extract'",
                                   (until,), f"ORDER BY COALESCE(ended_at, started_at) DESC "
                                   f"LIMIT {int(limit)}")

    def sessions_of_files(self, paths) -> list[int]:
        return [r[0] for r in self._chunked(
            "SELECT session FROM files WHERE session IS NOT NULL AND path IN ({})",
            [_bind_path(p) for p in paths])] if paths else []

    def unset_aside(self) -> None:
        """The files set aside as a forgotten session's: read again by the next run (those of
        a session still forgotten are set aside again)."""
        self.db.execute("DELETE FROM files WHERE status = 'forgotten'")

    # -- reading -------------------------------------------------------------------------------

    def _session_where(self, where: str, args=(), order: str = "") -> list[SessionRow]:
        sql = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE {where} {order}"
        return [SessionRow(*r) for r in self.db.execute(sql, args)]

    def sessions(self) -> list[SessionRow]:
        return self._session_where("started_at IS NOT NULL")

    def session(self, rowid: int) -> SessionRow | None:
        rows = self._session_where("id = ?", (rowid,))
        return rows[0] if rows else None

    def session_by_session_id(self, session_id: str, source: str) -> SessionRow | None:
        rows = self._session_where("source = ? AND session_id = ?", (source, session_id))
        return rows[0] if rows else None

    def find_sessions(self, session_id_prefix: str) -> list[SessionRow]:
        """Sessions whose id starts with the given text (ids are long; a prefix is enough)."""
        return self._session_where("session_id >= ? AND session_id < ?",
                                   (session_id_prefix, session_id_prefix + "\U0010ffff"))

    def sessions_within(self, folders) -> set[int]:
        """The sessions recorded in one of `folders` or in a folder inside one."""
        out: set[int] = set()
        for folder in folders:
            out |= {r[0] for r in self.db.execute(
                "SELECT id FROM sessions WHERE cwd = ? OR substr(cwd, 1, ?) IN (?, ?)",
                _folder_and_below(folder))}
        return out

    def sessions_elsewhere(self, folder: str) -> list[tuple[int, str, str, str]]:
        """(id, source, session id, cwd or "") of the conversations recorded in no folder, or
        in one neither `folder` nor inside it."""
        return list(self.db.execute(
            "SELECT id, source, session_id, COALESCE(cwd, '') FROM sessions WHERE "
            "started_at IS NOT NULL AND COALESCE(cwd, '') != ? AND "
            "substr(COALESCE(cwd, ''), 1, ?) NOT IN (?, ?)", _folder_and_below(folder)))

    def count_sessions(self) -> int:
        """The conversations held (the extracts' records apart)."""
        return self.db.execute(f"SELECT count(*) FROM sessions WHERE started_at IS NOT NULL "
                               f"AND source != 'extract' AND {_OWN}").get

    def message_counts(self) -> dict[int, int]:
        """session -> its messages, of the conversations held (a session's length, as ranking
        weighs it)."""
        return dict(self.db.execute(f"SELECT id, message_count FROM sessions WHERE started_at "
                                    f"IS NOT NULL AND {_OWN}"))

    def recent_sessions(self, n: int) -> list[SessionRow]:
        """The latest conversations (prima-memory's own extracts are not among them)."""
        return self._session_where(f"started_at IS NOT NULL AND source != 'extract' AND {_OWN}", (),
                                   f"ORDER BY ended_at DESC LIMIT {int(n)}")

    def messages_held(self, session: int) -> list[tuple]:
        """(id, key, role, ts, sidechain, pair, text) of every message the session holds (a
        fork's copies are its origin's), in id order: what a team's server is sent."""
        return list(self.db.execute("SELECT id, key, role, ts, sidechain, pair, text FROM "
                                    "messages WHERE session = ? ORDER BY id", (session,)))

    def messages(self, session: int) -> list[MessageRow]:
        """A session's messages with text, in conversation order."""
        return list(map(MessageRow._make, self.db.execute(
            "SELECT id, role, ts, sidechain, text FROM messages WHERE session = ? AND text != '' "
            "ORDER BY sidechain, ts, id", (session,))))

    def message_times(self, ids) -> dict[int, float | None]:
        return dict(self._chunked("SELECT id, ts FROM messages WHERE id IN ({})", ids))

    def messages_around(self, message_id: int, n: int) -> list[MessageRow]:
        """The message and up to n on each side of it, in its own thread (main or subagents)."""
        session = message_id >> SHIFT
        lo, hi = session << SHIFT, ((session + 1) << SHIFT) - 1
        side = self.db.execute("SELECT sidechain FROM messages WHERE id = ?",
                               (message_id,)).fetchone()
        if side is None:
            return []
        cols = "SELECT id, role, ts, sidechain, text FROM messages"
        before = list(self.db.execute(
            f"{cols} WHERE id BETWEEN ? AND ? AND sidechain = ? AND text != '' "
            "ORDER BY id DESC LIMIT ?", (lo, message_id - 1, side[0], n)))
        after = list(self.db.execute(
            f"{cols} WHERE id BETWEEN ? AND ? AND sidechain = ? AND text != '' "
            "ORDER BY id LIMIT ?", (message_id, hi, side[0], n + 1)))
        return [MessageRow._make(r) for r in before[::-1] + after]

    def last_messages(self, session: int, role: str, n: int, min_chars: int = 0,
                      skip_key: str = "") -> list[tuple]:
        """(ts, text) of the last n main-thread messages of a role, newest first."""
        lo, hi = session << SHIFT, ((session + 1) << SHIFT) - 1
        return list(self.db.execute(
            "SELECT ts, text FROM messages WHERE id BETWEEN ? AND ? AND role = ? AND sidechain = 0 "
            "AND length(text) > ? AND key != ? ORDER BY id DESC LIMIT ?",
            (lo, hi, role, min_chars, skip_key, n)))

    def drop_message(self, session: int, key: str) -> None:
        self.db.execute("DELETE FROM messages WHERE session = ? AND key = ?", (session, key))

    def message_texts(self, ids) -> dict[int, str]:
        return dict(self._chunked("SELECT id, text FROM messages WHERE id IN ({})", ids))

    def exchanges(self, session: int) -> list[ExchangeRow]:
        """The main thread's exchanges, in order."""
        return list(map(ExchangeRow._make, self.db.execute(
            "SELECT e.id, e.ts, e.prompt, e.reply FROM exchanges e JOIN messages m ON m.id = e.id "
            "WHERE e.session = ? AND m.sidechain = 0 ORDER BY e.ts, e.id", (session,))))

    def file_changes(self, session: int) -> list[FileChangeRow]:
        """A session's file changes, in order."""
        return list(map(FileChangeRow._make, self.db.execute(
            "SELECT path, tool, explanation, ts FROM file_changes WHERE session = ? ORDER BY ts, id",
            (session,))))

    def tool_calls(self, session: int) -> list[ToolCallRow]:
        """A session's calls, in the order they were read; the message's id and time are None
        where this session holds no message of that key."""
        return list(map(ToolCallRow._make, self.db.execute(
            "SELECT t.ts, t.sidechain, t.tool, t.target, t.line, t.kind, m.id, m.ts, t.call "
            "FROM tool_calls t LEFT JOIN messages m ON m.session = t.session "
            "AND m.key = t.message_key WHERE t.session = ? ORDER BY t.id", (session,))))

    def last_call(self, session: int, tool: str | None = None) -> LastCall | None:
        """The main thread's last tool call (of `tool`, if given)."""
        row = self.db.execute(
            "SELECT ts, tool, target, line FROM tool_calls WHERE session = ? AND sidechain = 0 "
            "AND (? IS NULL OR tool = ?) ORDER BY id DESC LIMIT 1", (session, tool, tool)).fetchone()
        return LastCall._make(row) if row else None

    def tool_counts(self, session: int) -> dict[str, int]:
        """tool -> how many calls of it the session made, the most used first."""
        return dict(self.db.execute("SELECT tool, count(*) FROM tool_calls WHERE session = ? "
                                    "GROUP BY tool ORDER BY count(*) DESC, tool", (session,)))

    def changed_paths(self, session: int) -> list[str]:
        return [r[0] for r in self.db.execute(
            "SELECT path FROM file_changes WHERE session = ? GROUP BY path ORDER BY min(id)",
            (session,))]

    def every_changed_path(self) -> list[str]:
        """Every path a change of the history names, once (as recorded)."""
        return [r[0] for r in self.db.execute("SELECT path FROM changed_paths")]

    def decisions_naming(self, text: str) -> list[tuple[int, str]]:
        """(session, its decision lines) of the sessions whose marked decisions hold `text`
        (as written), the last ended first."""
        return list(self.db.execute(
            "SELECT id, decisions FROM sessions WHERE instr(decisions, ?) > 0 "
            "ORDER BY ended_at DESC, id DESC", (text,)))

    def file_history(self, fragment: str | None = None):
        """(path, tool, explanation, ts, session, session's cwd, message key) of every change,
        newest first;
        with `fragment`, of paths containing it in any case, in either Unicode spelling (NFC or
        NFD: macOS hands back names in NFD). Paths are as recorded: the caller folds them."""
        sql = ("SELECT f.path, f.tool, f.explanation, f.ts, s.id, s.cwd, f.message_key "
               "FROM file_changes f "
               "JOIN sessions s ON s.id = f.session")
        order = " ORDER BY f.ts DESC, f.id DESC"
        if not fragment:
            return list(self.db.execute(sql + order))
        if fragment.isascii():  # (a path folded holds it only if the path as recorded does)
            return list(self.db.execute(sql + " WHERE instr(lower(f.path), lower(?)) > 0"
                                        + order, (fragment,)))
        # folded as matching folds (NFC, lower case), and only the paths beyond ASCII
        return list(self.db.execute(sql + " WHERE f.path GLOB ? AND instr(prima_fold(f.path), ?)"
                                    " > 0" + order, (_NON_ASCII, fold(fragment))))

    def before_change(self, session: int, key: str | None, cap: int) -> tuple[list[str], list[str]]:
        """What a session said before a change made in its message `key`, nearest first, each
        text at most `cap` characters (a reply's last ones, a request's first): Claude's texts
        from that message back through the turn before it, and the user's requests of those two
        turns. Read from the thread (main or side) the message is in; nothing when the session
        holds no such message."""
        found = self.db.execute("SELECT id, sidechain FROM messages WHERE session = ? AND key = ?",
                                (session, key)).fetchone() if key else None
        if found is None:
            return [], []
        mid, side = found
        first = session << SHIFT  # (a session's messages are its ids' range: no scan of others)
        asked = list(self.db.execute(
            "SELECT id, substr(text, 1, ?) FROM messages WHERE id BETWEEN ? AND ? AND "
            "sidechain = ? AND role = 'user' ORDER BY id DESC LIMIT 2", (cap, first, mid, side)))
        start = asked[1][0] if len(asked) == 2 else first
        said = [r[0] for r in self.db.execute(
            "SELECT substr(text, -?) FROM messages WHERE id BETWEEN ? AND ? AND sidechain = ? "
            "AND role = 'assistant' AND text != '' ORDER BY id DESC LIMIT 4",
            (cap, start, mid, side))]
        return said, [r[1] for r in asked]

    def sessions_by_id(self, ids) -> list[SessionRow]:
        return [SessionRow(*r) for r in self._chunked(
            f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id IN ({{}})", ids)]
