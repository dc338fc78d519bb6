"""A team's memory on a PostgreSQL server (docs/team-memory.md): joining it, publishing this
machine's sessions to it after Stop, forgetting there what is forgotten here, and the team as a
scope a search reads (`Team`).

Where things are kept:
  - which server, as whom, for which projects: the user's own team.json, beside the user-level
    store (never in a project folder; the file is the user's alone, 0600). PRIMA_TEAM_DSN, when
    set, is a join of every project that writes nothing.
  - what was published of a project: `.prima-memory/team-published.json` in the project's memory
    folder (no password; what each session was when sent, what waits, the last error).
Publishing reads the local index (never a transcript), so the server gets what the memory would
show: redacted, `<private>` removed, forgotten and opted-out sessions absent.
"""
from __future__ import annotations

import json
import os
import time

from . import forgotten
from . import workspace as wsmod
from .errors import Failure, UsageError
from .logs import Log
from .scope import Scope
from .sources.names import INDEXED
from .storage import count_by_session, ordinal_of, session_of
from .workspace import blake2b

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .memory import Memory
    from .storage.postgres import TeamStore

ENV_DSN = "PRIMA_TEAM_DSN"
CONFIG = "team.json"
LEDGER = "team-published.json"
PUBLISH_SECONDS = 120.0  # a background publish stops after this; the rest goes next time
LEDGER_SECONDS = 1.0  # the ledger is saved this often while publishing, and at the end
BACKOFF = (30.0, 3600.0)  # seconds before a failed publish is tried again: first, at most
GIT_SECONDS = 3.0
# every agent's sessions (a shared log's are others' own, extracts are made of sessions)
PUBLISHED_AGENTS = tuple(name for name, _label, agent in INDEXED if agent)


# -- joining ------------------------------------------------------------------------------------

def config_path() -> str:
    return os.path.join(os.path.dirname(wsmod.user_store()), CONFIG)


def _read_json(path: str) -> dict:
    """A JSON object of ours, or {}: a link, a FIFO or a folder there is never read (nor
    waited on), nor is what does not parse."""
    try:
        got = wsmod.read_plain(path, 1 << 22)
        got = json.loads(got[0] or b"{}") if got else {}
    except (OSError, ValueError):
        return {}
    return got if isinstance(got, dict) else {}


def _write_json(path: str, data: dict) -> None:
    """Written whole (workspace.replace_whole: a link there replaced, never followed), readable
    by the user alone."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    wsmod.replace_whole(path, json.dumps(data, indent=1, sort_keys=True))


class Join:
    """A project's (or every project's) membership of a team's server."""

    def __init__(self, dsn: str, member: str | None, project: str | None, everywhere: bool,
                 via: str):
        self.dsn, self.member, self.project = dsn, member, project
        self.everywhere, self.via = everywhere, via

    @property
    def server(self) -> str:
        from .storage.postgres import where  # (heavy: psycopg)
        return where(self.dsn)


def joined(ws: str) -> Join | None:
    """The team this workspace publishes to and searches, if any: PRIMA_TEAM_DSN, else its own
    join, else a join of every project."""
    env = os.environ.get(ENV_DSN)
    if env:
        return Join(env, None, None, True, "env")
    cfg = _read_json(config_path())
    own = (cfg.get("projects") or {}).get(ws)
    for entry, everywhere in ((own, False), (cfg.get("all"), True)):
        if isinstance(entry, dict) and isinstance(entry.get("dsn"), str):
            return Join(entry["dsn"], entry.get("member"), entry.get("project"), everywhere,
                        "config")
    return None


