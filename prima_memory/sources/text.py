"""What every source does to the text it reads: times parsed one way, each text redacted and
cut to a size before anything stores it (always in that order: a secret cut first can escape)."""
from __future__ import annotations

import json
import math
from datetime import datetime

MAX_TEXT = 1_000_000  # characters of one message kept: a 50 MB paste is not memory
LAST_TS = 253402214400.0  # 9999-12-30: every later time (or NaN, or before 1970) is no time


def scrubber(problems: list):
    """A text -> stored text function: redacted, then cut to MAX_TEXT (noted in `problems`). It
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
            # Redacted before it is cut, or a secret cut in half escapes the patterns; only a
            # window a little past the limit (a 50 MB paste would take seconds), ending at a
            # line break so that the window halves no secret either.
            return head(fn(line_cut(text, MAX_TEXT + _SLACK)), MAX_TEXT)
        return fn(text)
    return scrub


_SLACK = 1 << 16
_TAG = "[REDACTED:"


def line_cut(data, n: int, back: int = _SLACK):
    """`data` (str or bytes) cut to at most n, back to its last line break within `back` of n,
    else its last space, else at n: a cut there halves no one-line secret (the redactor finds a
    multi-line one, a PEM block or a value on the next line, cut short too)."""
    if len(data) <= n:
        return data
    nl, sp = ("\n", " ") if isinstance(data, str) else (b"\n", b" ")
    lo = max(0, n - back)
    i = data.rfind(nl, lo, n)
    if i < 0:
        i = data.rfind(sp, lo, n)
    return data[:i + 1] if i >= 0 else data[:n]


def head(text: str, n: int) -> str:
    """The first n characters of redacted text, not ending inside a [REDACTED:kind] tag."""
    if len(text) <= n:
        return text
    i = text.rfind("[", max(0, n - 32), n)
    if i >= 0 and text.startswith(_TAG, i) and text.find("]", i, n) < 0:
        return text[:i]
    return text[:n]


def tail(text: str, n: int) -> str:
    """The last n characters of redacted text, not starting inside a [REDACTED:kind] tag."""
    if len(text) <= n:
        return text
    s = len(text) - n
    i = text.rfind(_TAG, max(0, s - 32), s + len(_TAG) - 1)  # a tag opened before s
    if i >= 0:
        j = text.find("]", i)
        if j >= s:
            return text[j + 1:]
    return text[s:]


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
