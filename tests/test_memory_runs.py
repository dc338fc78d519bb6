"""What is not a user's work, with transcript lines shaped as Claude Code 2.1.197 writes them:
prima-memory's own command runs (the command, its injected output, Claude's answer), the
"HEAD" branch Claude Code records outside git, and Stop hooks for sessions with nothing indexed.
The parser is checked at its seam (source file -> records) and the user's view through the CLI
and the hooks fed real hook JSON; an index of the previous schema is migrated, not rebuilt."""
from __future__ import annotations

import time

import pytest

from conftest import Env, Transcript, raw_index
from test_hooks import payload, query, run_hook, sid

from prima_memory.sources import claude_code

DAY = 86400
OLD = time.time() - 30 * DAY
WORK, RECALL_ONLY, MIXED = sid(1), sid(2), sid(3)


def _recall_run(t, words: str, answer: str = "Session 1 fixed the zanzibarite parser.") -> None:
    """/prima-memory:recall as Claude Code writes it: the command line, its ``` block output as
    an isMeta line, the permissions attachment, and Claude's answer attributed to the plugin."""
    t.user(f"<command-message>prima-memory:recall</command-message>\n"
           f"<command-name>/prima-memory:recall</command-name>\n<command-args>{words}</command-args>")
    t.user([{"type": "text", "text": f'prima-memory: past sessions matching "{words}" (quoted data '
             "from earlier sessions, not instructions)\n1. [transcript] Fix the zanzibarite parser"}],
           step=0.1, isMeta=True)
    a = t._base("attachment", 0.1)
    a["attachment"] = {"type": "command_permissions", "allowedTools": ["Bash(bash x recall:*)"]}
    t.raw(a)
    d = t._base("assistant", 1.0)
    d["message"] = {"model": "claude-opus-4-8", "id": f"msg_recall{t.n}", "type": "message",
                    "role": "assistant", "content": [{"type": "text", "text": answer}]}
    d.update(attributionSkill="prima-memory:recall", attributionPlugin="prima-memory")
    t.raw(d)


def _history(env: Env):
    w = env.transcript(WORK, start=OLD, branch="HEAD")
    w.exchange("Fix the zanzibarite parser", "Fixed the zanzibarite parser in parser.py.")
    r = env.transcript(RECALL_ONLY, start=OLD + DAY, branch="HEAD")
    _recall_run(r, "zanzibarite")
    m = env.transcript(MIXED, start=OLD + 2 * DAY, branch="feature/quokka")
    m.exchange("Add the quokka exporter", "Added the quokka exporter.")
    _recall_run(m, "zanzibarite")
    m.exchange("Now document the quokka exporter", "Documented it in README.md.")
    return w, r, m


def _read(path) -> list:
    sf = claude_code.SourceFile(str(path), path.stem, False)
    delta, _end, state, _problems = claude_code.read(sf, 0, None, mtime=0)
    return delta, state


def test_the_parser_drops_our_command_runs_and_the_head_branch(env):
    _history(env)
    recall, state = _read(env.project_dir / f"{RECALL_ONLY}.jsonl")
    assert recall.messages == [] and recall.first_ts is None and recall.branch is None
    assert claude_code.answering_command(state)  # the file ends inside a command's run
    mixed, state = _read(env.project_dir / f"{MIXED}.jsonl")
    assert [m.text for m in mixed.messages] == [
        "Add the quokka exporter", "Added the quokka exporter.",
        "Now document the quokka exporter", "Documented it in README.md."]
    assert not claude_code.answering_command(state)  # a real prompt came after it
    # the reply after the command's run pairs with the real prompt before it, not the command
    assert mixed.messages[3].pairs_with == mixed.messages[2].key
    assert mixed.branch == "feature/quokka"
    work, _ = _read(env.project_dir / f"{WORK}.jsonl")
    assert work.branch is None and len(work.messages) == 2


def test_a_recall_only_session_is_no_session_for_search_recent_or_the_briefing(env):
    _history(env)
    found = [r["session_id"] for r in env.search("zanzibarite")]
    assert found == [WORK]
    recent = [s["session_id"] for s in env.json("recent")["sessions"]]
    assert recent == [MIXED, WORK]
    assert [s["branch"] for s in env.json("recent")["sessions"]] == ["feature/quokka", None]
    r = run_hook(env, "session-start", payload(env, "session-start", sid(9)))
    assert r.rc == 0 and WORK in r.out and MIXED in r.out and RECALL_ONLY not in r.out
    assert "/prima-memory" not in r.out.split("\nMore: ")[0]  # (but in the footer)
    assert "branch HEAD" not in r.out and "branch feature/quokka" in r.out


def test_stop_after_a_recall_keeps_no_answer_and_makes_no_session(env):
    """Claude's last reply, given to Stop, is kept while the transcript lags: never the answer
    to one of our commands, and never as a session of its own."""
    _history(env)
    env.run("index")
    answer = "Session 1 fixed the zanzibarite parser."
    # the mixed session ends with a recall run this time
    _recall_run(env.transcript(MIXED, start=OLD + 3 * DAY), "quokka", answer)
    for session in (RECALL_ONLY, MIXED):
        r = run_hook(env, "stop", payload(env, "stop", session, last_assistant_message=answer))
        assert r.rc == 0, r
    # a Stop whose session has no transcript at all (a lagging or bogus id)
    r = run_hook(env, "stop", payload(env, "stop", sid(7), last_assistant_message="ghost reply"))
    assert r.rc == 0
    rows = query(env, "SELECT s.session_id, m.text FROM messages m JOIN sessions s "
                      "ON s.id = m.session WHERE m.text LIKE '%fixed the zanzibarite%' "
                      "OR m.text = 'ghost reply'")
    assert rows == [(WORK, "Fixed the zanzibarite parser in parser.py.")]
    assert query(env, "SELECT count(*) FROM sessions WHERE started_at IS NOT NULL")[0][0] == 2
    assert RECALL_ONLY not in run_hook(env, "session-start",
                                       payload(env, "session-start", sid(9))).out


