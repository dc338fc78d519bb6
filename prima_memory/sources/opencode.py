"""OpenCode sessions as records (sst/opencode, now anomalyco/opencode: the terminal agent).

Where: its data folder, `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`, on Linux,
macOS and Windows alike (opencode takes it from the xdg-basedir package, which has no default of
its own per system: `%USERPROFILE%\\.local\\share\\opencode` on Windows).

What, in the order opencode wrote it:
- before 1.2, JSON files under `storage/`: `session/<projectID>/<id>.json`, `message/<id>/
  <msgID>.json`, `part/<msgID>/<partID>.json`. One session is many files: discover gives its
  session file, read takes its messages and parts, and its stat is made from them (_json_stat).
- 1.2 and later, one SQLite database, `opencode.db` (`opencode-<channel>.db` for a channel
  build, `$OPENCODE_DB` when set): tables `session`, `message` and `part` (`data`: JSON), and in
  newer builds `session_message` (one row per message, its parts inside). Each session is a
  member path `<db>#<session id>` with a stat from its rows (base.RowStat), the database is read
  read-only, one read transaction at a time. opencode copied the JSON sessions into the database
  and left the files: a session the database holds is read from there only.

A subagent's session (`parent_id`: the task tool's) is a side thread of the session that started
it: its messages, calls and changes come with its parent's session, marked sidechain, not as a
session of its own (as Claude Code's subagents are).

Indexed through sources/registry.py (snapshot mode: a session changed is read whole).
"""
from __future__ import annotations

import os
import stat

from ..records import FileChange, Message, SessionDelta
from ..workspace import is_within, read_plain
from . import names
from .base import RowStat, Source
from .listing import files, regular, unlisted, utf8_name, watch

SOURCE, LABEL, _AGENT = names.OPENCODE

BUSY_SECONDS = 1.0  # how long a read waits on a database OpenCode holds locked: then tried later
SESSION_FILE = 1 << 20  # a session's JSON file, a message's: a few hundred bytes each
MAX_FAMILY = 400  # of a session's subagents, the most read with it (a query's variables)

# What a reader of this version knows (state["unk"] names any other, which `status` counts):
# message-v2.ts's part types, session-message.ts's message types and an assistant's content.
_PARTS = {"text", "reasoning", "tool", "file", "patch", "step-start", "step-finish", "snapshot",
          "agent", "compaction", "subtask", "retry"}
_V2 = {"user", "assistant", "shell", "synthetic", "compaction", "agent-switched",
       "model-switched"}
KNOWN_TYPES = _PARTS | _V2 | {"role:user", "role:assistant"}

# The input field each of opencode's tools acts on, and what that is (packages/opencode/src/
# tool/*.ts); another tool (an MCP server's) is read as tool_calls reads any tool.
_TARGETS = {"bash": ("command", "command"), "read": ("filePath", "path"),
            "edit": ("filePath", "path"), "write": ("filePath", "path"),
            "multiedit": ("filePath", "path"), "list": ("path", "path"), "glob": ("pattern", ""),
            "grep": ("pattern", ""), "webfetch": ("url", "url"), "websearch": ("query", ""),
            "codesearch": ("query", ""), "task": ("description", ""), "skill": ("name", ""),
            "todowrite": ("", ""), "todoread": ("", "")}
_EDITS = ("edit", "write", "multiedit")  # a file changed: its filePath
_PATCHES = ("patch", "apply_patch")  # files changed: those its patchText names

_DEFAULT_TITLES = ("New session - ", "Child session - ")  # opencode's, until it names one


