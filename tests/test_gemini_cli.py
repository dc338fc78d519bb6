"""Gemini CLI sessions → records, in-process (sources/gemini_cli.py): the JSONL log with its
upserts, rewinds and checkpoints, the legacy JSON, subagents, the project folders (slug, hash,
projects.json), scope, whole re-reads through the indexer, hostile files, and the real CLI.

The shapes are Gemini CLI's own (google-gemini/gemini-cli at 5411f113:
packages/core/src/services/chatRecordingService.ts and chatRecordingTypes.ts for the lines,
packages/core/src/config/storage.ts and projectRegistry.ts for the folders, tools/definitions/
base-declarations.ts for the tools' names and arguments); the public files are
jazzyalex/agent-sessions' (Resources/Fixtures/stage0/agents/gemini/), read from
../shared/fixtures/gemini-cli when it is there."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from prima_memory.sources import gemini_cli
from prima_memory.sources.gemini_cli import GeminiCli, read_session

from conftest import real_files

SECRET = "sk-ant-api03-" + "Q" * 90
SID = "8d3c0d5e-6f1a-4b8e-9a51-2f6f0e2c1a11"
SRC = GeminiCli()


def _ts(s: int) -> str:
    return f"2026-05-01T10:{s // 60:02d}:{s % 60:02d}.000Z"


def header(sid: str = SID, **extra) -> dict:
    # the first line (ChatRecordingService.initialize): no messages, `kind` since 03/2026
    return {"sessionId": sid, "projectHash": "ab" * 32, "startTime": _ts(0),
            "lastUpdated": _ts(0), "kind": "main", **extra}


def user(mid: str, text: str, s: int, display: str | None = None) -> dict:
    # content is a PartListUnion since 01/2026; displayContent what the person typed
    d = {"id": mid, "timestamp": _ts(s), "type": "user", "content": [{"text": text}]}
    if display is not None:
        d["displayContent"] = [{"text": display}]
    return d


def call(cid: str, name: str, args: dict, s: int, status: str = "success") -> dict:
    # a ToolCallRecord as recordToolCalls enriches it (displayName, description, result)
    return {"id": cid, "name": name, "args": args, "status": status, "timestamp": _ts(s),
            "result": [{"functionResponse": {"id": cid, "name": name,
                                             "response": {"output": "big output " * 50}}}],
            "resultDisplay": "done", "displayName": name.title(),
            "description": "Tool description.", "renderOutputAsMarkdown": False}


def gemini(mid: str, text, s: int, calls=(), thoughts=None) -> dict:
    return {"id": mid, "timestamp": _ts(s), "type": "gemini", "content": text,
            "thoughts": thoughts if thoughts is not None else [],
            "tokens": {"input": 10, "output": 5, "cached": 0, "thoughts": 0, "tool": 0,
                       "total": 15},
            "model": "gemini-3-flash-preview", **({"toolCalls": list(calls)} if calls else {})}


def write(path: Path, lines, mode: str = "w") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, mode, encoding="utf-8") as f:
        f.write("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


@pytest.fixture
def gem(tmp_path, monkeypatch) -> Path:
    """Gemini CLI's folder, under GEMINI_CLI_HOME (its own override of the home folder)."""
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gh"))
    monkeypatch.setenv("PRIMA_RACY_MS", "0")
    return tmp_path / "gh" / ".gemini"


def project(gem: Path, name: str, root, marker: bool = True) -> Path:
    """A project folder under tmp/ (a slug with its .project_root, or a hash): its chats/."""
    d = gem / "tmp" / name
    (d / "chats").mkdir(parents=True, exist_ok=True)
    if marker:
        (d / ".project_root").write_text(str(root))
    return d / "chats"


def sha(path) -> str:
    return hashlib.sha256(str(path).encode()).hexdigest()


def one(path, cwd="/w/proj", sub=False):
    deltas, end, state, problems = read_session(str(path), cwd, sub)
    return (deltas[0] if deltas else None), end, state, problems


# -- what a session file says ---------------------------------------------------------------------

