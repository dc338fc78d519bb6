"""The index: one SQLite database per workspace. All SQL lives here.

Message ids are `session << 24 | ordinal`, so the keyword index answers "which sessions" from
rowids alone. Messages are indexed in a contentless FTS5 table (unicode61, detail=none) and every
distinct token goes into `terms`, itself indexed by trigrams, which turns the seed's substring rule
("room" finds "bedroom") into a lookup of the tokens that contain the query word.
"""
from __future__ import annotations

import os
import time
from collections import Counter, namedtuple
from collections.abc import Iterable, Iterator

import apsw

from . import jsontext
from .errors import Failure
from .workspace import open_nofollow, text_of

BUSY_MS = 5000  # how long a statement waits for another writer, unless told otherwise
SCRUB_TRIES, SCRUB_TRY_MS = 40, 100  # a forget's wait for readers to leave the log: 6 s at most


def _uncounted_allocations() -> None:
    """SQLite keeps statistics of its memory (which nothing here reads) under a global lock
    taken on every allocation: without them a common word's search spends half as long in
    SQLite, and so does indexing. They can only be turned off before the library's first use
    in the process (apsw refuses while a connection is open: then they stay)."""
    try:
        apsw.shutdown()
        apsw.config(apsw.SQLITE_CONFIG_MEMSTATUS, 0)
    except apsw.MisuseError:
        pass
    apsw.initialize()


_uncounted_allocations()

# The schema version is SQLite's user_version. Each change is an additive step in _MIGRATIONS,
# run in place in one transaction: an index is never thrown away for a schema change (moving it
# aside is for corruption, and for versions older than the oldest step).
# 2: sessions.unfinished; 3: changed paths searchable from an index; 4: no "HEAD" branches, and
# prima-memory's own command runs are no longer sessions; 5: text folded alike on both sides of
# matching; 6: indexes for message counts, recent files, latest and unfinished sessions, and
# the version in user_version; 7: vectors, content-addressed, and the exchanges they embed;
# 8: SIMILAR_TO edges between exchanges; 9: vectors keyed by the build that made them too (the
# keys in use until then are listed, for the embedder to adopt or drop: semantic.Embedding.adopt);
# 10: a message copied into another session (a fork, a resume) is stored once: messages looked up
# by key, and each session's origin; 11: tool calls; 12: the distinct changed paths, so a search
# looks for its words in each path once, not in every change; 13: the files indexed by source;
# 14: titles and the sessions of each changed path indexed, so a search costs its matches;
# 15: the token that a file of this index's vectors must carry (vectorfile.py); 16: the changed
# paths kept from the pairs of path and session, so a change costs one index and trigger less,
# and titles indexed at the commit
SCHEMA_VERSION = 16
SHIFT = 24  # ordinals per session: 16M fragments, far past any real transcript
_TOKENIZER_ARGS = ["remove_diacritics", "0"]

# Embeddings cost minutes to hours, so they are kept by content: `vectors` holds the windows of an
# embedded text under the text's hash (and the model that read it), whatever message it came from;
# `embedded` links an exchange (its reply's id) to the hash it was embedded as, per model (two
# settings in use, say a hook's and a shell's, never undo each other's work). When a reply's text
# changes or its message goes, the triggers drop the link (never the vectors): the exchange is then
# pending, and a text seen before (a re-read, a rebuild) finds its vectors again without the model.
# Prompts are never rewritten in place, so only the reply's own changes are watched.
_VECTOR_SCHEMA = """
-- a rowid table: a 1,536-byte vector fits in its row, where a WITHOUT ROWID table would spill
-- it to an overflow page (reading every vector: 30 ms instead of 300 at 33,000 exchanges)
CREATE TABLE IF NOT EXISTS vectors(
  id INTEGER PRIMARY KEY, text_hash BLOB NOT NULL, model TEXT NOT NULL, n INTEGER NOT NULL,
  variant TEXT NOT NULL, vec BLOB NOT NULL, UNIQUE(text_hash, model, n));
CREATE TABLE IF NOT EXISTS embedded(exchange INTEGER NOT NULL, model TEXT NOT NULL,
  text_hash BLOB NOT NULL, PRIMARY KEY(exchange, model)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS embedded_hash ON embedded(text_hash);
CREATE TRIGGER IF NOT EXISTS messages_au_vec AFTER UPDATE OF text ON messages BEGIN
  DELETE FROM embedded WHERE exchange = old.id; END;
CREATE TRIGGER IF NOT EXISTS messages_ad_vec AFTER DELETE ON messages BEGIN
  DELETE FROM embedded WHERE exchange = old.id; END;
-- a count of changes to the links: a process that holds the vectors in memory reloads on change
INSERT OR IGNORE INTO meta(key, value) VALUES ('vectors_gen', 0);
CREATE TRIGGER IF NOT EXISTS embedded_ai AFTER INSERT ON embedded BEGIN
  UPDATE meta SET value = value + 1 WHERE key = 'vectors_gen'; END;
CREATE TRIGGER IF NOT EXISTS embedded_ad AFTER DELETE ON embedded BEGIN
  UPDATE meta SET value = value + 1 WHERE key = 'vectors_gen'; END;
"""
# what a file of the vectors kept beside the index (vectorfile.py) must carry to be read: known to
# this index alone, so that no file that came with the folder, or outlived the index, is taken
_VECTOR_TOKEN = ("INSERT OR IGNORE INTO meta(key, value) "
                 "VALUES ('vectors_token', lower(hex(randomblob(16))))")

# SIMILAR_TO edges (DESIGN §4): exchange pairs of different sessions and different texts whose
# vectors (best window against best window) have cosine >= 0.85, bounded: an exchange's nearest
# are the EDGE_K strongest of its pairs (ties: the older exchange), `similar` keeps a pair (once,
# a < b) while it is among the nearest of either end, and an edge is a pair among the nearest of
# both, so no exchange has more than EDGE_K. Keeping the one-sided pairs too is what lets a new
# exchange be linked from the rows alone: an old exchange's nearest are its EDGE_K strongest rows.
# `linked` records, per model, the text each exchange's nearest were computed for: an exchange
# embedded since (new, or its text changed) is pending, and its pairs are computed against all
# vectors, never all pairs again. An exchange whose vectors link goes loses its rows with it.
_EDGE_SCHEMA = """
-- keyed by exchange first: with the model first, SQLite scans a model's edges to find one b
CREATE TABLE IF NOT EXISTS similar(a INTEGER NOT NULL, b INTEGER NOT NULL, model TEXT NOT NULL,
  cosine REAL NOT NULL, PRIMARY KEY(a, b, model)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS similar_b ON similar(b);
CREATE TABLE IF NOT EXISTS linked(exchange INTEGER NOT NULL, model TEXT NOT NULL,
  text_hash BLOB NOT NULL, PRIMARY KEY(exchange, model)) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS embedded_ad_edges AFTER DELETE ON embedded BEGIN
  DELETE FROM linked WHERE exchange = old.exchange AND model = old.model;
  DELETE FROM similar WHERE model = old.model AND a = old.exchange;
  DELETE FROM similar WHERE model = old.model AND b = old.exchange; END;
"""

# A session's message keys name the message wherever it is copied (Claude Code's uuids and
# message ids): a fork or a resume writes the earlier session's lines again under a new session.
_KEY_INDEX = "CREATE INDEX IF NOT EXISTS messages_key ON messages(key);"

# What the agent ran, read, searched, fetched: shown and exported with the messages they follow
# (ToolCall.message_key), never searched. A call read twice (a file's lines read again to find
# the calls an older index left out: Indexer._backfill) is stored once, by its id in the file
# and the message it follows (ids are unique in a file, not always in a session's files).
_TOOL_SCHEMA = """
CREATE TABLE IF NOT EXISTS tool_calls(
  id INTEGER PRIMARY KEY, session INTEGER NOT NULL, message_key TEXT NOT NULL, call TEXT,
  ts REAL, sidechain INTEGER NOT NULL DEFAULT 0, tool TEXT NOT NULL, target TEXT NOT NULL,
  line TEXT NOT NULL, kind TEXT NOT NULL DEFAULT '');
CREATE UNIQUE INDEX IF NOT EXISTS tool_calls_call ON tool_calls(session, message_key, call);
"""

# Every path a change names, once: a search looks in these (a few thousand) for its words, then
# finds the sessions of those that hold them (path_sessions), where a scan of every change grew
# with the history (90,000 rows naming 18 paths: 55 ms). Kept by triggers: a path goes with its
# last change, so nothing deleted stays named here (since 16, through path_sessions).
_PATH_SCHEMA = """
CREATE TABLE IF NOT EXISTS changed_paths(path TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS file_changes_path ON file_changes(path, session);
CREATE TRIGGER IF NOT EXISTS file_changes_listed AFTER INSERT ON file_changes BEGIN
  INSERT OR IGNORE INTO changed_paths(path) VALUES (new.path); END;
CREATE TRIGGER IF NOT EXISTS file_changes_unlisted AFTER DELETE ON file_changes
  WHEN NOT EXISTS (SELECT 1 FROM file_changes WHERE path = old.path) BEGIN
  DELETE FROM changed_paths WHERE path = old.path; END;
"""

# A source's files without a scan of every file's row (their parser states: 4 MB at 10,000
# sessions): each search asks it of every source but Claude Code's, which mostly have none.
_FILES_BY_SOURCE = "CREATE INDEX IF NOT EXISTS files_source ON files(source, path);"

