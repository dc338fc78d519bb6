"""The sources besides Claude Code, as a user meets them through the CLI: Codex (scope by working
folder, read on from its offset), VS Code Copilot Chat (this workspace's chats, every
workspace's by choice; a snapshot replaced), the shared project log (author in the results);
`status` lists every source; no source file is ever written; hooks never scan them."""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from prima_memory.memory import OTHERS

DAY = 86400
OLD = time.time() - 10 * DAY


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(ts))


def _rollout(env, name: str, cwd: str | None, prompt: str, reply: str, ts: float = OLD) -> Path:
    folder = Path(env.env["CODEX_HOME"]) / "sessions" / "2026" / "03" / "01"
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"id": name, "timestamp": _iso(ts)}
    if cwd:
        meta["cwd"] = cwd
    lines = [{"timestamp": _iso(ts), "type": "session_meta", "payload": meta},
             {"timestamp": _iso(ts + 1), "type": "response_item", "payload": {
                 "type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": prompt}]}},
             {"timestamp": _iso(ts + 2), "type": "response_item", "payload": {
                 "type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": reply}]}}]
    p = folder / f"rollout-2026-03-01T10-00-00-{name}.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return p


def _chat(env, folder_uri: str, sid: str, prompt: str, reply: str) -> Path:
    space = Path(env.env["PRIMA_VSCODE_USER_DIRS"]) / "workspaceStorage" / f"ws-{sid}"
    (space / "chatSessions").mkdir(parents=True, exist_ok=True)
    (space / "workspace.json").write_text(json.dumps({"folder": folder_uri}))
    p = space / "chatSessions" / f"{sid}.json"
    p.write_text(json.dumps({"version": 3, "sessionId": sid, "responderUsername": "GitHub Copilot",
                             "creationDate": int(OLD * 1000), "requests": [
                                 {"requestId": "r1", "timestamp": int(OLD * 1000),
                                  "message": {"text": prompt}, "response": [{"value": reply}]}]}))
    return p


def _log(env, name: str, text: str) -> Path:
    p = env.ws / ".claude" / "state" / "sessions" / "P001" / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def _by_id(results) -> dict:
    return {r["session_id"]: r for r in results}


def test_codex_sessions_are_scoped_to_the_workspace(env):
    _rollout(env, "cx-here", str(env.ws), "Tune the quokkaqueue workers", "Raised them to 8.")
    _rollout(env, "cx-sub", str(env.ws / "services" / "api"), "quokkaqueue in the api",
             "Done there.")
    _rollout(env, "cx-none", None, "quokkaqueue from an old rollout", "Fine.")
    _rollout(env, "cx-else", "/somewhere/else", "quokkaqueue elsewhere", "Not ours.")
    found = _by_id(env.search("quokkaqueue", "--mode", "keyword"))
    assert set(found) == {"cx-here", "cx-sub", "cx-none"}, found.keys()
    assert {r["label"] for r in found.values()} == {"[Codex]"}
    assert found["cx-here"]["source"] == "codex" and found["cx-here"]["project"] == str(env.ws)
    assert found["cx-here"]["title"] == "Tune the quokkaqueue workers"
    # resumed from the folder it ran in (where it is a folder: see tests/test_hints.py)
    assert found["cx-here"]["resume"] == f"cd '{env.ws}' && codex resume cx-here"


def test_a_resumed_codex_rollout_is_read_on(env):
    p = _rollout(env, "cx-grow", str(env.ws), "Start the zebrafish import", "Started.")
    assert list(_by_id(env.search("zebrafish", "--mode", "keyword"))) == ["cx-grow"]
    with open(p, "a") as f:  # Codex appends to the same file on resume
        f.write(json.dumps({"timestamp": _iso(OLD + 60), "type": "response_item", "payload": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "now the narwhalword part"}]}}) + "\n")
    hit = env.search("narwhalword", "--mode", "keyword")
    assert [r["session_id"] for r in hit] == ["cx-grow"]
    shown = env.json("show", "cx-grow")["session"]
    assert [m["text"] for m in shown["messages"]] == ["Start the zebrafish import", "Started.",
                                                      "now the narwhalword part"]


