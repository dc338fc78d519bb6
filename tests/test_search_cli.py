"""Keyword search through the real CLI: the seed's three match conditions, substring and case
rules, literal queries, filters, the JSON contract, exit codes and fresh data."""
from __future__ import annotations

import json
import time

import pytest

DAY = 86400
OLD = time.time() - 60 * DAY  # outside the recency window: scores are exact


def _setup(env):
    a = env.transcript("aaaa1111-0000-4000-8000-000000000001", start=OLD, branch="main")
    a.exchange("The bedroom lamp flickers when the heater runs", "Sounds like a shared circuit.")
    a.tool("Edit", {"file_path": str(env.ws / "src" / "lamp_control.py"), "old_string": "a",
                    "new_string": "b"}, text="Debounce the relay in lamp_control.")
    b = env.transcript("bbbb2222-0000-4000-8000-000000000002", start=OLD + DAY, branch="feature/x")
    b.exchange("Set up the ROOM booking service", "Created the booking endpoints.")
    b.exchange("Add a waiting list", "Waiting list added to the booking service.")
    c = env.transcript("cccc3333-0000-4000-8000-000000000003", start=OLD + 2 * DAY)
    c.exchange("Unrelated: tune the garbage collector", "Adjusted GC thresholds.")
    return a, b, c


def test_substring_and_case_insensitive(env):
    _setup(env)
    ids = [r["session_id"] for r in env.search("room")]
    assert ids[:2] and set(ids) == {"aaaa1111-0000-4000-8000-000000000001",
                                    "bbbb2222-0000-4000-8000-000000000002"}
    assert env.search("BEDROOM")[0]["session_id"].startswith("aaaa1111")


def test_all_words_must_appear_somewhere_in_the_session(env):
    _setup(env)
    # "booking" and "waiting" are in different messages of session b: still a match
    assert [r["session_id"][:4] for r in env.search("booking waiting")] == ["bbbb"]
    # one word missing everywhere: no match
    assert env.search("booking lamp") == []


def test_path_and_title_matches_need_the_whole_query(env):
    _setup(env)
    # matches only through the changed file's path ("lamp_control" is in no message as a whole?)
    res = env.search("src/lamp_control")
    assert [r["session_id"][:4] for r in res] == ["aaaa"]
    assert res[0]["files_changed"] == [str(env.ws / "src" / "lamp_control.py")]
    # the title of c is its cleaned first prompt
    res = env.search("tune the garbage")
    assert res[0]["title"] == "Unrelated: tune the garbage collector"


@pytest.mark.parametrize("query", ['"quoted', "a*", "-room", "NEAR(room", "room OR x", "(room)",
                                   "'; DROP TABLE sessions; --", "room AND", "^room", "col:room",
                                   "$(echo hi)", "`x`", "%", "_", "\\"])
def test_any_query_is_taken_literally(env, query):
    _setup(env)
    p = env.run("search", "--mode", "keyword", "--json", "--", query)
    data = json.loads(p.stdout)
    assert data["query"] == query
    assert p.stderr == ""


def test_literal_punctuation_is_matched_exactly(env):
    t = env.transcript("dddd4444-0000-4000-8000-000000000004", start=OLD)
    t.exchange("why does foo.bar(x) fail?", "Because foo.bar expects a list.")
    u = env.transcript("eeee5555-0000-4000-8000-000000000005", start=OLD)
    u.exchange("foo and bar are separate here", "ok")
    assert [r["session_id"][:4] for r in env.search("foo.bar(")] == ["dddd"]
    assert {r["session_id"][:4] for r in env.search("foo bar")} == {"dddd", "eeee"}


def test_json_contract(env):
    _setup(env)
    data = env.json("search", "booking")
    assert data["mode"] == "combined" and data["warnings"] == []
    r = data["results"][0]
    for key in ("session_id", "title", "source", "label", "score", "started_at", "ended_at",
                "project", "branch", "tags", "files_changed", "snippet", "author", "message_id"):
        assert key in r
    assert r["label"] == "[transcript]" and r["source"] == "claude-code"
    assert r["author"] is None and r["branch"] == "feature/x"
    assert r["started_at"].endswith("Z") and r["project"] == str(env.ws)
    assert "booking" in r["snippet"].lower()
    sem = env.json("search", "booking", "--mode", "semantic")
    assert sem["warnings"] == [] and sem["results"][0]["session_id"] == r["session_id"]


def test_json_before_the_command_is_json_too(env):
    """`prima-memory --json status` printed text: the command's own default undid the option."""
    _setup(env)
    for args in (["--json", "status"], ["--json", "search", "booking", "--mode", "keyword"],
                 ["--json", "--workspace", str(env.ws), "recent"]):
        assert isinstance(json.loads(env.run(*args).stdout), dict), args
    assert not env.run("status").stdout.startswith("{")


