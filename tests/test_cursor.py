"""Cursor's sessions -> records, in-process (sources/cursor.py): the IDE's chats as rows of its
SQLite databases (the global one, a workspace's, the oldest chat tabs), found by the folder Cursor
records for each, read read-only in one snapshot; the cursor-agent CLI's transcripts (read on as
they grow) and older store.db chats; scope, all projects, hostile input, and the real CLI.

The shapes come from Cursor's own files as public repositories hold them:
- the global database (tables, keys, a chat of 42 bubbles with tool calls): git-ai-project/git-ai
  tests/fixtures/cursor_test.vscdb (commit 2eb435b3, a real database filtered to one chat), read
  in place from ../shared/fixtures/cursor;
- Cursor 3's `composer.composerHeaders` and a chat's `workspaceIdentifier` ({id, uri: {$mid,
  fsPath, external, path, scheme}}, or a multi-root workspace's configPath): git-ai-project/git-ai
  src/commands/checkpoint_agent/presets/cursor.rs (list_workspace_conversation_ids);
- the `composerHeaders` table (composerId, workspaceId, ..., value): the Cursor 3 projection in
  the code search's corpus (COMPOSER_HEADERS_COLUMNS), and a workspace's `composer.composerData`
  allComposers and the legacy `workbench.panel.aichat.view.aichat.chatdata` tabs:
  Dicklesworthstone/franken_agent_detection src/connectors/cursor.rs;
- the CLI's transcripts: git-ai-project/git-ai tests/fixtures/cursor-session-simple.jsonl and
  jazzyalex/agent-sessions Resources/Fixtures/stage0/agents/cursor/*.jsonl (real files, in
  place); its store.db (meta `0` as hex JSON, content-addressed blobs under a protobuf tree):
  jazzyalex/agent-sessions AgentSessions/Cursor/CursorChatMetaReader.swift and the blob walk of
  marcus/sidecar internal/adapter/cursor/adapter.go.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from pathlib import Path

import pytest

from prima_memory.sources import cursor
from prima_memory.sources.cursor import Cursor, CursorAgent

import conftest
from conftest import real_files

FIXTURES = conftest.FIXTURES / "cursor"
SECRET = "sk-ant-api03-" + "Q" * 90
T0 = 1_767_000_000_000  # ms
REAL = "00812842-49fe-4699-afae-bb22cda3f6e1"  # the chat of git-ai's real database


@pytest.fixture
def home(tmp_path, monkeypatch):
    """Cursor's folders and a workspace, all inside tmp_path."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("PRIMA_CURSOR_USER_DIRS", str(tmp_path / "Cursor" / "User"))
    monkeypatch.delenv("CURSOR_CONFIG_DIR", raising=False)
    monkeypatch.setenv("PRIMA_RACY_MS", "0")
    ws = tmp_path / "work" / "my.app"
    (ws / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    return ws


def user(tmp_path) -> Path:
    return tmp_path / "Cursor" / "User"


def kv_db(path: Path, disk: dict | None = None, items: dict | None = None, wal: bool = False,
          headers_table: list | None = None) -> Path:
    """A state.vscdb as Cursor writes it: the schema of git-ai's real file (ItemTable and
    cursorDiskKV, `key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB`), values JSON text."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    if wal:
        con.execute("PRAGMA journal_mode=WAL")
    with con:
        for t in ("ItemTable", "cursorDiskKV"):
            con.execute(f"CREATE TABLE IF NOT EXISTS {t} (key TEXT UNIQUE ON CONFLICT REPLACE,"
                        " value BLOB)")
        put(con, "cursorDiskKV", disk or {})
        put(con, "ItemTable", items or {})
        if headers_table is not None:
            con.execute("CREATE TABLE composerHeaders (composerId TEXT PRIMARY KEY, workspaceId"
                        " TEXT, createdAt INTEGER, lastUpdatedAt INTEGER, isArchived INTEGER,"
                        " isSubagent INTEGER, recency INTEGER, checkpointAt INTEGER, value TEXT,"
                        " subagentTypeName TEXT)")
            con.executemany("INSERT INTO composerHeaders (composerId, workspaceId, value)"
                            " VALUES (?, ?, ?)", headers_table)
    con.close()
    return path


def put(con, table: str, rows: dict) -> None:
    con.executemany(f"INSERT INTO {table} VALUES (?, ?)",
                    [(k, v if isinstance(v, (str, bytes)) else json.dumps(v))
                     for k, v in rows.items()])


def write(db: Path, disk: dict, table: str = "cursorDiskKV") -> None:
    con = sqlite3.connect(db)
    with con:
        put(con, table, disk)
    con.close()


def where(folder) -> dict:
    f = str(folder)
    return {"id": "w-" + hashlib.md5(f.encode()).hexdigest()[:8],
            "uri": {"$mid": 1, "fsPath": f, "external": Path(f).as_uri(), "path": f,
                    "scheme": "file"}}


def chat(cid: str, bubbles: list[dict], name: str = "", t: int = T0, **extra) -> dict:
    """A chat's rows: its record (version 10, as the real one) and a row per bubble."""
    rows: dict = {f"composerData:{cid}": {
        "_v": 10, "composerId": cid, "name": name, "status": "completed", "createdAt": t,
        "lastUpdatedAt": t + 60_000, "text": "", "conversationMap": {},
        "fullConversationHeadersOnly": [{"bubbleId": b["bubbleId"], "type": b["type"]}
                                        for b in bubbles], **extra}}
    for b in bubbles:
        rows[f"bubbleId:{cid}:{b['bubbleId']}"] = {"_v": 3, **b}
    return rows


def headers(*pairs) -> dict:
    """Cursor 3's index of chats: composer.composerHeaders, each with its workspace."""
    return {"composer.composerHeaders": {"allComposers": [
        {"type": "head", "composerId": cid, "name": "", "createdAt": T0, "lastUpdatedAt": T0,
         "unifiedMode": "agent", "workspaceIdentifier": ident} for cid, ident in pairs]}}


def bubble(bid: str, kind: int, text: str = "", minute: int = 0, **extra) -> dict:
    return {"bubbleId": bid, "type": kind, "text": text,
            "createdAt": f"2025-12-29T09:{minute:02d}:00.000Z", **extra}


def tool(name: str, raw: dict, params: dict | None = None, **extra) -> dict:
    """A tool call's toolFormerData as the real database holds it (rawArgs and params: JSON
    texts)."""
    return {"toolFormerData": {"tool": 15, "toolCallId": f"call_{name}", "status": "completed",
                               "name": name, "rawArgs": json.dumps(raw),
                               "params": json.dumps(params or {}), "result": "{}", **extra}}


WORK = [  # one turn with a command and an edit, then a second prompt
    bubble("u1", 1, "Make the build pass", 0),
    bubble("a1", 2, "", 1, thinking={"text": "", "signature": "x"}),
    bubble("a2", 2, "The tests fail on a missing import; I'll check.", 2),
    bubble("a3", 2, "", 3, **tool("run_terminal_cmd", {
        "command": "pytest -q", "is_background": False, "explanation": "Run the tests"})),
    bubble("a4", 2, "I'll add the import to the module.", 4),
    bubble("a5", 2, "", 5, **tool("edit_file", {"target_file": "pkg/mod.py",
                                                "instructions": "add the import"})),
    bubble("a6", 2, "Done: the build passes.", 6),
    bubble("u2", 1, "thanks", 7),
    bubble("a7", 2, "You're welcome.", 8),
]


def read(src, path: str, extra=None):
    got = src.read(path, extra, 0, None)
    return (got[0][0] if got[0] else None), got[1], got[2], got[3]


# -- the IDE: records ---------------------------------------------------------------------------

def test_a_chat_with_its_commands_and_changes(home, tmp_path):
    db = kv_db(user(tmp_path) / "globalStorage" / "state.vscdb",
               chat("c1", WORK, name="Fix the build"), headers(("c1", where(home))))
    src = Cursor()
    [(path, folder)] = src.discover(str(home))
    assert (path, folder) == (f"{db}#c1", str(home))
    d, end, state, problems = read(src, path, folder)
    assert problems == [] and state == {} and end == src.stat(path).st_size
    assert (d.session_id, d.source, d.label, d.cwd) == ("c1", "cursor", "[Cursor]", str(home))
    assert d.custom_title == "Fix the build" and d.first_prompt == "Make the build pass"
    assert [(m.key, m.role, m.text, m.pairs_with) for m in d.messages] == [
        ("u1", "user", "Make the build pass", None),
        ("a2", "assistant", "The tests fail on a missing import; I'll check.", "u1"),
        ("a2", "assistant", "I'll add the import to the module.", "u1"),
        ("a2", "assistant", "Done: the build passes.", "u1"),
        ("u2", "user", "thanks", None), ("a7", "assistant", "You're welcome.", "u2")], \
        "a reply is the turn's texts, under one key (the indexer joins them)"
    [cmd, edit] = d.tool_calls
    assert (cmd.tool, cmd.target, cmd.line, cmd.kind, cmd.call, cmd.message_key) == (
        "run_terminal_cmd", "pytest -q", "Run the tests", "command", "call_run_terminal_cmd",
        "a2")
    assert (edit.tool, edit.target, edit.kind) == ("edit_file", "pkg/mod.py", "path")
    [change] = d.file_changes
    assert (change.path, change.tool, change.message_key) == (
        str(home / "pkg" / "mod.py"), "edit_file", "a2")
    assert change.explanation.endswith("I'll add the import to the module."), \
        "what the agent said before the change"
    assert d.messages[0].ts == 1766998800.0  # (2025-12-29T09:00:00Z)
    assert (d.first_ts, d.last_ts) == (1766998800.0, (T0 + 60_000) / 1000)
    assert src.in_scope(d, str(home)) and not src.in_scope(d, str(tmp_path / "other"))


def test_code_blocks_applied_are_changes_suggested_ones_are_not(home, tmp_path):
    """codeBlockData (the real record's: by file URI, each block with its bubble, status and
    lastAppliedAt): an edit applied is a change of the bubble that made it."""
    blocks = {(home / "a.py").as_uri(): {"k1": {
        "_v": 3, "bubbleId": "a6", "codeblockId": "k1", "status": "accepted",
        "uri": {"$mid": 1, "fsPath": str(home / "a.py"), "scheme": "file"},
        "lastAppliedAt": T0}},
        (home / "b.py").as_uri(): {"k2": {"bubbleId": "a6", "status": "none"}},
        (home / "c.py").as_uri(): {"k3": {"bubbleId": "a6", "status": "rejected",
                                          "lastAppliedAt": T0}}}
    db = kv_db(user(tmp_path) / "globalStorage" / "state.vscdb",
               chat("c1", WORK, codeBlockData=blocks), headers(("c1", where(home))))
    d = read(Cursor(), f"{db}#c1", str(home))[0]
    assert [(c.path, c.tool, c.message_key) for c in d.file_changes] == [
        (str(home / "pkg" / "mod.py"), "edit_file", "a2"), (str(home / "a.py"), "edit", "a2")]
    assert d.file_changes[1].explanation.endswith("Done: the build passes.")


def test_the_real_database_of_git_ai(tmp_path):
    """A real chat (git-ai's fixture), read in place: 2 prompts, 40 agent bubbles (texts,
    thinking, tool calls), an apply_patch accepted (its code block, in codeBlockData too)."""
    db = FIXTURES / "git-ai-cursor_test.vscdb"
    if not db.is_file():
        pytest.skip("../shared/fixtures/cursor is not present")
    before = db.read_bytes()
    problems: list = []
    unk: set = set()
    d, size = cursor._snapshot(str(db), lambda con: cursor._read_global(
        con, REAL, problems, unk, "/Users/svarlamov/projects/git-ai"))
    assert problems == [] and unk == set() and size > 0
    assert d.custom_title == "Retrieve SQLite cursor queries"
    assert d.first_prompt == "Give me the queries used in the cursor sqlite storage db"
    prompts = [m for m in d.messages if m.role == "user"]
    assert len(prompts) == 2 and prompts[1].text.startswith("For the code present")
    replies = {m.key for m in d.messages if m.role == "assistant"}
    assert len(replies) == 2, "one reply a turn"
    assert {c.tool for c in d.tool_calls} == {"codebase_search", "grep", "read_file",
                                              "apply_patch", "read_lints"}
    reads = [c for c in d.tool_calls if c.tool == "read_file"]
    assert reads[0].target.endswith("agent_preset.rs") and reads[0].kind == "path"
    [change] = d.file_changes
    assert change.path == "/Users/svarlamov/projects/git-ai/src/commands/checkpoint_agent/" \
        "agent_preset.rs" and change.tool == "apply_patch"
    assert "clone" in change.explanation, "its reason: what the agent said just before"
    assert d.first_ts == pytest.approx(1759861723.898) and d.last_ts >= 1759863763.312
    assert db.read_bytes() == before, "read, never written"


def test_a_pre_3_workspace_lists_its_chats(home, tmp_path):
    """Before Cursor 3, a workspace's own database lists its chats (their records are global):
    the real chat, listed by a workspace whose workspace.json names this folder."""
    if not (FIXTURES / "git-ai-cursor_test.vscdb").is_file():
        pytest.skip("../shared/fixtures/cursor is not present")
    glob = user(tmp_path) / "globalStorage" / "state.vscdb"
    glob.parent.mkdir(parents=True)
    glob.write_bytes((FIXTURES / "git-ai-cursor_test.vscdb").read_bytes())
    space = user(tmp_path) / "workspaceStorage" / "0a1b2c"
    kv_db(space / "state.vscdb", items={"composer.composerData": {
        "allComposers": [{"type": "head", "composerId": REAL, "name": "x"}],
        "selectedComposerIds": [REAL]}})
    (space / "workspace.json").write_text(json.dumps({"folder": home.as_uri()}))
    other = user(tmp_path) / "workspaceStorage" / "ffff"
    kv_db(other / "state.vscdb", items={"composer.composerData": {"allComposers": []}})
    (other / "workspace.json").write_text(json.dumps({"folder": "file:///elsewhere"}))
    src = Cursor()
    assert src.discover(str(home)) == [(f"{glob}#{REAL}", str(home))]
    assert src.discover("/elsewhere") == []
    d = read(src, f"{glob}#{REAL}", str(home))[0]
    assert len(d.messages) > 5 and d.cwd == str(home)


def test_where_a_chat_belongs(home, tmp_path):
    """Each way Cursor records a chat's folder; a folder inside the workspace is the
    workspace's; another project's chat, or one whose folder is not recorded, is not."""
    sub, other = home / "pkg" / "sub", tmp_path / "work" / "other"
    other.mkdir()
    spaces = user(tmp_path) / "workspaceStorage"
    (spaces / "s-id").mkdir(parents=True)
    (spaces / "s-id" / "workspace.json").write_text(json.dumps({"folder": sub.as_uri()}))
    disk = {}
    for cid in ("own", "by-id", "in-header", "in-table", "multi", "theirs", "nowhere"):
        disk.update(chat(cid, [bubble("u", 1, f"prompt of {cid}")]))
    disk["composerData:own"]["workspaceIdentifier"] = where(home)
    disk["composerData:by-id"]["workspaceIdentifier"] = {"id": "s-id"}
    kv_db(user(tmp_path) / "globalStorage" / "state.vscdb", disk,
          headers(("in-header", where(sub)), ("theirs", where(other))),
          headers_table=[("in-table", "x", json.dumps({"workspaceIdentifier": where(home)})),
                         ("multi", "y", json.dumps({"workspaceIdentifier": {
                             "id": "y", "configPath": {"fsPath": str(home / "all.code-workspace"),
                                                       "scheme": "file"}}}))])
    src = Cursor()
    found = {p.rsplit("#", 1)[1]: f for p, f in src.discover(str(home))}
    assert found == {"own": str(home), "by-id": str(sub), "in-header": str(sub),
                     "in-table": str(home), "multi": str(home)}
    every = {p.rsplit("#", 1)[1]: f for p, f in src.everywhere({})}
    assert every["theirs"] == (str(other),) and "nowhere" not in every
    assert {p.rsplit("#", 1)[1] for p, _f in src.discover(str(other))} == {"theirs"}
    assert src.holds(str(home)) and not src.holds(str(tmp_path / "empty"))


# -- the IDE: changes ---------------------------------------------------------------------------

def test_a_chat_changes_when_its_rows_do_and_one_query_tells_all(home, tmp_path, monkeypatch):
    disk = {}
    for n in range(200):
        disk.update(chat(f"c{n}", [bubble("u", 1, f"prompt {n}")]))
    db = kv_db(user(tmp_path) / "globalStorage" / "state.vscdb", disk,
               headers(*[(f"c{n}", where(home)) for n in range(200)]))
    src = Cursor()
    found = src.discover(str(home))
    assert len(found) == 200
    opened = []
    real = cursor._snapshot
    monkeypatch.setattr(cursor, "_snapshot", lambda db, run: opened.append(db) or real(db, run))
    stats = {p: src.stat(p) for p, _f in found}
    assert opened == [], "the listing's own query told every chat's stat"
    write(db, {"bubbleId:c7:u": {"type": 1, "bubbleId": "u", "text": "prompt 7, edited"}})
    again = {p: src.stat(p) for p, _f in found}
    assert len(opened) == 1, "one query for all 200 chats, once the database changed"
    changed = [p for p in stats if (stats[p].st_size, stats[p].st_mtime_ns)
               != (again[p].st_size, again[p].st_mtime_ns)]
    assert changed == [f"{db}#c7"], "a bubble rewritten changes its chat, and no other"
    d, end, _s, _p = read(src, f"{db}#c7", str(home))
    assert end == again[f"{db}#c7"].st_size and d.messages[0].text == "prompt 7, edited"
    write(db, {"composerData:c8": dict(disk["composerData:c8"], lastUpdatedAt=T0 + 999_000)})
    assert src.stat(f"{db}#c8").st_mtime_ns == (T0 + 999_000) * 1_000_000
    with pytest.raises(FileNotFoundError):
        src.stat(f"{db}#nope")


def test_a_live_database_in_wal_mode_is_read_as_committed(home, tmp_path):
    """Cursor keeps its databases in WAL mode and writes while the chat goes on: a read takes
    what was committed, never waits for the writer and never blocks it."""
    db = kv_db(user(tmp_path) / "globalStorage" / "state.vscdb",
               chat("c1", WORK[:3]), headers(("c1", where(home))), wal=True)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO cursorDiskKV VALUES ('bubbleId:c1:a2', ?)",
                   (json.dumps(bubble("a2", 2, "not yet committed")),))
    d = read(Cursor(), f"{db}#c1", str(home))[0]
    assert "not yet committed" not in {m.text for m in d.messages}
    writer.execute("COMMIT")
    d = read(Cursor(), f"{db}#c1", str(home))[0]
    assert "not yet committed" in {m.text for m in d.messages}
    writer.close()


