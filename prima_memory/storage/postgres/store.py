"""The team server's engine: what search, `show` and publishing ask of a team's memory, answered
by PostgreSQL (full-text search on the members' own tokens, pg_trgm for parts of words, pgvector's
HNSW for meaning). It implements the read side of storage.interfaces (the part search and
session_view use) with the same rows, so the ranking that runs at home runs here unchanged; and
the few writes a member makes (publish, forget, leave).

The connection is one per store, in autocommit: each read is a REPEATABLE READ, READ ONLY
transaction (`read()`), each published session one transaction of its own (a publish killed at
any point leaves every session either as before or as published).
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterator

import psycopg  # (the team's driver, the `team` extra: only a team's commands load this module)
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from ..shared import (AnyWords, ExchangeRow, FileChangeRow, MessageRow, SessionFacts, SessionRow,
                      StoreError, Words, count_by_session)
from ..sqlite.folding import Tokens, fold
from .schema import MIGRATE_LOCK, SCHEMA_VERSION, STEPS, VERSION_TABLE

CONNECT_SECONDS = 5  # a server that does not answer within this is unreachable, said in a line
STATEMENT_MS = 20000  # no statement of a member's runs longer (a hung server never hangs a search)
LEXEME_BYTES = 2046  # PostgreSQL's limit for one lexeme
TSVECTOR_BYTES = 1 << 19  # a message's lexemes kept under half of tsvector's 1 MB limit
SAMPLE_EXACT = 100_000  # windows under this are counted; past it, the planner's estimate
SAMPLE_ROWS = 100_000  # windows a background's sample reads at most, readable or not


class TeamError(StoreError):
    """Trouble with the team server, in one line that never holds the password."""


class TeamUnreachable(TeamError):
    """The server could not be reached (or stopped answering)."""


class TeamDenied(TeamError):
    """The server refused: the member's role may not do that."""


class TeamOutdated(TeamError):
    """The server's schema is newer than this client's: it reads, it does not write."""


def redacted(dsn: str) -> str:
    """A DSN as it may be shown or logged: any password replaced."""
    dsn = re.sub(r"(://[^:/?#@]*:)[^@/?#]*@", r"\1***@", dsn)
    return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", dsn, flags=re.I)


def where(dsn: str) -> str:
    """The server a DSN names, for messages: user@host:port/db (no password)."""
    try:
        d = conninfo_to_dict(dsn)
    except Exception:  # noqa: BLE001 - an unparsable DSN is shown redacted as it is
        return redacted(dsn)
    host = str(d.get("host") or "localhost")
    if host.startswith("/"):
        host = "socket " + host
    return f"{d.get('user') or ''}{'@' if d.get('user') else ''}{host}" \
           f"{':' + str(d['port']) if d.get('port') else ''}/{d.get('dbname') or ''}"


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())[:300]


def _own(e: BaseException, server: str) -> BaseException:
    """A driver error as the team's own, in one line naming the server."""
    if isinstance(e, TeamError):
        return e
    if isinstance(e, psycopg.errors.InsufficientPrivilege):
        return TeamDenied(f"the team server {server} refused: {_one_line(e)}", server)
    if isinstance(e, psycopg.errors.UndefinedTable | psycopg.errors.InvalidSchemaName |
                  psycopg.errors.UndefinedFunction):
        return TeamError(f"the team server {server} has no prima-memory schema (an admin runs "
                         "`prima-memory team setup ADMIN_DSN`)", server)
    if isinstance(e, psycopg.OperationalError | psycopg.InterfaceError):
        return TeamUnreachable(f"the team server {server} cannot be reached: {_one_line(e)}",
                               server)
    if isinstance(e, psycopg.Error):
        return TeamError(f"the team server {server}: {_one_line(e)}", server)
    return e


def clean(text: str) -> str:
    """Text PostgreSQL takes: no NUL (a text column cannot hold one), no lone surrogate (not
    UTF-8): each becomes U+FFFD, as a reader of the transcript would see it."""
    if "\0" in text:
        text = text.replace("\0", "\ufffd")
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _maybe(text: str | None) -> str | None:
    return None if text is None else clean(text)