# What a keyword search looks up besides the messages, indexed so that it costs what it finds,
# not what the history holds: each session's title, folded as matching folds (fold, registered
# as prima_fold), in a trigram index whose phrases are substrings; the sessions each changed path
# was changed in, once a pair; the sessions by start (the week that earns recency points).
# Triggers keep the first two, so no write can leave them stale.
_TITLE_OF = ("COALESCE(NULLIF({0}.title_custom, ''), NULLIF({0}.title_summary, ''), "
             "NULLIF({0}.title_first, ''), 'Untitled Session')")  # {0}: the row (new, old)
_LOOKUP_SCHEMA = f"""
CREATE VIRTUAL TABLE IF NOT EXISTS titles_tri USING fts5(title, content='', contentless_delete=1,
  tokenize='trigram case_sensitive 1', detail=full);
CREATE TRIGGER IF NOT EXISTS sessions_titled AFTER INSERT ON sessions BEGIN
  INSERT INTO titles_tri(rowid, title) VALUES (new.id, prima_fold({_TITLE_OF.format("new")})); END;
CREATE TRIGGER IF NOT EXISTS sessions_retitled
  AFTER UPDATE OF title_custom, title_summary, title_first ON sessions
  WHEN {_TITLE_OF.format("new")} IS NOT {_TITLE_OF.format("old")} BEGIN
  DELETE FROM titles_tri WHERE rowid = old.id;
  INSERT INTO titles_tri(rowid, title) VALUES (new.id, prima_fold({_TITLE_OF.format("new")})); END;
CREATE TRIGGER IF NOT EXISTS sessions_untitled AFTER DELETE ON sessions BEGIN
  DELETE FROM titles_tri WHERE rowid = old.id; END;
CREATE TABLE IF NOT EXISTS path_sessions(path TEXT NOT NULL, session INTEGER NOT NULL,
  PRIMARY KEY(path, session)) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS file_changes_paired AFTER INSERT ON file_changes BEGIN
  INSERT OR IGNORE INTO path_sessions(path, session) VALUES (new.path, new.session); END;
CREATE TRIGGER IF NOT EXISTS file_changes_unpaired AFTER DELETE ON file_changes
  WHEN NOT EXISTS (SELECT 1 FROM file_changes WHERE session = old.session AND path = old.path)
  BEGIN DELETE FROM path_sessions WHERE path = old.path AND session = old.session; END;
CREATE INDEX IF NOT EXISTS sessions_started ON sessions(started_at);
"""

# Titles staged: the triggers note which sessions' titles changed, and the commit indexes them
# (Store._settle, _RETITLE). A trigger that wrote titles_tri itself made SQLite's full-text
# index write a segment of one title for each statement after it (see Store._unindex).
_TITLES_STAGED = f"""
CREATE TABLE IF NOT EXISTS titles_stale(id INTEGER PRIMARY KEY);
DROP TRIGGER IF EXISTS sessions_titled;
DROP TRIGGER IF EXISTS sessions_retitled;
DROP TRIGGER IF EXISTS sessions_untitled;
CREATE TRIGGER IF NOT EXISTS sessions_titled AFTER INSERT ON sessions BEGIN
  INSERT OR IGNORE INTO titles_stale(id) VALUES (new.id); END;
CREATE TRIGGER IF NOT EXISTS sessions_retitled
  AFTER UPDATE OF title_custom, title_summary, title_first ON sessions
  WHEN {_TITLE_OF.format("new")} IS NOT {_TITLE_OF.format("old")} BEGIN
  INSERT OR IGNORE INTO titles_stale(id) VALUES (new.id); END;
CREATE TRIGGER IF NOT EXISTS sessions_untitled AFTER DELETE ON sessions BEGIN
  INSERT OR IGNORE INTO titles_stale(id) VALUES (old.id); END;
"""
# (deleting a title never indexed is nothing: a new session's)
_RETITLE = f"""
DELETE FROM titles_tri WHERE rowid IN (SELECT id FROM titles_stale);
INSERT INTO titles_tri(rowid, title) SELECT s.id, prima_fold({_TITLE_OF.format("s")})
  FROM titles_stale t JOIN sessions s ON s.id = t.id;
DELETE FROM titles_stale;
"""

# changed_paths kept from path_sessions, not from every change: its trigger runs for a pair new
# to the index, not for each change of a path (most name a path changed before), and the index
# of changes by path, which only its trigger asked, goes.
_PATHS_FROM_PAIRS = """
DROP TRIGGER IF EXISTS file_changes_listed;
DROP TRIGGER IF EXISTS file_changes_unlisted;
DROP INDEX IF EXISTS file_changes_path;
CREATE TRIGGER IF NOT EXISTS path_sessions_listed AFTER INSERT ON path_sessions BEGIN
  INSERT OR IGNORE INTO changed_paths(path) VALUES (new.path); END;
CREATE TRIGGER IF NOT EXISTS path_sessions_unlisted AFTER DELETE ON path_sessions
  WHEN NOT EXISTS (SELECT 1 FROM path_sessions WHERE path = old.path) BEGIN
  DELETE FROM changed_paths WHERE path = old.path; END;
"""

EDGE_K = 8  # the nearest kept per exchange: edges per exchange at most (see _EDGE_SCHEMA)


def _nearest(cands) -> list[int]:
    """The EDGE_K strongest of (other exchange, cosine): the highest cosine, then the oldest."""
    return [y for y, _c in sorted(cands, key=lambda yc: (-yc[1], yc[0]))[:EDGE_K]]


_SCHEMA = f"""
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE sessions(
  id INTEGER PRIMARY KEY,
  source TEXT NOT NULL, session_id TEXT NOT NULL, label TEXT NOT NULL,
  cwd TEXT, branch TEXT, author TEXT,
  title_custom TEXT, title_summary TEXT, title_first TEXT,
  started_at REAL, ended_at REAL,
  tags TEXT NOT NULL DEFAULT '', decisions TEXT NOT NULL DEFAULT '',
  message_count INTEGER NOT NULL DEFAULT 0, files_count INTEGER NOT NULL DEFAULT 0,
  next_ord INTEGER NOT NULL DEFAULT 0, archived INTEGER NOT NULL DEFAULT 0, extract_path TEXT,
  unfinished INTEGER NOT NULL DEFAULT 0,  -- changed since its extract was last considered
  origin INTEGER,  -- the session whose messages this one's first lines copy (a fork, a resume)
  UNIQUE(source, session_id));
CREATE TABLE messages(
  id INTEGER PRIMARY KEY, session INTEGER NOT NULL, key TEXT NOT NULL, role TEXT NOT NULL,
  ts REAL, sidechain INTEGER NOT NULL DEFAULT 0, pair INTEGER, text TEXT NOT NULL,
  UNIQUE(session, key));
CREATE TABLE file_changes(
  id INTEGER PRIMARY KEY, session INTEGER NOT NULL, path TEXT NOT NULL, tool TEXT,
  explanation TEXT, ts REAL, message_key TEXT);
-- (session, path): a session's paths, read from the index, not the rows and explanations
CREATE INDEX file_changes_session ON file_changes(session, path);
CREATE TABLE files(
  path TEXT PRIMARY KEY, source TEXT NOT NULL, session INTEGER, sidechain INTEGER NOT NULL,
  size INTEGER, mtime_ns INTEGER, inode INTEGER, head_len INTEGER, head_hash TEXT,
  offset INTEGER NOT NULL DEFAULT 0, state TEXT, status TEXT NOT NULL DEFAULT 'ok');
CREATE INDEX files_session ON files(session);
{_KEY_INDEX}
-- a SessionStart looks again at the files changed lately, not at every file; its briefing reads
-- the latest sessions, and each run the few left unfinished, without a scan of all of them
CREATE INDEX files_mtime ON files(mtime_ns);
CREATE INDEX sessions_ended ON sessions(ended_at);
CREATE INDEX sessions_unfinished ON sessions(id) WHERE unfinished = 1;
-- a session's message count reads this, not its text pages (a 200 MB session: 120 ms -> ms)
CREATE INDEX messages_counted ON messages(session) WHERE sidechain = 0 AND text != '';
CREATE VIRTUAL TABLE messages_fts USING fts5(text, content='', contentless_delete=1,
  detail=none, tokenize='unicode61 remove_diacritics 0');
-- merge segments once two share a level: many small hook commits otherwise slow every query
INSERT INTO messages_fts(messages_fts, rank) VALUES ('usermerge', 2);
CREATE TABLE terms(id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE);
CREATE VIRTUAL TABLE terms_tri USING fts5(term, content='terms', content_rowid='id',
  tokenize='trigram', detail=none);
-- Inserts and updates feed messages_fts from Python (3x faster than a trigger per row);
-- deletes, rare, go through this trigger so no path can leave a stale keyword row.
CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
  DELETE FROM messages_fts WHERE rowid = old.id; END;
-- An exchange is one reply, with the prompt it answers first: stored ready to embed.
CREATE VIEW exchanges AS
  SELECT r.id AS id, r.session AS session, r.ts AS ts, u.text AS prompt, r.text AS reply
  FROM messages r LEFT JOIN messages u ON u.id = r.pair
  WHERE r.role = 'assistant' AND (r.text != '' OR u.id IS NOT NULL);
{_VECTOR_SCHEMA}
{_EDGE_SCHEMA}
{_TOOL_SCHEMA}
{_PATH_SCHEMA}
{_FILES_BY_SOURCE}
{_LOOKUP_SCHEMA}
{_VECTOR_TOKEN};
{_PATHS_FROM_PAIRS}
{_TITLES_STAGED}
INSERT INTO meta(key, value) VALUES ('schema_version', '{SCHEMA_VERSION}');
PRAGMA user_version = {SCHEMA_VERSION};
"""

