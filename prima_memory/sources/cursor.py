"""(skeleton, filled in by this source's author) cursor sessions as records."""
from __future__ import annotations

from . import names
from .base import Source


class Cursor(Source):
    (name, label, product), mode, agent = names.CURSOR, "snapshot", "Cursor"

    def locations(self, ws: str) -> list[str]:
        return []

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        return []

    def read(self, path, extra, offset, state):
        return [], offset, state, []


class CursorAgent(Source):
    (name, label, product), mode, agent = names.CURSOR_AGENT, "append", "Cursor"

    def locations(self, ws: str) -> list[str]:
        return []

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        return []

    def read(self, path, extra, offset, state):
        return [], offset, state, []