def test_copilot_chats_of_every_workspace_and_an_edit_in_place(env):
    env.env["PRIMA_VSCODE_ALL_WORKSPACES"] = "1"  # the seed's rule: every VS Code workspace
    p = _chat(env, "file:///home/u/other%20project", "chat-1", "How do I debounce the ocelotinput?",
              "Wrap the handler in a debounce of 300 ms.")
    found = _by_id(env.search("ocelotinput", "--mode", "keyword"))
    assert list(found) == ["chat-1"]
    assert found["chat-1"]["label"] == "[VS Code]"
    assert found["chat-1"]["project"] == "/home/u/other project"
    # VS Code rewrites the file on every save: the session is replaced, nothing stale stays
    doc = json.loads(p.read_text())
    doc["requests"][0]["message"]["text"] = "How do I throttle the lynxinput?"
    p.write_text(json.dumps(doc))
    assert list(_by_id(env.search("lynxinput", "--mode", "keyword"))) == ["chat-1"]
    assert env.search("ocelotinput", "--mode", "keyword") == []
    shown = env.json("show", "chat-1")["session"]
    assert [m["text"] for m in shown["messages"]] == ["How do I throttle the lynxinput?",
                                                      "Wrap the handler in a debounce of 300 ms."]
    p.unlink()  # a chat deleted in VS Code goes from the index
    assert env.search("lynxinput", "--mode", "keyword") == []


def test_copilot_chats_are_this_workspaces_by_default(env):
    """Chats of this workspace (by workspace.json, a folder inside it included) and those whose
    workspace is unknown; PRIMA_VSCODE_ALL_WORKSPACES=1 takes every workspace's (the seed's
    rule), and switching either way takes effect at the next look, nothing else changed."""
    storage = Path(env.env["PRIMA_VSCODE_USER_DIRS"]) / "workspaceStorage"
    _chat(env, env.ws.as_uri(), "chat-here", "Cache the quetzalfeed here", "ok")
    _chat(env, (env.ws / "web app").as_uri(), "chat-sub", "quetzalfeed in a subfolder", "ok")
    _chat(env, "file:///home/u/other%20project", "chat-else", "quetzalfeed elsewhere", "ok")
    _chat(env, env.ws.parent.as_uri(), "chat-parent", "quetzalfeed one folder up", "ok")
    _chat(env, "vscode-remote://ssh-remote%2Bbox/srv/app", "chat-remote", "quetzalfeed on a box",
          "ok")
    _chat(env, "file:///u", "chat-none", "quetzalfeed, no workspace.json", "ok")
    (storage / "ws-chat-none" / "workspace.json").unlink()
    _chat(env, "file:///u", "chat-blank", "quetzalfeed, a workspace.json half written", "ok")
    (storage / "ws-chat-blank" / "workspace.json").write_text("{ half written")
    empty = Path(env.env["PRIMA_VSCODE_USER_DIRS"]) / "globalStorage" / "emptyWindowChatSessions"
    empty.mkdir(parents=True)
    (empty / "chat-empty.json").write_text(
        (storage / "ws-chat-here" / "chatSessions" / "chat-here.json").read_text()
        .replace("chat-here", "chat-empty").replace("Cache the quetzalfeed here",
                                                    "quetzalfeed in an empty window"))
    theirs = {"chat-else", "chat-parent", "chat-remote"}
    mine = {"chat-here", "chat-sub", "chat-none", "chat-blank", "chat-empty"}

    def seen() -> dict[str, set]:
        recent = {s["session_id"] for s in env.json("recent", "-n", "50")["sessions"]}
        digest = json.dumps(env.json("digest", "--since", "400d"))
        return {"search": set(_by_id(env.search("quetzalfeed", "--mode", "keyword"))),
                "recent": recent & (mine | theirs),
                "digest": {s for s in mine | theirs if f'"{s}"' in digest}}

    env.env["PRIMA_VSCODE_ALL_WORKSPACES"] = "1"  # an index made under the seed's rule
    assert seen() == dict.fromkeys(("search", "recent", "digest"), mine | theirs)
    del env.env["PRIMA_VSCODE_ALL_WORKSPACES"]  # the default: theirs go, nothing else changed
    assert seen() == dict.fromkeys(("search", "recent", "digest"), mine)
    assert _by_id(env.search("quetzalfeed"))["chat-sub"]["project"] == str(env.ws / "web app")
    vscode = {s["source"]: s for s in env.json("status")["sources"]}["copilot-chat"]
    assert (vscode["sessions"], vscode["files"]) == (len(mine), len(mine))
    env.env["PRIMA_VSCODE_ALL_WORKSPACES"] = "yes"
    assert seen()["search"] == mine | theirs


