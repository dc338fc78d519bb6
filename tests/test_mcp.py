"""`prima-memory mcp` as Claude meets it: the real server over stdio, driven by the mcp SDK's own
client, on a workspace of transcripts, with the real model. Each tool's answer is checked against
the CLI's `--json` for the same question; bad arguments are tool errors after which the server
keeps serving; answers stay within their size; calls run concurrently; a damaged index and a
rebuild in another process are survived."""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp")
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from prima_memory import mcp_server
from prima_memory.mcp_server import ANSWER_CHARS, lean

DAY = 86400
OLD = time.time() - 20 * DAY
LOGIN = "aaaa1111-0000-4000-8000-000000000001"
BACKUP = "aaaa2222-0000-4000-8000-000000000002"
UPLOAD = "bbbb3333-0000-4000-8000-000000000003"
TOOLS = {"search_sessions", "recall_session", "recent_sessions", "find_similar",
         "find_error_fix", "get_file_history", "summarize_period", "rebuild_index"}


def _history(env):
    a = env.transcript(LOGIN, start=OLD)
    a.exchange("Fix login redirect loop: after entering credentials users land on /login again",
               "The session cookie was set with SameSite=Strict, so the browser dropped it on the "
               "OAuth callback. Changed it to Lax.")
    a.tool("Edit", {"file_path": str(env.ws / "src" / "auth" / "cookies.py"), "old_string": "a",
                    "new_string": "b"}, text="Set SameSite=Lax on the session cookie.")
    a.exchange("DECIDED: keep sessions in cookies, not in local storage", "Noted.")
    b = env.transcript(BACKUP, start=OLD + DAY)
    b.exchange("Schedule a nightly pg_dump of the production database to S3",
               "Added a cron job at 02:00 that runs pg_dump, gzips the dump and uploads it to the "
               "backups bucket, keeping thirty days.")
    c = env.transcript(UPLOAD, start=OLD + 2 * DAY)
    c.exchange("The upload fails with 413 Request Entity Too Large for big files",
               "nginx limits the body to 1 MB by default: raised client_max_body_size to 50m.")
    c.tool("Write", {"file_path": str(env.ws / "src" / "upload.py"), "content": "x"},
           text="Stream the upload to disk instead of holding it in memory.")
    c.tool("Edit", {"file_path": str(env.ws / "deploy" / "nginx.conf"), "old_string": "a",
                    "new_string": "b"}, text="Raise client_max_body_size to 50m.")
    env.json("embed")


def _params(env) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "prima_memory", "--workspace", str(env.ws), "mcp"],
                                 env=env.env, cwd=str(env.root))


def serve(env, body):
    """Run `body(session)` against a fresh server; returns what it returns."""
    async def main():
        with open(env.root / "mcp-stderr.log", "a") as errlog:
            async with stdio_client(_params(env), errlog=errlog) as (r, w), \
                    ClientSession(r, w) as s:
                await s.initialize()
                return await body(s)
    return anyio.run(main)


async def call(s, tool: str, **args):
    """(is_error, text) of one tool call."""
    r = await s.call_tool(tool, args)
    return r.is_error, r.content[0].text


async def ok(s, tool: str, **args) -> dict:
    err, text = await call(s, tool, **args)
    assert not err, text
    assert len(text) <= ANSWER_CHARS
    return json.loads(text)


def cli(env, *args) -> dict:
    """The CLI's --json answer as the server renders it (lean: nothing empty, no shell hints)."""
    return lean(env.json(*args), str(env.ws))


def _sans_times(d):
    """The data without what differs between two asks a moment apart."""
    if isinstance(d, dict):
        return {k: _sans_times(v) for k, v in d.items()
                if k not in ("since", "until", "truncated")}
    if isinstance(d, list):
        return [_sans_times(x) for x in d]
    return d


def test_the_tools_and_their_arguments(env):
    _history(env)

    async def body(s):
        return (await s.list_tools()).tools
    tools = {t.name: t for t in serve(env, body)}
    assert set(tools) == TOOLS
    # only the user forgets (prima-memory forget, /prima-memory:forget): Claude cannot
    assert not any(w in t.name + t.description.lower() for t in tools.values()
                   for w in ("forget", "delete"))
    for t in tools.values():
        assert len(t.description) > 60, t.name
    search = tools["search_sessions"].input_schema
    assert search["required"] == ["query"]
    assert search["properties"]["limit"]["minimum"] == 1
    assert search["properties"]["limit"]["maximum"] == 50
    assert search["properties"]["query"]["maxLength"] > 0
    assert set(search["properties"]["mode"]["enum"]) == {"combined", "keyword", "semantic"}
    assert set(tools["recall_session"].input_schema["properties"]["detail"]["enum"]) == \
        {"summary", "turns", "full"}
    assert tools["search_sessions"].annotations.read_only_hint is True
    assert tools["rebuild_index"].annotations.read_only_hint is False


