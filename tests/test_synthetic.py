"""The synthetic Claude Code history: deterministic, laid out like ~/.claude/projects, line shapes as in real files."""
from __future__ import annotations

import base64
import collections
import fnmatch
import json
import os
import re
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from bench.demo_sample import SEED, SESSIONS, TARGET_BYTES
from bench.synthetic import generate_history
from conftest import REPO
from prima_memory.demo import SAMPLE, copy_sample

NOW = 1_790_000_000.0
WS = "/home/dev/work/shop api"
ENCODED = "-home-dev-work-shop-api"
COMMON = ("parentUuid", "isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch", "type", "uuid", "timestamp")
TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def _ts(s: str) -> float:
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def _tree(root: Path) -> dict[str, tuple[bytes, float]]:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime) for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    cfg = tmp_path_factory.mktemp("claude")
    res = generate_history(cfg, WS, 60, now=NOW, images=0)
    return cfg, res


def test_deterministic(tmp_path):
    a = generate_history(tmp_path / "a", WS, 8, seed=3, now=NOW)
    b = generate_history(tmp_path / "b", WS, 8, seed=3, now=NOW)
    assert a["sessions"] == b["sessions"] and a["bytes"] == b["bytes"] and a["files"] == b["files"]
    ta, tb = _tree(Path(a["project_dir"])), _tree(Path(b["project_dir"]))
    assert ta.keys() == tb.keys()
    for k in ta:
        assert ta[k][0] == tb[k][0], k
        assert abs(ta[k][1] - tb[k][1]) < 1e-3, k
    c = generate_history(tmp_path / "c", WS, 8, seed=4, now=NOW)
    assert c["sessions"] != a["sessions"]


def test_layout(history):
    cfg, res = history
    proj = Path(res["project_dir"])
    assert proj == cfg / "projects" / ENCODED
    assert len(res["sessions"]) == 60 and len(set(res["sessions"])) == 60
    mains = sorted(p.stem for p in proj.glob("*.jsonl") if not p.name.startswith("agent-"))
    assert mains == sorted(res["sessions"])
    flat = list(proj.glob("agent-*.jsonl"))
    assert flat and all(re.fullmatch(r"agent-[0-9a-f]{8}\.jsonl", p.name) for p in flat)
    nested = list(proj.glob("*/subagents/agent-*.jsonl"))
    assert nested
    for p in nested:
        assert p.parent.parent.name in res["sessions"]
        meta = json.loads(p.with_name(p.stem + ".meta.json").read_text())
        assert set(meta) == {"agentType", "description", "toolUseId"}
    files = [p for p in proj.rglob("*") if p.is_file()]
    assert res["files"] == len(files)
    assert res["bytes"] == sum(p.stat().st_size for p in files)


def test_lines(history):
    _cfg, res = history
    proj = Path(res["project_dir"])
    sessions = set(res["sessions"])
    types, tools, markers, secrets = collections.Counter(), collections.Counter(), collections.Counter(), 0
    flags = collections.Counter()
    split_messages = 0
    for path in sorted(proj.rglob("*.jsonl")):
        agent_file = path.name.startswith("agent-")
        text = path.read_text(encoding="utf-8")
        for m in re.findall(r"zqmarker(\d+)", text):
            assert not agent_file
            assert res["sessions"][int(m)] == path.stem
            markers[m] += 1
        secrets += len(re.findall(r"sk-ant-api03-|AKIA[0-9A-Z]{16}|://[\w]+:[\w]+@", text))
        seen, last_ts, pending = set(), 0.0, {}
        msg_req, prev_mid, after_boundary = {}, None, False
        for line in text.splitlines():
            d = json.loads(line)
            t = d["type"]
            types[t] += 1
            if t in ("user", "assistant", "system", "attachment"):
                for f in COMMON:
                    assert f in d, (path.name, f)
                assert d["parentUuid"] is None or d["parentUuid"] in seen
                assert d["uuid"] not in seen
                seen.add(d["uuid"])
                assert TS_RE.match(d["timestamp"])
                ts = _ts(d["timestamp"])
                assert last_ts < ts < NOW
                last_ts = ts
                assert d["cwd"] == WS or d["cwd"].startswith(WS + "/")
                if agent_file:
                    assert d["isSidechain"] is True and d["agentId"] and d["sessionId"] in sessions
                else:
                    assert d["isSidechain"] is False and d["sessionId"] == path.stem
            if t == "assistant":
                msg = d["message"]
                assert len(msg["content"]) == 1 and msg["role"] == "assistant"
                mid = msg["id"]
                if mid in msg_req:  # a reply split over lines: contiguous, same requestId
                    assert prev_mid == mid and msg_req[mid] == d["requestId"]
                    split_messages += 1
                msg_req[mid] = d["requestId"]
                block = msg["content"][0]
                assert block["type"] in ("text", "thinking", "tool_use")
                if block["type"] == "tool_use":
                    tools[block["name"]] += 1
                    pending[block["id"]] = block["name"]
            prev_mid = d["message"]["id"] if t == "assistant" else None
            if t == "user":
                c = d["message"]["content"]
                if after_boundary:
                    assert d.get("isCompactSummary") is True
                    flags["compact"] += 1
                if isinstance(c, list):
                    for b in c:
                        if b.get("type") == "tool_result":
                            assert pending.pop(b["tool_use_id"])
                            assert "toolUseResult" in d
                            flags["error"] += bool(b.get("is_error"))
                            flags["list_result"] += isinstance(b["content"], list)
                c = c if isinstance(c, str) else " ".join(b.get("text", "") for b in c if isinstance(b, dict))
                flags["caveat"] += "<local-command-caveat>" in c and d.get("isMeta") is True
                flags["clear"] += "<command-name>/clear</command-name>" in c
                flags["reminder"] += "<system-reminder>" in c
            after_boundary = t == "system" and d.get("subtype") == "compact_boundary"
            if t == "attachment":
                flags["hook"] += d["attachment"]["type"] == "hook_additional_context"
        assert not pending, path.name
        assert abs(path.stat().st_mtime - last_ts) < 1e-3
    assert sorted(markers) == sorted(str(i) for i in range(60)) and set(markers.values()) == {1}
    assert secrets > 0
    assert split_messages > 0
    for t in ("user", "assistant", "system", "attachment", "summary", "file-history-snapshot", "ai-title", "custom-title"):
        assert types[t], t
    for name in ("Read", "Bash", "Grep", "Glob", "Write", "Edit", "MultiEdit", "TodoWrite"):
        assert tools[name], name
    assert tools["Task"] + tools["Agent"] > 0
    for f in ("compact", "error", "list_result", "caveat", "clear", "reminder", "hook"):
        assert flags[f], f


