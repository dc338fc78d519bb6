"""The cold-index reader process: whatever happens to it, the index equals a one-process index."""
from __future__ import annotations

import os
import select
import signal
import struct
import subprocess
import sys

import pytest

from prima_memory import indexer
from prima_memory.logs import Log
from prima_memory.memory import Memory
from bench.synthetic import generate_history

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork reader: Linux")


def _index(env, monkeypatch, ws) -> dict:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", env.env["CLAUDE_CONFIG_DIR"])
    monkeypatch.setenv("HOME", env.env["HOME"])
    mem = Memory(str(ws), log=Log(None))
    try:
        rep = mem.update()
        assert rep.bytes_read > indexer.BULK_BYTES  # big enough to fork a reader
        db = mem.store().db
        return {sid: (n, text_len) for sid, n, text_len in db.execute(
            "SELECT s.session_id, count(m.id), sum(length(m.text)) FROM sessions s "
            "JOIN messages m ON m.session = s.id GROUP BY s.id")}
    finally:
        mem.close()


def _within(seconds: int, run):
    """A run stuck waiting on its reader fails the test instead of hanging the whole suite."""
    def stuck(_signum, _frame):
        pytest.fail(f"still waiting on the reader after {seconds}s")
    old = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(seconds)
    try:
        return run()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture
def history(env):
    generate_history(env.claude, str(env.ws), 12, seed=3, target_bytes=12_000_000, images=0)
    return env


def _dies_after_first_chunk(jobs, conn, bulk, lock_fd, parent_end):
    for i, job in enumerate(jobs):
        if job is not None:
            for chunk in indexer.read_chunks(job, bulk):
                conn.send((i, chunk))
                if i >= 2:
                    os._exit(1)  # the reader dies mid-run, mid-file
            conn.send((i, None))


def _dies_mid_message(jobs, conn, bulk, lock_fd, parent_end):
    for i, job in enumerate(jobs):
        if i == 2:  # the length of a message, a few of its bytes, then death
            os.write(conn.fileno(), struct.pack("!i", 100_000) + b"\x80\x04")
            os._exit(1)
        if job is not None:
            for chunk in indexer.read_chunks(job, bulk):
                conn.send((i, chunk))
        conn.send((i, None))


def _fails_on_third_file(jobs, conn, bulk, lock_fd, parent_end):
    for i, job in enumerate(jobs):
        if i == 2:
            conn.send((i, RuntimeError("boom")))
            return
        if job is not None:
            for chunk in indexer.read_chunks(job, bulk):
                conn.send((i, chunk))
        conn.send((i, None))


@pytest.mark.parametrize("reader", [None, _dies_after_first_chunk, _dies_mid_message,
                                    _fails_on_third_file])
def test_index_equals_a_one_process_index(history, monkeypatch, tmp_path, reader):
    env = history
    monkeypatch.setattr(indexer, "_CAN_FORK", False)
    alone = _index(env, monkeypatch, env.ws)
    (env.data / "index.db").unlink()
    for suffix in ("-wal", "-shm"):
        if (env.data / f"index.db{suffix}").exists():
            (env.data / f"index.db{suffix}").unlink()
    monkeypatch.setattr(indexer, "_CAN_FORK", True)
    if reader is not None:
        monkeypatch.setattr(indexer, "_read_all", reader)
    forked = _within(60, lambda: _index(env, monkeypatch, env.ws))
    assert forked == alone and len(alone) >= 12


_KILLED_WHILE_READER_IS_AHEAD = """
import os, signal, sys, time
from prima_memory import indexer
from prima_memory.sources import claude_code
found = claude_code.discover(sys.argv[1])
jobs = [(sf, 0, None, None, os.stat(sf.path).st_size) for sf in found]
feed = indexer._ReaderProcess(jobs, True, None)
print(feed.proc.pid, flush=True)
time.sleep(2)  # the reader parses everything; nothing takes its chunks, so its pipe is full
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_indexer_leaves_no_reader_behind(history):
    """A reader left behind holds the indexer's stdout open: whoever waits for the indexer's
    output (a hook runner, a shell pipe) would wait forever."""
    env = history
    p = subprocess.Popen([sys.executable, "-c", _KILLED_WHILE_READER_IS_AHEAD, str(env.ws)],
                         env=env.env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    reader = int(p.stdout.readline())
    assert p.wait(timeout=60) == -signal.SIGKILL
    closed = select.select([p.stdout], [], [], 30)[0] and p.stdout.read() == b""
    p.stdout.close()
    if not closed:
        os.kill(reader, signal.SIGKILL)
        pytest.fail(f"reader {reader} outlived its killed parent and kept its output open")
