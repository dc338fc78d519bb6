"""Search across all projects (--all-projects, the MCP tools' scope "all", /recall --all), as a
user meets it: every project folder under each Claude Code config folder, Codex rollouts and
VS Code chats of any folder, in one ranked list whose hits name their project and the way back
to it; and where their memories live: a project's own .prima-memory when this user made it,
else the user-level store, never a new .prima-memory in a project folder, never a cloned
repository's index, and nothing paid by the hooks."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, Transcript, encode

DAY = 86400
T0 = time.time() - 3 * DAY


# -- a machine with several projects ------------------------------------------------------------

def claude(env, folder: Path, sid: str, prompt: str, answer: str, *, start: float = T0,
           config: Path | None = None) -> Transcript:
    folder.mkdir(parents=True, exist_ok=True)
    pdir = (config or env.claude) / "projects" / encode(str(folder))
    t = Transcript(pdir / f"{sid}.jsonl", sid, str(folder), start=start)
    t.exchange(prompt, answer)
    return t


def codex(env, cwd: str, sid: str, prompt: str, answer: str, *, day: str = "2026/11/20") -> Path:
    d = Path(env.env["CODEX_HOME"]) / "sessions" / day
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"rollout-2026-11-20T10-00-00-{sid}.jsonl"

    def w(kind, payload):
        return {"timestamp": "2026-11-20T10:00:00Z", "type": kind, "payload": payload}

    def msg(role, text):
        kind = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}
    lines = [w("session_meta", {"id": sid, "timestamp": "2026-11-20T10:00:00Z", "cwd": cwd}),
             w("response_item", msg("user", prompt)), w("response_item", msg("assistant", answer))]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def vscode(env, folder: str, sid: str, prompt: str, answer: str) -> Path:
    space = Path(env.env["PRIMA_VSCODE_USER_DIRS"]) / "workspaceStorage" / f"ws-{sid}"
    (space / "chatSessions").mkdir(parents=True, exist_ok=True)
    (space / "workspace.json").write_text(json.dumps({"folder": f"file://{folder}"}))
    doc = {"version": 3, "sessionId": sid, "creationDate": int(T0 * 1000),
           "responderUsername": "GitHub Copilot", "requests": [{
               "requestId": "r1", "message": {"text": prompt, "parts": []},
               "response": [{"value": answer}], "timestamp": int(T0 * 1000) + 60_000,
               "agent": {"extensionId": {"value": "GitHub.copilot-chat"}}}]}
    path = space / "chatSessions" / f"{sid}.json"
    path.write_text(json.dumps(doc))
    return path


def sid(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-{n:012x}"


@pytest.fixture
def machine(env, tmp_path):
    """Three projects of Claude Code's, none with a .prima-memory; the user works in env.ws."""
    code = tmp_path / "code"
    env.webapp, env.api, env.infra = code / "webapp", code / "api-server", code / "infra"
    claude(env, env.webapp, sid(1), "OAuth redirect loops back to the login page after sign in",
           "The session cookie was SameSite=Strict, so the browser dropped it on the OAuth "
           "callback: set it to Lax.")
    claude(env, env.api, sid(2), "Rate limiter returns 429 for every request after deploy",
           "The limiter keyed on the load balancer's address: key on X-Forwarded-For instead.")
    claude(env, env.infra, sid(3), "Nightly pg_dump backup to S3 fails with AccessDenied",
           "The bucket policy lacked s3:PutObject for the backup role: added it.")
    env.run("index")  # the user's own workspace, env.ws, has a memory (empty of these)
    return env


def data_dirs(root: Path) -> list[str]:
    return sorted(str(p.parent) for p in root.rglob(".prima-memory"))


def user_store(env) -> Path:
    return Path(env.env["XDG_DATA_HOME"]) / "prima-memory" / "memories"


def everywhere(env, query: str, *extra, cwd=None) -> dict:
    return env.json("search", query, "--all-projects", "--mode", "keyword", *extra, cwd=cwd)


# -- the CLI -------------------------------------------------------------------------------------

def test_one_search_finds_every_projects_sessions_naming_each_project(machine, tmp_path):
    env = machine
    got = everywhere(env, "OAuth redirect login")
    (hit,) = got["results"]
    assert (hit["session_id"], hit["workspace"], hit["label"]) == \
        (sid(1), str(env.webapp), "[transcript]")
    assert hit["resume"] == f"cd {tmp_path}/code/webapp && claude --resume {sid(1)}"
    assert hit["show"].endswith(f"show {sid(1)} --all-projects")
    assert got["scope"] == "all" and got["projects"] >= 3
    # the way back runs as printed: `show` finds it from anywhere
    shown = subprocess.run(["bash", "-c", hit["show"] + " --json"], capture_output=True,
                           text=True, env=env.env, cwd=str(tmp_path))
    assert json.loads(shown.stdout)["session"]["session_id"] == sid(1), shown.stderr
    text = env.run("search", "--all-projects", "rate limiter 429", "--mode", "keyword").stdout
    assert f"project {env.api}" in text and f"cd {env.api} && claude --resume {sid(2)}" in text


