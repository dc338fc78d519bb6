"""A fork or a resume writes the earlier session's lines again, the same uuids and message ids
under a new sessionId (formats-claude-code.md, "Resume and fork"). The conversation is stored,
searched, counted and shown once, under the session that had it first; the fork keeps its own
new messages and names its origin."""
from __future__ import annotations

import json
import os
import time

import apsw

from conftest import Transcript

OLD = time.time() - 5 * 86400
ORIGIN = "0a000000-0000-4000-8000-000000000001"
FORK = "0f000000-0000-4000-8000-000000000002"
FORK2 = "0f000000-0000-4000-8000-000000000003"


def _origin(env) -> Transcript:
    t = env.transcript(ORIGIN, start=OLD)
    t.exchange("Why does the login redirect loop forever?",
               "The session cookie is set with SameSite=Strict, so the redirect from the "
               "identity provider arrives without it and the app starts the login again.")
    t.tool("Edit", {"file_path": str(env.ws / "auth.py"), "old_string": "a", "new_string": "b"},
           text="Setting the cookie to SameSite=Lax in auth.py.")
    t.exchange("Does it work now?", "Yes: the redirect lands on the dashboard with the cookie.")
    return t


def _fork(env, origin: Transcript, session_id: str, *, start: float) -> Transcript:
    """A new transcript whose first lines are the origin's, as Claude Code writes a fork."""
    fork = env.transcript(session_id, start=start)
    with open(origin.path, encoding="utf-8") as f:
        for line in f:
            obj = json.loads(line)
            obj["sessionId"] = session_id
            fork.raw(obj)
    fork.parent = origin.parent
    return fork


def _age(path, seconds_ago: float) -> None:
    t = time.time() - seconds_ago
    os.utime(path, (t, t))


def _ids(results) -> list[str]:
    return [r["session_id"] for r in results]


def _messages(env, session_id: str) -> int:
    return env.json("show", session_id)["session"]["message_count"]


def test_a_fork_read_after_its_origin_holds_only_its_own_messages(env):
    origin = _origin(env)
    _age(origin.path, 3600)
    env.run("index")
    fork = _fork(env, origin, FORK, start=OLD + 4000)
    fork.exchange("Now make the remember-me cookie last thirty days",
                  "Done: the remember-me cookie now has Max-Age of thirty days.")
    assert _ids(env.search("SameSite")) == [ORIGIN]  # once, under the session that had it
    assert _ids(env.search("remember-me")) == [FORK]
    assert _messages(env, ORIGIN) == 5 and _messages(env, FORK) == 2
    shown = env.json("show", FORK)["session"]
    assert shown["origin"]["session_id"] == ORIGIN
    assert "forked from" in env.run("show", FORK).stdout.lower()
    assert env.json("show", ORIGIN)["session"]["origin"] is None
    changes = env.json("files", "auth.py")["sessions"]
    assert [c["session_id"] for c in changes] == [ORIGIN]


def test_a_fork_read_before_its_origin_gives_the_copies_back(env):
    """A cold index reads the newest files first: the fork, then its origin."""
    origin = _origin(env)
    fork = _fork(env, origin, FORK, start=OLD + 4000)
    fork.exchange("Now make the remember-me cookie last thirty days", "Done: Max-Age=2592000.")
    _age(origin.path, 7200)
    _age(fork.path, 60)
    env.run("index")
    assert _ids(env.search("SameSite")) == [ORIGIN]
    assert _messages(env, ORIGIN) == 5 and _messages(env, FORK) == 2
    fork_row = env.json("show", FORK)["session"]
    assert fork_row["origin"]["session_id"] == ORIGIN
    assert fork_row["title"] == "Now make the remember-me cookie last thirty days"
    # both read in one run, in either order, and every later run agrees
    env.run("index", "--rebuild")
    assert _ids(env.search("SameSite")) == [ORIGIN]
    assert _messages(env, FORK) == 2


def test_a_fork_of_a_fork_and_two_forks_of_one_origin(env):
    origin = _origin(env)
    _age(origin.path, 9000)
    fork = _fork(env, origin, FORK, start=OLD + 4000)
    fork.exchange("Add a test for the redirect", "Added test_redirect_keeps_cookie.")
    _age(fork.path, 5000)
    again = _fork(env, fork, FORK2, start=OLD + 8000)
    again.exchange("Run the suite", "All 212 tests pass.")
    env.run("index")
    assert _ids(env.search("SameSite")) == [ORIGIN]
    assert _ids(env.search("test_redirect_keeps_cookie")) == [FORK]
    assert _ids(env.search("212 tests")) == [FORK2]
    assert [_messages(env, s) for s in (ORIGIN, FORK, FORK2)] == [5, 2, 2]
    recent = env.json("recent")["sessions"]
    assert sorted(_ids(recent)) == sorted([ORIGIN, FORK, FORK2])


def test_a_fork_whose_origin_is_gone_keeps_the_conversation_findable_once(env):
    origin = _origin(env)
    _age(origin.path, 3600)
    env.run("index")
    fork = _fork(env, origin, FORK, start=OLD + 4000)
    fork.exchange("One more thing", "The logout now clears the cookie too.")
    env.run("index")
    origin.path.unlink()  # Claude Code's 30-day cleanup
    env.run("index")
    assert _ids(env.search("SameSite")) == [ORIGIN]  # archived, still searchable
    # dropping the archived origin gives its conversation back to the fork
    env.run("index", "--prune")
    assert _ids(env.search("SameSite")) == [FORK]
    assert _messages(env, FORK) == 7


