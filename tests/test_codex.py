"""Codex rollouts → records, in-process (sources/codex.py): every era, one text stream, the
working folder, apply_patch in all four forms, incremental reads, and hostile lines."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from prima_memory.sources import codex

from conftest import real_files

PATCH = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n*** Add File: docs/new.md\n+hi\n*** End Patch"


def _write(path: Path, lines) -> str:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return str(path)


def _read(path: str, offset: int = 0, state=None):
    deltas, end, state, problems = codex.read(path, offset, state, mtime=0)
    return (deltas[0] if deltas else None), end, state, problems


def _w(ts: str, kind: str, payload: dict) -> dict:
    return {"timestamp": f"2026-03-01T10:00:{ts}Z", "type": kind, "payload": payload}


def _msg(role: str, text: str) -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


ERA3 = [
    _w("00", "session_meta", {"id": "s-era3", "timestamp": "2026-03-01T10:00:00Z",
                              "cwd": "/home/u/proj", "git": {"branch": "feature/x"}}),
    _w("01", "response_item", _msg("developer", "You are Codex. Follow the rules.")),
    _w("01", "response_item", _msg("user", "# AGENTS.md instructions for /home/u/proj\nbe nice")),
    _w("01", "response_item", _msg("user", "<environment_context>\n  <cwd>/home/u/proj</cwd>\n"
                                           "</environment_context>")),
    _w("02", "event_msg", {"type": "user_message", "message": "Fix the flaky login test"}),
    _w("02", "response_item", _msg("user", "Fix the flaky login test")),
    _w("03", "turn_context", {"cwd": "/home/u/proj/sub"}),
    _w("04", "event_msg", {"type": "agent_message", "message": "I'll patch the app module."}),
    _w("04", "response_item", _msg("assistant", "I'll patch the app module.")),
    _w("05", "response_item", {"type": "custom_tool_call", "name": "apply_patch",
                               "call_id": "c1", "input": PATCH}),
    _w("06", "event_msg", {"type": "patch_apply_end", "call_id": "c1", "success": True,
                           "changes": {"/home/u/proj/src/app.py": {"type": "update"},
                                       "/home/u/proj/docs/new.md": {"type": "add"},
                                       "/home/u/proj/old.txt": {"type": "update",
                                                                "move_path": "/home/u/proj/new.txt"}}}),
    _w("07", "response_item", {"type": "function_call", "name": "apply_patch", "call_id": "c2",
                               "arguments": json.dumps({"input": "*** Begin Patch\n*** Delete File: tmp/x.log\n*** End Patch"})}),
    _w("08", "response_item", {"type": "reasoning", "summary": [{"type": "summary_text",
                                                                 "text": "thinking"}]}),
    _w("09", "response_item", _msg("assistant", "Done: the test is stable now.")),
]


def test_era3_keeps_one_stream_and_drops_injected_context(tmp_path):
    d, end, state, problems = _read(_write(tmp_path / "rollout-a.jsonl", ERA3))
    assert problems == []
    assert (d.session_id, d.source, d.label) == ("s-era3", "codex", "[Codex]")
    assert d.cwd == "/home/u/proj" and d.branch == "feature/x"  # the meta's, not the turn's
    assert [(m.role, m.text) for m in d.messages] == [
        ("user", "Fix the flaky login test"), ("assistant", "I'll patch the app module."),
        ("assistant", "Done: the test is stable now.")], "once each, no developer or context"
    assert d.messages[1].pairs_with == d.messages[0].key == d.messages[2].pairs_with
    assert d.first_prompt == "Fix the flaky login test"
    changes = [(c.path, c.tool) for c in d.file_changes]
    # patch_apply_end's resolved paths stand for c1's parsed ones; c2 is parsed against the cwd
    assert changes == [("/home/u/proj/src/app.py", "apply_patch"),
                       ("/home/u/proj/docs/new.md", "apply_patch"),
                       ("/home/u/proj/old.txt", "apply_patch"),
                       ("/home/u/proj/new.txt", "apply_patch"),
                       ("/home/u/proj/sub/tmp/x.log", "apply_patch")]
    assert d.file_changes[0].explanation == "I'll patch the app module."
    assert end == os.path.getsize(tmp_path / "rollout-a.jsonl")


def test_an_appended_rollout_reads_on_from_its_offset(tmp_path):
    whole = _read(_write(tmp_path / "whole.jsonl", ERA3))[0]
    path = tmp_path / "grown.jsonl"
    _write(path, ERA3[:6])
    first, end, state, _ = _read(str(path))
    with open(path, "a") as f:  # Codex appends on resume
        f.write("".join(json.dumps(x) + "\n" for x in ERA3[6:]))
    second, _end, _state, _ = _read(str(path), end, state)
    assert [(m.key, m.text, m.pairs_with) for m in first.messages + second.messages] == \
        [(m.key, m.text, m.pairs_with) for m in whole.messages]
    assert [c.path for c in second.file_changes] == [c.path for c in whole.file_changes]
    assert second.first_prompt is None, "the title came with the first read"


def test_era2_bare_lines_with_the_folder_from_the_environment_context(tmp_path):
    lines = [
        {"id": "s-era2", "timestamp": "2025-08-01T09:00:00Z", "instructions": None,
         "git": {"commit_hash": "abc", "branch": "main"}},
        {"record_type": "state"},
        _msg("user", "<environment_context>\n  <cwd>/srv/app</cwd>\n  <shell>bash</shell>\n"
                     "</environment_context>"),
        _msg("user", "Create a README file"),
        _msg("assistant", "Writing it now."),
        {"type": "function_call", "name": "shell", "call_id": "k1", "arguments": json.dumps(
            {"command": ["bash", "-lc", f"cd web && apply_patch <<'EOF'\n{PATCH}\nEOF"]})},
        {"type": "local_shell_call", "call_id": "k2", "status": "completed", "action": {
            "type": "exec", "command": ["apply_patch", "*** Begin Patch\n*** Add File: README.md\n+x\n*** End Patch"],
            "working_directory": "/srv/app"}},
    ]
    d, *_ = _read(_write(tmp_path / "rollout-b.jsonl", lines))
    assert d.session_id == "s-era2" and d.cwd == "/srv/app" and d.branch == "main"
    assert [m.text for m in d.messages] == ["Create a README file", "Writing it now."]
    assert [c.path for c in d.file_changes] == ["/srv/app/web/src/app.py",
                                                "/srv/app/web/docs/new.md", "/srv/app/README.md"]


def test_era1_one_document(tmp_path):
    doc = {"session": {"id": "s-era1", "timestamp": "2025-04-01T08:00:00Z", "instructions": ""},
           "items": [_msg("user", "<environment_context>\n<cwd>/w</cwd>\n</environment_context>"),
                     _msg("user", "Add a health check"), _msg("assistant", "Added /healthz.")]}
    path = tmp_path / "rollout-2025-04-01-x.json"
    path.write_text(json.dumps(doc))
    d, end, _state, problems = _read(str(path))
    assert problems == [] and end == path.stat().st_size
    assert (d.session_id, d.cwd) == ("s-era1", "/w")
    assert [m.text for m in d.messages] == ["Add a health check", "Added /healthz."]


def test_a_file_of_events_only_keeps_the_event_stream(tmp_path):
    lines = [_w("00", "session_meta", {"id": "s-ev", "timestamp": "2026-03-01T10:00:00Z",
                                       "cwd": "/p"}),
             _w("01", "event_msg", {"type": "user_message", "message": "hello"}),
             _w("02", "event_msg", {"type": "agent_message", "message": "hi there"})]
    d, *_ = _read(_write(tmp_path / "ev.jsonl", lines))
    assert [(m.role, m.text) for m in d.messages] == [("user", "hello"), ("assistant", "hi there")]


def test_hostile_lines_are_skipped_and_secrets_redacted(tmp_path):
    path = tmp_path / "bad.jsonl"
    good = [_w("00", "session_meta", {"id": "s-bad", "cwd": "/p"}),
            _w("01", "response_item", _msg("user", "key sk-ant-api03-" + "A" * 90 + " \ud800 ok"))]
    with open(path, "wb") as f:
        f.write(b"not json at all\n[1, 2]\n")
        for x in good:
            f.write(json.dumps(x).encode() + b"\n")
        f.write(b'{"type": "response_item", "payload": {"type": "message", "role": "user", '
                b'"content": 5}}\n')
        f.write(b'{"timestamp": "x", "type": "response_item", "payload"')  # still being written
    d, end, _state, problems = _read(str(path))
    assert [m.role for m in d.messages] == ["user"]
    assert "sk-ant-api03" not in d.messages[0].text and "\ufffd" in d.messages[0].text
    assert end < path.stat().st_size, "the unfinished last line is left for the next read"
    assert len(problems) >= 2


@pytest.fixture
def fixtures() -> Path:
    return real_files("codex")


def test_the_public_fixtures(fixtures):
    d, end, _state, problems = _read(str(fixtures / "agent-sessions-small.jsonl"))
    assert problems == [] and end == (fixtures / "agent-sessions-small.jsonl").stat().st_size
    assert (d.session_id, d.cwd, d.branch) == ("019fc8be-3658-7ca3-9e29-000000000000",
                                               "/tmp/repo", "main")
    assert [m.role for m in d.messages] == ["user", "assistant"]
    assert [c.path for c in d.file_changes] == ["/tmp/repo/a.txt"]
    legacy, _end, state, _p = _read(str(fixtures / "agent-sessions-codex_050_legacy.jsonl"))
    assert legacy is None, "metadata alone: no conversation, so no session"
    assert (state["sid"], state["cwd"]) == ("test-legacy-session", "/tmp/test")


def test_a_compressed_rollout_and_its_plain_twin(tmp_path, monkeypatch):
    zstandard = pytest.importorskip("zstandard")
    plain = tmp_path / "rollout-z.jsonl"
    _write(plain, ERA3)
    packed = tmp_path / "rollout-z.jsonl.zst"
    packed.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    want, _e, _s, _p = _read(str(plain))
    got, end, _state, problems = _read(str(packed))
    assert problems == [] and end == plain.stat().st_size  # offsets into the decompressed text
    assert [(m.key, m.text) for m in got.messages] == [(m.key, m.text) for m in want.messages]
    assert [c.path for c in got.file_changes] == [c.path for c in want.file_changes]
    # discovery reads the plain file when both exist, the compressed one alone otherwise
    from prima_memory.sources.registry import Codex
    home = tmp_path / "codexhome"
    day = home / "sessions" / "2026" / "03" / "01"
    day.mkdir(parents=True)
    (day / plain.name).write_bytes(plain.read_bytes())
    (day / packed.name).write_bytes(packed.read_bytes())
    (day / "rollout-only.jsonl.zst").write_bytes(packed.read_bytes())
    monkeypatch.setenv("CODEX_HOME", str(home))
    names = [Path(p).name for p, _x in Codex().discover(str(tmp_path))]
    assert names == ["rollout-only.jsonl.zst", "rollout-z.jsonl"]
    # without zstd support, or a damaged archive: an error the indexer notes (and tries again),
    # leaving what it holds of the session
    monkeypatch.setattr(codex, "_zstd", lambda: None)
    with pytest.raises(ValueError, match="needs zstd"):
        _read(str(packed))
    (tmp_path / "bad.jsonl.zst").write_bytes(b"not zstd at all")
    monkeypatch.undo()
    with pytest.raises(ValueError, match="cannot decompress"):
        _read(str(tmp_path / "bad.jsonl.zst"))