SESSION = [
    header(),
    user("u1", "Please fix the login loop\n--- Content from referenced files ---\nlots", 1,
         display="Please fix the login loop in @src/auth.py"),
    {"$set": {"lastUpdated": _ts(1)}},
    # the reply first written with one call, then again with both (recordToolCalls upserts it)
    gemini("g1", "The cookie is SameSite=Strict; I will relax it.", 5,
           [call("c1", "replace", {"file_path": "src/auth.py", "old_string": "Strict",
                                   "new_string": "Lax", "instruction": "Relax the cookie"}, 6)],
           thoughts=[{"subject": "Hmm", "description": "secret thinking", "timestamp": _ts(4)}]),
    gemini("g1", "The cookie is SameSite=Strict; I will relax it.", 5,
           [call("c1", "replace", {"file_path": "src/auth.py", "old_string": "Strict",
                                   "new_string": "Lax", "instruction": "Relax the cookie"}, 6),
            call("c2", "run_shell_command", {"command": "pytest -q tests/test_auth.py",
                                             "description": "Run the auth tests."}, 7)],
           thoughts=[{"subject": "Hmm", "description": "secret thinking", "timestamp": _ts(4)}]),
    {"id": "i1", "timestamp": _ts(8), "type": "info", "content": "Request cancelled."},
    gemini("g2", [{"text": "pondering", "thought": True}, {"text": "Fixed: "},
                  {"text": "the tests pass."}], 9),
    gemini("g3", "", 10, [call("c3", "write_file", {"file_path": "/w/proj/NOTES.md",
                                                     "content": "x" * 1000}, 11),
                          call("c4", "write_file", {"file_path": "/w/proj/FAILED.md",
                                                     "content": "y"}, 11, status="error"),
                          call("c5", "read_file", {"absolute_path": "/w/proj/README.md"}, 11),
                          call("c6", "grep_search", {"pattern": "SameSite",
                                                     "dir_path": "src"}, 11)]),
    {"$set": {"summary": "Fix the login redirect loop", "lastUpdated": _ts(12)}},
]


def test_a_session_log_gives_prompts_replies_calls_and_changes(tmp_path):
    d, end, state, problems = one(write(tmp_path / "session-a.jsonl", SESSION))
    assert problems == [] and state == {} and end == (tmp_path / "session-a.jsonl").stat().st_size
    assert (d.session_id, d.source, d.label, d.cwd) == (SID, "gemini-cli", "[Gemini CLI]",
                                                        "/w/proj")
    # what the person typed (not the files Gemini CLI pasted in), each reply once, its last
    # version; thoughts and the info line are not conversation
    assert [(m.key, m.role, m.text, m.pairs_with) for m in d.messages] == [
        ("u1", "user", "Please fix the login loop in @src/auth.py", None),
        ("g1", "assistant", "The cookie is SameSite=Strict; I will relax it.", "u1"),
        ("g2", "assistant", "Fixed: the tests pass.", None)]
    assert not any("thinking" in m.text or "pondering" in m.text for m in d.messages)
    assert d.first_prompt == "Fix the login loop in @src/auth.py"
    assert d.summary_title == "Fix the login redirect loop"
    assert (d.first_ts, d.last_ts) == (gemini_cli_ts(0), gemini_cli_ts(12))
    calls = [(c.tool, c.target, c.line, c.kind, c.message_key, c.call) for c in d.tool_calls]
    assert calls == [
        ("replace", "src/auth.py", "Relax the cookie", "path", "g1", "c1"),
        ("run_shell_command", "pytest -q tests/test_auth.py", "Run the auth tests.", "command",
         "g1", "c2"),
        ("write_file", "/w/proj/NOTES.md", "", "path", "g2", "c3"),
        ("write_file", "/w/proj/FAILED.md", "", "path", "g2", "c4"),
        ("read_file", "/w/proj/README.md", "", "path", "g2", "c5"),
        ("grep_search", "SameSite", "in src", "", "g2", "c6")]
    # a relative path is the project folder's; a failed write changed nothing; the reason is
    # what the agent said before the change
    assert [(c.path, c.tool, c.explanation, c.message_key) for c in d.file_changes] == [
        ("/w/proj/src/auth.py", "replace", "The cookie is SameSite=Strict; I will relax it.", "g1"),
        ("/w/proj/NOTES.md", "write_file", "Fixed: the tests pass.", "g2")]
    assert d.file_changes[0].ts == gemini_cli_ts(6)


