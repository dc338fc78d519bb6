"""The storage's types, what every engine shares with its callers (one module: each more one
imports costs every hook's start about 0.1 ms):

    errors       StoreError and its kinds: what any engine raises for its driver's errors
    message ids  `session << SHIFT | ordinal`: session_of, first_id, last_id, count_by_session
    Words        a word query, and AnyWords
    rows         what reads return: named tuples, not positional ones (`row.text`, not `row[3]`)
"""
from __future__ import annotations

from collections import Counter, namedtuple

from ..errors import Failure


# -- errors -----------------------------------------------------------------------------------
# The storage's errors: what any engine raises, so no caller needs to know the driver.

class StoreError(Failure):
    """Trouble with the index itself (not with a source file): every driver error leaves the
    storage package as one of these, so no caller needs to know the driver. `path`: the
    index's file, so that the one damaged among several is known (scope.Scope.guarded)."""

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


class TooManyMessages(ValueError):
    """A session whose file holds more messages than an id can number: that file's doing (a
    hostile or broken file), not the index's, so the file is marked failed and the run goes on."""


class ForeignIndex(StoreError):
    """The database carries no valid stamp of this user's prima-memory (see owner.py): it is
    never used, and nothing is recovered from it; the caller moves it aside and rebuilds."""

    def __init__(self, path: str, why: str):
        super().__init__(f"{path} {why}", path)
        self.why = why


class SchemaMismatch(StoreError):
    """The index is of a schema version this prima-memory cannot migrate (a newer one's)."""

    def __init__(self, found, needs: int):
        super().__init__(f"index schema version {found}, this prima-memory needs {needs}")
        self.found = found


# -- message ids ------------------------------------------------------------------------------
# Message ids: `session << SHIFT | ordinal`, so a message's id names its session, and a
# session's messages are one range of ids. Only the storage packs and unpacks them; the helpers
# work on ints and on numpy arrays of ids alike.

SHIFT = 24  # ordinals per session: 16M fragments, far past any real transcript


def session_of(message_id):
    """The session of a message id (or of each id in a numpy array)."""
    return message_id >> SHIFT


def first_id(session: int) -> int:
    """The lowest id a session's message can have."""
    return session << SHIFT


def last_id(session: int) -> int:
    """The highest id a session's message can have."""
    return ((session + 1) << SHIFT) - 1


def ordinal_of(message_id: int) -> int:
    """A message's place among its session's (0 the first taken)."""
    return message_id & ((1 << SHIFT) - 1)



def count_by_session(message_ids) -> Counter:
    """session -> how many of these message ids are its (the ids unpacked inline: a common
    word's 20,000 matching messages, counted without a call each)."""
    return Counter(m >> SHIFT for m in message_ids)


# -- word queries -----------------------------------------------------------------------------
# Word queries: what search asks the keyword index, in no engine's dialect.
#
# A Words asks for the messages holding, for every one of its groups, one of the group's terms
# (index terms, as the store lists them: Store.terms_containing, Store.terms_starting): one
# query word, its tokens each a group of the terms that contain it, or of its forms. AnyWords
# asks for the messages any of several Words finds. Either is false when it can find nothing
# (a group without a term; no Words that can): the caller need not ask.

class Words:
    __slots__ = ("groups",)

    def __init__(self, groups=()):
        self.groups: tuple[tuple[str, ...], ...] = tuple(tuple(g) for g in groups)

    def __bool__(self) -> bool:
        return bool(self.groups) and all(self.groups)

    def __eq__(self, other) -> bool:
        return isinstance(other, Words) and other.groups == self.groups

    def __hash__(self) -> int:
        return hash(self.groups)

    def __repr__(self) -> str:
        return f"Words({self.groups!r})"


class AnyWords:
    __slots__ = ("words",)

    def __init__(self, words=()):
        self.words: tuple[Words, ...] = tuple(w for w in words if w)

    def __bool__(self) -> bool:
        return bool(self.words)

    def __repr__(self) -> str:
        return f"AnyWords({self.words!r})"


# -- rows -------------------------------------------------------------------------------------
# The rows reads return: named tuples, not positional ones (`row.text`, not `row[3]`).
#
# namedtuple, not dataclass or typing.NamedTuple: the hooks import this module, and those cost
# 5-30 ms to import; the type checker sees typed NamedTuples of the same fields.

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


if TYPE_CHECKING:
    class MessageRow(NamedTuple):
        """A message with text: `sidechain` 1 in a subagent's thread."""
        id: int
        role: str
        ts: float | None
        sidechain: int
        text: str

    class ExchangeRow(NamedTuple):
        """A prompt and the reply to it (the reply's message id)."""
        id: int
        ts: float | None
        prompt: str | None
        reply: str

    class FileChangeRow(NamedTuple):
        path: str
        tool: str | None
        explanation: str | None
        ts: float | None

    class ToolCallRow(NamedTuple):
        """A tool call, with the message it follows (None where the session holds none of
        that key) and its id in its file."""
        ts: float | None
        sidechain: int
        tool: str
        target: str
        line: str
        kind: str
        message_id: int | None
        message_ts: float | None
        call: str | None

    class FailedCall(NamedTuple):
        """A command call that failed, with the line naming its error."""
        session: int
        ts: float | None
        tool: str
        target: str
        error: str

    class LastCall(NamedTuple):
        ts: float | None
        tool: str
        target: str
        line: str

    class SessionFacts(NamedTuple):
        """What keyword ranking reads of a session beside its matches."""
        id: int
        started_at: float  # (a session a search may return has started)
        ended_at: float | None
        files_count: int
else:
    def _item(i: int):
        return lambda row: row[i]

    def _row(name: str, fields: str) -> type:
        """A tuple type with named fields, made without namedtuple's cost (it compiles code for
        each type: 0.1 ms of every hook's start, a type): its fields as properties, and _make
        to build one from a row."""
        names = tuple(fields.split())

        def __repr__(self) -> str:
            return f"{name}({', '.join(f'{n}={v!r}' for n, v in zip(names, self))})"
        ns = {"__slots__": (), "_fields": names, "_make": classmethod(tuple.__new__),
              "__repr__": __repr__, **{n: property(_item(i)) for i, n in enumerate(names)}}
        return type(name, (tuple,), ns)

    MessageRow = _row("MessageRow", "id role ts sidechain text")
    ExchangeRow = _row("ExchangeRow", "id ts prompt reply")
    FileChangeRow = _row("FileChangeRow", "path tool explanation ts")
    ToolCallRow = _row("ToolCallRow", "ts sidechain tool target line kind message_id message_ts call")
    LastCall = _row("LastCall", "ts tool target line")
    FailedCall = _row("FailedCall", "session ts tool target error")
    SessionFacts = _row("SessionFacts", "id started_at ended_at files_count")
