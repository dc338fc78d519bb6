"""Cursor's sessions as records: the IDE's chats (SQLite rows) and the cursor-agent CLI's.

The IDE (class Cursor) keeps every chat ("composer") in one database, `User/globalStorage/
state.vscdb`, table `cursorDiskKV`: `composerData:<id>` (the chat: name, times, its bubbles' ids
in order in `fullConversationHeadersOnly`, or the bubbles themselves inline in older versions) and
`bubbleId:<id>:<bubble>` (one message each: type 1 the person, 2 the agent, with its `text`, or a
tool call's `toolFormerData`). The folder a chat belongs to is told by its own
`workspaceIdentifier`, by the global `composer.composerHeaders` (Cursor 3), or by the list of chats
in a workspace's `workspaceStorage/<id>/state.vscdb` (`composer.composerData`), whose
`workspace.json` names the folder; the oldest chats (`workbench.panel.aichat.view.aichat.chatdata`)
are in that workspace database itself. A chat is a session named `<database>#<id>` (base.RowStat):
its rows tell a change, one query for all the chats of a database.

The CLI (class CursorAgent) appends `<~/.cursor>/projects/<its folder, "/" and "." as "-">/
agent-transcripts/<id>/<id>.jsonl` (`{"role", "message": {"content": [...]}}` lines) and, before
those, kept each chat in `<~/.cursor>/chats/<md5 of its folder>/<id>/store.db` (`meta` names it,
`blobs` holds its messages as JSON under a tree of content-addressed ids). Cursor's IDE writes such
transcripts of its own chats too: a transcript of a chat the IDE's database holds is the IDE's.

A database is opened read-only, read in one transaction (a consistent snapshot, which never holds
Cursor up: its databases are in WAL mode) and never copied; one that is busy is an OSError, so
the indexer keeps what it has and reads it on the next look.
"""
from __future__ import annotations

import os
import stat
import sys

from ..records import FileChange, Message, SessionDelta
from ..workspace import is_within
from . import names
from .base import RowStat, Source, sample_file
from .listing import files as _files
from .listing import app_config_base, subdirs, watch

BUSY_SECONDS = 2.0  # how long a read waits on a database Cursor holds locked
ROW_MAX = 32 << 20  # one row read at most (a bubble of pasted images is bigger: skipped, said)
BLOBS_MAX = 20_000  # blobs of one CLI chat walked at most (a tree that loops ends there)
ARG_MAX = 8192  # characters of a tool's argument kept (tool_calls cuts what it stores far shorter)
PLACEHOLDERS = {"new agent", "new chat", "new composer", "untitled"}  # names no one gave
KNOWN_TYPES = {"turn_ended", "block thinking", "block reasoning", "block redacted_thinking",
               "block image", "block tool_result", "block tool-result", "role tool",
               "role system"}
_COMMANDS = {"run_terminal_cmd", "run_terminal_command", "run_terminal_command_v2", "shell",
             "bash", "terminal"}
_EDITS = {"edit_file", "edit_file_v2", "search_replace", "edit_file_v2_search_replace", "write",
          "apply_patch", "edit_file_v2_apply_patch", "multiedit", "edit", "strreplace",
          "delete", "delete_file", "delete_path", "create_file", "edit_notebook",
          "notebookedit"}
_PATHS = ("target_file", "file_path", "path", "relative_workspace_path", "targetFile",
          "relativeWorkspacePath", "filePath", "target_notebook", "notebook_path", "paths")
_TEXTS = ("query", "search_term", "pattern", "glob_pattern", "description", "prompt", "name")
_CONTEXT_TAGS = ("<user_info>", "<project_layout>", "<git_status>", "<rules>", "<agent_skills>",
                 "<open_and_recently_viewed_files>", "<system_reminder>")


# -- where -------------------------------------------------------------------------------------

def user_dirs() -> list[str]:
    """Cursor's user folders (PRIMA_CURSOR_USER_DIRS, a path list, overrides them)."""
    given = os.environ.get("PRIMA_CURSOR_USER_DIRS")
    if given is not None:
        return [d for d in given.split(os.pathsep) if d]
    return [os.path.join(app_config_base(), "Cursor", "User")]