# A fork with nothing of its own yet (its messages are all its origin's) is no conversation to list
_OWN = "(origin IS NULL OR message_count > 0)"

_LEGACY_KEYS = "legacy_vectors"  # meta: vector keys from before schema 9, not yet adopted

_TITLE = _TITLE_OF.replace("{0}.", "")  # the title precedence (DESIGN §3), stored normalised
SESSION_COLUMNS = ("id, source, session_id, label, cwd, branch, author, title_custom, "
                   "title_summary, title_first, started_at, ended_at, tags, decisions, "
                   f"message_count, files_count, archived, extract_path, {_TITLE}")

_INSERT_MESSAGE = ("INSERT INTO messages(id, session, key, role, ts, sidechain, pair, text) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?)")


_NON_ASCII = "*[^\x01-\x7f]*"  # a GLOB for text with a character beyond ASCII
_CHAR_SESSIONS = 0x10FFFF - 2048  # the sessions a code point can number (see _per_session)


_TOKENS_PIECE = 1 << 16
# Keyword rows kept for a commit are written once they hold this much text (Steps.added, between
# files): a cold index writes a hundred segments, not a thousand, and holds no more memory at
# its peak than when each file's were written at once (1 MB kept: 1.2 MB more).
UNINDEXED_CHARS = 1 << 16


def _after_space(text: str, i: int) -> int:
    """Where a piece of `text` may end at `i` or after: just past white space."""
    nl, sp = text.find("\n", i), text.find(" ", i)
    cut = min(x for x in (nl, sp, len(text) - 1) if x >= 0)
    return cut + 1


def index_text(text: str) -> str:
    """Text as the keyword index sees it: Unicode NFC (so "café" typed either way is one word) and
    Turkish İ as I, whose lower case SQLite's tokenizer and Python disagree on. ASCII as it is."""
    if text.isascii():
        return text
    import unicodedata  # (text beyond ASCII only)
    return unicodedata.normalize("NFC", text).replace("\u0130", "I")


def fold(text: str) -> str:
    """What matching compares, on both sides: index_text, lower case (length kept)."""
    return index_text(text).lower()


def _fold_value(*values):
    """fold() as SQL's prima_fold (one argument): text folded, anything else as it is."""
    return fold(values[0]) if isinstance(values[0], str) else values[0]


class StoreError(Failure):
    """Trouble with the index itself (not with a source file): every SQLite error leaves this
    module as one of these, so no caller needs to know the driver. `path`: the index's file,
    so that the one damaged among several is known (scope.Scope.guarded)."""

    def __init__(self, message: str, path: str | None = None):
        super().__init__(message)
        self.path = path


class CorruptIndex(StoreError):
    """The database cannot be read: the caller moves it aside and rebuilds."""


class DiskFull(StoreError):
    """SQLite could not write for want of space: nothing of that write was kept."""


class Busy(StoreError):
    """Another connection held the index past the wait (store.write's `wait`, or 5 s)."""


class ReadOnly(StoreError):
    """The index can be read but not written (a read-only file or file system)."""


class CantOpen(StoreError):
    """SQLite cannot open the file at all (no folder, no permission)."""


def _own(e: BaseException, db, path: str) -> BaseException:
    """The store's type for a driver error `e` raised on `db` (an apsw connection, or None);
    anything else as it is. The one place that reads SQLite's error codes: a full disk is
    SQLITE_FULL, or an I/O error whose cause is ENOSPC (making or growing the -shm or the log)."""
    if not isinstance(e, apsw.Error):
        return e
    import errno  # only on an error: hooks that write nothing never pay for it
    if isinstance(e, (apsw.CorruptError, apsw.NotADBError)):
        return CorruptIndex(f"{path}: {e}", path)
    if isinstance(e, apsw.FullError) or (isinstance(e, apsw.IOError) and db is not None
                                         and db.system_errno == errno.ENOSPC):
        return DiskFull(f"the disk is full: {path} not written", path)
    if isinstance(e, (apsw.BusyError, apsw.LockedError)):
        return Busy(f"{path}: {e}", path)
    if isinstance(e, apsw.ReadOnlyError):
        return ReadOnly(f"{path}: {e}", path)
    if isinstance(e, apsw.CantOpenError):
        return CantOpen(f"{path}: {e}", path)
    return StoreError(f"{path}: {type(e).__name__}: {e}", path)


def _returnable(since=None, until=None, branch=None, tag=None, source=None,
                extracts: bool = False) -> tuple[str, tuple]:
    """The WHERE clause (and its arguments) of the sessions a search may return: see
    Store.session_facts."""
    where, args = ["started_at IS NOT NULL", _OWN], []
    if not extracts and source != "extract":
        where.append("source != 'extract'")
    for value, test in ((since, "COALESCE(ended_at, started_at) >= ?"),
                        (until, "started_at <= ?"), (branch, "COALESCE(branch, '') = ?"),
                        (tag and tag.lower(), "instr(' ' || COALESCE(tags, '') || ' ', "
                                              "' ' || ? || ' ') > 0"),
                        (source, "source = ?")):
        if value is not None:
            where.append(test)
            args.append(value)
    return " AND ".join(where), tuple(args)


def _folder_and_below(folder: str) -> tuple[str, int, str, str]:
    """The arguments of `cwd = ? OR substr(cwd, 1, ?) IN (?, ?)`: a folder, and the length and
    spellings of what a path inside it starts with."""
    folder = folder.rstrip("/\\") or folder[:1]  # (the root stays itself)
    if folder in ("/", "\\"):
        return folder, 1, folder, folder
    return folder, len(folder) + 1, folder + "/", folder + os.sep


class TooManyMessages(ValueError):
    """A session whose file holds more messages than an id can number: that file's doing (a
    hostile or broken file), not the index's, so the file is marked failed and the run goes on."""


def is_store_error(e: BaseException) -> bool:
    """`e` is the index's trouble (a driver error not yet translated, one of ours, or text read
    back from a damaged index), not a source file's: the indexer lets it end the run rather than
    mark a file unreadable."""
    return isinstance(e, (StoreError, apsw.Error)) or is_corruption(e)


def own_error(e: BaseException, store: Store | None = None) -> BaseException:
    """The store's type for an error that escaped a plain read (outside write/read/steps),
    for the boundary that reports it (Memory.guarded)."""
    return _own(e, store.db if store is not None else None,
                store.path if store is not None else "the index")


class ForeignIndex(StoreError):
    """The database carries no valid stamp of this user's prima-memory (see owner.py): it is
    never used, and nothing is recovered from it; the caller moves it aside and rebuilds."""

    def __init__(self, path: str, why: str):
        super().__init__(f"{path} {why}", path)
        self.why = why


# What the index knows of a source file (its parser state apart). A namedtuple, not a dataclass
# or typing.NamedTuple: hooks import this module and those cost 5-30 ms to import.
FAILED = "failed"  # a file's status when it could not be read (see Store.file_failed)
_FILE_FIELDS = "session sidechain size mtime_ns inode head_len head_hash offset status"

_SESSION_FIELDS = ("id source session_id label cwd branch author title_custom title_summary "
                   "title_first started_at ended_at tags decisions message_count files_count "
                   "archived extract_path title")


TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of every hook)
if TYPE_CHECKING:  # the rows as the type checker sees them: the same fields, typed
    from typing import NamedTuple

    class _FileFields(NamedTuple):
        session: int | None
        sidechain: int
        size: int | None
        mtime_ns: int
        inode: int
        head_len: int | None
        head_hash: str | None
        offset: int
        status: str

    class _SessionFields(NamedTuple):
        id: int
        source: str
        session_id: str
        label: str
        cwd: str | None
        branch: str | None
        author: str | None
        title_custom: str | None
        title_summary: str | None
        title_first: str | None
        started_at: float | None
        ended_at: float | None
        tags: str
        decisions: str
        message_count: int
        files_count: int
        archived: int
        extract_path: str | None
        title: str
else:
    _FileFields = namedtuple("FileRow", _FILE_FIELDS)
    _SessionFields = namedtuple("SessionRow", _SESSION_FIELDS)


class FileRow(_FileFields):
    __slots__ = ()


class SessionRow(_SessionFields):
    __slots__ = ()

    @property
    def tag_list(self) -> list[str]:
        return self.tags.split() if self.tags else []


def _like(text: str) -> str:
    """A LIKE pattern for "contains text", with LIKE's own wildcards taken literally."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _bind_path(path: str):
    """A source file's path as the index keeps it: as text, or for a name whose bytes are not
    UTF-8 (os gives it with surrogates, which SQLite cannot take as text) as those bytes, a
    BLOB, so that it comes back as the same path, to be read again."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return os.fsencode(path)


def _path(value) -> str:
    return os.fsdecode(value) if isinstance(value, bytes) else value


def _create_private(path: str) -> None:
    """Create the database file private to the user (SQLite gives the -wal and -shm files its
    mode), never through a symbolic link: the mode is set on what was opened."""
    fd = open_nofollow(path, os.O_RDWR | os.O_CREAT)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


_META_SQL = "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)"


