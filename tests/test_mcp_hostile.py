"""`prima-memory mcp` against a hostile or unlucky client: arguments at the edges of what the
schemas let through, a workspace reached through a symbolic link, long sessions, the data folder
deleted or swapped for a link while the server runs, two rebuilds asked at once.

The server is driven over raw JSON-RPC lines (the SDK's client cannot send everything a client
may: a lone surrogate, two requests without waiting). One server answers most cases
(`answers`); each test asserts one behaviour on what it answered."""
from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time

import pytest

pytest.importorskip("mcp")
from conftest import Env
from test_mcp import BACKUP, OLD, UPLOAD, _history

from prima_memory.mcp_server import ANSWER_CHARS

OPAQUE = "Error executing tool"  # all the SDK says of an exception that is not a ToolError


class Raw:
    """A stdio MCP client speaking JSON-RPC lines itself."""

    def __init__(self, env: Env, ws=None, extra_env: dict | None = None):
        e = dict(env.env)
        e.update(extra_env or {})
        self.stderr = open(env.root / "raw-stderr.log", "ab")
        self.p = subprocess.Popen(
            [sys.executable, "-m", "prima_memory", "--workspace", str(ws or env.ws), "mcp"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, env=e,
            cwd=str(env.root))
        self.n = 0
        self.buf = b""
        self.early: dict = {}  # answers read while waiting for another (concurrent requests)
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "hostile", "version": "1"}}})
        self.read(0)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, obj) -> None:
        # json.dumps escapes a lone surrogate as \ud800, as JSON.stringify does
        self.p.stdin.write(json.dumps(obj).encode() + b"\n")
        self.p.stdin.flush()

    def read(self, want, timeout: float = 120.0) -> dict:
        if want in self.early:
            return self.early.pop(want)
        end = time.monotonic() + timeout
        while True:
            # lines read by hand: a buffered readline would hold a second answer that came in
            # the same chunk where select() cannot see it
            while b"\n" not in self.buf:
                left = end - time.monotonic()
                if left <= 0 or not select.select([self.p.stdout], [], [], left)[0]:
                    raise TimeoutError(f"no answer to request {want} in {timeout}s")
                chunk = os.read(self.p.stdout.fileno(), 1 << 16)
                if not chunk:
                    raise EOFError("the server closed its output")
                self.buf += chunk
            line, self.buf = self.buf.split(b"\n", 1)
            msg = json.loads(line)
            if msg.get("id") == want:
                return msg
            if "id" in msg:
                self.early[msg["id"]] = msg

    def request(self, tool: str, args: dict) -> int:
        self.n += 1
        self.send({"jsonrpc": "2.0", "id": self.n, "method": "tools/call",
                   "params": {"name": tool, "arguments": args}})
        return self.n

    def answer(self, n: int, timeout: float = 120.0) -> tuple[bool, str]:
        m = self.read(n, timeout)
        assert "result" in m, m
        return bool(m["result"].get("isError")), m["result"]["content"][0]["text"]

    def call(self, tool: str, timeout: float = 120.0, **args) -> tuple[bool, str]:
        return self.answer(self.request(tool, args), timeout)

    def close(self) -> None:
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.stderr.close()


def _no_model(env: Env) -> dict:
    """No model (an empty folder): keyword answers only, and no time spent loading one."""
    empty = env.root / "no model"
    empty.mkdir(exist_ok=True)
    return {"PRIMA_MODEL": str(empty)}


def _wait_rebuild_done(env: Env) -> None:
    for _ in range(600):
        if not env.json("status")["rebuild"]["running"]:
            return
        time.sleep(0.2)


LONG = "eeee6666-0000-4000-8000-000000000006"  # 3,000 messages
PASTE = "abab8888-0000-4000-8000-000000000008"  # one message far past an answer's size
EDITS = "ffff7777-0000-4000-8000-000000000007"  # 600 file changes