def test_a_locked_database_is_an_oserror_and_never_written(home, tmp_path, monkeypatch):
    monkeypatch.setattr(cursor, "BUSY_SECONDS", 0.05)
    db = kv_db(user(tmp_path) / "globalStorage" / "state.vscdb",
               chat("c1", WORK), headers(("c1", where(home))))
    src = Cursor()
    before = (db.read_bytes(), db.stat().st_mtime_ns, sorted(os.listdir(db.parent)))
    read(src, f"{db}#c1", str(home))
    assert (db.read_bytes(), db.stat().st_mtime_ns, sorted(os.listdir(db.parent))) == before
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # (a rollback-journal database, locked by a writer)
    try:
        with pytest.raises(OSError, match="busy|locked"):
            read(src, f"{db}#c1", str(home))
    finally:
        holder.execute("ROLLBACK")
        holder.close()


# -- the IDE: older formats ---------------------------------------------------------------------

def test_chats_a_workspace_holds_itself(home, tmp_path):
    """The oldest chats (aichat tabs: "user"/"ai" bubbles) and a chat inline in an older list,
    in the workspace's own database; no global database at all."""
    space = user(tmp_path) / "workspaceStorage" / "old"
    kv_db(space / "state.vscdb", items={
        "workbench.panel.aichat.view.aichat.chatdata": {"tabs": [
            {"tabId": "t1", "chatTitle": "Retry logic", "lastSendTime": T0, "bubbles": [
                {"type": "user", "text": "how do I add retries?", "id": "x1"},
                {"type": "ai", "text": "Use exponential backoff.", "id": "x2"}]}]},
        "composer.composerData": {"allComposers": [
            {"composerId": "inl", "name": "inline", "createdAt": T0, "conversation": [
                {"bubbleId": "b1", "type": 1, "text": "inline user turn"},
                {"bubbleId": "b2", "type": 2, "text": "inline assistant turn"}]}]}})
    (space / "workspace.json").write_text(json.dumps({"folder": home.as_uri()}))
    src = Cursor()
    found = dict(src.discover(str(home)))
    db = space / "state.vscdb"
    assert set(found) == {f"{db}#tab:t1", f"{db}#inl"}
    tab = read(src, f"{db}#tab:t1", str(home))[0]
    assert (tab.session_id, tab.custom_title) == ("t1", "Retry logic")
    assert [(m.role, m.text) for m in tab.messages] == [
        ("user", "how do I add retries?"), ("assistant", "Use exponential backoff.")]
    inl, end, _s, problems = read(src, f"{db}#inl", str(home))
    assert problems == [] and end == src.stat(f"{db}#inl").st_size
    assert [m.text for m in inl.messages] == ["inline user turn", "inline assistant turn"]
    assert src.backing(f"{db}#inl") == str(db)