class OpenCode(Source):
    (name, label, product), mode, agent = names.OPENCODE, "snapshot", "OpenCode"
    # `opencode --session <id>` ("session id to continue", -s): opencode.ai/docs/cli
    resume = "opencode --session {id}"

    # -- where it looks ----------------------------------------------------------------------

    def data_dir(self) -> str:
        """opencode's Global.Path.data: xdg-basedir's data folder (XDG_DATA_HOME when set, as
        a path, else ~/.local/share on every system) + "opencode"."""
        base = os.environ.get("XDG_DATA_HOME", "")
        if not os.path.isabs(base):
            base = os.path.join(os.path.expanduser("~"), ".local", "share")
        return os.path.join(base, "opencode")

    def db_override(self) -> str | None:
        """$OPENCODE_DB: a database's path, or its name in the data folder (":memory:": none)."""
        db = os.environ.get("OPENCODE_DB", "")
        if not db or db == ":memory:":
            return None
        return db if os.path.isabs(db) else os.path.join(self.data_dir(), db)

    def locations(self, ws: str) -> list[str]:
        out = [self.data_dir()]
        db = self.db_override()
        if db and os.path.dirname(db) not in out:
            out.append(os.path.dirname(db))
        return out

    def databases(self, folders: list | None = None) -> list[str]:
        """opencode.db and each channel build's opencode-<channel>.db in the data folder (a link
        is never followed), and $OPENCODE_DB's. A data folder that cannot be listed is noted
        (listing.unlisted): the sessions the index holds of it are not taken as gone."""
        root = self.data_dir()
        found = []
        try:
            entries = sorted(os.scandir(root), key=lambda e: e.name)
        except OSError as error:
            unlisted(folders, root, error)
            entries = []
        for e in entries:
            n = e.name
            if utf8_name(n) and (n == "opencode.db" or n.startswith("opencode-")
                                 and n.endswith(".db")) and e.is_file(follow_symlinks=False):
                found.append(e.path)
        db = self.db_override()
        if db and db not in found and regular(db):
            found.append(db)
        return found

    # -- what it finds -----------------------------------------------------------------------

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        """One member per session of this workspace in each database (one look at each: see
        _listing), then each JSON session not copied into a database. A database that cannot
        be listed (OpenCode holding it locked, a schema this version does not know) raises:
        the index keeps what it holds of it, and the next look tries again."""
        out: list[tuple[str, object]] = []
        held: set[str] = set()
        for db in self.databases(folders):
            watch(folders, db)  # (a write goes to its -wal first; a checkpoint, to it)
            watch(folders, db + "-wal")
            listed = _listing(db)
            held |= listed.ids
            out += [(_member(db, root), None) for root, folder in listed.folders.items()
                    if folder and is_within(os.path.normpath(folder), ws)]
        # (noted after the databases: a read-only reader makes their -wal and -shm files there)
        watch(folders, self.data_dir())
        for path, info in self._json_sessions(folders, held):
            if is_within(os.path.normpath(info[2]), ws):
                out.append((path, None))
        return out

    def _json_sessions(self, folders: list | None, held: set[str], known: dict | None = None):
        """(path, info) of each JSON session that starts a thread (no parent among its
        project's sessions) and names its folder, unless a database holds it."""
        root = os.path.join(self.data_dir(), "storage", "session")
        by_folder: dict[str, list[str]] = {}
        for path in files(root, lambda n: n.endswith(".json"), folders):
            by_folder.setdefault(os.path.dirname(path), []).append(path)
        for _folder, paths in sorted(by_folder.items()):
            sessions = _folder_sessions(paths, known)
            for sid, (_parent, path) in sessions.items():
                info = _json_info(path, known)
                if info and info[2] and sid not in held and _root(sid, sessions) == sid:
                    yield path, info

    def in_scope(self, delta, ws: str) -> bool:
        """A session of this workspace, or of a folder inside it (opencode records the folder it
        ran in for every session: one that names none is nobody's)."""
        return bool(delta.cwd) and is_within(os.path.normpath(delta.cwd), ws)

    def everywhere(self, known: dict) -> list[tuple[str, tuple[str, ...]]]:
        """Every session with its folder: a database's from one look at it (a database that
        cannot be read is left for the next search), the JSON files' from their heads, noted
        in `known` by the file's size and time."""
        out: list[tuple[str, tuple[str, ...]]] = []
        held: set[str] = set()
        for db in self.databases():
            try:
                listed = _listing(db)
            except (OSError, ValueError):
                continue
            held |= listed.ids
            out += [(_member(db, root), (os.path.normpath(folder),))
                    for root, folder in listed.folders.items() if folder]
        out += [(path, (os.path.normpath(info[2]),))
                for path, info in self._json_sessions(None, held, known)]
        return out

    def knows(self, kind: str) -> bool:
        return kind in KNOWN_TYPES

    # -- a session as a file -------------------------------------------------------------------

    def stat(self, path: str):
        """A database's session: its rows' count and last change (one look at the database
        for all of them, kept while the database and its -wal do not change). A JSON session:
        its files' (see _json_stat). Only OSErrors: a session gone is a FileNotFoundError."""
        db, sid = _split(path)
        if db is None:
            return _json_stat(path)
        try:
            got = _listing(db).stats.get(sid)
        except ValueError as e:  # (a schema it does not know: said, and tried on each look)
            raise OSError(str(e)) from None
        if got is None:
            raise FileNotFoundError(f"{path}: no such session")
        return RowStat(*got)

    def backing(self, path: str) -> str:
        db, _sid = _split(path)
        return db or path

    def read(self, path, extra, offset, state):
        db, sid = _split(path)
        if db is None:
            return _read_json(path)
        return _read_db(db, sid)

    def sample(self, ws: str, text: str) -> str:
        """A database of opencode's schema (as its migrations leave it, v1.2) holding one
        session of `ws`: the member path."""
        import sqlite3  # (the contract test's sample only)
        db = os.path.join(self.data_dir(), "opencode.db")
        os.makedirs(os.path.dirname(db), exist_ok=True)
        con = sqlite3.connect(db)
        try:
            try:  # a database of somebody's sessions is never written into (HOME not isolated)
                others = con.execute("SELECT count(*) FROM session WHERE id != 'ses_sample'")
                if others.fetchone()[0]:
                    raise RuntimeError(f"{db} holds OpenCode sessions: no sample written there")
            except sqlite3.OperationalError:
                pass  # (a new database: no session table yet)
            make_schema(con)
            add_session(con, "ses_sample", ws, "", 1767312000000, [
                ("msg_sample1", "user", [{"type": "text", "text": text}]),
                ("msg_sample2", "assistant", [{"type": "text", "text": "ok"}])])
            con.commit()
        finally:
            con.close()
        return _member(db, "ses_sample")


# -- member paths --------------------------------------------------------------------------------

def _member(db: str, sid: str) -> str:
    return f"{db}#{sid}"


def _split(path: str) -> tuple[str | None, str]:
    """(database, session id) of a member path; (None, path) for a JSON session's file (its
    name ends in .json, which no session id listed does: see _plain_id)."""
    head, sep, sid = path.rpartition("#")
    if not sep or path.endswith(".json") or not _plain_id(sid):
        return None, path
    return head, sid


def _plain_id(sid) -> bool:
    """An id a member path can carry (opencode's are `ses_` and letters): printable, no path
    or member separator in it, not a file name's."""
    return isinstance(sid, str) and 0 < len(sid) <= 200 and sid.isprintable() \
        and not any(c in sid for c in "#/\\") and not sid.endswith(".json")