def test_an_edited_snapshot_leaves_no_orphaned_vectors(env):
    p = _chat(env, env.ws.as_uri(), "chat-v", "first wording of the pelicanq", "an answer")
    env.json("embed")
    before = env.json("status")["semantic"]
    doc = json.loads(p.read_text())
    doc["requests"][0]["response"] = [{"value": "a different answer entirely"}]
    p.write_text(json.dumps(doc))
    env.json("embed")
    after = env.json("status")["semantic"]
    assert after["pending"] == 0 and after["embedded"] == before["embedded"]
    import apsw
    db = apsw.Connection(str(env.data / "index.db"))
    linked = db.execute("SELECT count(*) FROM embedded e LEFT JOIN messages m ON m.id = e.exchange "
                        "WHERE m.id IS NULL").fetchone()[0]
    assert linked == 0, "no vectors linked to a message that is gone"


def test_shared_log_entries_carry_their_author(env):
    _log(env, "2026-11-20.md", "---\nproject: P001\nauthor: Alice\ntime: 2026-11-20T10:00:00Z\n"
                               "---\n# Chose the capybarastore\nWe picked it for its replication.")
    _log(env, "_template.md", "**Author:** nobody\ncapybarastore template")
    got = env.search("capybarastore", "--mode", "keyword")
    assert len(got) == 1
    assert (got[0]["label"], got[0]["author"], got[0]["source"]) == \
        ("[shared log · Alice]", "Alice", "shared-log")
    assert got[0]["title"] == "Chose the capybarastore"


def test_status_lists_every_source(env):
    _rollout(env, "cx-s", str(env.ws), "status check", "ok")
    _rollout(env, "cx-o", "/another/folder", "status check", "ok")
    _log(env, "a.md", "**Author:** Bo\nan entry")
    got = env.json("index")
    assert (got["files_seen"], got["files_read"], got["sessions_updated"]) == (3, 3, 2), \
        "the report counts every source"
    sources = {s["source"]: s for s in env.json("status")["sources"]}
    assert list(sources) == ["claude-code", "codex", "copilot-chat", "gemini-cli", "cursor",
                             "cursor-agent", "opencode", "aider", "cline", "roo-code",
                             "kilo-code", "copilot-cli", "shared-log", "session-history"]
    codex = sources["codex"]
    assert codex["found"] and (codex["sessions"], codex["files"], codex["skipped"]) == (1, 2, 1)
    assert codex["absent"] == [str(Path(env.env["CODEX_HOME"]) / "archived_sessions")]
    assert sources["shared-log"]["sessions"] == 1 and not sources["copilot-chat"]["found"]
    assert codex["label"] == "[Codex]"
    claude = sources["claude-code"]
    assert not claude["found"] and claude["locations"] == [str(env.project_dir)], \
        "where it would look"
    text = env.run("status").stdout
    assert "[Codex] (found)" in text and "VS Code" in next(
        ln for ln in text.splitlines() if ln.startswith("absent "))  # (the absent, one line)
    assert "archived_sessions (absent): 1 session (0 archived), 2 files, 1 of other folders " \
           "skipped" in text