def _git(ws: str, *args: str) -> str | None:
    import subprocess  # (only where a project's name or a member's is asked of git)
    try:
        got = subprocess.run(["git", "-C", ws, *args], capture_output=True, text=True,
                             timeout=GIT_SECONDS, stdin=subprocess.DEVNULL,
                             env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except (OSError, subprocess.SubprocessError):
        return None
    out = got.stdout.strip() if got.returncode == 0 else ""
    return out.splitlines()[0] if out else None


def remote_name(url: str) -> str:
    """A git remote as the team names a project: host/path, whatever the spelling
    (git@github.com:acme/api.git, https://user@github.com/acme/api, ssh://...)."""
    u = url.strip()
    if "://" in u:
        u = u.split("://", 1)[1]
        u = u.split("@", 1)[1] if "@" in u.split("/", 1)[0] else u
        host, _, path = u.partition("/")
        host = host.rsplit(":", 1)[0] if host.rsplit(":", 1)[-1].isdigit() else host
    elif ":" in u and not u.startswith("/"):
        host, _, path = u.partition(":")
        host = host.split("@", 1)[-1]
    else:
        return u.rstrip("/")
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    return f"{host.lower()}/{path}"


def project_name(ws: str, join: Join | None = None) -> str | None:
    """This workspace's project as the team knows it: the join's name, else its git remote."""
    if join is not None and join.project:
        return join.project
    url = _git(ws, "remote", "get-url", "origin")
    return remote_name(url) if url else None


def member_name(ws: str, join: Join | None = None) -> str:
    if join is not None and join.member:
        return join.member
    return _git(ws, "config", "user.name") or os.environ.get("USER") or "member"


def connect(dsn: str, *, timeout: float | None = None) -> TeamStore:
    try:
        from .storage.postgres import TeamStore  # (heavy: psycopg, the `team` extra)
    except ImportError as e:  # (psycopg is the `team` extra)
        raise Failure(f"the team memory needs psycopg: pip install 'prima-memory[team]' ({e})"
                      ) from None
    return TeamStore(dsn) if timeout is None else TeamStore(dsn, connect_timeout=timeout)


def join(ws: str, dsn: str, *, member: str | None = None, project: str | None = None,
         everywhere: bool = False) -> dict:
    """Join a team's server: the server reached and its schema checked first (nothing is kept
    from a DSN that does not work), then the membership kept in the user's team.json."""
    if not dsn.strip():
        raise UsageError("team join needs the server's DSN (postgresql://member@host/db)")
    name = member or member_name(ws)
    proj = project or (None if everywhere else project_name(ws))
    if not everywhere and not proj:
        raise UsageError(f"{ws} has no git remote `origin` to name it to the team: give one "
                         "with --project NAME (or join --all-projects)")
    store = connect(dsn)
    try:
        store.check_writable()
        store.hello(name)
        role, shared = store.member, store.readable_projects()
    finally:
        store.close()
    cfg = _read_json(config_path())
    entry = {"dsn": dsn, "member": name, **({"project": project} if project else {})}
    if everywhere:
        cfg["all"] = entry
    else:
        cfg.setdefault("projects", {})[ws] = entry
    _write_json(config_path(), cfg)
    out = {"server": store.path, "member": name, "role": role, "everywhere": everywhere,
           "project": proj, "shared": shared}
    if proj and proj not in shared:
        out["warning"] = (f"{proj} is not shared with a team of yours on the server: nothing of "
                          "it is published until an admin runs `prima-memory team share "
                          f"ADMIN_DSN {proj} TEAM`")
    return out


def leave(ws: str, memory_dir: str, *, delete: bool = False) -> dict:
    """Stop publishing (this project's join, else every project's); `delete`: this member's rows
    on the server removed too, and the ledger in `memory_dir` (where the workspace's memory
    lives) with them."""
    j = joined(ws)
    if j is None:
        raise Failure("this project is not in a team (prima-memory team join DSN)")
    if j.via == "env":
        raise Failure(f"the team is set by {ENV_DSN}: unset it to leave")
    removed = None
    if delete:
        store = connect(j.dsn)
        try:
            removed = store.leave(None if j.everywhere else project_name(ws, j))
        finally:
            store.close()
        try:  # (joined again, everything is published again)
            os.unlink(os.path.join(memory_dir, LEDGER))
        except OSError:
            pass
    cfg = _read_json(config_path())
    if j.everywhere:
        cfg.pop("all", None)
    else:
        (cfg.get("projects") or {}).pop(ws, None)
    _write_json(config_path(), cfg)
    return {"server": j.server, "left": "every project" if j.everywhere else ws,
            "sessions_deleted": removed}


def status(mem: Memory) -> dict:
    """What `team status` says: the server, what is published and what waits, the last error."""
    j = joined(mem.ws)
    if j is None:
        return {"joined": False}
    out = {"joined": True, **(brief(mem) or {}), "via": j.via, "everywhere": j.everywhere,
           "member": member_name(mem.ws, j), "project": project_name(mem.ws, j),
           "waiting": len(_waiting(mem, _ledger(mem)))}
    try:
        store = connect(j.dsn, timeout=3)
        try:
            out["on_server"] = store.published()
            out["server_version"] = store.server_version()
        finally:
            store.close()
    except Failure as e:
        out["server_error"] = str(e)
    return out


def brief(mem: Memory) -> dict | None:
    """`status`'s line, from what this machine knows (no server asked): None when not joined."""
    j = joined(mem.ws)
    if j is None:
        return None
    ledger = _ledger(mem)
    return {"server": j.server, "published": len(ledger.get("sessions") or {}),
            "last_published": ledger.get("published_at"), "last_error": ledger.get("error"),
            "retry_at": ledger.get("retry_at")}


# -- publishing -----------------------------------------------------------------------------------

def _ledger(mem: Memory) -> dict:
    """What was published from this project, as the ledger says. A folder can come with the
    project (a clone): a ledger not of this shape is taken as none (everything is published
    again, which writes the same rows)."""
    got = _read_json(os.path.join(mem.dir, LEDGER))
    books, sent = got.get("sessions", {}), got.get("forgot", [])
    if not (isinstance(books, dict) and isinstance(sent, list)
            and all(isinstance(x, str) for x in sent)
            and all(isinstance(e, list) and len(e) == 4 and isinstance(e[0], list)
                    and isinstance(e[1], int) and isinstance(e[2], str)
                    and isinstance(e[3], int) for e in books.values())):
        return {}
    return got


def _fingerprint(row) -> list:
    return [row.ended_at, row.message_count, row.files_count, row.title, row.decisions, row.tags,
            row.branch]


def _waiting(mem: Memory, ledger: dict, local_key: str | None = None) -> list:
    """The sessions to publish: changed since they were sent, or (`local_key`: the vectors of
    that key) with more exchanges embedded than were sent."""
    done = ledger.get("sessions") or {}
    store = mem.store()
    embedded = count_by_session(store.embedded_hashes(local_key)) if local_key else {}
    out = []
    for r in store.sessions():
        was = done.get(f"{r.source}\0{r.session_id}")
        if r.source in PUBLISHED_AGENTS and (was is None or was[0] != _fingerprint(r)
                                             or embedded.get(r.id, 0) > was[3]):
            out.append(r)
    return out


def _digest(rows) -> str:
    h = blake2b(digest_size=12)
    for r in rows:
        h.update(f"{r[0]}\0{r[2]}\0{len(r[6])}\0".encode("utf-8", "surrogatepass"))
        h.update(r[6].encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _payload(store, row, project: str, prev: list | None, keys) -> tuple[dict, list]:
    """One session as the server keeps it, and its ledger entry once published. Only what
    changed since `prev` is sent: messages from the last one sent on (a reply grows in place),
    unless one before changed (then all); its windows when more exchanges are embedded."""
    held = store.messages_held(row.id)
    last = prev[1] if prev else -1
    before = [m for m in held if ordinal_of(m[0]) < last]
    full = prev is None or prev[2] != _digest(before)
    sent = held if full else [m for m in held if ordinal_of(m[0]) >= last]
    messages = [(ordinal_of(mid), forgotten.key_hash(row.source, key), role, ts, side,
                 ordinal_of(pair) if pair is not None and session_of(pair) == row.id else None,
                 text) for mid, key, role, ts, side, pair, text in sent]
    changes = [(n, c.path, c.tool, c.explanation, c.ts)
               for n, c in enumerate(store.file_changes(row.id))]
    windows: list | None = None  # (no model: the server's left as they are)
    embedded = prev[3] if prev else 0
    if keys is not None:
        windows = []
        local, team = keys
        replies = [m[0] for m in held if m[2] == "assistant"]
        got = store.exchange_vectors(local, replies) if replies else []
        if full or len({x for x, _n, _v in got}) != embedded:
            from .embed import numpy  # (heavy: numpy)
            from .semantic import vector_text  # (heavy: numpy)
            np = numpy()
            windows = [(ordinal_of(x), n, team, vector_text(np.frombuffer(v, dtype=np.float32)))
                       for x, n, v in got]
        embedded = len({x for x, _n, _v in got})
    top = max((ordinal_of(m[0]) for m in held), default=-1)
    payload = {"project": project, "source": row.source, "session_id": row.session_id,
               "label": row.label, "branch": row.branch, "author": row.author,
               "title": row.title, "started_at": row.started_at, "ended_at": row.ended_at,
               "tags": row.tags, "decisions": row.decisions, "message_count": row.message_count,
               "files_count": row.files_count, "full": full, "messages": messages,
               "changes": changes, "windows": windows}
    entry = [_fingerprint(row), top, _digest([m for m in held if ordinal_of(m[0]) < top]),
             embedded]
    return payload, entry


def publish(mem: Memory, *, embedder=None, seconds: float | None = None,
            force: bool = False, sessions: bool = True) -> dict:
    """This workspace's sessions published to its team: forgets first (each tombstone here
    not yet sent), then (`sessions`) each session changed since it was last sent, one
    transaction apiece, the ledger saved as it goes (a run killed anywhere is finished by the
    next, and a retry writes the same rows). `embedder`: the loaded model, whose vectors go
    too. A failure is kept in the ledger with a time before which the background does not try
    again (`force`: try now)."""
    j = joined(mem.ws)
    if j is None:
        return {"joined": False}
    if wsmod.opted_out(mem.ws):
        return {"joined": True, "skipped": "the project is opted out (.prima-memory-off)"}
    path = os.path.join(mem.dir, LEDGER)
    ledger = _ledger(mem)
    if not force and (ledger.get("retry_at") or 0) > time.time():
        return {"joined": True, "skipped": f"waiting to try again ({ledger.get('error')})"}
    project = project_name(mem.ws, j)
    deadline = time.monotonic() + (PUBLISH_SECONDS if seconds is None else seconds)
    done: dict = {"joined": True, "server": j.server, "project": project, "sessions": 0,
                  "forgotten": 0, "refused": 0, "left": 0}
    try:
        store = connect(j.dsn)
    except Failure as e:
        return _failed(path, ledger, str(e), done)
    try:
        store.check_writable()
        role = store.member
        if ledger.get("server") != j.server or ledger.get("role") != role:
            ledger = {"server": j.server, "role": role}  # (another server: all of it again)
        store.hello(member_name(mem.ws, j))
        sent = ledger.setdefault("forgot", [])
        gone = set(sent)
        books = ledger.setdefault("sessions", {})
        for tomb in mem.tombstones().entries:
            mark = f"{tomb.get('source')}\0{tomb.get('id')}"
            # (a session kept out as it ran was never published from here: its id stays here)
            if mark in gone or (tomb.get("why") == "opt-out" and mark not in books):
                continue
            store.forget(tomb["source"], tomb["id"], tomb.get("keys") or ())
            sent.append(mark)
            gone.add(mark)
            books.pop(mark, None)
            done["forgotten"] += 1
            _write_json(path, ledger)
        if sessions:
            _sessions(mem, store, ledger, path, project, embedder, deadline, done)
    except Failure as e:
        return _failed(path, ledger, str(e), done)
    finally:
        store.close()
    ledger.update(published_at=time.time(), error=None, fails=0, retry_at=None)
    _write_json(path, ledger)
    return done


def _sessions(mem: Memory, store: TeamStore, ledger: dict, path: str, project: str | None,
              embedder, deadline: float, done: dict) -> None:
    """publish's second half: each session changed since it was sent, newest first, until the
    deadline; a session the server refuses (forgotten on another machine of this member) is
    noted as forgotten here too."""
    if not project:  # (forgets need no project name; sessions do)
        raise Failure(f"{mem.ws} has no git remote `origin` to name it to the team: join "
                      "with --project NAME")
    keys = None
    if embedder is not None:
        from .semantic import key_of, team_key  # (heavy: numpy)
        keys = (key_of(embedder), team_key(embedder))
    local = mem.store()
    books, sent = ledger["sessions"], ledger["forgot"]
    gone = set(sent)
    waiting = sorted(_waiting(mem, ledger, keys and keys[0]), key=lambda r: -(r.ended_at or 0))
    saved = time.monotonic()
    for n, row in enumerate(waiting):
        if time.monotonic() > deadline:
            done["left"] = len(waiting) - n
            break
        mark = f"{row.source}\0{row.session_id}"
        if mark in gone:
            continue
        with local.read():
            payload, entry = _payload(local, row, project, books.get(mark), keys)
        if store.publish(payload):
            books[mark] = entry
            done["sessions"] += 1
        else:
            sent.append(mark)
            done["refused"] += 1
        if time.monotonic() - saved > LEDGER_SECONDS:  # (what a kill loses is sent again)
            _write_json(path, ledger)
            saved = time.monotonic()


def _failed(path: str, ledger: dict, why: str, done: dict | None = None) -> dict:
    fails = int(ledger.get("fails") or 0) + 1
    ledger.update(error=why, fails=fails, failed_at=time.time(),
                  retry_at=time.time() + min(BACKOFF[1], BACKOFF[0] * 2 ** (fails - 1)))
    try:
        _write_json(path, ledger)
    except OSError:
        pass
    return {**(done or {"joined": True}), "error": why}


def publish_quietly(mem: Memory, embedder=None) -> None:
    """After Stop, in the background process: publish, and log (never raise) what went wrong."""
    try:
        got = publish(mem, embedder=embedder)
        if got.get("error"):
            mem.log.warn(f"team: not published: {got['error']}", once=True)
        elif got.get("sessions") or got.get("forgotten"):
            mem.log.info(f"team: published {got['sessions']} sessions, forgot "
                         f"{got['forgotten']}")
    except Exception as e:  # noqa: BLE001 - publishing never fails the work it follows
        mem.log.warn(f"team: publish failed: {type(e).__name__}: {e}")


def forget_now(mem: Memory) -> str | None:
    """Right after a forget here: the server told too, within seconds (else by the next
    publish, which sends every tombstone not yet sent). Returns what went wrong, if anything."""
    return publish(mem, force=True, sessions=False).get("error")


# -- the team as a scope --------------------------------------------------------------------------

class TeamMemory:
    """The team's memory as a read sees one (api: `.store()`, `.ws`)."""

    def __init__(self, store: TeamStore, ws: str):
        self._store, self.ws = store, ws

    def store(self) -> TeamStore:
        return self._store


class Team(Scope):
    """A team's server as a scope: search, show and recent read it as they read an index,
    with the same ranking. Nothing is brought up to date (publishing is the background's)."""
    wide = "team"

    def __init__(self, ws: str, mine: Memory | None = None):
        self.ws, self.mine = ws, mine
        self.log = mine.log if mine is not None else Log(None)
        found = joined(ws)
        if found is None:
            raise Failure("this project is not in a team: prima-memory team join DSN "
                          f"(or set {ENV_DSN})")
        self.joined: Join = found
        self._mem: TeamMemory | None = None
        self._embedder: object = None

    def memories(self, warnings: list[str]):
        if self._mem is None:
            self._mem = TeamMemory(connect(self.joined.dsn), self.ws)
        return [(self._mem, set())]

    def bring_up(self, warnings: list[str], *, progress=None, deep: bool = False) -> None:
        pass

    def embedder(self, load=None):
        if self.mine is not None:
            return self.mine.embedder(self._embedder, load=load)
        if self._embedder is None:
            from . import embed  # (heavy: the model)
            self._embedder = (load or embed.load)()
        return self._embedder

    def embed_new(self, embedder, budget: float, warnings: list[str]) -> None:
        pass

    def link_new(self, budget: float, warnings: list[str]) -> None:
        pass

    def describe(self, mems) -> dict:
        return {"scope": "team", "server": self.joined.server,
                "project": project_name(self.ws, self.joined)}

    def damaged(self, e: BaseException):
        return None

    def close(self) -> None:
        if self._mem is not None:
            self._mem.store().close()
            self._mem = None
