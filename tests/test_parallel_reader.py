"""The cold-index reader process: whatever happens to it, the index equals a one-process index."""
from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

import pytest

import reader_faults
from conftest import within
from prima_memory import indexer, reader_process
from prima_memory.logs import Log
from prima_memory.memory import Memory
from bench.synthetic import generate_history

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the reader process: POSIX")


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


def _stopped_from_outside(monkeypatch):
    """The real reader, stopped (SIGSTOP) as soon as it starts."""
    real = indexer._ReaderProcess.__init__

    def start(self, *a, **k):
        real(self, *a, **k)
        os.kill(self.proc.pid, signal.SIGSTOP)
    monkeypatch.setattr(indexer._ReaderProcess, "__init__", start)


# each: (the faulty reader, what the log says of it, if anything)
FAULTS = {
    "dies_after_first_chunk": "the reader process ended (exit status 1)",
    "dies_mid_message": "the reader process ended (exit status 1)",
    "fails_on_third_file": None,  # (a parser error: this process reads that file, then goes on)
    "gives_up_on_third_file": "the reader process ended (exit status 1)",
    "stops_answering": "the reader process gave no answer for 1s",
    "sleeps": "the reader process gave no answer for 1s",
    "stopped_from_outside": "the reader process gave no answer for 1s",
    "sends_a_call": "the reader process sent what is not parser output",
}


@pytest.mark.parametrize("reader", [None, *FAULTS])
def test_index_equals_a_one_process_index(history, monkeypatch, tmp_path, reader):
    """Whatever the reader process does (dies, stops answering, sends what is no record), the
    index equals a one-process index, and the log says what happened."""
    env = history
    monkeypatch.setattr(indexer, "_READER_PROCESS", False)
    alone = _index(env, monkeypatch, env.ws)
    (env.data / "index.db").unlink()
    for suffix in ("-wal", "-shm"):
        if (env.data / f"index.db{suffix}").exists():
            (env.data / f"index.db{suffix}").unlink()
    log = env.data / "prima-memory.log"
    log.unlink(missing_ok=True)
    monkeypatch.setattr(indexer, "_READER_PROCESS", True)
    monkeypatch.setattr(indexer, "READER_STALL", 1.0)
    marker = tmp_path / "ran"
    monkeypatch.setenv("PRIMA_TEST_MARKER", str(marker))
    if reader == "stopped_from_outside":
        _stopped_from_outside(monkeypatch)
    elif reader is not None:
        monkeypatch.setattr(reader_process, "CHILD", reader_faults.child(reader))
    started = []
    real = indexer._ReaderProcess.__init__
    monkeypatch.setattr(indexer._ReaderProcess, "__init__",
                        lambda self, *a, **k: started.append(1) or real(self, *a, **k))
    two = within(60, lambda: _index(env, monkeypatch, env.ws))
    assert started and two == alone and len(alone) >= 12
    assert not marker.exists()  # what the reader sent ran nothing here
    said = [ln for ln in log.read_text().splitlines() if "reader process" in ln] \
        if log.exists() else []
    if reader is None or FAULTS[reader] is None:
        assert said == []
    else:
        assert len(said) == 1 and FAULTS[reader] in said[0] and "reads the rest" in said[0]


def test_an_index_goes_on_when_no_reader_process_can_start(history, monkeypatch, tmp_path):
    env = history
    monkeypatch.setattr(indexer, "_READER_PROCESS", False)
    alone = _index(env, monkeypatch, env.ws)
    for name in ("index.db", "index.db-wal", "index.db-shm", "prima-memory.log"):
        (env.data / name).unlink(missing_ok=True)
    monkeypatch.setattr(indexer, "_READER_PROCESS", True)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no such python"))
    assert _index(env, monkeypatch, env.ws) == alone
    said = (env.data / "prima-memory.log").read_text()
    assert "no reader process (FileNotFoundError" in said and "reads the files itself" in said