def test_target_bytes(tmp_path):
    res = generate_history(tmp_path, WS, 20, target_bytes=3_000_000, now=NOW)
    assert 0.85 * 3_000_000 <= res["bytes"] <= 1.15 * 3_000_000


def test_image_and_recent(tmp_path):
    res = generate_history(tmp_path, WS, 5, images=1, now=NOW)
    proj = Path(res["project_dir"])
    images = []
    for p in proj.glob("*.jsonl"):
        for line in p.read_text().splitlines():
            d = json.loads(line)
            if d["type"] == "user" and isinstance(d["message"]["content"], list):
                for b in d["message"]["content"]:
                    if b.get("type") == "image":
                        images.append(b["source"]["data"])
                        assert any(x.get("type") == "text" for x in d["message"]["content"])
    assert len(images) == 1
    assert 2_000_000 <= len(images[0]) <= 5_000_000
    assert base64.b64decode(images[0][:12]).startswith(b"\x89PNG")
    recent = [p for p in proj.glob("*.jsonl") if NOW - p.stat().st_mtime < 7 * 86400]
    assert recent


def test_long_workspace_name(tmp_path):
    ws = "/" + "/".join(["deeply-nested_dir"] * 20)
    res = generate_history(tmp_path, ws, 1, now=NOW)
    name = Path(res["project_dir"]).name
    assert name.startswith(re.sub(r"[^A-Za-z0-9]", "-", ws)[:200] + "-")
    assert len(name) < 220
    assert os.path.exists(Path(res["project_dir"]) / f"{res['sessions'][0]}.jsonl")


# -- the demo's packaged sample (prima_memory/sample, made by bench/demo_sample.py) -------------

def test_the_demo_sample_copied_anywhere_is_what_the_generator_makes_there(tmp_path):
    """Copied for another workspace at another moment, the packaged sample is byte for byte,
    file times included, what the generator writes for them: it is the generator's, and the
    copy moves the workspace path (JSON-escaped) and every time correctly."""
    ws = str(tmp_path / 'a "quoted" w\u00f6rk\\space' / "Demo Project")
    now = time.time() + 12_345.678
    got = Path(copy_sample(str(tmp_path / "copy"), ws, now=now))
    made = generate_history(tmp_path / "made", ws, SESSIONS, seed=SEED, target_bytes=TARGET_BYTES,
                            now=now)
    assert got.relative_to(tmp_path / "copy") == Path(made["project_dir"]).relative_to(tmp_path / "made")
    a, b = _tree(got), _tree(Path(made["project_dir"]))
    assert a.keys() == b.keys() and len(a) > SESSIONS
    for k in a:
        assert a[k][0] == b[k][0], k
        assert abs(a[k][1] - b[k][1]) < 1e-3, k
    assert now - 7 * 86400 < max(m for _data, m in a.values()) < now  # the newest reads as recent
    assert not list(got.parent.glob("*.partial-*"))


def test_the_demo_sample_is_small_and_packaged_and_the_generator_is_not():
    assert 50_000 < SAMPLE.stat().st_size < 300_000  # every install and plugin folder carries it
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    globs = json.loads(re.search(r"^prima_memory = (\[.*\])$", pyproject, re.M)[1])
    rel = SAMPLE.relative_to(REPO / "prima_memory").as_posix()
    assert any(fnmatch.fnmatchcase(rel, g) for g in globs), "package-data must list the sample"
    assert "py.typed" in globs and (REPO / "prima_memory" / "py.typed").is_file()
    assert not (REPO / "prima_memory" / "synthetic.py").exists(), "the generator is bench/'s"
