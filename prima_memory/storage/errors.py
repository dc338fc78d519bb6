"""The storage's errors: what any engine raises, so no caller needs to know the driver."""
from __future__ import annotations

from ..errors import Failure


class StoreError(Failure):
    """Trouble with the index itself (not with a source file): every driver error leaves the
    storage package as one of these, so no caller needs to know the driver."""


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
        super().__init__(f"{path} {why}")
        self.why = why


class SchemaMismatch(StoreError):
    """The index is of a schema version this prima-memory cannot migrate (a newer one's)."""

    def __init__(self, found, needs: int):
        super().__init__(f"index schema version {found}, this prima-memory needs {needs}")
        self.found = found