def gemini_cli_ts(s: int) -> float:
    from prima_memory.sources.text import parse_ts
    return parse_ts(_ts(s))


def test_an_edit_with_nothing_said_before_it_takes_its_instruction(tmp_path):
    d, *_ = one(write(tmp_path / "s.jsonl", [
        header(), user("u1", "rename it", 1),
        gemini("g1", "", 2, [call("c1", "replace", {"file_path": "a.py", "instruction":
                                                     "Rename foo to bar"}, 3)])]))
    assert [(c.path, c.explanation) for c in d.file_changes] == [("/w/proj/a.py",
                                                                  "Rename foo to bar")]


def test_a_rewind_drops_the_message_it_names_and_all_after(tmp_path):
    lines = [header(), user("u1", "first question", 1), gemini("g1", "first answer", 2),
             user("u2", "second question", 3), gemini("g2", "second answer", 4),
             {"$rewindTo": "u2"}, user("u3", "another question", 5)]
    d, *_ = one(write(tmp_path / "s.jsonl", lines))
    assert [m.key for m in d.messages] == ["u1", "g1", "u3"]
    d, *_ = one(write(tmp_path / "s.jsonl", lines + [{"$rewindTo": "nowhere"}]))
    assert d is None, "a rewind to an id it does not hold empties it, as Gemini CLI's loader"


def test_a_checkpoint_replaces_every_message(tmp_path):
    # updateMessagesFromHistory: {"$set": {"messages": [...]}} (after /compress, masking)
    d, *_ = one(write(tmp_path / "s.jsonl", [
        header(), user("u1", "long history", 1), gemini("g1", "old answer", 2),
        {"$set": {"messages": [user("s1", "summary of the chat so far", 3),
                               gemini("g9", "new answer", 4)], "lastUpdated": _ts(4)}}]))
    assert [(m.key, m.text) for m in d.messages] == [("s1", "summary of the chat so far"),
                                                     ("g9", "new answer")]


def test_a_legacy_json_session(tmp_path):
    # before 04/2026: one document, content a string (2025) or parts, no kind
    doc = {"sessionId": "legacy-1", "projectHash": "cd" * 32, "startTime": _ts(0),
           "lastUpdated": _ts(9), "messages": [
               {"id": "m1", "timestamp": _ts(1), "type": "user", "content": "Why is CI red?"},
               gemini("m2", "A flaky test.", 2, [call("c1", "run_shell_command",
                                                      {"command": "make ci"}, 3)])]}
    path = tmp_path / "session-2025-09-01T10-00-legacy-1.json"
    path.write_text(json.dumps(doc, indent=2))
    d, end, _state, problems = one(path)
    assert problems == [] and end == path.stat().st_size
    assert [(m.role, m.text) for m in d.messages] == [("user", "Why is CI red?"),
                                                      ("assistant", "A flaky test.")]
    assert [c.target for c in d.tool_calls] == ["make ci"]
    path.write_text(json.dumps(doc, indent=2)[:200])  # written in place, not yet whole
    with pytest.raises(ValueError):
        read_session(str(path), "/w", False)


def test_a_subagents_chat_is_its_own_session_on_the_side(tmp_path):
    d, *_ = one(write(tmp_path / SID / "agent-7.jsonl", [
        header("agent-7", kind="subagent", directories=["/w/proj"]),
        user("a1", "Find where the cookie is set", 1), gemini("a2", "In src/auth.py:12.", 2)]),
        sub=True)
    assert d.session_id == "agent-7" and all(m.sidechain for m in d.messages)


# -- where: the project folders -----------------------------------------------------------------

