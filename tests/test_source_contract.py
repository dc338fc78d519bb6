"""The contract every source in the registry keeps, checked in-process at the records seam: on
files of its own kind it returns session records of the shared shape, with its name and label,
text that is redacted, offsets that resume, and nothing for files it cannot read."""
from __future__ import annotations

import json
import os

import pytest

from prima_memory.records import FileChange, Message, SessionDelta
from prima_memory.sources.registry import EXTRACTS, SOURCES

SECRET = "sk-ant-api03-" + "Q" * 90


def _sample(src, tmp_path, env):
    """A file of the source's kind, placed where it discovers it, holding SECRET."""
    if src.name == "claude-code":
        from prima_memory.sources.claude_code import encode_project_dir
        d = tmp_path / "claude" / "projects" / encode_project_dir(str(env))
        d.mkdir(parents=True)
        p = d / "0c0c0c0c-0000-4000-8000-000000000001.jsonl"
        p.write_text(json.dumps({
            "type": "user", "sessionId": p.stem, "uuid": "u1", "cwd": str(env),
            "timestamp": "2026-01-02T00:00:00Z",
            "message": {"role": "user", "content": f"key {SECRET}"}}) + "\n")
    elif src.name == "codex":
        d = tmp_path / "codex" / "sessions" / "2026" / "01" / "02"
        d.mkdir(parents=True)
        p = d / "rollout-2026-01-02T00-00-00-abc.jsonl"
        lines = [{"timestamp": "2026-01-02T00:00:00Z", "type": "session_meta",
                  "payload": {"id": "abc", "cwd": str(env)}},
                 {"timestamp": "2026-01-02T00:00:01Z", "type": "response_item",
                  "payload": {"type": "message", "role": "user",
                              "content": [{"type": "input_text", "text": f"key {SECRET}"}]}}]
        p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    elif src.name == "copilot-chat":
        d = tmp_path / "vscode" / "workspaceStorage" / "w1" / "chatSessions"
        d.mkdir(parents=True)
        p = d / "abc.json"
        p.write_text(json.dumps({"version": 3, "sessionId": "abc", "requests": [
            {"requestId": "r", "message": {"text": f"key {SECRET}"},
             "response": [{"value": "ok"}]}]}))
    elif src.name == "extract":
        d = env / ".prima-memory" / "extracts" / "2026-01"
        d.mkdir(parents=True)
        p = d / "2026-01-02-abc.md"
        p.write_text(f"# Session abc\n\n## Request\nkey {SECRET}\n")
    else:
        d = env / ".claude" / "state" / "sessions" / "P1"
        d.mkdir(parents=True)
        p = d / "abc.md"
        p.write_text(f"**Author:** A\nkey {SECRET}")
    return p


@pytest.mark.parametrize("src", SOURCES + (EXTRACTS,), ids=lambda s: s.name)
def test_every_source_keeps_the_contract(src, tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("PRIMA_VSCODE_USER_DIRS", str(tmp_path / "vscode"))
    monkeypatch.setenv("PRIMA_RACY_MS", "0")  # folders made a moment ago count as settled
    assert src.name and src.label and src.mode in ("append", "snapshot")
    assert src.discover(str(ws)) == [], "nothing there: nothing found, no error"
    path = _sample(src, tmp_path, ws)
    folders: list = []
    found = src.discover(str(ws), folders)
    assert [p for p, _x in found] == [str(path)]
    if not src.streamed:  # the folders listed, whose mtimes tell of a file come or gone
        assert str(path.parent) in [f for f, _m in folders]
        assert all(m == os.stat(f).st_mtime_ns for f, m in folders if m is not None)
    assert all(os.path.isabs(loc) for loc in src.locations(str(ws)))
    deltas, end, state, problems = src.read(str(path), found[0][1], 0, None)
    assert problems == [] and end == path.stat().st_size
    assert len(deltas) == 1 and isinstance(deltas[0], SessionDelta)
    d = deltas[0]
    assert d.source == src.name and d.label.startswith(src.label.split(" ")[0][:6])
    assert d.messages and all(isinstance(m, Message) for m in d.messages)
    assert all(isinstance(c, FileChange) for c in d.file_changes)
    assert all(SECRET not in m.text for m in d.messages), "redacted like every source"
    assert src.in_scope(d, str(ws))
    if src.mode == "append":  # read on from the end: nothing new
        again, end2, _s, _p = src.read(str(path), found[0][1], end, state)
        assert again == [] and end2 == end
    os.chmod(path, 0)
    if os.geteuid() != 0:  # (root reads anything) an unreadable file: nothing, or an OSError
        try:               # the indexer logs and goes on from
            got = src.read(str(path), found[0][1], 0, None)[0]
        except OSError:
            got = []
        assert got == []
    os.chmod(path, 0o600)