def test_without_the_switch_nothing_changes(machine):
    env = machine
    assert env.search("OAuth redirect") == []  # env.ws has none of the other projects
    assert not user_store(machine).exists()


def test_no_memory_appears_in_a_project_folder_and_the_users_store_holds_them(machine, tmp_path):
    env = machine
    everywhere(env, "backup")
    assert data_dirs(tmp_path / "code") == []  # none made in webapp, api-server, infra
    folders = sorted((p / "folder").read_text() for p in (user_store(env) / "projects").iterdir())
    assert folders == sorted([str(env.webapp), str(env.api), str(env.infra)])
    assert oct((user_store(env)).stat().st_mode & 0o777) == "0o700"
    for p in (user_store(env) / "projects").iterdir():
        assert oct(p.stat().st_mode & 0o777) == "0o700"


def test_from_a_folder_with_no_memory_at_all(machine, tmp_path):
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    got = everywhere(machine, "pg_dump backup", cwd=nowhere)
    assert [h["session_id"] for h in got["results"]] == [sid(3)]
    assert data_dirs(nowhere) == []


def test_a_projects_own_memory_is_used_never_duplicated(machine):
    env = machine
    env.run("index", "--workspace", str(env.api))  # the user used prima-memory in api-server
    everywhere(env, "limiter")
    stored = sorted((p / "folder").read_text() for p in (user_store(env) / "projects").iterdir())
    assert str(env.api) not in stored and str(env.webapp) in stored
    status = env.json("status", "--all-projects")["projects"]
    api = next(p for p in status if p["folder"] == str(env.api))
    assert api["own"] and api["memory"] == str(env.api / ".prima-memory" / "index.db")


def test_a_project_that_gets_its_own_memory_takes_over_the_users_stores(machine):
    """The user-level store's memory of a project keeps a session whose transcript Claude Code
    has since deleted: the project's own memory, once made, takes it over, and the copy goes."""
    env = machine
    gone = claude(env, env.webapp, sid(11), "Zebra stripes render wrong in Safari",
                  "A -webkit- prefix was missing on the gradient.")
    everywhere(env, "zebra")
    gone.path.unlink()  # Claude Code's 30-day clean-up
    kept = user_store(env) / "projects"
    assert len(list(kept.iterdir())) == 3
    env.run("index", "--workspace", str(env.webapp))
    assert str(env.webapp) not in [(p / "folder").read_text() for p in kept.iterdir()]
    hits = env.search("zebra", "--workspace", str(env.webapp))
    assert [(h["session_id"], h["archived"]) for h in hits] == [(sid(11), True)]
    assert [h["session_id"] for h in everywhere(env, "zebra")["results"]] == [sid(11)]


def test_deleting_the_users_store_or_a_projects_memory_forgets_what_it_held(machine):
    env = machine
    gone = claude(env, env.infra, sid(12), "Quasar terraform state lock stuck",
                  "Removed the stale DynamoDB lock item.")
    assert [h["session_id"] for h in everywhere(env, "quasar")["results"]] == [sid(12)]
    gone.path.unlink()
    assert [h["session_id"] for h in everywhere(env, "quasar")["results"]] == [sid(12)]
    shutil.rmtree(user_store(env))
    assert everywhere(env, "quasar")["results"] == []  # forgotten; the rest comes back
    assert [h["session_id"] for h in everywhere(env, "pg_dump")["results"]] == [sid(3)]
    # and a project's own memory
    claude(env, env.api, sid(13), "Quasar cache eviction storm", "Added jitter to the TTLs.")
    env.run("index", "--workspace", str(env.api))
    (env.claude / "projects" / encode(str(env.api)) / f"{sid(13)}.jsonl").unlink()
    assert [h["session_id"] for h in everywhere(env, "quasar")["results"]] == [sid(13)]
    shutil.rmtree(env.api / ".prima-memory")
    assert everywhere(env, "quasar")["results"] == []


def test_a_project_whose_folder_is_gone_is_still_searchable(machine):
    env = machine
    shutil.rmtree(env.infra)
    (hit,) = everywhere(env, "pg_dump")["results"]
    assert hit["workspace"] == str(env.infra)
    assert hit["resume"] == f"mkdir -p {env.infra} && cd {env.infra} && claude --resume {sid(3)}"
    assert not env.infra.exists()  # searching made nothing there
    status = env.json("status", "--all-projects")["projects"]
    assert next(p for p in status if p["folder"] == str(env.infra))["exists"] is False


