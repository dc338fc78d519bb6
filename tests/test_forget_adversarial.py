"""An adversarial pass over `prima-memory forget`: what forgetting one session must not do to
the others, where a forgotten session's words must not survive, and what hostile input must
not break."""
from __future__ import annotations

import json
import subprocess
import sys
import time


from test_forget import SECRET, T0, _bytes_hold, _forget, _history
from test_forget_hooks import prompt
from test_hooks import is_block
from test_sources import _log, _rollout


def test_forgetting_a_codex_session_leaves_the_others_whole(env):
    """Codex numbers its messages per file (r0, r1...): the keys of one session are every
    session's. A tombstone's keys must not drop another session's messages."""
    _rollout(env, "cx-gone", str(env.ws), f"the {SECRET} prompt", f"the {SECRET} reply")
    _rollout(env, "cx-kept", str(env.ws), "the zqxkeptcodexword prompt",
             "the zqxkeptcodexword reply")
    env.run("index")
    assert len(env.search("zqxkeptcodexword")) == 1
    _forget(env, "cx-gone")
    assert env.search(SECRET) == []
    env.run("index", "--rebuild")
    assert env.search(SECRET) == []
    assert [r["session_id"] for r in env.search("zqxkeptcodexword")] == ["cx-kept"]
    # and a Codex session begun after the forget
    _rollout(env, "cx-new", str(env.ws), "the zqxnewcodexword prompt", "the zqxnewcodexword reply")
    env.run("index")
    assert [r["session_id"] for r in env.search("zqxnewcodexword")] == ["cx-new"]


def test_forgetting_a_shared_log_entry_leaves_the_others_whole(env):
    """Every shared-log entry's one message has the key "entry"."""
    _log(env, "gone.md", f"# Gone\n\nthe {SECRET} entry\n")
    _log(env, "kept.md", "# Kept\n\nthe zqxkeptlogword entry\n")
    env.run("index")
    gone = env.search(SECRET)
    assert len(gone) == 1 and len(env.search("zqxkeptlogword")) == 1
    _forget(env, gone[0]["session_id"])
    env.run("index", "--rebuild")
    assert env.search(SECRET) == []
    assert len(env.search("zqxkeptlogword")) == 1


def _fork_of(env, s, sid: str, start: float):
    """A fork (or resume) of session `s`: its lines copied under a new session id."""
    fork = env.transcript(sid, start=start)
    for line in s.path.read_text().splitlines():
        d = json.loads(line)
        d["sessionId"] = fork.session_id
        fork.raw(d)
    return fork


def test_a_fork_read_while_it_holds_only_copies_keeps_no_forgotten_text(env):
    """Read before its user typed anything of its own (or its copies ending a read step): the
    state's tail of the last reply read is the forgotten session's."""
    s, _k = _history(env)
    s.reply(f"The {SECRET} reply that ends the session.")
    env.run("index")
    _forget(env, s.session_id)
    fork = _fork_of(env, s, "cccc3333-0000-0000-0000-000000000003", T0 + 9000)
    env.run("index")
    assert _bytes_hold(env.data, SECRET) == []
    fork.user("now edit the tea file")
    fork.tool("Edit", {"file_path": str(env.ws / "tea.py"), "old_string": "a",
                       "new_string": "b"}, text="Editing the tea file")
    env.run("index")
    assert _bytes_hold(env.data, SECRET) == []
    assert [r["session_id"] for r in env.search("tea")] == [fork.session_id]