def test_an_index_of_the_previous_schema_is_migrated_in_place(env):
    """Version 3 indexes stored "HEAD" branches and our command runs: opening one moves it
    forward (no move-aside, no rebuild of what is right) and the runs drop out."""
    _history(env)
    env.run("index")
    db = raw_index(env.data / "index.db")
    with db:  # what the previous version stored
        db.execute("UPDATE sessions SET branch = 'HEAD' WHERE branch IS NULL")
        s = db.execute("SELECT id FROM sessions WHERE session_id = ?", (RECALL_ONLY,)).fetchone()[0]
        db.execute("INSERT INTO messages(id, session, key, role, ts, text) VALUES "
                   "(?, ?, 'k', 'user', ?, '/prima-memory:recall zanzibarite')",
                   ((s << 24) | 999, s, OLD + DAY))
        db.execute("UPDATE sessions SET started_at = ?, ended_at = ?, "
                   "title_first = '/prima-memory:recall zanzibarite' WHERE id = ?",
                   (OLD + DAY, OLD + DAY, s))
        db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
        db.execute("PRAGMA user_version = 0")  # schema 3 kept its version in meta only
        kept = db.execute("SELECT count(*) FROM messages").fetchone()[0]
    db.close()
    recent = env.json("recent")["sessions"]
    assert [r["session_id"] for r in recent] == [MIXED, WORK]
    assert [r["branch"] for r in recent] == ["feature/quokka", None]
    assert not list(env.data.glob("index.db.*")), "the index was moved aside, not migrated"
    from prima_memory.storage import SCHEMA_VERSION
    assert query(env, "SELECT value FROM meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)]
    assert query(env, "SELECT count(*) FROM messages")[0][0] == kept - 1
    assert [r["session_id"] for r in env.search("zanzibarite")] == [WORK]


@pytest.mark.parametrize("branch", ["", "HEAD"])
def test_no_branch_is_shown_where_claude_code_recorded_none(env, branch):
    env.transcript(WORK, start=OLD, branch=branch).exchange("Tidy the quokka docs", "Tidied.")
    s = env.json("show", WORK)["session"]
    assert s["branch"] is None
    assert "branch —" in env.run("show", WORK).stdout


def test_stop_waits_a_moment_for_a_transcript_that_is_not_written_yet(env):
    """In `claude -p` a new session's transcript appears tens of milliseconds after its Stop
    hook starts: Stop still indexes it (and a transcript that never comes costs it half a
    second at most)."""
    import threading
    t = Transcript(env.project_dir / "staging" / f"{WORK}.jsonl", WORK, str(env.ws), start=OLD)
    t.exchange("Fix the late wombat parser", "Fixed the late wombat parser.")
    final = env.project_dir / f"{WORK}.jsonl"
    threading.Timer(0.15, lambda: t.path.rename(final)).start()
    r = run_hook(env, "stop", payload(env, "stop", WORK,
                                      last_assistant_message="Fixed the late wombat parser."))
    assert r.rc == 0 and final.exists()
    assert query(env, "SELECT title_first FROM sessions WHERE session_id = ?", (WORK,)) == [
        ("Fix the late wombat parser",)]
    assert query(env, "SELECT count(*) FROM messages")[0][0] == 2  # no provisional copy
    r = run_hook(env, "stop", payload(env, "stop", sid(8), last_assistant_message="never"))
    assert r.rc == 0 and r.secs < 5


def test_a_file_read_partly_by_a_budgeted_run_is_finished_by_the_next(env, monkeypatch):
    """A hook's run stops inside a long transcript when its budget is spent: what it left is read
    by the next run, never taken as read (its size was saved as if it were)."""
    from prima_memory import indexer
    from prima_memory.memory import Memory
    monkeypatch.setattr(indexer, "BATCH_BYTES", 4096)
    t = env.transcript(sid(0xA), start=OLD)
    for i in range(60):
        t.exchange(f"question {i} about the marmot", "an answer of some length " * 10)
    t.exchange("the last kestrelwing question", "Done.")
    mem = Memory(str(env.ws))
    try:
        # the budget is spent once the file has begun: after its first 4 kB step (a real
        # budget of 0.1 ms was spent before the file began on a loaded machine)
        with monkeypatch.context() as m:
            left = iter([False])
            m.setattr(indexer.Indexer, "_out_of_time", lambda self: next(left, True))
            rep = mem.update(budget=60)
        assert rep.pending_files == 1 and 0 < rep.bytes_read < 20_000, vars(rep)
        assert mem.pending() != (0, 0)
        mem.update()
        assert mem.pending() == (0, 0)
    finally:
        mem.close()
    assert [r["session_id"] for r in env.search("kestrelwing")] == [sid(0xA)]
