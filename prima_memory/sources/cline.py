"""(skeleton, filled in by this source's author) cline sessions as records."""
from __future__ import annotations

from . import names
from .base import Source


class Cline(Source):
    (name, label, product), mode, agent = names.CLINE, "snapshot", "Cline"

    def locations(self, ws: str) -> list[str]:
        return []

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        return []

    def read(self, path, extra, offset, state):
        return [], offset, state, []


class RooCode(Source):
    (name, label, product), mode, agent = names.ROO_CODE, "snapshot", "Roo"

    def locations(self, ws: str) -> list[str]:
        return []

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        return []

    def read(self, path, extra, offset, state):
        return [], offset, state, []


class KiloCode(Source):
    (name, label, product), mode, agent = names.KILO_CODE, "snapshot", "Kilo"

    def locations(self, ws: str) -> list[str]:
        return []

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        return []

    def read(self, path, extra, offset, state):
        return [], offset, state, []
