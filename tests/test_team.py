"""The team memory (#40), against a real PostgreSQL with pgvector on this machine: two members on
one machine (two HOMEs) publish, search, show and forget through the CLI; a member of another
team sees none of it; a forget reaches the server and stays; a server killed mid-publish stays
consistent; bad DSNs, an old client and hostile text each get one line and lose nothing."""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import Env, fresh_database, start_postgres, team_schema

psycopg = pytest.importorskip("psycopg", reason="the team memory's driver is not installed")

PROJECT = "github.com/acme/api"
SECRET = "github.com/other/secret"
DAY = 86400


def _dsn(uri: str, **kw) -> str:
    from psycopg.conninfo import make_conninfo
    return make_conninfo(uri, **kw)


@pytest.fixture(scope="module")
def team_db(pg_server):
    """A database with the team schema: ana and bo in team core (which shares PROJECT), carol in
    team other (which shares SECRET). Returns {role: DSN, "admin": DSN}."""
    admin = fresh_database(pg_server, f"team_{os.getpid()}")
    team_schema(admin, {"ana": "core", "bo": "core", "carol": "other"},
                {PROJECT: "core", SECRET: "other"})
    return {"admin": admin, **{r: _dsn(admin, user=r) for r in ("ana", "bo", "carol")}}


@pytest.fixture
def clean_server(team_db):
    """Every member's rows and tombstones gone before the test."""
    with psycopg.connect(team_db["admin"], autocommit=True) as c:
        c.execute("TRUNCATE prima.sessions, prima.terms, prima.tombstones, prima.forgotten_keys "
                  "CASCADE")
    return team_db


def member(tmp_path: Path, name: str) -> Env:
    e = Env(tmp_path / name)
    e.env["GIT_CONFIG_GLOBAL"] = str(e.home / ".gitconfig")
    return e


