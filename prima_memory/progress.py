"""A progress bar on a terminal for long indexing; silent anywhere else."""
from __future__ import annotations

import sys
import time

from . import terminal


class Progress:
    def __init__(self, stream=None, label: str = "indexing", unit: str = "MB"):
        self.stream = stream or sys.stderr
        self.label = label
        self.unit = unit  # "MB": counts are bytes; otherwise things, e.g. "exchanges"
        self.start = time.monotonic()
        self.last = 0.0
        self.shown = False

    @staticmethod
    def for_terminal(stream=None, **kw):
        stream = stream or sys.stderr
        return Progress(stream, **kw) if hasattr(stream, "isatty") and stream.isatty() else None

    def update(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.last < 0.1 or now - self.start < 0.5 or total <= 0:
            return  # short runs show nothing
        self.last = now
        frac = min(1.0, done / total)
        bar = "#" * int(frac * 30)
        scale = 1e6 if self.unit == "MB" else 1
        rate = done / scale / (now - self.start)
        left = f"{(total - done) / scale / rate:,.0f}s left" if rate > 0 else "—"
        # (the label may name a project: as any text printed; the "\r" is the bar's own)
        terminal.write(f"{self.label} [{bar:<30}] {frac * 100:5.1f}% "
                       f"{done / scale:,.0f}/{total / scale:,.0f} {self.unit}, "
                       f"{rate:,.1f}/s, {left}   ", self.stream, multiline=False, start="\r",
                       end="")
        self.shown = True

    def finish(self) -> None:
        if self.shown:
            terminal.write("", self.stream)
            self.shown = False