def test_a_fork_whose_origin_was_never_indexed_holds_the_conversation(env):
    origin = _origin(env)
    fork = _fork(env, origin, FORK, start=OLD + 4000)
    fork.exchange("One more thing", "The logout now clears the cookie too.")
    origin.path.unlink()
    env.run("index")
    assert _ids(env.search("SameSite")) == [FORK]
    assert _messages(env, FORK) == 7
    assert env.json("show", FORK)["session"]["origin"] is None


def test_copies_in_an_index_from_before_are_stored_once_after_the_migration(env):
    origin = _origin(env)
    _age(origin.path, 3600)
    fork = _fork(env, origin, FORK, start=OLD + 4000)
    fork.exchange("One more thing", "The logout now clears the cookie too.")
    env.run("index")
    db_path = str(env.data / "index.db")
    # the index as version 9 left it: the fork's copies stored twice
    db = apsw.Connection(db_path)
    sid = dict(db.execute("SELECT session_id, id FROM sessions"))
    rows = list(db.execute("SELECT key, role, ts, sidechain, text FROM messages WHERE session = ? "
                           "ORDER BY id", (sid[ORIGIN],)))
    with db:
        base = sid[FORK] << 24 | 1000
        for i, (key, role, ts, side, text) in enumerate(rows):
            db.execute("INSERT INTO messages(id, session, key, role, ts, sidechain, text) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)", (base + i, sid[FORK], key, role, ts, side,
                                                        text))
            db.execute("INSERT INTO messages_fts(rowid, text) VALUES (?, ?)", (base + i, text))
        db.execute("DROP INDEX messages_key")
        db.execute("ALTER TABLE sessions DROP COLUMN origin")
        db.execute("PRAGMA user_version = 9")
        db.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
        env.restamp(db)
    assert len(list(db.execute("SELECT 1 FROM messages WHERE session = ?", (sid[FORK],)))) == 7
    db.close()
    assert _ids(env.search("SameSite")) == [ORIGIN]
    assert _messages(env, FORK) == 2
    assert env.json("show", FORK)["session"]["origin"]["session_id"] == ORIGIN


def test_a_fork_is_titled_by_its_own_first_prompt_and_listed_once_it_has_one(env):
    origin = _origin(env)
    _age(origin.path, 3600)
    env.run("index")
    fork = _fork(env, origin, FORK, start=OLD + 4000)
    env.run("index")
    # nothing of its own yet: not a second copy of the conversation in any list
    assert _ids(env.json("recent")["sessions"]) == [ORIGIN]
    assert _ids(env.search("login redirect loop")) == [ORIGIN]  # (the title's words)
    fork.exchange("Rotate the signing key for the session cookie", "Rotated; old sessions end.")
    assert sorted(_ids(env.json("recent")["sessions"])) == sorted([ORIGIN, FORK])
    assert env.json("show", FORK)["session"]["title"] == \
        "Rotate the signing key for the session cookie"
    assert _ids(env.search("login redirect loop")) == [ORIGIN]


def test_prompts_without_a_uuid_are_never_taken_for_copies(env):
    """A line with no uuid gets a key made from its time: two sessions' such prompts at the same
    moment (or with no time at all) are two prompts, not one copied."""
    for sid, word in ((ORIGIN, "pelicanword"), (FORK, "flamingoword")):
        t = env.transcript(sid, start=OLD)
        line = t._base("user", 0)
        del line["uuid"], line["timestamp"]
        line["message"] = {"role": "user", "content": f"Explain the {word} setting"}
        t.raw(line)
        t.reply(f"The {word} setting picks the cache size.")
    env.run("index")
    assert _ids(env.search("pelicanword")) == [ORIGIN]
    assert _ids(env.search("flamingoword")) == [FORK]
    assert _messages(env, ORIGIN) == _messages(env, FORK) == 2


def test_an_origin_read_after_its_forks_takes_back_a_long_copied_prefix(env, monkeypatch):
    """Two forks read first hold the copies; the origin, read in small steps, takes back every
    one of them, in each step, from both."""
    origin = env.transcript(ORIGIN, start=OLD)
    for i in range(40):
        origin.exchange(f"Step {i} of the quagga migration", f"Step {i} of the quagga migration "
                        "is done; the rows moved and the checksums agree.")
    for sid in (FORK, FORK2):
        f = _fork(env, origin, sid, start=OLD + 9000)
        f.exchange(f"And in {sid[:2]}?", "Nothing else to do there.")
        _age(f.path, 60)
    _age(origin.path, 7200)
    from prima_memory import api, indexer
    monkeypatch.setattr(indexer, "BATCH_BYTES", 2000)  # the origin read in many steps
    mem = api.open_memory(str(env.ws))
    try:
        mem.update()
    finally:
        mem.close()
    assert _ids(env.search("quagga")) == [ORIGIN]
    assert [_messages(env, s) for s in (ORIGIN, FORK, FORK2)] == [80, 2, 2]


def test_a_uuid_that_is_not_text_loses_nothing(env):
    """A line whose uuid is a number, a list or an object: its prompt is kept (it once made
    the whole transcript unreadable), and never taken for another session's copy."""
    t = env.transcript(ORIGIN, start=OLD)
    for u in (12345, ["x"], {"a": 1}, None, ""):
        line = t._base("user", 1)
        line["uuid"] = u
        line["message"] = {"role": "user", "content": f"Odd uuid {json.dumps(u)}: wallabyword"}
        t.raw(line)
        t.reply(f"Noted the wallabyword {json.dumps(u)}.")
    env.run("index")
    assert _ids(env.search("wallabyword")) == [ORIGIN]
    assert _messages(env, ORIGIN) == 10