def test_each_tool_answers_what_the_cli_answers(env):
    _history(env)

    async def body(s):
        out = {}
        for mode in ("combined", "keyword", "semantic"):
            out[mode] = await ok(s, "search_sessions", query="cookie redirect", mode=mode)
        out["meaning"] = await ok(s, "search_sessions", query="request body too large for nginx")
        out["period"] = await ok(s, "search_sessions", query="pg_dump", since="2026-01-01",
                                 until="1d")
        out["summary"] = await ok(s, "recall_session", session_id=LOGIN[:6])
        out["turns"] = await ok(s, "recall_session", session_id=LOGIN, detail="turns",
                                range="1:3")
        out["recent"] = await ok(s, "recent_sessions", n=2)
        out["similar"] = await ok(s, "find_similar", query="the upload is rejected as too big")
        out["file"] = await ok(s, "get_file_history", path="src/upload.py")
        out["bare"] = await ok(s, "get_file_history", path="cookies.py")
        out["folder"] = await ok(s, "get_file_history", path=str(env.ws / "src"))
        out["digest"] = await ok(s, "summarize_period", since="60d")
        return out
    got = serve(env, body)

    for mode in ("combined", "keyword", "semantic"):
        cli_ = cli(env, "search", "cookie", "redirect", "--mode", mode, "--context", "1")
        assert _sans_times(got[mode]) == _sans_times(cli_), mode
        assert got[mode]["results"][0]["session_id"] == LOGIN
    first = got["combined"]["results"][0]
    assert first["label"] == "[transcript]" and first["score"] > 0
    around = first["context"]
    assert [t["matched"] for t in around].count(True) == 1
    assert any("SameSite" in t["text"] for t in around)
    assert got["meaning"]["results"][0]["session_id"] == UPLOAD, "found by meaning"
    assert [r["session_id"] for r in got["period"]["results"]] == [BACKUP]

    assert got["summary"] == cli(env, "show", LOGIN[:6], "--detail", "summary")
    summary = got["summary"]["session"]
    assert summary["session_id"] == LOGIN and "messages" not in summary
    assert summary["decisions"] == ["DECIDED: keep sessions in cookies, not in local storage"]
    assert [f["explanation"] for f in summary["files_changed"]] == \
        ["Set SameSite=Lax on the session cookie."]
    # where it stopped: its last reply, "Noted.", after the reply before it that says something
    assert summary["stopped_at"] == ("The session cookie was set with SameSite=Strict, so the "
                                     "browser dropped it on the OAuth callback. Changed it to "
                                     "Lax.\n\nNoted.")
    # (the messages without their tool calls: an answer is kept lean)
    assert got["turns"] == cli(env, "show", LOGIN, "--detail", "turns", "--range", "1:3",
                               "--no-tools")
    assert [m["index"] for m in got["turns"]["session"]["messages"]] == [1, 2]

    assert got["recent"] == cli(env, "recent", "-n", "2")
    assert [d["session_id"] for d in got["recent"]["sessions"]] == [UPLOAD, BACKUP]
    assert got["recent"]["sessions"][0]["first_user_message"].startswith("The upload fails")

    assert got["similar"] == cli(env, "similar", "the upload is rejected as too big")
    best = got["similar"]["results"][0]
    assert best["session_id"] == UPLOAD
    # ranked as the default search ranks the same words: its sessions, order and score
    searched = cli(env, "search", "the upload is rejected as too big")["results"]
    assert [(r["session_id"], r["score"]) for r in got["similar"]["results"]] == \
        [(r["session_id"], r["score"]) for r in searched]
    assert best["score_kind"] == "relevance" and 0 < best["similarity"] <= 1

    assert got["file"] == cli(env, "files", "src/upload.py")
    assert [(f["path"], s["session_id"], f["why"]) for s in got["file"]["sessions"]
            for f in s["files"]] \
        == [("src/upload.py", UPLOAD, "Stream the upload to disk instead of holding it in memory.")]
    assert [f["path"] for s in got["bare"]["sessions"] for f in s["files"]] == \
        ["src/auth/cookies.py"], "relative"
    assert sorted(f["path"] for s in got["folder"]["sessions"] for f in s["files"]) == \
        ["src/auth/cookies.py", "src/upload.py"]

    assert _sans_times(got["digest"]) == _sans_times(cli(env, "digest", "--since", "60d"))
    assert got["digest"]["sessions"] == 3
    assert got["digest"]["decisions"][0]["session_id"] == LOGIN
    stops = {d["session_id"]: d["stopped_at"] for day in got["digest"]["days"]
             for d in day["sessions"]}
    assert stops[BACKUP].startswith("Added a cron job at 02:00")  # a reply, never the request
    assert stops[UPLOAD].endswith("Raise client_max_body_size to 50m.")


