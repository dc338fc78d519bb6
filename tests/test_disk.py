"""The disk under the index: read-only with changes still in the write-ahead log, and full. Each
test mounts a small tmpfs as the workspace's .prima-memory (root, or a user namespace where
mounts are allowed), and skips where it cannot."""
from __future__ import annotations

import errno
import os
import subprocess

import pytest

from test_hooks import payload, run_hook, sid

OLD = 1_700_000_000.0
A, B = sid(0xA), sid(0xB)


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, timeout=30)


@pytest.fixture
def data_mount(env):
    """env.data as a 4 MB tmpfs; remount it with _mount("-o", "remount,ro", path)."""
    env.data.mkdir()
    try:
        _mount("-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(env.data))
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"cannot mount a tmpfs here: {e}")
    try:
        yield env.data
    finally:
        subprocess.run(["umount", "-l", str(env.data)], capture_output=True, timeout=30)


def test_read_only_with_an_unflushed_log_answers_from_the_log(env, data_mount):
    env.transcript(A, start=OLD).exchange("Fix the zanzibarite parser", "Fixed it.")
    env.index_without_checkpoint()
    assert (data_mount / "index.db-wal").stat().st_size > 0
    _mount("-o", "remount,ro", str(data_mount))
    before = sorted(os.listdir(data_mount))
    found = env.json("search", "zanzibarite", "--mode", "keyword")
    assert [r["session_id"] for r in found["results"]] == [A]
    assert any("read-only" in w for w in found["warnings"]), found["warnings"]
    assert env.run("status").returncode == 0
    r = run_hook(env, "session-start", payload(env, "session-start", sid(9)))
    assert r.rc == 0 and "Fix the zanzibarite parser" in r.out, r
    assert sorted(os.listdir(data_mount)) == before  # nothing moved aside, nothing made


def test_read_only_where_the_log_cannot_be_read_says_so_and_moves_nothing(env, data_mount):
    """No -shm beside the log, and none can be made: the log cannot be read, and the file alone
    may be inconsistent without it. Said in one line; nothing is called corrupt or moved."""
    env.transcript(A, start=OLD).exchange("Fix the zanzibarite parser", "Fixed it.")
    env.index_without_checkpoint()
    os.unlink(data_mount / "index.db-shm")
    _mount("-o", "remount,ro", str(data_mount))
    before = sorted(os.listdir(data_mount))
    p = env.run("search", "zanzibarite", "--mode", "keyword", check=False)
    if p.returncode == 0:  # this SQLite reads the log without a -shm: the answer is right
        assert A in p.stdout
    else:
        assert p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr
        assert "index.db-wal" in p.stderr and "malformed" not in p.stderr, p.stderr
    r = run_hook(env, "session-start", payload(env, "session-start", sid(9)))
    assert r.rc == 0 and r.err == "", r
    assert sorted(os.listdir(data_mount)) == before


