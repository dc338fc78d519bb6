"""What every source does to the text it reads: times parsed one way, each text cut to a size
and redacted before anything stores it."""
from __future__ import annotations

from datetime import datetime

MAX_TEXT = 1_000_000  # characters of one message kept: a 50 MB paste is not memory


def scrubber(problems: list):
    """A text -> stored text function: cut to MAX_TEXT (noted in `problems`), then redacted. It
    imports the redactor on its first call: compiling its rules costs 10 ms, and the lines
    Claude Code appends after a session's Stop (prompt bookkeeping) hold no text at all."""
    fn = None

    def scrub(text: str) -> str:
        nonlocal fn
        if fn is None:
            from ..redact import redact, redact_enabled
            fn = redact if redact_enabled() else _unchanged  # decided once per file
        if len(text) > MAX_TEXT:
            problems.append(f"a message of {len(text):,} characters: its first {MAX_TEXT:,} kept")
            text = text[:MAX_TEXT]
        return fn(text)
    return scrub


def _unchanged(text: str) -> str:
    return text


def parse_ts(value) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value).timestamp()  # 3.11+ reads the trailing Z
    except ValueError:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
