"""One writer at a time: an exclusive lock on a file beside the index, freed if its holder dies.

On POSIX this is fcntl.flock, which imports in well under a millisecond; `filelock` (used on
other systems) costs 70-90 ms to import, more than a whole hook may take.
"""
from __future__ import annotations

import os
import time

from .workspace import open_nofollow

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms for the hooks)
if TYPE_CHECKING:
    from filelock import FileLock


class LockTimeout(Exception):
    pass


class WriterLock:
    def __init__(self, path: str):
        self.path = path
        self._fd: int | None = None
        self._other: FileLock | None = None  # where fcntl does not exist

    def acquire(self, timeout: float) -> None:
        try:
            import fcntl  # POSIX only: elsewhere filelock does it
        except ImportError:
            self._acquire_portable(timeout)
            return
        fd = open_nofollow(self.path, os.O_RDWR | os.O_CREAT)
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._fd = fd
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockTimeout(self.path) from None
                time.sleep(0.01)

    def _acquire_portable(self, timeout: float) -> None:
        from filelock import FileLock, Timeout  # late: 33 ms, and only where fcntl is missing
        if self._other is None:
            self._other = FileLock(self.path, is_singleton=True)
        try:
            self._other.acquire(timeout=timeout)
        except Timeout:
            raise LockTimeout(self.path) from None

    def adopt(self, fd: int) -> bool:
        """Hold the lock through `fd`: a descriptor of this lock file, already locked, that the
        process which started this one handed down (background.spawn). False, `fd` left alone,
        when it is no such thing: then acquire() as usual."""
        try:
            import fcntl  # POSIX only (an ImportError: acquire as usual)
            st, mine = os.fstat(fd), os.stat(self.path, follow_symlinks=False)
            if (st.st_dev, st.st_ino) != (mine.st_dev, mine.st_ino):
                return False
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held through it already: no change
        except (ImportError, OSError):
            return False
        os.set_inheritable(fd, False)  # handed on to nothing this process runs
        self._fd = fd
        return True

    @property
    def held(self) -> bool:
        """Whether this lock is held through this object now."""
        return self._fd is not None or (self._other is not None and self._other.is_locked)

    @property
    def fd(self) -> int | None:
        """The descriptor holding the lock (fcntl only): a forked child must close its copy."""
        return self._fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None
        elif self._other is not None:
            self._other.release()