BAD = [
    ("recall_session", {"session_id": "ffffffff-0000"}, "no session matches"),
    ("recall_session", {"session_id": "aaaa"}, "matches 2 sessions"),
    ("recall_session", {"session_id": LOGIN, "range": "x:y"}, "range"),
    ("recall_session", {"session_id": LOGIN, "detail": "everything"}, "detail"),
    ("search_sessions", {"query": ""}, "query"),
    ("search_sessions", {"query": "   \t"}, "the query is empty"),
    ("search_sessions", {"query": "x", "limit": -1}, "limit"),
    ("search_sessions", {"query": "x", "limit": 0}, "limit"),
    ("search_sessions", {"query": "x", "limit": 10 ** 12}, "limit"),
    ("search_sessions", {"query": "x", "limit": "10"}, "limit"),
    ("search_sessions", {"query": 42}, "query"),
    ("search_sessions", {"query": ["a"]}, "query"),
    ("search_sessions", {"query": "x", "mode": "fuzzy"}, "mode"),
    ("search_sessions", {"query": "x", "since": "next tuesday"}, "next tuesday"),
    ("search_sessions", {"query": "x" * 5000}, "query"),
    ("search_sessions", {}, "query"),
    ("find_similar", {"query": ""}, "query"),
    ("find_similar", {"query": "x", "limit": 51}, "limit"),
    ("recent_sessions", {"n": -5}, "n"),
    ("get_file_history", {"path": "../../etc/passwd"}, "outside the workspace"),
    ("get_file_history", {"path": "/etc/passwd"}, "outside the workspace"),
    ("get_file_history", {"path": "src/../../secret"}, "outside the workspace"),
    ("get_file_history", {"path": "src/\x00x"}, "NUL"),
    ("get_file_history", {"path": ""}, "path"),
    ("summarize_period", {"since": "whenever"}, "whenever"),
    ("no_such_tool", {}, "no_such_tool"),
]


def test_every_bad_argument_is_a_tool_error_and_the_server_goes_on(env):
    _history(env)

    async def body(s):
        out = []
        for tool, args, _want in BAD:
            out.append(await call(s, tool, **args))
            # ... and a good call answers right after each
            assert (await ok(s, "recent_sessions", n=1))["sessions"][0]["session_id"] == UPLOAD
        return out
    for (tool, args, want), (err, text) in zip(BAD, serve(env, body)):
        assert err, (tool, args, text)
        assert want in text, (tool, args, text)
        assert "Traceback" not in text and len(text) < 2000


def test_an_ambiguous_or_unknown_id_lists_candidates(env):
    _history(env)

    async def body(s):
        return (await call(s, "recall_session", session_id="aaaa"),
                await call(s, "recall_session", session_id="nope"))
    (e1, amb), (e2, unknown) = serve(env, body)
    assert e1 and LOGIN in amb and BACKUP in amb and UPLOAD not in amb
    assert e2 and all(s in unknown for s in (LOGIN, BACKUP, UPLOAD)), unknown


def test_answers_stay_within_their_size_and_say_how_to_get_the_rest(env):
    big = "4c4c4c4c-0000-4000-8000-000000000004"
    t = env.transcript(big, start=OLD)
    for i in range(30):
        t.exchange(f"zebrafish step {i}: " + "why " * 400, f"zebrafish answer {i}: " + "because " * 500)
    for i in range(40):
        env.transcript(f"5d5d5d5d-0000-4000-8000-{i:012d}", start=OLD + i).exchange(
            f"zebrafish again {i} " + "filler " * 300, "zebrafish reply " + "more " * 300)
    env.json("index")  # (no vectors: these answers are a recall and a keyword search)

    async def body(s):
        full = await ok(s, "recall_session", session_id=big, detail="full")
        nxt = full["truncated"].split('range="')[1].split('"')[0]
        rest = await ok(s, "recall_session", session_id=big, detail="turns", range=nxt)
        many = await ok(s, "search_sessions", query="zebrafish", limit=50, mode="keyword")
        return full, nxt, rest, many
    full, nxt, rest, many = serve(env, body)
    shown = full["session"]["messages"]
    assert 0 < len(shown) < 60 and "left out" in full["truncated"]
    assert nxt == f"{shown[-1]['index'] + 1}:"
    assert rest["session"]["messages"][0]["index"] == shown[-1]["index"] + 1, "the rest follows"
    assert 0 < len(many["results"]) < 41 and "limit" in many["truncated"]
    assert [r["score"] for r in many["results"]] == sorted((r["score"] for r in many["results"]),
                                                          reverse=True), "the best are kept"


def test_concurrent_calls_each_get_their_own_answer(env):
    _history(env)
    asks = [("search_sessions", {"query": "pg_dump"}, BACKUP),
            ("search_sessions", {"query": "cookie", "mode": "keyword"}, LOGIN),
            ("find_similar", {"query": "the upload is rejected as too big"}, UPLOAD),
            ("recall_session", {"session_id": BACKUP[:8] + "-0000-4000-8000-000000000002"}, BACKUP),
            ("get_file_history", {"path": "nginx.conf"}, UPLOAD)] * 3

    async def body(s):
        out = [None] * len(asks)

        async def one(i, tool, args):
            out[i] = await ok(s, tool, **args)
        async with anyio.create_task_group() as tg:
            for i, (tool, args, _want) in enumerate(asks):
                tg.start_soon(one, i, tool, args)
        return out
    for (tool, _args, want), got in zip(asks, serve(env, body)):
        first = (got.get("results") or got.get("sessions") or [got.get("session")])[0]
        assert first["session_id"] == want, tool


