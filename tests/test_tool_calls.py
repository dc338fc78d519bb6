"""Tool calls: each source's calls as records (in-process, at the source → records seam), stored
with their session (a fork's copies left to its origin, gone with the session), and an index
from before schema 11 given its calls without losing or doubling anything (issue #21)."""
from __future__ import annotations

import json
import time
from pathlib import Path

import apsw
import pytest

from conftest import FIXTURES, Env, Transcript
from prima_memory.sources import claude_code, codex, copilot
from prima_memory.sources.tool_calls import LINE_MAX, TARGET_MAX
from test_forks import FORK, ORIGIN, _age, _fork, _origin

OLD = time.time() - 5 * 86400
SID = "5e550000-0000-4000-8000-000000000001"
# fake credentials assembled at run time (see tests/test_redact.py): both redact
AWS_ID = "AK" + "IA" + "IOSFODNN7EXAMPLE"
GH_TOKEN = "gh" + "p_" + "Q7w9E2r4T6y8U0i1P3o5A7s9D1f3G5h7J9k2"


def _claude_calls(path: Path, sidechain: bool = False):
    sf = claude_code.SourceFile(str(path), None if sidechain else path.stem, sidechain)
    d, _end, _state, problems = claude_code.read(sf, 0, None, mtime=0)
    assert problems == []
    return d


def test_claude_code_calls_name_their_tool_target_and_reply(tmp_path):
    t = Transcript(tmp_path / f"{SID}.jsonl", SID, "/home/u/proj", start=OLD)
    t.user("Fix the login redirect")
    read = t.tool("Read", {"file_path": "/home/u/proj/src/auth.py", "offset": 10, "limit": 40},
                  text="Reading the auth module.")
    bash = t.tool("Bash", {"command": "git commit -m \"Fix login redirect\"\ngit push",
                           "description": "Commit and push"})
    t.tool("Grep", {"pattern": "SameSite", "path": "src"})
    t.tool("WebFetch", {"url": "https://example.com/docs", "prompt": "What does it say?"})
    t.tool("Task", {"description": "Find the auth tests", "prompt": "...",
                    "subagent_type": "general-purpose"})
    t.tool("mcp__tracker__get_issue", {"id": 7, "repo": "acme/web"})
    t.tool("TodoWrite", {"todos": [{"content": "Fix it", "status": "in_progress"},
                                   {"content": "Test it", "status": "pending"}]})
    t.tool("ExitPlanMode", {"plan": "1. Fix the cookie\n2. Test the redirect"})
    d = _claude_calls(t.path)
    got = [(c.tool, c.target, c.line, c.kind) for c in d.tool_calls]
    assert got == [
        ("Read", "/home/u/proj/src/auth.py", "lines 10-49", "path"),
        ("Bash", 'git commit -m "Fix login redirect" git push', "Commit and push", "command"),
        ("Grep", "SameSite", "in src", ""),
        ("WebFetch", "https://example.com/docs", "What does it say?", "url"),
        ("Task", "Find the auth tests", "general-purpose", ""),
        ("mcp__tracker__get_issue", "acme/web", "", ""),
        ("TodoWrite", "", "Fix it", ""),
        ("ExitPlanMode", "", "1. Fix the cookie 2. Test the redirect", "")]
    assert [c.message_key for c in d.tool_calls[:2]] == [read, bash], "the reply that made it"
    assert all(c.call and c.call.startswith("toolu_") for c in d.tool_calls)
    assert not any(c.sidechain for c in d.tool_calls)
    assert [(c.path, c.tool) for c in d.file_changes] == [], "a Read changes nothing"


def test_a_subagents_calls_are_its_own(tmp_path):
    t = Transcript(tmp_path / "agent-a1.jsonl", SID, "/home/u/proj", start=OLD, sidechain=True,
                   agent_id="a1")
    t.user("Find the auth tests")
    t.tool("Glob", {"pattern": "tests/**/test_auth*.py"})
    d = _claude_calls(t.path, sidechain=True)
    assert [(c.tool, c.target, c.sidechain) for c in d.tool_calls] == [
        ("Glob", "tests/**/test_auth*.py", True)]