def sid(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-{n:012x}"


def history(e: Env, sessions) -> None:
    now = time.time()
    for i, (n, prompt, reply) in enumerate(sessions):
        t = e.transcript(sid(n), start=now - (len(sessions) - i) * DAY)
        t.exchange(prompt, reply)


def server_rows(team_db, sql: str, args=()):
    with psycopg.connect(team_db["admin"], autocommit=True) as c:
        return c.execute(sql, args).fetchall()


def joined(e: Env, dsn: str, name: str, project: str = PROJECT):
    e.run("team", "join", dsn, "--member", name, "--project", project)


def publish(e: Env):
    return e.run("team", "publish", "--json", env={"PRIMA_EMBED_BUDGET": "0"})


# -- two members --------------------------------------------------------------------------------

def test_two_members_publish_and_find_each_others_sessions(tmp_path, clean_server):
    ana, bo = member(tmp_path, "ana"), member(tmp_path, "bo")
    history(ana, [(1, "Fix the login redirect loop after the OAuth callback",
                   "The session cookie was SameSite=Strict, so the browser dropped it on the "
                   "callback. Set it to Lax."),
                  (2, "Tune the zebrafinch cache eviction", "LRU with a 5 minute TTL now.")])
    history(bo, [(3, "Why is the nightly pg_dump so slow?", "It dumps the audit table; "
                  "excluded it with --exclude-table-data.")])
    joined(ana, clean_server["ana"], "Ana")
    joined(bo, clean_server["bo"], "Bo")
    assert json.loads(publish(ana).stdout)["sessions"] == 2
    assert json.loads(publish(bo).stdout)["sessions"] == 1

    found = bo.run("search", "--team", "OAuth cookie redirect", "--json")
    hits = json.loads(found.stdout)["results"]
    assert hits and hits[0]["session_id"] == sid(1)
    assert hits[0]["member"] == "Ana" and hits[0]["project"] == PROJECT
    assert " show " in hits[0]["show"] and "--team" in hits[0]["show"]
    assert "resume" not in hits[0]  # (a teammate's session is read, not resumed here)
    printed = bo.run("search", "--team", "OAuth cookie redirect").stdout
    assert "Ana · project github.com/acme/api" in printed

    shown = json.loads(bo.run("show", "--team", sid(1), "--json").stdout)["session"]
    assert shown["member"] == "Ana"
    assert "SameSite=Strict" in " ".join(m["text"] for m in shown["messages"])
    recent = json.loads(ana.run("recent", "--team", "--json").stdout)["sessions"]
    assert {d["session_id"] for d in recent} == {sid(1), sid(2), sid(3)}

    # a second publish sends nothing: nothing changed
    assert json.loads(publish(ana).stdout)["sessions"] == 0
    # and a republish from scratch (a lost ledger) writes the same rows, no second copy
    (ana.ws / ".prima-memory" / "team-published.json").unlink()
    publish(ana)
    assert server_rows(clean_server, "SELECT count(*) FROM prima.sessions")[0][0] == 3
    assert server_rows(clean_server, "SELECT count(*) FROM prima.messages WHERE session IN "
                       "(SELECT id FROM prima.sessions WHERE session_id = %s)", (sid(1),)
                       )[0][0] == 2


@pytest.mark.parametrize("agent", ["gemini-cli", "opencode", "aider"])
def test_another_agents_session_is_published_with_its_label(tmp_path, clean_server, monkeypatch,
                                                           agent):
    # (#41) every agent's sessions go to the team, each with its label: a file, a database's
    # rows, a history kept in the project
    from prima_memory.sources.registry import source_named
    ana, bo = member(tmp_path, "ana"), member(tmp_path, "bo")
    for k in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        monkeypatch.setenv(k, ana.env[k])  # (the sample goes where Ana's agent keeps it)
    src = source_named(agent)
    src.sample(str(ana.ws), "why does the narwhal importer drop rows")
    joined(ana, clean_server["ana"], "Ana")
    joined(bo, clean_server["bo"], "Bo")
    assert json.loads(publish(ana).stdout)["sessions"] == 1
    hits = json.loads(bo.run("search", "--team", "narwhal importer", "--json").stdout)["results"]
    assert [(h["member"], h["label"], h["source"]) for h in hits] == [("Ana", src.label, agent)]


def test_the_team_ranks_a_history_as_the_member_s_own_index_does(tmp_path, clean_server):
    """The same ranking at home and on the server: one member's history, searched locally and
    with --team, gives the same sessions in the same order."""
    ana = member(tmp_path, "ana")
    words = ["cache", "eviction", "redirect", "cookie", "deploy", "rollback", "flaky", "test",
             "migration", "index", "timeout", "retry", "bedroom", "docker"]
    rows = []
    for n in range(24):
        a, b, c = words[n % 14], words[(n * 5 + 3) % 14], words[(n * 3 + 1) % 14]
        extra = (" See config/retry_backoff.yaml." if n % 4 == 0 else
                 " The Café CRÈME label, cafe\u0301 too." if n % 5 == 0 else
                 " retry backoff yaml, apart." if n % 3 == 0 else "")
        rows.append((100 + n, f"Look at the {a} and the {b} ({n})",
                     f"Changed the {c} handling; the {a} now {b}s twice. " * (1 + n % 3)
                     + extra))
    history(ana, rows)
    joined(ana, clean_server["ana"], "Ana")
    publish(ana)
    for query in ("cache eviction", "room", "flaky test retry", "docker",
                  "retry_backoff.yaml", "café crème"):
        here = json.loads(ana.run("search", "--mode", "keyword", query, "--json").stdout)
        there = json.loads(ana.run("search", "--team", "--mode", "keyword", query,
                                   "--json").stdout)
        assert here["results"] or query == "flaky test retry", query
        assert [r["session_id"] for r in there["results"]] == \
            [r["session_id"] for r in here["results"]], query
        assert [r["score"] for r in there["results"]] == [r["score"] for r in here["results"]]


# -- access ---------------------------------------------------------------------------------------

def test_a_member_of_another_team_reads_none_of_it_and_cannot_write_into_it(tmp_path,
                                                                           clean_server):
    ana, carol = member(tmp_path, "ana"), member(tmp_path, "carol")
    history(ana, [(1, "Rotate the signing keys", "Rotated; the old key stays valid a day.")])
    history(carol, [(9, "Secret migration plan", "Phase one moves the ledger.")])
    joined(ana, clean_server["ana"], "Ana")
    publish(ana)
    joined(carol, clean_server["carol"], "Carol", SECRET)
    publish(carol)
    assert json.loads(carol.run("search", "--team", "signing keys", "--json").stdout
                      )["results"] == []
    assert json.loads(ana.run("search", "--team", "ledger migration", "--json").stdout
                      )["results"] == []
    with psycopg.connect(clean_server["carol"], autocommit=True) as c:
        assert c.execute("SELECT count(*) FROM prima.messages").fetchone()[0] == 2  # her own
        assert c.execute("SELECT count(*) FROM prima.terms WHERE term = 'signing'"
                         ).fetchone()[0] == 0
        # the lookups that run as the tables' owner (for their index) apply the same rule
        for sql in ("SELECT prima.messages_matching('''signing''', NULL)",
                    "SELECT prima.terms_like('%sign%', 100)",
                    "SELECT prima.titles_like('%signing%')",
                    "SELECT * FROM prima.paths_like('%')"):
            assert c.execute(sql).fetchall() == [], sql
        assert c.execute("SELECT count(*) FROM prima.messages_matching('''ledger''', NULL)"
                         ).fetchone()[0] == 1  # (her own)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("INSERT INTO prima.sessions(source, session_id, project, label, title, "
                      "title_folded) VALUES ('claude-code', 'x', %s, 'x', 'forged', 'forged')",
                      (PROJECT,))
        # (ana's rows are not carol's to delete)
        assert c.execute("DELETE FROM prima.sessions WHERE member = 'ana'").rowcount == 0
    assert server_rows(clean_server, "SELECT count(*) FROM prima.sessions")[0][0] == 2
    # a member deletes no word of a project's vocabulary (others' searches rest on it); one
    # no message holds any more goes through drop_unheld, which keeps what any message holds
    with psycopg.connect(clean_server["bo"], autocommit=True) as c:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("DELETE FROM prima.terms")
        c.execute("SELECT prima.drop_unheld(%s, ARRAY['signing', 'rotated'])", (PROJECT,))
    assert server_rows(clean_server, "SELECT count(*) FROM prima.terms WHERE term IN "
                       "('signing', 'rotated')")[0][0] == 2
    # a role that is no member runs none of them
    with psycopg.connect(clean_server["admin"], autocommit=True) as c:
        c.execute("DROP ROLE IF EXISTS stranger")
        c.execute("CREATE ROLE stranger LOGIN")
    with psycopg.connect(_dsn(clean_server["admin"], user="stranger"), autocommit=True) as c:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("SELECT prima.messages_matching('''signing''', NULL)")
    # carol publishing her project under ana's project name is refused, in one line
    carol2 = member(tmp_path, "carol2")
    history(carol2, [(10, "A forged session", "Nothing.")])
    joined(carol2, clean_server["carol"], "Carol", PROJECT)
    p = carol2.run("team", "publish", check=False)
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1
    assert "refused" in p.stderr