# -- the database --------------------------------------------------------------------------------

class _Listed:
    """What one look at a database found: the ids it holds, each thread's folder and stat."""

    __slots__ = ("ids", "folders", "stats", "sessions", "threads")

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.folders: dict[str, str | None] = {}  # thread (its first session) -> its folder
        self.stats: dict[str, tuple[int, int]] = {}  # thread -> (size, mtime_ns)
        self.sessions: dict[str, tuple] = {}  # as _sessions gives them
        self.threads: dict[str, list[str]] = {}  # thread -> its sessions, itself first


_LISTED: dict[str, tuple] = {}  # database -> (its files' stat, what a look at it found)


def _key(db: str):
    """What tells a database changed: its file's and its -wal's stat (a write lands in the
    -wal, a checkpoint in the file). A database that is a link or no file is no database."""
    st = os.lstat(db)
    if not stat.S_ISREG(st.st_mode):
        raise FileNotFoundError(f"{db}: not a regular file")
    try:
        w = os.lstat(db + "-wal")
        wal: tuple | None = (w.st_size, w.st_mtime_ns, w.st_ino)
    except OSError:
        wal = None
    return st.st_size, st.st_mtime_ns, st.st_ino, wal


def _listing(db: str) -> _Listed:
    """Every session of a database, grouped in threads, each thread's folder and stat: one
    read transaction of a few aggregate queries, kept while the database does not change (a
    look for changes across a thousand sessions reads it once)."""
    key = _key(db)
    got = _LISTED.get(db)
    if got is not None and got[0] == key:
        return got[1]
    with _reading(db) as con:
        sessions = _sessions(con)
        counts: dict[str, list[int]] = {}

        def add(sid, n, last=None):
            c = counts.setdefault(_str(sid) or "", [0, 0])
            c[0] += _int(n)
            c[1] = max(c[1], _int(last))
        for sid, n, last in _optional(con, "SELECT session_id, count(*), max(time_created) "
                                           "FROM message GROUP BY session_id"):
            add(sid, n, last)
        for sid, n in _optional(con, "SELECT session_id, count(*) FROM part "
                                     "GROUP BY session_id"):
            add(sid, n)
        for sid, n in _optional(con, "SELECT session_id, count(*) FROM session_message "
                                     "GROUP BY session_id"):
            add(sid, n)
    listed = _Listed()
    listed.ids, listed.sessions = set(sessions), sessions
    for sid, (_parent, folder, _title, _created, updated) in sessions.items():
        root = _root(sid, sessions)
        listed.threads.setdefault(root, []).append(sid)
        n, last = counts.get(sid, (0, 0))
        size, mtime = listed.stats.get(root, (0, 0))
        # a thread's size: a row for each session, message and part (never 0: an empty file)
        listed.stats[root] = (size + 1 + n, max(mtime, min(max(_int(updated), last), 1 << 42)
                                                * 1_000_000))
        if sid == root:  # (opencode records an absolute path: anything else is nobody's)
            listed.folders[root] = folder if folder and os.path.isabs(folder) else None
    for root, family in listed.threads.items():
        family.sort(key=lambda s: (s != root, _int(sessions[s][3]), s))
    _LISTED[db] = (key, listed)
    return listed


def _sessions(con) -> dict[str, tuple]:
    """id -> (parent id, folder, title, created, updated) of each session a member path can
    name (see _plain_id)."""
    out: dict[str, tuple] = {}
    for sid, parent, folder, title, created, updated in con.execute(
            "SELECT id, parent_id, directory, title, time_created, time_updated FROM session"):
        name = _str(sid)
        if name is not None and _plain_id(name):
            out[name] = (_str(parent), _str(folder), _str(title), created, updated)
    return out


def _root(sid: str, sessions: dict) -> str:
    """The session a subagent's thread starts from: its parents' chain followed up to one
    with no parent in the database (in a loop, its least id: the same for every session in it)."""
    seen = [sid]
    while True:
        parent = sessions[seen[-1]][0]
        if parent is None or parent not in sessions:
            return seen[-1]
        if parent in seen:
            return min(seen[seen.index(parent):])
        seen.append(parent)


def _optional(con, sql: str, args=()) -> list:
    """The rows of a query of a table a version of opencode may not have (none then)."""
    import sqlite3  # (only once this source is read, never by a hook)
    try:
        return con.execute(sql, args).fetchall()
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):
            return []
        raise


