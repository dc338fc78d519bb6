"""The index's tables, indexes and triggers (SCHEMA_VERSION), and the forward-only migrations
from each older version to the next."""
from __future__ import annotations

from ..shared import _SESSION_FIELDS
from .folding import _NON_ASCII, index_text


TYPE_CHECKING = False
if TYPE_CHECKING:
    from .store import Store

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
# and titles indexed at the commit; 17: the error a failed call met, by its line and key
SCHEMA_VERSION = 17

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

# SIMILAR_TO edges (docs/design.md § Find similar): exchange pairs of different sessions and
# different texts whose vectors (best window against best window) have cosine >= 0.85, bounded: an exchange's nearest
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

# A failed call's error (records.CallError: the line naming it and its key, failures.py), looked
# up by key when a command fails again (api.error_fixes).
_CALL_ERRORS = """
ALTER TABLE tool_calls ADD COLUMN error TEXT;
ALTER TABLE tool_calls ADD COLUMN error_key TEXT;
CREATE INDEX tool_calls_error ON tool_calls(error_key) WHERE error_key IS NOT NULL;
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
{_CALL_ERRORS}
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

# the title precedence (docs/design.md § Transcripts), stored normalised
_TITLE = _TITLE_OF.replace("{0}.", "")
SESSION_COLUMNS = ("id, source, session_id, label, cwd, branch, author, title_custom, "
                   "title_summary, title_first, started_at, ended_at, tags, decisions, "
                   f"message_count, files_count, archived, extract_path, {_TITLE}")

_INSERT_MESSAGE = ("INSERT INTO messages(id, session, key, role, ts, sidechain, pair, text) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?)")


_META_SQL = "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)"


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


def _to_v17(store: Store) -> None:
    """Failed calls keep their error (see _CALL_ERRORS). The errors of what an index read before
    come as its tool calls came (_to_v11): each Claude Code file it read is marked to have its
    calls read again from its start (Indexer._backfill) when the indexer next reads it."""
    db = store.db
    if "error_key" not in {r[1] for r in db.execute("PRAGMA table_info(tool_calls)")}:
        db.execute(_CALL_ERRORS)  # (an index made with them, marked older: as _to_v10 does)
    db.execute("UPDATE files SET state = json_set(CASE WHEN json_valid(state) AND "
               "json_type(state) = 'object' THEN state ELSE '{}' END, '$.tc', 1) "
               "WHERE source = 'claude-code' AND status IN ('ok', 'failed') AND offset > 0")
    db.execute("UPDATE files SET size = NULL WHERE source = 'claude-code' AND status = 'ok'")


# version -> the step that brings an index of that version to the next; older ones are rebuilt
_MIGRATIONS = {3: _to_v4, 4: _to_v5, 5: _to_v6, 6: _to_v7, 7: _to_v8, 8: _to_v9, 9: _to_v10,
               10: _to_v11, 11: _to_v12, 12: _to_v13, 13: _to_v14, 14: _to_v15, 15: _to_v16,
               16: _to_v17}


# The sessions' columns with every text one read as bytes (see _lenient), for recovery.
_BLOB_SESSION_COLUMNS = ", ".join(
    c if c in ("id", "started_at", "ended_at", "message_count", "files_count", "archived")
    else f"CAST({c} AS BLOB)" for c in _SESSION_FIELDS.split()[:-1])
