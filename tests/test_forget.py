"""`prima-memory forget`: a session removed for good, its words in no byte under .prima-memory,
kept forgotten by a tombstone through index, --rebuild, a new Stop and a copied fork."""
from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

T0 = 1_760_000_000.0
SECRET = "zqxforgottenword"  # one word, in no other session
OTHER = "keptwordylight"


def _bytes_hold(data: Path, word: str) -> list[str]:
    """The files under .prima-memory whose raw bytes hold the word (UTF-8, or UTF-16 as some
    tools write): the database, its log, extracts, checkpoints, vectors, everything."""
    found = []
    for root, _dirs, files in os.walk(data):
        for name in files:
            p = os.path.join(root, name)
            if not stat.S_ISREG(os.lstat(p).st_mode):  # (a FIFO is never read, a link never followed)
                continue
            raw = Path(p).read_bytes()
            if word.encode() in raw or word.encode("utf-16-le") in raw:
                found.append(p)
    return found


def _history(env, n_forget: int = 1):
    """A session to forget (long enough for an extract) and one to keep."""
    s = env.transcript("aaaa1111-0000-0000-0000-000000000001", start=T0)
    for i in range(12):  # (over half an hour: an extract is written)
        s.user(f"step {i}: the {SECRET} host needs a fix number {i}", step=200)
        s.reply(f"I fixed the {SECRET} config, round {i}, by editing the file carefully.")
    s.tool("Edit", {"file_path": str(env.ws / f"{SECRET}.py"), "old_string": "a",
                    "new_string": "b"}, text=f"Editing {SECRET}.py now")
    k = env.transcript("bbbb2222-0000-0000-0000-000000000002", start=T0 + 3 * 86400)
    k.exchange(f"the {OTHER} page is slow", f"The {OTHER} page now loads lazily.")
    return s, k


def _forget(env, *ids, check=True):
    return env.run("forget", *ids, "--yes", "--json", check=check)


def test_forget_removes_every_byte_and_stays_forgotten(env):
    s, _k = _history(env)
    env.run("index")
    assert env.search(SECRET)
    assert _bytes_hold(env.data, SECRET)  # (the test can see the word where it is)
    assert any(p.endswith(".md") for p in _bytes_hold(env.data, SECRET))  # its extract
    done = json.loads(_forget(env, "aaaa1111").stdout)
    assert [f["session_id"] for f in done["forgotten"]] == [s.session_id]
    assert done["log_emptied"]
    assert _bytes_hold(env.data, SECRET) == []
    assert env.search(SECRET) == []
    assert [r["session_id"] for r in env.search(OTHER)] == ["bbbb2222-0000-0000-0000-000000000002"]
    # the tombstone holds no text, and keeps it forgotten through index, a new line, --rebuild
    tomb = (env.data / "forgotten.json").read_text()
    assert SECRET not in tomb and s.session_id in tomb
    env.run("index")
    s.exchange(f"one more {SECRET} question", f"one more {SECRET} answer")
    env.run("index")
    assert env.search(SECRET) == []
    env.run("index", "--rebuild")
    assert env.search(SECRET) == [] and _bytes_hold(env.data, SECRET) == []
    # a damaged index moved aside: the tombstones are beside it, not in it
    (env.data / "index.db").write_bytes(b"not a database" * 100)
    for suffix in ("-wal", "-shm"):
        (env.data / f"index.db{suffix}").unlink(missing_ok=True)
    env.run("index")
    assert env.search(SECRET) == []
    for p in env.data.iterdir():
        if p.name.startswith("index.db.corrupt"):
            p.unlink()  # (what was moved aside held it: the user's own old copy)
    assert _bytes_hold(env.data, SECRET) == []
    listed = env.json("forget", "--list")["forgotten"]
    assert [e["session_id"] for e in listed] == [s.session_id]
    assert env.json("status")["forgotten"] == 1


def test_a_copied_fork_brings_nothing_back(env):
    s, _k = _history(env)
    env.run("index")
    _forget(env, s.session_id)
    # a fork written later copies the forgotten session's lines (same uuids), then its own
    fork = env.transcript("cccc3333-0000-0000-0000-000000000003", start=T0 + 9000)
    for line in s.path.read_text().splitlines():
        d = json.loads(line)
        d["sessionId"] = fork.session_id
        fork.raw(d)
    fork.exchange("a new question about tea", "A new answer about tea.")
    env.run("index")
    assert env.search(SECRET) == []
    assert [r["session_id"] for r in env.search("tea")] == [fork.session_id]
    assert _bytes_hold(env.data, SECRET) == []


def test_a_stop_hook_of_a_forgotten_session_stores_nothing(env):
    s, _k = _history(env)
    env.run("index")
    _forget(env, s.session_id)
    s.exchange(f"still here {SECRET}", f"yes {SECRET}")
    payload = {"session_id": s.session_id, "transcript_path": str(s.path), "cwd": str(env.ws),
               "hook_event_name": "Stop", "stop_hook_active": False,
               "last_assistant_message": f"yes {SECRET}"}
    p = env.run("hook", "stop", input=json.dumps(payload))
    assert p.returncode == 0
    assert env.search(SECRET) == [] and _bytes_hold(env.data, SECRET) == []