def _fill(path) -> None:
    """Take every free byte of the file system `path` is on. Unbuffered: a buffered file keeps
    what a short write left over, and closing it raises ENOSPC again."""
    with open(os.path.join(path, "filler"), "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
    # (tmpfs can leave a few bytes of a page: take them too)
    try:
        with open(os.path.join(path, "filler2"), "wb", buffering=0) as f:
            while True:
                f.write(b"\0")
    except OSError:
        pass


def test_a_full_disk_is_said_and_reads_answer_from_what_the_index_holds(env, data_mount):
    env.transcript(A, start=OLD).exchange("Fix the zanzibarite parser", "Fixed it.")
    env.run("index")
    env.transcript(B, start=OLD + 60).exchange(
        "Plan the quokka release " + "with notes " * 3000, "Planned. " * 3000)
    _fill(data_mount)
    found = env.json("search", "zanzibarite", "--mode", "keyword")
    assert [r["session_id"] for r in found["results"]] == [A]
    assert any("disk is full" in w for w in found["warnings"]), found["warnings"]
    r = run_hook(env, "session-start", payload(env, "session-start", sid(9)))
    assert r.rc == 0 and "Fix the zanzibarite parser" in r.out and r.err == "", r
    p = env.run("index", "--rebuild", check=False)
    assert p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr
    assert "disk is full" in p.stderr and "rollback" not in p.stderr, p.stderr
    # space again: nothing was lost, and what waited is indexed
    os.unlink(data_mount / "filler")
    if (data_mount / "filler2").exists():
        os.unlink(data_mount / "filler2")
    env.run("index")
    assert [r["session_id"] for r in env.search("zanzibarite")] == [A]
    assert [r["session_id"] for r in env.search("quokka")] == [B]


def test_a_disk_that_fills_while_the_index_is_open_is_said_and_loses_nothing(env, data_mount):
    """The disk fills under an open index (its -shm and log made while there was room): the
    rebuild's writes fail, and the error says the disk is full (SQLite has rolled back already:
    a second rollback used to hide it); searches answer from the index as it stands."""
    from prima_memory import api
    from prima_memory.errors import Failure
    from prima_memory.memory import Memory
    env.transcript(A, start=OLD).exchange("Fix the zanzibarite parser", "Fixed it.")
    mem = Memory(str(env.ws))
    try:
        api.index(mem)
        env.transcript(B, start=OLD + 60).exchange(
            "Plan the quokka release " + "with notes " * 3000, "Planned. " * 3000)
        _fill(data_mount)
        found = api.search(mem, "zanzibarite", mode="keyword",
                           ready=api.bring_up(mem))
        assert [r["session_id"] for r in found["results"]] == [A]
        assert any("disk is full" in w for w in found["warnings"]), found["warnings"]
        with pytest.raises(Failure) as e:
            api.index(mem, rebuild=True)
        assert "disk is full" in str(e.value) and "rollback" not in str(e.value), e.value
        os.unlink(data_mount / "filler")
        if (data_mount / "filler2").exists():
            os.unlink(data_mount / "filler2")
        api.index(mem)
        assert [r["session_id"] for r in api.search(mem, "quokka", mode="keyword",
                                                     ready=api.bring_up(mem))["results"]] \
            == [B]
    finally:
        mem.close()



def test_a_full_disk_while_a_step_spills_is_said_in_one_line(env, data_mount):
    """The disk fills while another process has the index open (its -shm and log made while
    there was room) and `index` reads a long session: SQLite spills the step's pages to the log,
    fails, and rolls the whole transaction back itself, taking the savepoint a file's writes
    hold with it. index says the disk is full (it said "no such savepoint: _apsw-0"); search,
    recent and the briefing answer from the index as it stands, with a warning."""
    import apsw
    _mount("-o", "remount,size=24m", str(data_mount))  # (room for the long session, later)
    env.transcript(A, start=OLD).exchange("Fix the zanzibarite parser", "Fixed it.")
    env.run("index")
    held = apsw.Connection(str(data_mount / "index.db"))  # (another process's, in effect)
    try:
        held.execute("SELECT count(*) FROM sessions").fetchall()
        env.transcript(B, start=OLD + 60).exchange(
            "Plan the quokka release " + " ".join(f"note{k}" for k in range(100_000)), "Planned.")
        _fill(data_mount)
        p = env.run("index", check=False)
        assert p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr
        assert "disk is full" in p.stderr and "savepoint" not in p.stderr, p.stderr
        for args, key in ((("search", "zanzibarite", "--mode", "keyword"), "results"),
                          (("recent",), "sessions")):
            found = env.json(*args)
            assert [r["session_id"] for r in found[key]] == [A], args
            assert any("disk is full" in w for w in found["warnings"]), found["warnings"]
        p = env.run("recent")
        assert "Fix the zanzibarite parser" in p.stdout and "disk is full" in p.stdout, p
        r = run_hook(env, "session-start", payload(env, "session-start", sid(9)))
        assert r.rc == 0 and "Fix the zanzibarite parser" in r.out and r.err == "", r
        os.unlink(data_mount / "filler")
        if (data_mount / "filler2").exists():
            os.unlink(data_mount / "filler2")
        env.run("index")
        assert [r["session_id"] for r in env.search("quokka")] == [B]
    finally:
        held.close()