EXTREME_DATES = [
    {"since": "0001-01-01T00:00:00+01:00"},  # year 0 in UTC
    {"since": "9" * 39 + "d"},  # a time ago before any calendar
    {"since": "7d", "until": "9999-12-31T23:59:59-14:00"},  # year 10000 in UTC
]


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    """One server, on the workspace reached through a symbolic link, asked every case."""
    env = Env(tmp_path_factory.mktemp("hostile"))
    _history(env)
    t = env.transcript(LONG, start=OLD - 10 * 86400)
    for i in range(1500):
        t.exchange(f"step {i} of the long migration", f"done with step {i}")
    t = env.transcript(PASTE, start=OLD - 5 * 86400)
    t.exchange("here is the whole log", "line " * 4000 + "END-OF-THE-LOG")
    t.exchange("thanks", "you are welcome")
    t = env.transcript(EDITS, start=OLD - 3 * 86400)
    for i in range(600):
        t.tool("Edit", {"file_path": str(env.ws / "src" / "big.py"), "old_string": "a",
                        "new_string": "b"}, text=f"change number {i} to big.py")
    env.json("index")
    link = env.root / "link to project"
    os.symlink(env.ws, link)

    out: dict = {"env": env, "link": link}
    s = Raw(env, ws=link, extra_env=_no_model(env))
    try:
        out["dates"] = [s.call("summarize_period", **a) for a in EXTREME_DATES]
        out["year1"] = s.call("summarize_period", since="0001-01-01")
        # the spelling Claude Code records (its cwd is the real path) and the link's
        out["real"] = s.call("get_file_history", path=str(env.ws / "src" / "upload.py"))
        out["via_link"] = s.call("get_file_history", path=str(link / "src" / "upload.py"))
        t0 = time.monotonic()
        out["long"] = s.call("recall_session", session_id=LONG, detail="turns")
        out["long_seconds"] = time.monotonic() - t0
        paste = s.call("recall_session", session_id=PASTE, detail="turns")
        out["paste"] = paste
        note = json.loads(paste[1]).get("truncated", "")
        if 'range="' in note:
            nxt = note.split('range="')[1].split('"')[0]
            out["paste_next"] = (nxt, s.call("recall_session", session_id=PASTE,
                                             detail="turns", range=nxt))
        out["edits_summary"] = s.call("recall_session", session_id=EDITS)
        # two rebuilds asked at once (a model retrying, two tools calling it)
        a, b = s.request("rebuild_index", {}), s.request("rebuild_index", {})
        out["rebuilds"] = [s.answer(a), s.answer(b)]
        _wait_rebuild_done(env)
        # last: a lone surrogate, which JSON.stringify writes as \ud800
        try:
            out["surrogate"] = s.call("search_sessions", timeout=20, query="pg_dump \ud800",
                                      mode="keyword")
        except TimeoutError as e:
            out["surrogate"] = e
        out["after"] = s.call("recent_sessions", n=1)
    finally:
        s.close()
        _wait_rebuild_done(env)
    return out


def test_extreme_dates_are_explained_not_opaque_crashes(answers):
    """summarize_period with a date the schema lets through but no calendar can show: the model
    must read what is wrong (a usage error), not the SDK's bare "Error executing tool"."""
    for args, (err, text) in zip(EXTREME_DATES, answers["dates"]):
        if err:
            assert text.strip() != f"{OPAQUE} summarize_period", (args, text)
            assert "Traceback" not in text
        else:
            assert len(text) <= ANSWER_CHARS and json.loads(text)


def test_a_date_in_year_1_is_shown_as_an_iso_date(answers):
    err, text = answers["year1"]
    assert not err, text
    since = json.loads(text)["since"]
    assert since.startswith("0001-01-01"), since  # ISO 8601, not "1-01-01T00:00:00Z"


def test_a_file_spelled_by_the_workspace_real_path_is_inside_it(answers):
    """The server's workspace is reached through a symbolic link (CLAUDE_PROJECT_DIR, a
    --workspace given by hand); Claude Code records the real path, and the answers show it. That
    spelling names the same file inside the workspace: it must not be refused as outside."""
    err, text = answers["via_link"]
    assert not err, text
    shown = json.loads(text)["sessions"][0]
    assert shown["session_id"] == UPLOAD
    err, text = answers["real"]
    assert not err, text
    assert [c["session_id"] for c in json.loads(text)["sessions"]] == [UPLOAD]


def test_a_long_session_is_bounded_in_time_too(answers):
    """recall_session on a session of 3,000 messages (an afternoon's work): bounded() drops one
    message at a time and serialises the whole answer again for each, quadratic in the
    messages; the answer must come in seconds, not tens of seconds."""
    err, text = answers["long"]
    assert not err, text
    assert len(text) <= ANSWER_CHARS and json.loads(text)["session"]["messages"]
    assert answers["long_seconds"] < 4.0, f"{answers['long_seconds']:.1f}s"