def test_a_record_type_a_source_never_showed_is_a_warning_naming_its_file_once(env):
    # (issue #41) format drift: the first file of a source to show a record type this version
    # does not read is named in a warning; another file showing it is not warned about again
    first = _rollout(env, "cx-d1", str(env.ws), "drift check", "ok")
    with first.open("a") as f:
        f.write(json.dumps({"timestamp": _iso(OLD + 3), "type": "hologram", "payload": {}}) + "\n")
    env.json("index")
    second = _rollout(env, "cx-d2", str(env.ws), "drift again", "ok")
    with second.open("a") as f:
        f.write(json.dumps({"timestamp": _iso(OLD + 3), "type": "hologram", "payload": {}}) + "\n")
    env.json("index")
    log = (env.data / "prima-memory.log").read_text()
    warned = [ln for ln in log.splitlines() if "WARNING" in ln and "hologram" in ln]
    assert len(warned) == 1 and str(first) in warned[0], log
    assert any("INFO" in ln and str(second) in ln and "hologram" in ln for ln in log.splitlines())
    codex = next(s for s in env.json("status")["sources"] if s["source"] == "codex")
    assert codex["unknown_record_types"] == [{"type": "hologram", "files": 2}]


def test_a_sessions_page_names_its_own_agent_as_the_one_who_answers(env):
    _rollout(env, "cx-who", str(env.ws), "who answered this", "Codex did.")
    env.json("index")
    text = env.run("show", "cx-who", "--range", "0:").stdout
    assert "] codex " in text and "] claude " not in text, text


def _sums(paths) -> dict:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def test_no_source_file_is_ever_written(env):
    files = [_rollout(env, "cx-w", str(env.ws), "checksum words", "reply"),
             _chat(env, env.ws.as_uri(), "chat-w", "checksum words", "reply"),
             _log(env, "w.md", "**Author:** C\nchecksum words")]
    before = _sums(files)
    env.json("index")
    env.json("search", "checksum")
    env.json("embed")
    env.json("index", "--rebuild")
    assert _sums(files) == before
    assert {r["source"] for r in env.search("checksum", "--mode", "keyword")} == {
        "codex", "copilot-chat", "shared-log"}, "a rebuild reads every source again"


def test_hooks_never_scan_the_other_sources(env):
    _rollout(env, "cx-h", str(env.ws), "hookless words", "r")
    _chat(env, env.ws.as_uri(), "chat-h", "hookless words", "r")
    t = env.transcript("eeee0000-0000-4000-8000-000000000001", start=OLD)
    t.exchange("a claude session", "its reply")
    for event, extra in (("session-start", {"source": "startup"}), ("stop", {})):
        payload = {"session_id": "eeee0000-0000-4000-8000-000000000001", "cwd": str(env.ws),
                   "hook_event_name": event, "transcript_path": str(t.path), **extra}
        env.run("hook", event, input=json.dumps(payload))
    sources = {s["source"]: s for s in env.json("status")["sources"]}
    assert sources["claude-code"]["sessions"] == 1
    assert sources["codex"]["files"] == 0 and sources["copilot-chat"]["files"] == 0


def test_session_history_answers_only_when_the_conversations_find_nothing(env):
    state = env.ws / ".claude" / "state"
    (state / "history").mkdir(parents=True)
    month = time.strftime("%Y-%m")
    (state / "state.json").write_text(json.dumps({"sessionHistory": [
        {"date": f"{month}-01", "time": "09:00", "summary": "Planned the tapirmigration"},
        # not rotated yet: found whatever its date (issue #20)
        {"date": "2020-02-28", "summary": "Sketched the tapirmigration rollback"}]}))
    (state / "history" / "2020-01.json").write_text(json.dumps(
        [{"date": "2020-01-05", "summary": "Old tapirmigration notes"}]))
    got = env.json("search", "tapirmigration")
    assert got["results"] == []
    assert [e["summary"] for e in got["history"]] == ["Planned the tapirmigration",
                                                      "Sketched the tapirmigration rollback"]
    assert got["history"][0]["label"] == "Session History Summaries"
    assert any("Session History Summaries" in w for w in got["warnings"])
    text = env.run("search", "tapirmigration").stdout
    assert "Session History Summaries" in text and "Planned the tapirmigration" in text
    # a question, as typed into /recall: its filler need not be in the summary either
    got = env.json("search", "when did we plan the tapirmigration?")
    assert [e["summary"] for e in got["history"]] == ["Planned the tapirmigration"]
    recall = env.run("recall", "tapirmigration").stdout
    assert "Session History Summaries, " in recall and "No session matches" not in recall
    assert "history" not in env.json("search", "tapirmigration", "--source", "codex"), \
        "a filter the summaries cannot honour: none shown"
    # a conversation that matches: the history is not read
    _rollout(env, "cx-tapir", str(env.ws), "tapirmigration for real", "ok")
    got = env.json("search", "tapirmigration", "--mode", "keyword")
    assert [r["session_id"] for r in got["results"]] == ["cx-tapir"] and "history" not in got