def test_an_admin_removes_any_members_rows(tmp_path, clean_server):
    ana = member(tmp_path, "ana")
    history(ana, [(1, "Something to remove", "Removed.")])
    joined(ana, clean_server["ana"], "Ana")
    publish(ana)
    from prima_memory.storage.postgres import TeamStore
    st = TeamStore(clean_server["admin"])
    st.add_member("dana", "core")
    st.grant_admin("dana")
    st.close()
    with psycopg.connect(_dsn(clean_server["admin"], user="dana"), autocommit=True) as c:
        assert c.execute("DELETE FROM prima.sessions WHERE member = 'ana'").rowcount == 1


# -- forgetting -----------------------------------------------------------------------------------

def test_a_forget_reaches_the_server_and_no_later_publish_brings_it_back(tmp_path,
                                                                          clean_server):
    ana, bo = member(tmp_path, "ana"), member(tmp_path, "bo")
    history(ana, [(1, "The zanzibar outage postmortem", "Root cause: the zanzibar queue."),
                  (2, "Unrelated work", "Fine.")])
    joined(ana, clean_server["ana"], "Ana")
    joined(bo, clean_server["bo"], "Bo")
    publish(ana)
    assert json.loads(bo.run("search", "--team", "zanzibar", "--json").stdout)["results"]
    out = json.loads(ana.run("forget", sid(1), "--yes", "--json").stdout)
    assert out["team"]["error"] is None
    assert json.loads(bo.run("search", "--team", "zanzibar", "--json").stdout)["results"] == []
    assert server_rows(clean_server, "SELECT count(*) FROM prima.terms WHERE term = 'zanzibar'"
                       )[0][0] == 0  # (its words, which only it held, are gone too)
    # another machine of ana's, which still has the transcript, publishes it: refused
    other = member(tmp_path, "ana-laptop")
    history(other, [(1, "The zanzibar outage postmortem", "Root cause: the zanzibar queue.")])
    joined(other, clean_server["ana"], "Ana")
    got = json.loads(publish(other).stdout)
    assert got["sessions"] == 0 and got["refused"] == 1
    assert json.loads(bo.run("search", "--team", "zanzibar", "--json").stdout)["results"] == []


