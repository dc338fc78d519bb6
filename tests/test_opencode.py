"""OpenCode's sessions → records, in-process (sources/opencode.py): its SQLite database (the
session/message/part tables of 1.2+, the session_message rows of newer builds) and the JSON
files before it; subagents as side threads, scope, change detection, hostile rows, and the
real CLI end to end.

Shapes: the tables as opencode's migrations leave them (`opencode.SCHEMA`: the `.schema` of
a real opencode.db, which public readers of it reproduce, e.g. agentbox's tests/fixture.db for
opencode 1.18.18); message and part `data` as anomalyco/opencode
packages/opencode/src/session/message-v2.ts types them (ids and times in columns, the rest in
`data`: packages/opencode/src/storage/json-migration.ts); session_message rows as
packages/core/src/session-message.ts; the JSON files as jazzyalex/agent-sessions
Resources/Fixtures/stage0/agents/opencode/storage_v2/ holds them (read in place below)."""
from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from prima_memory.sources import opencode
from prima_memory.sources.opencode import OpenCode

FIXTURES = Path(__file__).resolve().parent.parent.parent / "shared" / "fixtures" / "opencode"
SECRET = "sk-ant-api03-" + "Q" * 90
T0 = 1767312000000  # 2026-01-02, in opencode's milliseconds


