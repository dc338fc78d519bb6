"""A cold index's reader process: it parses the run's files while the indexer writes what it
parsed (indexer._ReaderProcess), two cores at work.

It is a fresh interpreter (fork and exec, by subprocess), never a fork of the indexer: the indexer
may have threads (the model loading beside a search, api.Early; the MCP server's), and a fork
copies the locks they hold, an import's among them, into a process where no thread will ever
release them (#36: a first search waited for ever on a child stuck importing `dataclasses` for
orjson). Started so, it holds only the pipes to its parent: nothing else of the parent's, the
writer lock included (close_fds).

Its jobs come in on its stdin, one pickle of ours; its items go out on its stdout, each a pickle
after its length, (file number, kind, payload) in the order of the files: "chunk" (what
read_chunks gave), then one of "end", "oserror" (errno, text, filename) or "failed" (why, in
words: the parent reads that file itself, and meets the error itself). The parent unpickles
them allowing the classes of records.py alone (_Records): only parser output crosses, whatever
the files hold. The child's stdin stays open while the parent lives: when the parent ends (or is
killed, or closes it), the child ends at once, never outliving it.
"""
from __future__ import annotations

import os
import pickle
import sys

from . import records

HEADER = 8  # bytes of an item's length, little-endian
# an item's length past this is no item of ours (a step reads 16 MB; a line is 64 MB at most)
MAX_ITEM = 1 << 29

# What the child runs, after the path is set to this very package (`python -m` or the current
# folder first could find another `prima_memory`). Tests start a faulty reader instead.
CHILD = "from prima_memory.reader_process import main; main()"
_BOOT = "import sys; sys.path[0] = {root!r}; "


# -- the child ------------------------------------------------------------------------------------

def main(read=None) -> None:
    """The reader process: its jobs read, then read_all's items sent (`read`: another reader,
    for tests), then it ends. Any trouble ends it: the parent reads on by itself."""
    out = os.dup(1)
    os.dup2(2, 1)  # whatever else writes to stdout writes to the parent's /dev/null, not to it
    try:
        bulk, batch, jobs = pickle.loads(_take(0))
    except BaseException:  # noqa: BLE001 - no jobs: the parent reads them all itself
        os._exit(1)
    import threading  # (the child's own: it never forks)
    threading.Thread(target=_end_with_parent, daemon=True).start()
    try:
        (read or read_all)(jobs, bulk, batch, _sender(out))
    except BaseException:  # noqa: BLE001 - an interrupt: the parent reads on
        os._exit(1)
    os._exit(0)  # (nothing buffered; no interpreter teardown to wait for)


def read_all(jobs, bulk: bool, batch: int, send) -> None:
    for i, job in enumerate(jobs):
        if job is None:
            send(i, "end", None)
            continue
        try:
            for chunk in chunks(job, bulk, batch):
                send(i, "chunk", chunk)
        except OSError as e:
            send(i, "oserror", (e.errno, e.strerror or str(e), e.filename))
            continue
        except Exception as e:  # noqa: BLE001 - the parent reads this file itself
            send(i, "failed", f"{type(e).__name__}: {e}"[:500])
            continue
        send(i, "end", None)


def chunks(job, bulk: bool, batch: int):
    """read_chunks's items for a job (indexer.Job's fields as a tuple)."""
    source, path, extra, offset, state, mtime, size = job
    return source.read_chunks(path, extra, offset, state, batch, mtime=mtime, size=size,
                              bulk=bulk)