def test_a_forget_made_while_the_server_is_away_is_sent_by_the_next_publish(tmp_path,
                                                                            clean_server):
    ana = member(tmp_path, "ana")
    history(ana, [(1, "The quokka rollout", "Rolled out to 5%.")])
    joined(ana, clean_server["ana"], "Ana")
    publish(ana)
    away = {"PRIMA_TEAM_DSN": "postgresql://ana@127.0.0.1:9/nowhere?connect_timeout=1"}
    out = json.loads(ana.run("forget", sid(1), "--yes", "--json", env=away).stdout)
    assert "cannot be reached" in out["team"]["error"]
    said = ana.run("status", env=away).stdout  # (one line, from what this machine knows)
    assert [x for x in said.splitlines() if x.startswith("team ")][0].count("cannot be reached") == 1
    assert server_rows(clean_server, "SELECT count(*) FROM prima.sessions")[0][0] == 1
    got = json.loads(publish(ana).stdout)
    assert got["forgotten"] == 1
    assert server_rows(clean_server, "SELECT count(*) FROM prima.sessions")[0][0] == 0


# -- failing safe ---------------------------------------------------------------------------------

def test_a_bad_dsn_is_one_line_and_keeps_nothing(tmp_path, clean_server):
    ana = member(tmp_path, "ana")
    history(ana, [(1, "Anything", "Something.")])
    for dsn in ("not a dsn at all", "postgresql://ana:hunter2@127.0.0.1:9/db?connect_timeout=1",
                _dsn(clean_server["admin"], user="nobody", password="hunter2"),
                _dsn(clean_server["admin"], dbname="no_such_db")):
        p = ana.run("team", "join", dsn, "--project", PROJECT, check=False)
        assert p.returncode != 0, dsn
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert "hunter2" not in p.stderr + p.stdout
    assert not (ana.home / ".local" / "share" / "prima-memory" / "team.json").exists()
    assert "not in a team" in ana.run("team", "status").stdout


def test_the_password_is_kept_by_the_user_alone_never_in_the_project_or_a_log(tmp_path,
                                                                             clean_server):
    ana = member(tmp_path, "ana")
    history(ana, [(1, "Anything", "Something.")])
    dsn = _dsn(clean_server["ana"], password="s3cr3t-pw")  # (the socket trusts; libpq sends it)
    ana.run("team", "join", dsn, "--member", "Ana", "--project", PROJECT)
    publish(ana)
    status = ana.run("team", "status").stdout
    assert "s3cr3t-pw" not in status and "server" in status
    kept = ana.home / ".local" / "share" / "prima-memory" / "team.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    for f in ana.ws.rglob("*"):
        if f.is_file():
            assert b"s3cr3t-pw" not in f.read_bytes(), f


def test_a_client_older_than_the_server_schema_reads_but_refuses_to_write(tmp_path,
                                                                         clean_server):
    ana, bo = member(tmp_path, "ana"), member(tmp_path, "bo")
    history(ana, [(1, "The axolotl migration", "Done.")])
    joined(ana, clean_server["ana"], "Ana")
    joined(bo, clean_server["bo"], "Bo")
    publish(ana)
    server_rows(clean_server, "INSERT INTO prima.version(version) VALUES (999) RETURNING 1")
    try:
        history(bo, [(2, "Something new", "New.")])
        p = bo.run("team", "publish", check=False)
        assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1
        assert "newer than this prima-memory" in p.stderr
        assert json.loads(bo.run("search", "--team", "axolotl", "--json").stdout)["results"]
    finally:
        server_rows(clean_server, "DELETE FROM prima.version WHERE version = 999 RETURNING 1")


def test_local_search_never_waits_for_the_server(tmp_path, clean_server):
    ana = member(tmp_path, "ana")
    history(ana, [(1, "The local pangolin", "Here.")])
    away = {"PRIMA_TEAM_DSN": "postgresql://ana@10.255.255.1:5432/db?connect_timeout=30"}
    started = time.monotonic()
    hits = json.loads(ana.run("search", "pangolin", "--json", "--mode", "keyword",
                              env=away).stdout)["results"]
    assert hits and time.monotonic() - started < 25  # (a connect would wait 30 s)


def test_hostile_text_goes_to_the_server_and_comes_back_as_it_was_written(tmp_path,
                                                                        clean_server):
    ana = member(tmp_path, "ana")
    big = ("wombat " * 100 + "\n") * 7000  # ~5 MB
    t = ana.transcript(sid(1), start=time.time() - 3600)
    t.exchange("Robert'); DROP TABLE prima.sessions;-- and \\x00 and </prima-memory>",
               "a NUL \0 here, a lone \ud800 surrogate, \x1b[31mred\x1b[0m, ''quotes''")
    t.exchange("Read the big log", "the needle is marmoset " + big)
    joined(ana, clean_server["ana"], "Ana")
    publish(ana)
    hits = json.loads(ana.run("search", "--team", "marmoset", "--json").stdout)["results"]
    assert [h["session_id"] for h in hits] == [sid(1)]
    shown = json.loads(ana.run("show", "--team", sid(1), "--json").stdout)["session"]
    texts = [m["text"] for m in shown["messages"]]
    assert any("DROP TABLE prima.sessions" in x and "</prima-memory>" in x for x in texts)
    assert any("a NUL \ufffd here" in x for x in texts)
    # an id's prefix is taken as text: LIKE's wildcards find nothing, said in one line
    for odd in ("%", "_", "'; --", "../x"):
        p = ana.run("show", "--team", odd, check=False)
        assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1, (odd, p.stderr)
        assert "no session matches" in p.stderr
    assert server_rows(clean_server, "SELECT count(*) FROM prima.sessions")[0][0] == 1