def test_a_calls_text_is_redacted_cleaned_and_cut(tmp_path):
    t = Transcript(tmp_path / f"{SID}.jsonl", SID, "/home/u/proj", start=OLD)
    t.user("Deploy")
    t.tool("Bash", {"command": f"AWS_ACCESS_KEY_ID={AWS_ID} aws s3 ls\x1b[2J\x07 \ud800",
                    "description": f"List with token {GH_TOKEN}"})
    t.tool("Bash", {"command": "echo " + "x" * 10_000 + f" {GH_TOKEN}"})
    t.tool("Bash", {"command": "cat <<'EOF'\n" + "line\n" * 5000 + "EOF"})
    calls = _claude_calls(t.path).tool_calls
    text = json.dumps([(c.target, c.line) for c in calls], ensure_ascii=False)
    assert AWS_ID not in text and GH_TOKEN not in text and "ghp_" not in text
    assert "[REDACTED:" in calls[0].target and "[REDACTED:" in calls[0].line
    assert "\x1b" not in text and "\x07" not in text and "\ufffd[2J" in calls[0].target
    assert calls[0].target.endswith("\ufffd"), "a lone surrogate is shown, not stored"
    assert all(len(c.target) <= TARGET_MAX and len(c.line) <= LINE_MAX for c in calls)
    assert calls[2].target.startswith("cat <<'EOF' line line") and "\n" not in calls[2].target


def test_our_own_command_runs_make_no_calls(tmp_path):
    t = Transcript(tmp_path / f"{SID}.jsonl", SID, "/home/u/proj", start=OLD)
    t.user("<command-name>/prima-memory:recall</command-name>\n<command-args>auth</command-args>")
    t.tool("Bash", {"command": "prima-memory recall auth"})
    t.user("Now fix it")
    t.tool("Edit", {"file_path": "/home/u/proj/a.py", "old_string": "a", "new_string": "b"})
    assert [c.tool for c in _claude_calls(t.path).tool_calls] == ["Edit"]


def _w(ts: str, kind: str, payload: dict) -> dict:
    return {"timestamp": f"2026-03-01T10:00:{ts}Z", "type": kind, "payload": payload}


def _msg(role: str, text: str) -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


PATCH = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n*** Add File: docs/new.md\n+hi\n*** End Patch"


def test_codex_calls_follow_the_message_before_them(tmp_path):
    lines = [
        _w("00", "session_meta", {"id": "cx-1", "timestamp": "2026-03-01T10:00:00Z",
                                  "cwd": "/home/u/proj"}),
        _w("01", "response_item", _msg("user", "Run the tests")),
        _w("02", "response_item", {"type": "function_call", "name": "exec_command",
                                   "call_id": "c1", "arguments": json.dumps(
                                       {"cmd": f"GITHUB_TOKEN={GH_TOKEN} pytest -q"})}),
        _w("03", "response_item", _msg("assistant", "Two fail; patching.")),
        _w("04", "response_item", {"type": "custom_tool_call", "name": "apply_patch",
                                   "call_id": "c2", "input": PATCH}),
        _w("05", "response_item", {"type": "local_shell_call", "call_id": "c3",
                                   "action": {"type": "exec", "command": ["bash", "-lc", "ls"]}}),
        _w("06", "response_item", {"type": "function_call", "name": "update_plan", "call_id": "c4",
                                   "arguments": json.dumps({"plan": [{"step": "a"}]})}),
        _w("07", "response_item", {"type": "web_search_call", "id": "w1", "status": "completed",
                                   "action": {"type": "search", "query": "pytest flaky"}}),
        _w("08", "response_item", {"type": "custom_tool_call", "name": "shell", "call_id": "c5",
                                   "input": json.dumps({"command": ["git", "status"]})}),
    ]
    path = tmp_path / "rollout-1.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    (d,), _end, _state, problems = codex.read(str(path), 0, None, mtime=0)
    assert problems == []
    got = [(c.tool, c.target, c.line, c.kind, c.call) for c in d.tool_calls]
    assert got == [
        ("exec_command", "GITHUB_TOKEN=[REDACTED:github-token] pytest -q", "", "command", "c1"),
        ("apply_patch", "/home/u/proj/src/app.py", "and /home/u/proj/docs/new.md", "path", "c2"),
        ("local_shell", "ls", "", "command", "c3"),
        ("update_plan", "", "1 step", "", "c4"),
        ("web_search", "pytest flaky", "", "", "w1"),
        ("shell", "git status", "", "command", "c5")]
    keys = {m.text: m.key for m in d.messages}
    assert [c.message_key for c in d.tool_calls] == [keys["Run the tests"]] + \
        [keys["Two fail; patching."]] * 5