def test_discover_finds_this_workspaces_project_folders_only(gem, tmp_path):
    ws = tmp_path / "proj"
    (ws / "sub").mkdir(parents=True)
    mine = project(gem, "proj", ws)  # a slug with its .project_root (02/2026 on)
    inner = project(gem, "sub", ws / "sub")  # Gemini CLI run in a folder inside it
    other = project(gem, "proj-1", tmp_path / "other" / "proj")  # same name, another folder
    by_registry = project(gem, "proj-2", None, marker=False)  # named by projects.json alone
    (gem / "projects.json").write_text(json.dumps({"projects": {
        str(ws / "legacy"): "proj-2", str(tmp_path / "other" / "proj"): "proj-1"}}))
    hashed = project(gem, sha(ws), None, marker=False)  # before 02/2026: the folder's SHA-256
    strange = project(gem, sha(tmp_path / "unknown"), None, marker=False)
    files = {
        "main": write(mine / "session-2026-05-01T10-00-8d3c0d5e.jsonl", [header()]),
        "legacy": write(mine / "session-2026-01-01T10-00-11111111.json", [header("j")]),
        "migrated-json": write(mine / "session-2026-03-01T10-00-22222222.json", [header("k")]),
        "migrated": write(mine / "session-2026-03-01T10-00-22222222.jsonl", [header("k")]),
        "subagent": write(mine / SID / "agent-7.jsonl", [header("agent-7")]),
        "inner": write(inner / "session-2026-05-02T10-00-33333333.jsonl", [header("i")]),
        "other": write(other / "session-2026-05-03T10-00-44444444.jsonl", [header("o")]),
        "registry": write(by_registry / "session-2026-05-04T10-00-55555555.jsonl", [header("r")]),
        "hashed": write(hashed / "session-2025-10-01T10-00-66666666.json", [header("h")]),
        "strange": write(strange / "session-2025-10-01T10-00-77777777.json", [header("s")])}
    write(mine / "notes.jsonl", [header()])  # not a session's name
    write(mine / SID / "deeper" / "x.jsonl", [header()])  # not where subagents are kept
    folders: list = []
    found = dict(SRC.discover(str(ws), folders))
    want = {"main": (str(ws), False), "legacy": (str(ws), False), "migrated": (str(ws), False),
            "subagent": (str(ws), True), "inner": (str(ws / "sub"), False),
            "registry": (str(ws / "legacy"), False), "hashed": (str(ws), False)}
    assert found == {str(files[k]): v for k, v in want.items()}
    noted = [f for f, _m in folders]  # a change to any of these lists the files again
    assert {str(gem), str(gem / "tmp"), str(mine), str(mine / SID)} <= set(noted)
    assert all(os.path.isabs(p) for p in SRC.locations(str(ws)))
    assert SRC.holds(str(ws)) and not SRC.holds(str(tmp_path / "elsewhere"))
    # all projects: every folder that can be told, a hash's only when it is one of those
    every = dict(SRC.everywhere({}))
    assert every[str(files["other"])] == (str(tmp_path / "other" / "proj"),)
    assert every[str(files["registry"])] == (str(ws / "legacy"),)
    assert every[str(files["main"])] == (str(ws),) == every[str(files["hashed"])]
    assert str(files["strange"]) not in every


def test_read_scopes_its_session_to_the_project_folder(gem, tmp_path):
    ws = tmp_path / "proj"
    ws.mkdir()
    path = write(project(gem, "proj", ws) / "session-2026-05-01T10-00-8d3c0d5e.jsonl", SESSION)
    ((p, extra),) = SRC.discover(str(ws))
    (d,), *_ = SRC.read(p, extra, 0, None)
    assert d.cwd == str(ws) and SRC.in_scope(d, str(ws))
    assert not SRC.in_scope(d, str(tmp_path / "elsewhere"))
    (again,), *_ = SRC.read(str(path), None, 0, None)  # without discover's word: its marker's
    assert again.cwd == str(ws)
    # an offset the file has not grown past: nothing; the indexer always reads it from 0
    assert SRC.read(p, extra, path.stat().st_size, {})[:2] == ([], path.stat().st_size)
    assert SRC.whole(p) and SRC.mode == "append"