def test_codex_and_vscode_sessions_of_any_folder(machine, tmp_path):
    env = machine
    lone = tmp_path / "code" / "scripts"
    lone.mkdir(parents=True)
    codex(env, str(lone), "cx-1", "Shellcheck flags the deploy script quoting",
          "Quoted every variable expansion in deploy.sh.")
    codex(env, str(env.api / "src"), "cx-2", "Shellcheck warns in the api healthcheck",
          "Replaced backticks with $(...) in healthcheck.sh.")
    vscode(env, str(tmp_path / "code" / "frontend"), "chat-1",
           "Shellcheck in the frontend build script", "Added set -euo pipefail to build.sh.")
    hits = {h["session_id"]: h for h in everywhere(env, "shellcheck")["results"]}
    assert set(hits) == {"cx-1", "cx-2", "chat-1"}
    assert (hits["cx-1"]["label"], hits["cx-1"]["workspace"]) == ("[Codex]", str(lone))
    assert hits["cx-1"]["resume"] == f"cd {lone} && codex resume cx-1"
    # a Codex session inside a Claude Code project is that project's, shown once
    assert hits["cx-2"]["workspace"] == str(env.api)
    assert hits["chat-1"]["label"] == "[VS Code]"
    assert hits["chat-1"]["workspace"] == str(tmp_path / "code" / "frontend")
    assert "resume" not in hits["chat-1"]  # VS Code cannot resume: `show` is its way back


def test_a_folder_below_home_is_never_the_home_folders_project(machine):
    """As find_workspace rules: sessions started in ~ are not a project's, so a Codex session in
    ~/scratch is its own project, not the home folder's."""
    env = machine
    claude(env, env.home, sid(90), "Dotfiles alias for the zorbling command", "Added it.")
    codex(env, str(env.home / "scratch"), "cx-h", "Zorbling script in scratch", "Wrote it.")
    hits = {h["session_id"]: h["workspace"] for h in everywhere(env, "zorbling")["results"]}
    assert hits == {sid(90): str(env.home), "cx-h": str(env.home / "scratch")}


def test_every_claude_config_folder(machine, tmp_path):
    env = machine
    work = tmp_path / "home dir" / ".claude-work"
    claude(env, tmp_path / "code" / "billing", sid(20), "Stripe webhook signature mismatch",
           "The raw body was parsed before verifying.", config=work)
    both = f"{env.claude}{os.pathsep}{work}"
    got = everywhere(env, "stripe webhook", cwd=tmp_path)
    assert got["results"] == []  # a config folder it is not told of
    got = env.json("search", "stripe webhook", "--all-projects", "--mode", "keyword",
                   env={"CLAUDE_CONFIG_DIR": both})
    assert [h["session_id"] for h in got["results"]] == [sid(20)]


def test_recent_files_similar_and_show_across_projects(machine):
    env = machine
    t = claude(env, env.webapp, sid(30), "Tidy the cookie helper", "Done.", start=time.time() - 60)
    t.tool("Edit", {"file_path": str(env.webapp / "src" / "cookies.py"), "old_string": "a",
                    "new_string": "b"}, text="Moved the SameSite setting into one place.")
    recent = env.json("recent", "--all-projects", "-n", "2")
    assert [s["session_id"] for s in recent["sessions"]][0] == sid(30)
    assert recent["sessions"][0]["workspace"] == str(env.webapp)
    files = env.json("files", "--all-projects", "cookies.py")
    assert [(s["session_id"], s["workspace"]) for s in files["sessions"]] == \
        [(sid(30), str(env.webapp))]
    shown = env.json("show", sid(2)[:8], "--all-projects")["session"]
    assert (shown["session_id"], shown["workspace"]) == (sid(2), str(env.api))
    miss = env.run("show", "ffffffff", "--all-projects", check=False)
    assert miss.returncode == 1 and "no session of any project" in miss.stderr


def test_redaction_and_hostile_folders_hold_across_projects(machine, tmp_path):
    env = machine
    secret = "sk-ant-api03-" + "A" * 90
    claude(env, env.api, sid(40), f"Deploy fails: ANTHROPIC_API_KEY={secret} is rejected",
           "The key was revoked; rotate it.")
    # transcripts that name folders that cannot be a project: relative, climbing, with a NUL
    for n, cwd in ((41, "relative/folder"), (42, "../../etc"), (43, "/tmp/x\x00y")):
        p = env.claude / "projects" / f"-odd-{n}" / f"{sid(n)}.jsonl"
        Transcript(p, sid(n), cwd, start=T0).exchange("Deploy fails oddly", "odd")
    got = everywhere(env, "deploy fails")
    assert [h["session_id"] for h in got["results"]] == [sid(40)]
    assert secret not in json.dumps(got)
    for db in user_store(env).rglob("index.db*"):
        assert secret.encode() not in db.read_bytes()
    assert not (tmp_path / "relative").exists() and data_dirs(tmp_path) == [str(env.ws)]
    # a folder whose name holds a terminal's escape: shown, never sent to the terminal
    odd = tmp_path / "code" / "esc\x1b]0;pwned\x07"
    claude(env, odd, sid(44), "Escaping folder names in the listing", "ok")
    text = env.run("search", "--all-projects", "escaping folder names", "--mode",
                   "keyword").stdout
    assert "\x1b" not in text and "\x07" not in text and "project " in text