def test_copilot_tool_invocations(tmp_path):
    doc = {"version": 3, "sessionId": "chat-1", "responderUsername": "GitHub Copilot",
           "creationDate": 1_764_000_000_000, "requests": [{
               "requestId": "r1", "timestamp": 1_764_000_000_000,
               "message": {"text": "Run the tests"}, "response": [
                   {"value": "Running them."},
                   {"kind": "toolInvocationSerialized", "toolId": "copilot_runInTerminal",
                    "toolCallId": "t1", "invocationMessage": "Using \"Run In Terminal\"",
                    "pastTenseMessage": {"value": "Ran command in terminal"},
                    "toolSpecificData": {"kind": "terminal",
                                         "commandLine": {"original": "npm test"}}},
                   {"kind": "toolInvocationSerialized", "toolId": "copilot_readFile",
                    "toolCallId": "t2", "invocationMessage": {
                        "value": "Reading [](file:///home/u/app/src/a.ts#1-20)",
                        "uris": {"file:///home/u/app/src/a.ts": {
                            "$mid": 1, "path": "/home/u/app/src/a.ts", "scheme": "file"}}}}]},
               {"requestId": "r2", "timestamp": 1_764_000_060_000, "message": {"text": "Again"},
                "response": [{"kind": "toolInvocationSerialized", "toolId": "x"}]}]}
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(doc))
    (d,), problems = copilot.read(str(path))
    assert problems == []
    assert [(c.tool, c.target, c.line, c.kind, c.call, c.message_key) for c in d.tool_calls] == [
        ("copilot_runInTerminal", "npm test", "Ran command in terminal", "command", "t1", "r1:a"),
        ("copilot_readFile", "/home/u/app/src/a.ts", "Reading /home/u/app/src/a.ts", "path",
         "t2", "r1:a"),
        ("x", "", "", "", None, "r2:q")], "a call with no answer follows its question"


def test_the_public_fixtures_calls():
    cc = FIXTURES / "claude-code" / "long-conversation.jsonl"
    cx = FIXTURES / "codex" / "agent-sessions-small.jsonl"
    if not cc.exists() or not cx.exists():
        pytest.skip("../shared/fixtures is not present")
    calls = _claude_calls(cc).tool_calls
    tools = {c.tool for c in calls}
    assert {"Bash", "Read", "Glob", "WebFetch"} <= tools
    assert all(c.call and c.message_key for c in calls)
    bash = next(c for c in calls if c.tool == "Bash")
    assert bash.kind == "command" and bash.target and bash.line
    deltas, _end, _state, _problems = codex.read(str(cx), 0, None, mtime=0)
    got = [(c.tool, c.target) for d in deltas for c in d.tool_calls]
    assert ("shell", "ls") in got and ("web_search", "example") in got


# -- stored, with their session ------------------------------------------------------------------

