"""The rows reads return: named tuples, not positional ones (`row.text`, not `row[3]`).

namedtuple, not dataclass or typing.NamedTuple: the hooks import this module, and those cost
5-30 ms to import; the type checker sees typed NamedTuples of the same fields."""
from __future__ import annotations

from collections import namedtuple


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
    MessageRow = namedtuple("MessageRow", "id role ts sidechain text")
    ExchangeRow = namedtuple("ExchangeRow", "id ts prompt reply")
    FileChangeRow = namedtuple("FileChangeRow", "path tool explanation ts")
    ToolCallRow = namedtuple("ToolCallRow",
                             "ts sidechain tool target line kind message_id message_ts call")
    LastCall = namedtuple("LastCall", "ts tool target line")
    SessionFacts = namedtuple("SessionFacts", "id started_at ended_at files_count")