def test_filters(env):
    _setup(env)
    assert [r["session_id"][:4] for r in env.search("room", "--branch", "feature/x")] == ["bbbb"]
    day_b = time.strftime("%Y-%m-%d", time.localtime(OLD + DAY))
    assert [r["session_id"][:4] for r in env.search("room", "--since", day_b, "--until", day_b)] == ["bbbb"]
    assert [r["session_id"][:4] for r in env.search("room", "--until",
            time.strftime("%Y-%m-%d", time.localtime(OLD)))] == ["aaaa"]
    assert env.search("room", "--since", "1d") == []
    assert [r["session_id"][:4] for r in env.search("room", "--tag", "python")] == ["aaaa"]


def test_newest_lines_are_found_at_once(env):
    t = env.transcript("ffff6666-0000-4000-8000-000000000006", start=time.time() - 120)
    t.exchange("first question about caching", "first answer")
    assert env.search("caching")
    t.exchange("now a question about zebrafish", "answer")  # written a moment ago
    res = env.search("zebrafish")
    assert [r["session_id"][:4] for r in res] == ["ffff"]


def test_usage_errors_exit_2_with_one_line(env):
    for args in (["search"], ["search", "x", "--limit", "0"], ["search", "x", "--since", "someday"],
                 ["nosuchcommand"], ["show", "x", "--range", "a:b"], []):
        p = env.run(*args, check=False)
        assert p.returncode == 2, args
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr


def test_other_errors_exit_1_with_one_line(env):
    _setup(env)
    p = env.run("show", "nonexistent-session", check=False)
    assert p.returncode == 1
    assert p.stderr.strip().splitlines() == [p.stderr.strip()] and "no session" in p.stderr


def test_sql_wildcards_in_paths_and_titles_are_literal(env):
    t = env.transcript("gggg7777-0000-4000-8000-000000000007", start=OLD)
    t.user("Rename 100% of the my_module imports")
    t.tool("Write", {"file_path": str(env.ws / "pkg" / "my_module.py"), "content": "x"})
    u = env.transcript("hhhh8888-0000-4000-8000-000000000008", start=OLD)
    u.user("Rename 1000 of the myXmodule imports")
    u.tool("Write", {"file_path": str(env.ws / "pkg" / "myXmodule.py"), "content": "x"})
    assert [r["session_id"][:4] for r in env.search("my_module")] == ["gggg"]
    assert [r["session_id"][:4] for r in env.search("100%")] == ["gggg"]


def test_each_hit_says_how_to_go_back_to_it(env):
    """Shell commands that run as printed from any folder (tests/test_recall_hook.py runs them):
    this install's command (not on the tests' PATH: by its path), the workspace named, and the
    session resumed from its own folder; in /recall's text each is a line of its own."""
    import shlex
    import sys
    from pathlib import Path
    a, _b, _c = _setup(env)
    path = {"PATH": "/usr/bin:/bin"}  # no prima-memory on it, whatever the tests run under
    r = env.json("search", "bedroom", "--mode", "keyword", env=path)["results"][0]
    cli = Path(sys.executable).parent / "prima-memory"
    assert shlex.split(r["show"]) == [str(cli), "show", a.session_id, "--workspace", str(env.ws)]
    assert shlex.split(r["resume"]) == ["cd", str(env.ws), "&&", "claude", "--resume",
                                        a.session_id]
    lines = env.run("recall", "bedroom", env=path).stdout.splitlines()
    assert f"   {r['show']}" in lines and f"   {r['resume']}" in lines
    assert not [ln for ln in lines if " | " in ln]


def test_a_line_repeated_in_a_session_is_shown_once(env):
    t = env.transcript("dddd4444-0000-4000-8000-000000000004", start=OLD)
    t.exchange("Why does the quokkaflux stall?", "Looking at why the quokkaflux stalls.")
    for _ in range(3):  # the same line quoted back again and again
        t.exchange("ok", "> Why does the quokkaflux stall?\nStill checking.")
    p = env.run("recall", "quokkaflux")
    lines = [ln.strip() for ln in p.stdout.splitlines() if ln.strip().startswith(">")]
    assert len(lines) == len(set(lines)) >= 2, p.stdout
    r = env.search("quokkaflux")[0]
    assert len(r["matches"]) == len(set(r["matches"]))


def test_a_snippet_is_not_filled_with_a_run_of_one_symbol(env):
    t = env.transcript("eeee5555-0000-4000-8000-000000000005", start=OLD)
    t.exchange("Show the diff", "·" * 60 + " wombatization fixed in the " + "-" * 40 + " loader")
    r = env.search("wombatization")[0]
    for run in ("····", "----"):
        assert run not in r["snippet"] and all(run not in m for m in r["matches"]), r
    assert "wombatization fixed in the" in r["snippet"]