class _reading:
    """A read-only connection to a database in one read transaction (a consistent snapshot; a
    WAL reader never blocks opencode writing), closed on exit. Its errors as the pipeline takes
    them: OSError for a database it cannot open or OpenCode holds locked (tried again on the
    next look), ValueError for a file that is no database or of a schema this version does not
    know (one problem naming it)."""

    def __init__(self, db: str):
        self.db = db

    def __enter__(self):
        import sqlite3  # (only once this source is read, never by a hook)
        from urllib.parse import quote  # (as above)
        self.sqlite3 = sqlite3
        if not regular(self.db):  # (a link is never followed, a FIFO never waited on)
            raise FileNotFoundError(f"{self.db}: not a regular file")
        try:
            self.con = sqlite3.connect(f"file:{quote(self.db)}?mode=ro", uri=True,
                                       timeout=BUSY_SECONDS, isolation_level=None)
        except sqlite3.Error as e:
            raise OSError(f"{self.db}: cannot open ({e})") from None
        self.con.text_factory = bytes  # (text that is no UTF-8 is mended, not an error)
        try:
            self.con.execute("BEGIN")
        except sqlite3.Error as e:
            self.con.close()
            raise self._taken(e) from None
        return self.con

    def __exit__(self, kind, error, tb):
        self.con.close()  # (a read transaction: nothing to keep)
        if isinstance(error, self.sqlite3.Error):
            raise self._taken(error) from None
        return False

    def _taken(self, e) -> Exception:
        why = str(e)
        if isinstance(e, self.sqlite3.OperationalError) and ("locked" in why or "busy" in why):
            return OSError(f"{self.db}: OpenCode holds its database locked; tried again later")
        if isinstance(e, self.sqlite3.OperationalError) and "unable to open" in why:
            return OSError(f"{self.db}: cannot open ({why})")
        if "no such" in why:
            return ValueError(f"{self.db}: a schema this version does not know ({why})")
        return ValueError(f"{self.db}: cannot read ({why})")


def _str(value) -> str | None:
    """A TEXT column's value (read as bytes): a str, the bytes no UTF-8 shown as U+FFFD."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else None


def _obj(value) -> dict:
    """A JSON object where one should be (anything else: an empty one)."""
    return value if isinstance(value, dict) else {}


def _int(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _read_db(db: str, sid: str):
    """One thread of a database (the session and its subagents'), in one read transaction:
    its session rows, then its messages and parts (their tool outputs and metadata left in the
    database: only what is said and done is read), or its session_message rows."""
    from . import text  # (only once this source is read, never by a hook)
    problems: list[str] = []
    budget = [text.MAX_DOCUMENT]
    # the threads as the last look found them (one look for a whole run, not one per thread:
    # the database changing since is a change the next look reads again)
    listed = _listing(db)
    sessions, family = listed.sessions, listed.threads.get(sid)
    if family is None:
        raise FileNotFoundError(f"{db}#{sid}: no such session")
    with _reading(db) as con:
        if len(family) > MAX_FAMILY:
            problems.append(f"{len(family) - 1} subagent sessions: the first "
                            f"{MAX_FAMILY - 1} read")
        family = family[:MAX_FAMILY]
        marks = ",".join("?" * len(family))
        messages = _rows(con, budget, "SELECT id, session_id, time_created, CASE WHEN "
                         "json_valid(data) THEN json_remove(data, '$.summary') ELSE data END "
                         f"FROM message WHERE session_id IN ({marks}) ORDER BY time_created, id",
                         family)
        parts = _rows(con, budget, "SELECT message_id, id, CASE WHEN json_valid(data) THEN "
                      "json_remove(data, '$.state.output', '$.state.metadata', "
                      "'$.state.attachments', '$.state.raw', '$.metadata') ELSE data END "
                      f"FROM part WHERE session_id IN ({marks}) ORDER BY message_id, id", family)
        v2 = _rows(con, budget, "SELECT id, session_id, type, time_created, data "
                   f"FROM session_message WHERE session_id IN ({marks}) ORDER BY seq, id",
                   family)
    end = len(family) + len(messages) + len(parts) + len(v2)
    root = sessions[sid]
    b = _Builder(sid, root[1], root[2], problems)
    by_message: dict[str, list] = {}
    for mid, pid, data in parts:
        by_message.setdefault(_str(mid) or "", []).append((_str(pid), data))
    older: dict[str, list] = {}
    for mid, s, ts, data in messages:
        older.setdefault(_str(s) or "", []).append((_str(mid) or "", ts, data))
    newer: dict[str, list] = {}
    for mid, s, kind, ts, data in v2:
        newer.setdefault(_str(s) or "", []).append((_str(mid) or "", _str(kind), ts, data))
    # A session read as one store or the other: the newer rows (session_message) where they
    # hold as much of it (opencode copies a session's older messages there), else the older.
    for s in family:  # its own thread, then each subagent's, each in its order
        side = s != sid
        said = sum(kind in ("user", "assistant") for _m, kind, _t, _d in newer.get(s, ()))
        if said and said >= len(older.get(s, ())):
            for mid, kind, ts, data in newer[s]:
                b.v2(s, mid, kind, ts, _parsed(data, problems), side)
            continue
        for mid, ts, data in older.get(s, ()):
            got = [(pid, _parsed(d, problems)) for pid, d in by_message.get(mid, ())]
            b.v1(s, mid, ts, _parsed(data, problems), got, side)
    created, updated = root[3], root[4]
    deltas = b.finish(_ms(created), _ms(updated), os.lstat(db).st_mtime)
    return deltas, end, b.state(), _summed(problems)


_UNREADABLE = "a message unreadable, left out"


def _summed(problems: list[str]) -> list[str]:
    """The problems of a read, its unreadable messages said once (how many, the first why)."""
    bad = [p for p in problems if p.startswith(_UNREADABLE)]
    if len(bad) < 2:
        return problems
    rest = [p for p in problems if not p.startswith(_UNREADABLE)]
    return rest + [f"{len(bad)} messages unreadable, left out (the first: {bad[0][len(_UNREADABLE) + 2:-1]})"]


def _rows(con, budget: list, sql: str, args) -> list:
    """A query's rows (of a table a version may not have: none), their bytes counted against
    what one session's read may hold (text.MAX_DOCUMENT): past it, TooBig."""
    import sqlite3  # (only once this source is read, never by a hook)
    from .text import TooBig  # (as above)
    try:
        cur = con.execute(sql, args)
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):
            return []
        raise
    out = []
    for row in cur:
        budget[0] -= sum(len(v) for v in row if isinstance(v, bytes))
        if budget[0] < 0:
            raise TooBig("a session of more than 64 MB of messages: not read")
        out.append(row)
    return out


