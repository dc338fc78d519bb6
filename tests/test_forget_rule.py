"""One rule for "forgotten" (#36): a forgotten session, what it says after, its forks, its copies
under other keys and the words it once held leave no byte under .prima-memory, in the user-level
store or in any answer, whatever order processes run in and whatever the state of the user's key
or of the tombstone file; where that cannot be known, nothing is indexed and nothing is read."""
from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import time
from pathlib import Path

import pytest
from test_forget import SECRET, T0, _bytes_hold, _forget, _history
from test_forget_hooks import prompt
from test_hooks import is_block, payload, run_hook

LATER = ("zqxlaterwordone", "zqxlaterwordtwo")
FORK = "cccc3333-0000-0000-0000-000000000003"


def _gone(env, *words) -> None:
    """Each word found by no search and in no byte under .prima-memory."""
    for w in words:
        assert env.search(w) == [], w
        assert _bytes_hold(env.data, w) == [], w


def _fork(env, s, session_id: str = FORK, *, new_keys: bool = False, start: float = T0 + 90000):
    """A session that copies every line of `s` (as --fork-session or a resume does), then says
    something of its own. `new_keys`: every uuid and message id made anew (a copy a tool made)."""
    fork = env.transcript(session_id, start=start)
    for line in s.path.read_text().splitlines():
        d = json.loads(line)
        d["sessionId"] = fork.session_id
        if new_keys and d.get("uuid"):
            for k in ("uuid", "parentUuid"):
                if d.get(k):
                    d[k] = "copy-" + d[k]
            if isinstance(d.get("message"), dict) and d["message"].get("id"):
                d["message"]["id"] = "msg_copy" + d["message"]["id"]
        fork.raw(d)
    fork.exchange("the fork's own question about zqxforkword", "the fork's own zqxforkword answer")
    return fork


def _pending_forget(env, session_id: str) -> None:
    """A forget killed right after its tombstone: written, nothing else done (in-process: the
    writer lock never comes)."""
    from prima_memory.memory import IndexBusy, Memory

    def busy(timeout):
        raise IndexBusy("held")
    mem = Memory(str(env.ws))
    try:
        rows = [mem.store().session_by_session_id(session_id, "claude-code")]
        mem._take_lock = busy  # type: ignore[method-assign]
        assert mem.forget(rows)["pending"]
    finally:
        mem.close()