def test_status_shows_each_sources_warnings(env):
    home = Path(env.env["CODEX_HOME"])
    (home / "archived_sessions").mkdir(parents=True)  # an empty folder
    p = _rollout(env, "cx-odd", str(env.ws), "odd records", "ok")
    with open(p, "a") as f:
        for kind in ("brand_new_kind", "brand_new_kind", "another_kind"):
            f.write(json.dumps({"timestamp": _iso(OLD), "type": kind, "payload": {}}) + "\n")
        f.write("this line is not JSON\n")
    env.json("index")
    codex = {s["source"]: s for s in env.json("status")["sources"]}["codex"]
    joined = "\n".join(codex["warnings"])
    assert "archived_sessions: empty folder" in joined
    assert "invalid JSON" in joined
    # record types of a newer Codex: counted, and warned about once in the log (#41), not
    # among the source's own warnings (its files' problems)
    assert "another_kind" not in joined
    assert codex["unknown_record_types"] == [{"type": "another_kind", "files": 1},
                                             {"type": "brand_new_kind", "files": 1}]
    log = (env.data / "prima-memory.log").read_text()
    assert "archived_sessions: empty folder" in log
    assert len([ln for ln in log.splitlines() if "brand_new_kind" in ln]) == 1
    assert [ln for ln in log.splitlines() if "brand_new_kind" in ln and " WARNING " in ln]
    assert "warning: " in env.run("status").stdout


def test_nothing_changed_takes_no_lock_and_reads_nothing(env):
    """Every search looks at the other sources; unchanged (a foreign rollout growing included),
    they cost a look, not a read or the writer lock."""
    import fcntl
    p = _rollout(env, "cx-else2", "/elsewhere", "foreign words", "r")
    _rollout(env, "cx-mine", str(env.ws), "lockfree words", "r")
    env.json("index")
    with open(p, "a") as f:
        f.write(json.dumps({"timestamp": _iso(OLD), "type": "event_msg",
                            "payload": {"type": "token_count"}}) + "\n")
    env.json("index", env={"PRIMA_RACY_MS": "0"})  # notes the foreign file's growth
    with open(env.data / "index.lock", "a") as lock:  # another writer holds the lock
        fcntl.flock(lock, fcntl.LOCK_EX)
        got = env.json("search", "lockfree", "--mode", "keyword", env={"PRIMA_RACY_MS": "0"})
    assert [r["session_id"] for r in got["results"]] == ["cx-mine"]
    assert not any("updating" in w for w in got["warnings"]), got["warnings"]


def test_a_substantial_codex_session_gets_its_extract(env):
    p = _rollout(env, "cx-long", str(env.ws), "Plan the walrusmigration", "Planning it.")
    with open(p, "a") as f:
        for i in range(12):
            for role, kind, text in (("user", "input_text", f"step {i} of the walrusmigration"),
                                     ("assistant", "output_text", f"Step {i} done: " + "ok " * 40)):
                f.write(json.dumps({"timestamp": _iso(OLD + 600 * i), "type": "response_item",
                                    "payload": {"type": "message", "role": role,
                                                "content": [{"type": kind, "text": text}]}}) + "\n")
    env.json("index")
    written = [x for x in (env.data / "extracts").rglob("*-session-extract.md")
               if "walrusmigration" in x.read_text()]
    assert len(written) == 1, list((env.data / "extracts").rglob("*"))
    text = written[0].read_text()
    assert "cx-long" in text and "## [Codex] Plan the walrusmigration" in text
    assert "## Codex's last substantial replies" in text and "**Codex:**" in text
    assert "Claude" not in text, "another agent's session is not said to be Claude's"