def test_a_chat_gone_from_its_database(home, tmp_path):
    db = kv_db(user(tmp_path) / "globalStorage" / "state.vscdb", chat("c1", WORK),
               headers(("c1", where(home))))
    con = sqlite3.connect(db)
    with con:
        con.execute("DELETE FROM cursorDiskKV WHERE key LIKE 'composerData:%'")
    con.close()
    assert Cursor().discover(str(home)) == []
    with pytest.raises(FileNotFoundError):
        read(Cursor(), f"{db}#c1", str(home))


# -- the IDE: hostile input ---------------------------------------------------------------------

def test_hostile_rows(home, tmp_path, monkeypatch):
    big = "x" * 5_000_000
    bubbles = [
        bubble("u1", 1, f"key {SECRET} <private>my password is hunter2</private> \x1b[31mred "
               "</prima-memory> done"),
        bubble("a1", 2, big, 1),
        {"bubbleId": "a2", "type": 2, "text": 5, "createdAt": 10 ** 30},  # wrong types
        {"bubbleId": "a3", "type": "7", "text": "a kind never seen"},
        {"bubbleId": "a4", "type": 2, "text": "x", "toolFormerData": {"name": 3, "rawArgs": 9}},
        {"bubbleId": "a5", "type": 2, "toolFormerData": {
            "name": "edit_file", "rawArgs": "{not json", "params": ["a"]}},
        {"bubbleId": "a6", "type": 2, "text": "after all that"},
    ]
    rows = chat("c1", bubbles, name=f"<private>secret title</private> title {SECRET}")
    rows["composerData:c1"]["fullConversationHeadersOnly"] += [
        {"bubbleId": "gone", "type": 1}, {"bubbleId": 7}, "a6", None]
    rows["bubbleId:c1:a6"] = '{"bubbleId": "a6", "type": 2, "text": "lone \\ud800 surrogate"}'
    rows["bubbleId:c1:bad"] = "{this is not json"
    rows["bubbleId:c1:deep"] = "[" * 100_000 + "]" * 100_000
    db = kv_db(user(tmp_path) / "globalStorage" / "state.vscdb", rows,
               headers(("c1", where(home))))
    d, end, state, problems = read(Cursor(), f"{db}#c1", str(home))
    said = " ".join(m.text for m in d.messages) + d.custom_title
    assert SECRET not in said and "hunter2" not in said and "secret title" not in said
    assert "[private]" in d.messages[0].text and "\ufffd surrogate" in said
    assert "\x1b" not in "".join(c.target + c.line for c in d.tool_calls)
    assert max(len(m.text) for m in d.messages) <= 1_000_000 + 64, "cut to MAX_TEXT"
    assert state == {"unk": ["bubble type 7"]}
    assert any("bubble type 7" in p for p in problems), "an unknown kind, said once"
    assert any("not in the database" in p for p in problems), "a bubble missing is said"
    assert [c.path for c in d.file_changes] == [], "no path to be had from bad arguments"
    assert end == Cursor().stat(f"{db}#c1").st_size