def test_a_corrupt_index_is_rebuilt_and_the_server_answers(env):
    _history(env)
    db = env.data / "index.db"

    async def body(s):
        before = await ok(s, "search_sessions", query="pg_dump", mode="keyword")
        size = db.stat().st_size
        with open(db, "r+b") as f:  # garbage over the live file, under the open server
            f.write(os.urandom(size))
        after = await call(s, "search_sessions", query="pg_dump", mode="keyword")
        again = await ok(s, "search_sessions", query="pg_dump")
        return before, after, again
    before, (err, after), again = serve(env, body)
    assert before["results"][0]["session_id"] == BACKUP
    assert not err, after
    assert json.loads(after)["results"][0]["session_id"] == BACKUP
    assert again["results"][0]["session_id"] == BACKUP
    assert list(env.data.glob("index.db.corrupt-*")), "moved aside"
    assert "moved it to" in (env.data / "prima-memory.log").read_text()


def test_an_index_replaced_by_another_process_is_read_anew(env):
    _history(env)
    db = env.data / "index.db"

    async def body(s):
        await ok(s, "search_sessions", query="pg_dump", mode="keyword")
        os.rename(db, str(db) + ".old")  # another process moved it aside and made a new one
        for suffix in ("-wal", "-shm"):
            if os.path.exists(str(db) + suffix):
                os.rename(str(db) + suffix, str(db) + ".old" + suffix)
        env.json("index")
        return await ok(s, "search_sessions", query="pg_dump", mode="keyword")
    assert serve(env, body)["results"][0]["session_id"] == BACKUP


def test_a_rebuild_in_another_process_and_rebuild_index(env):
    _history(env)

    async def body(s):
        with open(env.data / "index.lock", "a") as writer:  # the rebuild waits for the writer
            fcntl.flock(writer, fcntl.LOCK_EX)
            started = await ok(s, "rebuild_index")
            assert started["rebuild"]["running"] and started["rebuild"]["started"]
            for _ in range(300):
                if env.json("status")["rebuild"]["running"]:
                    break
                await anyio.sleep(0.1)
            during = await ok(s, "search_sessions", query="pg_dump")
            twice = await ok(s, "rebuild_index")
        for _ in range(600):
            if not env.json("status")["rebuild"]["running"]:
                break
            await anyio.sleep(0.2)
        after = await ok(s, "search_sessions", query="pg_dump")
        pid = started["rebuild"]["pid"]
        for _ in range(100):  # the server reaps its finished child: no zombie stays behind
            if not os.path.exists(f"/proc/{pid}"):
                break
            await anyio.sleep(0.2)
        assert not os.path.exists(f"/proc/{pid}"), open(f"/proc/{pid}/status").read()[:200]
        return started, during, twice, after
    started, during, twice, after = serve(env, body)
    assert during["results"] and during["results"][0]["session_id"] == BACKUP, during
    assert any("rebuild" in w for w in during.get("warnings", [])), during
    assert twice["rebuild"]["running"] and twice["rebuild"]["started"] is False
    assert twice["rebuild"]["pid"] == started["rebuild"]["pid"]
    assert after["results"][0]["session_id"] == BACKUP and not env.json("status")["rebuild"]["running"]


def test_the_server_embeds_and_links_while_idle(env, monkeypatch):
    _history(env)
    late = "cccc4444-0000-4000-8000-000000000004"

    async def body(s):
        await ok(s, "recent_sessions", n=1)
        before = env.json("status")["semantic"]["embedded"]
        t = env.transcript(late, start=time.time() - 60)
        t.exchange("Schedule a nightly pg_dump of the staging database to S3",
                   "Added a cron job at 03:00 that runs pg_dump, gzips the dump and uploads it "
                   "to the backups bucket, keeping thirty days.")
        for _ in range(150):  # no request meanwhile: the server indexes, embeds and links it
            st = env.json("status")["semantic"]
            if st["pending"] == 0 and st["embedded"] == before + 1:
                break
            await anyio.sleep(0.2)
        return await ok(s, "find_similar", query="nightly database backup to S3")
    got = serve(env, body)
    assert env.json("status")["semantic"]["pending"] == 0
    assert not any("not embedded" in w or "no similarity links" in w
                   for w in got.get("warnings", []))
    top = {r["session_id"]: r for r in got["results"]}
    assert {BACKUP, late} <= set(top)
    linked = [x["session_id"] for x in top[late]["linked"]]
    assert linked == [BACKUP], "nearly the same exchange, in another session"