# -- a server killed mid-publish --------------------------------------------------------------------

@pytest.fixture
def own_server():
    """A server of this test's own, to kill."""
    server = start_postgres("own")
    team_schema(server.get_uri("postgres"), {"ana": "core"}, {PROJECT: "core"})
    return server


def _restart(server, pid: int) -> None:
    """The killed server started again, once its process is gone (reaped)."""
    import psutil
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                os.waitpid(pid, os.WNOHANG) if pid == os.getpid() else None
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    server._postmaster_info = None
    server.ensure_postgres_running()


@pytest.mark.parametrize("killed", ["the server", "the publisher"])
def test_a_publish_killed_midway_leaves_the_server_consistent_and_the_next_one_finishes(
        tmp_path, own_server, killed):
    ana = member(tmp_path, "ana")
    history(ana, [(n, f"Session number {n} about the heron", "Reply " * 2000) for n in
                  range(1, 61)])
    uri = own_server.get_uri("postgres")
    joined(ana, _dsn(uri, user="ana"), "Ana")
    ana.run("index")
    e = dict(ana.env, PRIMA_EMBED_BUDGET="0")
    proc = subprocess.Popen([sys.executable, "-m", "prima_memory", "team", "publish"],
                            cwd=ana.ws, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    with psycopg.connect(uri, autocommit=True) as c:
        while time.monotonic() < deadline and c.execute(
                "SELECT count(*) FROM prima.sessions").fetchone()[0] < 3:
            time.sleep(0.002)
    if killed == "the server":
        pid = own_server.get_pid()
        os.kill(pid, signal.SIGKILL)
        _out, err = proc.communicate(timeout=60)
        _restart(own_server, pid)
        assert proc.returncode == 1 and len(err.strip().splitlines()) == 1, err
        assert "last error" in ana.run("team", "status").stdout
    else:
        proc.kill()
        proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL
    # every session on the server is whole: all of its messages, or it is not there
    with psycopg.connect(uri, autocommit=True) as c:
        rows = c.execute("SELECT s.session_id, count(m.seq) FROM prima.sessions s LEFT JOIN "
                         "prima.messages m ON m.session = s.id GROUP BY s.id").fetchall()
    assert 3 <= len(rows) < 60 and all(n == 2 for _s, n in rows), rows
    publish(ana)
    with psycopg.connect(uri, autocommit=True) as c:
        assert c.execute("SELECT count(*), count(DISTINCT session_id) FROM prima.sessions"
                         ).fetchone() == (60, 60)
        assert c.execute("SELECT count(*) FROM prima.messages").fetchone()[0] == 120


# -- after Stop, in the background --------------------------------------------------------------------

def test_a_stop_publishes_in_the_background_with_the_vectors_and_the_hook_waits_for_none_of_it(
        tmp_path, clean_server):
    ana, bo = member(tmp_path, "ana"), member(tmp_path, "bo")
    joined(ana, clean_server["ana"], "Ana")
    joined(bo, clean_server["bo"], "Bo")
    t = ana.transcript(sid(7), start=time.time() - 600)
    t.exchange("How do we rotate the kestrel certificates?", "With certbot renew and a reload.")
    payload = {"session_id": sid(7), "transcript_path": str(t.path), "cwd": str(ana.ws),
               "hook_event_name": "Stop", "stop_hook_active": False,
               "last_assistant_message": "With certbot renew and a reload."}
    p = ana.run("hook", "stop", input=json.dumps(payload), env={"PRIMA_BACKGROUND": "1"})
    assert p.returncode == 0 and p.stdout == ""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not server_rows(
            clean_server, "SELECT count(*) FROM prima.windows")[0][0]:
        time.sleep(0.2)
    assert server_rows(clean_server, "SELECT count(*) FROM prima.sessions")[0][0] == 1
    assert server_rows(clean_server, "SELECT count(*) FROM prima.windows")[0][0] >= 1
    # found by meaning alone: none of these words is in the session
    hits = json.loads(bo.run("search", "--team", "--mode", "semantic",
                             "renewing TLS certs for the web server", "--json").stdout)["results"]
    assert [h["session_id"] for h in hits][:1] == [sid(7)]


# -- MCP and /recall --------------------------------------------------------------------------------

def _two_members(tmp_path, team_db):
    ana, bo = member(tmp_path, "ana"), member(tmp_path, "bo")
    history(ana, [(1, "Fix the login redirect loop after the OAuth callback",
                   "The session cookie was SameSite=Strict, so the browser dropped it on the "
                   "callback. Set it to Lax.")])
    history(bo, [(2, "Local work of bo's", "Nothing about logins.")])
    joined(ana, team_db["ana"], "Ana")
    joined(bo, team_db["bo"], "Bo")
    publish(ana)
    return ana, bo


def test_the_mcp_tools_read_the_team_with_scope_team(tmp_path, clean_server):
    pytest.importorskip("mcp")
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    _ana, bo = _two_members(tmp_path, clean_server)
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "prima_memory", "--workspace", str(bo.ws), "mcp"], env=bo.env, cwd=str(bo.root))

    async def main():
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert "team" in tools["search_sessions"].input_schema["properties"]["scope"]["enum"]
            got = {}
            for name, args in (("search_sessions", {"query": "OAuth cookie", "scope": "team"}),
                               ("search_sessions", {"query": "OAuth cookie"}),
                               ("recall_session", {"session_id": sid(1), "scope": "team",
                                                   "detail": "turns"}),
                               ("recent_sessions", {"scope": "team"})):
                r = await s.call_tool(name, args)
                assert not r.is_error, r.content[0].text
                got.setdefault(name, []).append(json.loads(r.content[0].text))
            return got
    got = anyio.run(main)
    team, local = got["search_sessions"]
    assert [h["session_id"] for h in team["results"]] == [sid(1)]
    assert team["results"][0]["member"] == "Ana" and team["scope"] == "team"
    assert all(h["session_id"] != sid(1) for h in local.get("results", []))
    assert "SameSite" in json.dumps(got["recall_session"][0])
    assert sid(1) in json.dumps(got["recent_sessions"][0])