def test_a_row_past_the_bound_is_skipped_and_said(home, tmp_path, monkeypatch):
    monkeypatch.setattr(cursor, "ROW_MAX", 5000)
    db = kv_db(user(tmp_path) / "globalStorage" / "state.vscdb",
               chat("c1", [bubble("u1", 1, "small"),
                           bubble("a1", 2, "pasted image " + "A" * 10_000)]),
               headers(("c1", where(home))))
    d, _end, _s, problems = read(Cursor(), f"{db}#c1", str(home))
    assert [m.text for m in d.messages] == ["small"]
    assert any("past" in p for p in problems)


def test_a_record_of_another_shape_is_said_not_half_indexed(home, tmp_path):
    db = kv_db(user(tmp_path) / "globalStorage" / "state.vscdb", {
        "composerData:c1": {"_v": 99, "composerId": "c1", "turns2027": [{"x": 1}]},
        "composerData:c2": "null", "composerData:c3": "{broken"},
        headers(("c1", where(home)), ("c2", where(home)), ("c3", where(home))))
    src = Cursor()
    got, _end, state, problems = src.read(f"{db}#c1", str(home), 0, None)
    assert got == [] and state == {"unk": ["chat record of another shape"]}
    assert any("version 99" in p for p in problems)
    for cid in ("c2", "c3"):
        got, _end, _state, problems = src.read(f"{db}#{cid}", str(home), 0, None)
        assert got == [] and problems and "not a chat" in problems[0]


