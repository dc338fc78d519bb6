"""Read a JSONL file from a byte offset, one complete line at a time, tolerating bad lines."""
from __future__ import annotations

import json
import os
import re
import stat
import time

from ..workspace import O_NOFOLLOW

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms for the hooks)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

CHUNK = 4 << 20
# A longer line (a runaway paste) is skipped without being held in memory. With the parse that
# follows, a line this long takes about three times its size at the peak (its bytes, the pieces
# it is joined from, the text parsed from it): far under the 300 MB a read may take (#18).
MAX_LINE = 64 << 20
# What parsing one JSON text may cost, estimated from its bytes (parse_cost): a text over it is
# skipped like a bad line. Bytes alone bound nothing: 16 MB of `{},{},...` parses into 400 MB of
# dicts. With the text's own bytes beside it, a parse stays under 300 MB.
PARSE_BUDGET = 128 << 20
_CHEAP = 1 << 20  # a text this short cannot cost much (at worst 25 times its size): not counted
TAIL_GRACE_SECONDS = 30  # an unterminated last line this old is taken as complete
# A JSON escape of a lone UTF-16 surrogate ("\ud83d": Claude Code cuts strings mid-emoji) is valid
# JSON, but no UTF-8 text can hold it: SQLite refuses it and orjson refuses the line. It becomes
# U+FFFD before parsing, so both parsers read the same text. An escaped backslash is matched
# first, so the text "\\ud83d" stays as it is; a valid pair is kept whole.
_ESCAPES = re.compile(rb"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
                      rb"|\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _mend(m: re.Match) -> bytes:
    return b"\\ufffd" if len(m.group()) == 6 else m.group()


def mend_surrogates(line: bytes | bytearray) -> bytes | bytearray:
    """JSON bytes with every lone-surrogate escape replaced by the escape of U+FFFD."""
    if b"\\ud" in line or b"\\uD" in line:
        return _ESCAPES.sub(_mend, line)
    return line


def loads_mended(loads, text: bytes | bytearray):
    """loads(mend_surrogates(text)), with either parser. orjson refuses a lone surrogate, so for
    it a text is mended (two scans of it) only once refused: few lines hold one. json.loads
    reads one as it is, so for it a text is mended first."""
    if loads is json.loads:
        return loads(mend_surrogates(text))
    try:
        return loads(text)
    except ValueError:
        mended = mend_surrogates(text)
        if mended is text:
            raise
        return loads(mended)


def estimate(text: bytes | bytearray) -> int:
    """A bound on the memory json.loads or orjson takes to parse `text` (past its own bytes).
    Every value is an object of 24-64 bytes, plus a slot in its container, however few bytes
    spell it: one per `{` and `[`, one per string (two quotes), one per `,`. A string's characters
    take 1 byte each, or up to 4 when any is beyond ASCII (or escaped: "\\ud83d..."), since one
    wide character widens its whole string."""
    wide = not text.isascii() or b"\\u" in text
    return (4 if wide else 1) * len(text) + 64 * (text.count(b"{") + text.count(b"[")) \
        + 28 * text.count(b'"') + 32 * text.count(b",")


def parse_cost(text: bytes | bytearray) -> int:
    """estimate(text), not counted for a text too short to matter."""
    return len(text) if len(text) <= _CHEAP else estimate(text)


def too_costly(text: bytes | bytearray) -> str | None:
    """Why `text` is not parsed (see PARSE_BUDGET), or None."""
    cost = parse_cost(text)
    if cost > PARSE_BUDGET:
        return (f"a JSON text of {len(text) >> 20} MB that would take about {cost >> 20} MB "
                f"to parse (the bound is {PARSE_BUDGET >> 20} MB): skipped")
    return None


_FAST: list = []  # orjson.loads, once a big run asked for it (fast)


def fast() -> None:
    """A big run (Indexer.run): every text parsed from now on by orjson, 3 times faster, its
    import (40 ms) paid once for all of the run's files, whichever source reads them. What
    orjson refuses and json reads (NaN, a number past 64 bits, a lone surrogate) is read by json,
    so a text parses alike in any run."""
    if not _FAST:
        quick = big_loads()

        def loads(text):
            try:
                return quick(text)
            except ValueError:
                return json.loads(text if isinstance(text, str) else mend_surrogates(text))
        _FAST.append(loads)


def small_loads():
    """The parser for a text up to _CHEAP: json.loads, or orjson in a big run (fast)."""
    return _FAST[0] if _FAST else json.loads


def big_loads():
    """The parser for a text over _CHEAP: orjson, which parses bytes as they are (json.loads
    decodes them to a str first, up to 4 times their size). Imported then only: it costs the
    hooks 24 ms."""
    import orjson  # late on purpose: 24 ms the hooks rarely need
    return orjson.loads


def open_regular(path: str, follow: bool = False):
    """(binary file, stat) of the regular file at `path`, opened to read. It never waits on a
    FIFO (opened without blocking, then refused: a ValueError), nor follows a link in the last
    place (an OSError, ELOOP) unless `follow` (a source that reads through links): a file swapped
    for either after it was listed is not read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow else O_NOFOLLOW))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # (before fdopen, which refuses a folder itself)
            raise ValueError("not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb"), st


class JsonlReader:
    """Iterate (object, end_offset) from `offset`; `end` is where the next run resumes.

    A last line without a newline is normally a line still being written: it is left for the next
    run, unless the file has not changed for TAIL_GRACE_SECONDS and the line parses.
    `stream`: read from this binary stream (a decompressing reader) instead of opening `path`;
    offsets are then the stream's, and reaching `offset` means reading past what comes before.
    `follow`: a link at `path` is read through (see open_regular); a FIFO never is.
    """

    def __init__(self, path: str, offset: int = 0, *, mtime: float | None = None, skip=None,
                 bulk: bool = False, stream=None, follow: bool = False):
        self.path = path
        self.follow = follow
        self.start = offset
        self.end = offset
        self.mtime = mtime
        # (bytes, start, end) -> bool: whether the line at bytes[start:end] is one the source
        # knows it does not need, left unparsed (and, judged where it lies, never copied)
        self.skip = skip
        self.stream = stream
        self.loads: Callable[[bytes | bytearray | str], Any]
        if bulk:  # orjson parses 3x faster but takes 40 ms to import: worth it for big reads only
            fast()
        self.loads = small_loads()
        self.problems: list[str] = []  # one entry per bad line, for the log
        self.bad_lines = 0

    def bad(self, at: int, why: str) -> None:
        self.bad_lines += 1
        if len(self.problems) < 5:
            self.problems.append(f"byte {at}: {why}")

    def _parse(self, line: bytes | bytearray, at: int):
        if len(line) <= _CHEAP:  # (its cost is its length: never too costly)
            loads = self.loads
        else:
            costly = too_costly(line)
            if costly:
                self.bad(at, costly)
                return None
            loads = big_loads()
        try:
            obj = loads_mended(loads, line)
        except ValueError as e:  # both parsers' errors, and UnicodeDecodeError, are ValueErrors
            try:  # non-UTF-8 bytes in an otherwise good line: keep it, with replacement characters
                line = mend_surrogates(line)
                if 2 * parse_cost(line) > PARSE_BUDGET:  # (the decoded text comes on top)
                    raise
                obj = loads(line.decode("utf-8", "replace"))
                self.bad(at, "non-UTF-8 bytes replaced")
            except ValueError:
                self.bad(at, f"invalid JSON ({str(e)[:60]})")
                return None
        except RecursionError:
            self.bad(at, "JSON nested too deeply")
            return None
        if not isinstance(obj, dict):
            self.bad(at, "not a JSON object")
            return None
        return obj

    def __iter__(self):
        with (_Borrowed(self.stream) if self.stream is not None
              else open_regular(self.path, self.follow)[0]) as f:
            if self.stream is None:
                f.seek(self.start)
            else:
                _skip_to(f, self.start)
            yield from self._lines(f)

    def _lines(self, f):
        base = self.start  # the offset of the chunk's first byte
        at = base  # where the line being read starts
        # A line that spans chunks, so far: one buffer grown in place and parsed as it is (a list
        # of pieces joined at the end would hold the line twice, and glibc keeps 4 MB pieces).
        carry = bytearray()
        skipping = False  # inside an over-long line: discard until its newline
        skip = self.skip
        while True:
            chunk = f.read(CHUNK)
            if not chunk:
                break
            start = 0
            while True:
                nl = chunk.find(b"\n", start)
                if nl < 0:
                    break
                if skipping:  # the end of an over-long line
                    skipping = False
                    line = None
                elif carry:
                    carry += memoryview(chunk)[start:nl]
                    line, carry = carry, bytearray()
                    if skip and skip(line, 0, len(line)):
                        line = None
                elif skip and skip(chunk, start, nl):
                    line = None
                else:
                    line = chunk[start:nl]
                start = nl + 1
                line_at, at = at, base + start
                # (isspace: strip would copy a long line)
                if line and not line.isspace():
                    obj = self._parse(line, line_at)
                    line = None  # (a long line's bytes, freed while its record is taken)
                    if obj is not None:
                        self.end = at
                        yield obj
                        continue
                self.end = at
            base += len(chunk)
            if skipping or start == len(chunk):
                continue
            if len(carry) + len(chunk) - start > MAX_LINE:
                self.bad(at, f"line longer than {MAX_LINE >> 20} MB skipped")
                skipping = True
                carry = bytearray()
            else:
                carry += memoryview(chunk)[start:]
        if carry and not skipping and not carry.isspace() and self._tail_is_settled():
            obj = self._parse(carry, at)
            if obj is not None:  # else it may yet be completed: read it again next time
                self.end = at + len(carry)
                yield obj

    def _tail_is_settled(self) -> bool:
        mtime = self.mtime
        if mtime is None:
            try:
                mtime = os.stat(self.path).st_mtime
            except OSError:
                return False
        return time.time() - mtime >= TAIL_GRACE_SECONDS


class _Borrowed:
    """A stream the caller owns, used in a `with` that must not close it."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        return self.stream

    def __exit__(self, *exc):
        return False


def _skip_to(stream, offset: int) -> None:
    """Read past the first `offset` bytes of a stream that cannot seek."""
    while offset > 0:
        got = stream.read(min(offset, CHUNK))
        if not got:
            return
        offset -= len(got)
