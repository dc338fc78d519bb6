"""`prima-memory hook session-start|stop|pre-compact`: Claude Code's hooks, failing open.

Whatever happens (bad stdin, a missing or corrupt index, a busy lock, a missing package, any
exception, running out of time) a hook exits 0, prints nothing but the briefing, and logs the
problem. It never exits 2 (that would block Claude Code) and never loads the embedding model.
"""
from __future__ import annotations

import json
import os
import select
import signal
import sys
import time

# (seconds to wait for the writer lock, indexing budget, hard deadline); hooks.json allows more
LIMITS = {"session-start": (0.3, 1.0, 8), "stop": (3.0, 5.0, 20), "pre-compact": (3.0, 8.0, 25)}


class _Deadline(BaseException):
    """Raised by the alarm: unwinds everything (transactions roll back), then exit 0."""


def read_input(timeout: float = 2.0) -> tuple[dict, str | None]:
    """The hook's JSON from stdin, and what was wrong with it: ({}, why) for empty, partial,
    invalid or absent input."""
    try:
        if sys.stdin is None or sys.stdin.isatty():
            return {}, "no hook input on stdin"
        fd = sys.stdin.fileno()
        chunks, deadline = [], time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                break
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        from .sources.jsonl import mend_surrogates
        raw = mend_surrogates(b"".join(chunks)).decode("utf-8", "replace")
        if not raw.strip():
            return {}, "empty hook input"
        data = json.loads(raw)
        return (data, None) if isinstance(data, dict) else ({}, "hook input is not a JSON object")
    except (OSError, ValueError, RecursionError) as e:
        return {}, f"unreadable hook input ({type(e).__name__})"


def run(event: str, workspace: str | None = None) -> int:
    lock_wait, index_budget, hard = LIMITS.get(event, (0.3, 1.0, 8))
    ws = mem = None
    try:
        signal.signal(signal.SIGALRM, _on_alarm)
        signal.alarm(hard)
    except (AttributeError, ValueError):
        pass  # no SIGALRM (Windows): the budgets still bound the work
    try:
        data, problem = read_input()
        from . import workspace as wsmod
        ws = wsmod.hook_workspace(workspace, data.get("cwd"))
        if ws is None:
            return 0  # no folder this hook may keep a memory in: nothing to do
        try:
            wsmod.check_host(ws)
        except wsmod.WorkspaceError:
            return 0  # host mode: not a Claude Code workspace, stay silent
        from .memory import Memory
        mem = Memory(ws)
        if problem:
            mem.store()  # opens the log file too
            mem.log.warn(f"hook {event}: {problem}; going on without it")
        session_id = wsmod.safe_session_id(data.get("session_id"))
        if session_id is None and data.get("session_id") is not None:
            mem.store()  # opens the log file too
            mem.log.warn(f"hook {event}: session id {str(data.get('session_id'))[:80]!r} refused; "
                         "going on without it")
        try:
            out = mem.guarded(lambda: _HANDLERS[event](mem, data, session_id, lock_wait,
                                                        index_budget))
        finally:
            mem.close()
        if out:
            sys.stdout.write(out if out.endswith("\n") else out + "\n")
            sys.stdout.flush()
    except _Deadline:
        _log(mem, ws, f"hook {event}: stopped at its {hard}s deadline")
    except BaseException as e:  # noqa: BLE001 - a hook must never fail Claude Code
        _log(mem, ws, f"hook {event} failed: {type(e).__name__}: {e}")
    finally:
        try:
            signal.alarm(0)
        except (AttributeError, ValueError):
            pass
    return 0


def _on_alarm(_signum, _frame):
    raise _Deadline()


def _log(mem, ws: str | None, msg: str) -> None:
    """To the workspace's log when it has one (even if the failure came before the index could
    be opened: Log needs only the standard library); without one, nowhere (a hook's stderr is
    Claude Code's, not ours)."""
    try:
        from .logs import Log
        from .workspace import data_dir, is_real_dir
        log = mem.log if mem is not None and mem.log.path else None
        if log is None and ws and is_real_dir(data_dir(ws)):
            log = Log(data_dir(ws))
        if log is not None:
            log.error(msg)
    except Exception:  # noqa: BLE001
        pass