def _parsed(raw, problems: list) -> dict | None:
    """A row's JSON `data` as a dict; None, with a problem, for one that is not."""
    from . import text  # (only once this source is read, never by a hook)
    if not isinstance(raw, bytes):
        raw = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else b""
    try:
        try:
            doc = text.load_json(raw)
        except UnicodeDecodeError:  # (bytes no UTF-8: shown as U+FFFD, as a text column's)
            doc = text.load_json(raw.decode("utf-8", "replace").encode())
    except ValueError as e:  # (TooBig too: one row past the bounds, its session read on)
        problems.append(f"{_UNREADABLE} ({str(e)[:80]})")
        return None
    return doc if isinstance(doc, dict) else None


# -- the JSON files (before 1.2) -----------------------------------------------------------------

_JSON: dict[str, tuple] = {}  # session file -> (its stat, its head): read once while unchanged


def _json_info(path: str, known: dict | None = None):
    """(id, parent id, folder, title, created, updated) of a session's JSON file, None for a
    file that is not one. `known` (Source.everywhere's): what an earlier call noted of it."""
    from . import text  # (only once this source is read, never by a hook)
    try:
        st = os.lstat(path)
    except OSError:
        return None
    mark = [st.st_size, st.st_mtime_ns, st.st_ino]
    got = _JSON.get(path)
    if got is not None and got[0] == mark:
        return got[1]
    noted = known.get(path) if known is not None else None
    if isinstance(noted, list) and len(noted) == 2 and noted[0] == mark \
            and (noted[1] is None or isinstance(noted[1], list) and len(noted[1]) == 6):
        # (without its title, never noted: not kept here, where a read would take it from)
        return tuple(noted[1]) if noted[1] is not None else None
    info = None
    try:
        raw = read_plain(path, SESSION_FILE + 1)
        doc = text.load_json(raw[0]) if raw and len(raw[0]) <= SESSION_FILE else None
    except (OSError, ValueError):
        doc = None
    if isinstance(doc, dict):
        info = _json_head(path, doc)
    if known is not None:  # (the catalog, written to disk: no title, which is any text)
        known[path] = [mark, [*info[:3], None, *info[4:]] if info is not None else None]
    _JSON[path] = (mark, info)
    return info


def _json_head(path: str, doc: dict):
    storage = os.path.dirname(os.path.dirname(os.path.dirname(path)))
    stem = os.path.basename(path)[:-5]
    sid = doc.get("id")
    # opencode names a session's file and its messages' folder by its id (its JSON migration
    # takes the id from the file's name); a file named otherwise, by the id it holds
    if not _plain_id(sid) or os.path.isdir(os.path.join(storage, "message", stem)):
        sid = stem
    if not _plain_id(sid):
        return None
    times = _obj(doc.get("time"))
    parent, folder, title = (doc.get(k) for k in ("parentID", "directory", "title"))
    return (sid, parent if isinstance(parent, str) else None,
            folder if isinstance(folder, str) and os.path.isabs(folder) else None,
            title if isinstance(title, str) else None,
            times.get("created"), times.get("updated"))


def _folder_sessions(paths: list[str], known: dict | None = None) -> dict[str, tuple]:
    """id -> (parent id, its file) of each session of a project's folder (`paths`: its files;
    a session and the subagents' it started are of one project)."""
    out = {}
    for path in paths:
        info = _json_info(path, known)
        if info is not None:
            out[info[0]] = (info[1], path)
    return out


_PROJECTS: dict[str, tuple] = {}  # a project's folder -> (its mtime, its sessions)


def _project(folder: str) -> dict[str, tuple]:
    """_folder_sessions of a project's folder, kept while the folder does not change (opencode
    adds and rewrites a session's file by a rename into it): the stat of each of its sessions
    reads the folder once, not once each."""
    try:
        mtime = os.lstat(folder).st_mtime_ns
    except OSError:
        return {}
    got = _PROJECTS.get(folder)
    if got is None or got[0] != mtime:
        got = _PROJECTS[folder] = (mtime, _folder_sessions(_json_names(folder)))
    return got[1]


def _json_names(folder: str) -> list[str]:
    """The .json files in a folder, sorted (opencode's ids sort by time); none where the folder
    is absent, or a link (never followed)."""
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return []
        entries = list(os.scandir(folder))
    except OSError:
        return []
    return sorted(e.path for e in entries if e.name.endswith(".json") and utf8_name(e.name)
                  and e.is_file(follow_symlinks=False))


def _json_family(path: str):
    """(storage folder, [(id, info, file)] of the thread `path` starts: itself first, then its
    subagents'); FileNotFoundError when it is no session, or a subagent's."""
    info = _json_info(path)
    if info is None:
        raise FileNotFoundError(f"{path}: no session")
    folder = os.path.dirname(path)
    sessions = _project(folder)
    if sessions.get(info[0], (None, path))[1] != path or _root(info[0], sessions) != info[0]:
        raise FileNotFoundError(f"{path}: a subagent's session, read with its parent's")
    family = [(info[0], info, path)]
    for sid, (_parent, p) in sorted(sessions.items()):
        if sid != info[0] and _root(sid, sessions) == info[0]:
            family.append((sid, _json_info(p), p))
    return os.path.dirname(os.path.dirname(folder)), family[:MAX_FAMILY]


