"""What every source does to the text it reads: times parsed one way, a person's <private>
spans taken out, each text redacted and cut to a size before anything stores it (always in that
order: a secret cut first can escape)."""
from __future__ import annotations

import math
import re
from datetime import datetime

from ..errors import NotNow as NotNow  # (the sources raise it from here)
from .jsonl import _CHEAP, big_loads, mend_surrogates, open_regular, small_loads, too_costly

MAX_TEXT = 1_000_000  # characters of one message kept: a 50 MB paste is not memory
# A JSON document read whole (a Codex era-1 rollout, a VS Code chat or its mutation log) is held
# and parsed at once: its bytes, and up to PARSE_BUDGET of objects (sources/jsonl.py), must stay
# under the 300 MB a read may take. A bigger file is not read at all: a sparse 1 GB file costs
# nothing on disk and 1.3 GB to read (#18). VS Code writes chats of this size only with pasted
# images inlined (it warns past 200 MB); none of their text is lost to an era-1 rollout.
MAX_DOCUMENT = 64 << 20


class TooBig(ValueError):
    """A file, or a text in it, past one of the bounds on what reading it may take."""


# <private>, </private>: any case, white space inside the brackets (`< / PRIVATE >`). A run of
# white space and slashes, not `\s*/?\s*`: two stars over the same spaces make a search of
# "<" and a million spaces quadratic. ASCII only, so that a dotless i is no tag.
_PRIVATE_TAG = re.compile(r"<[\s/]*(?i:private)\s*>", re.ASCII)
PRIVATE_MARK = "[private]"


def strip_private(text: str) -> str:
    """`text` with each outermost <private>...</private> span (tags included, nested ones
    counted) replaced by PRIVATE_MARK; an unclosed span runs to the end of the text. A closing
    tag with no span open is kept as written: nothing is hidden by it, and dropping it could
    join its neighbours into a tag. One pass over the tags found: linear in the text."""
    if "<" not in text:  # most texts, at memchr's speed
        return text
    out: list[str] = []
    depth = 0
    kept = 0  # where the text not yet copied to `out` starts
    for m in _PRIVATE_TAG.finditer(text):
        if "/" not in m.group():
            if depth == 0:
                out.append(text[kept:m.start()])
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                out.append(PRIVATE_MARK)
                kept = m.end()
    if not out:
        return text  # no tag opened a span
    out.append(PRIVATE_MARK if depth else text[kept:])
    return "".join(out)


LAST_TS = 253402214400.0  # 9999-12-30: every later time (or NaN, or before 1970) is no time


def scrubber(problems: list):
    """A text -> stored text function: redacted, then cut to MAX_TEXT (noted in `problems`). It
    imports the redactor on its first call: compiling its rules costs 10 ms, and the lines
    Claude Code appends after a session's Stop (prompt bookkeeping) hold no text at all."""
    fn = None

    def scrub(text: str) -> str:
        nonlocal fn
        if fn is None:
            from ..redact import redact, redact_enabled  # late: compiling its rules, 10 ms
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
    try:
        ts = datetime.fromisoformat(value).timestamp()
    except (ValueError, OverflowError, OSError):
        try:  # (3.11+ reads the trailing Z itself: a time of every line, no copy made for it)
            ts = datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except (ValueError, OverflowError, OSError):
            return None
    return ts if 0 < ts < LAST_TS else None  # valid_ts of a float (NaN compares false)


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
        for item in d.messages + d.file_changes + d.tool_calls:
            item.ts = item.ts or mtime
        d.seen(mtime)


def load_json(raw: bytes):
    """JSON from another program's file: a lone-surrogate escape read as U+FFFD (SQLite and
    UTF-8 output cannot hold one); nesting too deep to parse is a ValueError like bad JSON, a
    text that would parse into far more than its size (sources/jsonl.py) a TooBig."""
    costly = too_costly(raw)
    if costly:
        raise TooBig(costly)
    loads = small_loads() if len(raw) <= _CHEAP else big_loads()
    try:
        return loads(mend_surrogates(raw))
    except RecursionError:
        raise ValueError("nested too deeply") from None


def read_json(path: str, what: str = "a JSON document"):
    """(the JSON document a file holds, its stat), read whole within MAX_DOCUMENT. Raises
    OSError, TooBig, or ValueError for a text that is not JSON (a file being written)."""
    raw, st = read_document(path, what)
    try:
        return load_json(raw), st
    except TooBig:
        raise
    except ValueError as e:
        raise ValueError(f"invalid JSON ({str(e)[:60]})") from None


def open_bounded(path: str, limit: int, what: str):
    """(binary file, stat) of a regular file no bigger than `limit`; TooBig, before anything is
    read, for a bigger one. Never follows a link or waits on a FIFO (put there after listing)."""
    f, st = open_regular(path)
    try:
        if st.st_size > limit:
            raise TooBig(f"{st.st_size / (1 << 20):,.0f} MB, more than the {limit >> 20} MB "
                         f"{what} is read to: not read")
    except BaseException:
        f.close()
        raise
    return f, st


def read_document(path: str, what: str = "a JSON document"):
    """(bytes, stat) of a file read whole, at most MAX_DOCUMENT of it (see open_bounded)."""
    f, st = open_bounded(path, MAX_DOCUMENT, what)
    with f:
        raw = f.read(MAX_DOCUMENT + 1)
    if len(raw) > MAX_DOCUMENT:  # grown since its stat
        raise TooBig(f"more than the {MAX_DOCUMENT >> 20} MB {what} is read to: not read")
    return raw, st
