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