def test_the_server_indexes_another_agents_session_while_idle(env):
    _history(env)
    rollout = Path(env.env["CODEX_HOME"]) / "sessions" / "2026" / "11" / "30" / "rollout-x-cx1.jsonl"

    async def body(s):
        await ok(s, "recent_sessions", n=1)
        rollout.parent.mkdir(parents=True)
        rollout.write_text("".join(json.dumps(x) + "\n" for x in [
            {"timestamp": "2026-11-30T10:00:00Z", "type": "session_meta",
             "payload": {"id": "cx1", "cwd": str(env.ws)}},
            {"timestamp": "2026-11-30T10:00:01Z", "type": "response_item", "payload": {
                "type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "Codex: rotate the lynxtoken"}]}}]))
        for _ in range(100):  # no request meanwhile: the idle work indexes it
            codex = {x["source"]: x for x in env.json("status")["sources"]}["codex"]
            if codex["sessions"]:
                break
            await anyio.sleep(0.2)
        return codex, await ok(s, "search_sessions", query="lynxtoken", mode="keyword")
    codex, found = serve(env, body)
    assert codex["sessions"] == 1
    assert [(r["session_id"], r["label"]) for r in found["results"]] == [("cx1", "[Codex]")]


def test_starting_the_server_leaves_nothing_behind(env):
    """`claude mcp list` starts every server to check it, in whatever folder it is run."""
    async def body(s):
        tools = (await s.list_tools()).tools
        await anyio.sleep(3)  # past the idle delay: the idle work must not make an index either
        return tools
    assert len(serve(env, body)) == len(TOOLS)
    assert not (env.ws / ".prima-memory").exists()


def test_a_signal_ends_the_server_at_once_with_its_stdin_still_open(env):
    """Claude Code stops a server with SIGINT (then SIGTERM 100 ms later) without closing it."""
    import signal
    import subprocess
    _history(env)
    for sig in (signal.SIGINT, signal.SIGTERM):
        p = subprocess.Popen([sys.executable, *_params(env).args],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env.env, cwd=str(env.root))
        try:
            time.sleep(2)  # started, and warming up
            assert p.poll() is None, p.stderr.read()
            p.send_signal(sig)
            assert p.wait(timeout=3) == 0
        finally:
            p.kill()
            p.wait()


def _spawn(env, extra_env: dict | None = None, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *_params(env).args], env={**env.env, **(extra_env or {})},
                            cwd=str(env.root), **kw)


def _handshake(p) -> None:
    """initialize, initialized and tools/list over the process's pipes, answers read."""
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}).encode() + b"\n")
    p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
                  b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n')
    p.stdin.flush()
    assert json.loads(p.stdout.readline())["id"] == 0
    assert len(json.loads(p.stdout.readline())["result"]["tools"]) == len(TOOLS)


def _ends(p, within: float) -> bool:
    try:
        p.wait(timeout=within)
        return True
    except subprocess.TimeoutExpired:
        return False


def test_the_handshake_loads_nothing_of_the_memory(env):
    """Claude Code waits for the server before the session's first request: initialize and
    tools/list are answered before the index, the data API, the SDK or the model is imported
    (each costs a session tenths of a second to seconds)."""
    _history(env)
    p = _spawn(env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
               extra_env={"PYTHONPROFILEIMPORTTIME": "1"})
    try:
        _handshake(p)
        p.stdin.close()  # the server ends: what it imported is all on stderr
        err = p.stderr.read().decode()
        p.wait(timeout=30)
    finally:
        p.kill()
        p.wait()
    from test_hooks import imported_modules
    mods = imported_modules(err)
    assert "prima_memory.mcp_protocol" in mods, err[-2000:]
    loaded = sorted(m for m in mods if m.split(".")[0] in {
        "apsw", "mcp", "pydantic", "anyio", "numpy", "onnxruntime", "torch", "argparse", "typing"}
        or m in {"prima_memory.api", "prima_memory.memory", "prima_memory.storage"})
    assert not loaded, loaded


def test_the_idle_work_loads_the_model_only_for_work(env):
    """Idle, on a workspace with everything embedded and linked, the server indexes what the
    hooks left but loads no model: most sessions never ask the memory."""
    if not os.path.isdir("/proc/self"):
        pytest.skip("reads /proc")
    _history(env)
    p = _spawn(env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        _handshake(p)
        time.sleep(mcp_server.IDLE_AFTER + 2)  # an idle step has run
        maps = Path(f"/proc/{p.pid}/maps").read_text()
        assert p.poll() is None
    finally:
        p.kill()
        p.wait()
    assert "apsw" in maps, "the idle step did not run"
    assert "onnxruntime" not in maps and "torch" not in maps


N_LONG = 3000  # exchanges: about 30 s of embedding on a 2-core machine


def test_the_server_ends_when_its_stdin_closes_in_the_middle_of_a_call(env):
    """The client leaves (stdin closed) while a search embeds thousands of new exchanges, a
    job of its whole budget (20 s): the server ends at once, not when the job would, and what it had
    not committed is rolled back: the index is whole and the next search answers."""
    t = env.transcript("9a9a9a9a-0000-4000-8000-000000000009", start=OLD)
    for i in range(N_LONG):
        t.exchange(f"step {i}: tune the quokka cache for shard {i}",
                   f"Shard {i} now evicts after {i % 7 + 1} minutes; " + "detail " * 40)
    env.json("index")
    p = _spawn(env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        _handshake(p)
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "search_sessions", "arguments": {"query": "quokka cache"}}}).encode()
            + b"\n")
        p.stdin.flush()
        status = env.data / "index.db"
        for _ in range(300):  # until the first batch of vectors is committed: mid-call
            if _embedded(status):
                break
            time.sleep(0.05)
        assert _embedded(status), "the call never started embedding"
        p.stdin.close()
        ended = _ends(p, 5)
    finally:
        p.kill()
        p.wait()
    assert ended, "the server ran on after its client closed stdin"
    st = env.json("status")
    import apsw
    db = apsw.Connection(str(status))
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert 0 < st["semantic"]["embedded"] < N_LONG
    assert st["semantic"]["embedded"] + st["semantic"]["pending"] == st["counts"]["exchanges"]
    assert env.search("quokka")[0]["session_id"].startswith("9a9a9a9a")