def _reader(env):
    """Another process (an MCP server, a long export) in a read transaction of the index, until
    told to end it; it stays connected after."""
    code = ("import sqlite3, sys\n"
            "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "db.execute('BEGIN'); db.execute('SELECT count(*) FROM messages').fetchone()\n"
            "print('in', flush=True); sys.stdin.readline()\n"
            "db.execute('COMMIT'); print('out', flush=True); sys.stdin.readline()\n")
    r = subprocess.Popen([sys.executable, "-c", code, str(env.data / "index.db")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert r.stdout.readline().strip() == "in"
    return r


def test_a_reader_in_the_way_neither_holds_up_a_forget_nor_keeps_the_words(env):
    s, _k = _history(env)
    env.run("index")
    r = _reader(env)
    try:
        t0 = time.monotonic()
        done = json.loads(_forget(env, s.session_id).stdout)
        assert time.monotonic() - t0 < 30  # (50 tries, each waiting 5 s for the reader: 4 min)
        assert not done["log_emptied"]
        assert env.search(SECRET) == []
        r.stdin.write("\n")
        r.stdin.flush()
        assert r.stdout.readline().strip() == "out"
        # the reader is done but still connected (no last close checkpoints the log): the next
        # index empties it, as the forget said
        env.run("index")
        assert _bytes_hold(env.data, SECRET) == []
    finally:
        r.kill()
        r.wait()


def test_the_log_keeps_nothing_a_forgotten_sessions_file_held(env):
    """A record type the reader does not know is logged (with the file's path) when first
    read: its name is the transcript's text."""
    s, _k = _history(env)
    s.raw({"type": f"{SECRET}kind", "sessionId": s.session_id, "uuid": "u-odd"})
    env.run("index")
    assert _bytes_hold(env.data, SECRET)
    _forget(env, s.session_id)
    assert _bytes_hold(env.data, SECRET) == []


def test_a_forget_that_fails_in_the_hook_is_not_told_as_a_recall(env):
    s, _k = _history(env)
    env.run("index")
    r = prompt(env, s.session_id, "/prima-memory:forget --yes nosuchid")
    assert r.rc == 0 and is_block(r.out)
    assert "/prima-memory:forget" in r.out and "recall" not in r.out and "search" not in r.out
    assert env.search(SECRET)
    (env.ws / ".prima-memory-off").write_text("")
    r = prompt(env, s.session_id, "/prima-memory:forget this")
    assert r.rc == 0 and "/prima-memory:forget" in r.out and "recall" not in r.out


def test_an_empty_id_forgets_nothing(env):
    """`prima-memory forget "$ID" --yes` with $ID empty: "" is a prefix of every id."""
    s = env.transcript("aaaa1111-0000-0000-0000-000000000001", start=T0)
    s.exchange(f"the {SECRET} question", f"the {SECRET} answer")
    env.run("index")
    p = env.run("forget", "", "--yes", check=False)
    assert p.returncode != 0 and env.search(SECRET)
    _forget(env, s.session_id)
    p = env.run("forget", "--undo", " ", check=False)
    assert p.returncode != 0 and env.json("forget", "--list")["forgotten"]


def test_a_stop_racing_a_forget_brings_nothing_back(env):
    """A run reads the tombstones, then waits for the writer lock: a forget that ran in
    between must still hold when it indexes (its file row gone, the session read whole again)."""
    from prima_memory.memory import Memory
    s, _k = _history(env)
    env.run("index")
    s.exchange(f"one more {SECRET} question", f"one more {SECRET} answer")
    mem = Memory(str(env.ws))
    real = mem._take_lock

    def forget_first(timeout):  # (the forget ran between the run's look and its lock)
        mem._take_lock = real
        _forget(env, s.session_id)
        real(timeout)

    mem._take_lock = forget_first  # type: ignore[method-assign]
    try:
        mem.update(only_session=s.session_id)
    finally:
        mem.close()
    assert env.search(SECRET) == []
    env.run("index")
    assert env.search(SECRET) == [] and _bytes_hold(env.data, SECRET) == []


LONG = "please run the whole test suite, fix every failure you find, then commit it all"


def test_forgetting_a_session_keeps_another_sessions_same_long_prompt(env):
    # (a tombstone's text hashes drop copies only inside a session that copies it by key)
    s = env.transcript("aaaa1111-0000-0000-0000-000000000001", start=T0)
    s.exchange(LONG, f"the {SECRET} answer")
    k = env.transcript("bbbb2222-0000-0000-0000-000000000002", start=T0 + 86400)
    k.exchange(LONG, "the zqxkeptanswerword answer")
    env.run("index")
    _forget(env, s.session_id)
    env.run("index", "--rebuild")
    assert [r["session_id"] for r in env.search("suite failure")] == [k.session_id]


def test_a_cloned_folders_garbage_tombstone_file_stops_indexing_until_moved_away(env):
    """A tombstone file that cannot be read may be the user's own, damaged (their key gone,
    nothing can tell): nothing is indexed, said in one line, until they move it away."""
    s, _k = _history(env)
    env.data.mkdir(parents=True, exist_ok=True)
    (env.data / "forgotten.json").write_bytes(b"\x00garbage{")
    p = env.run("index", check=False)
    assert p.returncode != 0 and len(p.stderr.strip().splitlines()) == 1
    assert "forgotten.json" in p.stderr and "move it away" in p.stderr
    (env.data / "forgotten.json").unlink()
    env.run("index")
    assert [r["session_id"] for r in env.search(SECRET)] == [s.session_id]