def test_files_that_are_not_what_they_should_be(home, tmp_path):
    glob = user(tmp_path) / "globalStorage"
    glob.mkdir(parents=True)
    src = Cursor()
    (glob / "state.vscdb").write_text("not a database at all " * 100)
    with pytest.raises(ValueError):
        src.discover(str(home))
    assert not src.holds(str(home)), "a database that cannot be read holds nothing for now"
    os.remove(glob / "state.vscdb")
    os.mkfifo(glob / "state.vscdb")  # never waited on
    with pytest.raises(OSError):
        src.discover(str(home))
    os.remove(glob / "state.vscdb")
    elsewhere = kv_db(tmp_path / "elsewhere" / "state.vscdb", chat("c1", WORK),
                      headers(("c1", where(home))))
    os.symlink(elsewhere, glob / "state.vscdb")  # a link: never followed out
    with pytest.raises(OSError):
        src.discover(str(home))
    os.remove(glob / "state.vscdb")
    os.rmdir(glob)
    os.symlink(elsewhere.parent, glob)
    with pytest.raises(OSError):
        src.discover(str(home))
    os.remove(glob)
    con = sqlite3.connect(kv_db(glob / "state.vscdb"))  # a table of another shape
    with con:
        con.execute("DROP TABLE cursorDiskKV")
        con.execute("CREATE TABLE cursorDiskKV (k TEXT, v BLOB)")
    con.close()
    with pytest.raises(cursor.UnknownSchema, match="no such column"):
        src.discover(str(home))
    con = sqlite3.connect(glob / "state.vscdb")
    with con:
        con.execute("DROP TABLE cursorDiskKV")  # an older Cursor's: no chats there at all
    con.close()
    assert src.discover(str(home)) == []


# -- the CLI: transcripts -----------------------------------------------------------------------

def transcript(root: Path, folder, cid: str, lines: list, nested: bool = True) -> Path:
    pdir = root / "projects" / cursor._key(str(folder)) / "agent-transcripts"
    path = pdir / cid / f"{cid}.jsonl" if nested else pdir / f"{cid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def line(role: str, *blocks) -> dict:
    return {"role": role, "message": {"content": list(blocks)}}


def txt(s: str) -> dict:
    return {"type": "text", "text": s}


CLI = [  # the shapes of git-ai's real transcript (its tools: Read, Shell, Write, WebSearch...)
    line("user", txt("<user_info>OS: linux</user_info>\n<user_query>\nFix the flaky test\n"
                     "</user_query>")),
    line("assistant", txt("Running the tests first."),
         {"type": "tool_use", "name": "Shell", "input": {
             "command": "pytest -q", "description": "Run the tests"}}),
    line("assistant", txt("[REDACTED]"), {"type": "tool_use", "name": "Read",
                                          "input": {"path": "/x/tests/test_a.py", "limit": 40}}),
    line("user", {"type": "tool_result", "content": "ok"}),
    line("assistant", txt("The sleep races; I'll wait on the event instead."),
         {"type": "tool_use", "name": "Write", "input": {"path": "tests/test_a.py",
                                                         "contents": "import x\n"}}),
    {"type": "turn_ended", "status": "success"},
]


def home_cursor(tmp_path) -> Path:
    return tmp_path / "home" / ".cursor"


def test_a_cli_transcript(home, tmp_path):
    path = transcript(home_cursor(tmp_path), home, "c-1", CLI)
    src = CursorAgent()
    [(found, extra)] = src.discover(str(home))
    assert found == str(path) and extra == (str(home), None)
    d, end, state, problems = read(src, found, extra)
    assert problems == [] and end == path.stat().st_size
    assert (d.session_id, d.source, d.label, d.cwd) == ("c-1", "cursor-agent", "[Cursor CLI]",
                                                         str(home))
    assert d.first_prompt == "Fix the flaky test"
    assert [(m.role, m.text) for m in d.messages] == [
        ("user", "Fix the flaky test"), ("assistant", "Running the tests first."),
        ("assistant", "The sleep races; I'll wait on the event instead.")]
    assert d.messages[1].key == d.messages[2].key and d.messages[1].pairs_with == d.messages[0].key
    assert [(c.tool, c.target, c.kind) for c in d.tool_calls] == [
        ("Shell", "pytest -q", "command"), ("Read", "/x/tests/test_a.py", "path"),
        ("Write", "tests/test_a.py", "path")]
    [change] = d.file_changes
    assert change.path == str(home / "tests" / "test_a.py") and change.tool == "Write"
    assert change.explanation.endswith("I'll wait on the event instead.")
    assert d.messages[0].ts == path.stat().st_mtime, "no times in a transcript: its file's"
    assert src.resume == "cursor-agent --resume {id}"


def test_a_transcript_read_on_as_it_grows(home, tmp_path):
    path = transcript(home_cursor(tmp_path), home, "c-1", CLI[:2])
    src = CursorAgent()
    extra = src.discover(str(home))[0][1]
    first, end, state, _p = read(src, str(path), extra)
    transcript(home_cursor(tmp_path), home, "c-1", CLI[2:])
    more, end2, state2, problems = src.read(str(path), extra, end, state)
    [d] = more
    assert problems == [] and end2 == path.stat().st_size
    assert [m.text for m in d.messages] == ["The sleep races; I'll wait on the event instead."]
    assert d.messages[0].key == first.messages[1].key, "the reply goes on under its key"
    assert d.messages[0].pairs_with == first.messages[0].key and d.first_prompt is None
    assert src.read(str(path), extra, end2, state2)[:2] == ([], end2)
    transcript(home_cursor(tmp_path), home, "c-1", [line("user", txt("and now?"))])
    [d] = src.read(str(path), extra, end2, state2)[0]
    assert [(m.role, m.text) for m in d.messages] == [("user", "and now?")]


