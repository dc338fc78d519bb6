"""Conformance with real Claude Code transcripts (obra/episodic-memory fixtures, used in place).

Every expectation is computed here from the raw JSON lines, independently of prima_memory, and
compared with what the CLI reports."""
from __future__ import annotations

import json
import re
import time
from collections import OrderedDict
from datetime import datetime
from pathlib import Path

import pytest

FIXTURES = ("tiny-conversation.jsonl", "short-conversation.jsonl", "medium-conversation.jsonl",
            "long-conversation.jsonl")
FILE_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
              "NotebookEdit": "notebook_path"}
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
SPLIT_ID = "msg_01H2oSqKEwc6Lxm9946UcdQR"


def _load(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _prompt(o: dict) -> str | None:
    """A real user prompt's text (these fixtures hold no command or stdout noise)."""
    if o.get("type") != "user" or o.get("isMeta") or o.get("isCompactSummary"):
        return None
    content = o["message"]["content"]
    if isinstance(content, str):
        text = content
    else:
        if any(b.get("type") == "tool_result" for b in content):
            return None
        text = "\n".join(b["text"] for b in content if b.get("type") == "text")
    return _REMINDER.sub("", text).strip() or None


def _norm(text: str) -> str:
    return " ".join(text.split())


_REDACTED = re.compile(r"\[REDACTED:[\w-]+\]")


def _same_text(got: str, expected: str) -> bool:
    """Equal, except where the product redacted what looked like a secret (a redaction stands
    for one run of non-space characters of the original)."""
    if got == expected:
        return True
    parts = _REDACTED.split(got)
    return len(parts) > 1 and re.fullmatch(r"\S+".join(map(re.escape, parts)), expected) is not None


def _same_messages(got, expected) -> bool:
    return len(got) == len(expected) and all(
        g[0] == x[0] and _same_text(g[1], x[1]) for g, x in zip(got, expected))


class Expected:
    """What a careful reader gets from one fixture file."""

    def __init__(self, path: Path):
        self.lines = _load(path)
        self.session_id = next((o["sessionId"] for o in self.lines if o.get("sessionId")),
                               path.stem)
        self.summary = next((o["summary"] for o in self.lines if o.get("type") == "summary"), None)
        self.messages: list[tuple[str, str]] = []  # (role, normalised text) in file order
        replies: OrderedDict[str, list[str]] = OrderedDict()
        slot: dict[str, int] = {}
        self.changes: list[tuple[str, str, str]] = []  # (path, tool, explanation)
        self.split_lines = {}
        last_text = ""
        times = []
        for o in self.lines:
            if o.get("type") in ("user", "assistant") and o.get("timestamp"):
                times.append(o["timestamp"])
            p = _prompt(o)
            if p is not None:
                self.messages.append(("user", _norm(p)))
                last_text = ""
                continue
            if o.get("type") != "assistant" or o["message"].get("model") == "<synthetic>":
                continue
            mid = o["message"]["id"]
            self.split_lines[mid] = self.split_lines.get(mid, 0) + 1
            if mid not in replies:
                replies[mid] = []
                slot[mid] = len(self.messages)
                self.messages.append(("assistant", mid))  # placeholder, filled below
            for b in o["message"]["content"]:
                if b.get("type") == "text" and b["text"].strip():
                    replies[mid].append(b["text"].strip())
                    last_text = b["text"].strip()
                elif b.get("type") == "tool_use" and b.get("name") in FILE_TOOLS:
                    self.changes.append((b["input"][FILE_TOOLS[b["name"]]], b["name"], last_text))
        for mid, i in slot.items():
            self.messages[i] = ("assistant", _norm("\n".join(replies[mid])))
        self.messages = [m for m in self.messages if m[1]]  # tool-only replies carry no text
        self.replies = {mid: _norm("\n".join(t)) for mid, t in replies.items() if t}
        self.start = min(times) if times else None
        self.end = max(times) if times else None
        self.cwds = {o["cwd"] for o in self.lines if o.get("cwd")}
        self.branches = {o["gitBranch"] for o in self.lines if o.get("gitBranch")}

    def text_of_messages(self) -> str:
        return "\n".join(t for _r, t in self.messages).lower()


def _ts(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


@pytest.fixture
def indexed(env, fixtures_dir):
    """The four fixtures linked (not copied) into the workspace's Claude Code folder, indexed."""
    env.project_dir.mkdir(parents=True, exist_ok=True)
    exp = {}
    for name in FIXTURES:
        src = fixtures_dir / name
        e = Expected(src)
        (env.project_dir / f"{e.session_id}.jsonl").symlink_to(src)
        exp[name.split("-")[0]] = e
    report = env.json("index")
    return env, exp, report


def test_messages_match_the_raw_lines(indexed):
    env, exp, _ = indexed
    for key in ("tiny", "short", "long"):
        e = exp[key]
        s = env.json("show", e.session_id)["session"]
        got = [(m["role"], _norm(m["text"])) for m in s["messages"] if not m["sidechain"]]
        n_user = sum(r == "user" for r, _ in e.messages)
        n_reply = len(e.replies)
        assert [r for r, _ in got].count("user") == n_user, key
        assert [r for r, _ in got].count("assistant") == n_reply, key
        assert _same_messages(got, e.messages), key
        assert s["message_count"] == n_user + n_reply, key
        assert s["project"] == e.cwds.pop() and not e.cwds, key
        assert s["branch"] == e.branches.pop() and not e.branches, key
        assert abs(_ts(s["started_at"]) - _ts(e.start)) < 1, key
        assert abs(_ts(s["ended_at"]) - _ts(e.end)) < 1, key
    assert (len(exp["long"].messages), len(exp["tiny"].messages)) == (48, 5)  # the data is the data


def test_split_assistant_lines_are_one_message(indexed):
    env, exp, _ = indexed
    e = exp["long"]
    assert e.split_lines[SPLIT_ID] >= 3  # the fixture really splits this reply
    text = e.replies[SPLIT_ID]
    msgs = env.json("show", e.session_id)["session"]["messages"]
    same = [m for m in msgs if _same_text(_norm(m["text"]), text)]
    assert len(same) == 1 and same[0]["role"] == "assistant"
    # and none of its tool-only lines became a message of its own
    assert not any(m["text"].strip() == "" for m in msgs)


def test_titles(indexed):
    env, exp, _ = indexed
    short = env.json("show", exp["short"].session_id)["session"]
    assert exp["short"].summary and short["title"] == exp["short"].summary
    tiny = env.json("show", exp["tiny"].session_id)["session"]["title"]
    assert tiny.rstrip(".") == "Lately, I've noticed you being very tentative"
    long = env.json("show", exp["long"].session_id)["session"]["title"]
    # "please read the research and the resources directories. then talk to me about the idea"
    assert (long[:1].lower() + long[1:]).rstrip(".") == \
        "read the research and the resources directories"


def test_file_changes_match_the_tool_calls(indexed):
    env, exp, _ = indexed
    e = exp["long"]
    assert len(e.changes) == 31
    shown = env.json("show", e.session_id)["session"]["files_changed"]
    assert [(c["path"], c["tool"]) for c in shown] == [(p, t) for p, t, _x in e.changes]
    assert [_norm(c["explanation"] or "") for c in shown] == [_norm(x) for _p, _t, x in e.changes]
    (entry,) = env.json("files", "--limit", "1000")["sessions"]  # (one per session)
    assert sum(f["edits"] for f in entry["files"]) == len(e.changes)
    assert entry["session_id"] == e.session_id
    ts = [f["path"] for s in env.json("files", "src/computer-use/")["sessions"]
          for f in s["files"]]
    assert sorted(ts) == sorted({p for p, _t, _x in e.changes if "src/computer-use/" in p})
    # the language tags follow the changed code files
    tags = set(env.json("show", e.session_id)["session"]["tags"])
    assert {"typescript", "shell"} <= tags and "python" not in tags
    for key in ("tiny", "short"):
        assert env.json("show", exp[key].session_id)["session"]["files_changed"] == []


@pytest.mark.parametrize("key, word", [("tiny", "proactiveness"), ("short", "dataclass"),
                                       ("long", "langgraph")])
def test_a_rare_word_finds_its_session_first(indexed, key, word):
    env, exp, _ = indexed
    # the word is in this fixture's messages and no other's (checked on the raw data)
    holders = [k for k in ("tiny", "short", "long") if word in exp[k].text_of_messages()]
    assert holders == [key]
    res = env.search(word)
    assert res and res[0]["session_id"] == exp[key].session_id
    assert word in res[0]["snippet"].lower()


def test_words_only_inside_tool_results_are_not_found(indexed):
    env, exp, _ = indexed
    raw = json.dumps(exp["long"].lines).lower()
    word = "malicious"  # in a <system-reminder> inside a Read result
    assert word in raw
    assert not any(word in exp[k].text_of_messages() for k in ("tiny", "short", "long"))
    assert env.search(word) == []


def test_indexing_the_fixtures_gives_no_warnings(indexed):
    env, exp, report = indexed
    assert report["files_seen"] == 4 and report["files_read"] == 4
    assert report["warnings"] == []
    log = env.data / "prima-memory.log"
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    assert [ln for ln in lines if " WARNING " in ln or " ERROR " in ln] == []
    status = env.json("status")
    assert status["warnings"] == []


def test_medium_fixture_has_no_messages(indexed):
    """medium-conversation.jsonl holds only file-history-snapshot lines and a summary line."""
    env, exp, _ = indexed
    e = exp["medium"]
    assert {o["type"] for o in e.lines} == {"file-history-snapshot", "summary"}
    s = env.json("show", e.session_id)["session"]
    assert s["messages"] == [] and s["files_changed"] == []
    assert s["title"] == e.summary
    recent = {r["session_id"] for r in env.json("recent")["sessions"]}
    assert recent == {exp[k].session_id for k in ("tiny", "short", "long")}


def test_only_the_substantial_fixture_gets_an_extract(indexed):
    env, exp, report = indexed
    e = exp["long"]  # 14 hours, 20+ files: substantial; tiny and short are not
    name = time.strftime("%Y-%m-%d-%H%M", time.localtime(_ts(e.start))) + "-session-extract.md"
    root = env.data / "extracts"
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*.md")) == \
        [f"example-project/{name}"]
    text = (root / "example-project" / name).read_text(encoding="utf-8")
    assert e.session_id in text