def test_a_hit_points_at_its_best_matching_turn(env):
    from prima_memory.storage import Store
    _setup(env)
    hit = env.search("waiting list booking", "--mode", "keyword")[0]
    st = Store(str(env.data / "index.db"))
    text = st.message_texts([hit["message_id"]])[hit["message_id"]]
    assert text == "Waiting list added to the booking service."  # the turn with all three words


def test_quickstart_without_history_shows_a_demo_as_one_json_document(env):
    data = env.json("quickstart", env={"XDG_CACHE_HOME": str(env.home / ".cache")})
    assert "No Claude Code history" in data["note"]
    assert data["index"]["sessions_updated"] > 0 and data["status"]["counts"]["sessions"] > 0
    assert data["search"]["results"], "the sample search finds something"
    assert not (env.ws / ".prima-memory").exists(), "the demo never writes into this folder"
    # (a bug: the installer's demo searched a file path, in keyword mode, and printed points)
    query = data["search"]["query"]
    assert query.startswith("when did we ") and all(w.isalpha() for w in query.split()), query
    assert data["search"]["mode"] == "combined" and "match" in data["search"]["results"][0]


WHY_REDIS = ("\nIt keeps the sessions across restarts of the web servers, its eviction can be "
             "tuned per key, and the team already runs it for the job queue, so there is no new "
             "service to watch at night.")


def test_a_digest_of_a_period_from_the_index_alone(env):
    now = time.time()
    a = env.transcript("dddd0001-0000-4000-8000-000000000001", start=now - 3 * DAY, branch="main")
    a.exchange("Move the cache to Redis", "DECIDED: Redis for the session cache, not memcached."
               + WHY_REDIS)
    a.tool("Edit", {"file_path": str(env.ws / "src" / "cache.py"), "old_string": "a",
                    "new_string": "b"}, text="Point the cache at Redis.")
    a.exchange("Now the eviction policy", "Set allkeys-lru.")
    b = env.transcript("dddd0002-0000-4000-8000-000000000002", start=now - 2 * DAY)
    b.tool("Edit", {"file_path": str(env.ws / "src" / "cache.py"), "old_string": "b",
                    "new_string": "c"}, text="Tune the TTL.")
    b.exchange("Tune the cache TTL", "Raised it to ten minutes.")
    old = env.transcript("dddd0003-0000-4000-8000-000000000003", start=now - 30 * DAY)
    old.exchange("Ancient work", "Long ago.")
    d = env.json("digest")  # the last seven days
    assert d["sessions"] == 2 and [len(day["sessions"]) for day in d["days"]] == [1, 1]
    first = d["days"][-1]["sessions"][0]  # days newest first: the older session is last
    assert first["title"] == "Move the cache to Redis" and first["branch"] == "main"
    assert first["last_request"] == "Now the eviction policy" and not first["unanswered"]
    # where it stopped: a reply, never a request; "Set allkeys-lru." says too little on its own
    # (session_view.TOO_LITTLE), so the reply before it comes first
    assert first["stopped_at"] == ("DECIDED: Redis for the session cache, not memcached."
                                   + WHY_REDIS + "\n\nSet allkeys-lru.")
    assert d["files_most_changed"][0] == {"path": str(env.ws / "src" / "cache.py"),
                                          "relative": "src/cache.py", "sessions": 2}
    assert [x["line"] for x in d["decisions"]] == [
        "DECIDED: Redis for the session cache, not memcached."]
    assert env.json("digest", "--since", "60d")["sessions"] == 3
    text = env.run("digest").stdout
    assert "## Files changed most" in text and "stopped at: DECIDED: Redis" in text
    assert "Set allkeys-lru." in text and "stopped at: Now the eviction policy" not in text
    p = env.run("digest", "--since", "next tuesday", check=False)
    assert p.returncode == 2 and "not a date" in p.stderr


LEAK = ("The leak is in the WebSocket layer: every reconnect adds a 'message' listener to the "
        "shared emitter and nothing removes it, so each closed socket stays reachable. Heap "
        "snapshots would show thousands of WebSocket objects. " + "More evidence. " * 15)
LEAK_FIX = "Fixed: the socket listeners are removed on close; RSS stays flat at 180 MB."