@pytest.fixture
def src(tmp_path, monkeypatch) -> OpenCode:
    """The source, looking in a data folder of tmp_path (never the real one)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("OPENCODE_DB", raising=False)
    monkeypatch.setenv("PRIMA_RACY_MS", "0")
    opencode._LISTED.clear()
    opencode._JSON.clear()
    return OpenCode()


def database(src: OpenCode, name: str = "opencode.db", wal: bool = True) -> sqlite3.Connection:
    path = Path(src.data_dir()) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    if wal:
        opencode.make_schema(con)
    else:
        con.executescript(opencode.SCHEMA)
    return con


def text(t: str, **kw) -> dict:
    return {"type": "text", "text": t, "time": {"start": T0}, **kw}


def tool(name: str, inp: dict, status: str = "completed", call: str = "call_1", **state) -> dict:
    """A tool part (message-v2.ts ToolPart: callID, tool, state{status, input, output, title,
    metadata, time})."""
    st = {"status": status, "input": inp, "time": {"start": T0 + 100, "end": T0 + 200}}
    if status == "completed":
        st.update(output="done", title=name, metadata={"diff": "x" * 1000})
    st.update(state)
    return {"type": "tool", "callID": call, "tool": name, "state": st}


def add(con, sid: str, folder, messages, title: str = "", parent=None, start: int = T0) -> None:
    opencode.add_session(con, sid, folder, title, start, messages, parent)
    con.commit()


def member(src: OpenCode, sid: str, name: str = "opencode.db") -> str:
    return os.path.join(src.data_dir(), name) + "#" + sid


def read(src: OpenCode, path: str):
    deltas, end, state, problems = src.read(path, None, 0, None)
    assert end == src.stat(path).st_size, "a read ends where the stat says"
    return (deltas[0] if deltas else None), state, problems


WORK = [  # a turn of two steps, as opencode 1.x writes one (message-v2.ts)
    ("msg_01", "user", [text("Fix the flaky parser test"),
                        text("Called the Read tool with the following input: ...",
                             synthetic=True), {"type": "file", "mime": "text/plain",
                                               "filename": "parser.py", "url": "file:///w/p.py"}]),
    ("msg_02", "assistant", [
        {"type": "step-start", "snapshot": "4b825dc6"},
        {"type": "reasoning", "text": "Think about the tokenizer.", "time": {"start": T0}},
        text("The tokenizer drops the last line: I'll fix it."),
        tool("edit", {"filePath": "/w/src/parser.py", "oldString": "a", "newString": "b"},
             call="call_edit"),
        tool("bash", {"command": "pytest -q tests/test_parser.py",
                      "description": "Run the parser tests"}, call="call_bash"),
        tool("read", {"filePath": "/w/README.md", "offset": 10, "limit": 20}, call="call_read"),
        {"type": "patch", "hash": "3f2a1c9e", "files": ["/w/src/parser.py", "/w/src/lexer.py"]},
        {"type": "step-finish", "reason": "tool-calls", "cost": 0, "tokens": {
            "input": 1, "output": 1, "reasoning": 0, "cache": {"read": 0, "write": 0}}}]),
    ("msg_03", "assistant", [
        text("Now the changelog."),
        tool("write", {"filePath": "/w/CHANGELOG.md", "content": "fixed"}, call="call_write"),
        tool("apply_patch", {"patchText": "*** Begin Patch\n*** Update File: src/util.py\n@@\n"
                             "-a\n+b\n*** Add File: docs/parser.md\n+hi\n*** End Patch"},
             call="call_patch"),
        tool("edit", {"filePath": "/w/never.py"}, status="error", call="call_err",
             error="oldString not found"),
        text("Done: the parser keeps its last line.")]),
]


def test_a_session_of_the_database(src):
    con = database(src)
    add(con, "ses_work", "/w", WORK, title="Fix flaky parser")
    assert [p for p, _x in src.discover("/w")] == [member(src, "ses_work")]
    d, state, problems = read(src, member(src, "ses_work"))
    assert problems == [] and state is None
    assert (d.session_id, d.source, d.label, d.cwd) == ("ses_work", "opencode", "[OpenCode]", "/w")
    assert d.custom_title == "Fix flaky parser" and d.first_prompt == "Fix the flaky parser test"
    assert [(m.key, m.role, m.text, m.pairs_with) for m in d.messages] == [
        ("msg_01", "user", "Fix the flaky parser test", None),  # (no synthetic file text)
        ("msg_02", "assistant", "The tokenizer drops the last line: I'll fix it.", "msg_01"),
        ("msg_03", "assistant", "Now the changelog.\nDone: the parser keeps its last line.",
         "msg_01")]
    assert (d.first_ts, d.last_ts) == (T0 / 1000, T0 / 1000 + 3)
    calls = [(c.tool, c.target, c.line, c.kind, c.message_key, c.call) for c in d.tool_calls]
    assert calls == [
        ("edit", "/w/src/parser.py", "", "path", "msg_02", "call_edit"),
        ("bash", "pytest -q tests/test_parser.py", "Run the parser tests", "command", "msg_02",
         "call_bash"),
        ("read", "/w/README.md", "lines 10-29", "path", "msg_02", "call_read"),
        ("write", "/w/CHANGELOG.md", "", "path", "msg_03", "call_write"),
        ("apply_patch", "/w/src/util.py", "and /w/docs/parser.md", "path", "msg_03", "call_patch"),
        ("edit", "/w/never.py", "", "path", "msg_03", "call_err")]
    changes = [(c.path, c.tool, c.explanation, c.message_key) for c in d.file_changes]
    fix, log = "The tokenizer drops the last line: I'll fix it.", "Now the changelog."
    assert changes == [  # (the failed edit changed nothing; the patch part's parser.py is known)
        ("/w/src/parser.py", "edit", fix, "msg_02"), ("/w/src/lexer.py", "patch", fix, "msg_02"),
        ("/w/CHANGELOG.md", "write", log, "msg_03"), ("/w/src/util.py", "apply_patch", log, "msg_03"),
        ("/w/docs/parser.md", "apply_patch", log, "msg_03")]
    assert src.whole(member(src, "ses_work")) and src.resume == "opencode --session {id}"
    assert src.backing(member(src, "ses_work")) == os.path.join(src.data_dir(), "opencode.db")


def test_a_subagents_session_is_its_parents_side_thread(src):
    con = database(src)
    add(con, "ses_main", "/w", [("msg_a1", "user", [text("Survey the auth module")]),
                                ("msg_a2", "assistant", [tool("task", {
                                    "description": "Explore auth", "prompt": "Look at auth/",
                                    "subagent_type": "explore"}, call="call_task"),
                                    text("The survey is back.")])], title="Auth survey")
    add(con, "ses_child", "/w", [("msg_c1", "user", [text("Look at auth/ and report")]),
                                 ("msg_c2", "assistant", [
                                     text("Reading the login flow."),
                                     tool("bash", {"command": "ls auth"}, call="call_ls")])],
        title="Explore auth (@explore subagent)", parent="ses_main", start=T0 + 5000)
    assert [p for p, _x in src.discover("/w")] == [member(src, "ses_main")]
    before = src.stat(member(src, "ses_main"))
    with pytest.raises(FileNotFoundError):
        src.stat(member(src, "ses_child"))
    d, _state, _problems = read(src, member(src, "ses_main"))
    assert d.first_prompt == "Survey the auth module" and d.custom_title == "Auth survey"
    assert [(m.key, m.sidechain) for m in d.messages] == [
        ("msg_a1", False), ("msg_a2", False), ("msg_c1", True), ("msg_c2", True)]
    assert d.messages[3].pairs_with == "msg_c1"
    assert [(c.tool, c.line, c.sidechain) for c in d.tool_calls] == [
        ("task", "explore", False), ("bash", "", True)]
    # the subagent's new rows are a change of its parent's session
    opencode.add_session(con, "ses_child", "/w", "", T0 + 5000, [
        ("msg_c1", "user", [text("Look at auth/ and report")]),
        ("msg_c2", "assistant", [text("Reading the login flow.")]),
        ("msg_c3", "assistant", [text("Found it.")])], "ses_main")
    con.commit()
    assert src.stat(member(src, "ses_main")).st_size != before.st_size


def test_scope_and_every_project(src):
    con = database(src)
    add(con, "ses_here", "/work/app", [("m1", "user", [text("here")])])
    add(con, "ses_sub", "/work/app/api", [("m2", "user", [text("below")])])
    add(con, "ses_else", "/work/other", [("m3", "user", [text("elsewhere")])])
    add(con, "ses_prefix", "/work/app2", [("m4", "user", [text("a neighbour")])])
    found = sorted(p.rsplit("#", 1)[1] for p, _x in src.discover("/work/app"))
    assert found == ["ses_here", "ses_sub"]
    assert src.holds("/work/app") and not src.holds("/nowhere")
    every = dict(src.everywhere({}))
    assert every[member(src, "ses_else")] == ("/work/other",)
    assert len(every) == 4
    d, _s, _p = read(src, member(src, "ses_else"))
    assert not src.in_scope(d, "/work/app") and src.in_scope(d, "/work/other")
    # opencode's title until it names one ("New session - <time>") is none: the prompt is
    assert d.custom_title is None and d.first_prompt == "Elsewhere"
    d.cwd = None
    assert not src.in_scope(d, "/work/other"), "a session names its folder, or is nobody's"


def test_changes_are_seen_by_stat_and_one_look_serves_every_session(src, monkeypatch):
    con = database(src)
    for n in range(30):
        add(con, f"ses_{n:02d}", "/w", [(f"m{n}", "user", [text(f"prompt {n}")])])
    paths = [p for p, _x in src.discover("/w")]
    looks = []
    real = opencode._reading

    class Counting(real):
        def __enter__(self):
            looks.append(self.db)
            return super().__enter__()
    monkeypatch.setattr(opencode, "_reading", Counting)
    stats = {p: src.stat(p) for p in paths}
    assert looks == [], "the discover's look is kept while the database is unchanged"
    assert {src.stat(p).st_size for p in paths} == {3}  # a session, a message, a part
    con.execute("INSERT INTO part VALUES ('prt_x', 'm7', 'ses_07', ?, ?, ?)",
                (T0 + 9000, T0 + 9000, json.dumps(text("more"))))
    con.commit()
    now = {p: src.stat(p) for p in paths}
    assert len(looks) == 1, "one look at the database for all its sessions"
    assert [p for p in paths if now[p].st_size != stats[p].st_size] == [member(src, "ses_07")]
    con.execute("UPDATE session SET time_updated = ? WHERE id = 'ses_03'", (T0 + 99_000,))
    con.commit()
    assert src.stat(member(src, "ses_03")).st_mtime_ns == (T0 + 99_000) * 1_000_000
    with pytest.raises(FileNotFoundError):
        src.stat(member(src, "ses_gone"))
    # a snapshot: read whole, the new state replaces the old
    d, _s, _p = read(src, member(src, "ses_07"))
    assert [m.text for m in d.messages] == ["prompt 7\nmore"]


def test_reading_every_session_scans_the_session_table_once(src, monkeypatch):
    # a cold index reads each thread in turn: the threads come from the one look a run takes,
    # never from a scan of every session for each one (that made a cold index quadratic)
    con = database(src)
    for n in range(40):
        add(con, f"ses_{n:02d}", "/w", [(f"m{n}", "user", [text(f"prompt {n}")])])
    add(con, "ses_sub", "/w", [("msub", "user", [text("a subagent's task")])], parent="ses_05")
    scans = []
    real = opencode._sessions
    monkeypatch.setattr(opencode, "_sessions", lambda con: (scans.append(1), real(con))[1])
    got = {p: read(src, p)[0] for p, _x in src.discover("/w")}
    assert len(got) == 40 and len(scans) == 1
    assert [m.text for m in got[member(src, "ses_05")].messages] == \
        ["prompt 5", "a subagent's task"], "its subagent's thread is still its own"


def test_the_newer_session_message_rows(src):
    # packages/core/src/session-message.ts: one row per message, type in a column, content inside
    con = database(src)
    add(con, "ses_v2", "/w", [], title="Ship the release")
    con.execute("CREATE TABLE session_message (id text PRIMARY KEY, session_id text NOT NULL, "
                "type text NOT NULL, seq integer NOT NULL, time_created integer NOT NULL, "
                "time_updated integer NOT NULL, data text NOT NULL)")
    rows = [
        ("user", {"text": "Tag the release", "files": [], "agents": [], "time": {"created": T0}}),
        ("synthetic", {"sessionID": "ses_v2", "text": "a reminder", "time": {"created": T0}}),
        ("assistant", {"agent": "build", "model": {"id": "m", "providerID": "p"},
                       "time": {"created": T0 + 1000, "completed": T0 + 2000}, "content": [
                           {"type": "reasoning", "id": "r1", "text": "thinking"},
                           {"type": "text", "text": "Tagging v2.0 now."},
                           {"type": "tool", "id": "call_t", "name": "bash", "state": {
                               "status": "completed", "input": {"command": "git tag v2.0"},
                               "content": [{"type": "text", "text": "ok"}]},
                            "time": {"created": T0 + 1500}},
                           {"type": "tool", "id": "call_w", "name": "write", "state": {
                               "status": "completed", "input": {"filePath": "/w/VERSION"},
                               "content": []}, "time": {"created": T0 + 1600}}]}),
        ("shell", {"callID": "sh1", "command": "git push --tags", "output": "pushed",
                   "time": {"created": T0 + 3000}}),
        ("compaction", {"reason": "auto", "summary": "a recap", "time": {"created": T0 + 4000}}),
        ("hologram", {"time": {"created": T0 + 5000}}),
        ("hologram", {"time": {"created": T0 + 6000}}),
    ]
    for n, (kind, data) in enumerate(rows):
        con.execute("INSERT INTO session_message VALUES (?, 'ses_v2', ?, ?, ?, ?, ?)",
                    (f"msg_v{n}", kind, n, data["time"]["created"], data["time"]["created"],
                     json.dumps(data)))
    con.commit()
    d, state, problems = read(src, member(src, "ses_v2"))
    assert [(m.key, m.role, m.text) for m in d.messages] == [
        ("msg_v0", "user", "Tag the release"), ("msg_v2", "assistant", "Tagging v2.0 now.")]
    assert d.messages[1].pairs_with == "msg_v0"
    assert [(c.tool, c.target, c.kind) for c in d.tool_calls] == [
        ("bash", "git tag v2.0", "command"), ("write", "/w/VERSION", "path"),
        ("shell", "git push --tags", "command")]
    assert [(c.path, c.explanation) for c in d.file_changes] == [("/w/VERSION",
                                                                  "Tagging v2.0 now.")]
    assert state == {"unk": ["hologram"]} and src.knows("shell") and not src.knows("hologram")
    assert problems == ["record types this version does not read, skipped: hologram"]


def test_unknown_part_types_are_noted_once(src):
    con = database(src)
    add(con, "ses_u", "/w", [("m1", "user", [text("hi")]),
                             ("m2", "assistant", [{"type": "hologram"}, {"type": "hologram"},
                                                  text("hello")])])
    d, state, problems = read(src, member(src, "ses_u"))
    assert [m.text for m in d.messages] == ["hi", "hello"]
    assert state == {"unk": ["hologram"]} and len(problems) == 1 and "hologram" in problems[0]
    assert src.knows("step-finish") and not src.knows("hologram")


def test_secrets_private_spans_and_hostile_text(src):
    con = database(src)
    big = "word " * 1_100_000  # 5.5 MB in one message
    add(con, "ses_s", "/w", [
        ("m1", "user", [text(f"use {SECRET} <private>my home address</private> </prima-memory>")]),
        ("m2", "assistant", [text(f"Set the key {SECRET}."), tool("bash", {
            "command": f"curl -H 'x-api-key: {SECRET}' \x1b[31mhttps://x\x1b[0m",
            "description": "<private>secret plan</private> call it"})]),
        ("m3", "user", [text(big)])], title=f"key {SECRET} <private>hidden</private>")
    d, _state, problems = read(src, member(src, "ses_s"))
    everything = json.dumps([[m.text for m in d.messages], d.custom_title, d.first_prompt,
                             [(c.target, c.line) for c in d.tool_calls]])
    assert SECRET not in everything and "my home address" not in everything
    assert "hidden" not in everything and "secret plan" not in everything
    assert "[private]" in d.messages[0].text and "</prima-memory>" in d.messages[0].text
    assert "\x1b" not in d.tool_calls[0].target
    assert len(d.messages[2].text) <= 1_000_000 and any("characters" in p for p in problems)


def test_hostile_rows_never_crash_and_are_said(src):
    con = database(src)
    add(con, "ses_h", "/w", [("m1", "user", [text("the good one")])], title="x")
    rows = [  # (message data, part data)
        ('{"role": "user", "time": {"created": "soon"}}', b'{"type": "text", "text": "bad \\ud800 surrogate"}'),
        ("not json at all", '{"type": "text", "text": "orphan of a bad message"}'),
        ('{"role": 5}', '{"type": 7, "text": 8}'),
        ('[1, 2]', "[1, 2]"),
        ('{"role": "assistant", "parentID": 9}', json.dumps(tool(5, "not a dict"))),
        ('{"role": "assistant"}', json.dumps({"type": "tool", "tool": "bash", "state": "x"})),
        ('{"role": "assistant"}', json.dumps({"type": "patch", "files": [1, None, "/w/p.py"]})),
        ('{"role": "user", "time": {"created": 1e400}}', "[" * 100_000 + "]" * 100_000),
        ('{"role": "user"}', b'{"type": "text", "text": "latin1 \xe9 bytes"}'),
    ]
    for n, (m, p) in enumerate(rows):
        con.execute("INSERT INTO message VALUES (?, 'ses_h', ?, ?, ?)",
                    (f"m_h{n}", T0 + n, 2**62 if n == 3 else T0 + n, m))
        con.execute("INSERT INTO part VALUES (?, ?, 'ses_h', ?, ?, CAST(? AS TEXT))",
                    (f"p_h{n}", f"m_h{n}", T0, T0, p))  # (bytes no UTF-8 as text, as a bug may)
    con.execute("UPDATE session SET title = 5, time_created = 'yesterday' WHERE id = 'ses_h'")
    con.commit()
    d, _state, problems = read(src, member(src, "ses_h"))
    texts = [m.text for m in d.messages]
    assert texts[0] == "the good one" and "bad \ufffd surrogate" in texts
    assert "latin1 \ufffd bytes" in texts
    assert d.custom_title == "5"  # (a text column: SQLite stores the number as text)
    assert [c.path for c in d.file_changes] == ["/w/p.py"]
    # (not JSON, and nested past what is parsed: said once, not silently)
    assert [p[:42] for p in problems if "unreadable" in p] == [
        "2 messages unreadable, left out (the first"]
    # a session whose folder is no path is nobody's
    con.execute("UPDATE session SET directory = 7 WHERE id = 'ses_h'")
    con.commit()
    assert src.discover("/w") == [] and src.everywhere({}) == []


def test_a_database_it_cannot_read(src, monkeypatch):
    con = database(src, wal=False)  # (a rollback journal: a writer locks readers out)
    add(con, "ses_l", "/w", [("m1", "user", [text("locked")])])
    db = os.path.join(src.data_dir(), "opencode.db")
    path = member(src, "ses_l")
    before = (Path(db).read_bytes(), os.stat(db).st_mtime_ns)
    assert src.read(path, None, 0, None)[0]
    assert (Path(db).read_bytes(), os.stat(db).st_mtime_ns) == before, "read, never written"
    assert not os.path.exists(db + "-journal")
    monkeypatch.setattr(opencode, "BUSY_SECONDS", 0.05)
    con.execute("BEGIN EXCLUSIVE")
    with pytest.raises(OSError, match="locked"):
        src.read(path, None, 0, None)
    opencode._LISTED.clear()
    with pytest.raises(OSError, match="locked"):
        src.discover("/w")  # (the index keeps what it has, and tries again)
    with pytest.raises(OSError, match="locked"):
        src.stat(path)
    con.rollback()
    con.execute("DROP TABLE session")
    con.commit()
    with pytest.raises(ValueError, match="opencode.db: a schema this version does not know"):
        src.discover("/w")
    with pytest.raises(OSError, match="schema"):
        src.stat(path)
    assert src.everywhere({}) == [] and not src.holds("/w")
    Path(db).write_bytes(b"not a database" * 100)
    opencode._LISTED.clear()
    with pytest.raises(ValueError, match="opencode.db"):
        src.discover("/w")


def test_links_and_fifos_where_it_looks(src, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    con = sqlite3.connect(outside / "opencode.db")
    opencode.make_schema(con)
    add(con, "ses_out", "/w", [("m1", "user", [text("not ours")])])
    data = Path(src.data_dir())
    data.mkdir(parents=True)
    (data / "opencode.db").symlink_to(outside / "opencode.db")
    os.mkfifo(data / "opencode-local.db")
    assert src.databases() == [] and src.discover("/w") == []
    with pytest.raises(FileNotFoundError):
        src.read(str(data / "opencode.db") + "#ses_out", None, 0, None)
    with pytest.raises(FileNotFoundError):
        src.read(str(data / "opencode-local.db") + "#ses_out", None, 0, None)


def test_where_it_looks(src, tmp_path, monkeypatch):
    assert src.locations("/w") == [str(tmp_path / "data" / "opencode")]
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")  # (no path: the default)
    assert src.data_dir() == str(tmp_path / "home" / ".local" / "share" / "opencode")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    for name in ("opencode.db", "opencode-local.db", "opencode-beta.db"):
        add(database(src, name), f"ses_{name[:-3]}", "/w", [("m", "user", [text(name)])])
    (Path(src.data_dir()) / "opencode.db-wal.db.bak").write_text("")
    (Path(src.data_dir()) / "other.db").write_text("")
    assert [os.path.basename(p) for p in src.databases()] == [
        "opencode-beta.db", "opencode-local.db", "opencode.db"]
    assert len(src.discover("/w")) == 3
    monkeypatch.setenv("OPENCODE_DB", str(tmp_path / "elsewhere" / "mine.db"))
    (tmp_path / "elsewhere").mkdir()
    con = sqlite3.connect(tmp_path / "elsewhere" / "mine.db")
    opencode.make_schema(con)
    add(con, "ses_mine", "/w", [("m", "user", [text("mine")])])
    assert src.locations("/w")[1] == str(tmp_path / "elsewhere")
    assert str(tmp_path / "elsewhere" / "mine.db") + "#ses_mine" in \
        [p for p, _x in src.discover("/w")]
    monkeypatch.setenv("OPENCODE_DB", "named.db")  # (a name: in the data folder)
    assert src.db_override() == os.path.join(src.data_dir(), "named.db")


def test_a_sample_is_never_written_into_a_real_database(src):
    add(database(src), "ses_real", "/w", [("m", "user", [text("somebody's work")])])
    with pytest.raises(RuntimeError, match="holds OpenCode sessions"):
        src.sample("/w", "a sample")
    db = os.path.join(src.data_dir(), "opencode.db")
    assert sqlite3.connect(db).execute("SELECT id FROM session").fetchall() == [("ses_real",)]


def test_discover_notes_what_it_listed(src):
    con = database(src)
    add(con, "ses_f", "/w", [("m", "user", [text("hi")])])
    json_session(src, "ses_j", "/w", "prj", [])
    folders: list = []
    src.discover("/w", folders)
    noted = {f for f, _m in folders}
    db = os.path.join(src.data_dir(), "opencode.db")
    assert {db, db + "-wal", src.data_dir(),
            os.path.join(src.data_dir(), "storage", "session")} <= noted
    assert all(m == os.stat(f).st_mtime_ns for f, m in folders if m is not None)


# -- the JSON files, before 1.2 ------------------------------------------------------------------

def json_session(src: OpenCode, sid: str, folder, project: str, messages, parent=None,
                 title: str = "A JSON session") -> Path:
    """storage/session/<projectID>/<id>.json, message/<id>/<msgID>.json and part/<msgID>/
    <partID>.json, as opencode 0.x-1.1 wrote them (Storage.write: ids in the files too)."""
    storage = Path(src.data_dir()) / "storage"
    path = storage / "session" / project / f"{sid}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"id": sid, "version": "1.0.150", "projectID": project,
                                "directory": folder, "parentID": parent, "title": title,
                                "time": {"created": T0, "updated": T0 + 9000}}))
    for n, (mid, role, parts) in enumerate(messages):
        m = storage / "message" / sid / f"{mid}.json"
        m.parent.mkdir(parents=True, exist_ok=True)
        m.write_text(json.dumps({"id": mid, "sessionID": sid, "role": role,
                                 "time": {"created": T0 + 1000 * n}}))
        for k, part in enumerate(parts):
            p = storage / "part" / mid / f"prt_{mid}_{k}.json"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(json.dumps({"id": p.stem, "messageID": mid, "sessionID": sid, **part}))
    return path


def test_json_sessions(src, tmp_path):
    path = json_session(src, "ses_old", "/w", "prj", [
        ("msg_1", "user", [text("Rename the config loader")]),
        ("msg_2", "assistant", [text("Renaming it."), tool("edit", {"filePath": "/w/cfg.py"})])])
    json_session(src, "ses_kid", "/w", "prj", [("msg_k", "user", [text("a subagent's task")])],
                 parent="ses_old")
    json_session(src, "ses_away", "/elsewhere", "prj2", [("msg_a", "user", [text("away")])])
    assert [p for p, _x in src.discover("/w")] == [str(path)]
    d, _state, problems = read(src, str(path))
    assert problems == [] and d.session_id == "ses_old" and d.cwd == "/w"
    assert [(m.key, m.text, m.sidechain) for m in d.messages] == [
        ("msg_1", "Rename the config loader", False), ("msg_2", "Renaming it.", False),
        ("msg_k", "a subagent's task", True)]
    assert [(c.path, c.explanation) for c in d.file_changes] == [("/w/cfg.py", "Renaming it.")]
    every = dict(src.everywhere({}))
    assert set(every.values()) == {("/w",), ("/elsewhere",)}
    # a new message is a change of the session
    before = src.stat(str(path))
    m = Path(src.data_dir()) / "storage" / "message" / "ses_old" / "msg_3.json"
    m.write_text(json.dumps({"id": "msg_3", "role": "user", "time": {"created": T0 + 5000}}))
    assert src.stat(str(path)).st_size == before.st_size + 1
    # a session opencode copied into its database is read from there alone
    add(database(src), "ses_old", "/w", [("msg_1", "user", [text("Rename the config loader")])])
    assert [p for p, _x in src.discover("/w")] == [member(src, "ses_old")]


def test_json_links_and_fifos_are_never_followed(src, tmp_path):
    path = json_session(src, "ses_j", "/w", "prj", [("msg_1", "user", [text("kept")]),
                                                    ("msg_2", "user", [text("linked away")])])
    storage = Path(src.data_dir()) / "storage"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "ses_x.json").write_text(path.read_text().replace("ses_j", "ses_x"))
    (storage / "session" / "prj" / "ses_x.json").symlink_to(outside / "ses_x.json")
    parts = storage / "part" / "msg_2"
    os.rename(parts, outside / "parts")
    parts.symlink_to(outside / "parts")
    os.mkfifo(storage / "part" / "msg_1" / "prt_fifo.json")
    assert [p for p, _x in src.discover("/w")] == [str(path)]
    d, _state, _problems = read(src, str(path))
    assert [m.text for m in d.messages] == ["kept"]


@pytest.fixture
def fixtures() -> Path:
    if not FIXTURES.is_dir():
        pytest.skip("../shared/fixtures/opencode is not present")
    return FIXTURES


def test_the_public_fixtures(src, fixtures, tmp_path):
    import shutil
    # jazzyalex/agent-sessions Resources/Fixtures/stage0/agents/opencode/storage_v2/: two
    # sessions of one project, files named otherwise than the ids they hold
    shutil.copytree(fixtures / "agent-sessions" / "storage_v2",
                    Path(src.data_dir()) / "storage")
    got = {}
    for path, _x in src.discover("/tmp"):
        d, _state, problems = read(src, path)
        assert problems == []
        got[d.session_id] = d
    small, large = got["s_stage0_small"], got["s_stage0_large"]
    assert (small.cwd, small.custom_title, small.first_prompt) == ("/tmp/repo", "OpenCode Small",
                                                                   "Hello")
    assert [(m.role, m.text) for m in small.messages] == [("user", "Hello"),
                                                         ("assistant", "Found 2 files.")]
    assert [(c.tool, c.target, c.kind) for c in small.tool_calls] == [("bash", "ls", "command")]
    assert [m.text for m in large.messages] == ["Step 1", "Command failed with exit code 1.",
                                                "Step 2", "Ok"]
    assert [(c.path, c.tool) for c in large.file_changes] == [("/tmp/large/error.log", "patch")]
    # Dicklesworthstone/coding_agent_session_search tests/fixtures/opencode_json/
    shutil.rmtree(Path(src.data_dir()) / "storage")
    opencode._JSON.clear()
    shutil.copytree(fixtures / "cass" / "storage", Path(src.data_dir()) / "storage")
    (path, _x), = src.discover("/tmp/test-project")
    d, _state, problems = read(src, path)
    assert problems == [] and d.custom_title == "OpenCode JSON Session"
    assert [m.role for m in d.messages] == ["user", "assistant"]
    assert d.messages[1].pairs_with == d.messages[0].key == "msg_test1"


# -- the real CLI --------------------------------------------------------------------------------

def test_search_finds_an_opencode_session_through_the_cli(env, tmp_path):
    db = Path(env.env["XDG_DATA_HOME"]) / "opencode" / "opencode.db"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    opencode.make_schema(con)
    add(con, "ses_cli", str(env.ws), [
        ("msg_1", "user", [text("Why does the wombat importer stall?")]),
        ("msg_2", "assistant", [text("The wombat importer waits on a lock."),
                                tool("edit", {"filePath": str(env.ws / "importer.py")})])],
        start=1_700_000_000_000)
    add(con, "ses_far", "/far/away", [("msg_9", "user", [text("wombat elsewhere")])])
    con.close()
    hits = env.search("wombat")
    assert [h["session_id"] for h in hits] == ["ses_cli"]
    (hit,) = hits
    assert hit["label"] == "[OpenCode]" and hit["source"] == "opencode"
    assert hit["resume"] == f"cd '{env.ws}' && opencode --session ses_cli"
    assert hit["files_changed"] == [str(env.ws / "importer.py")]
    other = tmp_path / "other"
    other.mkdir()
    every = env.json("search", "wombat importer", "--all-projects", "--mode", "keyword",
                     cwd=other)["results"]
    assert [(h["session_id"], h["label"]) for h in every] == [("ses_cli", "[OpenCode]")]