def test_undo_brings_it_back_from_its_transcript(env):
    s, _k = _history(env)
    env.run("index")
    _forget(env, s.session_id)
    back = env.json("forget", "--undo", s.session_id[:8])
    assert back["back"] == [s.session_id]
    assert [r["session_id"] for r in env.search(SECRET)] == [s.session_id]
    assert env.json("forget", "--list")["forgotten"] == []
    s.path.unlink()
    _forget(env, s.session_id)
    back = env.json("forget", "--undo", s.session_id)
    assert back["back"] == [] and env.search(SECRET) == []


def test_choosing_by_words_or_date_lists_and_asks(env):
    s, k = _history(env)
    env.run("index")
    # no terminal, no --yes: listed, one-line error, nothing removed
    p = env.run("forget", "--match", SECRET, check=False)
    assert p.returncode == 2 and s.session_id in p.stdout and k.session_id not in p.stdout
    assert "--yes" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert env.search(SECRET)
    p = env.run("forget", "--before", "2025-10-11", "--json", check=False)  # (T0: 2025-10-09)
    assert p.returncode == 2
    assert [r["session_id"] for r in json.loads(p.stdout)["would_forget"]] == [s.session_id]
    p = env.run("forget", "--before", "now", "--json", check=False)
    assert {r["session_id"] for r in json.loads(p.stdout)["would_forget"]} == \
        {s.session_id, k.session_id}
    done = env.json("forget", "--match", SECRET, "--yes")
    assert [f["session_id"] for f in done["forgotten"]] == [s.session_id]
    assert env.search(SECRET) == []
    assert env.run("forget", "nosuchid", "--yes", check=False).returncode != 0
    assert env.run("forget", check=False).returncode == 2


def test_on_a_terminal_it_asks_first(env):
    s, _k = _history(env)
    env.run("index")
    pty = pytest.importorskip("pty")
    script = ("import pty, sys, os\n"
              "os.environ.update(" + repr({k: v for k, v in env.env.items()}) + ")\n"
              "sys.exit(pty.spawn([sys.executable, '-m', 'prima_memory', 'forget', "
              f"'{s.session_id}'], lambda fd: os.read(fd, 4096), lambda fd: b'n\\n'))\n")
    subprocess.run([sys.executable, "-c", script], cwd=str(env.ws), capture_output=True,
                   timeout=60)
    assert env.search(SECRET)  # answered no: nothing forgotten
    assert pty  # (used above)


def test_a_kill_leaves_it_present_or_forgotten(tmp_path):
    """SIGKILL at points spread over a forget's run: each time, either nothing was removed (no
    tombstone: the session, its words and its extract all there) or it is forgotten (the next
    command that looks finishes the removal). Both outcomes must be seen."""
    from conftest import Env
    seen = set()
    for i, delay in enumerate([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0, 1.5, 3.0]):
        env = Env(tmp_path / f"k{i}")
        s, _k = _history(env)
        env.run("index")
        extracts = [p for p in _bytes_hold(env.data, SECRET) if p.endswith(".md")]
        assert extracts
        p = subprocess.Popen([sys.executable, "-m", "prima_memory", "forget", s.session_id,
                              "--yes"], cwd=str(env.ws), env=env.env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        if not (env.data / "forgotten.json").exists():
            assert env.search(SECRET) and all(os.path.exists(e) for e in extracts)
            seen.add("present")
        else:
            assert env.search(SECRET) == []
            assert _bytes_hold(env.data, SECRET) == []
            seen.add("forgotten")
        shutil.rmtree(env.root)
    assert seen == {"present", "forgotten"}


def test_the_store_forgets_vectors_edges_and_words_of_the_session(tmp_path):
    """In-process, at the store: a forgotten session's vectors (those no other exchange uses),
    links, edges and vocabulary go; another session's stay."""
    from prima_memory.storage.shared import SHIFT
    from prima_memory.storage import Store
    st = Store(str(tmp_path / "index.db"))
    ids = {}
    with st.write():
        for name, word in (("gone", "zqxgoneword"), ("kept", "keptword")):
            sid = st.session_for("claude-code", name, "[transcript]").id
            st.db.execute("UPDATE sessions SET next_ord = 2 WHERE id = ?", (sid,))
            base = sid << SHIFT
            st.add_messages([(base, sid, "u1", "user", 1.0, 0, None, f"ask {word} shared"),
                             (base | 1, sid, "a1", "assistant", 2.0, 0, base, f"{word} reply")])
            st.add_terms(st.tokens(f"ask {word} shared {word} reply"))
            st.index_terms()
            st.add_vectors("m", "test", [(name.encode(), [b"v0"])])
            st.link_exchanges("m", [(base | 1, name.encode())])
            ids[name] = sid
    with st.write():
        st.forget([ids["gone"]])
    assert st.count_embedded("m") == 1 and st.known_vectors([b"gone"], "m") == {}
    assert st.known_vectors([b"kept"], "m") == {b"kept": [b"v0"]}
    assert st.terms_containing("zqxgone", 10) == [] and st.terms_containing("shared", 10) == ["shared"]
    assert st.session(ids["gone"]) is None and st.session(ids["kept"]) is not None
    assert st.scrub_free_space()
    st.close()
    raw = (tmp_path / "index.db").read_bytes()
    wal = tmp_path / "index.db-wal"
    assert b"zqxgoneword" not in raw and (not wal.exists() or b"zqxgoneword" not in wal.read_bytes())
    assert b"keptword" in raw