def test_bounding_many_items_is_not_quadratic():
    """bounded() itself, in a child process that is stopped at the deadline: 4,000 file changes
    (get_file_history on a folder of a busy workspace) must be cut in well under a second."""
    code = ("import json, sys\n"
            "from prima_memory.mcp_server import bounded\n"
            "data = {'path': 'src', 'sessions': 40, 'changes': [{'path': f'src/f{i}.py', "
            "'tool': 'Edit', 'explanation': 'a reason', 'at': '2026-11-11T01:00:00Z', "
            "'session_id': 'aaaa1111-0000-4000-8000-000000000001', 'title': 'a title'} "
            "for i in range(4000)]}\n"
            "text = bounded(data, 'Ask for less.')\n"
            "assert len(text) <= 8000 and json.loads(text)['changes']\n")
    t0 = time.monotonic()
    try:
        subprocess.run([sys.executable, "-c", code], check=True, timeout=5,
                       cwd=str(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    except subprocess.TimeoutExpired:
        pytest.fail("bounded() took more than 5 s on 4,000 items")
    assert time.monotonic() - t0 < 5


def test_the_note_on_a_cut_session_points_only_at_messages_that_exist(answers):
    """A session of 4 messages, one of them 20,000 characters: nothing is left out but a text
    shortened. The note must not send the model to range="4:", which holds nothing."""
    err, text = answers["paste"]
    assert not err, text
    data = json.loads(text)
    assert data["session"]["messages"][-1]["index"] == 3, "every message is there"
    if "paste_next" in answers:
        nxt, (err, more) = answers["paste_next"]
        assert not err, more
        assert json.loads(more)["session"].get("messages"), \
            f"the note sent the model to range={nxt!r}, which holds no message: {data['truncated']}"


def test_the_note_on_a_cut_summary_does_not_ask_for_the_summary(answers):
    """A summary cut for its 600 file changes must not tell the model to ask for detail=summary:
    that is what it asked for."""
    err, text = answers["edits_summary"]
    assert not err, text
    data = json.loads(text)
    assert data["detail"] == "summary" and "truncated" in data
    assert 'detail="summary"' not in data["truncated"], data["truncated"]


def test_two_rebuilds_asked_at_once_start_one(answers):
    """rebuild_index twice in a row, before the first child has written its state: one rebuild
    is started and the second answer reports it, as the tool promises ("the state of the
    rebuild already running"), rather than a second process that fails at once."""
    (e1, a), (e2, b) = answers["rebuilds"]
    assert not e1 and not e2, (a, b)
    first, second = json.loads(a)["rebuild"], json.loads(b)["rebuild"]
    assert [first["started"], second["started"]].count(True) == 1, (first, second)
    assert first["pid"] == second["pid"], (first, second)
    log = (answers["env"].data / "prima-memory.log")
    assert "background rebuild failed" not in (log.read_text() if log.exists() else "")


def test_a_lone_surrogate_in_a_request_gets_an_answer(answers):
    """JSON.stringify writes a lone surrogate as \\ud800: valid JSON, which the SDK's parser
    refuses, dropping the request without a word; the client then waits forever. The server
    must answer it (a result or a tool error) and go on."""
    got = answers["surrogate"]
    assert not isinstance(got, Exception), got
    err, text = got
    # the surrogate is read as U+FFFD, a word of the query like any other (as on the command
    # line): an answer, even an empty one, is what was missing
    assert err or isinstance(json.loads(text)["results"], list), text
    assert not answers["after"][0]


# -- the data folder deleted or replaced under the running server --------------------------------

def test_the_data_folder_deleted_while_serving_is_made_again(env):
    """`git clean -fdx` or `rm -rf .prima-memory` while Claude Code runs: the next request must
    make a new index and answer, not fail with an opaque error for the server's lifetime."""
    _history(env)
    s = Raw(env, extra_env=_no_model(env))
    try:
        err, text = s.call("search_sessions", query="pg_dump", mode="keyword")
        assert not err, text
        shutil.rmtree(env.data)
        got = [s.call("search_sessions", query="pg_dump", mode="keyword") for _ in range(2)]
    finally:
        s.close()
    for err, text in got:
        assert not err, text
        assert json.loads(text)["results"][0]["session_id"] == BACKUP
    assert (env.data / "index.db").is_file()


def test_a_data_folder_swapped_for_a_link_is_never_followed(env):
    """.prima-memory replaced by a symbolic link while the server runs (a checkout, a hostile
    repository): as when starting, the link is set aside, and nothing is written where it
    points."""
    _history(env)
    elsewhere = env.root / "elsewhere"
    elsewhere.mkdir()
    s = Raw(env, extra_env=_no_model(env))
    try:
        err, text = s.call("search_sessions", query="pg_dump", mode="keyword")
        assert not err, text
        shutil.rmtree(env.data)
        os.symlink(elsewhere, env.data)
        s.call("search_sessions", query="pg_dump", mode="keyword")
        time.sleep(3)  # past the idle delay: the idle work must not write there either
    finally:
        s.close()
    assert os.listdir(elsewhere) == [], "written through the link"


# -- the protocol at its edges ---------------------------------------------------------------------

def test_the_protocol_at_its_edges(env):
    """What a client may send that the SDK's client never does: each gets the JSON-RPC answer
    it should (or none, for a notification), and the server goes on."""
    _history(env)
    s = Raw(env, extra_env=_no_model(env))
    try:
        def ask(obj) -> dict:
            s.send(obj)
            return s.read(obj.get("id"))

        def ping(n: int) -> None:
            assert ask({"jsonrpc": "2.0", "id": n, "method": "ping"})["result"] == {}

        ping(100)
        assert ask({"jsonrpc": "2.0", "id": "x", "method": "resources/list"})["error"][
            "code"] == -32601
        s.send({"jsonrpc": "2.0", "method": "notifications/whatever"})  # no answer to it
        ping(101)
        for raw, code in ((b"not json at all", -32700),
                          (b'[{"jsonrpc":"2.0","id":5,"method":"ping"}]', -32600),
                          (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', -32600),
                          (b"x" * (17 << 20), -32600)):
            s.p.stdin.write(raw + b"\n")
            s.p.stdin.flush()
            assert s.read(None)["error"]["code"] == code, raw[:40]
            ping(102)
        for asked, got in (("2024-11-05", "2024-11-05"), ("2025-06-18", "2025-06-18"),
                           ("1999-01-01", "2025-11-25"), (None, "2025-11-25")):
            init = ask({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {
                "protocolVersion": asked, "capabilities": {}}})["result"]
            assert init["protocolVersion"] == got
            assert init["serverInfo"]["name"] == "prima-memory" and "tools" in init["capabilities"]
        bad = [({"name": "recent_sessions", "arguments": [1]}, "must be an object"),
               ({"name": "recent_sessions", "arguments": {"n": 2, "limt": 3}}, "limt"),
               ({"name": "recent_sessions", "arguments": {"n": True}}, "n: must be a whole"),
               ({"name": "recent_sessions", "arguments": {"n": 2.5}}, "n: must be a whole"),
               ({"name": 42}, "Unknown tool"), ({}, "Unknown tool")]
        for params, want in bad:
            got = ask({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": params})
            assert got["result"]["isError"] and want in got["result"]["content"][0]["text"], got
        # an integral number is a whole number (JSON Schema's "integer"), null is absent
        ok = ask({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
            "name": "recent_sessions", "arguments": {"n": 1.0}}})["result"]
        assert not ok["isError"] and len(json.loads(ok["content"][0]["text"])["sessions"]) == 1
        ok = ask({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {
            "name": "search_sessions", "arguments": {"query": "pg_dump", "mode": "keyword",
                                                     "since": None}}})["result"]
        assert not ok["isError"], ok
    finally:
        s.close()
    assert s.p.returncode == 0


def test_a_cancelled_call_gets_no_answer_and_the_next_one_does():
    """notifications/cancelled for a call still waiting its turn: it is not run, nor answered
    (in-process, with a tool that waits for the test)."""
    import io
    import threading

    from prima_memory import mcp_protocol as proto
    go, ran = threading.Event(), []

    def slow(args):
        ran.append(args["x"])
        go.wait(30)
        return f"done {args['x']}"
    out = io.BytesIO()
    tool = proto.Tool("slow", "waits", proto.schema({"x": {"type": "string"}}), slow, {})
    server = proto.Server("t", "0", "", [tool], stdout=out)
    for rid, x in ((1, "a"), (2, "b"), (3, "c")):
        server.handle_line(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                       "params": {"name": "slow", "arguments": {"x": x}}}).encode())
    server.handle_line(b'{"jsonrpc":"2.0","method":"notifications/cancelled",'
                       b'"params":{"requestId":2}}')
    go.set()
    for _ in range(600):
        if out.getvalue().count(b"\n") >= 2:
            break
        time.sleep(0.05)
    answers = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [(a["id"], a["result"]["content"][0]["text"]) for a in answers] == [
        (1, "done a"), (3, "done c")]
    assert ran == ["a", "c"]