# -- where nothing may be written or trusted --------------------------------------------------------

def _planted_index(path: Path) -> bytes:
    """An index that came with a cloned repository: its own fake session, no stamp of ours."""
    import apsw
    path.parent.mkdir(parents=True, exist_ok=True)
    db = apsw.Connection(str(path))
    db.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT); "
               "CREATE TABLE sessions(id INTEGER PRIMARY KEY, title TEXT); "
               "INSERT INTO sessions(title) VALUES ('planted pg_dump session')")
    db.close()
    return path.read_bytes()


def test_a_cloned_repositorys_index_is_never_used_nor_touched(machine):
    env = machine
    planted = env.infra / ".prima-memory" / "index.db"
    before = _planted_index(planted)
    got = everywhere(env, "pg_dump")
    assert [h["session_id"] for h in got["results"]] == [sid(3)]  # from the transcript
    assert planted.read_bytes() == before
    assert sorted(p.name for p in planted.parent.iterdir()) == ["index.db"]  # nothing added
    everywhere(env, "pg_dump")  # and again, from what the first search learned
    assert sorted(p.name for p in planted.parent.iterdir()) == ["index.db"]



def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


@pytest.mark.parametrize("left", ["closed", "killed"])
def test_a_cloned_index_in_wal_mode_gets_no_byte_written_beside_it(machine, tmp_path, left):
    """A repository that ships another user's .prima-memory: an index in WAL mode, as
    prima-memory makes them, closed (the file alone) or left by a killed process (its changes
    still in -wal, a -shm beside it). Checking its stamp made an index.db-shm and an empty
    index.db-wal there (a read-only open of a WAL index makes them), or rewrote the -shm shipped;
    now not a byte in that folder changes, through search, recent and the MCP tools."""
    pytest.importorskip("mcp")
    import anyio
    env = machine
    someone = {"XDG_CONFIG_HOME": str(tmp_path / "someone else")}  # (another key)
    if left == "closed":
        env.run("index", "--workspace", str(env.infra), env=someone)
    else:
        code = ("import os, sys\n"
                "from prima_memory.memory import Memory\n"
                "m = Memory(sys.argv[1]); m.store().db.execute('PRAGMA wal_autocheckpoint=0')\n"
                "m.update()\n"
                "os._exit(0)\n")
        subprocess.run([sys.executable, "-c", code, str(env.infra)], env={**env.env, **someone},
                       check=True, timeout=60)
    clone = env.infra / ".prima-memory"
    before = _files(clone)
    assert before["index.db"][18:20] == b"\x02\x02"  # (WAL mode, in its header)
    assert ("index.db-shm" in before) == (left == "killed")
    got = everywhere(env, "pg_dump")
    assert [h["session_id"] for h in got["results"]] == [sid(3)]  # from its transcript
    assert _files(clone) == before
    assert [s["session_id"] for s in env.json("recent", "--all-projects")["sessions"]
            if s["workspace"] == str(env.infra)] == [sid(3)]
    assert _files(clone) == before

    async def main():
        async with _served(env) as s:
            for tool, args in (("search_sessions", {"query": "pg_dump", "mode": "keyword"}),
                               ("recent_sessions", {"n": 5})):
                r = await s.call_tool(tool, {**args, "scope": "all"})
                assert not r.is_error and sid(3) in r.content[0].text, r
    anyio.run(main)
    assert _files(clone) == before


def test_a_linked_memory_folder_is_not_followed(machine, tmp_path):
    env = machine
    target = tmp_path / "elsewhere"
    target.mkdir()
    (env.webapp / ".prima-memory").symlink_to(target)
    assert [h["session_id"] for h in everywhere(env, "OAuth")["results"]] == [sid(1)]
    assert list(target.iterdir()) == [] and (env.webapp / ".prima-memory").is_symlink()
    # nor makes a folder its own project: a Codex session below webapp stays webapp's
    svc = env.webapp / "svc"
    svc.mkdir()
    other = tmp_path / "other-memory"
    other.mkdir()
    (other / "index.db").write_bytes(b"planted")
    (svc / ".prima-memory").symlink_to(other)
    codex(env, str(svc), "cx-link", "Zorblax in the linked folder", "done")
    (hit,) = everywhere(env, "zorblax")["results"]
    assert hit["workspace"] == str(env.webapp)
    assert sorted(p.name for p in other.iterdir()) == ["index.db"]
    assert (other / "index.db").read_bytes() == b"planted"


