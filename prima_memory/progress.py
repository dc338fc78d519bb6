"""A progress bar on a terminal for long indexing; where stderr is not a terminal (a script's,
an agent's tool), one line once the wait passes a second, so a piped search is not silent."""
from __future__ import annotations

import sys
import time

from . import terminal


LINE_AFTER = 1.0  # seconds of waiting before a piped run says what it waits for


class Progress:
    def __init__(self, stream=None, label: str = "indexing", unit: str = "MB",
                 bar: bool = True):
        self.stream = stream or sys.stderr
        self.label = label
        self.unit = unit  # "MB": counts are bytes; otherwise things, e.g. "exchanges"
        self.bar = bar  # False: not a terminal: one line, once
        self.start = time.monotonic()
        self.last = 0.0
        self.shown = False

    @staticmethod
    def for_terminal(stream=None, *, line: bool = True, **kw):
        """A bar on a terminal; else (`line`) one line after LINE_AFTER, else None."""
        stream = stream or sys.stderr
        if hasattr(stream, "isatty") and stream.isatty():
            return Progress(stream, **kw)
        return Progress(stream, bar=False, **kw) if line else None

    def update(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.bar:
            if not self.shown and now - self.start >= LINE_AFTER and 0 < done < total:
                self.shown = True  # (said once: a log is not a terminal to redraw)
                terminal.write(f"prima-memory: {self.label} {self._counts(done, total, now)}; "
                               "the answer follows", self.stream, multiline=False)
            return
        if now - self.last < 0.1 or now - self.start < 0.5 or total <= 0:
            return  # short runs show nothing
        self.last = now
        frac = min(1.0, done / total)
        bar = "#" * int(frac * 30)
        # (the label may name a project: as any text printed; the "\r" is the bar's own)
        terminal.write(f"{self.label} [{bar:<30}] {frac * 100:5.1f}% "
                       f"{self._counts(done, total, now)}   ", self.stream, multiline=False,
                       start="\r", end="")
        self.shown = True

    def _counts(self, done: int, total: int, now: float) -> str:
        scale = 1e6 if self.unit == "MB" else 1
        rate = done / scale / (now - self.start)
        left = f"{(total - done) / scale / rate:,.0f}s left" if rate > 0 else "—"
        return f"{done / scale:,.0f}/{total / scale:,.0f} {self.unit}, {rate:,.1f}/s, {left}"

    def finish(self) -> None:
        if self.shown and self.bar:
            terminal.write("", self.stream)
            self.shown = False
