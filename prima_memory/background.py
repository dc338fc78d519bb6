"""Work that outlives the command that starts it: the background embedder and a background
rebuild.

Each runs as a detached process (its own session, no terminal, lower priority) that holds its own
lock for its whole life. A rebuild's state (pid, started, done, total) is kept in the index, where
`status` reads it; a state whose lock nobody holds was left by a process that died, and is
cleared. Starting one costs a fork and an exec: the Stop hook that does it returns at once and
never imports the model.
"""
from __future__ import annotations

import json
import os
import sys
import time

REBUILD_KEY = "rebuild"


def enabled() -> bool:
    """PRIMA_BACKGROUND=0 (off, false, no): never start a background process."""
    return os.environ.get("PRIMA_BACKGROUND", "").strip().lower() not in ("0", "off", "false", "no")


def spawn(ws: str, *args: str) -> int:
    """Start `prima-memory --workspace ws ARGS` detached: it survives the terminal and the
    Claude Code session that started it, and never writes to their output."""
    cmd = [sys.executable, "-m", "prima_memory", "--workspace", ws, *args]
    if hasattr(os, "posix_spawn"):  # a hook's way: `subprocess` alone costs it 5-10 ms to import
        null = os.devnull
        actions = [(os.POSIX_SPAWN_OPEN, 0, null, os.O_RDONLY, 0),
                   (os.POSIX_SPAWN_OPEN, 1, null, os.O_WRONLY, 0),
                   (os.POSIX_SPAWN_OPEN, 2, null, os.O_WRONLY, 0)]
        # a new session: no terminal, and not in the process group Claude Code may kill
        return os.posix_spawn(sys.executable, cmd, os.environ, file_actions=actions, setsid=True)
    import subprocess
    flags = getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, close_fds=True, cwd=ws,
                         start_new_session=not flags, creationflags=flags)
    return p.pid


def held(mem, name: str) -> bool:
    """Whether a live process holds the lock of job `name`."""
    from .locking import LockTimeout
    lock = mem.side_lock(name)
    try:
        lock.acquire(timeout=0)
    except LockTimeout:
        return True
    except OSError:  # no lock file and none can be made (a read-only folder): no one holds it
        return False
    lock.release()
    return False


def start_embedder(mem) -> int | None:
    """After the Stop hook indexed something: an embedder for it, unless one is running (or a
    rebuild, which embeds too). Returns the new process's pid."""
    if not enabled() or held(mem, "embed") or held(mem, "rebuild"):
        return None
    return spawn(mem.ws, "embed", "--worker")


def _lower_priority() -> None:
    try:
        os.nice(10)
    except (AttributeError, OSError):
        pass


def run_embedder(mem) -> tuple[int, int] | None:
    """The background embedder's life: embed until nothing is pending (a Stop during the run
    adds more: look again), and yield to a rebuild. None when another embedder is running."""
    _lower_priority()
    total = 0
    while True:
        got = mem.embed(None, should_stop=lambda: held(mem, "rebuild"))
        if got is None:
            return None if not total else (total, 0)
        done, left = got
        total += done
        if left or not done:
            return total, left


# -- rebuild ------------------------------------------------------------------------------------

def rebuild_state(mem) -> dict | None:
    """The running rebuild's state, or None. A state left by a rebuild that died is cleared."""
    store = mem.store()
    raw = store.get_meta(REBUILD_KEY)
    if not raw:
        return None
    try:
        state = json.loads(raw)
    except ValueError:
        state = {}
    if held(mem, "rebuild"):
        return state
    if not store.readonly:
        with store.transaction():
            store.set_meta(REBUILD_KEY, None)
    mem.log.warn(f"a rebuild (pid {state.get('pid')}) stopped before it finished: its state "
                 "was cleared; the next update reads what it left")
    return None


def _save(mem, state: dict) -> None:
    store = mem.store()
    with store.transaction():
        store.set_meta(REBUILD_KEY, json.dumps(state))


def rebuild(mem, *, progress=None, embed_progress=None, lock_timeout: float = 10.0):
    """Read every source file again, then embed what the vectors kept do not cover. Holds the
    rebuild lock throughout and the embed lock once embedding starts (a background embedder
    stops between batches when it sees the rebuild). Returns (index report, embedded, pending)
    where pending is None when the model could not load."""
    from .locking import LockTimeout
    lock = mem.side_lock("rebuild")
    try:
        lock.acquire(timeout=0)
    except LockTimeout:
        state = rebuild_state(mem) or {}
        raise RebuildRunning(state) from None
    try:
        state = {"pid": os.getpid(), "started": time.time(), "phase": "reading", "done": 0,
                 "total": 0}
        _save(mem, state)
        rep = mem.update(lock_timeout=lock_timeout, rebuild=True, progress=progress)
        try:
            embedder = mem.embedder()
        except Exception as e:  # noqa: BLE001 - the text index is rebuilt whatever the model does
            mem.log.warn(f"rebuild: semantic index not rebuilt: {e}")
            return rep, 0, None
        from .semantic import vector_key
        key = vector_key(embedder.model)
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
            store = mem.store()
            with store.transaction():
                dropped = store.drop_unlinked_vectors()
            if dropped:
                mem.log.info(f"rebuild: {dropped} vectors no exchange uses any more were dropped")
        return rep, done, left
    finally:
        try:
            store = mem.store()
            with store.transaction():
                store.set_meta(REBUILD_KEY, None)
        finally:
            lock.release()


class RebuildRunning(Exception):
    def __init__(self, state: dict):
        self.state = state
        done, total = state.get("done", 0), state.get("total", 0)
        super().__init__(f"a rebuild is already running (pid {state.get('pid')}, "
                         f"{state.get('phase', 'starting')}, {done}/{total})")