def test_gemini_cli_home_and_home(tmp_path, monkeypatch):
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert gemini_cli.gemini_dir() == str(tmp_path / "h" / ".gemini")
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "g"))
    assert SRC.locations("/w") == [str(tmp_path / "g" / ".gemini" / "tmp")]


def test_links_and_fifos_where_it_looks_are_never_followed(gem, tmp_path):
    ws = tmp_path / "proj"
    ws.mkdir()
    outside = tmp_path / "outside"
    real = write(outside / "chats" / "session-2026-05-01T10-00-aaaaaaaa.jsonl", SESSION)
    (outside / ".project_root").write_text(str(ws))
    chats = project(gem, "proj", ws)
    (chats / "session-2026-05-01T10-00-bbbbbbbb.jsonl").symlink_to(real)  # a linked file
    (chats / SID).symlink_to(outside / "chats", target_is_directory=True)  # a linked folder
    (gem / "tmp" / "proj-1").symlink_to(outside, target_is_directory=True)  # a linked project
    os.mkfifo(chats / "session-2026-05-01T10-00-cccccccc.jsonl")
    assert SRC.discover(str(ws)) == []
    with pytest.raises(OSError):  # a link put there after listing: refused, not read through
        read_session(str(chats / "session-2026-05-01T10-00-bbbbbbbb.jsonl"), str(ws))
    with pytest.raises(ValueError):  # a FIFO: never waited on
        read_session(str(chats / "session-2026-05-01T10-00-cccccccc.jsonl"), str(ws))
    (gem / "tmp" / "proj-2").mkdir()
    (gem / "tmp" / "proj-2" / ".project_root").symlink_to(outside / ".project_root")
    write(gem / "tmp" / "proj-2" / "chats" / "session-x.jsonl", [header()])
    assert SRC.discover(str(ws)) == [], "a linked marker names no folder"


# -- hostile files ---------------------------------------------------------------------------------

def test_secrets_private_spans_and_odd_text(tmp_path):
    d, _end, _state, problems = one(write(tmp_path / "s.jsonl", [
        header(summary=f"title {SECRET} <private>my salary</private>"),
        user("u1", f"use key {SECRET} <private>card 4111</private> and \ud800 then </prima-memory>",
             1),
        gemini("g1", f"The key {SECRET} is set. <private>echoed</private>", 2,
               [call("c1", "run_shell_command", {"command": f"export K={SECRET}\x1b[2J\x07 && ls",
                                                 "description": "Set \x1b]0;evil\x07 the key"}, 3),
                call("c2", "write_file", {"file_path": "/w/proj/.env"}, 3)])]))
    assert problems == []
    everything = json.dumps([m.text for m in d.messages] + [d.summary_title, d.first_prompt]
                            + [c.target + c.line for c in d.tool_calls]
                            + [c.explanation for c in d.file_changes])
    assert SECRET not in everything and "Q" * 40 not in everything
    assert "salary" not in everything and "card 4111" not in everything
    assert "echoed" not in everything and "[private]" in d.messages[0].text
    assert "\ufffd" in d.messages[0].text and "</prima-memory>" in d.messages[0].text
    assert all(c.target.isprintable() and c.line.isprintable() for c in d.tool_calls)