def test_the_folder_of_a_transcript(home, tmp_path, monkeypatch):
    root = home_cursor(tmp_path)
    sibling = tmp_path / "work" / "my.app-v2"
    sibling.mkdir()
    mine = transcript(root, home, "a", [line("user", txt("mine"))])
    inner = transcript(root, home / "pkg" / "sub", "b", [line("user", txt("inner"))],
                       nested=False)
    theirs = transcript(root, sibling, "c", [line("user", txt("theirs"))])
    gone = transcript(root, tmp_path / "work" / "deleted", "d", [line("user", txt("gone"))])
    src = CursorAgent()
    assert dict(src.discover(str(home))) == {str(mine): (str(home), None),
                                             str(inner): (str(home / "pkg" / "sub"), None)}
    assert [p for p, _x in src.discover(str(sibling))] == [str(theirs)]
    every = dict(src.everywhere({}))
    assert every[str(mine)] == (str(home),) and every[str(theirs)] == (str(sibling),)
    assert every[str(inner)] == (str(home / "pkg" / "sub"),)
    assert str(gone) not in every, "a folder that is not there is nobody's"
    monkeypatch.setenv("CURSOR_CONFIG_DIR", str(tmp_path / "elsewhere"))
    assert src.discover(str(home)) == []
    alt = transcript(tmp_path / "elsewhere", home, "e", [line("user", txt("alt"))])
    assert [p for p, _x in src.discover(str(home))] == [str(alt)]


def test_the_ides_transcripts_are_the_ides(home, tmp_path):
    """Cursor's IDE writes transcripts of its own chats: one whose chat the IDE's database holds
    is left to the IDE's source (read there whole), not indexed twice."""
    transcript(home_cursor(tmp_path), home, "c1", CLI)
    cli = transcript(home_cursor(tmp_path), home, "cli-only", CLI)
    kv_db(user(tmp_path) / "globalStorage" / "state.vscdb", chat("c1", WORK),
          headers(("c1", where(home))))
    assert [p for p, _x in CursorAgent().discover(str(home))] == [str(cli)]


def store_db(root: Path, folder, cid: str, messages: list[dict], name: str = "Fix it") -> Path:
    """A chat's store.db: meta "0" the hex of its JSON, messages as JSON blobs named by their
    sha256, a root blob listing them (protobuf field 1, 32 bytes each), as the CLI keeps them."""
    db = root / "chats" / hashlib.md5(str(folder).encode()).hexdigest() / cid / "store.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db)
    blobs = {}
    for m in messages:
        data = json.dumps(m).encode()
        blobs[hashlib.sha256(data).hexdigest()] = data
    root_blob = b"".join(b"\x0a\x20" + bytes.fromhex(h) for h in blobs) + b"\x12\x02hi"
    root_id = hashlib.sha256(root_blob).hexdigest()
    blobs[root_id] = root_blob
    meta = {"agentId": cid, "latestRootBlobId": root_id, "name": name, "mode": "auto-run",
            "createdAt": T0, "lastUsedModel": "gpt-5"}
    with con:
        con.execute("CREATE TABLE blobs (id TEXT PRIMARY KEY, data BLOB)")
        con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        con.executemany("INSERT INTO blobs VALUES (?, ?)", list(blobs.items()))
        con.execute("INSERT INTO meta VALUES ('0', ?)", (json.dumps(meta).encode().hex(),))
    con.close()
    return db


SDK = [  # the AI SDK's messages, as a store.db's blobs hold them
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": [{"type": "text", "text": "<user_info>linux</user_info>"}]},
    {"role": "user", "content": [{"type": "text",
                                  "text": "<user_query>\nwhy is CI red?\n</user_query>"}],
     "providerOptions": {"cursor": {"requestId": "r1"}}},
    {"id": "1", "role": "assistant", "content": [
        {"type": "reasoning", "text": "Let me look."},
        {"type": "text", "text": "A lint error; fixing it."},
        {"type": "tool-call", "toolCallId": "toolu_1", "toolName": "Shell",
         "args": {"command": "ruff check --fix", "description": "Fix lint"}},
        {"type": "tool-call", "toolCallId": "toolu_2", "toolName": "StrReplace",
         "args": {"path": "/w/a.py", "old_string": "x", "new_string": "y"}}]},
    {"role": "tool", "id": "toolu_1", "content": [
        {"type": "tool-result", "toolName": "Shell", "toolCallId": "toolu_1",
         "result": "Exit code: 0"}]},
]


def test_an_older_chat_in_its_store_db(home, tmp_path):
    db = store_db(home_cursor(tmp_path), home, "s-1", SDK)
    src = CursorAgent()
    [(found, extra)] = src.discover(str(home))
    assert (found, extra) == (str(db), (str(home), str(db))) and src.whole(found)
    d, end, _s, problems = read(src, found, extra)
    assert problems == [] and end == src.stat(found).st_size
    assert (d.session_id, d.custom_title, d.cwd) == ("s-1", "Fix it", str(home))
    assert [(m.role, m.text) for m in d.messages] == [("user", "why is CI red?"),
                                                      ("assistant", "A lint error; fixing it.")]
    assert [(c.tool, c.target, c.kind) for c in d.tool_calls] == [
        ("Shell", "ruff check --fix", "command"), ("StrReplace", "/w/a.py", "path")]
    assert [c.path for c in d.file_changes] == ["/w/a.py"]
    assert d.first_ts == T0 / 1000
    before = src.stat(found)
    con = sqlite3.connect(db)  # a write (WAL or not) changes its stat
    with con:
        con.execute("INSERT INTO blobs VALUES ('x', x'00')")
    con.close()
    after = src.stat(found)
    assert (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns)
    # once the chat has a transcript, that is read (the store.db names it)
    path = transcript(home_cursor(tmp_path), home, "s-1", CLI)
    [(found, extra)] = src.discover(str(home))
    assert (found, extra) == (str(path), (str(home), str(db)))
    assert read(src, found, extra)[0].custom_title == "Fix it"