def test_digest_and_show_say_where_a_session_really_stopped(env):
    """Issue #20: the fix, a one-line reply after a long diagnosis, is where the session stopped
    (not the diagnosis, not the last request); a "Done." comes after the reply before it."""
    now = time.time()
    leak = "ffff0001-0000-4000-8000-000000000001"
    t = env.transcript(leak, start=now - 2 * DAY)
    t.exchange("Why does the server's memory keep growing?", LEAK)
    t.exchange("Fix it", LEAK_FIX)
    done = "ffff0002-0000-4000-8000-000000000002"
    u = env.transcript(done, start=now - DAY)
    u.exchange("Bump the parser to 2.0", "Bumped the parser to 2.0 in pyproject.toml and "
               "regenerated the lock file; the 214 tests pass.")
    u.exchange("Commit it", "Done.")
    u.user("And tag the release")  # no reply yet

    d = env.json("digest")
    by_id = {s["session_id"]: s for day in d["days"] for s in day["sessions"]}
    assert by_id[leak]["stopped_at"] == LEAK_FIX and by_id[leak]["last_request"] == "Fix it"
    assert by_id[done]["stopped_at"] == ("Bumped the parser to 2.0 in pyproject.toml and "
                                         "regenerated the lock file; the 214 tests pass.\n\nDone.")
    assert by_id[done]["unanswered"] and by_id[done]["last_request"] == "And tag the release"
    text = env.run("digest").stdout
    assert f"stopped at: {LEAK_FIX}" in text and "Heap snapshots" not in text
    assert "stopped at: Bumped the parser to 2.0" in text and "tests pass. Done." in text
    assert "stopped at: Fix it" not in text and "stopped at: And tag" not in text
    assert "last request, no reply after it: And tag the release" in text

    s = env.json("show", leak, "--detail", "summary")["session"]
    assert s["stopped_at"] == LEAK_FIX
    shown = env.run("show", leak, "--detail", "summary").stdout
    assert f"stopped at: {LEAK_FIX}" in shown and "last asked: Fix it" in shown
    shown = env.run("show", done, "--detail", "summary").stdout
    assert "last asked: And tag the release (no reply after it)" in shown
    assert "stopped at: Bumped the parser" in shown and shown.rstrip().count("Done.") == 1


def test_show_at_each_detail(env):
    sid = "eeee0001-0000-4000-8000-000000000001"
    t = env.transcript(sid, start=OLD)
    t.exchange("Profile the importer", "It spends its time in the CSV parser, rebuilding rows."
               + " Each row is built again from its fields for every column that is read, so a"
               " wide file costs the square of its width; one buffer reused per row fixes it.")
    t.tool("Edit", {"file_path": str(env.ws / "imp.py"), "old_string": "a", "new_string": "b"},
           text="Reuse one row buffer.")
    t.exchange("Ship it", "Done.")
    env.subagent(sid, "a1b2c3d4", start=OLD + 5).exchange("Search for CSV callers", "Found 3.")
    full = env.json("show", sid)
    assert full["detail"] == "full" and any(m["sidechain"] for m in full["session"]["messages"])
    turns = env.json("show", sid, "--detail", "turns")["session"]
    assert turns["messages"] and not any(m["sidechain"] for m in turns["messages"])
    assert [m["text"] for m in turns["messages"] if m["role"] == "user"] == [
        "Profile the importer", "Ship it"]
    s = env.json("show", sid[:8], "--detail", "summary")["session"]
    assert "messages" not in s
    assert (s["first_request"], s["last_request"]) == ("Profile the importer", "Ship it")
    # "Done." says too little on its own: the reply before it, then "Done."
    assert s["stopped_at"].startswith("It spends its time") and s["stopped_at"].endswith("Done.")
    assert s["files_changed"][0]["explanation"] == "Reuse one row buffer."
    text = env.run("show", sid, "--detail", "summary").stdout
    assert "last asked: Ship it" in text and "Reuse one row buffer." in text
    p = env.run("show", sid, "--detail", "everything", check=False)
    assert p.returncode == 2


def test_every_mode_shows_one_scale_a_person_reads(env):
    """(a bug: hits read "[match 57%]" in one mode and "[7 points]" / "[31.88 points]" in
    another) Every mode, the seed's arithmetic too, shows "match N%", N from 0 to 100 in the
    order of the score its mode computes (--json keeps that score beside it)."""
    import re
    _setup(env)
    for mode, extra in (("keyword", {}), ("semantic", {}), ("combined", {}),
                        ("combined", {"PRIMA_SEED_EXACT": "1"})):
        out = env.run("search", "booking service", "--mode", mode, env=extra).stdout
        shown = re.findall(r"\[([^\]]*)\]\n", out)
        assert shown and all(re.fullmatch(r"match \d{1,3}%", s) for s in shown), (mode, out)
        got = env.json("search", "booking service", "--mode", mode, env=extra)["results"]
        assert [f"match {r['match']}%" for r in got] == shown
        assert all(0 <= r["match"] <= 100 for r in got)
        assert [r["match"] for r in got] == sorted((r["match"] for r in got), reverse=True)