def test_only_records_cross():
    """The parent unpickles records and plain data: nothing that names another class or a
    function, so a reader (or whatever wrote to its pipe) can make it call nothing."""
    import pickle
    from prima_memory.records import Message, SessionDelta
    d = SessionDelta("s", "claude-code", "[transcript]")
    d.messages.append(Message("k", "user", "hello"))
    d.tags = {"python"}
    got = reader_process.loads(pickle.dumps((0, "chunk", ([d], 10, {"cwd": "/x"}, [])), 5))
    assert got[2][0][0].messages[0].text == "hello" and got[2][0][0].tags == {"python"}
    for hostile in (reader_faults._Run("true"), os.system, pickle.loads, object()):
        with pytest.raises(pickle.UnpicklingError):
            reader_process.loads(pickle.dumps((0, "chunk", hostile)))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="lists descriptors by /proc")
def test_the_reader_holds_no_descriptor_of_the_parent(history, tmp_path, monkeypatch):
    """Not the writer lock (a killed indexer frees it, whatever its reader does), nor anything
    else the parent has open: only its pipes, and /dev/null."""
    from prima_memory.locking import WriterLock
    lock = WriterLock(str(tmp_path / "index.lock"))
    lock.acquire(timeout=0)
    os.set_inheritable(lock.fd, True)  # (even a descriptor a fork or a plain exec would pass on)
    monkeypatch.setattr(reader_process, "CHILD", reader_faults.child("sleeps"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", history.env["CLAUDE_CONFIG_DIR"])
    feed = indexer._ReaderProcess(_jobs(history.ws), True)
    try:
        held = _open_files(feed.proc.pid)
        mine = _open_files(os.getpid())
    finally:
        feed.stop()
        lock.release()
    # (what the child opens itself as it starts, /etc/locale.alias say, is its own: a flake in
    # CI once listed it; only what the parent holds must not be there)
    assert not {h for h in held & mine if not h.startswith("pipe:") and h != os.devnull}, held
    assert str(tmp_path / "index.lock") not in held


def _open_files(pid: int) -> set[str]:
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            out.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:  # (closed meanwhile)
            pass
    return out


def _jobs(ws) -> list:
    from prima_memory.sources import claude_code, registry
    return [indexer.Job(registry.CLAUDE_CODE, sf.path, sf, 0, None, os.stat(sf.path).st_mtime,
                        os.stat(sf.path).st_size) for sf in claude_code.discover(str(ws))]


_KILLED_WHILE_READER_RUNS = """
import os, signal, sys, time
from prima_memory import indexer, reader_process
from prima_memory.sources import claude_code, registry
if sys.argv[2] != "real":
    reader_process.CHILD = sys.argv[2]
found = claude_code.discover(sys.argv[1])
jobs = [indexer.Job(registry.CLAUDE_CODE, sf.path, sf, 0, None, os.stat(sf.path).st_mtime,
                    os.stat(sf.path).st_size) for sf in found]
assert len(jobs) >= 12
feed = indexer._ReaderProcess(jobs, True, None)
print(feed.proc.pid, flush=True)
time.sleep(2)  # the real reader parses on; nothing takes its chunks, so its pipe fills
os.kill(os.getpid(), signal.SIGKILL)
"""


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # (a zombie, not yet reaped by whoever adopted it, has ended)
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


@pytest.mark.parametrize("reader", ["real", "sleeps"])
def test_a_killed_indexer_leaves_no_reader_behind(history, reader):
    """A reader left behind would hold what it holds for ever (the files it reads, a core): it
    ends with its parent, whether it was sending (a full pipe) or silent (a reader that writes
    nothing learns of its parent's death from its stdin)."""
    env = history
    child = reader if reader == "real" else reader_faults.child(reader)
    p = subprocess.Popen([sys.executable, "-c", _KILLED_WHILE_READER_RUNS, str(env.ws), child],
                         env=env.env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    reader_pid = int(p.stdout.readline())
    assert p.wait(timeout=60) == -signal.SIGKILL
    closed = select.select([p.stdout], [], [], 30)[0] and p.stdout.read() == b""
    p.stdout.close()
    deadline = time.monotonic() + 20
    while not _gone(reader_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not _gone(reader_pid):
        os.kill(reader_pid, signal.SIGKILL)
        pytest.fail(f"reader {reader_pid} outlived its killed parent")
    assert closed  # (nothing of it holds the indexer's output open)
