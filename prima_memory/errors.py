"""The errors prima-memory reports to a person or a client: each says in one line what went wrong.
The CLI prints them as `prima-memory: error: ...` (exit 2 for a usage error, 1 otherwise); the
MCP server returns them as tool errors."""
from __future__ import annotations


class PrimaError(Exception):
    """An error whose message is meant for the user as it is."""


class UsageError(PrimaError):
    """The request itself is wrong (an empty query, a bad range, a count out of bounds)."""


class Failure(PrimaError):
    """The request is fine but cannot be done (no such session, the index is busy)."""


class IndexBusy(Failure):
    """Another process holds the writer lock."""


class IndexReadOnly(Failure):
    """The index can be read but not written (a read-only folder or file system)."""

    def __init__(self, path: str, why: str | None = None):
        super().__init__(f"{path} is not updated: {why}" if why else
                         f"{path} is read-only: not updated")


class NotNow(ValueError):
    """A source file this setup cannot read (no zstd support): tried again on every look, since
    what fixes it (installing a package) changes no file."""
