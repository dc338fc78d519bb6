"""Work that outlives the command that starts it: the background embedder and a background
rebuild.

Each runs as a detached process (its own session, no terminal, lower priority) that holds its own
lock for its whole life. A rebuild's state (pid, started, done, total) is kept in the index, where
`status` reads it; a state whose lock nobody holds was left by a process that died, and is
cleared. Starting one costs a fork and an exec: the Stop hook that does it returns at once and
never imports the model.
"""
from __future__ import annotations

import os
import sys
import time

from . import jsontext
from .errors import Failure, IndexReadOnly
from .locking import LockTimeout, WriterLock
from .settings import flag
from .sources.registry import OTHERS, SOURCES as ALL
from .workspace import make_private, user_store

TYPE_CHECKING = False  # (typing's own is an import the Stop hook, which imports this, skips)
if TYPE_CHECKING:
    from collections.abc import Callable



def enabled() -> bool:
    """PRIMA_BACKGROUND=0 (off, false, no): never start a background process."""
    return flag("PRIMA_BACKGROUND")


# The detached process runs this very package: `python -m` would look in the current folder
# first, and a cloned repository there could hold a `prima_memory` of its own.
_BOOT = ("import sys; sys.path[0] = {root!r}; from prima_memory.cli import main; "
         "sys.exit(main(sys.argv[1:]))")