def _sender(fd: int):
    """send(file number, kind, payload) to the parent, on `fd` (send.fd)."""
    def send(i: int, kind: str, payload) -> None:
        data = pickle.dumps((i, kind, payload), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            _put(fd, len(data).to_bytes(HEADER, "little"))
            _put(fd, data)
        except OSError:  # a broken pipe: the parent is gone, and so must this reader be
            os._exit(0)
    send.fd = fd  # type: ignore[attr-defined]
    return send


def _put(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _take(fd: int) -> bytes:
    """One length-prefixed message from a blocking descriptor."""
    n = int.from_bytes(_exactly(fd, HEADER), "little")
    return _exactly(fd, n)


def _exactly(fd: int, n: int) -> bytes:
    got = bytearray()
    while len(got) < n:
        part = os.read(fd, n - len(got))
        if not part:
            raise EOFError
        got += part
    return bytes(got)


def _end_with_parent() -> None:
    """The parent holds the other end of stdin for its whole life: its end is an end of file."""
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    os._exit(0)


# -- the parent's end -------------------------------------------------------------------------------

class _Records(pickle.Unpickler):
    """Unpickles the records a source makes and plain data, nothing else: no other class is
    made, no function called, whatever bytes come."""

    def find_class(self, module: str, name: str):
        if module == "prima_memory.records" and name in ("SessionDelta", "Message",
                                                         "FileChange", "ToolCall", "CallError"):
            return getattr(records, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not a record")


def loads(data) -> object:
    """An item as the parent reads it (see _Records)."""
    import io  # (a cold index only, as this module)
    return _Records(io.BytesIO(data)).load()


class Child:
    """The parent's end of a reader process: its items one at a time (get), each waited for at
    most `stall` seconds without a byte from the child, which is then stopped (`why` says why
    no more come)."""

    def __init__(self, jobs: list, bulk: bool, batch: int, stall: float):
        import select  # a cold index only, as this module
        import subprocess
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        data = pickle.dumps((bulk, batch, jobs), protocol=pickle.HIGHEST_PROTOCOL)
        self.stall = stall
        self.why: str | None = None  # why the items stopped, once they have
        self.proc = subprocess.Popen([sys.executable, "-c", _BOOT.format(root=root) + CHILD],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, close_fds=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in, self._out = self.proc.stdout.fileno(), self.proc.stdin.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)
        self._readable = select.poll()
        self._readable.register(self._in, select.POLLIN)
        self._writable = select.poll()
        self._writable.register(self._out, select.POLLOUT)
        self._give(len(data).to_bytes(HEADER, "little") + data)

    def _give(self, data: bytes) -> None:
        """The jobs written to the child, waiting at most `stall` seconds at a time for room."""
        view = memoryview(data)
        while view and self.why is None:
            try:
                view = view[os.write(self._out, view):]
            except BlockingIOError:
                if not self._writable.poll(self.stall * 1000):
                    self._stalled()
            except OSError:  # (it ended first)
                self._ended()

    def get(self):
        """The next (file number, kind, payload), or None: the child ended, failed or stalled,
        and is stopped."""
        head = self._exactly(HEADER)
        if head is None:
            return None
        n = int.from_bytes(head, "little")
        if n > MAX_ITEM:
            return self._broken(f"sent an item of {n} bytes")
        body = self._exactly(n)
        if body is None:
            return None
        try:
            item = loads(body)
            if not (isinstance(item, tuple) and len(item) == 3 and isinstance(item[0], int)
                    and item[1] in ("chunk", "end", "oserror", "failed")):
                raise ValueError("not (file number, kind, payload)")
        except Exception as e:  # noqa: BLE001 - whatever it is, it is no item of a reader's
            return self._broken(f"sent what is not parser output ({type(e).__name__}: {e})")
        return item

    def _exactly(self, n: int) -> bytearray | None:
        """n bytes from the child, or None once it has ended or stalled (see `why`)."""
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n and self.why is None:
            try:
                k = os.readv(self._in, [view[got:]])
            except BlockingIOError:  # nothing yet
                if not self._readable.poll(self.stall * 1000):
                    self._stalled()
                continue
            if not k:
                self._ended()
            got += k
        return buf if self.why is None else None

    def _stalled(self) -> None:
        self.why = f"gave no answer for {self.stall:g}s"
        self.stop()

    def _ended(self) -> None:
        import subprocess  # (imported by __init__)
        try:  # (its output closed: it is ending, if it has not)
            code: int | None = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        self.why = "ended" + ("" if not code else f" (exit status {code})" if code > 0
                              else f" (signal {-code})")
        self.stop()

    def _broken(self, why: str) -> None:
        self.why = why[:300]
        self.stop()

    def stop(self) -> None:
        """Kill it, if it still runs, and reap it (waiting a few seconds at most)."""
        import subprocess  # (imported by __init__)
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass  # (unkillable for now: reaped by a later Popen, or by init)

    def close(self) -> None:
        """The end of the run: the child's stdin closed ends it at once if it still reads."""
        import subprocess  # (imported by __init__)
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.stop()