def agent_home() -> str:
    """The CLI's folder: CURSOR_CONFIG_DIR, else ~/.cursor (%USERPROFILE%\\.cursor)."""
    return os.environ.get("CURSOR_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".cursor")


def _key(name: str) -> str:
    """A folder's name as Cursor spells it under projects/ ("/home/u/my.app" and "home-u-my-app"
    both give "home-u-my-app"): every run of other characters than letters and digits a "-"."""
    import re  # (only once the CLI's folders are listed, never by a hook)
    key = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")
    return key.lower() if sys.platform == "win32" else key  # ("c-Users-...": any case there)


def _resolve(base: str, rest: str, depth: int = 0) -> str | None:
    """The folder under `base` that `rest` (a project folder's name past base's) names, found by
    listing the folders it would pass through: a "-" in the name may be a separator or not, and
    only the disk tells. None when nothing there fits (a folder since moved)."""
    if not rest:
        return base
    if depth > 40:
        return None
    for path in subdirs(base):
        k = _key(os.path.basename(path))
        if k and rest == k:
            return path
        if k and rest.startswith(k + "-"):
            got = _resolve(path, rest[len(k) + 1:], depth + 1)
            if got:
                return got
    return None


def _root_of(name: str) -> str | None:
    """The folder a project folder's name stands for, from the root of the disk."""
    if sys.platform == "win32":
        drive, _sep, rest = name.partition("-")
        return _resolve(f"{drive.upper()}:\\", rest) if len(drive) == 1 else None
    return _resolve("/", _key(name))


def _md5(folder: str) -> str:
    """The name the CLI gives a folder under chats/."""
    import hashlib  # (it loads OpenSSL: only where chats/ is listed, never by a hook)
    return hashlib.md5(folder.encode("utf-8", "surrogatepass"), usedforsecurity=False).hexdigest()


# -- reading a database ------------------------------------------------------------------------

class UnknownSchema(ValueError):
    """A database of a shape this version does not read (a table or a column missing)."""


def _snapshot(db: str, run):
    """run(connection) in one read transaction of `db`, opened read-only (a consistent snapshot;
    closed at once: no lock held between looks). OSError for a database that cannot be opened,
    is busy or is not there; UnknownSchema for tables of another shape."""
    import sqlite3  # (only where Cursor's databases are read, never by a hook)
    from pathlib import Path
    st = os.lstat(db)
    if not stat.S_ISREG(st.st_mode) or os.path.islink(os.path.dirname(db)):
        raise OSError(f"{db}: not a regular file (a link or a FIFO is never followed)")
    try:  # (mode=ro: never written; never immutable=1, which would read half a write)
        con = sqlite3.connect(Path(db).as_uri() + "?mode=ro", uri=True, timeout=BUSY_SECONDS,
                              isolation_level=None, check_same_thread=False)
    except sqlite3.Error as e:
        raise OSError(f"{db}: cannot open ({e})") from None
    con.text_factory = lambda b: b.decode("utf-8", "replace")  # (bytes that are not UTF-8)
    try:
        con.execute("BEGIN")
        return run(con)
    except sqlite3.OperationalError as e:
        why = str(e)
        if why.startswith(("no such table", "no such column")):
            raise UnknownSchema(f"{db}: {why}: a database this version does not read") from None
        if "locked" in why or "busy" in why:
            raise OSError(f"{db}: busy ({why}); read again on the next look") from None
        raise OSError(f"{db}: {why}") from None
    except sqlite3.DatabaseError as e:  # (not a database, or a damaged one)
        raise ValueError(f"{db}: not a database Cursor wrote ({e})") from None
    finally:
        con.close()


def _rows(con, sql: str, args=()) -> list:
    """A query's rows, none where its table is not there (an older Cursor has fewer tables)."""
    import sqlite3  # (only where Cursor's databases are read, never by a hook)
    try:
        return con.execute(sql, args).fetchall()
    except sqlite3.OperationalError as e:
        if str(e).startswith("no such table"):
            return []
        raise


def _mark(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino


_CACHE: dict[tuple[str, str], tuple] = {}  # (database, listing) -> (its files' marks, listing)


def _cached(db: str, listing):
    """What `listing(db)` finds, listed again only once the database (or its WAL) changed: a
    look for changes across all its chats costs one query, not one a chat."""
    mark = (_mark(db), _mark(db + "-wal"))  # (before the query: a change during it is seen)
    got = _CACHE.get((db, listing.__name__))
    if got is not None and got[0] == mark:
        return got[1]
    value = listing(db)
    _CACHE[(db, listing.__name__)] = (mark, value)
    return value


def _ms(value) -> int:
    """A time in milliseconds as Cursor records it, as nanoseconds (0: none)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 4e14:
        return int(value * 1_000_000)
    return 0


def _when(value) -> float | None:
    """A bubble's or chat's time: milliseconds, or an ISO text."""
    from . import text  # (only once a session is read, never by a hook)
    if isinstance(value, str):
        return text.parse_ts(value)
    return text.valid_ts(value / 1000) if _ms(value) else None


def _json(raw):
    """A JSON value from a database's text (None for none, or for one that is not JSON)."""
    from . import text  # (only once a session is read, never by a hook)
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "replace")
    if not isinstance(raw, bytes) or not raw:
        return None
    try:
        return text.load_json(raw)
    except ValueError:
        return None


def _uri_path(uri) -> str | None:
    from . import copilot  # (VS Code's URIs, as Cursor, a VS Code, records them)
    return copilot._path(uri)


def _place(ident) -> tuple[str | None, str | None]:
    """(folder, workspace storage id) a `workspaceIdentifier` names: a folder's URI, a multi-root
    workspace's file (its folder), or only the id of the workspace's storage."""
    if isinstance(ident, str):
        ident = _json(ident)
    if not isinstance(ident, dict):
        return None, None
    folder = _uri_path(ident.get("uri"))
    if not folder:
        config = _uri_path(ident.get("configPath") or ident.get("configURIPath"))
        folder = os.path.dirname(config) if config else None
    space = ident.get("id")
    return (os.path.normpath(folder) if folder else None), (space if isinstance(space, str)
                                                            else None)


# -- the IDE's databases -----------------------------------------------------------------------

_COMPOSERS = (
    "SELECT substr(key, 14), r, n, CASE WHEN json_valid(t) THEN json_extract(t, '$.lastUpdatedAt')"
    " END, CASE WHEN json_valid(t) THEN json_extract(t, '$.createdAt') END,"
    " CASE WHEN json_valid(t) THEN json_extract(t, '$.workspaceIdentifier') END"
    " FROM (SELECT key, rowid AS r, length(value) AS n, CAST(value AS TEXT) AS t"
    " FROM cursorDiskKV WHERE key >= 'composerData:' AND key < 'composerData;')")
# The newest row of each chat's bubbles: a rewritten row gets a new rowid (the table's key is
# UNIQUE ON CONFLICT REPLACE), so a bubble filled in later changes it. One scan of the key index.
_TOPS = ("SELECT substr(key, 10, instr(substr(key, 10), ':') - 1), max(rowid) FROM cursorDiskKV"
         " WHERE key >= 'bubbleId:' AND key < 'bubbleId;' GROUP BY 1")
_HEADERS = "SELECT CAST(value AS TEXT) FROM ItemTable WHERE key = 'composer.composerHeaders'"
_HEADER_ROWS = "SELECT composerId, workspaceId, CAST(value AS TEXT) FROM composerHeaders"
_SPACE_KEYS = ("SELECT key, rowid, length(value), CAST(value AS BLOB) FROM ItemTable WHERE key IN"
               " ('composer.composerData', 'workbench.panel.aichat.view.aichat.chatdata')")


class _Listing:
    """A database's chats: `stats` id -> (size, mtime_ns) as stat gives them, `places` id ->
    (folder, storage id) each names, `ids` the chats a workspace's database lists."""

    def __init__(self) -> None:
        self.stats: dict[str, tuple[int, int]] = {}
        self.places: dict[str, tuple[str | None, str | None]] = {}
        self.ids: set[str] = set()


def _chat_stat(n, rowid, top, updated, created) -> tuple[int, int]:
    """A chat's (size, mtime_ns): its record's length and the newest rowid of its rows (which
    grow with what it holds), and when Cursor last updated it."""
    whole = lambda v: v if isinstance(v, int) and not isinstance(v, bool) else 0  # noqa: E731
    return whole(n) + max(whole(rowid), whole(top)), _ms(updated) or _ms(created)


def _global(db: str) -> _Listing:
    """The chats of a global database, with the folders its own records name for them."""
    def run(con):
        out = _Listing()
        tops = dict(_rows(con, _TOPS))
        for cid, rowid, n, updated, created, ident in _rows(con, _COMPOSERS):
            if isinstance(cid, str) and cid and "#" not in cid:  # ("#": a session path's own)
                out.stats[cid] = _chat_stat(n, rowid, tops.get(cid), updated, created)
                out.places[cid] = _place(ident)
        # where a chat's own record names no folder: the headers (Cursor 3), table or key
        for cid, space, value in _rows(con, _HEADER_ROWS):
            value = _json(value)
            place = _place(value.get("workspaceIdentifier")) if isinstance(value, dict) \
                else (None, None)
            _fill(out, cid, place if place != (None, None) else (None, space))
        for (value,) in _rows(con, _HEADERS):
            doc = _json(value)
            heads = doc.get("allComposers") if isinstance(doc, dict) else doc
            for h in heads if isinstance(heads, list) else ():
                if isinstance(h, dict):
                    _fill(out, h.get("composerId"), _place(h.get("workspaceIdentifier")))
        return out
    return _snapshot(db, run)


def _fill(out: _Listing, cid, place) -> None:
    if isinstance(cid, str) and cid in out.places and out.places[cid] == (None, None):
        out.places[cid] = place


def _space(db: str) -> _Listing:
    """A workspace database's chats: the ids of those it lists (their records are global), and
    those it holds itself: chats inline in an older list, and the oldest chats' tabs."""
    def run(con):
        out = _Listing()
        for key, rowid, n, raw in _rows(con, _SPACE_KEYS):
            doc = _json(raw) if isinstance(n, int) and n <= ROW_MAX else None
            if not isinstance(doc, dict):
                continue
            if key == "composer.composerData":
                for c in _dicts(doc.get("allComposers")):
                    cid = c.get("composerId")
                    if isinstance(cid, str) and cid:
                        out.ids.add(cid)
                        if isinstance(c.get("conversation"), list) and c["conversation"] \
                                and "#" not in cid:
                            out.stats[cid] = _chat_stat(n, rowid, 0, c.get("lastUpdatedAt"),
                                                        c.get("createdAt"))
            else:
                for tab in _dicts(doc.get("tabs")):
                    tid = tab.get("tabId")
                    if isinstance(tid, str) and tid and "#" not in tid:
                        out.stats["tab:" + tid] = _chat_stat(n, rowid, 0, tab.get("lastSendTime"),
                                                             None)
        return out
    return _snapshot(db, run)


def _dicts(value) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _member(path: str) -> tuple[str, str]:
    """(database, chat id) of a session's path."""
    db, _sep, mid = path.rpartition("#")
    if not db.endswith("state.vscdb") or not mid:
        raise FileNotFoundError(f"{path}: not a Cursor chat")
    return db, mid


def _is_global(db: str) -> bool:
    return os.path.basename(os.path.dirname(db)) == "globalStorage"


# -- a chat's records --------------------------------------------------------------------------

class _Bubble:
    """What a bubble says, kept small: its record can hold a file's contents, a tool's output,
    images; only the text, the time and a tool call's name and arguments are read."""

    __slots__ = ("kind", "text", "ts", "tool", "args", "call", "failed")

    def __init__(self, b: dict):
        kind = b.get("type")
        self.kind = {"user": 1, "ai": 2, "assistant": 2}.get(kind, kind) \
            if isinstance(kind, str) else kind
        said = b.get("text")
        if not isinstance(said, str) or not said.strip():
            said = b.get("rawText")
        self.text = said[:_TEXT_WINDOW] if isinstance(said, str) else ""
        self.ts = _when(b.get("createdAt") if b.get("createdAt") is not None
                        else b.get("timestamp"))
        self.tool = self.args = self.call = None
        self.failed = False
        tf = b.get("toolFormerData")
        if isinstance(tf, dict) and isinstance(tf.get("name"), str):
            self.tool = tf["name"]
            args: dict = {}
            for k in ("params", "rawArgs"):  # (rawArgs, the model's own, win)
                got = _json(tf[k]) if isinstance(tf.get(k), str) else tf.get(k)
                if isinstance(got, dict):
                    args.update((a, v[:ARG_MAX] if isinstance(v, str) else v[:20])
                                for a, v in got.items()
                                if isinstance(v, (str, list)) and a in _ARGS)
            self.args = args
            self.call = tf.get("toolCallId")
            self.failed = tf.get("status") in ("error", "cancelled", "aborted") \
                or tf.get("userDecision") == "rejected"


_TEXT_WINDOW = 1_000_000 + (1 << 16)  # (text.MAX_TEXT and its slack: scrub cuts to it)
_ARGS = set(_PATHS) | set(_TEXTS) | {"command", "cmd", "explanation", "url", "instructions"}


class _Turns:
    """A session's messages, file changes and tool calls, in the order they were said. A reply
    is all the agent says after a prompt: one message, keyed by its first part (the indexer joins
    the parts of one key); what it did follows it (message_key)."""

    def __init__(self, d: SessionDelta, problems: list, cwd: str | None = None,
                 prompt: str | None = None, reply: str | None = None, titled: bool = False):
        from . import text  # (only once a session is read, never by a hook)
        self.d, self.cwd = d, cwd
        self.scrub = text.scrubber(problems)  # redacted and cut, as every source's text is
        self.prompt, self.reply, self.titled = prompt, reply, titled
        self.said: list[str] = []  # the reply so far: a change's explanation
        self.done: list = []  # this turn's calls and changes
        self.names: dict[str, str] = {}

    def clean(self, said) -> str:
        from . import text  # (only once a session is read, never by a hook)
        return self.scrub(text.strip_private(said.strip())) if isinstance(said, str) else ""

    def user(self, key: str, said, ts) -> None:
        from .. import titles  # (only once a session is read, never by a hook)
        said = self.clean(said)
        if not said:
            return
        self.close()
        self.d.messages.append(Message(key, "user", said, ts))
        if not self.titled:
            self.d.first_prompt, self.titled = titles.clean_first_prompt(said), True
        self.prompt, self.reply, self.said = key, None, []
        self.d.seen(ts)

    def say(self, key: str, said, ts) -> None:
        said = self.clean(said)
        if not said or said == "[REDACTED]":  # (Cursor's stand-in for reasoning it keeps back)
            return
        self.reply = self.reply or key
        self.d.messages.append(Message(self.reply, "assistant", said, ts,
                                       pairs_with=self.prompt))
        self.said.append(said)
        self.d.seen(ts)

    def tool(self, name, args, ts, call, failed: bool = False) -> None:
        """A tool's call: a command, a file changed (unless it failed or was rejected), or
        another, with what it acts on."""
        from . import tool_calls  # (only once a session is read, never by a hook)
        args = args if isinstance(args, dict) else {}
        low = name.lower() if isinstance(name, str) else ""
        why = args.get("explanation") or args.get("description") or args.get("instructions")
        if low in _COMMANDS:
            c = tool_calls.make(name, tool_calls.command_text(args.get("command") or
                                                              args.get("cmd")),
                                why, self.scrub, kind="command", ts=ts, call=call,
                                names=self.names)
        else:
            target, kind = _target(args)
            c = tool_calls.make(name, target, why, self.scrub, kind=kind, ts=ts, call=call,
                                names=self.names)
            if low in _EDITS and kind == "path" and not failed:
                self.change(target, name, ts)
        self.d.tool_calls.append(c)
        self.done.append(c)
        self.d.seen(ts)

    def change(self, path, tool, ts) -> None:
        from . import text  # (only once a session is read, never by a hook)
        if not isinstance(path, str) or not path.strip() or "\x00" in path:
            return
        path = path.strip()
        if self.cwd and not os.path.isabs(path):
            path = os.path.join(self.cwd, path)
        c = FileChange(path[:4096], tool, text.tail(" ".join(self.said), 500), ts)
        self.d.file_changes.append(c)
        self.done.append(c)

    def close(self) -> None:
        key = self.reply or self.prompt
        for x in self.done:
            x.message_key = key
        self.done = []

    def finish(self) -> None:
        self.close()
        seen: set = set()
        kept = []
        for c in self.d.file_changes:  # the first of each (path, message)
            if (c.path, c.message_key) not in seen:
                seen.add((c.path, c.message_key))
                kept.append(c)
        self.d.file_changes = kept


def _target(args: dict) -> tuple[str | None, str]:
    """(what a call acts on, what that is) from its arguments."""
    for k in _PATHS:
        v = args.get(k)
        if isinstance(v, list):  # ("paths": the first)
            v = next((p for p in v if isinstance(p, str)), None)
        if isinstance(v, str) and v.strip():
            return v, "path"
    if isinstance(args.get("url"), str) and args["url"]:
        return args["url"], "url"
    for k in _TEXTS:
        if isinstance(args.get(k), str) and args[k].strip():
            return args[k], ""
    return None, ""


def _user_query(said) -> str | None:
    """A person's prompt as the agent's transcripts hold it: within <user_query>, after the
    context Cursor adds (none when a message is only that context)."""
    if not isinstance(said, str):
        return None
    start = said.find("<user_query>")
    if start >= 0:
        end = said.find("</user_query>", start)
        return said[start + 12:end if end >= 0 else None]
    if any(tag in said for tag in _CONTEXT_TAGS):
        return None
    return said


def _composer_session(cid: str, doc, bubbles: dict[str, _Bubble], problems: list, unk: set,
                      cwd: str | None, source: tuple) -> SessionDelta:
    """A chat's session from its record and its bubbles (by id; an older record's are inline)."""
    from .. import titles  # (only once a session is read, never by a hook)
    d = SessionDelta(cid, source[0], source[1])
    if not isinstance(doc, dict):
        problems.append(f"chat {cid[:80]}: its record is not a chat ({type(doc).__name__})")
        return d
    turns = _Turns(d, problems, cwd)
    name = doc.get("name")
    if isinstance(name, str) and name.strip().lower() not in PLACEHOLDERS:
        d.custom_title = titles.normalize(turns.clean(name))
    d.seen(_when(doc.get("createdAt")))
    d.seen(_when(doc.get("lastUpdatedAt")))
    heads = doc.get("fullConversationHeadersOnly")
    inline = doc.get("conversation")
    order: list[tuple[str, _Bubble | None]] = []
    if isinstance(heads, list) and heads and (bubbles or not isinstance(inline, list)):
        for n, h in enumerate(heads):
            bid = h.get("bubbleId") if isinstance(h, dict) else h
            if isinstance(bid, str):
                order.append((bid, bubbles.get(bid)))
            else:
                problems.append(f"chat {cid[:80]}: header {n} names no bubble")
    elif isinstance(inline, list) and inline:
        order = [(_bubble_id(b) or f"{cid}:{n}", _Bubble(b))
                 for n, b in enumerate(inline) if isinstance(b, dict)]
    elif isinstance(doc.get("conversationMap"), dict) and doc["conversationMap"]:
        order = [(str(k), _Bubble(b)) for k, b in doc["conversationMap"].items()
                 if isinstance(b, dict)]
    elif not any(k in doc for k in ("fullConversationHeadersOnly", "conversation",
                                    "conversationMap", "text", "richText")):
        unk.add("chat record of another shape")
        problems.append(f"chat {cid[:80]}: a record of a shape this version does not read "
                        f"(version {repr(doc.get('_v'))[:40]}): not indexed")
        return d
    missing = sum(b is None for _bid, b in order)
    if missing:
        problems.append(f"chat {cid[:80]}: {missing} of its {len(order)} messages not in the "
                        "database: the others indexed")
    blocks = _applied_blocks(doc.get("codeBlockData"))
    for bid, b in order:
        if b is None:
            continue
        if b.kind == 1:
            turns.user(bid, b.text, b.ts)
        elif b.kind == 2:
            turns.say(bid, b.text, b.ts)
            if b.tool:
                turns.tool(b.tool, b.args, b.ts, b.call, b.failed)
            for path in blocks.get(bid, ()):
                turns.change(path, "edit", b.ts)
        else:
            unk.add(f"bubble type {str(b.kind)[:20]}")
    turns.finish()
    return d


def _bubble_id(b: dict) -> str | None:
    bid = b.get("bubbleId") or b.get("id")  # (an aichat tab's bubbles: "id")
    return bid if isinstance(bid, str) and bid else None


def _applied_blocks(data) -> dict[str, list[str]]:
    """bubble id -> the files its code blocks changed (`codeBlockData`: by file, the blocks the
    agent wrote, each with its bubble; one applied and not rejected is a change, one only
    suggested is not)."""
    out: dict[str, list[str]] = {}
    for uri, blocks in data.items() if isinstance(data, dict) else ():
        for block in blocks.values() if isinstance(blocks, dict) else ():
            if isinstance(block, dict) and isinstance(block.get("bubbleId"), str) \
                    and block.get("status") != "rejected" \
                    and (block.get("status") in ("accepted", "applied")
                         or _ms(block.get("lastAppliedAt"))):
                path = _uri_path(block.get("uri")) or _uri_path(uri)
                if path:
                    out.setdefault(block["bubbleId"], []).append(path)
    return out


def _read_global(con, cid: str, problems: list, unk: set, cwd: str | None):
    """(session, size) of a chat of the global database, in the caller's transaction."""
    from . import text  # (only once a session is read, never by a hook)
    row = con.execute("SELECT rowid, length(value), CASE WHEN length(value) <= ? THEN"
                      " CAST(value AS BLOB) END, CASE WHEN json_valid(CAST(value AS TEXT)) THEN"
                      " json_extract(CAST(value AS TEXT), '$.lastUpdatedAt') END,"
                      " CASE WHEN json_valid(CAST(value AS TEXT)) THEN"
                      " json_extract(CAST(value AS TEXT), '$.createdAt') END"
                      " FROM cursorDiskKV WHERE key = ?", (ROW_MAX, "composerData:" + cid)
                      ).fetchone()
    if row is None:
        raise FileNotFoundError(f"chat {cid[:80]}: no longer in the database")
    rowid, n, raw, updated, created = row
    lo, hi = f"bubbleId:{cid}:", f"bubbleId:{cid};"
    top = con.execute("SELECT max(rowid) FROM cursorDiskKV WHERE key >= ? AND key < ?",
                      (lo, hi)).fetchone()[0]
    size = _chat_stat(n, rowid, top, updated, created)[0]
    if raw is None:
        raise text.TooBig(f"chat {cid[:80]}: a record of {n:,} bytes, past the {ROW_MAX >> 20} MB "
                          "read: not read")
    doc = _json(raw)
    bubbles, big, bad = {}, 0, 0
    for bid, _n, value in con.execute(
            "SELECT substr(key, ?), length(value), CASE WHEN length(value) <= ? THEN"
            " CAST(value AS BLOB) END FROM cursorDiskKV WHERE key >= ? AND key < ?",
            (len(lo) + 1, ROW_MAX, lo, hi)):
        b = _json(value) if value is not None else None
        if value is None:
            big += 1
        elif isinstance(b, dict):
            bubbles[bid] = _Bubble(b)  # (its record freed at once: only what is read stays)
        elif b is not None or value:
            bad += 1
    if big:
        problems.append(f"chat {cid[:80]}: {big} messages past {ROW_MAX >> 20} MB (pasted images?) "
                        "skipped")
    if bad:
        problems.append(f"chat {cid[:80]}: {bad} messages that are not JSON objects skipped")
    return _composer_session(cid, doc, bubbles, problems, unk, cwd, names.CURSOR), size


def _read_space(con, mid: str, problems: list, unk: set, cwd: str | None):
    """(session, size) of a chat a workspace's database holds itself."""
    key = "workbench.panel.aichat.view.aichat.chatdata" if mid.startswith("tab:") \
        else "composer.composerData"
    row = con.execute("SELECT rowid, length(value), CASE WHEN length(value) <= ? THEN"
                      " CAST(value AS BLOB) END FROM ItemTable WHERE key = ?", (ROW_MAX, key)
                      ).fetchone()
    if row is None or row[2] is None:
        raise FileNotFoundError(f"chat {mid}: no longer in the database")
    rowid, n, raw = row
    doc = _json(raw)
    doc = doc if isinstance(doc, dict) else {}
    if mid.startswith("tab:"):
        tab = next((t for t in _dicts(doc.get("tabs")) if t.get("tabId") == mid[4:]), None)
        if tab is None:
            raise FileNotFoundError(f"chat {mid}: no longer in the database")
        size = _chat_stat(n, rowid, 0, tab.get("lastSendTime"), None)[0]
        record = {"name": tab.get("chatTitle"), "lastUpdatedAt": tab.get("lastSendTime"),
                  "conversation": tab.get("bubbles") or []}
        return _composer_session(mid[4:], record, {}, problems, unk, cwd, names.CURSOR), size
    c = next((c for c in _dicts(doc.get("allComposers")) if c.get("composerId") == mid), None)
    if c is None:
        raise FileNotFoundError(f"chat {mid}: no longer in the database")
    size = _chat_stat(n, rowid, 0, c.get("lastUpdatedAt"), c.get("createdAt"))[0]
    return _composer_session(mid, c, {}, problems, unk, cwd, names.CURSOR), size


# -- the CLI's files ---------------------------------------------------------------------------

def _transcript_id(path: str) -> str:
    return os.path.basename(path).rsplit(".", 1)[0]


def read_transcript(path: str, offset: int, state: dict | None, folder: str | None,
                    store: str | None, mtime: float | None = None):
    """(sessions, end, state, problems) of an agent transcript read on from `offset`: its lines
    have neither times nor ids, so a message is dated by the file and keyed by where its line
    ends (a transcript only grows); the prompt and reply being read are kept in `state`."""
    from .jsonl import JsonlReader  # (only once a transcript is read, never by a hook)
    state = dict(state or {})
    problems: list[str] = []
    d = SessionDelta(_transcript_id(path), names.CURSOR_AGENT[0], names.CURSOR_AGENT[1])
    d.cwd = folder
    turns = _Turns(d, problems, folder, state.get("prompt"), state.get("reply"),
                   bool(state.get("titled")))
    try:
        ts = mtime if mtime is not None else os.lstat(path).st_mtime
    except OSError:
        ts = None
    noted = set(state.get("unk", ())) - KNOWN_TYPES
    unk: set[str] = set()
    reader = JsonlReader(path, offset, mtime=mtime)
    for obj in reader:
        try:
            _take_line(obj, f"L{reader.end}", turns, ts, unk)
        except (TypeError, ValueError, AttributeError, KeyError) as e:
            reader.bad(reader.end, f"unreadable record ({type(e).__name__})")
    turns.finish()
    if offset == 0 and store:  # the chat's name and start, where its store.db has them
        meta = _store_meta(store)
        name = meta.get("name")
        if isinstance(name, str) and name.strip().lower() not in PLACEHOLDERS:
            from .. import titles  # (only once a transcript is read, never by a hook)
            d.custom_title = titles.normalize(turns.clean(name))
        d.seen(_when(meta.get("createdAt")))
    state.update(prompt=turns.prompt, reply=turns.reply, titled=turns.titled)
    if noted | unk:
        state["unk"] = sorted(noted | unk)[:50]
    new = unk - noted
    if new:
        problems.append(f"record types this version does not read, skipped: "
                        f"{', '.join(sorted(new)[:10])}")
    problems = reader.problems + problems
    if reader.bad_lines > len(reader.problems):
        problems.append(f"... {reader.bad_lines} bad lines in all")
    return ([] if _empty(d) else [d]), reader.end, state, problems


def _take_line(obj: dict, key: str, turns: _Turns, ts, unk: set) -> None:
    role = obj.get("role")
    if role is None:  # (a marker: {"type": "turn_ended", ...})
        kind = obj.get("type")
        if str(kind) not in KNOWN_TYPES:
            unk.add(f"line {str(kind)[:40]}")
        return
    msg = obj.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    _take_message(role, content, key, turns, ts, unk)


def _take_message(role, content, key: str, turns: _Turns, ts, unk: set) -> None:
    """One message of the CLI's, in either of its shapes: a transcript's (Anthropic's blocks:
    text, tool_use) or a store.db's (the AI SDK's parts: text, reasoning, tool-call)."""
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return
    if role == "user":
        said = "\n".join(b["text"] for b in content if isinstance(b, dict)
                         and b.get("type") == "text" and isinstance(b.get("text"), str))
        turns.user(key, _user_query(said), ts)
        return
    if role != "assistant":
        if f"role {role}" not in KNOWN_TYPES:
            unk.add(f"role {str(role)[:40]}")
        return
    for b in content:
        if not isinstance(b, dict):
            continue
        kind = b.get("type")
        if kind == "text":
            turns.say(key, b.get("text"), ts)
        elif kind in ("tool_use", "tool_call", "tool-call"):
            turns.tool(b.get("name") or b.get("toolName"), b.get("input") or b.get("args"),
                       ts, b.get("id") or b.get("toolCallId"))
        elif f"block {kind}" not in KNOWN_TYPES:
            unk.add(f"block {str(kind)[:40]}")
            turns.say(key, b.get("text"), ts)  # (a new kind of block: its text, if it has one)


def _hex_json(value) -> dict:
    """The chat's meta record: JSON, in hexadecimal."""
    try:
        raw = bytes.fromhex(value) if isinstance(value, str) else value
    except ValueError:
        raw = value.encode() if isinstance(value, str) else None
    got = _json(raw)
    return got if isinstance(got, dict) else {}


def _store_meta(db: str) -> dict:
    try:
        return _snapshot(db, lambda con: _hex_json(
            (_rows(con, "SELECT value FROM meta WHERE key = '0'") or [(None,)])[0][0]))
    except (OSError, ValueError):
        return {}


def _proto(data: bytes) -> tuple[list[str], list[dict]]:
    """(child blob ids, JSON messages) of a tree blob: protobuf fields, the ids 32-byte strings of
    field 1, a message the JSON text of another field."""
    ids: list[str] = []
    found: list[dict] = []
    i, n = 0, len(data)
    while i < n:
        tag, i = _varint(data, i)
        field, wire = tag >> 3, tag & 7
        if wire == 0:
            _v, i = _varint(data, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            size, i = _varint(data, i)
            part = data[i:i + size]
            i += size
            if field == 1 and size == 32:
                ids.append(part.hex())
            elif part[:1] == b"{":
                obj = _json(part)
                if isinstance(obj, dict) and "role" in obj:
                    found.append(obj)
        else:
            break  # (not protobuf, or a kind this version does not read)
    return ids, found


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while i < len(data) and shift < 64:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i
    return value, len(data) + 1  # (cut short: ends the walk)


def read_store(db: str, folder: str | None, problems: list, unk: set) -> SessionDelta | None:
    """An older CLI chat, from its store.db: the messages under its latest root blob, in order."""
    from . import text  # (only once a chat is read, never by a hook)

    def run(con):
        meta = _hex_json((_rows(con, "SELECT value FROM meta WHERE key = '0'")
                          or [(None,)])[0][0])
        if not meta:
            raise ValueError("no chat in its meta table")
        todo: list = [("blob", meta.get("latestRootBlobId"))]
        seen: set = set()
        said: list[tuple[str, dict]] = []
        big = 0
        while todo and len(seen) < BLOBS_MAX:
            kind, item = todo.pop()
            if kind == "msg":
                said.append(item)
                continue
            if not isinstance(item, str) or item in seen:
                continue
            seen.add(item)
            row = con.execute("SELECT length(data), CASE WHEN length(data) <= ? THEN"
                              " CAST(data AS BLOB) END FROM blobs WHERE id = ?",
                              (ROW_MAX, item)).fetchone()
            if row is None:
                continue
            if row[1] is None:
                big += 1
                continue
            data = bytes(row[1])
            if data[:1] == b"{":
                obj = _json(data)
                if isinstance(obj, dict):
                    said.append((item, obj))
                continue
            ids, found = _proto(data)
            todo.extend(reversed([("blob", i) for i in ids]
                                 + [("msg", (f"{item}:{n}", o)) for n, o in enumerate(found)]))
        if big:
            problems.append(f"{big} messages past {ROW_MAX >> 20} MB skipped")
        return meta, said
    meta, said = _snapshot(db, run)
    sid = meta.get("agentId") if isinstance(meta.get("agentId"), str) else \
        os.path.basename(os.path.dirname(db))
    d = SessionDelta(sid, names.CURSOR_AGENT[0], names.CURSOR_AGENT[1])
    d.cwd = folder
    turns = _Turns(d, problems, folder)
    name = meta.get("name")
    if isinstance(name, str) and name.strip().lower() not in PLACEHOLDERS:
        from .. import titles  # (only once a chat is read, never by a hook)
        d.custom_title = titles.normalize(turns.clean(name))
    for key, m in said:
        _take_message(m.get("role"), m.get("content"), key, turns, None, unk)
    turns.finish()
    d.seen(_when(meta.get("createdAt")))
    text.dated_by_file(d, _store_stat(db).st_mtime)
    return d


def _store_stat(db: str) -> RowStat:
    """A store.db as its changes show: its WAL holds the newest (a write there changes no byte
    of the database itself until a checkpoint)."""
    st = os.lstat(db)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(f"{db}: not a regular file")
    try:
        wal = os.lstat(db + "-wal")
        more, when = wal.st_size, wal.st_mtime_ns
    except OSError:
        more, when = 0, 0
    return RowStat(st.st_size + more, max(st.st_mtime_ns, when))


def _ide_chats() -> set[str] | None:
    """The ids of the IDE's chats (None: a database could not be read, so none can be told)."""
    ids: set[str] = set()
    for user in user_dirs():
        db = os.path.join(user, "globalStorage", "state.vscdb")
        if os.path.lexists(db):
            try:
                ids.update(_cached(db, _global).stats)
            except (OSError, ValueError):
                return None
    return ids


# -- the sources -------------------------------------------------------------------------------

def _empty(d: SessionDelta) -> bool:
    return not (d.messages or d.file_changes or d.tool_calls or d.custom_title)


def _here(folder: str | None, ws: str) -> bool:
    return bool(folder) and is_within(os.path.normpath(folder or ""), ws)


class Cursor(Source):
    """The IDE's chats (see above): read whole, one snapshot of its database, when its rows
    change. Cursor resumes a chat only in its window: there is no command for it."""
    (name, label, product), mode, agent = names.CURSOR, "snapshot", "Cursor"

    def locations(self, ws: str) -> list[str]:
        return user_dirs()

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        """This workspace's chats (or a folder's inside it): those whose folder Cursor records.
        A database that cannot be read now is an OSError: what the index holds stays."""
        return [(p, f) for p, f in self._chats(folders, ws) if _here(f, ws)]

    def everywhere(self, known: dict) -> list[tuple[str, tuple[str, ...]]]:
        """Every chat whose folder Cursor records (one it does not: nobody's)."""
        return [(p, (f,)) for p, f in self._chats(None, None)]

    def _chats(self, folders: list | None, within: str | None) -> list[tuple[str, str]]:
        """(path, folder) of each chat (of the workspaces in `within`: their databases alone
        are opened)."""
        out: list[tuple[str, str]] = []
        for user in user_dirs():
            db = os.path.join(user, "globalStorage", "state.vscdb")
            spaces = self._spaces(user, folders)
            watch(folders, db)
            watch(folders, db + "-wal")  # (Cursor's writes land there first)
            listed: dict[str, str] = {}  # chat id -> the folder of the workspace listing it
            held = []
            for sd, folder in spaces:
                if not folder or (within is not None and not is_within(folder, within)):
                    continue
                wdb = os.path.join(sd, "state.vscdb")
                watch(folders, wdb)
                watch(folders, wdb + "-wal")
                if os.path.lexists(wdb):
                    s = _cached(wdb, _space)
                    for cid in s.ids:
                        listed.setdefault(cid, folder)
                    held.append((wdb, folder, s))
            listing = _cached(db, _global) if os.path.lexists(db) else _Listing()
            chats, places = listing.stats, listing.places
            by_space = {os.path.basename(sd): f for sd, f in spaces if f}
            for cid in chats:
                folder, space = places.get(cid, (None, None))
                folder = folder or by_space.get(space or "") or listed.get(cid)
                if folder:
                    out.append((f"{db}#{cid}", folder))
            for wdb, folder, s in held:  # chats a workspace holds itself (not also global)
                out += [(f"{wdb}#{mid}", folder) for mid in s.stats
                        if mid.startswith("tab:") or mid not in chats]
        return out

    def _spaces(self, user: str, folders: list | None) -> list[tuple[str, str | None]]:
        """(storage folder, the workspace's folder) of each of Cursor's workspaces."""
        from . import copilot  # (VS Code's workspace.json, which Cursor writes as VS Code does)
        out = []
        for sd in subdirs(os.path.join(user, "workspaceStorage"), folders):
            folder = copilot.workspace_folder(sd)
            if folder and folder.endswith(".code-workspace"):  # (a multi-root workspace's file)
                folder = os.path.dirname(folder)
            out.append((sd, os.path.normpath(folder) if folder else None))
        return out

    def stat(self, path: str):
        """A chat's RowStat, from its database's listing (one query for all its chats, made
        again only once the database changed)."""
        if "#" not in path:
            return os.lstat(path)
        db, mid = _member(path)
        got = _cached(db, _global if _is_global(db) else _space).stats.get(mid)
        if got is None:
            raise FileNotFoundError(f"{path}: no such chat")
        return RowStat(*got)

    def backing(self, path: str) -> str:
        return _member(path)[0] if "#" in path else path

    def read(self, path, extra, offset, state):
        """One chat, read whole in one transaction. Raises OSError (busy, gone), ValueError (a
        database, or a record, this version cannot read)."""
        db, mid = _member(path)
        problems: list[str] = []
        unk: set[str] = set()
        cwd = extra if isinstance(extra, str) else None
        reader = _read_global if _is_global(db) else _read_space
        d, size = _snapshot(db, lambda con: reader(con, mid, problems, unk, cwd))
        d.cwd = cwd
        state = {"unk": sorted(unk)} if unk else {}
        if unk:
            problems.append(f"record types this version does not read, skipped: "
                            f"{', '.join(sorted(unk))}")
        return ([] if _empty(d) else [d]), size, state, problems

    def in_scope(self, delta, ws: str) -> bool:
        return _here(delta.cwd, ws)

    def knows(self, kind: str) -> bool:
        return kind in KNOWN_TYPES

    def sample(self, ws: str, text: str) -> str:
        """A chat of `ws` in a global database of Cursor 3's shape (the folder in
        composer.composerHeaders), as the IDE writes it."""
        import json  # (the contract test's sample only)
        import sqlite3
        from pathlib import Path
        db = os.path.join(self.locations(ws)[0], "globalStorage", "state.vscdb")
        os.makedirs(os.path.dirname(db), exist_ok=True)
        t0 = 1_767_000_000_000
        con = sqlite3.connect(db)
        with con:
            for table in ("ItemTable", "cursorDiskKV"):
                con.execute(f"CREATE TABLE IF NOT EXISTS {table} "
                            "(key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
            where = {"id": "w1", "uri": {"$mid": 1, "fsPath": ws, "external": Path(ws).as_uri(),
                                         "path": ws, "scheme": "file"}}
            rows = {
                "composerData:abc": {"_v": 10, "composerId": "abc", "name": "", "status":
                                     "completed", "createdAt": t0, "lastUpdatedAt": t0 + 5000,
                                     "fullConversationHeadersOnly": [
                                         {"bubbleId": "b1", "type": 1},
                                         {"bubbleId": "b2", "type": 2}]},
                "bubbleId:abc:b1": {"_v": 3, "type": 1, "bubbleId": "b1", "text": text,
                                    "createdAt": "2025-12-29T09:20:00.000Z"},
                "bubbleId:abc:b2": {"_v": 3, "type": 2, "bubbleId": "b2", "text": "ok",
                                    "createdAt": "2025-12-29T09:20:05.000Z"}}
            con.executemany("INSERT INTO cursorDiskKV VALUES (?, ?)",
                            [(k, json.dumps(v)) for k, v in rows.items()])
            con.execute("INSERT INTO ItemTable VALUES ('composer.composerHeaders', ?)", (
                json.dumps({"allComposers": [{"type": "head", "composerId": "abc", "name": "",
                                              "createdAt": t0, "lastUpdatedAt": t0 + 5000,
                                              "workspaceIdentifier": where}]}),))
        con.close()
        return f"{db}#abc"


class CursorAgent(Source):
    """The cursor-agent CLI's chats (see above): transcripts read on as they grow, an older
    chat's store.db read whole when it changes. `cursor-agent --resume <chatId>` resumes one,
    from the folder it ran in (Cursor's CLI docs, docs.cursor.com/en/cli/using, "History")."""
    (name, label, product), mode, agent = names.CURSOR_AGENT, "append", "Cursor"
    resume = "cursor-agent --resume {id}"

    def locations(self, ws: str) -> list[str]:
        home = agent_home()
        return [os.path.join(home, "projects"), os.path.join(home, "chats")]

    def looks_at(self, ws: str) -> list:
        return self.locations(ws) + user_dirs()  # (the IDE's chats are left to it)

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        """This workspace's chats and its folders': the transcripts of its project folders, and
        the store.db of a chat that has none."""
        mine = _key(ws)
        if not mine:
            return []
        projects, chats = self.locations(ws)
        places = {}
        for pdir, name in self._projects(projects, folders):
            k = _key(name)
            if k == mine:
                places[pdir] = os.path.normpath(ws)
            elif k.startswith(mine + "-"):
                got = _resolve(ws, k[len(mine) + 1:])
                if got:
                    places[pdir] = os.path.normpath(got)
        return self._found(places, {os.path.normpath(ws)}, chats, folders)

    def everywhere(self, known: dict) -> list[tuple[str, tuple[str, ...]]]:
        """Every chat whose folder can be told: a project folder's name, read back against the
        disk (a folder since moved or deleted is nobody's), and the md5 of that folder for an
        older chat's store.db (a chat folder of no project folder: nobody's)."""
        projects, chats = self.locations("")
        places = {}
        for pdir, name in self._projects(projects, None):
            folder = known.get(pdir)  # (read back once; again if that folder is gone)
            if not (isinstance(folder, str) and os.path.isdir(folder)):
                folder = _root_of(name)
                if folder:
                    known[pdir] = folder
            if folder:
                places[pdir] = os.path.normpath(folder)
        return [(p, (x[0],)) for p, x in self._found(places, set(), chats, None)]

    def _projects(self, root: str, folders: list | None) -> list[tuple[str, str]]:
        return [(p, os.path.basename(p)) for p in subdirs(root, folders)]

    def _found(self, places: dict[str, str], also: set[str], chats: str, folders: list | None):
        """(path, (folder, its store.db or None)) of the chats of these project folders, and
        of these folders (`also`) and theirs in chats/."""
        def transcript(n: str) -> bool:
            return n.endswith(".jsonl")
        found: dict[str, tuple[str, str]] = {}
        for pdir, folder in places.items():
            for p in _files(os.path.join(pdir, "agent-transcripts"), transcript, folders):
                if os.path.basename(os.path.dirname(p)) != "subagents":  # (see the report)
                    found.setdefault(_transcript_id(p), (p, folder))
        stores: dict[str, tuple[str, str]] = {}
        for folder in sorted(set(places.values()) | also):
            for p in _files(os.path.join(chats, _md5(folder)), lambda n: n == "store.db",
                            folders):
                stores.setdefault(os.path.basename(os.path.dirname(p)), (p, folder))
        for user in user_dirs():  # (the IDE's chats: a new one there changes this listing)
            watch(folders, os.path.join(user, "globalStorage", "state.vscdb"))
            watch(folders, os.path.join(user, "globalStorage", "state.vscdb-wal"))
        ide = _ide_chats() if found else set()
        out: list[tuple[str, object]] = []
        for cid, (p, folder) in sorted(found.items()):
            # the IDE's agent writes transcripts of its chats too: those are the IDE's
            if cid in stores or (ide is not None and cid not in ide):
                out.append((p, (folder, stores.get(cid, (None,))[0])))
        out += [(p, (folder, p)) for cid, (p, folder) in sorted(stores.items())
                if cid not in found]
        return out

    def stat(self, path: str):
        return _store_stat(path) if path.endswith(".db") else os.lstat(path)

    def whole(self, path: str) -> bool:
        return path.endswith(".db")  # (a store.db is rewritten in place; a transcript grows)

    def read(self, path, extra, offset, state):
        folder, store = extra if isinstance(extra, tuple) and len(extra) == 2 else (None, None)
        if path.endswith(".db"):
            problems: list[str] = []
            unk: set[str] = set()
            size = _store_stat(path).st_size
            d = read_store(path, folder, problems, unk)
            if unk:
                problems.append(f"record types this version does not read, skipped: "
                                f"{', '.join(sorted(unk))}")
            return ([] if d is None or _empty(d) else [d]), size, \
                ({"unk": sorted(unk)} if unk else {}), problems
        return read_transcript(path, offset, state, folder, store)

    def in_scope(self, delta, ws: str) -> bool:
        return _here(delta.cwd, ws)


    def knows(self, kind: str) -> bool:
        return kind in KNOWN_TYPES

    def sample(self, ws: str, text: str) -> str:
        """A transcript of `ws`, as the CLI writes it (agent-transcripts/<id>/<id>.jsonl)."""
        folder = os.path.join(self.locations(ws)[0], _key(ws), "agent-transcripts", "cli1")
        return sample_file(os.path.join(folder, "cli1.jsonl"), [
            {"role": "user", "message": {"content": [
                {"type": "text", "text": f"<user_query>\n{text}\n</user_query>"}]}},
            {"role": "assistant", "message": {"content": [{"type": "text", "text": "ok"}]}}])