def spawn(ws: str | None, *args: str, lock_fd: int | None = None) -> int:
    """Start `prima-memory --workspace ws ARGS` (ws None: no workspace, for a run over all
    projects) detached: it survives the terminal and the Claude Code session that started it,
    and never writes to their output. `lock_fd`: a locked flock descriptor the child gets a
    copy of (its number follows `--lock-fd`), so the lock is held without a gap until the child
    exits, whoever closes theirs first."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cmd = [sys.executable, "-c", _BOOT.format(root=root),
           *(("--workspace", ws) if ws is not None else ()), *args]
    if hasattr(os, "posix_spawn"):  # a hook's way: `subprocess` alone costs it 5-10 ms to import
        null = os.devnull
        actions: list[tuple] = []
        if lock_fd is not None:
            # dup2 to another number gives the child a copy that survives exec, while this
            # process's own stays close-on-exec: nothing else it starts gets the lock. First,
            # before 0-2 are replaced (lock_fd may be one of them in a process without stdin).
            child_fd = 3 if lock_fd != 3 else 4
            actions.append((os.POSIX_SPAWN_DUP2, lock_fd, child_fd))
            cmd += ["--lock-fd", str(child_fd)]
        actions += [(os.POSIX_SPAWN_OPEN, 0, null, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 1, null, os.O_WRONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 2, null, os.O_WRONLY, 0)]
        # a new session: no terminal, and not in the process group Claude Code may kill
        pid = os.posix_spawn(sys.executable, cmd, os.environ, file_actions=actions, setsid=True)
        _children.append(pid)
        return pid
    # where posix_spawn is missing; 5-10 ms a hook need not pay
    import subprocess
    if lock_fd is not None:
        cmd += ["--lock-fd", str(lock_fd)]
    flags = getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, close_fds=True,
                         pass_fds=() if lock_fd is None else (lock_fd,),
                         start_new_session=not flags, creationflags=flags)
    return p.pid


_children: list[int] = []  # spawned here and not yet reaped
_rebuilds: list[int] = []  # rebuilds spawned here: one may not have written its state yet


def reap() -> None:
    """Collect the exit of finished children: a long-lived process (the MCP server) would
    otherwise keep them as zombies. A short-lived one leaves them to init."""
    for pid in list(_children):
        try:
            done, _status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _children.remove(pid)


def spawn_rebuild(ws: str) -> int:
    pid = spawn(ws, "index", "--rebuild", "--worker")
    _rebuilds.append(pid)
    return pid


def spawned_rebuild() -> int | None:
    """The pid of a rebuild this process started that is still running (it may not have
    recorded its state yet), else None."""
    reap()
    alive = [pid for pid in _rebuilds if pid in _children]
    _rebuilds[:] = alive
    return alive[-1] if alive else None


def held(mem, name: str) -> bool:
    """Whether a live process holds the lock of job `name`."""
    lock = mem.side_lock(name)
    try:
        lock.acquire(timeout=0)
    except LockTimeout:
        return True
    except OSError:  # no lock file and none can be made (a read-only folder): no one holds it
        return False
    lock.release()
    return False


REBUILD_KEY = "rebuild"  # meta: a running rebuild's state (rebuild_state)
NO_MODEL_KEY = "embedder_failed"  # when a background embedder last found no model to load
NO_MODEL_RETRY = 3600.0  # seconds before one is started again
# The background embedder's own lock, held for its whole life: at most one is ever alive. (The
# embed lock, "embed", is held only while vectors are written, by it or any other process.)
EMBEDDER = "embedder"
EMBED_WAIT = 2.0  # seconds the embedder waits for the embed lock: others hold it for a step


def start_embedder(mem) -> int | None:
    """After the Stop hook indexed something: an embedder for it, unless one is alive (or a
    rebuild, which embeds too, or another process is embedding), the index is read-only, or
    the model would not load an hour ago. Returns the new process's pid.

    The embedder lock is taken here, without waiting, and handed to the child, which holds it
    until it exits (the kernel lets it go however it ends): 30 Stops at once start one. A Stop
    that finds it taken starts nothing; the embedder alive looks once more before it exits."""
    store = mem.store()
    if not enabled() or store.readonly or held(mem, "embed") or held(mem, "rebuild"):
        return None
    try:
        if time.time() - float(store.get_meta(NO_MODEL_KEY) or 0) < NO_MODEL_RETRY:
            return None
    except ValueError:
        pass
    lock = mem.side_lock(EMBEDDER)
    try:
        lock.acquire(timeout=0)
    except LockTimeout:
        return None
    except OSError as e:  # a folder or device where the lock file goes: never one per Stop
        mem.log.warn(f"{lock.path} cannot be used as a lock ({e.strerror or e}): no background "
                     "embedder starts until it is removed", once=True)
        return None
    try:
        return spawn(mem.ws, "embed", "--worker", lock_fd=lock.fd)
    finally:
        # The child's copy holds the flock now. Without flock (filelock, other systems) this
        # lets it go: the child takes it itself, a weaker guard (two may overlap a moment).
        lock.release()


def lower_priority() -> None:
    try:
        os.nice(10)
    except (AttributeError, OSError):
        pass


def run_embedder(mem, lock_fd: int | None = None) -> tuple[int, int] | None:
    """The background embedder's life, holding the embedder lock throughout: the descriptor its
    starter handed down (`lock_fd`, see start_embedder) or the lock taken now. None when another
    embedder is alive."""
    lock = mem.side_lock(EMBEDDER)
    if lock_fd is None or not lock.adopt(lock_fd):
        try:
            lock.acquire(timeout=1.0)  # (a starter without flock lets go only after the spawn)
        except LockTimeout:
            return None
        except OSError:  # no usable lock file: the embed lock still keeps embedding to one
            lock = None
    try:
        return _embed_all(mem)
    finally:
        _publish(mem)
        # flock: held until this process is gone (let go earlier, a second embedder could start
        # while this one ends). filelock: a file that may outlive its holder, let go now.
        if lock is not None and lock.fd is None:
            lock.release()


def _publish(mem) -> None:
    """After the embedding a Stop started: the team's server told (the new sessions, with their
    vectors, and the forgets), when the project joined one. Never raises."""
    from . import team  # (the team's work: only where a project joined one)
    embedder = None
    try:
        embedder = mem.embedder() if mem.model_tried() else None
    except Exception:  # noqa: BLE001 - the model would not load: published without vectors
        pass
    team.publish_quietly(mem, embedder)


def step(mem, budget: float | None, should_stop: Callable[[], bool], *,
         wait: float = 0.0) -> tuple[int, int] | None:
    """One step of the background work, the one sequence the background embedder and the MCP
    server's idle loop share: pending exchanges embedded, newest first, for up to `budget`
    seconds (None: until none is left or `should_stop()`); then, when none is left, their
    SIMILAR_TO edges computed for up to `budget`. Returns (exchanges embedded, work left:
    exchanges still to embed, else to link), or None when another process holds the embed
    lock for longer than `wait` (it is doing this work)."""
    got = mem.embed(budget, wait=wait, should_stop=should_stop)
    if got is None or got[1]:
        return got
    linked = mem.link(budget, wait=wait, should_stop=should_stop)
    return got[0], linked[1] if linked else 0  # (None: another process links them)


def _embed_all(mem) -> tuple[int, int] | None:
    """Embed and link until nothing is pending, yielding to a rebuild. A Stop meanwhile found
    this process alive and started none: what it indexed is looked for before the end."""
    lower_priority()
    store = mem.store()
    try:  # the other agents' sessions too: out of the hook, so a look at VS Code's folders is fine
        mem.update(sources=OTHERS)
    except Failure as e:  # busy or read-only
        mem.log.info(f"background embedder: other sources not indexed: {e}")
    try:
        mem.embedder()
    except Exception as e:  # remembered, so Stop does not start one in vain
        mem.log.warn(f"background embedder: the model cannot load: {e}")
        with store.write():
            store.set_meta(NO_MODEL_KEY, time.time())
        raise
    if store.get_meta(NO_MODEL_KEY):
        with store.write():
            store.set_meta(NO_MODEL_KEY, None)
    # semantic work only
    from .semantic import key_of
    key = key_of(mem.embedder())
    total, looked = 0, False
    stop = lambda: held(mem, "rebuild")  # noqa: E731
    while True:
        got = step(mem, None, stop, wait=EMBED_WAIT)
        if got is None:  # another process is embedding, for longer than a step
            return None if not total else (total, store.count_pending(key))
        done, _left = got
        total += done
        pending = store.count_pending(key)
        if stop() or not pending:  # a rebuild began (it does the rest), or all is done
            return total, pending
        if done:
            looked = False
            continue  # a Stop during the run added more
        if looked:  # what the last look found would not embed now (a reply still growing)
            return total, pending
        looked = True


# -- every project --------------------------------------------------------------------------

ALL_LOCK = "all-projects.lock"  # in the user-level store: one run over every project at a time


def _all_lock() -> WriterLock:
    make_private(user_store())
    return WriterLock(os.path.join(user_store(), ALL_LOCK))


def start_all() -> int | None:
    """What a search of all projects within a budget left (projects to index, exchanges to
    embed), done by one detached process over every project, unless one is alive (its lock is
    handed down, as start_embedder's). Returns the new process's pid."""
    if not enabled():
        return None
    lock = _all_lock()
    try:
        lock.acquire(timeout=0)
    except LockTimeout:
        return None
    try:
        return spawn(None, "index", "--all-projects", "--worker", lock_fd=lock.fd)
    finally:
        lock.release()


def run_all(every, lock_fd: int | None = None, progress=None):
    """The run over every project: each brought up to date, then its exchanges embedded and
    linked (each project's own embed lock held meanwhile: a search there waits for a batch,
    no more). Returns (the memories brought up, exchanges embedded, still pending: None when
    the model cannot load), with bring_up's warnings in every.warnings; None when another such
    run is alive."""
    lock = _all_lock()
    if lock_fd is None or not lock.adopt(lock_fd):
        try:
            lock.acquire(timeout=1.0)
        except LockTimeout:
            return None
    try:
        lower_priority()
        opened = every.update_projects(every.scan(), progress=progress, warnings=every.warnings)
        done = left = 0
        for _p, mem in opened:
            if mem.store().readonly or rebuild_state(mem):
                continue
            try:
                every.embedder(mem)
            except Exception as e:  # noqa: BLE001 - the text index is done whatever the model does
                every.log.warn(f"all projects: the model cannot load: {e}", once=True)
                return opened, done, None
            got = step(mem, None, lambda: False, wait=EMBED_WAIT)
            if got is not None:
                done += got[0]
                left += got[1]
        return opened, done, left
    finally:
        if lock.fd is None:
            lock.release()


# -- rebuild ------------------------------------------------------------------------------------

def rebuild_state(mem) -> dict | None:
    """The running rebuild's state, or None. A state left by a rebuild that died is cleared."""
    store = mem.store()
    raw = store.get_meta(REBUILD_KEY)
    if not raw:
        return None
    if held(mem, "rebuild"):
        return _parsed(raw)
    now = store.get_meta(REBUILD_KEY)
    if now != raw:  # it finished, or another began, while the lock was probed
        return _parsed(now) if now else None
    state = _parsed(raw)
    if not store.readonly:
        with store.write():
            store.set_meta(REBUILD_KEY, None)
    mem.log.warn(f"a rebuild (pid {state.get('pid')}) stopped before it finished: its state "
                 "was cleared; the next update reads what it left")
    return None


def _parsed(raw: str) -> dict:
    try:
        state = jsontext.loads(raw)
    except ValueError:
        return {}
    return state if isinstance(state, dict) else {}


def _save(mem, state: dict) -> None:
    store = mem.store()
    with store.write():
        store.set_meta(REBUILD_KEY, jsontext.dumps(state))


def rebuild(mem, *, progress=None, embed_progress=None, lock_timeout: float = 10.0):
    """Read every source file again, then embed what the vectors kept do not cover. Holds the
    rebuild lock throughout and the embed lock once embedding starts (a background embedder
    stops between batches when it sees the rebuild). Returns (index report, embedded, pending)
    where pending is None when the model could not load."""
    if mem.store().readonly:
        raise IndexReadOnly(mem.db_path, mem.store().readonly_why)
    lock = mem.side_lock("rebuild")
    try:
        lock.acquire(timeout=0.5)  # not 0: another process may be probing it this instant
    except LockTimeout:
        state = rebuild_state(mem) or {}
        raise RebuildRunning(state) from None
    try:
        state = {"pid": os.getpid(), "started": time.time(), "phase": "reading", "done": 0,
                 "total": 0}
        _save(mem, state)
        rep = mem.update(sources=ALL, lock_timeout=lock_timeout, rebuild=True, progress=progress)
        try:
            embedder = mem.embedder()
        except Exception as e:  # noqa: BLE001 - the text index is rebuilt whatever the model does
            mem.log.warn(f"rebuild: semantic index not rebuilt: {e}")
            return rep, 0, None
        # semantic work only
        from .semantic import key_of
        key = key_of(embedder)
        state.update(phase="embedding", total=mem.store().count_pending(key))
        _save(mem, state)
        last = [0.0]

        def tick(done: int, total: int) -> None:
            if embed_progress is not None:
                embed_progress(done, total)
            if time.monotonic() - last[0] >= 1.0 or done == total:
                last[0] = time.monotonic()
                state.update(done=done, total=total)
                _save(mem, state)

        got = mem.embed(None, wait=600.0, progress=tick)
        done, left = got if got is not None else (0, mem.store().count_pending(key))
        if not left:
            drop_unused_vectors(mem)
            state.update(phase="linking")
            _save(mem, state)
            mem.link(None, wait=600.0)
        return rep, done, left
    finally:
        try:
            store = mem.store()
            with store.write():
                store.set_meta(REBUILD_KEY, None)
        finally:
            lock.release()


def drop_unused_vectors(mem) -> int:
    """Vectors no exchange links to any more, dropped under the embed lock (an embedder between
    finding a text's vectors and linking them must not lose them). 0 when it is busy."""
    def drop() -> int:
        with mem.store().write():
            return mem.store().drop_unlinked_vectors()
    try:
        n = mem.under_lock("embed", 0, drop) or 0
    except OSError:  # no lock file can be made (a read-only folder): nothing is dropped
        return 0
    if n:
        mem.log.info(f"{n} vectors no exchange uses any more were dropped")
    return n


class RebuildRunning(Failure):
    def __init__(self, state: dict):
        self.state = state
        done, total = state.get("done", 0), state.get("total", 0)
        super().__init__(f"a rebuild is already running (pid {state.get('pid')}, "
                         f"{state.get('phase', 'starting')}, {done}/{total})")