def _schema_rows(db) -> list[tuple]:
    """Every schema object but SQLite's statistics (ANALYZE and PRAGMA optimize make those)."""
    return sorted(db.execute("SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master "
                             "WHERE name NOT LIKE 'sqlite\\_stat%' ESCAPE '\\'"))


def stamp_of(db, key: bytes) -> str:
    """The index's stamp: the user's key over its schema, object by object, so that a trigger,
    view, table or index added by anyone else no longer matches."""
    try:  # hashlib's own import loads OpenSSL: 3-6 ms of every hook's start, for blake2b alone
        from _blake2 import blake2b
    except ImportError:  # (not CPython)
        from hashlib import blake2b
    text = "\n".join("\0".join(map(str, row)) for row in _schema_rows(db))
    return blake2b(text.encode("utf-8", "surrogatepass"), key=key[:64], digest_size=32,
                   person=b"prima-memory-idx").hexdigest()


def owner_problem(db, key: bytes, *, unstamped: bool = False) -> str | None:
    """None when this database was made (or last migrated) by prima-memory with this key; else
    why not, in words for a warning. Reads nothing but the schema and, once that is known to
    hold our meta table, the stamp in it (a `meta` made by someone else could be a view).
    `unstamped`: the user vouches for it (an index from before stamps): no stamp is needed, but
    still nothing prima-memory never makes."""
    if (_META_SQL,) not in db.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchall():
        return "is not a prima-memory index"
    row = None if unstamped else db.execute("SELECT value FROM meta WHERE key = 'owner'").fetchone()
    if row and row[0] == stamp_of(db, key):
        return None
    odd = _objects_not_ours(db)
    if odd:
        return "holds what prima-memory never makes (" + ", ".join(odd[:5]) + ")"
    if unstamped:
        return None
    if not row:
        return ("carries no stamp of this user's prima-memory (an index from before stamps, or "
                "one that came with the folder)")
    return "was stamped by another user's or machine's prima-memory"


def _objects_not_ours(db) -> list[str]:
    """The schema objects a new index of this version does not have, as "trigger x"."""
    ref = apsw.Connection(":memory:")
    try:
        ref.execute(_SCHEMA)
        ours = {(t, n) for t, n, _tbl, _sql in _schema_rows(ref)}
    finally:
        ref.close()
    return [f"{t} {n}" for t, n, _tbl, _sql in _schema_rows(db) if (t, n) not in ours]


def _uri(path: str) -> str:
    """A file: URI for SQLite, made from the path's bytes: a folder name that is not UTF-8 (os
    gives it as surrogates, which apsw cannot pass on) reaches SQLite as those very bytes."""
    from urllib.parse import quote  # here: 3-4 ms of every hook's start
    return "file:" + quote(os.fsencode(os.path.abspath(path)))


def _connect(path: str, flags: int) -> apsw.Connection:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return apsw.Connection(_uri(path), flags=flags | apsw.SQLITE_OPEN_URI)
    return apsw.Connection(path, flags=flags)