def _embedded(db: Path) -> int:
    import apsw
    try:
        c = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return c.execute("SELECT count(*) FROM embedded").fetchone()[0]
        finally:
            c.close()
    except apsw.Error:
        return 0


def test_the_server_ends_when_its_parent_dies(env):
    """Killed with SIGKILL, a client cannot close our stdin, and another process may still hold
    the pipe open: the server notices its parent is gone and ends."""
    import signal
    _history(env)
    r, w = os.pipe()  # this test keeps the write end: stdin never ends
    middle = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys, time\n"
         f"p = subprocess.Popen(sys.argv[1:], stdin={r}, stdout=subprocess.DEVNULL, "
         "stderr=subprocess.DEVNULL, pass_fds=[" + str(r) + "])\n"
         "print(p.pid, flush=True)\ntime.sleep(600)\n", sys.executable, *_params(env).args],
        env=env.env, cwd=str(env.root), pass_fds=[r], stdout=subprocess.PIPE)
    os.close(r)
    try:
        pid = int(middle.stdout.readline())
        time.sleep(1)
        assert _alive(pid)
        os.kill(middle.pid, signal.SIGKILL)
        middle.wait()
        for _ in range(100):
            if not _alive(pid):
                break
            time.sleep(0.05)
        assert not _alive(pid), "the server outlived its parent"
    finally:
        os.close(w)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """Running (a zombie, ended but not yet reaped by init, counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_no_match_is_an_empty_list_not_a_missing_one(env):
    _history(env)

    async def body(s):
        return (await ok(s, "search_sessions", query="xylophonequartz", mode="keyword"),
                await ok(s, "get_file_history", path="no/such/file.py"))
    search, files = serve(env, body)
    assert search["results"] == [] and files["sessions"] == [] and files["total_sessions"] == 0


def test_a_fault_of_ours_is_a_one_line_tool_error_and_logged(env, monkeypatch):
    """In-process, at the tool seam: an exception that is not a PrimaError (a bug) reaches the
    model as one line naming it, not a bare "Error executing tool", and is logged."""
    from prima_memory import api, mcp_protocol, mcp_server
    _history(env)
    monkeypatch.setattr(api, "recent", lambda *a, **k: {}["no such key"])
    memory = mcp_server.ServedMemory(str(env.ws))
    server = mcp_protocol.Server("prima-memory", "0", "", mcp_server.tools(memory),
                                 on_fault=lambda e: mcp_server.fault(memory, e))
    got = server.call("recent_sessions", {"n": 1})
    text = got["content"][0]["text"]
    assert got["isError"] and "KeyError" in text and "no such key" in text, got
    assert "\n" not in text
    assert "mcp: KeyError" in (env.data / "prima-memory.log").read_text()


def test_a_long_file_history_is_read_page_by_page(env):
    for i in range(120):  # (a session each: a session's changes of a file are one entry)
        t = env.transcript(f"dddd5555-0000-4000-8000-{i:012d}", start=OLD + 60 * i)
        t.tool("Edit", {"file_path": str(env.ws / "src" / "busy.py"), "old_string": "a",
                        "new_string": "b"}, text=f"change number {i:03d} of busy.py, " + "why " * 20)
    env.json("index")

    async def body(s):
        pages, skip = [], 0
        while True:
            page = await ok(s, "get_file_history", path="src/busy.py", skip=skip)
            pages.append(page)
            if "truncated" not in page:
                return pages
            skip = int(page["truncated"].split("skip=")[1].split(" ")[0])
            assert skip == page["skipped"] + len(page["sessions"])
    pages = serve(env, body)
    assert len(pages) > 1 and all(p["total_sessions"] == 120 for p in pages)
    seen = [s["files"][0]["why"][:17] for p in pages for s in p["sessions"]]
    assert seen == [f"change number {i:03d}" for i in reversed(range(120))], "all, newest first"
    cli = env.json("files", "src/busy.py", "--skip", "100")
    assert [s["files"][0]["why"][:17] for s in cli["sessions"]] == \
        [f"change number {i:03d}" for i in reversed(range(20))]


def test_only_path_fields_are_made_relative_never_what_was_said(env):
    """A message that names a file of the workspace is quoted as written: stripping the
    workspace from any string made "/home/u/proj/run.sh fails" read "run.sh fails"."""
    said = f"{env.ws}/run.sh fails with exit 3"
    t = env.transcript(UPLOAD, start=OLD)
    t.exchange(said, f"Fixed: {env.ws}/run.sh quoted its arguments.")
    t.tool("Edit", {"file_path": str(env.ws / "run.sh"), "old_string": "a", "new_string": "b"},
           text="Quote the arguments.")

    async def body(s):
        return (await ok(s, "search_sessions", query="exit 3", mode="keyword"),
                await ok(s, "recall_session", session_id=UPLOAD),
                await ok(s, "recent_sessions", n=1),
                await ok(s, "get_file_history", path="run.sh"))
    found, summary, recent, history = serve(env, body)
    hit = found["results"][0]
    assert hit["files_changed"] == ["run.sh"]
    assert any(t["text"] == said for t in hit["context"]), hit["context"]
    assert "My Project/run.sh fails" in " ".join(hit["matches"]), hit["matches"]
    session = summary["session"]
    assert session["first_request"] == said
    assert session["files_changed"][0]["path"] == "run.sh"
    assert recent["sessions"][0]["first_user_message"] == said
    assert recent["sessions"][0]["files_changed"] == ["run.sh"]
    assert [f["path"] for s in history["sessions"] for f in s["files"]] == ["run.sh"]
    assert "project" not in session, "the workspace itself: said once, by being the server's"
    # the rule itself, on data of the API's shape
    ws = "/home/u/proj"
    assert lean({"path": f"{ws}/a.py", "text": f"{ws}/a.py fails", "files_changed": [f"{ws}/b"],
                 "project": f"{ws}/sub", "decisions": [f"moved {ws}/c"]}, ws) == \
        {"path": "a.py", "text": f"{ws}/a.py fails", "files_changed": ["b"], "project": "sub",
         "decisions": [f"moved {ws}/c"]}


def _bad_arguments(tool) -> list[tuple[dict, str, list[str]]]:
    """(arguments, the argument at fault, what the error must say is allowed) for every way
    each argument of `tool` can be wrong, from its own schema."""
    props, required = tool.input_schema["properties"], tool.input_schema.get("required", [])

    def good(name: str):
        p = props[name]
        if "enum" in p:
            return p["enum"][0]
        if p["type"] == "integer":
            return p.get("minimum", 1)
        return {"since": "7d", "until": "1d", "range": "0:1"}.get(name, "x")

    base = {name: good(name) for name in required}
    out = [({**base, "bogus_arg": 1}, "bogus_arg", list(props) or ["no arguments"])]
    for name, p in props.items():
        if "enum" in p:
            allowed = list(p["enum"])
        elif p["type"] == "integer":
            allowed = ["whole number", str(p["minimum"]), str(p["maximum"])]
        else:
            allowed = [str(p["maxLength"]), "characters"]
        rest = {k: v for k, v in base.items() if k != name}
        if name in required:
            out.append((rest, name, allowed))
        out.append(({**rest, name: [1]}, name, allowed))
        out.append(({**rest, name: {"a": 1}}, name, allowed))
        if p["type"] == "integer":
            out += [({**rest, name: str(p["minimum"])}, name, allowed),
                    ({**rest, name: True}, name, allowed),
                    ({**rest, name: 1.5}, name, allowed),
                    ({**rest, name: p["minimum"] - 1}, name, allowed),
                    ({**rest, name: p["maximum"] + 1}, name, allowed)]
        else:
            out.append(({**rest, name: 42}, name, allowed))
            out.append(({**rest, name: "x\u2028" * (p.get("maxLength", 40) + 1)}, name, allowed))
            if "enum" in p:
                out.append(({**rest, name: "nope\u2028next line"}, name, allowed))
            if p.get("minLength"):
                out.append(({**rest, name: ""}, name, allowed))
    return out


def test_every_bad_argument_of_every_tool_is_one_line_naming_it_and_what_is_allowed(env):
    """The SDK's server answered with four lines of pydantic text and a URL; every tool error
    about an argument is now one line that names the argument and says what it may be."""
    async def body(s):
        out = []
        for tool in (await s.list_tools()).tools:
            for args, name, allowed in _bad_arguments(tool):
                out.append((tool.name, args, name, allowed, await call(s, tool.name, **args)))
        return out
    results = serve(env, body)
    assert len(results) > 60
    for tool, args, name, allowed, (err, text) in results:
        where = (tool, args, text)
        assert err, where
        assert len(text.splitlines()) == 1 and len(text) < 500, where
        assert name in text and all(a in text for a in allowed), where
        assert "pydantic" not in text and "http" not in text and "validation error" not in text


def test_the_count_of_waiting_calls_loses_no_update(env):
    """(a bug: `waiting += 1` from two threads at once, unlocked, could lose an update; the
    count then stayed above zero, or below it, and the idle work never ran again.) Made
    certain here: the first call is held between reading the count and writing it back
    until the second has written its own (or, counted under a lock, cannot)."""
    import threading
    second_wrote = threading.Event()
    first, writes = [], []

    class Held(mcp_server.ServedMemory):
        @property
        def waiting(self):
            value = self.__dict__.get("_waiting", 0)
            if not first and threading.current_thread().name == "call 1":
                first.append(value)
                threading.Thread(target=lambda: self.call(lambda mem: None),
                                 name="call 2").start()
                second_wrote.wait(2.0)  # a lock in the way: it cannot come
            return value

        @waiting.setter
        def waiting(self, value):
            self.__dict__["_waiting"] = value
            writes.append(value)
            if threading.current_thread().name == "call 2":
                second_wrote.set()

    memory = Held(str(env.ws))
    writes.clear()
    with memory.lock:  # a call in progress: both wait, and are counted waiting
        one = threading.Thread(target=lambda: memory.call(lambda mem: None), name="call 1")
        one.start()
        while len(writes) < 2:  # both counted themselves waiting; neither can go on
            time.sleep(0.01)
        during = memory.waiting
    one.join()
    for t in threading.enumerate():
        if t.name == "call 2":
            t.join()
    assert during == 2 and memory.waiting == 0, (during, memory.waiting)


def test_a_memory_folder_made_read_only_while_serving(env):
    """(a bug: .prima-memory turned read-only under a running server, find_similar failed with
    "OSError: [Errno 30] ... embed.lock" and rebuild_index answered "running": true, "started":
    true while no rebuild could run.) Now what can be answered is, from the index and vectors as
    they stand, with no lock taken when nothing can be written; rebuild_index says in one line
    that it cannot start, and why."""
    import shutil
    _history(env)
    pidfile = env.root / "server.pid"
    server = [sys.executable, "-m", "prima_memory", "--workspace", str(env.ws), "mcp"]
    if os.geteuid() == 0:
        # root writes through a chmod: a bind mount of the folder, remounted read-only in the
        # server's own mount namespace (EROFS for real, as a read-only file system gives)
        if not (shutil.which("unshare") and shutil.which("nsenter")):
            pytest.skip("unshare and nsenter are needed to make a read-only mount as root")
        script = 'mount --bind "$0" "$0" && echo $$ > "$1" && shift && exec "$@"'
        params = StdioServerParameters(
            command="unshare", args=["-m", "sh", "-c", script, str(env.data), str(pidfile),
                                     *server], env=env.env, cwd=str(env.root))

        def read_only():
            # (a mount with files open for writing cannot be made read-only: the one the server
            # opened them through is detached, and a read-only one takes its place; what the
            # server has open stays open, as on a file system remounted read-only on errors)
            again = 'umount -l "$0" && mount --bind "$0" "$0" && mount -o remount,bind,ro "$0"'
            p = subprocess.run(["nsenter", "-t", pidfile.read_text().strip(), "-m", "sh", "-c",
                                again, str(env.data)], capture_output=True, text=True)
            if p.returncode:
                raise RuntimeError(f"cannot remount read-only here: {p.stderr.strip()[:200]}")
    else:
        params = StdioServerParameters(command=server[0], args=server[1:], env=env.env,
                                       cwd=str(env.root))

        def read_only():
            os.chmod(env.data, 0o555)
    new = "cccc4444-0000-4000-8000-000000000004"

    async def main():
        with open(env.root / "mcp-stderr.log", "a") as errlog:
            async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                out = {"before": await ok(s, "find_similar", query="413 body too large")}
                read_only()
                # nothing new to index: the embed lock was the first thing opened for writing
                out["similar"] = await call(s, "find_similar", query="413 body too large")
                # a session written since: the index would take it, but cannot now
                env.transcript(new, start=OLD + 3 * DAY).exchange("Rotate the TLS certificate",
                                                                  "Rotated it with certbot.")
                for name, tool, args in [
                        ("search", "search_sessions", {"query": "pg_dump"}),
                        ("rebuild", "rebuild_index", {}),
                        ("again", "find_similar", {"query": "413 body too large"})]:
                    out[name] = await call(s, tool, **args)
                return out
    try:
        got = anyio.run(main)
    finally:
        os.chmod(env.data, 0o700)
    best = got["before"]["results"][0]["session_id"]
    assert best == UPLOAD
    for name in ("similar", "again", "search"):
        err, text = got[name]
        assert not err, (name, text)
    similar = json.loads(got["similar"][1])
    assert similar["results"][0]["session_id"] == UPLOAD
    assert similar["results"] == got["before"]["results"]
    assert any("read-only" in w for w in similar["warnings"]), similar
    search = json.loads(got["search"][1])
    assert search["results"][0]["session_id"] == BACKUP
    assert any("read-only" in w for w in search["warnings"]), search
    err, text = got["rebuild"]
    assert err and "\n" not in text, text
    assert "rebuild" in text and "read-only" in text and "running" not in text, text
    assert not env.json("status")["rebuild"]["running"]
