"""(skeleton, filled in by this source's author) opencode sessions as records."""
from __future__ import annotations

from . import names
from .base import Source


class OpenCode(Source):
    (name, label, product), mode, agent = names.OPENCODE, "snapshot", "OpenCode"

    def locations(self, ws: str) -> list[str]:
        return []

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        return []

    def read(self, path, extra, offset, state):
        return [], offset, state, []
