"""(skeleton, filled in by this source's author) gemini_cli sessions as records."""
from __future__ import annotations

from . import names
from .base import Source


class GeminiCli(Source):
    (name, label, product), mode, agent = names.GEMINI_CLI, "append", "Gemini"

    def locations(self, ws: str) -> list[str]:
        return []

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        return []

    def read(self, path, extra, offset, state):
        return [], offset, state, []