def _json_stat(path: str) -> RowStat:
    """A JSON session as one file: a row for each session file and message file of its
    thread, and the last time any of them, their message folders or the newest message's part
    folder changed (opencode rewrites a message's file as it completes, and adds its parts)."""
    storage, family = _json_family(path)
    size, mtime = 0, 0
    for sid, _info, p in family:
        mtime = max(mtime, os.lstat(p).st_mtime_ns)
        folder = os.path.join(storage, "message", sid)
        names = _json_names(folder)
        size += 1 + len(names)
        for d in [folder] + [os.path.join(storage, "part", os.path.basename(n)[:-5])
                             for n in names[-1:]]:
            try:
                mtime = max(mtime, os.lstat(d).st_mtime_ns)
            except OSError:
                pass
    return RowStat(size, mtime)


def _read_json(path: str):
    """A JSON session's thread: each session's messages, each with its parts, every file read
    as a plain file (never a link, never a FIFO), all of them bounded together."""
    from . import text  # (only once this source is read, never by a hook)
    problems: list[str] = []
    storage, family = _json_family(path)
    budget = [text.MAX_DOCUMENT]
    root = family[0][1]
    b = _Builder(root[0], root[2], root[3], problems)
    end = 0
    for sid, _info, _p in family:
        names = _json_names(os.path.join(storage, "message", sid))
        end += 1 + len(names)
        msgs = []
        for n in names:
            doc = _json_file(n, budget, problems)
            if doc is not None:
                mid = os.path.basename(n)[:-5]  # (its id, as its session's: see _json_head)
                if not os.path.isdir(os.path.join(storage, "part", mid)) \
                        and _plain_id(doc.get("id")):
                    mid = doc["id"]
                times = _obj(doc.get("time"))
                msgs.append((_int(times.get("created")), mid, doc))
        msgs.sort(key=lambda m: (m[0], m[1]))
        for created, mid, doc in msgs:
            parts = [(os.path.basename(n)[:-5], _json_file(n, budget, problems))
                     for n in _json_names(os.path.join(storage, "part", mid))]
            b.v1(sid, mid, created, doc, parts, sid != root[0])
    deltas = b.finish(_ms(root[4]), _ms(root[5]), os.lstat(path).st_mtime)
    return deltas, end, b.state(), _summed(problems)


def _json_file(path: str, budget: list, problems: list) -> dict | None:
    from . import text  # (only once this source is read, never by a hook)
    try:
        got = read_plain(path, text.MAX_DOCUMENT + 1)
    except OSError as e:
        problems.append(f"{_UNREADABLE} ({os.path.basename(path)}: {e.strerror or e})")
        return None
    if got is None:
        return None  # (a link or a FIFO put there: never read)
    budget[0] -= len(got[0])
    if budget[0] < 0:
        raise text.TooBig("a session of more than 64 MB of messages: not read")
    return _parsed(got[0], problems)


# -- records ---------------------------------------------------------------------------------

def _ms(value) -> float | None:
    from .text import valid_ts  # (only once this source is read, never by a hook)
    try:
        return valid_ts(value / 1000.0) if isinstance(value, (int, float)) else None
    except OverflowError:  # (an integer of 400 digits)
        return None