def test_host_mode_makes_no_memory_for_a_folder_claude_code_does_not_keep(machine, tmp_path):
    env = machine
    codex(env, str(tmp_path / "code" / "scripts"), "cx-9", "Makefile lint target broken",
          "Fixed the tab indentation in the Makefile.")
    claude(env, env.api, sid(50), "Makefile test target slow", "Ran the tests in parallel.")
    got = env.json("search", "makefile", "--all-projects", "--mode", "keyword",
                   env={"PRIMA_EXPECTED_HOST": "claude-code"})
    assert [h["session_id"] for h in got["results"]] == [sid(50)]
    assert any("no memory and none can be made" in w for w in got["warnings"])
    assert "scripts" not in " ".join(p.read_text() for p in
                                     (user_store(env) / "projects").glob("*/folder"))


def test_a_read_only_memory_is_searched_as_it_stands(machine):
    """A project's own memory on a read-only mount (EROFS for real, in a private mount
    namespace): searched as it stands, said so; every other project is brought up to date."""
    env = machine
    env.run("index", "--workspace", str(env.api))
    claude(env, env.api, sid(60), "Gunicorn workers time out under load", "Raised --timeout.")
    claude(env, env.infra, sid(61), "Gunicorn logs rotate too often", "Rotate daily.")
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed")
    own = str(env.api / ".prima-memory")
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    p = subprocess.run(["unshare", "-m", "sh", "-c", script, own, sys.executable, "-m",
                        "prima_memory", "search", "gunicorn", "--all-projects", "--mode",
                        "keyword", "--json"], capture_output=True, text=True, env=env.env,
                       cwd=str(env.ws), timeout=60)
    if p.returncode != 0 and "mount" in p.stderr and "prima-memory" not in p.stderr:
        pytest.skip(f"cannot make a read-only mount here: {p.stderr.strip()[:200]}")
    got = json.loads(p.stdout)
    assert [h["session_id"] for h in got["results"]] == [sid(61)], got["warnings"]
    assert any("cannot be written" in w for w in got["warnings"]), got["warnings"]
    assert sorted(h["session_id"] for h in everywhere(env, "gunicorn")["results"]) == \
        sorted([sid(60), sid(61)])


def test_the_hooks_never_pay_for_other_projects(machine):
    env = machine
    payload = json.dumps({"session_id": sid(70), "cwd": str(env.ws), "source": "startup",
                          "hook_event_name": "SessionStart"})
    for event in ("session-start", "stop"):
        p = subprocess.run([sys.executable, "-m", "prima_memory", "hook", event], input=payload,
                           capture_output=True, text=True, env=dict(env.env,
                           CLAUDE_PROJECT_DIR=str(env.ws)), cwd=str(env.ws), timeout=60)
        assert p.returncode == 0
    assert not user_store(env).exists()