def test_the_briefing_labels_another_agents_session(env):
    _rollout(env, "cx-brief", str(env.ws), "Codex work on the manateeparser", "ok",
             ts=time.time() - 60)
    env.json("index")
    t = env.transcript("ffff0000-0000-4000-8000-000000000001", start=time.time() - 3600)
    t.exchange("a claude session", "its reply")
    env.json("index")
    out = env.run("hook", "session-start", input=json.dumps({
        "session_id": "ffff0000-0000-4000-8000-000000000002", "cwd": str(env.ws),
        "hook_event_name": "SessionStart", "source": "startup"})).stdout
    line = next(ln for ln in out.splitlines() if "manateeparser" in ln)
    assert "[Codex]" in line, out
    recent = env.run("recent").stdout.splitlines()  # `recent` labels it the same way
    assert "[Codex] Codex work on the manateeparser" in recent[0], recent
    assert "2 messages, 0 files changed" in recent[1]
    assert "  [Codex] Codex work on the manateeparser" in env.run("digest").stdout
    claude = next(ln for ln in recent if "A claude session" in ln)
    assert "  A claude session  (main)" in claude, "no label on a Claude Code session"


def test_the_background_embedder_brings_the_other_agents_into_the_next_briefing(env, tmp_path):
    """Nobody runs a command between two Claude Code sessions: the embedder a Stop starts (out of
    the hook's budget) indexes the other sources too, even with no model to embed with."""
    t = env.transcript("ffff0000-0000-4000-8000-000000000003", start=time.time() - 3600)
    t.exchange("a claude session", "its reply")
    env.json("index")
    _rollout(env, "cx-bg", str(env.ws), "Codex fixed the ocelotcache eviction", "ok",
             ts=time.time() - 60)
    got = env.run("embed", "--worker", env={"PRIMA_MODEL": str(tmp_path / "no-model")},
                  check=False)
    assert got.returncode == 1, "no model: the worker fails, after indexing the sources"
    assert {s["source"]: s for s in env.json("status")["sources"]}["codex"]["sessions"] == 1
    out = env.run("hook", "session-start", input=json.dumps({
        "session_id": "ffff0000-0000-4000-8000-000000000004", "cwd": str(env.ws),
        "hook_event_name": "SessionStart", "source": "startup"})).stdout
    assert "[Codex]" in next(ln for ln in out.splitlines() if "ocelotcache" in ln), out


def test_a_look_for_changes_lists_no_folder_yet_misses_no_change(env, monkeypatch):
    """What every search does first (in-process): with nothing changed, a stat of the folders
    the last run listed and of the files it knows, no listing; each kind of change is seen."""
    import os
    from prima_memory.indexer import Indexer
    from prima_memory.memory import Memory
    from prima_memory.sources.registry import EXTRACTS, OTHERS
    for k in ("HOME", "CODEX_HOME", "PRIMA_VSCODE_USER_DIRS", "CLAUDE_CONFIG_DIR"):
        monkeypatch.setenv(k, env.env[k])
    monkeypatch.setenv("PRIMA_RACY_MS", "0")  # folders made a moment ago count as settled
    mine = _rollout(env, "cx-a", str(env.ws), "w", "r")
    chat = _chat(env, env.ws.as_uri(), "chat-a", "w", "r")
    _log(env, "a.md", "**Author:** A\nw")
    extracts = env.ws / ".prima-memory" / "extracts" / "2026-03"
    mem = Memory(str(env.ws))
    mem.update(sources=OTHERS)
    mem.update(sources=EXTRACTS, lock_timeout=1, extracts=False)
    sources = OTHERS + (EXTRACTS,)

    def changed() -> list[str]:
        with monkeypatch.context() as m:
            for fn in ("scandir", "listdir", "walk"):
                m.setattr(os, fn, lambda *a, **k: (_ for _ in ()).throw(AssertionError("listed")))
            return [s.name for s in Indexer(mem.ws, mem.store(), mem.log).sources_changed(sources)]

    assert changed() == []
    vscode = Path(env.env["PRIMA_VSCODE_USER_DIRS"])
    for what, change, source in [
        ("a rollout appended to", lambda: mine.open("a").write("{}\n"), "codex"),
        ("a rollout in a new month", lambda: (mine.parents[1] / "04" / "02").mkdir(parents=True)
         or (mine.parents[1] / "04" / "02" / "rollout-x-cx-b.jsonl").write_text(
            mine.read_text().replace("cx-a", "cx-b")), "codex"),
        ("a rollout deleted", lambda: mine.unlink(), "codex"),
        ("a chat saved by a rename", lambda: chat.with_suffix(".tmp").write_text(
            chat.read_text()) or chat.with_suffix(".tmp").rename(chat), "copilot-chat"),
        ("a first chat of a workspace", lambda: (vscode / "workspaceStorage" / "ws-chat-a" /
                                                 "GitHub.copilot-chat" / "transcripts").mkdir(
            parents=True), "copilot-chat"),
        ("a new workspace", lambda: _chat(env, env.ws.as_uri(), "chat-b", "w", "r"), "copilot-chat"),
        ("a log entry", lambda: _log(env, "b.md", "**Author:** B\nw"), "shared-log"),
        ("a new project's log", lambda: (env.ws / ".claude" / "state" / "sessions" / "P2").mkdir(),
         "shared-log"),
        ("an extract", lambda: extracts.mkdir(parents=True), "extract"),
    ]:
        change()
        assert changed() == [source], what
        mem.update(sources=OTHERS)
        mem.update(sources=EXTRACTS, lock_timeout=1, extracts=False)
        assert changed() == [], what


