"""Hostile input for the six other agents' sources (review of issue #41)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

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