def test_recall_team_in_a_prompt_answers_from_the_server(tmp_path, clean_server):
    _ana, bo = _two_members(tmp_path, clean_server)
    payload = {"session_id": sid(99), "cwd": str(bo.ws), "hook_event_name": "UserPromptSubmit",
               "prompt": "/prima-memory:recall --team OAuth cookie redirect",
               "transcript_path": str(bo.root / "none.jsonl")}
    hook = {"CLAUDE_PROJECT_DIR": str(bo.ws)}
    context = bo.run("hook", "user-prompt-submit", input=json.dumps(payload), env=hook).stdout
    assert context.startswith("<prima-memory>") and context.count("</prima-memory>") == 1
    assert "team's memory" in context and "on the team's server" in context
    assert "Fix the login redirect loop" in context and "Ana · project github.com/acme/api" in context
    assert "--team" in context  # (the way back: show --team)
    # a server that is away: one note, the prompt goes on
    payload["prompt"] = "/prima-memory:recall --team anything"
    p = bo.run("hook", "user-prompt-submit", input=json.dumps(payload),
               env={**hook, "PRIMA_TEAM_DSN": "postgresql://bo@127.0.0.1:9/x?connect_timeout=1"})
    assert p.returncode == 0 and "cannot be reached" in p.stdout


def test_leave_delete_removes_this_projects_rows_and_a_join_again_publishes_them_again(
        tmp_path, clean_server):
    ana = member(tmp_path, "ana")
    history(ana, [(1, "The ocelot feature", "Shipped.")])
    joined(ana, clean_server["ana"], "Ana")
    publish(ana)
    other = member(tmp_path, "ana-other-project")
    history(other, [(2, "The other project's work", "Done.")])
    joined(other, clean_server["ana"], "Ana", "github.com/acme/web")
    server_rows(clean_server, "INSERT INTO prima.projects VALUES ('github.com/acme/web', 'core') "
                "RETURNING 1")
    publish(other)
    left = json.loads(ana.run("team", "leave", "--delete", "--json").stdout)
    assert left["sessions_deleted"] == 1
    assert [r[0] for r in server_rows(clean_server, "SELECT project FROM prima.sessions")] == \
        ["github.com/acme/web"]  # (the other project's stay)
    assert server_rows(clean_server, "SELECT count(*) FROM prima.terms WHERE term = 'ocelot'"
                       )[0][0] == 0
    assert "not in a team" in ana.run("team", "status").stdout
    joined(ana, clean_server["ana"], "Ana")
    assert json.loads(publish(ana).stdout)["sessions"] == 1