def test_an_odd_or_unreadable_file_stops_nothing_and_loses_nothing(env):
    """A chat caught mid-write keeps what the index holds of it and is read again once whole;
    a chat of an odd shape, in any workspace of the machine, never breaks a search."""
    good = _chat(env, env.ws.as_uri(), "chat-good", "the capybaraconfig question", "answer")
    assert [r["session_id"] for r in env.search("capybaraconfig", "--mode", "keyword")] == [
        "chat-good"]
    whole = good.read_text()
    good.write_text(whole[:40])  # VS Code writing it
    odd = _chat(env, env.ws.as_uri(), "chat-odd", "the okapiodd question", "answer")
    doc = json.loads(odd.read_text())
    doc["requests"][0]["agent"] = {"extensionId": "github.copilot-chat"}  # a string, not {value}
    doc["requests"].append({"requestId": "r2", "message": {"text": "more okapiodd"},
                            "response": 7, "editedFileEvents": "x"})
    odd.write_text(json.dumps(doc))
    assert [r["session_id"] for r in env.search("capybaraconfig", "--mode", "keyword")] == [
        "chat-good"], "kept while unreadable"
    assert [r["session_id"] for r in env.search("okapiodd", "--mode", "keyword")] == ["chat-odd"]
    copilot = {s["source"]: s for s in env.json("status")["sources"]}["copilot-chat"]
    assert any("chat-good.json: unreadable (ValueError: invalid JSON" in w
               for w in copilot["warnings"]), copilot["warnings"]
    good.write_text(whole.replace("capybaraconfig", "capybaraconfig narwhalnew"))
    assert [r["session_id"] for r in env.search("narwhalnew", "--mode", "keyword")] == [
        "chat-good"], "read again once whole, though no folder changed"
    assert {s["source"]: s for s in env.json("status")["sources"]}["copilot-chat"][
        "warnings"] == []