def test_hostile_lines_are_skipped_and_the_rest_read(tmp_path):
    path = tmp_path / "s.jsonl"
    write(path, [
        header(),
        "not json at all",
        "[1, 2, 3]",
        "[" * 100_000 + "]" * 100_000,  # nested past any parser's depth
        json.dumps({"id": 5, "type": "user", "content": "an id that is a number"}),
        user("u1", "the real question", 1),
        {"id": "u2", "type": 7, "content": "a type that is a number"},
        {"id": "u3", "type": "user", "content": 42, "timestamp": 12345},
        {"id": "g0", "type": "gemini", "content": {"text": "a lone part"},
         "toolCalls": "not a list"},
        {"id": "g1", "type": "gemini", "content": [5, None, {"text": 3}, "plain"],
         "toolCalls": [5, {"name": 3}, {"name": "run_shell_command", "args": ["ls"]},
                       {"name": "write_file", "args": {"file_path": 7}, "status": 9}]},
        {"$set": {"sessionId": 9, "summary": ["x"], "messages": "none"}},
        {"$set": 5},
        {"$rewindTo": 5},
        {"$deleteAll": True},
        {"id": "m1", "type": "model", "parts": [{"text": "a type from elsewhere"}]},
        {"id": "m2", "type": "model", "parts": [{"text": "again"}]},
        gemini("g2", "x" * 5_000_000, 4),
        '{"id": "g3", "type": "gemini", "content": "being writ',
    ])
    with open(path, "rb+") as f:  # (the last line cut short, as a write in progress)
        f.seek(-1, 2)
        f.truncate()
    d, end, state, problems = one(path)
    assert [(m.key, m.text[:20]) for m in d.messages] == [
        ("u1", "the real question"), ("g0", "a lone part"), ("g1", "plain"), ("g2", "x" * 20)]
    assert len(d.messages[-1].text) <= 1_000_000 and any("5,000,000" in p for p in problems)
    assert [c.tool for c in d.tool_calls] == ["run_shell_command", "write_file"]
    assert d.file_changes == [] and d.session_id == SID
    assert end < path.stat().st_size, "the unfinished last line is left for the next read"
    assert state == {"unk": ["$deleteAll", "model"]}, "each unknown kind noted once"
    assert sum("invalid JSON" in p for p in problems) == 1
    assert any("nested" in p for p in problems) and any("not a JSON object" in p for p in problems)
    assert any("unexpected shape" in p for p in problems)
    assert SRC.knows("gemini") and SRC.knows("$rewindTo") and not SRC.knows("model")


def test_a_file_that_is_no_session(tmp_path):
    for body in ("[]", '{"history": []}', '"text"'):
        (tmp_path / "s.json").write_text(body)
        deltas, _end, _state, problems = read_session(str(tmp_path / "s.json"), "/w")
        assert deltas == [] and len(problems) == 1, body
    write(tmp_path / "t.jsonl", [user("u1", "a message with no header", 1)])
    deltas, _end, _state, problems = read_session(str(tmp_path / "t.jsonl"), "/w")
    assert deltas == [] and problems == ["not a Gemini CLI session (no sessionId)"]
    write(tmp_path / "e.jsonl", [header()])  # opened, nothing asked: no session yet
    assert read_session(str(tmp_path / "e.jsonl"), "/w")[0] == []


# -- through the indexer: a file read whole again on each change --------------------------------

def _indexed(ws: Path):
    from prima_memory.memory import Memory
    mem = Memory(str(ws))
    mem.update(sources=(SRC,))
    st = mem.store()
    row = st.session_by_session_id(SID, "gemini-cli")
    return st, row, ([(m.role, m.text) for m in st.messages(row.id)] if row else [])


def test_an_upsert_or_a_rewind_replaces_what_the_index_holds(gem, tmp_path):
    ws = tmp_path / "proj"
    ws.mkdir()
    path = project(gem, "proj", ws) / "session-2026-05-01T10-00-8d3c0d5e.jsonl"
    write(path, [header(), user("u1", "Why does the importer drop rows?", 1),
                 gemini("g1", "Looking at the importer.", 2)])
    _st, row, msgs = _indexed(ws)
    assert msgs == [("user", "Why does the importer drop rows?"),
                    ("assistant", "Looking at the importer.")]
    assert row.cwd == str(ws)
    # Gemini CLI writes the reply again (same id) with more in it: one message, the new text
    write(path, [gemini("g1", "The importer skips rows with a BOM.", 2,
                        [call("c1", "run_shell_command", {"command": "head -c3 data.csv"}, 3)]),
                 user("u2", "And the fix?", 4), gemini("g2", "Strip the BOM first.", 5)], "a")
    st, row, msgs = _indexed(ws)
    assert msgs == [("user", "Why does the importer drop rows?"),
                    ("assistant", "The importer skips rows with a BOM."),
                    ("user", "And the fix?"), ("assistant", "Strip the BOM first.")]
    assert [c.target for c in st.tool_calls(row.id)] == ["head -c3 data.csv"]
    write(path, [{"$rewindTo": "u2"}], "a")  # /rewind: the second exchange is gone
    _st, _row, msgs = _indexed(ws)
    assert [t for _r, t in msgs] == ["Why does the importer drop rows?",
                                     "The importer skips rows with a BOM."]
    path.unlink()  # Gemini CLI's 30-day cleanup: the memory keeps it, archived
    _st, row, msgs = _indexed(ws)
    assert len(msgs) == 2 and row.archived