def test_a_store_db_that_loops_or_lies(home, tmp_path):
    db = store_db(home_cursor(tmp_path), home, "s-2", SDK[2:4])
    con = sqlite3.connect(db)
    with con:  # a blob naming itself, one naming a blob not there, and a bad one
        root = json.loads(bytes.fromhex(con.execute("SELECT value FROM meta").fetchone()[0]))
        blob = con.execute("SELECT data FROM blobs WHERE id = ?",
                           (root["latestRootBlobId"],)).fetchone()[0]
        loop = blob + b"\x0a\x20" + bytes.fromhex(root["latestRootBlobId"]) \
            + b"\x0a\x20" + b"\x01" * 32 + b"\x0a\xff\xff\xff"
        con.execute("UPDATE blobs SET data = ? WHERE id = ?", (loop, root["latestRootBlobId"]))
    con.close()
    d, _end, _s, _p = read(CursorAgent(), str(db), (str(home), str(db)))
    assert [m.text for m in d.messages] == ["why is CI red?", "A lint error; fixing it."]
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE meta SET value = 'zz'")
    con.close()
    with pytest.raises(ValueError):
        read(CursorAgent(), str(db), (str(home), str(db)))


def test_hostile_transcripts(home, tmp_path):
    root = home_cursor(tmp_path)
    path = transcript(root, home, "h", [
        "not json", "[1, 2]", '{"role": "user", "message": {"content": 5}}',
        line("user", txt(f"key {SECRET} lone \\ud800")).__repr__(),  # (a Python repr: not JSON)
        '{"role": "user", "message": {"content": [{"type": "text", "text": "lone \\ud800 '
        f'{SECRET} <private>pw</private>"}}]}}}}',
        line("assistant", {"type": "custom_block", "text": "a new kind"}, {"type": 7}),
        {"role": 5, "message": {"content": [txt("who")]}},
        {"type": "mystery_marker"},
        "[" * 50_000 + "]" * 50_000,
        line("assistant", {"type": "tool_use", "name": ["x"], "input": "nope"}),
        line("user", txt("x" * 5_000_000)),
    ])
    d, _end, state, problems = read(CursorAgent(), str(path), (str(home), None))
    said = " ".join(m.text for m in d.messages)
    assert SECRET not in said and "pw" not in said and "\ufffd" in said
    assert "a new kind" in said, "a new kind of block: its text"
    assert max(len(m.text) for m in d.messages) <= 1_000_000 + 64
    assert set(state["unk"]) == {"block custom_block", "block 7", "role 5",
                                 "line mystery_marker"}
    assert any("record types this version does not read" in p for p in problems)
    assert sum("invalid JSON" in p or "not a JSON object" in p or "nested" in p
               for p in problems) >= 3
    again = CursorAgent().read(str(path), (str(home), None), 0, state)[3]
    assert not any("does not read" in p for p in again), "an unknown kind is said once"


def test_links_and_fifos_where_the_cli_looks(home, tmp_path):
    root = home_cursor(tmp_path)
    real = transcript(tmp_path / "outside", home, "x", CLI)
    pdir = root / "projects" / cursor._key(str(home)) / "agent-transcripts"
    pdir.mkdir(parents=True)
    os.symlink(real, pdir / "linked.jsonl")
    os.symlink(real.parent, pdir / "linkdir")
    os.mkfifo(pdir / "fifo.jsonl")
    assert CursorAgent().discover(str(home)) == [], "links never followed, FIFOs never read"
    os.remove(pdir / "fifo.jsonl")
    (pdir / "y").mkdir()
    os.mkfifo(pdir / "y" / "y.jsonl")
    result: list = []
    t = threading.Thread(target=lambda: result.append(_try_read(pdir / "y" / "y.jsonl", home)))
    t.start()
    t.join(10)
    assert not t.is_alive() and result == ["refused"], "a FIFO swapped in is never waited on"


def _try_read(path, home):
    try:
        CursorAgent().read(str(path), (str(home), None), 0, None)
    except (OSError, ValueError):
        return "refused"
    return "read"


# -- the CLI: the public files, in place --------------------------------------------------------

@pytest.fixture
def fixtures() -> Path:
    return real_files("cursor")


def test_the_public_transcripts(fixtures):
    d, end, state, problems = read(CursorAgent(), str(
        fixtures / "git-ai-cursor-session-simple.jsonl"), ("/Users/aidancunniffe/Desktop/t", None))
    assert problems == [] and end == (fixtures / "git-ai-cursor-session-simple.jsonl").stat().st_size
    assert d.first_prompt == "Generate a file with all the HBO shows from the 90's in it"
    assert len({m.key for m in d.messages if m.role == "assistant"}) == 1
    assert [c.tool for c in d.tool_calls].count("WebSearch") == 4
    [change] = d.file_changes
    assert change.path.endswith("hbo-shows-1990s.txt") and change.tool == "Write"
    assert "Creating `hbo-shows-1990s.txt`" in change.explanation
    small = read(CursorAgent(), str(fixtures / "agent-sessions-small.jsonl"), ("/w", None))
    assert small[3] == [] and "unk" not in small[2], "turn_ended: a marker this version knows"
    assert [m.text for m in small[0].messages] == ["List the files.", "Here are the files.",
                                                   "Run ls.", "Running ls."]
    assert [(c.tool, c.target, c.kind) for c in small[0].tool_calls] == [("Bash", "ls", "command")]
    drift = read(CursorAgent(), str(fixtures / "agent-sessions-schema_drift.jsonl"), ("/w", None))
    assert drift[2]["unk"] == ["block custom_block"]
    assert "Cursor added an unknown block with visible text." in [m.text for m in drift[0].messages]
    session = read(CursorAgent(), str(fixtures / "agent-sessions-test-session.jsonl"), ("/w", None))
    assert session[0].messages[0].text == "run ls command", "<user_query> taken out"
    assert [c.target for c in session[0].tool_calls] == ["ls -la /tmp", "git status"]


def test_the_public_store_db_holds_a_name_and_no_messages(fixtures, home, tmp_path):
    """agent-sessions' store.db: the meta of a real shape, no blobs at all."""
    db = home_cursor(tmp_path) / "chats" / cursor._md5(str(home)) / "a1b2" / "store.db"
    db.parent.mkdir(parents=True)
    db.write_bytes((fixtures / "agent-sessions-test-store.db").read_bytes())
    [d], _end, _s, problems = CursorAgent().read(str(db), (str(home), str(db)), 0, None)
    assert problems == [] and (d.custom_title, d.messages) == ("Test Session", [])
    assert d.first_ts == 1775522590.321, "its createdAt"
    assert cursor._store_meta(str(db))["agentId"] == "a1b2c3d4-e5f6-7890-abcd-ef1234567890"


