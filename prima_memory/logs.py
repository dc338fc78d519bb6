"""The startup log, .prima-memory/prima-memory.log: warnings that must never stop the work."""
from __future__ import annotations

import os
import time

from .workspace import open_nofollow, read_plain, replace_whole

_MAX_BYTES = 1_000_000


class Log:
    def __init__(self, data_dir: str | None):
        self.path = os.path.join(data_dir, "prima-memory.log") if data_dir else None
        self.warnings: list[str] = []  # this run's warnings, for status and --json output
        self._logged: set[str] | None = None  # messages already in the log, for warn(once=True)

    def write(self, level: str, msg: str) -> None:
        msg = " ".join(str(msg).split())[:2000]
        if level == "WARNING":
            self.warnings.append(msg)
        if not self.path:
            return
        line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {level} pid={os.getpid()} {msg}\n"
        try:
            if os.path.exists(self.path) and os.path.getsize(self.path) > _MAX_BYTES:
                os.replace(self.path, self.path + ".1")
            # a log shipped as a link to another file is not written
            fd = open_nofollow(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            with os.fdopen(fd, "a", encoding="utf-8", errors="backslashreplace") as f:
                f.write(line)
        except OSError:
            pass  # logging must never be the thing that fails

    def warn(self, msg: str, *, once: bool = False) -> None:
        """once: a problem that stays as it is (a symbolic link loop, an unreadable file) is
        logged when first seen, not by every command and hook after."""
        if once:
            msg = " ".join(str(msg).split())[:2000]
            if self._logged is None:
                self._logged = {ln.split(" ", 3)[-1] for ln in self.tail(10_000)}
            if msg in self._logged:
                return
            self._logged.add(msg)
        self.write("WARNING", msg)

    def info(self, msg: str) -> None:
        self.write("INFO", msg)

    def error(self, msg: str) -> None:
        self.write("ERROR", msg)

    def drop_naming(self, names) -> None:
        """The lines that name any of `names` (forgotten sessions' ids: in their files' paths
        too) taken out of the log and its older part. A line about a file can carry what the
        file held (a record type it does not know, say)."""
        marks = [n.encode("utf-8", "backslashreplace") for n in names if len(n) >= 8]
        if not self.path or not marks:
            return
        for p in (self.path, self.path + ".1"):
            try:
                got = read_plain(p, 4 * _MAX_BYTES)
                if got is None:  # (absent is an OSError; a link or a folder is not ours)
                    continue
                lines = got[0].split(b"\n")
                kept = [ln for ln in lines if not any(m in ln for m in marks)]
                if len(kept) < len(lines):
                    replace_whole(p, [b"\n".join(kept)])
            except OSError:
                pass  # (as for writing it: the log is never the thing that fails)
        self._logged = None

    def tail(self, n: int = 10, level: str = "WARNING") -> list[str]:
        """The last n lines of a level, for `status`."""
        if not self.path or not os.path.exists(self.path):
            return []
        try:
            with os.fdopen(open_nofollow(self.path), "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - 200_000))
                lines = f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return []
        return [ln for ln in lines if f" {level} " in ln][-n:]