def test_another_projects_session_is_not_indexed_here(gem, tmp_path):
    ws, other = tmp_path / "proj", tmp_path / "other"
    ws.mkdir()
    other.mkdir()
    write(project(gem, "other", other) / "session-2026-05-01T10-00-8d3c0d5e.jsonl", SESSION)
    _st, row, _msgs = _indexed(ws)
    assert row is None


# -- the public files (jazzyalex/agent-sessions, MIT) ------------------------------------------------

@pytest.fixture
def fixtures() -> Path:
    return real_files("gemini-cli")


def test_the_public_files(fixtures):
    d, end, state, problems = one(fixtures / "agent-sessions-jsonl_v040.jsonl")
    assert problems == [] and state == {}
    assert end == (fixtures / "agent-sessions-jsonl_v040.jsonl").stat().st_size
    assert [(m.role, m.text) for m in d.messages] == [
        ("user", "Say hello and list files."), ("assistant", "Hello! I listed the files.")]
    assert [(c.tool, c.target, c.line, c.kind) for c in d.tool_calls] == [
        ("run_shell_command", "ls -F", "List files in the current directory.", "command")]
    d, _end, state, problems = one(fixtures / "agent-sessions-small.json")
    assert problems == [] and [m.text for m in d.messages] == ["Hello", "Hi!"]
    assert d.session_id == "session-2026-01-16T18-34-3739ef95"
    # large.json carries "type": "model" messages, which no Gemini CLI writes: noted, skipped
    d, _end, state, problems = one(fixtures / "agent-sessions-large.json")
    assert state == {"unk": ["model"]} and [m.text for m in d.messages] == ["Run a command",
                                                                          "Step 1"]
    assert len(d.tool_calls) == 2 and all(c.kind == "command" for c in d.tool_calls)
    # schema_drift.json is no session file of Gemini CLI's ({"history": ...}): one problem
    deltas, _end, _state, problems = read_session(
        str(fixtures / "agent-sessions-schema_drift.json"), "/w")
    assert deltas == [] and len(problems) == 1


# -- the real CLI ------------------------------------------------------------------------------------

def test_the_cli_finds_it_with_its_label_and_resume_command(env):
    gem_dir = env.home / ".gemini"  # HOME's: no GEMINI_CLI_HOME in this environment
    chats = project(gem_dir, "my-project", env.ws)
    (gem_dir / "projects.json").write_text(json.dumps({"projects": {str(env.ws): "my-project"}}))
    write(chats / "session-2026-05-01T10-00-8d3c0d5e.jsonl", SESSION)
    hits = env.search("cookie SameSite")
    assert [(h["source"], h["label"], h["session_id"]) for h in hits] == [
        ("gemini-cli", "[Gemini CLI]", SID)]
    # gemini --resume <UUID>, from the project folder (the hit's folder: quoted, it has spaces)
    assert hits[0]["resume"].startswith("cd ") and str(env.ws) in hits[0]["resume"]
    assert hits[0]["resume"].endswith(f" && gemini --resume {SID}")
    assert "[Gemini CLI]" in env.run("search", "cookie", "--mode", "keyword").stdout
    elsewhere = env.root / "elsewhere"
    elsewhere.mkdir()
    every = env.json("search", "cookie SameSite", "--all-projects", "--mode", "keyword",
                     cwd=elsewhere)["results"]
    assert [(h["label"], h["session_id"]) for h in every] == [("[Gemini CLI]", SID)]
