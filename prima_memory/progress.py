"""A progress bar on a terminal for long indexing; silent anywhere else."""
from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, stream=None, label: str = "indexing"):
        self.stream = stream or sys.stderr
        self.label = label
        self.start = time.monotonic()
        self.last = 0.0
        self.shown = False

    @staticmethod
    def for_terminal(stream=None):
        stream = stream or sys.stderr
        return Progress(stream) if hasattr(stream, "isatty") and stream.isatty() else None

    def update(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.last < 0.1 or now - self.start < 0.5 or total <= 0:
            return  # short runs show nothing
        self.last = now
        frac = min(1.0, done / total)
        bar = "#" * int(frac * 30)
        self.stream.write(f"\r{self.label} [{bar:<30}] {frac * 100:5.1f}% "
                          f"{done / 1e6:,.0f}/{total / 1e6:,.0f} MB")
        self.stream.flush()
        self.shown = True

    def finish(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
            self.shown = False
