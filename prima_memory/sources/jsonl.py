"""Read a JSONL file from a byte offset, one complete line at a time, tolerating bad lines."""
from __future__ import annotations

import json
import os
import re
import time

CHUNK = 4 << 20
MAX_LINE = 64 << 20  # a longer line (a runaway paste) is skipped without being held in memory
TAIL_GRACE_SECONDS = 30  # an unterminated last line this old is taken as complete
# A JSON escape of a lone UTF-16 surrogate ("\ud83d": Claude Code cuts strings mid-emoji) is valid
# JSON, but no UTF-8 text can hold it: SQLite refuses it and orjson refuses the line. It becomes
# U+FFFD before parsing, so both parsers read the same text. An escaped backslash is matched
# first, so the text "\\ud83d" stays as it is; a valid pair is kept whole.
_ESCAPES = re.compile(rb"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
                      rb"|\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _mend(m: re.Match) -> bytes:
    return b"\\ufffd" if len(m.group()) == 6 else m.group()


def mend_surrogates(line: bytes) -> bytes:
    """JSON bytes with every lone-surrogate escape replaced by the escape of U+FFFD."""
    if b"\\ud" in line or b"\\uD" in line:
        return _ESCAPES.sub(_mend, line)
    return line


class JsonlReader:
    """Iterate (object, end_offset) from `offset`; `end` is where the next run resumes.

    A last line without a newline is normally a line still being written: it is left for the next
    run, unless the file has not changed for TAIL_GRACE_SECONDS and the line parses.
    """

    def __init__(self, path: str, offset: int = 0, *, mtime: float | None = None, skip=None,
                 bulk: bool = False):
        self.path = path
        self.start = offset
        self.end = offset
        self.mtime = mtime
        self.skip = skip  # bytes -> bool: a line the source knows it does not need, left unparsed
        if bulk:  # orjson parses 3x faster but takes 40 ms to import: worth it for big reads only
            import orjson
            self.loads = orjson.loads
        else:
            self.loads = json.loads
        self.problems: list[str] = []  # one entry per bad line, for the log
        self.bad_lines = 0

    def bad(self, at: int, why: str) -> None:
        self.bad_lines += 1
        if len(self.problems) < 5:
            self.problems.append(f"byte {at}: {why}")

    def _parse(self, line: bytes, at: int):
        line = mend_surrogates(line)
        try:
            obj = self.loads(line)
        except ValueError as e:  # both parsers' errors, and UnicodeDecodeError, are ValueErrors
            try:  # non-UTF-8 bytes in an otherwise good line: keep it, with replacement characters
                obj = self.loads(line.decode("utf-8", "replace"))
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
        pos = self.start
        with open(self.path, "rb") as f:
            f.seek(pos)
            carry = b""
            skipping = False  # inside an over-long line: discard until its newline
            while True:
                chunk = f.read(CHUNK)
                if not chunk:
                    break
                buf = carry + chunk if carry else chunk
                carry = b""
                start = 0
                while True:
                    nl = buf.find(b"\n", start)
                    if nl < 0:
                        break
                    line = buf[start:nl]
                    at = pos
                    pos += nl + 1 - start
                    start = nl + 1
                    if skipping:
                        skipping = False
                        self.end = pos
                        continue
                    if line.strip() and not (self.skip and self.skip(line)):
                        obj = self._parse(line, at)
                        if obj is not None:
                            self.end = pos
                            yield obj
                            continue
                    self.end = pos
                rest = buf[start:]
                if skipping:
                    pos += len(rest)
                elif len(rest) > MAX_LINE:
                    self.bad(pos, f"line longer than {MAX_LINE >> 20} MB skipped")
                    skipping = True
                    pos += len(rest)
                else:
                    carry = rest
            if carry.strip() and not skipping and self._tail_is_settled():
                obj = self._parse(carry, pos)
                if obj is not None:  # else it may yet be completed: read it again next time
                    self.end = pos + len(carry)
                    yield obj

    def _tail_is_settled(self) -> bool:
        mtime = self.mtime
        if mtime is None:
            try:
                mtime = os.stat(self.path).st_mtime
            except OSError:
                return False
        return time.time() - mtime >= TAIL_GRACE_SECONDS
