"""Reader processes that go wrong, started in place of the real one by the tests
(reader_process.CHILD = child("name")): each reads as the real one does, then fails its way."""
from __future__ import annotations

import os
import pickle
import signal
import time
from pathlib import Path

from prima_memory import reader_process as rp


def child(name: str) -> str:
    """What a reader process runs to be the faulty reader `name`."""
    here = str(Path(__file__).resolve().parent)
    return f"import sys; sys.path.insert(0, {here!r}); import reader_faults; reader_faults.{name}()"


def _until(i_bad: int, then) -> None:
    """The real reader for the first files; at file i_bad, `then(i, job, send)`."""
    def read(jobs, bulk, batch, send):
        for i, job in enumerate(jobs):
            if i == i_bad:
                then(i, job, bulk, batch, send)
                continue
            for chunk in rp.chunks(job, bulk, batch):
                send(i, "chunk", chunk)
            send(i, "end", None)
    rp.main(read)


def dies_after_first_chunk() -> None:
    def die(i, job, bulk, batch, send):
        send(i, "chunk", next(iter(rp.chunks(job, bulk, batch))))
        os._exit(1)  # mid-run, mid-file
    _until(2, die)


def dies_mid_message() -> None:
    def die(i, job, bulk, batch, send):  # the length of an item, a few of its bytes, then death
        os.write(send.fd, (100_000).to_bytes(rp.HEADER, "little") + b"\x80\x05")
        os._exit(1)
    _until(2, die)


def fails_on_third_file() -> None:
    """A parser error on one file: the reader says so and goes on with the next."""
    _until(2, lambda i, job, bulk, batch, send: send(i, "failed", "RuntimeError: boom"))


def gives_up_on_third_file() -> None:
    def give_up(i, job, bulk, batch, send):
        send(i, "failed", "MemoryError")
        os._exit(1)
    _until(2, give_up)


def stops_answering() -> None:
    """Stopped (SIGSTOP) in the middle of the third file: alive, silent."""
    def stop(i, job, bulk, batch, send):
        send(i, "chunk", next(iter(rp.chunks(job, bulk, batch))))
        os.kill(os.getpid(), signal.SIGSTOP)
    _until(2, stop)


def sleeps() -> None:
    """Silent from the start, for an hour."""
    rp.main(lambda jobs, bulk, batch, send: time.sleep(3600))


class _Run:
    """Pickles as a call of os.system: what a reader must never make its parent do."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


def sends_a_call() -> None:
    """A pickle that would run a command where it is unpickled, in the third file's place."""
    def evil(i, job, bulk, batch, send):
        marker = os.environ["PRIMA_TEST_MARKER"]
        data = pickle.dumps((i, "chunk", ([], job[6], None, [_Run(f"touch '{marker}'")])))
        os.write(send.fd, len(data).to_bytes(rp.HEADER, "little") + data)
        time.sleep(3600)
    _until(2, evil)