def _calls(env: Env, session_id: str | None = None) -> list[tuple]:
    db = apsw.Connection(str(env.data / "index.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        sql = ("SELECT s.session_id, t.tool, t.target FROM tool_calls t JOIN sessions s "
               "ON s.id = t.session")
        args: tuple = ()
        if session_id:
            sql, args = sql + " WHERE s.session_id = ?", (session_id,)
        return list(db.execute(sql + " ORDER BY t.id", args))
    finally:
        db.close()


def test_a_fork_holds_only_its_own_calls(env):
    origin = _origin(env)
    _age(origin.path, 3600)
    fork = _fork(env, origin, FORK, start=OLD + 4000)
    fork.tool("Bash", {"command": "pytest tests/test_auth.py"}, text="Running the auth tests.")
    env.run("index")
    assert [c[1:] for c in _calls(env, ORIGIN)] == [("Edit", str(env.ws / "auth.py"))]
    assert [c[1:] for c in _calls(env, FORK)] == [("Bash", "pytest tests/test_auth.py")]
    # read in the other order (the fork first, as a cold index reads the newest first), the
    # origin takes its calls back with its messages
    env.run("index", "--rebuild")
    assert [c[1:] for c in _calls(env, ORIGIN)] == [("Edit", str(env.ws / "auth.py"))]
    assert [c[1:] for c in _calls(env, FORK)] == [("Bash", "pytest tests/test_auth.py")]


def test_calls_go_with_their_session(env):
    t = env.transcript(SID, start=OLD)
    t.user("List the files")
    t.tool("Bash", {"command": "ls -la"})
    env.run("index")
    assert _calls(env) == [(SID, "Bash", "ls -la")]
    t.path.unlink()
    env.run("index")  # archived: kept, still shown
    assert _calls(env) == [(SID, "Bash", "ls -la")]
    env.run("index", "--prune")
    assert _calls(env) == []


# -- an index from before schema 11 --------------------------------------------------------------

def _as_schema_10(env: Env) -> None:
    """The index as version 10 left it: no tool calls, no table for them, its files read."""
    db = apsw.Connection(str(env.data / "index.db"))
    with db:
        db.execute("DROP TABLE tool_calls")
        db.execute("PRAGMA user_version = 10")
        db.execute("UPDATE meta SET value = '10' WHERE key = 'schema_version'")
        env.restamp(db)
    db.close()


def _message_rows(env: Env) -> list[tuple]:
    db = apsw.Connection(str(env.data / "index.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return list(db.execute("SELECT id, key, text FROM messages ORDER BY id"))
    finally:
        db.close()


def _history(env: Env) -> tuple[Transcript, Transcript]:
    recent = env.transcript(SID, start=time.time() - 600)
    recent.user("Fix the login redirect")
    recent.tool("Edit", {"file_path": str(env.ws / "auth.py"), "old_string": "a",
                         "new_string": "b"}, text="Setting SameSite=Lax.")
    recent.tool("Bash", {"command": "pytest -q", "description": "Run the tests"})
    recent.reply("Fixed; the tests pass.")
    old = env.transcript("01d00000-0000-4000-8000-000000000001", start=OLD)
    old.user("Rename the config loader")
    old.tool("Bash", {"command": "git mv loader.py config_loader.py"})
    old.reply("Renamed.")
    _age(old.path, 5 * 86400)  # outside what a quick look reads (the last two days)
    return recent, old


def test_an_index_from_schema_10_gets_its_calls_and_keeps_everything_else(env):
    recent, old = _history(env)
    env.run("index")
    want = _calls(env)
    rows = _message_rows(env)
    _as_schema_10(env)
    # a search's quick look (the last two days, no sweep of the rest) migrates the index and
    # reads the recent session's calls
    quick = {"PRIMA_SWEEP": "0"}
    found = env.json("search", "SameSite", "--mode", "keyword", env=quick)["results"]
    assert [r["session_id"] for r in found] == [SID]
    from prima_memory.storage import SCHEMA_VERSION
    assert env.json("status", env=quick)["index"]["schema_version"] == SCHEMA_VERSION
    assert _calls(env) == [c for c in want if c[0] == SID]
    assert _message_rows(env) == rows, "nothing cleared, nothing read twice"
    # the older one answers meanwhile as before; a full run gives it its calls too
    shown = env.json("show", old.session_id, env=quick)["session"]
    assert [m["text"] for m in shown["messages"]] == ["Rename the config loader", "Renamed."]
    env.run("index")
    assert _calls(env) == want and _message_rows(env) == rows
    env.run("index")  # and never again
    assert _calls(env) == want and _message_rows(env) == rows
    assert not list(env.data.glob("index.db.*")), "migrated in place, not moved aside"


def test_files_grown_since_the_old_index_lose_and_double_nothing(env):
    """Read again from their start, files that grew since: the calls of lines the old index
    read, and of lines it did not, each stored once (a reply whose call came after the old
    index read its text; a rollout, whose calls follow no reply of their own)."""
    recent, _old = _history(env)
    recent.user("And the logout?")
    reply = recent.reply("Testing the logout.")
    rollout = _rollout(env, [_w("01", "response_item", _msg("user", "List the tests")),
                             _w("02", "response_item", {"type": "function_call", "name": "shell",
                                                        "call_id": "c1", "arguments": json.dumps(
                                                            {"command": ["ls", "tests"]})})])
    env.run("index")
    _as_schema_10(env)
    recent.assistant([{"type": "tool_use", "id": "toolu_logout", "name": "Bash",
                       "input": {"command": "pytest tests/test_logout.py"}}], msg_id=reply)
    recent.reply("The logout works.")
    with open(rollout, "a") as f:
        f.write(json.dumps(_w("03", "response_item", {
            "type": "function_call", "name": "shell", "call_id": "c2",
            "arguments": json.dumps({"command": ["pytest", "-q"]})})) + "\n")
    env.run("index")
    assert [c[1:] for c in _calls(env, SID)] == [
        ("Edit", str(env.ws / "auth.py")), ("Bash", "pytest -q"),
        ("Bash", "pytest tests/test_logout.py")]
    assert [c[1:] for c in _calls(env, "cx-grown")] == [("shell", "ls tests"),
                                                         ("shell", "pytest -q")]
    assert env.json("show", SID)["session"]["message_count"] == 6


def _rollout(env: Env, lines: list[dict]) -> Path:
    folder = Path(env.env["CODEX_HOME"]) / "sessions" / "2026" / "03" / "01"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "rollout-2026-03-01T10-00-00-cx-grown.jsonl"
    meta = _w("00", "session_meta", {"id": "cx-grown", "timestamp": "2026-03-01T10:00:00Z",
                                     "cwd": str(env.ws)})
    path.write_text("".join(json.dumps(x) + "\n" for x in [meta, *lines]))
    return path


def test_a_fork_in_an_old_index_gets_only_its_own_calls(env):
    origin = _origin(env)
    _age(origin.path, 3600)
    fork = _fork(env, origin, FORK, start=OLD + 4000)
    fork.tool("Bash", {"command": "pytest tests/test_auth.py"}, text="Running the auth tests.")
    env.run("index")
    want = _calls(env)
    _as_schema_10(env)
    env.run("index")
    assert _calls(env) == want


def test_calls_cut_short_by_the_time_budget_are_left_whole_for_the_next_run(env, monkeypatch):
    """A run out of time in the middle of reading a file's calls again writes none of them and
    leaves the file marked: the next run reads them all, once."""
    recent, _old = _history(env)
    for i in range(30):
        recent.tool("Bash", {"command": f"echo step {i}"})
    env.run("index")
    want = _calls(env)
    _as_schema_10(env)
    from prima_memory import api, indexer
    monkeypatch.setattr(indexer, "BATCH_BYTES", 500)  # many steps to be cut between
    looks = []

    def out_of_time(self):  # time is up once the backfill has read its first step
        looks.append(1)
        return len(looks) > 1
    monkeypatch.setattr(indexer.Indexer, "_out_of_time", out_of_time)
    mem = api.open_memory(str(env.ws))
    try:
        rep = mem.update(sources=(indexer.registry.CLAUDE_CODE,))
    finally:
        mem.close()
    assert rep.pending_files >= 1 and _calls(env) == []
    env.run("index")  # (another process: nothing patched)
    assert _calls(env) == want