# -- what is never published ---------------------------------------------------------------------------

def test_secrets_private_spans_and_opted_out_sessions_never_reach_the_server(tmp_path,
                                                                             clean_server):
    from test_hooks import payload, run_hook
    ana = member(tmp_path, "ana")
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    t = ana.transcript(sid(1), start=time.time() - 7200)
    t.exchange(f"Deploy with <private>zqxhiddenhost</private> and token {token}", "Deployed.")
    off = ana.transcript(sid(2), start=time.time() - 3600)
    assert run_hook(ana, "session-start", payload(ana, "session-start", off.session_id),
                    extra_env={"PRIMA_MEMORY": "off"}).rc == 0
    off.exchange("the zqxoptedout draft", "the zqxoptedout reply")
    joined(ana, clean_server["ana"], "Ana")
    publish(ana)
    dump = json.dumps(server_rows(clean_server, "SELECT s.*, m.text FROM prima.sessions s "
                                  "JOIN prima.messages m ON m.session = s.id"), default=str)
    assert "Deploy with" in dump
    for never in ("zqxhiddenhost", token, "zqxoptedout", sid(2)):
        assert never not in dump, never
    assert server_rows(clean_server, "SELECT count(*) FROM prima.tombstones")[0][0] == 0
    assert server_rows(clean_server, "SELECT count(*) FROM prima.terms WHERE term IN "
                       "('zqxhiddenhost', 'zqxoptedout')")[0][0] == 0
    # a project that opts out later: nothing more leaves it
    (ana.ws / ".prima-memory-off").write_text("")
    t.exchange("one more about the zqxlater thing", "Noted.")
    got = json.loads(publish(ana).stdout)
    assert "opted out" in got.get("skipped", "")
    assert server_rows(clean_server, "SELECT count(*) FROM prima.terms WHERE term = 'zqxlater'"
                       )[0][0] == 0


@pytest.mark.parametrize("url, name", [
    ("git@github.com:acme/api.git", "github.com/acme/api"),
    ("https://github.com/acme/api", "github.com/acme/api"),
    ("https://user:tok@GitHub.com/acme/api.git/", "github.com/acme/api"),
    ("ssh://git@github.com:22/acme/api.git", "github.com/acme/api"),
    ("/srv/git/api.git", "/srv/git/api.git"),
])
def test_a_project_is_named_by_its_git_remote_however_it_is_spelled(url, name):
    from prima_memory.team import remote_name
    assert remote_name(url) == name


def test_join_names_the_project_by_its_origin_and_the_member_by_git(tmp_path, clean_server):
    ana = member(tmp_path, "ana")
    history(ana, [(1, "Named by git", "Yes.")])
    for args in (["init", "-q"], ["remote", "add", "origin", "git@github.com:acme/api.git"],
                 ["config", "user.name", "Ana From Git"]):
        subprocess.run(["git", "-C", str(ana.ws), *args], check=True, env=ana.env)
    d = json.loads(ana.run("team", "join", clean_server["ana"], "--json").stdout)
    assert d["project"] == PROJECT and d["member"] == "Ana From Git" and "warning" not in d
    publish(ana)
    assert server_rows(clean_server, "SELECT project, author FROM prima.sessions s JOIN "
                       "prima.members m USING (member)")  # (published under that project)
    hits = json.loads(ana.run("search", "--team", "Named by git", "--json").stdout)["results"]
    assert hits[0]["member"] == "Ana From Git" and hits[0]["project"] == PROJECT


def test_the_background_of_meaning_is_sized_by_what_the_member_reads(clean_server, monkeypatch):
    """Past SAMPLE_EXACT windows the server is not counted: the planner's estimate of all
    windows, times the share of sessions the member reads (carol reads one of four)."""
    from prima_memory.storage.postgres import TeamStore, store as pgstore
    vec = "[" + ",".join(["0.05"] * 384) + "]"

    def session(n: int, project: str) -> dict:
        return {"project": project, "source": "claude-code", "session_id": sid(n),
                "label": "[transcript]", "branch": None, "author": None, "title": f"s{n}",
                "started_at": 1.0 * n, "ended_at": 2.0 * n, "tags": "", "decisions": "",
                "message_count": 2, "files_count": 0, "full": True, "changes": [],
                "messages": [(0, f"k{n}", "user", 1.0, 0, None, "q"),
                             (1, f"l{n}", "assistant", 2.0, 0, 0, "a")],
                "windows": [(1, w, "m/windows-v1", vec) for w in range(5)]}
    for role, project, ns in (("ana", PROJECT, (1, 2, 3)), ("carol", SECRET, (4,))):
        st = TeamStore(clean_server[role])
        for n in ns:
            assert st.publish(session(n, project))
        st.close()
    with psycopg.connect(clean_server["admin"], autocommit=True) as c:
        c.execute("ANALYZE prima.windows")
        c.execute("ANALYZE prima.sessions")
    monkeypatch.setattr(pgstore, "SAMPLE_EXACT", 0)
    carol = TeamStore(clean_server["carol"])
    try:
        with carol.read():
            n, mean, _var = carol.background("m/windows-v1", vec, 4000)
    finally:
        carol.close()
    assert n == 5 and abs(mean - 1.0) < 1e-6  # (her 5 of the 20 windows)