def test_a_search_killed_anywhere_leaves_every_memory_whole(machine, tmp_path):
    """SIGKILL during a first search of all projects, at several moments: the next one answers
    exactly as one that was never interrupted."""
    env = machine
    for n in range(4, 40):
        claude(env, env.webapp if n % 2 else env.infra, sid(100 + n),
               f"Kestrel {n} config reload", "Reloaded. " + "words " * 4000)
    want = sorted(h["session_id"] for h in everywhere(env, "kestrel", "--limit", "50")["results"])
    assert len(want) == 36
    for delay in (0.3, 0.6, 0.9):
        shutil.rmtree(user_store(env))
        p = subprocess.Popen([sys.executable, "-m", "prima_memory", "search", "--all-projects",
                              "kestrel", "--mode", "keyword"], env=env.env, cwd=str(env.ws),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        got = everywhere(env, "kestrel", "--limit", "50")["results"]
        assert sorted(h["session_id"] for h in got) == want


def test_keyword_results_never_wait_for_the_model(machine):
    got = machine.json("search", "OAuth", "--all-projects", "--mode", "keyword",
                       env={"PRIMA_MODEL": "/nonexistent/model"})
    assert [h["session_id"] for h in got["results"]] == [sid(1)] and got["warnings"] == []


# -- ranking: one list ---------------------------------------------------------------------------

def test_the_ranking_of_all_projects_is_that_of_one_memory_holding_them_all(machine, tmp_path):
    """Keyword points are the seed's own in every project, so the list across projects is the
    list one memory holding every session would give (the same sessions, the same scores)."""
    env = machine
    for n in range(10):
        claude(env, [env.webapp, env.api, env.infra][n % 3], sid(200 + n),
               f"Timeout {'retry ' * (n % 4)}in the worker queue",
               f"{'retry ' * n}with backoff fixed the timeout.", start=T0 + 600 * n)
    split = everywhere(env, "timeout retry", "--limit", "20")["results"]
    one = tmp_path / "one"  # every transcript in one project folder: one memory
    pdir = env.claude / "projects" / encode(str(one))
    pdir.mkdir(parents=True)
    one.mkdir()
    for f in (env.claude / "projects").glob("*/*.jsonl"):
        if f.parent != pdir:
            shutil.copy(f, pdir / f.name)
    whole = env.search("timeout retry", "--workspace", str(one), "--limit", "20")
    assert [(h["session_id"], h["score"]) for h in split] == \
        [(h["session_id"], h["score"]) for h in whole]
    assert len(split) == 9  # (the first holds no "retry")


def _store_with(path: Path, sessions: dict):
    """A memory holding `sessions` (id -> [(prompt, reply)]), made in-process."""
    from prima_memory.storage import Store
    st = Store(str(path))
    with st.write():
        for name, exchanges in sessions.items():
            row = st.session_for("claude-code", name, "[transcript]")
            ids = iter(st.new_message_ids(row.id, 2 * len(exchanges)))
            rows = []
            for k, (prompt, reply) in enumerate(exchanges):
                u, a = next(ids), next(ids)
                rows += [(u, row.id, f"u{u}", "user", T0 + k, 0, None, prompt),
                         (a, row.id, f"a{a}", "assistant", T0 + k + 1, 0, u, reply)]
            st.add_messages(rows)
            st.add_terms(set().union(*(st.tokens(r[7]) for r in rows)))
            st.update_session(row.id, first_prompt=exchanges[0][0], first_ts=T0,
                              last_ts=T0 + len(exchanges))
        st.index_terms()
    return st


@pytest.mark.parametrize("seed_exact", [False, True])
def test_combined_ranks_as_one_memory_and_favours_no_small_project(tmp_path, monkeypatch,
                                                                   seed_exact):
    """By meaning and words together, several memories rank as the one holding them all: one
    background for meaning, each word's rarity among all their sessions, the seed's rescaling
    over the whole list. A small project's session is not lifted for being one of few."""
    np = pytest.importorskip("numpy")
    from prima_memory import search, semantic
    if seed_exact:
        monkeypatch.setenv("PRIMA_SEED_EXACT", "1")

    class Fake:
        model, variant, dim = "fake-model", "fake", 8

        def windows(self, text):
            return [text]

        def encode(self, texts, batch_size=32):
            out = []
            for t in texts:
                rng = np.random.default_rng(sum(map(ord, t)) * 7919 % 2**32)
                v = rng.normal(size=self.dim)
                if "deadlock" in t:  # the subject asked about points one way
                    v = v * 0.3 + np.eye(self.dim)[0] * (3 if "mutex" in t else 1.5)
                out.append(v / np.linalg.norm(v))
            return np.array(out, dtype=np.float32)

    big = {f"big-{n}": [(f"Work on module {n} of the billing service", f"Refactored part {n}.")]
           for n in range(40)}
    big["big-hit"] = [("A deadlock between the mutex holders in the ledger",
                       "Ordered the mutex acquisition: the deadlock is gone.")]
    small = {"small-0": [("A deadlock in the tiny script?", "Maybe a deadlock, hard to say.")],
             "small-1": [("Rename a variable", "Renamed.")]}
    mid = {f"mid-{n}": [(f"Write the docs page {n}", "Written.")] for n in range(10)}
    copied = ["big-hit", "big-0", "big-1", "big-2"]  # held by "mid" too, left to "big" there
    fake = Fake()
    stores = [_store_with(tmp_path / f"{k}.db", d) for k, d in
              (("big", big), ("small", small), ("mid", {**mid, **{c: big[c] for c in copied}}))]
    union = _store_with(tmp_path / "union.db", {**big, **small, **mid})
    for st in stores + [union]:
        semantic.Embedding(st, fake).run()
    query = "deadlock mutex"
    parts = [search.Part(s) for s in stores[:2]] + [search.Part(stores[2], exclude={
        stores[2].session_by_session_id(c, "claude-code").id for c in copied})]
    split = search.combined_many(parts, fake, query, limit=10)
    whole = search.combined(union, fake, query, limit=10)
    assert [(h.row.session_id, h.score) for h in split] == \
        [(h.row.session_id, h.score) for h in whole]
    assert split[0].row.session_id == "big-hit" and split[0].part == 0
    assert "small-0" in [h.row.session_id for h in split]
    # one background, as the union's: the copies another part holds counted once
    asked = search.meaning_query(query)
    one = semantic.score_queries([p.store for p in parts], fake, asked,
                                 skips=[p.exclude for p in parts])[0]
    alone = semantic.score_query(union, fake, asked)
    assert (one.mean, one.spread) == pytest.approx((alone.mean, alone.spread), rel=1e-6)
    sem = search.semantic_many(parts, fake, query, limit=10)
    assert [(h.row.session_id, h.score) for h in sem] == \
        [(h.row.session_id, h.score) for h in search.semantic(union, fake, query, limit=10)]


# -- MCP and /recall -------------------------------------------------------------------------------

@contextlib.asynccontextmanager
async def _served(env):
    """A session with `prima-memory mcp` in env.ws, over stdio, by the SDK's own client."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "prima_memory", "--workspace", str(env.ws), "mcp"],
                                   env=env.env, cwd=str(env.root))
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        yield s


def _hook(env, prompt: str) -> str:
    """What the UserPromptSubmit hook, as hooks.json runs it, answers `prompt` in env.ws."""
    hook = [h["command"] for g in json.loads((REPO / "hooks" / "hooks.json").read_text())[
        "hooks"]["UserPromptSubmit"] for h in g["hooks"]][0]
    e = dict(env.env, PRIMA_PYTHON=sys.executable, CLAUDE_PROJECT_DIR=str(env.ws),
             CLAUDE_PLUGIN_ROOT=str(REPO))
    data = {"session_id": sid(80), "cwd": str(env.ws), "hook_event_name": "UserPromptSubmit",
            "prompt": prompt}
    p = subprocess.run(["bash", "-c", hook], input=json.dumps(data), capture_output=True,
                       text=True, env=e, cwd=str(env.ws), timeout=60)
    assert p.returncode == 0 and p.stderr == ""
    return p.stdout


def test_the_mcp_tools_with_scope_all(machine):
    pytest.importorskip("mcp")
    import anyio
    env = machine

    async def main():
        async with _served(env) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            for name in ("search_sessions", "recent_sessions", "recall_session", "find_similar",
                         "get_file_history"):
                scope = tools[name].input_schema["properties"]["scope"]
                assert scope["enum"][:2] == ["workspace", "all"] and scope["default"] == "workspace"
                # (a team's server too, for the reads it answers: tests/test_team.py)
                assert ("team" in scope["enum"]) == (name in ("search_sessions",
                                                              "recent_sessions", "recall_session"))
            out = {}
            for scope in ("workspace", "all"):
                r = await s.call_tool("search_sessions", {"query": "rate limiter 429",
                                                          "mode": "keyword", "scope": scope})
                out[scope] = json.loads(r.content[0].text)
            r = await s.call_tool("recent_sessions", {"n": 3, "scope": "all"})
            out["recent"] = json.loads(r.content[0].text)
            r = await s.call_tool("recall_session", {"session_id": sid(2), "scope": "all"})
            out["recall"] = json.loads(r.content[0].text)
            r = await s.call_tool("recall_session", {"session_id": sid(2)})
            out["recall_here"] = (r.is_error, r.content[0].text)
            return out
    out = anyio.run(main)
    assert out["workspace"]["results"] == []
    (hit,) = out["all"]["results"]
    assert (hit["session_id"], hit["workspace"]) == (sid(2), str(env.api))
    assert "resume" not in hit and "show" not in hit  # (a person's commands: not for Claude)
    assert {s["workspace"] for s in out["recent"]["sessions"]} == \
        {str(env.webapp), str(env.api), str(env.infra)}
    assert out["recall"]["session"]["session_id"] == sid(2)
    assert out["recall_here"][0] and "no session matches" in out["recall_here"][1]
    assert data_dirs(env.api.parent) == []


def test_recall_all_through_the_hook(machine):
    env = machine
    here = _hook(env, "/prima-memory:recall rate limiter")
    assert "No session matches." in here and sid(2) not in here
    out = _hook(env, "/prima-memory:recall --all rate limiter")
    assert out.startswith("<prima-memory>\n") and out.count("</prima-memory>") == 1
    assert "of every project on this machine" in out
    assert f"project {env.api}" in out and f"cd {env.api} && claude --resume {sid(2)}" in out
    latest = _hook(env, "/prima-memory:recall --all")
    assert "the latest sessions of all projects" in latest and sid(1) in latest
    assert data_dirs(env.api.parent) == []


# -- what the review found: damage, replaced memories, heads not written yet, odd folders ----------

def _damage(db: Path) -> None:
    """Overwrite the first page of every table and index of its text: reads of it fail."""
    import apsw
    c = apsw.Connection(str(db))
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # (its pages in the file, not the log)
    size = c.execute("PRAGMA page_size").get
    pages = [r[0] for r in c.execute("SELECT rootpage FROM sqlite_master WHERE rootpage > 0 AND "
                                     "(name = 'messages' OR name LIKE '%fts%data')")]
    c.close()
    with open(db, "r+b") as f:
        for page in pages:
            f.seek((page - 1) * size)
            f.write(b"\xff" * size)


def test_a_damaged_memory_is_made_again_and_no_other_is_touched(machine):
    env = machine
    everywhere(env, "anything")
    (db,) = (user_store(env) / "projects").glob("*api-server*/index.db")
    mine = (env.data / "index.db").stat().st_ino
    _damage(db)
    got = everywhere(env, "rate limiter 429")  # moved aside, made again from its transcripts
    assert [h["session_id"] for h in got["results"]] == [sid(2)]
    assert list(db.parent.glob("index.db.corrupt-*"))
    _damage(db)  # and through /recall --all, whose hook holds this workspace's own memory
    out = _hook(env, "/prima-memory:recall --all rate limiter")
    assert f"cd {env.api} && claude --resume {sid(2)}" in out
    assert (env.data / "index.db").stat().st_ino == mine
    assert not list(env.data.glob("*corrupt*"))


def test_a_long_lived_server_answers_from_memories_as_they_are_now(machine):
    """A memory deleted, or deleted and made again, under the MCP server: what it held is
    forgotten there too, without a restart."""
    pytest.importorskip("mcp")
    import anyio
    env = machine
    env.run("index", "--workspace", str(env.api))  # the api project has its own memory

    async def main():
        async with _served(env) as s:
            async def found(query: str) -> list[str]:
                r = await s.call_tool("search_sessions", {"query": query, "mode": "keyword",
                                                          "scope": "all"})
                return [h["session_id"] for h in json.loads(r.content[0].text)["results"]]
            out = [await found("rate limiter 429"), await found("pg_dump backup")]
            for t in (env.claude / "projects").glob(f"*/{sid(2)}.jsonl"):
                t.unlink()  # its transcript gone: its memory still holds it
            out.append(await found("rate limiter 429"))
            shutil.rmtree(env.api / ".prima-memory")
            env.run("index", "--workspace", str(env.api))  # made again: holds nothing
            out.append(await found("rate limiter 429"))
            shutil.rmtree(user_store(env))  # the infra project's memory: made again
            out.append(await found("pg_dump backup"))
            return out
    assert anyio.run(main) == [[sid(2)], [sid(3)], [sid(2)], [], [sid(3)]]


def test_sessions_seen_before_they_name_their_folder(machine, tmp_path):
    """A Codex rollout or a Claude Code transcript seen by a search before the line that names
    its folder is written is found once it is."""
    env = machine
    day = Path(env.env["CODEX_HOME"]) / "sessions" / "2026" / "11" / "20"
    day.mkdir(parents=True)
    rollout = day / "rollout-2026-11-20T10-00-00-cx-new.jsonl"
    rollout.write_text("")  # Codex has just made it
    new = tmp_path / "code" / "new"
    t = Transcript(env.claude / "projects" / encode(str(new)) / f"{sid(5)}.jsonl", sid(5),
                   str(new), start=T0)
    t.raw({"type": "file-history-snapshot", "messageId": "m1", "isSnapshotUpdate": False,
           "snapshot": {"trackedFileBackups": {}}})
    everywhere(env, "anything")
    lone = tmp_path / "code" / "lone"
    lone.mkdir(parents=True)
    rollout.write_text(codex(env, str(lone), "cx-new", "Quuxify the lone folder", "done")
                       .read_text())
    t.exchange("Snorkelwhip in the new project", "done")
    got = {h["session_id"]: h["workspace"] for h in everywhere(env, "quuxify")["results"]}
    assert got == {"cx-new": str(lone)}
    got = {h["session_id"]: h["workspace"] for h in everywhere(env, "snorkelwhip")["results"]}
    assert got == {sid(5): str(new)}


def test_a_session_in_the_root_folder_is_its_own_projects(machine):
    env = machine
    codex(env, "/", "cx-root", "Frobnicate the rootly widget", "done")
    got = everywhere(env, "frobnicate")
    assert [(h["session_id"], h["workspace"]) for h in got["results"]] == [("cx-root", "/")]


def test_a_chat_every_workspace_takes_is_shown_once(machine, tmp_path):
    env = machine
    vscode(env, str(tmp_path / "code" / "frontend"), "chat-1", "Blorptastic build script", "ok")
    for every in ("0", "1"):  # PRIMA_VSCODE_ALL_WORKSPACES=1: every chat is every workspace's
        env.env["PRIMA_VSCODE_ALL_WORKSPACES"] = every
        got = everywhere(env, "blorptastic")["results"]
        assert [(h["session_id"], h["workspace"]) for h in got] == \
            [("chat-1", str(tmp_path / "code" / "frontend"))], every


def test_an_own_memory_below_a_claude_code_project_serves_its_folder(machine, tmp_path):
    """The user used prima-memory in webapp/svc, below the webapp Claude Code keeps: a Codex
    session there is svc's own memory's, as a search from svc would serve it, not copied."""
    env = machine
    svc = env.webapp / "svc"
    svc.mkdir()
    codex(env, str(svc), "cx-1", "Wibblefrotz in svc", "done")
    env.run("index", "--workspace", str(svc))
    (hit,) = everywhere(env, "wibblefrotz")["results"]
    assert (hit["session_id"], hit["workspace"]) == ("cx-1", str(svc))
    shown = {p["folder"]: p for p in env.json("status", "--all-projects")["projects"]}
    assert shown[str(svc)]["own"] and shown[str(svc)]["memory"] == str(svc / ".prima-memory" /
                                                                        "index.db")
    # the copy webapp's memory holds too (a search from webapp finds it) is not the one shown
    assert env.json("show", "cx-1", "--all-projects")["session"]["workspace"] == str(svc)
