"""What every source does to the text it reads: times parsed one way, each text cut to a size
and redacted before anything stores it."""
from __future__ import annotations

import json
import math
from datetime import datetime

MAX_TEXT = 1_000_000  # characters of one message kept: a 50 MB paste is not memory
LAST_TS = 253402214400.0  # 9999-12-30: every later time (or NaN, or before 1970) is no time


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
    for text in (value, value.replace("Z", "+00:00")):  # 3.11+ reads the trailing Z itself
        try:
            return valid_ts(datetime.fromisoformat(text).timestamp())
        except (ValueError, OverflowError, OSError):
            continue
    return None


def valid_ts(ts) -> float | None:
    """A time every date function can show (a file can say year 0, 10^20 or NaN)."""
    if isinstance(ts, (int, float)) and not isinstance(ts, bool) and math.isfinite(ts) \
            and 0 < ts < LAST_TS:
        return float(ts)
    return None


def dated_by_file(d, mtime: float) -> None:
    """A session that records no readable time (older formats, a damaged clock) takes its
    file's: else it has no date, and every list leaves it out."""
    if d.first_ts is None:
        for item in d.messages + d.file_changes:
            item.ts = item.ts or mtime
        d.seen(mtime)


def utf8_name(name: str) -> bool:
    """A file name the index can hold: one whose bytes are not UTF-8 (the OS hands it over with
    lone surrogates) could be neither stored nor printed, and is no agent's."""
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def load_json(raw: bytes):
    """JSON from another program's file: a lone-surrogate escape read as U+FFFD (SQLite and
    UTF-8 output cannot hold one); nesting too deep to parse is a ValueError like bad JSON."""
    from .jsonl import mend_surrogates
    try:
        return json.loads(mend_surrogates(raw))
    except RecursionError:
        raise ValueError("nested too deeply") from None