class _Builder:
    """One thread's records, as its messages come (message-v2.ts's shapes, or
    session-message.ts's): prompts and replies, the calls made and the files changed."""

    def __init__(self, sid: str, folder: str | None, title: str | None, problems: list):
        from .. import titles  # (only once this source is read, never by a hook)
        from . import text, tool_calls  # (as above)
        self.text, self.titles, self.tool_calls = text, titles, tool_calls
        self.scrub = text.scrubber(problems)
        self.problems = problems
        self.d = SessionDelta(sid, SOURCE, LABEL)
        self.d.cwd = folder
        if title and title.strip() and not title.startswith(_DEFAULT_TITLES):
            self.d.custom_title = titles.normalize(self._said(title))
        self.unknown: set[str] = set()
        self.names: dict = {}  # (tool_calls.make's)
        self.prompts: dict[str, str] = {}  # session -> its last prompt's key
        self.users: set[str] = set()  # the prompts' keys
        self.last: dict[str, str] = {}  # session -> the last message's key (what a call follows)
        self.before: dict[str, str] = {}  # session -> the agent's last words before a change

    def _said(self, value: str) -> str:
        return self.scrub(self.text.strip_private(value))

    def _message(self, sid, key, role, said, ts, side, pairs=None) -> None:
        text = self._said(said.strip())
        self.d.messages.append(Message(key, role, text, ts, side, pairs))
        self.d.seen(ts)
        self.last[sid] = key
        if role == "user":
            self.prompts[sid], self.before[sid] = key, ""
            self.users.add(key)
            if not side and self.d.first_prompt is None:
                self.d.first_prompt = self.titles.clean_first_prompt(text)

    # message-v2.ts: a message's info, and its parts
    def v1(self, sid: str, mid: str, ts, info, parts, side: bool) -> None:
        if info is None:
            return
        times = _obj(info.get("time"))
        ts = _ms(times.get("created")) or _ms(ts)
        role = info.get("role")
        parts = [p for _pid, p in parts if isinstance(p, dict)]
        for p in parts:
            if p.get("type") not in _PARTS:
                self.unknown.add(str(p.get("type"))[:40])
        if role == "user":
            said = [p["text"] for p in parts if p.get("type") == "text"
                    and isinstance(p.get("text"), str) and not p.get("synthetic")
                    and not p.get("ignored")]  # (synthetic: a file's text opencode attached)
            if "".join(said).strip():
                self._message(sid, mid, "user", "\n".join(said), ts, side)
        elif role == "assistant":
            said = [p["text"] for p in parts if p.get("type") == "text"
                    and isinstance(p.get("text"), str) and not p.get("ignored")]
            parent = info.get("parentID")
            pairs = parent if parent in self.users else self.prompts.get(sid)
            if "".join(said).strip():
                self._message(sid, mid, "assistant", "\n".join(said), ts, side, pairs)
            key = self.last.get(sid)
            for p in parts:  # (the text before a change is its reason)
                kind = p.get("type")
                if kind == "text" and isinstance(p.get("text"), str) and p["text"].strip():
                    self.before[sid] = p["text"]
                elif kind == "tool":
                    state = _obj(p.get("state"))
                    when = _obj(state.get("time"))
                    self._tool(sid, p.get("tool"), state.get("input"), state.get("status"),
                               p.get("callID"), _ms(when.get("start")) or ts, key, side)
                elif kind == "patch" and isinstance(p.get("files"), list):
                    self._changed(sid, [f for f in p["files"] if isinstance(f, str)], "patch",
                                  ts, key)
        else:
            self.unknown.add(f"role:{str(role)[:40]}")

    # session-message.ts: a message of the newer store, its content inside
    def v2(self, sid: str, mid: str, kind, ts, data, side: bool) -> None:
        if kind not in _V2:
            self.unknown.add(str(kind)[:40])
            return
        if data is None:
            return
        times = _obj(data.get("time"))
        ts = _ms(times.get("created")) or _ms(ts)
        if kind == "user" and isinstance(data.get("text"), str) and data["text"].strip():
            self._message(sid, mid, "user", data["text"], ts, side)
        elif kind == "assistant":
            content = [c for c in data.get("content") or () if isinstance(c, dict)] \
                if isinstance(data.get("content"), list) else []
            said = [c["text"] for c in content if c.get("type") == "text"
                    and isinstance(c.get("text"), str) and not c.get("ignored")]
            if "".join(said).strip():
                self._message(sid, mid, "assistant", "\n".join(said), ts, side,
                              self.prompts.get(sid))
            key = self.last.get(sid)
            for c in content:
                if c.get("type") == "text" and isinstance(c.get("text"), str) \
                        and c["text"].strip():
                    self.before[sid] = c["text"]
                elif c.get("type") == "tool":
                    state = _obj(c.get("state"))
                    when = _obj(c.get("time"))
                    self._tool(sid, c.get("name"), state.get("input"), state.get("status"),
                               c.get("id"), _ms(when.get("created")) or ts, key, side)
                elif c.get("type") not in ("reasoning", "text"):
                    self.unknown.add(str(c.get("type"))[:40])
        elif kind == "shell":  # a command the person ran (`!`), as a call
            self.d.tool_calls.append(self.tool_calls.make(
                "shell", data.get("command"), None, self.scrub, kind="command", ts=ts,
                key=self.last.get(sid), sidechain=side, call=data.get("callID"),
                names=self.names))
            self.d.seen(ts)

    def _tool(self, sid, name, inp, status, call, ts, key, side) -> None:
        tc = self.tool_calls
        name = name if isinstance(name, str) else ""
        args = inp if isinstance(inp, dict) else {}
        if name in _PATCHES:
            paths = _patched(args.get("patchText"), self.d.cwd)
            got = tc.make(name, paths[0] if paths else None,
                          f"and {', '.join(paths[1:6])}" if len(paths) > 1 else None,
                          self.scrub, kind="path", ts=ts, key=key, sidechain=side, call=call,
                          names=self.names)
            if status == "completed":
                self._changed(sid, paths, name, ts, key)
        elif name in _TARGETS:
            field, kind = _TARGETS[name]
            got = tc.make(name, args.get(field) if field else None, _line(name, args),
                          self.scrub, kind=kind, ts=ts, key=key, sidechain=side, call=call,
                          names=self.names)
            if name in _EDITS and status == "completed" and isinstance(args.get("filePath"), str):
                self._changed(sid, [args["filePath"]], name, ts, key)
        else:
            got = tc.codex(name, inp, self.scrub, ts, key, call)
            got.sidechain = side
        self.d.tool_calls.append(got)
        self.d.seen(ts)

    def _changed(self, sid, paths, tool: str, ts, key) -> None:
        why = self.text.tail(self._said(self.before.get(sid, "")), 500) if paths else ""
        for p in dict.fromkeys(paths):
            if p and not any(c.path == p and c.message_key == key for c in self.d.file_changes):
                self.d.file_changes.append(FileChange(p, tool, why, ts, key))

    def state(self) -> dict | None:
        """The parser state kept with the session: the record types it did not know (status
        counts them)."""
        return {"unk": sorted(self.unknown)[:50]} if self.unknown else None

    def finish(self, created, updated, mtime: float) -> list[SessionDelta]:
        d = self.d
        if self.unknown:  # (once a read, naming each)
            self.problems.append("record types this version does not read, skipped: "
                                 + ", ".join(sorted(self.unknown)[:10]))
        if not (d.messages or d.file_changes or d.tool_calls):
            return []  # (a session opened, nothing asked yet)
        d.seen(created)
        d.seen(updated)
        self.text.dated_by_file(d, mtime)
        return [d]