def test_a_rollout_read_whole_again_is_not_added_twice(env):
    """Codex moves a rollout to archived_sessions/ when the session is archived, and an era-1
    rollout is one JSON document rewritten in place: each read whole replaces the session."""
    p = _rollout(env, "cx-move", str(env.ws), "Plan the quetzalmove", "Reply about platypus.")
    env.json("index")
    archived = Path(env.env["CODEX_HOME"]) / "archived_sessions" / p.name
    archived.parent.mkdir(parents=True)
    p.rename(archived)
    era1 = Path(env.env["CODEX_HOME"]) / "sessions" / "2025" / "04" / "01" / "rollout-e1.json"
    era1.parent.mkdir(parents=True)
    doc = {"session": {"id": "cx-era1", "timestamp": _iso(OLD)}, "items": [
        {"type": "message", "role": "user",
         "content": [{"type": "input_text", "text": "the era one xylophonerun " + "x" * 1200}]},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "First reply."}]}]}
    era1.write_text(json.dumps(doc))
    env.json("index")
    doc["items"].append({"type": "message", "role": "assistant",
                         "content": [{"type": "output_text", "text": "Second reply."}]})
    era1.write_text(json.dumps(doc))  # the same file, rewritten longer
    env.json("index")
    for sid, replies in (("cx-move", ["Reply about platypus."]),
                         ("cx-era1", ["First reply.", "Second reply."])):
        shown = env.json("show", sid)["session"]
        texts = [m["text"] for m in shown["messages"]
                 if m["role"] == "assistant" and not m.get("calls_only")]
        assert texts == replies, (sid, texts)
    assert not env.json("show", "cx-move")["session"]["archived"]
    assert [f["path"] for s in env.json("files")["sessions"] for f in s["files"]] == [], \
        "none recorded twice"


def test_what_a_look_for_changes_cannot_trust_is_listed_again(env, monkeypatch, tmp_path):
    """A folder changed in the last two seconds (a coarse clock may not change it again for a
    file added in the same tick), a folder that could not be listed (fixing its permissions
    changes no mtime) and a source that now looks elsewhere are never taken as unchanged."""
    import os
    from prima_memory.indexer import Indexer
    from prima_memory.memory import Memory
    from prima_memory.sources.registry import CopilotChat, Codex
    for k in ("HOME", "CODEX_HOME", "PRIMA_VSCODE_USER_DIRS", "CLAUDE_CONFIG_DIR"):
        monkeypatch.setenv(k, env.env[k])
    mine = _rollout(env, "cx-r", str(env.ws), "w", "r")
    mem = Memory(str(env.ws))

    def changed(src) -> bool:
        return bool(Indexer(mem.ws, mem.store(), mem.log).sources_changed([src]))

    mem.update(sources=OTHERS)
    assert changed(Codex()), "its day folder changed a moment ago: listed again"
    old = time.time() - 60
    for d in (mine.parent, mine.parents[1], mine.parents[2], mine.parents[3]):
        os.utime(d, (old, old))
    mem.update(sources=OTHERS)
    assert not changed(Codex())

    for odd in ("[]", '"x"', '{"at": 5}'):  # what it noted, in a shape it never writes
        with mem.store().write():
            mem.store().set_meta("folders:codex", odd)
        assert changed(Codex()), odd
    mem.update(sources=OTHERS)
    assert not changed(Codex())

    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "another-codex"))
    assert changed(Codex()), "it looks elsewhere now"
    monkeypatch.setenv("CODEX_HOME", env.env["CODEX_HOME"])
    assert not changed(Codex())

    storage = Path(env.env["PRIMA_VSCODE_USER_DIRS"]) / "workspaceStorage"
    storage.mkdir(parents=True)
    os.utime(storage, (old, old))
    scandir = os.scandir

    def denied(path, *a):  # what a folder without read permission does (even as root)
        if str(path) == str(storage):
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path, *a)
    monkeypatch.setattr(os, "scandir", denied)
    mem.update(sources=OTHERS)
    monkeypatch.setattr(os, "scandir", scandir)  # the permissions fixed: no mtime changes
    assert changed(CopilotChat()), "unlistable: never taken as unchanged"
    mem.update(sources=OTHERS)
    assert not changed(CopilotChat())


def test_a_rollout_of_another_folder_stays_out_when_its_talk_comes_later(env):
    """Codex writes its metadata (and folder) first; the conversation is appended after. The
    later read carries the folder too, so another folder's session is never indexed here."""
    p = _rollout(env, "cx-later", "/another/folder", "w", "r")
    meta = p.read_text().splitlines()[0]
    p.write_text(meta + "\n")
    env.json("index")
    with open(p, "a") as f:
        f.write(json.dumps({"timestamp": _iso(OLD + 5), "type": "response_item", "payload": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "the ibexforeign words"}]}}) + "\n")
    assert env.search("ibexforeign") == []
    codex = {s["source"]: s for s in env.json("status")["sources"]}["codex"]
    assert (codex["sessions"], codex["skipped"]) == (0, 1)
