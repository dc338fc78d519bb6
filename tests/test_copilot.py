"""VS Code Copilot Chat sessions → records, in-process (sources/copilot.py): JSON versions 1-3,
the JSONL mutation log replayed, Copilot's chats only, edited files, workspace folders."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from prima_memory.sources import copilot

FIXTURES = Path(__file__).resolve().parent.parent.parent / "shared" / "fixtures" / "copilot-chat"
T0 = 1_764_000_000_000  # ms


def _request(n: int, text: str, reply_parts: list, **extra) -> dict:
    return {"requestId": f"req-{n}", "message": {"text": text, "parts": []},
            "response": reply_parts, "timestamp": T0 + n * 60_000, **extra}


V3 = {
    "version": 3, "sessionId": "chat-v3", "creationDate": T0, "customTitle": "Theme switch",
    "responderUsername": "GitHub Copilot", "requests": [
        _request(1, "Add a dark theme toggle", [
            {"value": "I'll add a toggle to the settings page."},
            {"kind": "textEditGroup", "uri": {"$mid": 1, "fsPath": "/home/u/app/src/theme.ts",
                                               "path": "/home/u/app/src/theme.ts", "scheme": "file"},
             "edits": []},
            {"kind": "markdownContent", "content": {"value": "Done, and a test."}},
            {"kind": "codeblockUri", "uri": "file:///home/u/app/test/theme.test.ts"},
            {"kind": "toolInvocationSerialized", "toolId": "x"}],
                 agent={"extensionId": {"value": "GitHub.copilot-chat"}},
                 editedFileEvents=[{"uri": {"fsPath": "/home/u/app/src/theme.ts"}}]),
        _request(2, "thanks", [{"kind": "markdownContent", "value": "You're welcome."}]),
    ]}


def _read_doc(tmp_path, doc, name="chat.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    ds, problems = copilot.read(str(path))
    return (ds[0] if ds else None), problems


def test_a_v3_session_with_its_edits(tmp_path):
    d, problems = _read_doc(tmp_path, V3)
    assert problems == []
    assert (d.session_id, d.source, d.label, d.custom_title) == \
        ("chat-v3", "copilot-chat", "[VS Code]", "Theme switch")
    assert [(m.role, m.text) for m in d.messages] == [
        ("user", "Add a dark theme toggle"),
        ("assistant", "I'll add a toggle to the settings page.\nDone, and a test."),
        ("user", "thanks"), ("assistant", "You're welcome.")]
    assert d.messages[1].pairs_with == d.messages[0].key
    assert [(c.path, c.tool) for c in d.file_changes] == [
        ("/home/u/app/src/theme.ts", "textEditGroup"),
        ("/home/u/app/test/theme.test.ts", "codeblockUri")], "each file once per reply"
    assert d.file_changes[0].explanation == "I'll add a toggle to the settings page."
    assert d.first_ts == T0 / 1000 and d.last_ts == (T0 + 120_000) / 1000


@pytest.mark.parametrize("version", [1, 2])
def test_older_versions(tmp_path, version):
    doc = {"sessionId": f"chat-v{version}", "creationDate": T0, "requesterUsername": "me",
           "responderUsername": "GitHub Copilot",
           "requests": [{"message": "plain string prompt", "response": [{"value": "answer"}]}]}
    if version == 2:
        doc.update(version=2, computedTitle="Computed", lastMessageDate=T0 + 5000)
    d, _ = _read_doc(tmp_path, doc)
    assert [m.text for m in d.messages] == ["plain string prompt", "answer"]
    assert d.custom_title == ("Computed" if version == 2 else None)
    assert d.first_prompt == "Plain string prompt", "a title, as Claude Code's first prompts are"


def test_another_providers_chat_is_not_copilots(tmp_path):
    other = dict(V3, responderUsername="Some Other Agent")
    assert _read_doc(tmp_path, other)[0] is None
    by_agent = {k: v for k, v in V3.items() if k != "responderUsername"}
    by_agent["requests"] = [_request(1, "x", [{"value": "y"}],
                                     agent={"extensionId": {"value": "someone.else"}})]
    assert _read_doc(tmp_path, by_agent, "b.json")[0] is None


def test_the_jsonl_mutation_log_is_replayed(tmp_path):
    base = {"version": 3, "sessionId": "chat-log", "responderUsername": "GitHub Copilot",
            "requests": [_request(1, "first question", [{"value": "first answer"}])]}
    ops = [{"kind": 0, "v": base},
           {"kind": 2, "k": ["requests"], "v": [_request(2, "second", [{"value": "two"}]),
                                                _request(3, "third", [{"value": "three"}])]},
           {"kind": 2, "k": ["requests"], "i": 2, "v": [_request(4, "fourth", [])]},  # truncate
           {"kind": 1, "k": ["requests", 2, "response"], "v": [{"value": "four"}]},  # set
           {"kind": 1, "k": ["customTitle"], "v": "Replayed"},
           {"kind": 3, "k": ["customTitle"]},  # delete
           {"kind": 1, "k": ["customTitle"], "v": "Final title"}]
    path = tmp_path / "chat-log.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in ops) + '{"kind": 1, "k": ["cust')
    ds, problems = copilot.read(str(path))
    d = ds[0]
    assert problems == [], "a last line cut short is a write in progress"
    assert d.custom_title == "Final title"
    assert [m.text for m in d.messages] == ["first question", "first answer", "second", "two",
                                            "fourth", "four"]


def test_odd_shapes_are_skipped_not_fatal(tmp_path):
    odd = dict(V3, requests=[5, {"message": {"text": 7}, "response": [{"value": 5}, "x", None,
                                                                     {"kind": "textEditGroup",
                                                                      "uri": 3}]},
                             _request(9, "fine", [{"value": "still read"}])])
    d, problems = _read_doc(tmp_path, odd)
    assert [m.text for m in d.messages] == ["fine", "still read"] and d.file_changes == []


def test_a_broken_log_line_is_reported_and_skipped(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text("\n".join([json.dumps({"kind": 0, "v": V3}), "garbage",
                               json.dumps({"kind": 1, "k": ["requests", 99, "x"], "v": 1}),
                               json.dumps({"kind": 1, "k": ["customTitle"], "v": "ok"})]) + "\n")
    ds, problems = copilot.read(str(path))
    assert ds[0].custom_title == "ok" and len(problems) == 2


@pytest.mark.parametrize("uri,want", [
    ("file:///home/u/my%20project", "/home/u/my project"),
    ("file:///c%3A/Users/u/proj", "c:/Users/u/proj"),
    ("vscode-remote://ssh-remote%2Bbox/srv/app", "/srv/app"),
])
def test_workspace_folders(tmp_path, uri, want):
    (tmp_path / "workspace.json").write_text(json.dumps({"folder": uri}))
    assert copilot.workspace_folder(str(tmp_path)) == want


def test_the_public_fixtures():
    if not FIXTURES.is_dir():
        pytest.skip("../shared/fixtures is not present")
    for f in sorted(FIXTURES.glob("*.json")):
        ds, problems = copilot.read(str(f))
        assert problems == [] and len(ds) == 1, f
        d = ds[0]
        assert d.session_id == f.stem and d.first_prompt and len(d.messages) >= 2
        assert [m.role for m in d.messages[:2]] == ["user", "assistant"]
        # they record no time: the file's, so they are sessions with a date like any other
        assert d.first_ts == d.last_ts == f.stat().st_mtime
        assert {m.ts for m in d.messages} == {f.stat().st_mtime}