def lexemes(tokens) -> list[str]:
    """A message's tokens as the lexemes the server keeps: within PostgreSQL's limits (a lexeme
    under 2 KB, a message's under TSVECTOR_BYTES; past that its last tokens are found only by
    reading its text, as a word inside too many terms is at home)."""
    out, size = [], 0
    for t in sorted(tokens):
        b = len(t.encode("utf-8", "replace"))
        if not t or b > LEXEME_BYTES:
            continue
        size += b + 8
        if size > TSVECTOR_BYTES:
            break
        out.append(clean(t))
    return out


def _tsquery(query: Words | AnyWords) -> str:
    """A word query as a tsquery of quoted lexemes (taken as they are, never parsed)."""
    if isinstance(query, AnyWords):
        return " | ".join(f"({_tsquery(w)})" for w in query.words)
    return " & ".join("(" + " | ".join(_quoted(t) for t in g) + ")" for g in query.groups)


def _quoted(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


_ROW = ("s.id, s.source, s.session_id, s.label, s.project, s.branch, "
        "coalesce(m.name, s.member::text), NULL, NULL, NULL, s.started_at, s.ended_at, s.tags, "
        "s.decisions, s.message_count, s.files_count, 0, NULL, s.title")
_ROWS = f"SELECT {_ROW} FROM prima.sessions s LEFT JOIN prima.members m USING (member)"
_FACTS = "SELECT id, started_at, ended_at, files_count FROM prima.sessions"


def _returnable(since=None, until=None, branch=None, tag=None, source=None) -> tuple[str, list]:
    where, args = ["started_at IS NOT NULL"], []
    for value, test in ((since, "coalesce(ended_at, started_at) >= %s"),
                        (until, "started_at <= %s"), (branch, "coalesce(branch, '') = %s"),
                        (tag and tag.lower(), "position(' ' || %s || ' ' in ' ' || tags || ' ') > 0"),
                        (source, "source = %s")):
        if value is not None:
            where.append(test)
            args.append(value)
    return " AND ".join(where), args


class _Read:
    """A read transaction (nested ones are the outer one)."""

    def __init__(self, store: TeamStore):
        self.store = store

    def __enter__(self):
        s = self.store
        s._depth += 1
        if s._depth == 1:
            s._sql("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        return self

    def __exit__(self, *exc) -> None:
        s = self.store
        s._depth -= 1
        if s._depth == 0:
            try:
                s.conn.execute("ROLLBACK")
            except psycopg.Error:  # (a connection lost: nothing to end)
                pass


class TeamStore:
    """A member's connection to the team server (or an admin's, for setup)."""
    remote = True  # semantic search asks the server for the nearest windows (semantic.py)

    def __init__(self, dsn: str, *, connect_timeout: float = CONNECT_SECONDS):
        # the driver's own warnings (a pipeline ended by a lost server) would reach stderr as
        # more lines: its errors are said once, as the team's (_own)
        logging.getLogger("psycopg").propagate = False
        logging.getLogger("psycopg").addHandler(logging.NullHandler())
        self.path = where(dsn)  # what its errors name (StoreError.path)
        try:
            self.conn = psycopg.connect(dsn, autocommit=True, connect_timeout=max(1, int(
                connect_timeout)), application_name="prima-memory",
                options=f"-c statement_timeout={STATEMENT_MS}")
        except psycopg.Error as e:
            raise _own(e, self.path) from None
        self._depth = 0
        self._tokens = Tokens()

    # -- plumbing ------------------------------------------------------------------------------

    def _sql(self, sql, args=None):
        try:
            return self.conn.execute(sql, args)
        except psycopg.Error as e:
            raise _own(e, self.path) from None

    def _all(self, sql, args=None) -> list[tuple]:
        return self._sql(sql, args).fetchall()

    def _value(self, sql, args=None):
        row = self._sql(sql, args).fetchone()
        return row[0] if row else None

    def read(self) -> _Read:
        return _Read(self)

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:  # noqa: BLE001 - closing what is already gone
            pass

    @property
    def member(self) -> str:
        return self._value("SELECT current_user")

    # -- the schema ----------------------------------------------------------------------------

    def server_version(self) -> int:
        """The server schema's version (0: none yet)."""
        if not self._value("SELECT to_regclass('prima.version') IS NOT NULL"):
            return 0
        return int(self._value("SELECT coalesce(max(version), 0) FROM prima.version"))

    def migrate(self) -> list[int]:
        """(An admin's) the server's schema brought forward to SCHEMA_VERSION, a step at a time,
        each in one transaction under an advisory lock. Returns the steps applied."""
        done: list[int] = []
        try:
            with self.conn.transaction():
                self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
                self.conn.execute(VERSION_TABLE)
            # (the version installed, else the one CREATE EXTENSION would install; none: the
            # step's own error says the extension is missing)
            have = self._value("SELECT coalesce((SELECT extversion FROM pg_extension WHERE "
                               "extname = 'vector'), (SELECT default_version FROM "
                               "pg_available_extensions WHERE name = 'vector'))")
            if have and tuple(int(x) for x in re.findall(r"\d+", have)[:2]) < (0, 8):
                raise TeamError(f"the team server {self.path} has pgvector {have}: prima-memory "
                                "needs 0.8 or later (ALTER EXTENSION vector UPDATE)", self.path)
            for v in range(1, SCHEMA_VERSION + 1):
                with self.conn.transaction():
                    self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
                    if self.conn.execute("SELECT 1 FROM prima.version WHERE version = %s",
                                         (v,)).fetchone():
                        continue
                    self.conn.execute(STEPS[v])
                    self.conn.execute("INSERT INTO prima.version(version) VALUES (%s)", (v,))
                    done.append(v)
        except psycopg.Error as e:  # (an undefined table is the step's own error: said as is)
            if not isinstance(e, psycopg.OperationalError):
                raise TeamError(f"the team server {self.path}: migrating to version "
                                f"{len(done) + 1} failed: {_one_line(e)}", self.path) from None
            raise _own(e, self.path) from None
        return done

    def check_writable(self) -> None:
        """Raise, in one line, unless this client may write to the server's schema."""
        v = self.server_version()
        if v > SCHEMA_VERSION:
            raise TeamOutdated(f"the team server {self.path} has schema version {v}, newer than "
                               f"this prima-memory's ({SCHEMA_VERSION}): upgrade prima-memory to "
                               "publish", self.path)
        if v < SCHEMA_VERSION:
            raise TeamError(f"the team server {self.path} has schema version {v}, older than "
                            f"this prima-memory's ({SCHEMA_VERSION}): an admin runs "
                            "`prima-memory team setup ADMIN_DSN`", self.path)

    # -- an admin's ----------------------------------------------------------------------------

    def add_member(self, role: str, team: str, password: str | None = None) -> None:
        """A login role for a member (made if missing, in prima_member) in `team`."""
        with self.conn.transaction():
            exists = self._value("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,))
            ident = sql.Identifier(role)
            if not exists:
                self._sql(sql.SQL("CREATE ROLE {} LOGIN").format(ident))
            if password is not None:
                self._sql(sql.SQL("ALTER ROLE {} PASSWORD {}").format(ident, sql.Literal(password)))
            self._sql(sql.SQL("GRANT prima_member TO {}").format(ident))
            self._sql("INSERT INTO prima.teams(team, member) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                      (team, role))

    def share(self, project: str, team: str) -> None:
        self._sql("INSERT INTO prima.projects(project, team) VALUES (%s, %s) "
                  "ON CONFLICT DO NOTHING", (project, team))

    def grant_admin(self, role: str) -> None:
        self._sql(sql.SQL("GRANT prima_admin TO {}").format(sql.Identifier(role)))

    # -- a member's writes ---------------------------------------------------------------------

    def hello(self, name: str) -> None:
        """The member's name as the team reads it."""
        self._sql("INSERT INTO prima.members(name) VALUES (%s) ON CONFLICT (member) DO UPDATE "
                  "SET name = excluded.name", (clean(name),))

    def readable_projects(self) -> list[str]:
        return sorted(self._value("SELECT prima.readable()") or [])

    def publish(self, s: dict) -> bool:
        """One session, in one transaction: its row upserted (keyed by member, source, session
        id), then the messages, changes and windows given (`s["full"]`: and those not given
        removed). False when the session is tombstoned (forgotten): nothing is written."""
        p = s["project"]
        try:
            with self.conn.transaction():
                cur = self.conn.execute(
                    "INSERT INTO prima.sessions(source, session_id, project, label, branch, "
                    "author, title, title_folded, started_at, ended_at, tags, decisions, "
                    "message_count, files_count) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
                    "%s, %s, %s, %s) ON CONFLICT (member, source, session_id) DO UPDATE SET "
                    "project = excluded.project, label = excluded.label, branch = excluded.branch, "
                    "author = excluded.author, title = excluded.title, "
                    "title_folded = excluded.title_folded, started_at = excluded.started_at, "
                    "ended_at = excluded.ended_at, tags = excluded.tags, "
                    "decisions = excluded.decisions, message_count = excluded.message_count, "
                    "files_count = excluded.files_count, published_at = now() RETURNING id",
                    (s["source"], clean(s["session_id"]), p, clean(s["label"]),
                     _maybe(s["branch"]), _maybe(s["author"]), clean(s["title"] or ""),
                     fold(clean(s["title"] or "")), s["started_at"], s["ended_at"],
                     clean(s["tags"] or ""), clean(s["decisions"] or ""), s["message_count"],
                     s["files_count"]))
                row = cur.fetchone()
                if row is None:
                    return False
                sid = row[0]
                if s["full"]:
                    for table, col, keep in (("messages", "seq", [m[0] for m in s["messages"]]),
                                             ("file_changes", "n", [c[0] for c in s["changes"]])):
                        self.conn.execute(f"DELETE FROM prima.{table} WHERE session = %s AND "
                                          f"NOT ({col} = ANY(%s))", (sid, keep))
                    if s["windows"] is not None:
                        self.conn.execute("DELETE FROM prima.windows WHERE session = %s", (sid,))
                self._messages(sid, p, s["messages"])
                self._changes(sid, p, s["changes"])
                self._windows(sid, p, s["windows"] or ())
                return True
        except psycopg.Error as e:
            raise _own(e, self.path) from None

    def _messages(self, sid: int, project: str, rows) -> None:
        if not rows:
            return
        terms: set[str] = set()
        data = []
        for seq, key, role, ts, side, pair, text in rows:
            text = clean(text or "")
            lex = lexemes(self._tokens.tokens(text))
            terms.update(lex)
            data.append((sid, seq, key, role, ts, side, pair, text, lex, project))
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO prima.messages(session, seq, key, role, ts, sidechain, pair, text, "
                "lexemes, project) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, "
                "array_to_tsvector(%s::text[]), %s) ON CONFLICT (session, seq) DO UPDATE SET "
                "key = excluded.key, role = excluded.role, ts = excluded.ts, "
                "sidechain = excluded.sidechain, pair = excluded.pair, text = excluded.text, "
                "lexemes = excluded.lexemes", data)
        self.conn.execute("INSERT INTO prima.terms(project, term) SELECT %s, t FROM "
                          "unnest(%s::text[]) t ON CONFLICT DO NOTHING", (project, sorted(terms)))

    def _changes(self, sid: int, project: str, rows) -> None:
        if rows:
            with self.conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO prima.file_changes(session, n, path, path_folded, tool, "
                    "explanation, ts, project) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT (session, n) DO UPDATE SET path = excluded.path, "
                    "path_folded = excluded.path_folded, tool = excluded.tool, "
                    "explanation = excluded.explanation, ts = excluded.ts",
                    [(sid, n, clean(path), fold(clean(path)), _maybe(tool), _maybe(why), ts,
                      project) for n, path, tool, why, ts in rows])

    def _windows(self, sid: int, project: str, rows) -> None:
        if rows:
            with self.conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO prima.windows(session, exchange, n, model, v, project) VALUES "
                    "(%s, (%s::bigint << 24) | %s, %s, %s, %s::vector, %s) "
                    "ON CONFLICT (session, exchange, n, model) DO UPDATE SET v = excluded.v",
                    [(sid, sid, seq, n, model, vec, project) for seq, n, model, vec in rows])

    def forget(self, source: str, session_id: str, keys=()) -> int:
        """A session of this member's forgotten on the server, in one transaction: its
        tombstone and its messages' keys kept (no later publish, from any machine or a fork,
        brings it back), its rows deleted, and the words only it held dropped from the
        vocabulary. Returns the sessions deleted (0: the server held none)."""
        try:
            with self.conn.transaction():
                self.conn.execute("INSERT INTO prima.tombstones(source, session_id) VALUES "
                                  "(%s, %s) ON CONFLICT DO NOTHING", (source, clean(session_id)))
                if keys:
                    self.conn.execute("INSERT INTO prima.forgotten_keys(key) SELECT unnest("
                                      "%s::text[]) ON CONFLICT DO NOTHING", (sorted(keys),))
                rows = self.conn.execute(
                    "SELECT id, project FROM prima.sessions WHERE member = current_user AND "
                    "source = %s AND session_id = %s", (source, clean(session_id))).fetchall()
                for sid, project in rows:
                    words = self.conn.execute(
                        "SELECT DISTINCT w FROM prima.messages, unnest(tsvector_to_array("
                        "lexemes)) w WHERE session = %s", (sid,)).fetchall()
                    self.conn.execute("DELETE FROM prima.sessions WHERE id = %s", (sid,))
                    self._drop_unheld(project, [w for (w,) in words])
                return len(rows)
        except psycopg.Error as e:
            raise _own(e, self.path) from None

    def _drop_unheld(self, project: str, words: list[str]) -> None:
        """The words of `words` no message of the project holds any more, out of its terms."""
        for i in range(0, len(words), 500):
            self.conn.execute("SELECT prima.drop_unheld(%s, %s)", (project, words[i:i + 500]))

    def leave(self, project: str | None = None) -> int:
        """This member's rows deleted (of `project` alone, if given), and the words only they
        held; their tombstones kept. Returns the sessions."""
        try:
            with self.conn.transaction():
                mine = "member = current_user AND (%s::text IS NULL OR project = %s)"
                words = self.conn.execute(
                    "SELECT DISTINCT project, w FROM prima.messages, unnest(tsvector_to_array("
                    f"lexemes)) w WHERE {mine}", (project, project)).fetchall()
                gone = self.conn.execute(f"DELETE FROM prima.sessions WHERE {mine}",
                                         (project, project)).rowcount
                for p in {p for p, _w in words}:
                    self._drop_unheld(p, [w for q, w in words if q == p])
                return gone
        except psycopg.Error as e:
            raise _own(e, self.path) from None

    def published(self) -> dict:
        """What this member has on the server: sessions, and per project."""
        rows = self._all("SELECT project, count(*) FROM prima.sessions WHERE member = "
                         "current_user GROUP BY project ORDER BY project")
        return {"sessions": sum(n for _p, n in rows), "projects": dict(rows)}

    # -- the read side (storage.interfaces, as search and session_view use it) ------------------

    def tokens(self, text: str) -> set[str]:
        return self._tokens.tokens(text)

    def token_list(self, text: str) -> list[str]:
        return self._tokens.token_list(text)

    def terms_containing(self, run: str, limit: int) -> list[str] | None:
        rows = self._all("SELECT prima.terms_like(%s, %s)", (_like(run), limit + 1))
        return None if len(rows) > limit else [r[0] for r in rows]

    def terms_starting(self, stem: str, limit: int) -> list[str]:
        return [r[0] for r in self._all(
            "SELECT t FROM prima.terms_like(%s, NULL) t ORDER BY length(t), t LIMIT %s",
            (_like(stem)[1:], limit))]

    def count_matching(self, query: Words | AnyWords) -> dict[int, int]:
        return dict(self._all("SELECT id >> 24, count(*) FROM prima.messages_matching("
                              "%s::tsquery, NULL) id GROUP BY 1", (_tsquery(query),)))

    def count_holding(self, query: Words | AnyWords, text: str) -> dict[int, int]:
        """TextIndex.count_holding: the texts the word query finds, read in one pass and
        compared here, folded as at home (comparing them on the server, lower() and all, cost
        twice as much: bench/team.py)."""
        return dict(count_by_session(mid for mid, t in self._all(
            "SELECT * FROM prima.texts_matching(%s::tsquery)", (_tsquery(query),))
            if text in fold(t)))

    def message_ids_matching(self, query: Words | AnyWords, limit: int = -1) -> set[int]:
        return {r[0] for r in self._all("SELECT prima.messages_matching(%s::tsquery, %s)",
                                        (_tsquery(query), limit if limit >= 0 else None))}

    def message_texts(self, ids) -> dict[int, str]:
        return dict(self._all("SELECT id, text FROM prima.messages WHERE id = ANY(%s)",
                              (list(ids),)))

    def all_message_texts(self, hint: str | None = None):
        """(id, text) of the messages that may contain `hint` (folded): an ASCII one looked
        for in any case, and every text beyond ASCII (which folding may change) read."""
        if hint and hint.isascii():
            return self._all("SELECT id, text FROM prima.messages WHERE text <> '' AND "
                             "(text ILIKE %s OR text ~ '[^\\x01-\\x7f]')", (_like(hint),))
        return self._all("SELECT id, text FROM prima.messages WHERE text <> ''")

    def session_facts(self, since=None, until=None, branch=None, tag=None, source=None,
                      extracts: bool = False, ids=None) -> Iterator[SessionFacts]:
        w, args = _returnable(since, until, branch, tag, source)
        if ids is not None:
            w += " AND id = ANY(%s)"
            args.append(list(ids))
        return map(SessionFacts._make, self._all(f"{_FACTS} WHERE {w}", args))

    def best_facts(self, points: dict[int, float], n: int, files: tuple[float, float],
                   since=None, until=None, branch=None, tag=None, source=None,
                   extracts: bool = False) -> list[SessionFacts]:
        if not points:
            return []
        w, args = _returnable(since, until, branch, tag, source)
        per_file, most = files
        return list(map(SessionFacts._make, self._all(
            "SELECT id, started_at, ended_at, files_count FROM unnest(%s::bigint[], "
            "%s::float8[]) AS p(sid, pts) JOIN prima.sessions ON id = sid "
            f"WHERE {w} ORDER BY pts + least(%s, %s * files_count) DESC, "
            "ended_at DESC NULLS LAST, id LIMIT %s",
            [list(points), [float(v) for v in points.values()], *args, float(most), float(per_file), n])))

    def sessions_with_title_containing(self, text: str) -> set[int]:
        return {r[0] for r in self._all("SELECT prima.titles_like(%s)",
                                        (_like(clean(fold(text))),))}

    def sessions_with_path_containing(self, text: str) -> dict[int, int]:
        return dict(self._all("SELECT session, count(DISTINCT path) FROM prima.paths_like(%s) "
                              "GROUP BY session", (_like(clean(fold(text))),)))

    def paths_containing(self, text: str) -> dict[str, list[int]]:
        return {p: list(s) for p, s in self._all(
            "SELECT path, array_agg(DISTINCT session) FROM prima.paths_like(%s) GROUP BY path",
            (_like(clean(fold(text))),))}

    def started_since(self, since: float) -> dict[int, float]:
        return dict(self._all("SELECT id, started_at FROM prima.sessions WHERE started_at > %s",
                              (since,)))

    def session_matches(self, session: int, query: Words | AnyWords):
        return iter(self._all("SELECT id, text FROM prima.messages WHERE session = %s AND "
                              "lexemes @@ %s::tsquery ORDER BY id DESC",
                              (session, _tsquery(query))))

    def session_message_texts(self, session: int, newest_first: bool = False):
        return iter(self._all("SELECT id, text FROM prima.messages WHERE session = %s AND "
                              f"text <> '' ORDER BY id {'DESC' if newest_first else 'ASC'}",
                              (session,)))

    def count_sessions(self) -> int:
        return int(self._value("SELECT count(*) FROM prima.sessions WHERE started_at IS NOT NULL"))

    def message_counts(self) -> dict[int, int]:
        return dict(self._all("SELECT id, message_count FROM prima.sessions WHERE started_at IS "
                              "NOT NULL"))

    def sessions_by_id(self, ids) -> list[SessionRow]:
        return [SessionRow(*r) for r in self._all(f"{_ROWS} WHERE s.id = ANY(%s)", (list(ids),))]

    def find_sessions(self, prefix: str) -> list[SessionRow]:
        return [SessionRow(*r) for r in self._all(
            f"{_ROWS} WHERE s.session_id LIKE %s", (_like(clean(prefix))[1:],))]

    def recent_sessions(self, n: int) -> list[SessionRow]:
        return [SessionRow(*r) for r in self._all(
            f"{_ROWS} WHERE s.started_at IS NOT NULL ORDER BY s.ended_at DESC NULLS LAST "
            "LIMIT %s", (n,))]

    def origins(self, ids) -> dict[int, SessionRow]:
        return {}  # (a fork's copies are its origin's, published once: none to name)

    def changed_paths(self, session: int) -> list[str]:
        return [r[0] for r in self._all("SELECT path FROM prima.file_changes WHERE session = %s "
                                        "GROUP BY path ORDER BY min(n)", (session,))]

    def file_changes(self, session: int) -> list[FileChangeRow]:
        return list(map(FileChangeRow._make, self._all(
            "SELECT path, tool, explanation, ts FROM prima.file_changes WHERE session = %s "
            "ORDER BY ts, n", (session,))))

    def messages(self, session: int) -> list[MessageRow]:
        return list(map(MessageRow._make, self._all(
            "SELECT id, role, ts, sidechain, text FROM prima.messages WHERE session = %s AND "
            "text <> '' ORDER BY sidechain, ts, id", (session,))))

    def messages_around(self, message_id: int, n: int) -> list[MessageRow]:
        return list(map(MessageRow._make, self._all(
            "WITH m AS (SELECT session, sidechain FROM prima.messages WHERE id = %s) "
            "(SELECT x.id, x.role, x.ts, x.sidechain, x.text FROM prima.messages x, m WHERE "
            "x.session = m.session AND x.sidechain = m.sidechain AND x.id < %s AND x.text <> '' "
            "ORDER BY x.id DESC LIMIT %s) UNION ALL (SELECT x.id, x.role, x.ts, x.sidechain, "
            "x.text FROM prima.messages x, m WHERE x.session = m.session AND "
            "x.sidechain = m.sidechain AND x.id >= %s AND x.text <> '' ORDER BY x.id LIMIT %s) "
            "ORDER BY 1", (message_id, message_id, n, message_id, n + 1))))

    def last_messages(self, session: int, role: str, n: int, min_chars: int = 0,
                      skip_key: str = "") -> list[tuple]:
        return self._all("SELECT ts, text FROM prima.messages WHERE session = %s AND role = %s "
                         "AND sidechain = 0 AND length(text) > %s ORDER BY id DESC LIMIT %s",
                         (session, role, min_chars, n))

    def exchanges(self, session: int) -> list[ExchangeRow]:
        return list(map(ExchangeRow._make, self._all(
            "SELECT r.id, r.ts, p.text, r.text FROM prima.messages r LEFT JOIN prima.messages p "
            "ON p.session = r.session AND p.seq = r.pair WHERE r.session = %s AND "
            "r.role = 'assistant' AND r.sidechain = 0 AND (r.text <> '' OR p.seq IS NOT NULL) "
            "ORDER BY r.ts, r.id", (session,))))

    def exchange_texts(self, ids) -> dict[int, tuple[str | None, str]]:
        return {i: (p, r) for i, p, r in self._all(
            "SELECT r.id, p.text, r.text FROM prima.messages r LEFT JOIN prima.messages p "
            "ON p.session = r.session AND p.seq = r.pair WHERE r.id = ANY(%s)", (list(ids),))}

    def tool_calls(self, session: int) -> list:
        return []  # (not published: what a call printed stays on its machine)

    def tool_counts(self, session: int) -> dict[str, int]:
        return {}

    def last_call(self, session: int, tool: str | None = None):
        return None

    # -- meaning (semantic.py's remote path) ---------------------------------------------------

    def nearest(self, model: str, vec: str, k: int) -> list[tuple[int, int, float]]:
        """(exchange, window, similarity) of the `k` windows nearest the query (HNSW)."""
        # (iterative: windows the member may not read, filtered out after the index scan, do
        # not leave fewer than `k`)
        self._sql(f"SET LOCAL hnsw.ef_search = {max(40, min(1000, int(k)))}")
        self._sql("SET LOCAL hnsw.iterative_scan = strict_order")
        return self._all("SELECT exchange, n, 1 - (v <=> %s::vector) FROM prima.windows "
                         "WHERE model = %s ORDER BY v <=> %s::vector LIMIT %s",
                         (vec, model, vec, k))

    def background(self, model: str, vec: str, sample: int) -> tuple[int, float, float]:
        """(windows, mean, variance) of the query's similarity over a sample of the windows the
        member reads: the background a match must stand out from. How many there are is the
        planner's estimate (a count would read every window) times the share of the sessions
        the member reads; the sample reads at most SAMPLE_ROWS windows of all members'."""
        total, sessions = self._all(
            "SELECT reltuples FROM pg_class WHERE oid IN ('prima.windows'::regclass, "
            "'prima.sessions'::regclass) ORDER BY oid = 'prima.windows'::regclass DESC")
        if total[0] < SAMPLE_EXACT:  # (small, or never analysed: counted)
            n = int(self._value("SELECT count(*) FROM prima.windows WHERE model = %s", (model,)))
            share = min(100.0, 100.0 * sample / n) if n else 100.0
        else:
            mine = self.count_sessions()
            n = int(total[0] * min(1.0, mine / max(sessions[0], mine, 1)))
            share = min(100.0, 100.0 * sample / max(n, 1), 100.0 * SAMPLE_ROWS / total[0])
        if not n:
            return 0, 0.0, 0.0
        got = self._sql("SELECT count(*), avg(s), var_pop(s) FROM (SELECT 1 - (v <=> %s::vector) "
                        f"AS s FROM prima.windows TABLESAMPLE SYSTEM ({share:.6f}) REPEATABLE (7) "
                        "WHERE model = %s) x", (vec, model)).fetchone()
        if not got or not got[0]:
            return 0, 0.0, 0.0
        return n, float(got[1]), float(got[2] or 0.0)

    def best_windows(self, model: str, vec: str, sessions) -> list[tuple[int, int, float]]:
        """(exchange, window, similarity) of every window of `sessions` (exact)."""
        return self._all("SELECT exchange, n, 1 - (v <=> %s::vector) FROM prima.windows WHERE "
                         "model = %s AND session = ANY(%s)", (vec, model, list(sessions)))

    def window_counts(self, model: str, sessions) -> dict[int, int]:
        return dict(self._all("SELECT session, count(*) FROM prima.windows WHERE model = %s AND "
                              "session = ANY(%s) GROUP BY session", (model, list(sessions))))

