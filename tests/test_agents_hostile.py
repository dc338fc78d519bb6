"""Hostile input for the six other agents' sources (review of issue #41)."""
from __future__ import annotations

import json
from pathlib import Path

SECRET = "sk-ant-api03-" + "Q" * 90


def _copilot_log(env, sid: str, lines) -> Path:
    root = Path(env.env["HOME"]) / ".copilot" / "session-state" / sid
    root.mkdir(parents=True, exist_ok=True)
    (root / "events.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (root / "workspace.yaml").write_text(f"id: {sid}\ncwd: {env.ws}\n")
    return root / "events.jsonl"


def test_copilot_cli_a_lone_surrogate_in_a_call_s_json_arguments(env):
    sid = "0c0c0c0c-0000-4000-8000-00000000beef"
    _copilot_log(env, sid, [
        {"type": "session.start", "id": "e1", "timestamp": "2026-01-02T00:00:00.000Z",
         "data": {"sessionId": sid, "version": 1, "context": {"cwd": str(env.ws)}}},
        {"type": "user.message", "id": "e2", "timestamp": "2026-01-02T00:00:01.000Z",
         "data": {"content": "fix the zebrafinch module"}},
        {"type": "assistant.message", "id": "e3", "timestamp": "2026-01-02T00:00:02.000Z",
         "data": {"content": "done", "toolRequests": [
             {"toolCallId": "c1", "name": "edit",
              "arguments": '{"path": "src/a\\ud800.py", "old_str": "a", "new_str": "b"}'}]}}])
    env.run("index")
    assert [r["session_id"] for r in env.search("zebrafinch")] == [sid]


def test_copilot_cli_a_lone_surrogate_in_workspace_yaml(env):
    sid = "0c0c0c0c-0000-4000-8000-00000000bee2"
    log = _copilot_log(env, sid, [
        {"type": "session.start", "id": "e1", "timestamp": "2026-01-02T00:00:00.000Z",
         "data": {"sessionId": sid, "version": 1, "context": {"cwd": str(env.ws)}}},
        {"type": "user.message", "id": "e2", "timestamp": "2026-01-02T00:00:01.000Z",
         "data": {"content": "tune the wombat cache"}}])
    (log.parent / "workspace.yaml").write_text(
        f'id: {sid}\ncwd: {env.ws}\nname: "wombat \\ud800 work"\nuser_named: true\n')
    env.run("index")
    assert [r["session_id"] for r in env.search("wombat")] == [sid]


def test_copilot_cli_no_secret_in_state_nor_private_span_in_a_reason(tmp_path, monkeypatch):
    from prima_memory.sources.copilot_cli import CopilotCli
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("COPILOT_HOME", raising=False)
    sid = "s1"
    log = tmp_path / ".copilot" / "session-state" / sid / "events.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text("".join(json.dumps(x) + "\n" for x in [
        {"type": "session.start", "id": "e1", "timestamp": "2026-01-02T00:00:00.000Z",
         "data": {"sessionId": sid, "version": 1,
                  "context": {"cwd": "/w", "branch": "b-<private>pinbranch</private>"}}},
        {"type": "user.message", "id": "e2", "data": {"content": "go"}},
        {"type": "assistant.message", "id": "e3", "data": {"content": "", "toolRequests": [
            {"toolCallId": "c1", "name": "edit", "arguments": {"path": "/w/a.py"},
             "intentionSummary": "fix <private>pinreason</private> it"}]}}]))
    (log.parent / "workspace.yaml").write_text(f"id: {sid}\ncwd: /w\nname: key {SECRET}\n")
    (d,), _end, state, _problems = CopilotCli().read(str(log), None, 0, None)
    assert SECRET not in json.dumps(state), "a file's state is stored: no secret in it"
    assert SECRET not in (d.summary_title or "") and d.summary_title
    assert [c.explanation for c in d.file_changes] == ["fix [private] it"]
    assert "pinbranch" not in (d.branch or "")
    # the title is not given again while it is unchanged
    (d2,), *_ = CopilotCli().read(str(log), None, 0, state)
    assert d2.summary_title is None


def test_opencode_no_title_in_the_catalog_it_fills(tmp_path, monkeypatch):
    """everywhere's `known` is the catalog written to disk (projects.py): no secret in it."""
    from prima_memory.sources import opencode
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("OPENCODE_DB", raising=False)
    src = opencode.OpenCode()
    path = Path(src.data_dir()) / "storage" / "session" / "prj" / "ses_t.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"id": "ses_t", "directory": "/w", "title": f"deploy {SECRET}",
                                "time": {"created": 1767312000000}}))
    known: dict = {}
    assert src.everywhere(known) == [(str(path), ("/w",))]
    assert SECRET not in json.dumps(known) and known
    opencode._JSON.clear()  # (another process: the catalog alone)
    assert src.everywhere(json.loads(json.dumps(known))) == [(str(path), ("/w",))]
    # a read still takes the title from the file itself (and redacts it)
    info = opencode._json_info(str(path))
    assert info is not None and info[3] == f"deploy {SECRET}"


def test_a_cursor_chat_of_another_shape_is_said_in_one_short_line():
    # the chat's id and version come from the database: a problem quotes them cut short
    from prima_memory.sources import cursor
    problems: list[str] = []
    cursor._composer_session("c" * 5000, {"_v": "v" * 100_000, "other": 1}, {}, problems, set(),
                             None, ("cursor", "[Cursor]"))
    assert problems and all(len(p) < 400 for p in problems), [len(p) for p in problems]