def _line(name: str, args: dict):
    """A call's line: what it says of itself (a command's description, the lines read...)."""
    if name == "bash":
        return args.get("description")
    if name == "read" and isinstance(args.get("offset"), int) \
            and isinstance(args.get("limit"), int):
        return f"lines {args['offset']}-{args['offset'] + args['limit'] - 1}"
    if name in ("glob", "grep") and isinstance(args.get("path"), str):
        return f"in {args['path']}"
    if name == "task":
        return args.get("subagent_type")
    if name == "todowrite" and isinstance(args.get("todos"), list):
        return f"{len(args['todos'])} todos"
    if name == "multiedit" and isinstance(args.get("edits"), list):
        return f"{len(args['edits'])} edits"
    return None


def _patched(patch, folder: str | None) -> list[str]:
    """The files a patch (apply_patch's format: `*** Update File: x`...) names, a relative
    one taken from the session's folder, as opencode resolves it."""
    from .tool_calls import patched_paths  # (only once this source is read, never by a hook)
    paths = patched_paths(patch[:1 << 20] if isinstance(patch, str) else None)
    return list(dict.fromkeys(p if os.path.isabs(p) or not folder else
                              os.path.normpath(os.path.join(folder, p)) for p in paths))


# -- opencode's schema, for the samples ----------------------------------------------------------

# The tables as opencode's migrations leave them (packages/opencode/migration/, 1.2: the
# `.schema` of a real opencode.db, as public readers of it reproduce it), with their indexes.
SCHEMA = """
CREATE TABLE IF NOT EXISTS `project` (`id` text PRIMARY KEY, `worktree` text NOT NULL,
  `vcs` text, `name` text, `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
  `sandboxes` text NOT NULL);
CREATE TABLE IF NOT EXISTS `session` (`id` text PRIMARY KEY, `project_id` text NOT NULL,
  `parent_id` text, `slug` text NOT NULL, `directory` text NOT NULL, `title` text NOT NULL,
  `version` text NOT NULL, `share_url` text, `summary_additions` integer,
  `summary_deletions` integer, `summary_files` integer, `summary_diffs` text, `revert` text,
  `permission` text, `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
  `time_compacting` integer, `time_archived` integer, `workspace_id` text,
  CONSTRAINT `fk_session_project_id_project_id_fk` FOREIGN KEY (`project_id`)
  REFERENCES `project`(`id`) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL,
  CONSTRAINT `fk_message_session_id_session_id_fk` FOREIGN KEY (`session_id`)
  REFERENCES `session`(`id`) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL,
  `session_id` text NOT NULL, `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
  `data` text NOT NULL, CONSTRAINT `fk_part_message_id_message_id_fk` FOREIGN KEY
  (`message_id`) REFERENCES `message`(`id`) ON DELETE CASCADE);
CREATE INDEX IF NOT EXISTS `session_project_idx` ON `session` (`project_id`);
CREATE INDEX IF NOT EXISTS `session_parent_idx` ON `session` (`parent_id`);
CREATE INDEX IF NOT EXISTS `message_session_time_created_id_idx`
  ON `message` (`session_id`, `time_created`, `id`);
CREATE INDEX IF NOT EXISTS `part_message_id_id_idx` ON `part` (`message_id`, `id`);
CREATE INDEX IF NOT EXISTS `part_session_idx` ON `part` (`session_id`);
"""


def make_schema(con) -> None:
    """opencode's tables in a new database (sqlite3 connection `con`), in its journal mode."""
    con.execute("PRAGMA journal_mode = WAL")
    con.executescript(SCHEMA)


def add_session(con, sid: str, folder, title: str, start: int, messages, parent=None) -> None:
    """A session in `con` as opencode stores one: its row, then each (message id, role,
    [part data]) with its parts, a second apart from `start` (ms), ids and times in columns
    and the rest in `data` (json-migration.ts's split)."""
    import json  # (the samples only)
    con.execute("INSERT OR IGNORE INTO project VALUES ('global', '/', NULL, NULL, ?, ?, '[]')",
                (start, start))
    con.execute("INSERT OR REPLACE INTO session (id, project_id, parent_id, slug, directory, title, version,"
                " time_created, time_updated) VALUES (?, 'global', ?, 'brave-comet', ?, ?,"
                " '1.2.10', ?, ?)",
                (sid, parent, folder, title or "New session - 2026-01-02T00:00:00.000Z", start,
                 start + 1000 * len(messages)))
    prompt = None
    for n, (mid, role, parts) in enumerate(messages):
        ts = start + 1000 * n
        info: dict = {"role": role, "time": {"created": ts}, "agent": "build"}
        if role == "user":
            info["model"] = {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}
            prompt = mid
        else:
            info.update(parentID=prompt, modelID="claude-sonnet-4-5", providerID="anthropic",
                        mode="build", path={"cwd": folder, "root": folder}, cost=0,
                        tokens={"input": 1, "output": 1, "reasoning": 0,
                                "cache": {"read": 0, "write": 0}})
            info["time"]["completed"] = ts + 500
        con.execute("INSERT OR REPLACE INTO message VALUES (?, ?, ?, ?, ?)",
                    (mid, sid, ts, ts, json.dumps(info)))
        for k, part in enumerate(parts):
            con.execute("INSERT OR REPLACE INTO part VALUES (?, ?, ?, ?, ?, ?)",
                        (f"prt_{mid}_{k:03d}", mid, sid, ts + k, ts + k,
                         part if isinstance(part, str) else json.dumps(part)))
