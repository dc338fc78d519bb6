"""The cold-index reader process: whatever happens to it, the index equals a one-process index."""
from __future__ import annotations

import os
import sys

import pytest

from prima_memory import indexer
from prima_memory.logs import Log
from prima_memory.memory import Memory
from prima_memory.synthetic import generate_history

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


@pytest.fixture
def history(env):
    generate_history(env.claude, str(env.ws), 12, seed=3, target_bytes=12_000_000, images=0)
    return env


def _dies_after_first_chunk(jobs, queue, bulk, lock_fd):
    for i, job in enumerate(jobs):
        if job is not None:
            for chunk in indexer.read_chunks(*job, bulk):
                queue.put((i, chunk))
                if i >= 2:
                    os._exit(1)  # the reader dies mid-run, mid-file
            queue.put((i, None))


def _fails_on_third_file(jobs, queue, bulk, lock_fd):
    for i, job in enumerate(jobs):
        if i == 2:
            queue.put((i, RuntimeError("boom")))
            return
        if job is not None:
            for chunk in indexer.read_chunks(*job, bulk):
                queue.put((i, chunk))
        queue.put((i, None))


@pytest.mark.parametrize("reader", [None, _dies_after_first_chunk, _fails_on_third_file])
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
    forked = _index(env, monkeypatch, env.ws)
    assert forked == alone and len(alone) >= 12