class _Held:
    """The index's writer lock, held by this (another) process."""

    def __init__(self, env):
        env.data.mkdir(exist_ok=True)
        self.fd = os.open(env.data / "index.lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def release(self) -> None:
        os.close(self.fd)


# -- what follows a forget, and forks (2, 15) ------------------------------------------------------

def test_forget_this_covers_the_turns_after_it_and_a_fork_of_them(env):
    """In Claude Code: `/prima-memory:forget this`, two more turns (each ends in Stop), then
    `--resume ID --fork-session`: the fork's copies of the two turns stay out, its own turn in."""
    s, _k = _history(env)
    env.run("index")
    r = prompt(env, s.session_id, "/prima-memory:forget this")
    assert r.rc == 0 and "forgot this session" in r.out
    for word in LATER:
        s.exchange(f"one more thing about {word} please", f"done with {word} now")
        assert run_hook(env, "stop", payload(env, "stop", s.session_id,
                                             last_assistant_message=f"done with {word} now")).rc == 0
    fork = _fork(env, s)
    assert run_hook(env, "stop", payload(env, "stop", fork.session_id)).rc == 0
    _gone(env, SECRET, *LATER)
    assert [r["session_id"] for r in env.search("zqxforkword")] == [fork.session_id]
    env.run("index", "--rebuild")
    _gone(env, SECRET, *LATER)


@pytest.mark.parametrize("how", ["one run", "the fork's Stop", "the fork's SessionStart"])
def test_a_session_forgotten_then_continued_without_a_stop_comes_back_through_no_fork(env, how):
    """Forgotten with the CLI, then continued with no Stop to see it (Esc, quit, another
    machine's copy): a fork read before the forgotten session's file is looked at again keeps
    none of the later turns, whichever run reads it."""
    s, _k = _history(env)
    env.run("index")
    _forget(env, s.session_id)
    for word in LATER:
        s.exchange(f"one more thing about {word} please", f"done with {word} now")
    fork = _fork(env, s)
    if how == "one run":
        env.run("index")
    elif how == "the fork's Stop":
        assert run_hook(env, "stop", payload(env, "stop", fork.session_id)).rc == 0
    else:
        assert run_hook(env, "session-start", payload(env, "session-start",
                                                      "dddd4444-0000-0000-0000-000000000004")).rc == 0
    _gone(env, SECRET, *LATER)
    env.run("index")
    _gone(env, SECRET, *LATER)
    assert [r["session_id"] for r in env.search("zqxforkword")] == [fork.session_id]


def test_an_opted_out_turn_that_ended_without_a_stop_stays_out_of_a_resumed_copy(env):
    """PRIMA_MEMORY=off; its last turn ends with no Stop (Esc, then quit); later resumed, as a
    copy, without the switch: that turn stays out too."""
    _history(env)
    env.run("index")
    off = env.transcript("dddd4444-0000-0000-0000-000000000004", start=T0 + 20000)
    run_hook(env, "session-start", payload(env, "session-start", off.session_id),
             extra_env={"PRIMA_MEMORY": "off"})
    off.exchange("the zqxoptedoutword draft", "the zqxoptedoutword reply")
    run_hook(env, "stop", payload(env, "stop", off.session_id), extra_env={"PRIMA_MEMORY": "off"})
    off.exchange("and the zqxnostopword part", "the zqxnostopword reply")  # no Stop came
    resumed = _fork(env, off, "eeee5555-0000-0000-0000-000000000005")
    assert run_hook(env, "stop", payload(env, "stop", resumed.session_id)).rc == 0
    env.run("index")
    _gone(env, "zqxoptedoutword", "zqxnostopword")
    assert [r["session_id"] for r in env.search("zqxforkword")] == [resumed.session_id]


@pytest.mark.parametrize("how", ["PRIMA_MEMORY=off", "forget this"])
def test_a_fork_kept_out_leaves_its_origin_the_lines_it_copied(env, how):
    """A resume or a fork kept out (PRIMA_MEMORY=off, or `/prima-memory:forget this` in it):
    what it said is forgotten, and a copy of that stays out; the lines of its origin that it
    copied stay the origin's, through every later read of either file and a --rebuild."""
    p = env.transcript("aaaa7777-0000-0000-0000-000000000007", start=T0)
    p.exchange("the zqxparentword question about caching", "the zqxparentword answer about caching")
    env.run("index")
    fork = _fork(env, p)
    if how == "forget this":
        env.run("index")
        assert prompt(env, fork.session_id, "/prima-memory:forget this").rc == 0
    else:
        assert run_hook(env, "session-start", payload(env, "session-start", fork.session_id),
                        extra_env={"PRIMA_MEMORY": "off"}).rc == 0
    for args in (["index"], ["index"], ["index", "--rebuild"]):
        env.run(*args)
        fork.exchange("and the zqxforkmoreword part", "the zqxforkmoreword reply")
        env.run(*args)
        assert [r["session_id"] for r in env.search("zqxparentword")] == [p.session_id], args
        assert [(r["session_id"], r["message_count"]) for r in env.json("recent")["sessions"]] \
            == [(p.session_id, 2)], args
        _gone(env, "zqxforkword", "zqxforkmoreword")
    copy = _fork(env, fork, "eeee5555-0000-0000-0000-000000000005", start=T0 + 99000)
    env.run("index")  # (a resume of the fork: what the fork said stays out, the copy's own in)
    _gone(env, "zqxforkmoreword")
    assert [r["session_id"] for r in env.search("zqxforkword")] == [copy.session_id]
    assert [r["session_id"] for r in env.search("zqxparentword")] == [p.session_id]


def test_a_copy_deleted_from_a_fork_takes_the_title_tags_and_decisions_it_gave(env):
    """A fork read before the opted-out session it copies (its tombstone named no line yet):
    it is titled by that session's first prompt and holds its decision lines and tags. When the
    opted-out transcript is read its lines are deleted from the fork, and what they made of the
    fork's summary goes with them: its title is its own first prompt again."""
    off = env.transcript("dddd4444-0000-0000-0000-000000000004", start=T0 + 20000)
    assert run_hook(env, "session-start", payload(env, "session-start", off.session_id),
                    extra_env={"PRIMA_MEMORY": "off"}).rc == 0
    off.exchange("the zqxoptedoutword draft for P777", "we decided to use the zqxdecisionword cache")
    fork = _fork(env, off)
    now = time.time()
    os.utime(off.path, (now - 100, now - 100))  # (the fork, written last, is read first)
    os.utime(fork.path, (now, now))
    env.run("index")
    got = env.json("recent")["sessions"]
    assert [(r["session_id"], r["title"]) for r in got] \
        == [(fork.session_id, "The fork's own question about zqxforkword")]
    assert "project:P777" not in got[0]["tags"] and "decision" not in got[0]["tags"]
    _gone(env, "zqxoptedoutword", "zqxdecisionword")
    assert env.search("draft for") == []


# -- whatever order processes run in (3, 14) ----------------------------------------------------

def test_an_opt_out_is_kept_while_another_process_holds_the_index(env):
    """PRIMA_MEMORY=off while another process holds .prima-memory/index.lock: the tombstone is
    written all the same, so the session is never indexed, briefed or remembered."""
    _history(env)
    env.run("index")
    held = _Held(env)
    off = env.transcript("dddd4444-0000-0000-0000-000000000004", start=T0 + 20000)
    try:
        r = run_hook(env, "session-start", payload(env, "session-start", off.session_id),
                     extra_env={"PRIMA_MEMORY": "off"})
        assert r.rc == 0 and r.out == ""
        off.exchange("the zqxoptedoutword draft", "the zqxoptedoutword reply")
        r = run_hook(env, "stop", payload(env, "stop", off.session_id,
                                          last_assistant_message="the zqxoptedoutword reply"),
                     extra_env={"PRIMA_MEMORY": "off"})
        assert r.rc == 0
    finally:
        held.release()
    assert [e["session_id"] for e in env.json("forget", "--list")["forgotten"]] == [off.session_id]
    r = run_hook(env, "session-start", payload(env, "session-start",
                                               "ffff6666-0000-0000-0000-000000000006"))
    assert r.rc == 0 and is_block(r.out) and "zqxoptedoutword" not in r.out
    env.run("index")
    _gone(env, "zqxoptedoutword")


def test_a_forget_killed_after_its_tombstone_is_finished_by_every_reader(env):
    """Every path that reads the memory finishes it first: status, forget --list, a one-shot MCP
    server, --all-projects, the compact SessionStart (which injects no checkpoint of it)."""
    s, k = _history(env)
    env.run("index")
    r = run_hook(env, "pre-compact", payload(env, "pre-compact", s.session_id))
    assert r.rc == 0 and any("-checkpoint" in os.path.basename(p)
                             for p in _bytes_hold(env.data, SECRET))
    _pending_forget(env, s.session_id)
    assert _bytes_hold(env.data, SECRET)  # (nothing removed yet: a kill came here)
    r = run_hook(env, "session-start", payload(env, "session-start", s.session_id,
                                               source="compact"))
    assert r.rc == 0 and r.out == ""
    _gone(env)  # (the hook opened the memory: that finished it)
    assert _bytes_hold(env.data, SECRET) == []


@pytest.mark.parametrize("reader", ["status", "forget --list", "search --all-projects", "mcp"])
def test_each_reader_finishes_a_forget_killed_halfway(env, reader):
    s, _k = _history(env)
    env.run("index")
    _pending_forget(env, s.session_id)
    if reader == "status":
        assert env.json("status")["counts"]["sessions"] == 1
    elif reader == "forget --list":
        assert [e["session_id"] for e in env.json("forget", "--list")["forgotten"]] == [s.session_id]
    elif reader == "search --all-projects":
        assert env.json("search", SECRET, "--all-projects", "--mode", "keyword")["results"] == []
    else:
        from test_mcp import call, serve

        async def body(session):
            return await call(session, "search_sessions", query=SECRET, mode="keyword")
        err, text = serve(env, body)
        assert not err and json.loads(text)["results"] == []
    assert _bytes_hold(env.data, SECRET) == []
    _gone(env, SECRET)


def test_a_reader_that_cannot_finish_a_forget_reads_nothing(env):
    """Another process holds the index past the wait, and the index still holds what a
    tombstone names: no answer at all (one line), rather than the forgotten session."""
    s, _k = _history(env)
    env.run("index")
    _pending_forget(env, s.session_id)
    held = _Held(env)
    try:
        p = env.run("search", SECRET, "--mode", "keyword", check=False)
        assert p.returncode != 0 and SECRET not in p.stdout
        assert len(p.stderr.strip().splitlines()) == 1 and "forgotten" in p.stderr
        p = env.run("recent", check=False)
        assert p.returncode != 0 and "aaaa1111" not in p.stdout
        r = run_hook(env, "session-start", payload(env, "session-start",
                                                   "ffff6666-0000-0000-0000-000000000006"))
        assert r.rc == 0 and SECRET not in r.out
    finally:
        held.release()
    _gone(env, SECRET)


def test_an_open_memory_never_answers_with_a_session_forgotten_since(env, monkeypatch):
    """A memory held open (the MCP server's) that read the index before a forget another process
    could not finish (the index held elsewhere): each read after it notices the tombstone, and
    answers nothing from an index still holding the session (one line); once the index is free,
    the next read finishes the forget."""
    from prima_memory import api
    from prima_memory.memory import ForgetPending
    s, _k = _history(env)
    env.run("index")
    from prima_memory import memory
    monkeypatch.setattr(memory, "LOCK_SECONDS", 0.3)
    monkeypatch.setattr(api, "LOCK_SECONDS", 0.3)
    mem = api.open_memory(str(env.ws), lasting=True)
    mem.settle_wait = 0.3
    reads = {"search": lambda: [r["session_id"] for r in
                                api.search(mem, SECRET, mode="keyword")["results"]],
             "recent": lambda: [r["session_id"] for r in api.recent(mem, 10)["sessions"]]}
    try:
        assert s.session_id in reads["search"]() and s.session_id in reads["recent"]()
        held = _Held(env)
        try:
            _pending_forget(env, s.session_id)
            for name, read in reads.items():
                try:
                    got = mem.guarded(read)
                except ForgetPending as e:
                    assert len(str(e).splitlines()) == 1
                else:
                    assert s.session_id not in got, name
        finally:
            held.release()
        assert reads["search"]() == [] and s.session_id not in reads["recent"]()
    finally:
        mem.close()
    _gone(env, SECRET)


def test_an_undo_while_the_index_is_busy_loses_nothing(env, monkeypatch):
    """`forget --undo` while another process holds the index: one line saying so, and the session
    still forgotten (listed, its file set aside), so that the same undo, tried again, brings it
    back; one whose index stays busy after the undo is read again by the next run."""
    from prima_memory import api
    from prima_memory.errors import Failure
    from prima_memory.memory import IndexBusy, Memory
    s, _k = _history(env)
    env.run("index")
    _forget(env, s.session_id)
    env.run("index")  # (its file is set aside as a forgotten session's)
    from prima_memory import memory
    monkeypatch.setattr(memory, "LOCK_SECONDS", 0.3)
    monkeypatch.setattr(api, "LOCK_SECONDS", 0.3)
    held = _Held(env)
    try:
        with pytest.raises(Failure, match="try again") as e:
            api.call(str(env.ws), lambda mem: api.undo_forget(mem, [s.session_id]))
    finally:
        held.release()
    assert len(str(e.value).splitlines()) == 1
    assert [t["session_id"] for t in env.json("forget", "--list")["forgotten"]] == [s.session_id]
    env.run("index")
    _gone(env, SECRET)
    d = env.json("forget", "--undo", s.session_id)
    assert d["back"] == [s.session_id]
    assert [r["session_id"] for r in env.search(SECRET)] == [s.session_id]
    # the undo done, the index busy again before its files are read: said, and read next time
    _forget(env, s.session_id)

    def busy(self, **_kw):
        raise IndexBusy("another prima-memory process is updating the index")
    monkeypatch.setattr(Memory, "update", busy)
    d = api.call(str(env.ws), lambda mem: api.undo_forget(mem, [s.session_id]))
    monkeypatch.undo()
    assert d["remembered"] == [s.session_id] and d["back"] == [] and d["pending"]
    assert env.json("forget", "--list")["forgotten"] == []
    env.run("index")
    assert [r["session_id"] for r in env.search(SECRET)] == [s.session_id]


def test_a_hand_edited_checkpoint_gives_back_no_private_span(env):
    s, _k = _history(env)
    env.run("index")
    assert run_hook(env, "pre-compact", payload(env, "pre-compact", s.session_id)).rc == 0
    cp = next(p for p in _bytes_hold(env.data, SECRET) if "-checkpoint" in os.path.basename(p))
    key = "sk-ant-api03-" + "".join(f"{b:02x}" for b in os.urandom(45)) + "-AA"
    Path(cp).write_text(Path(cp).read_text() + "\nnote: <private>zqxhandprivate</private> ok\n"
                        f"key {key}\n")
    r = run_hook(env, "session-start", payload(env, "session-start", s.session_id,
                                               source="compact"))
    assert r.rc == 0 and is_block(r.out) and "[private]" in r.out
    assert "zqxhandprivate" not in r.out and key not in r.out, r.out


# -- whatever the state of the key or the tombstone file (4, 5, 16) -----------------------------

def _user_store(env) -> Path:
    return Path(env.env["XDG_DATA_HOME"]) / "prima-memory"


def _key(env) -> Path:
    return Path(env.env["XDG_CONFIG_HOME"]) / "prima-memory" / "key"


@pytest.mark.parametrize("how", ["key deleted", "another XDG_CONFIG_HOME"])
def test_forgotten_stays_forgotten_without_the_users_key(env, how, tmp_path):
    s, _k = _history(env)
    env.run("index")
    _forget(env, s.session_id)
    extra = None
    if how == "key deleted":
        _key(env).unlink()
    else:
        extra = {"XDG_CONFIG_HOME": str(tmp_path / "other config")}
    for args in (["index"], ["index", "--rebuild"]):
        env.run(*args, env=extra)
    assert env.json("search", SECRET, "--mode", "keyword", env=extra)["results"] == []
    assert env.json("search", SECRET, "--all-projects", "--mode", "keyword",
                    env=extra)["results"] == []
    assert _bytes_hold(env.data, SECRET) == []
    assert _bytes_hold(_user_store(env), SECRET) == []


def test_an_index_set_aside_before_a_forget_finished_keeps_no_word_of_it(env):
    """A forget killed after its tombstone, then the key deleted: the index, still holding the
    session, is set aside as not the user's (index.db.foreign-*) and is deleted."""
    s, _k = _history(env)
    env.run("index")
    _pending_forget(env, s.session_id)
    _key(env).unlink()
    env.run("index")
    assert _bytes_hold(env.data, SECRET) == []
    assert not [p for p in env.data.iterdir() if p.name.startswith("index.db.foreign")]


def _sign_with(raw: bytes, key: bytes) -> bytes:
    body = raw.split(b"\n")[0]
    return body + b"\n" + hmac.new(key, body, hashlib.sha256).hexdigest().encode() + b"\n"


@pytest.mark.parametrize("damage", ["signature cut", "signature removed", "another key"])
def test_a_tombstone_file_that_reads_whole_is_honoured_whoever_signed_it(env, damage):
    s, _k = _history(env)
    env.run("index")
    _forget(env, s.session_id)
    tomb = env.data / "forgotten.json"
    raw = tomb.read_bytes()
    body, mac = raw.split(b"\n")[:2]
    tomb.write_bytes({"signature cut": body + b"\n" + mac[:10] + b"\n",
                      "signature removed": body + b"\n",
                      "another key": _sign_with(raw, os.urandom(32))}[damage])
    s.exchange(f"more about {SECRET}", f"more {SECRET}")
    env.run("index", "--rebuild")
    _gone(env, SECRET)


@pytest.mark.parametrize("damage", ["body cut", "a link", "a folder", "a FIFO"])
def test_a_tombstone_file_that_cannot_be_read_stops_everything_with_one_line(env, damage):
    s, _k = _history(env)
    env.run("index")
    _forget(env, s.session_id)
    tomb = env.data / "forgotten.json"
    real = tomb.read_bytes()
    tomb.unlink()
    if damage == "body cut":
        tomb.write_bytes(real[:40] + b"\n" + real.split(b"\n")[1] + b"\n")
    elif damage == "a link":
        copy = env.root / "elsewhere.json"
        copy.write_bytes(real)
        os.symlink(copy, tomb)
    elif damage == "a folder":
        tomb.mkdir()
    else:
        os.mkfifo(tomb)
    s.exchange(f"more about {SECRET}", f"more {SECRET}")
    for args in (["index"], ["index", "--rebuild"], ["search", SECRET, "--mode", "keyword"]):
        p = env.run(*args, check=False)
        assert p.returncode != 0 and SECRET not in p.stdout, args
        assert len(p.stderr.strip().splitlines()) == 1 and "forgotten.json" in p.stderr, p.stderr
    r = run_hook(env, "stop", payload(env, "stop", s.session_id))
    assert r.rc == 0 and r.out == ""
    assert [p for p in _bytes_hold(env.data, SECRET) if not p.endswith(".log")] == []
    (tomb.rmdir if tomb.is_dir() and not tomb.is_symlink() else tomb.unlink)()  # (moved away)
    env.run("index")
    assert env.search(SECRET)


def test_a_big_tombstone_file_from_a_clone_stops_nothing(env):
    """66 MB, whole, not signed with the user's key: honoured (it names no session of theirs),
    and indexing goes on."""
    s, _k = _history(env)
    env.data.mkdir(parents=True)
    filler = [{"source": "claude-code", "id": f"cloned-{i}", "keys": [f"{i:032x}"] * 2000}
              for i in range(1000)]
    body = json.dumps({"format": "prima-memory tombstones", "version": 1, "sessions": filler},
                      separators=(",", ":")).encode()
    (env.data / "forgotten.json").write_bytes(body + b"\nnot-our-mac\n")
    assert (env.data / "forgotten.json").stat().st_size > 66 << 20
    env.run("index")
    assert [r["session_id"] for r in env.search(SECRET)] == [s.session_id]


def test_a_tombstone_file_past_the_bound_is_not_read(tmp_path, monkeypatch):
    from prima_memory import forgotten
    (tmp_path / "forgotten.json").write_bytes(b"x" * 2048)
    monkeypatch.setattr(forgotten, "MAX_BYTES", 1024)
    with pytest.raises(forgotten.Unreadable, match="over"):
        forgotten.load(str(tmp_path))


# -- copies under other keys, old words, recovered copies, titles (6, 9, 13, 18) ---------------

def test_a_copy_under_new_keys_comes_back_with_none_of_its_texts(env):
    s, _k = _history(env)
    env.run("index")
    _forget(env, s.session_id)
    copy = _fork(env, s, new_keys=True)
    env.run("index")
    _gone(env, SECRET)
    # (its short prompts too: "step 3: the … host needs a fix number 3" is under 64 characters)
    assert env.search("host needs a fix") == []
    assert [r["session_id"] for r in env.search("zqxforkword")] == [copy.session_id]


def test_words_a_session_held_once_and_lost_go_with_it(env):
    """A Stop's provisional reply replaced by the transcript's own, and a transcript rewritten
    shorter: their words are in no message, and after a forget in no byte (terms, trigrams)."""
    s, _k = _history(env)
    env.run("index")
    t = env.transcript("dddd4444-0000-0000-0000-000000000004", start=T0 + 20000)
    t.user("a question that Claude answers late")
    run_hook(env, "stop", payload(env, "stop", t.session_id,
                                  last_assistant_message="the zqxprovisionalword reply"))
    assert [r["session_id"] for r in env.search("zqxprovisionalword")] == [t.session_id]
    t.reply("the reply as written at last")
    env.run("index")
    long = env.transcript("eeee5555-0000-0000-0000-000000000005", start=T0 + 30000)
    long.exchange("the zqxrewrittenword question", "the zqxrewrittenword answer")
    env.run("index")
    long.path.write_text("")  # rewritten shorter: its lines replaced
    long.exchange("another question", "another answer")
    env.run("index")
    assert env.search("zqxrewrittenword") == [] and env.search("zqxprovisionalword") == []
    _forget(env, t.session_id, long.session_id)
    _gone(env, "zqxprovisionalword", "zqxrewrittenword")


def test_recovering_from_a_copy_made_before_a_forget_brings_nothing_back(env, tmp_path):
    s, _k = _history(env)
    env.run("index")
    backup = tmp_path / "backup.db"
    import apsw
    src = apsw.Connection(str(env.data / "index.db"))
    with apsw.Connection(str(backup)).backup("main", src, "main") as b:
        b.step()
    src.close()
    _forget(env, s.session_id)
    s.path.unlink()  # (its transcript gone: a recovery would copy it over)
    p = env.json("index", "--recover-from", str(backup))
    assert p["recovered"] == 0
    assert [e["session_id"] for e in env.json("forget", "--list")["forgotten"]] == [s.session_id]
    _gone(env, SECRET)


def test_a_fork_takes_no_forgotten_title(env):
    s, _k = _history(env)
    s.raw({"type": "custom-title", "customTitle": "zqxtitleword migration plan",
           "sessionId": s.session_id})
    env.run("index")
    _forget(env, s.session_id)
    fork = _fork(env, s)
    env.run("index")
    titles = [r["title"] for r in env.json("recent")["sessions"]]
    assert not any("zqxtitleword" in (t or "") for t in titles), titles
    assert fork.session_id in [r["session_id"] for r in env.json("recent")["sessions"]]
    _gone(env, "zqxtitleword")


def test_a_forget_made_while_its_file_is_read_keeps_none_of_its_text(env, monkeypatch):
    """Another process forgets a session while a run is partway through its transcript (read
    a step at a time): the run drops what it read, and the file is noted as forgotten, its
    parser state (which keeps the tail of the last reply read) holding none of its text."""
    from prima_memory import forgotten
    from prima_memory import indexer as ix
    from prima_memory.memory import Memory
    s, _k = _history(env)
    monkeypatch.setattr(ix, "BATCH_BYTES", 1500)
    mem = Memory(str(env.ws))
    recheck = ix.Indexer._recheck

    def forgotten_meanwhile(self):
        row = self.store.session_by_session_id(s.session_id, "claude-code")
        if row is not None and self.store.has_messages(row.id) and not self.forgotten:
            mem._write_tombs([forgotten.entry("claude-code", s.session_id, "forget")], 5)
        return recheck(self)
    monkeypatch.setattr(ix.Indexer, "_recheck", forgotten_meanwhile)
    try:
        mem.update()
        rows = {os.path.basename(p): (status, state) for p, status, state in
                mem.store().db.execute("SELECT path, status, state FROM files")}
    finally:
        mem.close()
    status, state = rows[os.path.basename(s.path)]
    assert status == "forgotten" and SECRET not in (state or "")
    monkeypatch.undo()
    _gone(env, SECRET)
    s.exchange(f"later {SECRET} question", f"later {SECRET} answer")
    env.run("index")
    _gone(env, SECRET)


# -- vectors of a forget made while the embedder runs (7) -----------------------------------------

def test_an_embedder_running_through_a_forget_leaves_no_vector_of_it(tmp_path):
    pytest.importorskip("numpy")
    from test_semantic import Fake

    from prima_memory.semantic import Embedding
    from prima_memory.storage.shared import SHIFT
    from prima_memory.storage import Store
    st = Store(str(tmp_path / "index.db"))
    ids = {}
    with st.write():
        for name in ("gone", "kept"):
            sid = st.session_for("claude-code", name, "[transcript]").id
            st.db.execute("UPDATE sessions SET next_ord = 2 WHERE id = ?", (sid,))
            base = sid << SHIFT
            st.add_messages([(base, sid, "u1", "user", 1.0, 0, None, f"ask about {name}"),
                             (base | 1, sid, "a1", "assistant", 2.0, 0, base, f"{name} reply")])
            ids[name] = sid

    class Racing(Fake):
        def encode(self, texts, batch_size=32):
            with st.write():  # (another process's forget, between the read and the write)
                st.forget([ids["gone"]])
            return super().encode(texts, batch_size)
    Embedding(st, Racing()).run()
    rows = st.db.execute("SELECT count(*) FROM vectors").get
    assert rows == 1 and st.count_embedded(Embedding(st, Fake()).model) == 1
    st.close()


# -- opting out from a folder above, and what a command in such a project makes (10, 19) --------

def _elsewhere(env, folder: Path, session_id: str):
    """A session Claude Code ran in another folder (its own project folder of transcripts)."""
    from conftest import Transcript, encode
    folder.mkdir(parents=True, exist_ok=True)
    return Transcript(env.claude / "projects" / encode(str(folder)) / f"{session_id}.jsonl",
                      session_id, str(folder), start=T0)


def test_an_opt_out_at_the_repository_root_covers_a_subfolder(env):
    (env.ws / ".git").mkdir()
    (env.ws / ".prima-memory-off").write_text("")
    sub = env.ws / "packages" / "api"
    t = _elsewhere(env, sub, "ffff6666-0000-0000-0000-000000000006")
    t.exchange("the zqxsubword question", "the zqxsubword answer")
    for event in ("session-start", "stop", "pre-compact"):
        data = dict(payload(env, event, t.session_id), cwd=str(sub),
                    transcript_path=str(t.path))
        r = run_hook(env, event, data, extra_env={"CLAUDE_PROJECT_DIR": str(sub)}, cwd=sub)
        assert r.rc == 0 and r.out == ""
    p = env.run("search", "zqxsubword", "--mode", "keyword", cwd=sub, check=False)
    assert p.returncode != 0 and ".prima-memory-off" in p.stderr
    assert not list(env.root.rglob(".prima-memory")), "no memory under the project"


def test_a_command_in_an_opted_out_project_makes_no_memory(env):
    (env.ws / ".prima-memory-off").write_text("")
    t = env.transcript("ffff6666-0000-0000-0000-000000000006", start=T0)
    t.exchange("the zqxoffword question", "the zqxoffword answer")
    for args in (["search", "zqxoffword", "--mode", "keyword"], ["recent"], ["status"]):
        p = env.run(*args, check=False)
        assert p.returncode != 0 and ".prima-memory-off" in p.stderr, args
        assert len(p.stderr.strip().splitlines()) == 1
    other = _elsewhere(env, env.root / "another project", "aaaa7777-0000-0000-0000-000000000007")
    other.exchange("the zqxotherword question", "the zqxotherword answer")
    got = env.json("search", "zqxotherword", "--all-projects", "--mode", "keyword")
    assert [r["session_id"] for r in got["results"]] == [other.session_id]
    assert env.json("search", "zqxoffword", "--all-projects", "--mode", "keyword")["results"] == []
    assert not env.data.exists()
    assert _bytes_hold(_user_store(env), "zqxoffword") == []


# -- model-written titles and Claude's tool inputs (11, 22) ---------------------------------------

def test_a_model_written_title_never_shows_a_private_word(env):
    t = env.transcript("ffff6666-0000-0000-0000-000000000006", start=T0)
    t.raw({"type": "ai-title", "aiTitle": "Deploying the zqxearlytitle service",
           "sessionId": t.session_id})
    t.exchange("deploy to <private>zqxprivhost</private> please", "Deploying now.")
    t.raw({"type": "ai-title", "aiTitle": "Deploy to zqxprivhost", "sessionId": t.session_id})
    u = env.transcript("aaaa7777-0000-0000-0000-000000000007", start=T0 + 100)
    u.exchange("rename the billing module", "Renamed.")
    u.raw({"type": "ai-title", "aiTitle": "Rename <private>zqxtaggedword</private> billing",
           "sessionId": u.session_id})
    env.run("index")
    outs = [env.run("recent").stdout, env.run("recent", "--json").stdout,
            env.run("show", t.session_id).stdout, env.run("show", u.session_id).stdout,
            env.run("export", t.session_id).stdout,
            env.run("digest", "--since", "2000-01-01").stdout]
    for out in outs:
        assert "zqxprivhost" not in out and "zqxtaggedword" not in out
        assert "zqxearlytitle" not in out  # (a model title read before the span: gone too)
    assert _bytes_hold(env.data, "zqxprivhost") == []
    assert _bytes_hold(env.data, "zqxtaggedword") == []


def test_claudes_tool_input_keeps_no_private_span(env):
    t = env.transcript("ffff6666-0000-0000-0000-000000000006", start=T0)
    t.exchange("ping my host", "Pinging.")
    t.tool("Bash", {"command": "ping <private>zqxtoolhost</private> -c 1",
                    "description": "ping <private>zqxtooldesc</private>"})
    t.tool("Write", {"file_path": str(env.ws / "notes.txt"),
                     "content": "a <private>zqxtoolbody</private>"})
    env.run("index")
    for out in (env.run("show", t.session_id).stdout, env.run("export", t.session_id).stdout,
                env.run("export", t.session_id, "--format", "html").stdout):
        assert "[private]" in out or "ping" in out
        for w in ("zqxtoolhost", "zqxtooldesc", "zqxtoolbody"):
            assert w not in out
    for w in ("zqxtoolhost", "zqxtooldesc", "zqxtoolbody"):
        assert _bytes_hold(env.data, w) == []