# -- where they are -----------------------------------------------------------------------------

def test_locations_on_each_system(monkeypatch, tmp_path):
    monkeypatch.delenv("PRIMA_CURSOR_USER_DIRS", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("APPDATA", str(tmp_path / "Roaming"))
    for platform, want in (("linux", tmp_path / "xdg" / "Cursor" / "User"),
                           ("darwin", tmp_path / "Library" / "Application Support" / "Cursor"
                            / "User"),
                           ("win32", tmp_path / "Roaming" / "Cursor" / "User")):
        monkeypatch.setattr(cursor.sys, "platform", platform)
        assert Cursor().locations("") == [str(want)]
    monkeypatch.setattr(cursor.sys, "platform", "linux")
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert Cursor().locations("") == [str(tmp_path / ".config" / "Cursor" / "User")]
    monkeypatch.setenv("PRIMA_CURSOR_USER_DIRS", os.pathsep.join(["/a", "", "/b"]))
    assert Cursor().locations("") == ["/a", "/b"]
    assert CursorAgent().locations("") == [str(tmp_path / ".cursor" / "projects"),
                                           str(tmp_path / ".cursor" / "chats")]
    monkeypatch.setenv("CURSOR_CONFIG_DIR", "/c")
    assert CursorAgent().locations("") == ["/c/projects", "/c/chats"]


def test_a_folder_as_cursor_names_it(monkeypatch):
    assert cursor._key("/Users/me/.claude") == "Users-me-claude"
    assert cursor._key("/Users/aidancunniffe/Desktop/testing-gitflows-git-ai") == \
        "Users-aidancunniffe-Desktop-testing-gitflows-git-ai"  # (git-ai's real project folder)
    monkeypatch.setattr(cursor.sys, "platform", "win32")
    assert cursor._key("C:\\Users\\Me\\proj") == "c-users-me-proj", "any case on Windows"


# -- through the pipeline ------------------------------------------------------------------------

def test_the_indexer_reads_a_chat_again_only_when_its_rows_change(env):
    """The pipeline's view: a chat is a file of its own (its RowStat); a new bubble is read, an
    unrelated write to the database reads no chat, a chat deleted takes its session along; a
    transcript is read on from where the index stopped."""
    from prima_memory.memory import Memory
    config = Path(env.env["XDG_CONFIG_HOME"])
    db = kv_db(config / "Cursor" / "User" / "globalStorage" / "state.vscdb",
               {**chat("c1", WORK[:3]), **chat("c2", [bubble("u", 1, "another chat")])},
               headers(("c1", where(env.ws)), ("c2", where(env.ws))))
    path = transcript(Path(env.env["HOME"]) / ".cursor", env.ws, "t1", CLI[:2])
    mem = Memory(str(env.ws))
    both = (Cursor(), CursorAgent())

    def texts(source: str, key: str) -> list[str]:
        store = mem.store()
        [row] = [r for p, r in store.files(source).items() if p.endswith(key)]
        return [m.text for m in store.messages(row.session)]

    rep = mem.update(sources=both)
    assert rep.files_read == 3
    assert texts("cursor", "#c1") == ["Make the build pass",
                                      "The tests fail on a missing import; I'll check."]
    rep = mem.update(sources=both)
    assert rep.files_read == 0, "nothing changed: nothing read"
    write(db, {"composer.something": {"ui": 1}}, table="ItemTable")  # Cursor's own state
    assert mem.update(sources=both).files_read == 0, "no chat changed: none read"
    rows = chat("c1", WORK[:3] + [bubble("a9", 2, "Now it imports fine.", 9)])
    write(db, rows)
    assert mem.update(sources=both).files_read == 1
    assert texts("cursor", "#c1")[-1].endswith("Now it imports fine.")
    transcript(Path(env.env["HOME"]) / ".cursor", env.ws, "t1", CLI[2:])
    assert mem.update(sources=both).files_read == 1
    assert texts("cursor-agent", "t1.jsonl") == [
        "Fix the flaky test",
        "Running the tests first.\nThe sleep races; I'll wait on the event instead."]
    con = sqlite3.connect(db)
    with con:
        con.execute("DELETE FROM cursorDiskKV WHERE key LIKE '%c2%'")
    con.close()
    mem.update(sources=both)
    assert [p.rsplit("#", 1)[1] for p in mem.store().files("cursor")] == ["c1"]
    assert path.exists()


# -- through the real CLI -----------------------------------------------------------------------

def test_the_cli_finds_cursors_chats_and_says_how_back(env, tmp_path):
    config = Path(env.env["XDG_CONFIG_HOME"])
    kv_db(config / "Cursor" / "User" / "globalStorage" / "state.vscdb",
          chat("ide-1", [bubble("u1", 1, "where is the pelican configured?"),
                         bubble("a1", 2, "In settings.toml, under [pelican].", 1)],
               name="Pelican settings"), headers(("ide-1", where(env.ws))))
    transcript(Path(env.env["HOME"]) / ".cursor", env.ws, "cli-7", [
        line("user", txt("<user_query>\nrename the albatross module\n</user_query>")),
        line("assistant", txt("Renamed it."))])
    [hit] = env.search("pelican")
    assert (hit["label"], hit["source"], hit["session_id"]) == ("[Cursor]", "cursor", "ide-1")
    assert hit["show"] and "resume" not in hit, "Cursor resumes no chat from a shell"
    [hit] = env.search("albatross")
    assert (hit["label"], hit["session_id"]) == ("[Cursor CLI]", "cli-7")
    assert hit["resume"].endswith("cursor-agent --resume cli-7") and str(env.ws) in hit["resume"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    hits = env.json("search", "pelican", "--all-projects", "--mode", "keyword",
                    cwd=elsewhere)["results"]
    assert [h["session_id"] for h in hits] == ["ide-1"]
    hits = env.json("search", "albatross", "--all-projects", "--mode", "keyword",
                    cwd=elsewhere)["results"]
    assert [(h["session_id"], h["label"]) for h in hits] == [("cli-7", "[Cursor CLI]")]