def _update(mem, lock_wait: float, index_budget: float, **kw):
    from .memory import IndexBusy, IndexReadOnly
    try:
        return mem.update(lock_timeout=lock_wait, budget=index_budget, **kw)
    except IndexBusy:
        mem.log.info("hook: index busy, leaving the update to the next run")
    except IndexReadOnly as e:
        mem.log.info(f"hook: {e}")
    return None


def enabled(name: str) -> bool:
    """PRIMA_BRIEFING=0 / PRIMA_CHECKPOINTS=0 (or off, false, no) turn a part off."""
    return os.environ.get(name, "").strip().lower() not in ("0", "off", "false", "no")


def session_start(mem, data: dict, session_id, lock_wait, index_budget) -> str:
    from . import briefing, checkpoints
    if data.get("source") == "compact" and session_id and enabled("PRIMA_CHECKPOINTS"):
        path = checkpoints.latest(mem.ws, session_id)
        if path:
            return checkpoints.inject(path)
    _update(mem, lock_wait, index_budget, extracts=False, quick=True)  # extracts: Stop writes them
    if not mem.exists() or not enabled("PRIMA_BRIEFING"):
        return ""
    return briefing.render(mem.store(), exclude_session=session_id)


TRANSCRIPT_WAIT = 0.5  # seconds Stop waits for a transcript Claude Code has not written yet


def _await_transcript(mem, path) -> None:
    """Claude Code writes transcripts asynchronously: in `claude -p` a new session's file appears
    some tens of milliseconds after its Stop hook starts. Wait a moment for it, or the session
    would only be indexed by the next session's start."""
    if not isinstance(path, str) or not path or os.path.exists(path):
        return
    t0 = time.monotonic()
    while time.monotonic() - t0 < TRANSCRIPT_WAIT:
        time.sleep(0.02)
        if os.path.exists(path):
            mem.log.info(f"stop: waited {time.monotonic() - t0:.2f}s for the transcript")
            return


def stop(mem, data: dict, session_id, lock_wait, index_budget) -> str:
    _await_transcript(mem, data.get("transcript_path"))
    rep = _update(mem, lock_wait, index_budget, only_session=session_id)
    last = data.get("last_assistant_message")
    noted = False
    if session_id and isinstance(last, str) and last.strip():
        # The transcript may lag behind the hook: keep Claude's last reply searchable now.
        noted = mem.note_last_reply(session_id, last, lock_timeout=0.5)
    if (rep is not None and rep.sessions_touched) or noted:
        _start_embedder(mem)
    return ""


def _start_embedder(mem) -> None:
    """New exchanges: embed them in a detached process, so a /recall soon after finds them by
    meaning without waiting. The hook itself never loads the model."""
    from . import background
    try:
        pid = background.start_embedder(mem)
    except Exception as e:  # noqa: BLE001 - the next search embeds them anyway
        mem.log.warn(f"stop: could not start the background embedder: {e}")
        return
    if pid:
        mem.log.info(f"stop: background embedder started (pid {pid})")


def pre_compact(mem, data: dict, session_id, lock_wait, index_budget) -> str:
    from . import checkpoints
    from .sources import claude_code
    if not session_id or not enabled("PRIMA_CHECKPOINTS"):
        return ""
    _update(mem, lock_wait, index_budget, only_session=session_id)
    row = mem.store().session_by_session_id(session_id, claude_code.SOURCE)  # Claude's own
    if row is None:
        mem.log.warn(f"pre-compact: session {session_id} is not in the index; no checkpoint")
        return ""
    trigger = data.get("trigger") if isinstance(data.get("trigger"), str) else None
    path = checkpoints.write(mem.store(), row, mem.ws, trigger)
    mem.log.info(f"checkpoint written: {path}")
    return ""


_HANDLERS = {"session-start": session_start, "stop": stop, "pre-compact": pre_compact}
EVENTS = tuple(_HANDLERS)