@pytest.mark.parametrize("ledger", [
    '{"sessions": {"claude-code\\u0000x": 5}, "forgot": "all"}',
    '{"sessions": {"claude-code\\u000000000001-0000-4000-8000-000000000001": [[], "a", 1, 0]}}',
    "[1, 2", "\\u0000" * 10, None, "fifo"])
def test_a_ledger_that_came_with_the_folder_publishes_everything_again(tmp_path, clean_server,
                                                                       ledger):
    """A project's folder may be a clone: its ledger, a file, a link or a FIFO, is no reason to
    leave a session unpublished, nor to crash or hang."""
    ana = member(tmp_path, "ana")
    history(ana, [(1, "The cloned ibis", "Here.")])
    joined(ana, clean_server["ana"], "Ana")
    ana.run("index")
    path = ana.ws / ".prima-memory" / "team-published.json"
    if ledger == "fifo":  # (opened as a file, it would wait for a writer for ever)
        os.mkfifo(path)
    elif ledger is None:  # a link to a ledger elsewhere that claims it all
        elsewhere = tmp_path / "elsewhere.json"
        elsewhere.write_text(json.dumps({"sessions": {f"claude-code\0{sid(1)}": [
            [0, 0, 0, "", "", "", ""], 99, "", 0]}}))
        path.symlink_to(elsewhere)
    else:
        path.write_text(ledger)
    assert json.loads(publish(ana).stdout)["sessions"] == 1
    assert server_rows(clean_server, "SELECT count(*) FROM prima.sessions")[0][0] == 1


def test_a_forget_typed_in_claude_code_leaves_the_server_to_the_background(tmp_path,
                                                                         clean_server):
    """/prima-memory:forget --yes ID runs in the prompt's hook: a server away must not hold the
    prompt, so the hook does not call it; the next publish (the Stop's background) tells it."""
    ana = member(tmp_path, "ana")
    history(ana, [(1, "The tapir incident", "Resolved."), (2, "Other", "Fine.")])
    joined(ana, clean_server["ana"], "Ana")
    publish(ana)
    data = {"session_id": sid(9), "cwd": str(ana.ws), "hook_event_name": "UserPromptSubmit",
            "prompt": f"/prima-memory:forget --yes {sid(1)}",
            "transcript_path": str(ana.root / "none.jsonl")}
    said = ana.run("hook", "user-prompt-submit", input=json.dumps(data),
                   env={"CLAUDE_PROJECT_DIR": str(ana.ws)}).stdout
    assert "forgot, for good" in said and sid(1) in said
    assert server_rows(clean_server, "SELECT count(*) FROM prima.sessions WHERE session_id = %s",
                       (sid(1),))[0][0] == 1  # (not yet: the hook did not call the server)
    assert json.loads(publish(ana).stdout)["forgotten"] == 1
    assert server_rows(clean_server, "SELECT count(*) FROM prima.sessions WHERE session_id = %s",
                       (sid(1),))[0][0] == 0


def test_setup_refuses_a_pgvector_older_than_0_8_before_it_changes_anything(pg_server):
    """hnsw.iterative_scan, which a search of a member who reads part of the server needs, came
    with pgvector 0.8: an older one is said in one line, before any step runs."""
    from prima_memory.storage.postgres import TeamError, TeamStore
    uri = fresh_database(pg_server, f"old_vector_{os.getpid()}")
    with psycopg.connect(uri, autocommit=True) as c:
        # (the wheel ships 0.8 alone: the catalog says an older one is installed, as a server
        # that has run pgvector since 0.7 would)
        c.execute("CREATE EXTENSION vector")
        c.execute("UPDATE pg_extension SET extversion = '0.7.4' WHERE extname = 'vector'")
    st = TeamStore(uri)
    try:
        with pytest.raises(TeamError, match="needs 0.8 or later"):
            st.migrate()
        assert st.server_version() == 0
    finally:
        st.close()