class Store:
    def __init__(self, path: str, *, readonly: bool = False, key: bytes | None = None,
                 immutable: bool = False, shm_kept: bool = False):
        """`key`: the user's key (owner.key()); the index is stamped with it when made or
        migrated, and an index without a valid stamp raises ForeignIndex. None: no check (a
        user whose key cannot be kept; tests of the store alone). `readonly`: read with its
        write-ahead log (SQLite reads a -shm it cannot write from memory), or, `immutable`, the
        file alone, with no lock and no -shm (a read-only disk where the log cannot be opened),
        or, `shm_kept`, with its log through the -shm there, which is only read: nothing is
        made or written beside it (CantOpen where there is no -shm)."""
        self.path = path
        self.readonly = readonly or immutable or shm_kept
        self.readonly_why: str | None = None  # said when an update is refused, if not "read-only"
        self.key = key
        self._tokenizer: apsw.FTS5Tokenizer | None = None
        self._pending: dict[str, tuple[tuple[int, int], list[int]]] = {}  # pending_exchanges'
        # keyword rows waiting for the commit (see _settle), and how to take back what a
        # savepoint rolled back adds or changes among them: (rowid, its text before, or None)
        self._unindexed: dict[int, str] = {}
        self._undo: list[tuple[int, str | None]] = []
        self.unindexed_chars = 0  # kept so far (about: what growth replaced is counted too)
        self._settled_at = 0  # total_changes() when last settled: none since, nothing staged
        self._savepoints = 0  # open (Store.write inside a write)
        db: apsw.Connection | None = None
        try:
            if self.readonly:
                mode = "?immutable=1" if immutable else \
                    "?mode=ro&readonly_shm=1" if shm_kept else "?mode=ro"
                db = apsw.Connection(_uri(path) + mode,
                                     flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
            else:
                _create_private(path)
                db = _connect(path, apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)
            self.db: apsw.Connection = db
            db.setbusytimeout(BUSY_MS)
            # the schema's triggers fold titles as matching does (innocuous: trusted_schema off)
            db.create_scalar_function("prima_fold", _fold_value, 1, deterministic=True,
                                      flags=apsw.SQLITE_INNOCUOUS)
            self._init_with_retry()
        except apsw.Error as e:
            own = _own(e, db, path)
            if isinstance(own, DiskFull):
                raise DiskFull(f"the disk is full: {path} cannot be opened for writing") from e
            raise own from e

    def _init_with_retry(self) -> None:
        """Several processes opening a brand-new index at once: switching it to WAL can answer
        "locked" without waiting, so try again for a few seconds."""
        deadline = time.monotonic() + 10
        while True:
            try:
                return self._init()
            except apsw.BusyError:
                self._rollback()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _init(self) -> None:
        db = self.db
        # Defence in depth: a view or trigger in a file not ours can call no function that is
        # not innocuous (ours use none), even before the stamp is checked.
        db.execute("PRAGMA trusted_schema=OFF")
        has_meta = "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
        wal = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL"
        if not db.execute(has_meta).fetchone():
            if self.readonly:
                raise StoreError(f"{self.path} is not a prima-memory index")
            if not db.execute("SELECT count(*) FROM sqlite_master").get:
                db.execute(wal)  # a new file: made in WAL mode from the start
            db.execute("BEGIN IMMEDIATE")  # several first users at once: one creates, all see it
            try:
                if not db.execute(has_meta).fetchone():
                    if db.execute("SELECT count(*) FROM sqlite_master").get:
                        raise ForeignIndex(self.path, "is a database prima-memory did not make")
                    db.execute(_SCHEMA)
                    self._stamp()
                db.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
        if self.key is not None:
            why = owner_problem(db, self.key)
            if why:
                raise ForeignIndex(self.path, why)
        if not self.readonly:
            db.execute(wal)
        version = self._version()
        if version in _MIGRATIONS and not self.readonly:
            db.execute("BEGIN IMMEDIATE")  # one process migrates; the others see it done
            try:
                version = self._version()
                while version in _MIGRATIONS:
                    _MIGRATIONS[version](self)
                    version += 1
                    self._set_version(version)
                self._stamp()  # its schema has changed: so has its stamp
                self._settle()
                db.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
        if version != SCHEMA_VERSION:
            raise SchemaMismatch(version)

    def _stamp(self) -> None:
        if self.key is not None:
            self.set_meta("owner", stamp_of(self.db, self.key))

    def _rollback(self) -> None:
        """ROLLBACK unless SQLite has already rolled back itself (a full disk, an I/O error):
        a second "cannot rollback - no transaction is active" would hide the first error."""
        self._forget_unindexed()
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")

    def _version(self) -> int | None:
        """The schema version: SQLite's user_version (in the file header: read before any
        table), or, in an index from before it was used (schema 3 to 6), the meta row."""
        version = self.db.execute("PRAGMA user_version").get
        if version:
            return version
        row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        try:
            return int(row[0]) if row else None
        except ValueError:
            return None

    def _set_version(self, version: int) -> None:
        """In the migration's transaction. The meta row is kept too, for older prima-memory
        versions, which read only that."""
        self.db.execute(f"PRAGMA user_version = {int(version)}")
        self.set_meta("schema_version", version)

    @property
    def schema_version(self) -> int | None:
        return self._version()

    def close(self) -> None:
        with self._errors():
            self.db.close()

    def _errors(self) -> _Errors:
        """`with store._errors():` driver errors raised inside, as the store's own (see _own),
        in one line."""
        return _Errors(self)

    def write(self, wait: float | None = None) -> _Transaction:
        """`with store.write():` the one way to write: commits, or rolls back on an exception.
        It holds the write lock from its start (waiting up to the busy timeout, or `wait`
        seconds, for another writer: Busy after that), so what it reads stays true until it
        commits: a deferred transaction that reads and then writes gets "database is locked" at
        once when another process writes meanwhile, since SQLite cannot wait there. Inside
        another write (or steps) it is a savepoint of it."""
        return _Transaction(self, True, wait)

    def read(self) -> _Transaction:
        """`with store.read():` reads that see one state of the index (a read transaction),
        unless in one already."""
        return _Transaction(self, False)

    def steps(self, max_bytes: int, max_seconds: float) -> _Stepped:
        """`with store.steps(...) as steps:` long work (an index run over many files) as one
        write committed in steps (see Steps): committed at the end, rolled back on an
        exception."""
        return _Stepped(self, max_bytes, max_seconds)

    def _chunked(self, sql: str, ids, before: tuple = (), after: tuple = ()) -> Iterator[tuple]:
        """The rows of `sql` for every id of `ids`, its "{}" an `IN (...)` list. Numbers and
        texts go as one JSON array (json_each): one statement, prepared once whatever their
        number, where a list of ?s was prepared again for each length (a cold index: a
        thousand times). Anything else (blobs) is asked 500 at a time (SQLite's limit on bound
        values is lower on some builds)."""
        ids = list(ids)
        if ids and all(type(i) is int or type(i) is str for i in ids):
            yield from self.db.execute(sql.format("SELECT value FROM json_each(?)"),
                                       (*before, jsontext.dumps(ids, compact=True), *after))
            return
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            yield from self.db.execute(sql.format(",".join("?" * len(part))),
                                       (*before, *part, *after))

    # -- tokens and terms ----------------------------------------------------------------------

    def _tokenize(self, text: str, reason: int) -> Iterable:
        if self._tokenizer is None:
            self._tokenizer = self.db.fts5_tokenizer("unicode61", _TOKENIZER_ARGS)
        # the tokens alone, as str (unicode61 makes no colocated ones): half the time of tuples
        return self._tokenizer(text.encode("utf-8"), reason, None, include_offsets=False,
                               include_colocated=False)

    def tokens(self, text: str) -> set[str]:
        """The distinct tokens the keyword index stores for this text (lower case). Read a
        piece at a time, cut at white space (which no token spans): the whole text through the
        tokenizer costs a third less than its distinct words split off first, and its pieces
        bound the list of tokens held at once."""
        out: set[str] = set()
        at, n = 0, len(text)
        while at < n:
            end = n if n - at <= _TOKENS_PIECE else _after_space(text, at + _TOKENS_PIECE)
            out.update(self._tokenize(index_text(text[at:end]), apsw.FTS5_TOKENIZE_DOCUMENT))
            at = end
        return out

    def token_list(self, text: str) -> list[str]:
        return list(self._tokenize(index_text(text), apsw.FTS5_TOKENIZE_QUERY))

    def add_terms(self, terms) -> None:
        """Add tokens to the vocabulary (`index_terms` makes them findable by substring)."""
        self.db.executemany("INSERT OR IGNORE INTO terms(term) VALUES (?)", ((t,) for t in terms))

    def index_terms(self) -> None:
        """Put the terms added since the last call into the trigram index (ids only grow), once
        per transaction: per-call trigram inserts cost more than all the rest of indexing."""
        done = int(self.get_meta("terms_indexed", 0))
        last = self.db.execute("SELECT COALESCE(max(id), 0) FROM terms").get
        if last > done:
            self.db.execute("INSERT INTO terms_tri(rowid, term) SELECT id, term FROM terms "
                            "WHERE id > ?", (done,))
            self.set_meta("terms_indexed", last)

    def terms_containing(self, run: str, limit: int) -> list[str] | None:
        """Index terms that contain `run`; None when more than `limit` do (too broad to list)."""
        if len(run) >= 3:
            rows = self.db.execute("SELECT term FROM terms_tri WHERE term LIKE ? LIMIT ?",
                                   (f"%{run}%", limit + 1))
        else:
            rows = self.db.execute("SELECT term FROM terms WHERE instr(term, ?) > 0 LIMIT ?",
                                   (run, limit + 1))
        out = [r[0] for r in rows]
        return None if len(out) > limit else out

    def terms_starting(self, stem: str, limit: int) -> list[str]:
        """Index terms that start with `stem`, at most `limit` (the shortest first)."""
        return [r[0] for r in self.db.execute(
            "SELECT term FROM terms WHERE term >= ? AND term < ? ORDER BY length(term) LIMIT ?",
            (stem, stem + "\U0010ffff", limit))]

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

    def _unindex(self, rowid: int, text: str) -> None:
        """A message's keyword row, kept for the commit (_settle). SQLite's full-text index
        writes what it holds to disk whenever a statement that may fail starts (a statement
        savepoint), which each file's writes hold: written at once, a cold index made a
        thousand small segments and merged them again and again (a sixth of its time)."""
        old = self._unindexed.get(rowid)
        if text:
            self._unindexed[rowid] = index_text(text)
            self.unindexed_chars += len(text)
        elif old is None:
            return
        else:
            del self._unindexed[rowid]
        self._undo.append((rowid, old))

    def _rewind(self, mark: int) -> None:
        """The keyword rows as they were when a savepoint rolled back now began."""
        while len(self._undo) > mark:
            rowid, old = self._undo.pop()
            if old is None:
                self._unindexed.pop(rowid, None)
            else:
                self._unindexed[rowid] = old

    def _settle(self) -> None:
        """Just before a commit: the keyword rows kept for it, and the titles changed (see
        _TITLES_STAGED), written in one go. A message deleted since its row was kept (a session
        read again) has none."""
        if self._unindexed:
            rows = self._unindexed
            alive = {i for (i,) in self._chunked("SELECT id FROM messages WHERE id IN ({})",
                                                  rows)}
            self.db.executemany("INSERT INTO messages_fts(rowid, text) VALUES (?, ?)",
                                ((i, t) for i, t in rows.items() if i in alive))
            self._forget_unindexed()
        if self.db.execute("SELECT EXISTS (SELECT 1 FROM titles_stale)").get:
            self.db.execute(_RETITLE)
        self._settled_at = self.db.total_changes()

    def _settled(self) -> None:
        """Before a keyword read: what this connection's own write has kept for its commit,
        written now, so the read sees it (a search, which writes nothing, asks nothing). Not
        inside a savepoint: its rollback would take rows kept before it with it."""
        if not self._savepoints and (self._unindexed or
                                     self.db.total_changes() != self._settled_at):
            self._settle()

    def _forget_unindexed(self) -> None:
        self._unindexed, self._undo, self.unindexed_chars = {}, [], 0

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

    def summarize_again(self, session: int, *, retitle: bool) -> None:
        """A session's tags and decision lines made again from the messages and changes it
        holds now, and (`retitle`: its first prompt changed) its title from its first prompt,
        none when it has none: after messages were deleted from it (drop_keyed), nothing of
        theirs stays in its summary (the title index follows: see _TITLES_STAGED)."""
        from . import tagging, titles  # (only where a forgotten session's copies are deleted)
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

    def forget_file(self, path: str) -> None:
        self.db.execute("DELETE FROM files WHERE path = ?", (_bind_path(path),))

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

    # -- files ---------------------------------------------------------------------------------

    _FILE_COLUMNS = ("path, session, sidechain, size, mtime_ns, inode, head_len, head_hash, "
                     "offset, status")
    _FILE_ROW = f"SELECT {_FILE_COLUMNS} FROM files"

    def files(self, source: str, paths=None, session_id: str | None = None) -> dict[str, FileRow]:
        """What the index knows of a source's files (parser state apart: see file_state): all
        of them, or those of `paths` and of its session `session_id`. Each source's rows are its
        own: one source's scans never take another's files for theirs."""
        if paths is None and session_id is None:
            return {_path(r[0]): FileRow(*r[1:]) for r in self.db.execute(
                f"{self._FILE_ROW} WHERE source = ?", (source,))}
        out = {_path(r[0]): FileRow(*r[1:]) for r in self._chunked(
            self._FILE_ROW + " WHERE path IN ({}) AND source = ?",
            [_bind_path(p) for p in paths or ()], after=(source,))}
        if session_id is not None:
            out.update((_path(r[0]), FileRow(*r[1:])) for r in self.db.execute(
                f"{self._FILE_ROW} WHERE session IN (SELECT id FROM sessions WHERE "
                "session_id = ? AND source = ?)", (session_id, source)))
        return out

    def file_paths(self, source: str) -> set[str]:
        return {_path(r[0]) for r in self.db.execute("SELECT path FROM files WHERE source = ?",
                                                     (source,))}

    # (`+source`: by time, or by rowid, not through files_source, which would list them all)
    def recent_file_paths(self, source: str, since_mtime_ns: int) -> set[str]:
        return {_path(r[0]) for r in self.db.execute(
            "SELECT path FROM files WHERE (mtime_ns >= ? OR mtime_ns IS NULL) AND +source = ?",
            (since_mtime_ns, source))}

    def last_file_rowid(self) -> int:
        return self.db.execute("SELECT COALESCE(max(rowid), 0) FROM files").get

    def files_after(self, source: str, rowid: int, n: int) -> list[tuple[int, str, FileRow]]:
        """(rowid, path, what the index knows of it) of the next n files after rowid: a sweep
        through all of them in turn, read in rowid order (neighbouring pages, not a look-up
        of each path)."""
        return [(r[0], _path(r[1]), FileRow(*r[2:])) for r in self.db.execute(
            f"SELECT rowid, {self._FILE_COLUMNS} FROM files WHERE rowid > ? AND +source = ? "
            "ORDER BY rowid LIMIT ?", (rowid, source, n))]

    def unknown_record_types(self, source: str) -> dict[str, int]:
        """Record types a source's reader met and does not know (its parser state's "unk"), with
        the number of this workspace's files showing each."""
        counts: dict[str, int] = {}
        for (state,) in self.db.execute(
                "SELECT state FROM files WHERE source = ? AND status = 'ok' "
                "AND instr(state, '\"unk\":') > 0", (source,)):
            try:
                unk = jsontext.loads(state).get("unk")
            except (ValueError, AttributeError):
                continue
            for kind in {k for k in unk if isinstance(k, str)} if isinstance(unk, list) else ():
                counts[kind] = counts.get(kind, 0) + 1
        return counts

    def file_state(self, path: str) -> str | None:
        row = self.db.execute("SELECT state FROM files WHERE path = ?",
                              (_bind_path(path),)).fetchone()
        return row[0] if row else None

    def main_file_state(self, session: int) -> str | None:
        """The parser state of a session's main file (not a subagent's)."""
        row = self.db.execute("SELECT state FROM files WHERE session = ? AND sidechain = 0 "
                              "AND status = 'ok'", (session,)).fetchone()
        return row[0] if row else None

    def save_file(self, path, source, session, sidechain, size, mtime_ns, inode, head_len,
                  head_hash, offset, state, status="ok") -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO files(path, source, session, sidechain, size, mtime_ns, inode, "
            "head_len, head_hash, offset, state, status) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (_bind_path(path), source, session, int(sidechain), size, mtime_ns, inode, head_len,
             head_hash, offset, state, status))

    def file_read(self, path: str, size: int) -> None:
        """The file is read to its end as it was at `size` (save_file leaves the size out until
        then, so a read stopped half way is not taken for a whole one)."""
        self.db.execute("UPDATE files SET size = ? WHERE path = ?", (size, _bind_path(path)))

    def file_failed(self, path, source, size, mtime_ns, inode, why: str) -> None:
        """A file that could not be read, as it was then: not read again until it changes.
        What the index holds of it (its session, offset and parser state) stays; `why` goes
        into its state, as "failed", for status."""
        row = self.db.execute("SELECT state FROM files WHERE path = ?",
                              (_bind_path(path),)).fetchone()
        try:
            state = jsontext.loads(row[0]) if row and row[0] else {}
        except ValueError:
            state = {}
        state = dict(state, failed=why) if isinstance(state, dict) else {"failed": why}
        if row:
            self.db.execute("UPDATE files SET size = ?, mtime_ns = ?, inode = ?, state = ?, "
                            "status = ? WHERE path = ?",
                            (size, mtime_ns, inode, jsontext.dumps(state), FAILED,
                             _bind_path(path)))
        else:
            self.save_file(path, source, None, 0, size, mtime_ns, inode, None, None, 0,
                           jsontext.dumps(state), FAILED)

    def owe(self, session_id: str) -> None:
        """A session whose Stop could not index it (busy, out of time): the next quick run does."""
        self.set_meta(f"owed:{session_id}", 1)

    def owed(self) -> list[str]:
        return [r[0][5:] for r in self.db.execute("SELECT key FROM meta WHERE key LIKE 'owed:%'")]

    def settle(self, session_ids) -> None:
        self.db.executemany("DELETE FROM meta WHERE key = ?", ((f"owed:{s}",) for s in session_ids))

    # -- meta --------------------------------------------------------------------------------

    def get_meta(self, key: str, default=None):
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (text_of(key),)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value) -> None:
        # (keys may name a folder: one not UTF-8 is keyed by its U+FFFD spelling, alike both ways)
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                        (text_of(key), None if value is None else str(value)))

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

    def messages(self, session: int) -> list[tuple]:
        """(id, role, ts, sidechain, text) in conversation order."""
        return list(self.db.execute(
            "SELECT id, role, ts, sidechain, text FROM messages WHERE session = ? AND text != '' "
            "ORDER BY sidechain, ts, id", (session,)))

    def message_times(self, ids) -> dict[int, float | None]:
        return dict(self._chunked("SELECT id, ts FROM messages WHERE id IN ({})", ids))

    def messages_around(self, message_id: int, n: int) -> list[tuple]:
        """(id, role, ts, sidechain, text): the message and up to n on each side of it, in its
        own thread (main or subagents)."""
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
        return before[::-1] + after

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

    def exchanges(self, session: int) -> list[tuple]:
        """(id, ts, prompt, reply) of the main thread, in order."""
        return list(self.db.execute(
            "SELECT e.id, e.ts, e.prompt, e.reply FROM exchanges e JOIN messages m ON m.id = e.id "
            "WHERE e.session = ? AND m.sidechain = 0 ORDER BY e.ts, e.id", (session,)))

    def file_changes(self, session: int) -> list[tuple]:
        """(path, tool, explanation, ts) in order."""
        return list(self.db.execute(
            "SELECT path, tool, explanation, ts FROM file_changes WHERE session = ? ORDER BY ts, id",
            (session,)))

    def tool_calls(self, session: int) -> list[tuple]:
        """(ts, sidechain, tool, target, line, kind, id and ts of the message it follows, the
        call's id in its file) of a session's calls, in the order they were read; the message's
        are None where this session holds no message of that key."""
        return list(self.db.execute(
            "SELECT t.ts, t.sidechain, t.tool, t.target, t.line, t.kind, m.id, m.ts, t.call "
            "FROM tool_calls t LEFT JOIN messages m ON m.session = t.session "
            "AND m.key = t.message_key WHERE t.session = ? ORDER BY t.id", (session,)))

    def last_call(self, session: int, tool: str | None = None) -> tuple | None:
        """(ts, tool, target, line) of the main thread's last tool call (of `tool`, if given)."""
        return self.db.execute(
            "SELECT ts, tool, target, line FROM tool_calls WHERE session = ? AND sidechain = 0 "
            "AND (? IS NULL OR tool = ?) ORDER BY id DESC LIMIT 1", (session, tool, tool)).fetchone()

    def tool_counts(self, session: int) -> dict[str, int]:
        """tool -> how many calls of it the session made, the most used first."""
        return dict(self.db.execute("SELECT tool, count(*) FROM tool_calls WHERE session = ? "
                                    "GROUP BY tool ORDER BY count(*) DESC, tool", (session,)))

    def changed_paths(self, session: int) -> list[str]:
        return [r[0] for r in self.db.execute(
            "SELECT path FROM file_changes WHERE session = ? GROUP BY path ORDER BY min(id)",
            (session,))]

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

    # -- keyword matching ----------------------------------------------------------------------

    def count_matching(self, match_expr: str) -> dict[int, int]:
        """session -> number of messages matching an FTS5 expression of quoted terms."""
        self._settled()
        return self._per_session(f"rowid >> {SHIFT}", "messages_fts WHERE messages_fts MATCH ?",
                                 (match_expr,))

    def _per_session(self, session: str, source: str, args) -> dict[int, int]:
        """session -> how many rows of `source` (SQL after FROM) name it, `session` being the
        expression that does. The rows come back as one string, a character per row whose code
        point is its session (the surrogates skipped), which Counter counts in C: a common
        word's 20,000 matching messages cost 3 ms so, 5 as rows, 9 grouped by SQLite. Sessions
        past what code points can number are grouped by SQLite."""
        last = self.db.execute("SELECT max(id) FROM sessions").get or 0
        if last > _CHAR_SESSIONS:
            return dict(self.db.execute(f"SELECT {session}, count(*) FROM {source} GROUP BY 1",
                                        args))
        point = session if last < 55296 else f"({session}) + (({session}) >= 55296) * 2048"
        text = self.db.execute(f"SELECT group_concat(char({point}), '') FROM {source}",
                               args).get
        # the code points as machine ints (UTF-32 after its byte-order mark), counted
        counted = Counter(memoryview((text or "").encode("utf-32")).cast("I")[1:])
        if last >= 55296:  # (sessions past the surrogates' code points)
            return {(sid - 2048 if sid >= 0xE000 else sid): n for sid, n in counted.items()}
        return counted

    def message_ids_matching(self, match_expr: str, limit: int = -1) -> set[int]:
        """The messages matching an FTS5 expression (at most `limit` of them: -1, all)."""
        self._settled()
        return {r[0] for r in self.db.execute(
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? LIMIT ?",
            (match_expr, limit))}

    def session_facts(self, since=None, until=None, branch=None, tag=None, source=None,
                      extracts: bool = False, ids=None):
        """(id, started_at, ended_at, files_count) of each session that a search may return:
        overlapping since..until, on the branch, carrying the tag, from the source; the
        extracts' own records only when asked (a deep search); of `ids` alone when given."""
        where, args = _returnable(since, until, branch, tag, source, extracts)
        sql = f"SELECT id, started_at, ended_at, files_count FROM sessions WHERE {where}"
        if ids is not None:
            return self._chunked(sql + " AND id IN ({})", ids, before=args)
        return self.db.execute(sql, args)

    def best_facts(self, points: dict[int, float], n: int, since=None, until=None,
                   branch=None, tag=None, source=None, extracts: bool = False) -> list[tuple]:
        """session_facts() of the best `n` of `points`' sessions (session -> its points so far)
        that a search may return, each scoring its points and 1 a file changed, 5 at most: the
        highest first, then the latest to end."""
        if not points:
            return []
        where, args = _returnable(since, until, branch, tag, source, extracts)
        given = "{" + ",".join(f'"{sid}":{pts!r}' for sid, pts in points.items()) + "}"
        return list(self.db.execute(
            "SELECT id, started_at, ended_at, files_count FROM (SELECT CAST(key AS INTEGER) "
            f"AS sid, value AS pts FROM json_each(?)) JOIN sessions ON id = sid WHERE {where} "
            "ORDER BY pts + min(5, files_count) DESC, ended_at DESC, id LIMIT ?",
            (given, *args, n)))

    def sessions_with_title_containing(self, text: str) -> set[int]:
        """Sessions whose title contains `text` (folded), compared folded: a phrase of the
        titles' trigrams is a substring of the folded title (a shorter text, which has no
        trigram, or one with a NUL, which ends an FTS5 query, is looked for in every title)."""
        if len(text) < 3 or "\0" in text:
            return {sid for sid, _t in self._containing(
                f"SELECT id, {_TITLE} AS t FROM sessions", text)}
        phrase = '"' + text.replace('"', '""') + '"'
        self._settled()
        return {r[0] for r in self.db.execute(
            "SELECT rowid FROM titles_tri WHERE titles_tri MATCH ?", (phrase,))}

    def sessions_with_path_containing(self, text: str) -> dict[int, int]:
        """session -> number of distinct changed paths containing `text` (folded), compared
        folded."""
        paths = self._paths_with(text)
        out: dict[int, int] = {}
        for i in range(0, len(paths), 500):  # (SQLite's limit on bound values)
            part = paths[i:i + 500]
            got = self._per_session("session", "path_sessions WHERE path IN "
                                    f"({','.join('?' * len(part))})", part)
            if not out:
                out = got
                continue
            for sid, n in got.items():
                out[sid] = out.get(sid, 0) + n
        return out

    def _paths_with(self, text: str) -> list[str]:
        return [p for p, _t in self._containing("SELECT path, path AS t FROM changed_paths", text)]

    def paths_containing(self, text: str) -> dict[str, list[int]]:
        """changed path containing `text` (folded) -> the sessions that changed it."""
        paths = self._paths_with(text)
        out: dict[str, list[int]] = {}
        for i in range(0, len(paths), 500):  # (SQLite's limit on bound values)
            part = paths[i:i + 500]
            for path, sid in self.db.execute("SELECT path, session FROM path_sessions WHERE "
                                              f"path IN ({','.join('?' * len(part))})", part):
                out.setdefault(path, []).append(sid)
        return out

    def started_since(self, since: float) -> dict[int, float]:
        """session -> its start, of the sessions started after `since` (recency's week)."""
        return dict(self.db.execute("SELECT id, started_at FROM sessions WHERE started_at > ?",
                                    (since,)))

    def _containing(self, select: str, text: str):
        """(id, t) of the rows of `select` whose t contains `text` (folded), in one pass: LIKE
        ignores ASCII case, exact for an ASCII query against ASCII text, which is most; text
        beyond ASCII is compared folded (in "cafe\u0301" LIKE sees "cafe", folded it is
        "café")."""
        if not text.isascii():
            return [(i, t) for i, t in self.db.execute(select) if text in fold(t)]
        rows = self.db.execute(f"SELECT * FROM ({select}) WHERE t GLOB ?1 OR t LIKE ?2 "
                               "ESCAPE '\\'", (_NON_ASCII, _like(text)))
        return [(i, t) for i, t in rows if t.isascii() or text in fold(t)]

    def sessions_by_id(self, ids) -> list[SessionRow]:
        return [SessionRow(*r) for r in self._chunked(
            f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id IN ({{}})", ids)]

    def all_message_texts(self):
        """(id, text) of every message with text: the slow path for queries with no usable token.
        (A generator here, not a cursor, so a text that fails to decode fails in this module:
        see is_corruption.)"""
        yield from self.db.execute("SELECT id, text FROM messages WHERE text != ''")

    def session_matches(self, session: int, match_expr: str):
        """(id, text) of a session's messages matching an FTS5 expression, newest first,
        their texts read a few at a time (the caller may stop early)."""
        lo, hi = session << SHIFT, ((session + 1) << SHIFT) - 1
        self._settled()
        ids = [r[0] for r in self.db.execute(
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? AND rowid BETWEEN ? AND ? "
            "ORDER BY rowid DESC", (match_expr, lo, hi))]
        for a, b in ((0, 3), *((i, i + 8) for i in range(3, len(ids), 8))):  # (3: enough, mostly)
            texts = self.message_texts(ids[a:b])
            yield from ((mid, texts[mid]) for mid in ids[a:b] if mid in texts)

    def session_message_texts(self, session: int, newest_first: bool = False):
        """(id, text) of a session's messages: its rowid range, in id order."""
        lo, hi = session << SHIFT, ((session + 1) << SHIFT) - 1
        order = "DESC" if newest_first else "ASC"
        yield from self.db.execute(f"SELECT id, text FROM messages WHERE id BETWEEN ? AND ? "
                                   f"AND text != '' ORDER BY id {order}", (lo, hi))

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

    def version(self) -> tuple[int, int]:
        """Changes whenever anything is committed to the index, by this connection or another:
        what a reader keeps of it (a search of all projects' exclusions) is read again."""
        return self.db.execute("PRAGMA data_version").get, self.db.total_changes()

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
                    from .forgotten import copies  # (only where there are tombstones)
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


# The context managers of the store's transactions, as classes: contextlib's generators would
# cost every process that opens an index contextlib's import (and functools'), 1.6 ms.

class _Errors:
    __slots__ = ("store",)

    def __init__(self, store: Store):
        self.store = store

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, e, tb) -> None:  # (None: an exception goes on)
        if kind is not None and issubclass(kind, apsw.Error):
            raise _own(e, self.store.db, self.store.path) from None
        if kind is UnicodeDecodeError and is_corruption(e):  # (text a damaged page left)
            raise CorruptIndex(f"{self.store.path}: {e}", self.store.path) from None


class _Transaction(_Errors):
    """Store.write (`writes`) or Store.read: a transaction, or inside one already a savepoint
    (a write) or nothing (a read)."""
    __slots__ = ("writes", "wait", "nested", "mark")

    def __init__(self, store: Store, writes: bool, wait: float | None = None):
        super().__init__(store)
        self.writes, self.wait, self.nested, self.mark = writes, wait, False, 0

    def __enter__(self) -> Store:  # type: ignore[override]
        store, db = self.store, self.store.db
        with _Errors(store):
            self.nested = db.in_transaction
            if self.nested:
                if self.writes:
                    db.__enter__()  # a savepoint
                    self.mark = len(store._undo)
                    store._savepoints += 1
            elif not self.writes:
                db.execute("BEGIN")
            else:
                if self.wait is not None:
                    db.setbusytimeout(int(self.wait * 1000))
                try:
                    db.execute("BEGIN IMMEDIATE")
                finally:
                    if self.wait is not None:
                        db.setbusytimeout(BUSY_MS)
        return store

    def __exit__(self, kind, e, tb) -> None:
        store, db = self.store, self.store.db
        with _Errors(store):
            if self.nested:
                if self.writes:
                    store._savepoints -= 1
                    if kind is None:
                        db.__exit__(kind, e, tb)  # released
                    elif db.in_transaction:
                        store._rewind(self.mark)
                        db.__exit__(kind, e, tb)  # rolled back
                    else:
                        # SQLite rolled the whole transaction back itself (a full disk as it
                        # spilled pages to the log): no savepoint is left, and apsw's "no such
                        # savepoint" would hide the error in flight (it counts its savepoint
                        # closed all the same)
                        store._forget_unindexed()
                        try:
                            db.__exit__(kind, e, tb)
                        except apsw.SQLError:
                            pass
            elif not self.writes:
                db.execute("COMMIT")
            elif kind is not None:
                store._rollback()
            else:
                try:
                    store._settle()
                    db.execute("COMMIT")
                except BaseException:
                    store._rollback()
                    raise
        super().__exit__(kind, e, tb)


class _Stepped(_Errors):
    __slots__ = ("steps",)

    def __init__(self, store: Store, max_bytes: int, max_seconds: float):
        super().__init__(store)
        with _Errors(store):
            self.steps = Steps(store, max_bytes, max_seconds)

    def __enter__(self) -> Steps:  # type: ignore[override]
        return self.steps

    def __exit__(self, kind, e, tb) -> None:
        with _Errors(self.store):
            self.steps.close(commit=kind is None)
        super().__exit__(kind, e, tb)


class Steps:
    """One transaction over many files: a commit per file costs more than the parsing. The
    caller reports each file's bytes once its lines, offset and state are written; every
    `max_bytes` or `max_seconds` it commits, with the touched sessions' counts and the new
    terms sealed first, so a kill at any point leaves a consistent index the next run continues."""

    def __init__(self, store: Store, max_bytes: int, max_seconds: float):
        self.store = store
        self.max_bytes, self.max_seconds = max_bytes, max_seconds
        self.size = 0
        self.sessions: set[int] = set()  # touched since the last commit
        self.started = time.monotonic()
        store.db.execute("BEGIN IMMEDIATE")

    def added(self, n: int, sessions=()) -> None:
        """`n` more bytes are written, with records of `sessions`: commit if a step is done."""
        self.size += n
        self.sessions.update(sessions)
        if self.size >= self.max_bytes or time.monotonic() - self.started > self.max_seconds:
            self._seal()
            self.store.db.execute("COMMIT; BEGIN IMMEDIATE")
            self.size = 0
            self.started = time.monotonic()
        elif self.store.unindexed_chars > UNINDEXED_CHARS:  # (between files: no savepoint open)
            self.store._settle()

    def _seal(self) -> None:
        for sid in self.sessions:
            self.store.refresh_counts(sid)
        self.sessions.clear()
        self.store.index_terms()
        self.store._settle()

    def close(self, commit: bool) -> None:
        if not commit:  # (the keyword rows kept go too, when SQLite has rolled back itself)
            self.store._rollback()
        elif self.store.db.in_transaction:
            self._seal()
            self.store.db.execute("COMMIT")


def _errors_carry_the_path(cls):
    """Every public method of the store raises the store's own errors, carrying its path: a
    read of several indexes knows which one is damaged (scope.Scope.guarded) from the error
    alone. Those that hand back a transaction translate their own (_Errors)."""
    def wrap(fn):
        def run(self, *args, **kw):
            try:
                return fn(self, *args, **kw)
            except StoreError:
                raise
            except Exception as e:
                if isinstance(e, apsw.Error):
                    raise _own(e, self.db, self.path) from None
                if isinstance(e, UnicodeDecodeError) and is_corruption(e):
                    raise CorruptIndex(f"{self.path}: {e}", self.path) from None
                raise
        run.__name__, run.__qualname__, run.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
        run.__wrapped__ = fn  # type: ignore[attr-defined]
        return run
    for name, fn in list(vars(cls).items()):
        if not name.startswith("_") and callable(fn) and name not in ("write", "read", "steps"):
            setattr(cls, name, wrap(fn))
    return cls


def _to_v4(store: Store) -> None:
    """Claude Code records the branch "HEAD" outside git: no branch. Sessions where one of
    prima-memory's commands was typed are read again, so the command runs drop out."""
    store.db.execute(_TOOL_SCHEMA)  # (clear_session clears tool calls too: their table first)
    store.db.execute("UPDATE sessions SET branch = NULL WHERE branch = 'HEAD'")
    for (session,) in list(store.db.execute(
            "SELECT DISTINCT session FROM messages WHERE role = 'user' "
            "AND text LIKE '/prima-memory:%'")):
        store.clear_session(session)


def _to_v5(store: Store) -> None:
    """Matching folds text the same way on both sides now (index_text): messages beyond ASCII
    are indexed again as folded, and their words join the vocabulary."""
    db = store.db
    rows = [(i, t, f) for i, t in db.execute("SELECT id, text FROM messages WHERE text GLOB ?",
                                               (_NON_ASCII,)) if (f := index_text(t)) != t]
    db.executemany("DELETE FROM messages_fts WHERE rowid = ?", ((i,) for i, _t, _f in rows))
    db.executemany("INSERT INTO messages_fts(rowid, text) VALUES (?, ?)",
                   ((i, f) for i, _t, f in rows))
    terms: set[str] = set()
    for _i, t, _f in rows:
        terms |= store.tokens(t)
    store.add_terms(terms)
    store.index_terms()


def _to_v6(store: Store) -> None:
    """Indexes that keep a hook's work to what changed (see _SCHEMA); the caller then records
    the version in user_version, where it is read from now on."""
    store.db.execute("CREATE INDEX IF NOT EXISTS messages_counted ON messages(session) "
                     "WHERE sidechain = 0 AND text != ''")
    store.db.execute("CREATE INDEX IF NOT EXISTS files_mtime ON files(mtime_ns)")
    store.db.execute("CREATE INDEX IF NOT EXISTS sessions_ended ON sessions(ended_at)")
    store.db.execute("CREATE INDEX IF NOT EXISTS sessions_unfinished ON sessions(id) "
                     "WHERE unfinished = 1")


def _to_v7(store: Store) -> None:
    """Room for embeddings: nothing else changes, every exchange starts pending."""
    store.db.execute(_VECTOR_SCHEMA)


def _to_v8(store: Store) -> None:
    """SIMILAR_TO edges: every embedded exchange starts pending, its vectors kept."""
    store.db.execute(_EDGE_SCHEMA)


def _to_v9(store: Store) -> None:
    """Vectors are keyed by the build that made them too. Nothing is thrown away here: the
    keys in use are listed, and the first embedder to run keeps the vectors it can prove are
    its own (semantic.Embedding.adopt), and makes the others again."""
    store._list_legacy_keys()


def _to_v10(store: Store) -> None:
    """A message copied into another session is stored once. The Claude Code sessions that
    share messages are read again (their vectors are kept by text), and the one that had them
    first keeps them (Indexer._copies)."""
    db = store.db
    if "origin" not in {r[1] for r in db.execute("PRAGMA table_info(sessions)")}:
        db.execute("ALTER TABLE sessions ADD COLUMN origin INTEGER")
    db.execute(_KEY_INDEX)
    db.execute(_TOOL_SCHEMA)  # (clear_session clears tool calls too: their table first)
    # (Claude Code's are the only keys that name a message across sessions: SessionDelta.shared_keys)
    for (session,) in list(db.execute(
            "SELECT DISTINCT m.session FROM messages m JOIN sessions s ON s.id = m.session "
            "WHERE s.source = 'claude-code' AND EXISTS (SELECT 1 FROM messages o "
            "JOIN sessions t ON t.id = o.session WHERE o.key = m.key AND o.session != m.session "
            "AND t.source = 'claude-code')")):
        store.clear_session(session)


def _to_v11(store: Store) -> None:
    """Tool calls are kept, and an index from before holds none. Nothing is cleared (every
    session answers as before meanwhile; vectors and edges stay): each Claude Code and Codex
    file it read is marked ("tc" in its parser state) to have its calls read from its start
    (Indexer._backfill) when the indexer next reads it, which it does soon, its size being
    forgotten as after a read cut short; a VS Code chat is read whole again anyway."""
    db = store.db
    db.execute(_TOOL_SCHEMA)
    db.execute("UPDATE files SET state = json_set(CASE WHEN json_valid(state) AND "
               "json_type(state) = 'object' THEN state ELSE '{}' END, '$.tc', 1) "
               "WHERE source IN ('claude-code', 'codex') AND status IN ('ok', 'failed') "
               "AND offset > 0")
    db.execute("UPDATE files SET size = NULL WHERE source IN ('claude-code', 'codex', "
               "'copilot-chat') AND status = 'ok'")


def _to_v12(store: Store) -> None:
    """The distinct changed paths, listed from the changes held (see _PATH_SCHEMA)."""
    store.db.execute(_PATH_SCHEMA)
    store.db.execute("INSERT OR IGNORE INTO changed_paths(path) SELECT path FROM file_changes")


def _to_v13(store: Store) -> None:
    """The files by source (see _FILES_BY_SOURCE)."""
    store.db.execute(_FILES_BY_SOURCE)


def _to_v14(store: Store) -> None:
    """Titles, changed paths' sessions and starts indexed (see _LOOKUP_SCHEMA), from what is
    held."""
    db = store.db
    db.execute(_LOOKUP_SCHEMA)
    db.execute("INSERT INTO titles_tri(titles_tri) VALUES ('delete-all')")  # (made afresh)
    db.execute(f"INSERT INTO titles_tri(rowid, title) SELECT id, prima_fold({_TITLE}) "
               "FROM sessions")
    db.execute("INSERT OR IGNORE INTO path_sessions(path, session) SELECT path, session "
               "FROM file_changes")


def _to_v15(store: Store) -> None:
    """The token of the file of vectors (see _VECTOR_TOKEN)."""
    store.db.execute(_VECTOR_TOKEN)


def _to_v16(store: Store) -> None:
    """The changed paths kept from path_sessions (see _PATHS_FROM_PAIRS): both already hold
    what every change names. Titles indexed at the commit (see _TITLES_STAGED)."""
    store.db.execute(_PATHS_FROM_PAIRS)
    store.db.execute(_TITLES_STAGED)


# version -> the step that brings an index of that version to the next; older ones are rebuilt
_errors_carry_the_path(Store)

_MIGRATIONS = {3: _to_v4, 4: _to_v5, 5: _to_v6, 6: _to_v7, 7: _to_v8, 8: _to_v9, 9: _to_v10,
               10: _to_v11, 11: _to_v12, 12: _to_v13, 13: _to_v14, 14: _to_v15, 15: _to_v16}


# The sessions' columns with every text one read as bytes (see _lenient), for recovery.
_BLOB_SESSION_COLUMNS = ", ".join(
    c if c in ("id", "started_at", "ended_at", "message_count", "files_count", "archived")
    else f"CAST({c} AS BLOB)" for c in _SESSION_FIELDS.split()[:-1])


def _lenient(db, sql: str, args=()) -> list[tuple]:
    """Rows of a query that selects its text columns AS BLOB, decoded here: bytes a damaged page
    left in a text become U+FFFD instead of failing the whole read."""
    return [tuple(v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in r)
            for r in db.execute(sql, args)]


def is_corruption(e: BaseException) -> bool:
    """An error that says the index itself is damaged: SQLite's own, or text that is no longer
    UTF-8 (random bytes in a text page pass SQLite's checks and fail only when a row is read).
    A decode error counts only where it came from reading the index, in this module."""
    if isinstance(e, (CorruptIndex, apsw.CorruptError, apsw.NotADBError)):
        return True
    if isinstance(e, UnicodeDecodeError):
        tb = e.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        return tb is not None and tb.tb_frame.f_code.co_filename == __file__
    return False


class SchemaMismatch(StoreError):
    def __init__(self, found):
        super().__init__(f"index schema version {found}, this prima-memory needs {SCHEMA_VERSION}")
        self.found = found


def move_aside(path: str, why: str) -> str:
    """Rename a database (and its -wal, -shm, -journal) out of the way; returns the new name."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    dest = f"{path}.{why}-{stamp}"
    n = 1
    while os.path.exists(dest):
        n += 1
        dest = f"{path}.{why}-{stamp}-{n}"
    os.replace(path, dest)
    for suffix in ("-wal", "-shm", "-journal"):
        if os.path.lexists(path + suffix):
            try:
                os.replace(path + suffix, dest + suffix)
            except OSError:
                pass
    return dest
