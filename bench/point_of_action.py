"""Memory at the point of action (issue #42): replay a history's edits and measure the note the
PreToolUse hook would add before each. One command:

    .venv/bin/python bench/point_of_action.py [--size S|M]

On bench/run.py's coding history (`prepare`: S is 100 sessions, M 1,000), indexed once, every
session is replayed in the order it ran: before each file change (once per file per session,
as the hook notes), api.before_edit is asked what it would have said then (`until` the change's
time, the editing session left out) and briefing.edit_note renders it. Then:
- fires: edits that get a note (once per file, at most hooks.NOTES_PER_SESSION a session, as
  the hook); recall: of the edits replayed whose file an earlier session changed (the truth,
  from every change the index holds), the share that got one;
- precision: of the notes, those whose every session named changed that very file (its
  absolute path) before the edit; a session named that did not is a false note;
- tokens added per session (characters / 4), and the in-process time of one lookup;
- the hook as Claude Code runs it (`bash hooks/run.sh hook pre-tool-use`, the hook JSON on
  stdin, PRIMA_EDIT_NOTES=1), process start to exit, --runs times each in turns: a file with
  no history, and one with history (a new session each run, so each is its first note),
  beside `python -c pass`.
Prints JSON and a markdown table.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.run import _cpu_name, prepare  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="S")
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "point-of-action"))
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    out, config, ws, _pdir = prepare(args.size, args.out)
    home = out / "home"
    os.environ.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
                      XDG_DATA_HOME=str(home / ".local" / "share"), CLAUDE_CONFIG_DIR=str(config),
                      PRIMA_BACKGROUND="0")
    from prima_memory import api, briefing
    from prima_memory.hooks import NOTES_PER_SESSION
    from prima_memory.memory import Memory
    mem = Memory(str(ws))
    api.update(mem, lock_timeout=60, budget=None)
    store = mem.store()
    rows = store.file_history(None)  # (path, tool, why, ts, session, cwd, key)
    by_session: dict[int, list[tuple]] = {}
    first_change: dict[tuple[str, int], float] = {}  # (path, session) -> its first change
    for p, _tool, _why, ts, sid, _cwd, _key in rows:
        if ts is None:
            continue
        by_session.setdefault(sid, []).append((ts, p))
        k = (p, sid)
        first_change[k] = min(first_change.get(k, ts), ts)
    ids = {sid: store.session(sid) for sid in by_session}
    order = sorted(by_session, key=lambda sid: min(t for t, _p in by_session[sid]))
    edits = fired = truth = hits = correct = 0
    lookups: list[float] = []
    tokens: dict[int, int] = {}
    for sid in order:
        row = ids[sid]
        if row is None:
            continue
        seen: set[str] = set()
        notes = 0
        for ts, path in sorted(by_session[sid]):
            if path in seen or notes >= NOTES_PER_SESSION:
                continue  # (once per file per session, and a few a session, as the hook)
            seen.add(path)
            edits += 1
            earlier = {s for (p, s), t in first_change.items() if p == path and s != sid and t < ts}
            t0 = time.perf_counter()
            past = api.before_edit(mem, path, row.session_id, until=ts)
            note = briefing.edit_note(past)
            lookups.append((time.perf_counter() - t0) * 1000)
            truth += bool(earlier)
            if not note:
                continue
            fired += 1
            notes += 1
            hits += bool(earlier)
            named = {s["session_id"] for s in past["sessions"]}
            real = {ids[s].session_id for s in earlier if ids.get(s) is not None}
            correct += named <= real
            tokens[sid] = tokens.get(sid, 0) + len(note) // 4
    mem.close()
    noted = max(first_change, key=lambda k: sum(1 for p, _s in first_change if p == k[0]))[0]
    hook = _hook_times(ws, noted, args.runs)
    per_session = [tokens.get(sid, 0) for sid in order]
    result = {
        "command": " ".join(["bench/point_of_action.py"] + sys.argv[1:]),
        "machine": f"{_cpu_name()}, {os.cpu_count()} cores",
        "sessions": len(order), "edits_replayed": edits, "edits_with_earlier_history": truth,
        "notes": fired, "precision": round(correct / fired, 3) if fired else None,
        "recall": round(hits / truth, 3) if truth else None,
        "tokens_per_session_mean": round(statistics.mean(per_session), 1) if per_session else 0,
        "tokens_per_session_max": max(per_session, default=0),
        "lookup_ms_p50": round(statistics.median(lookups), 2) if lookups else None,
        "lookup_ms_p95": round(sorted(lookups)[int(len(lookups) * 0.95)], 2) if lookups else None,
        "hook_ms_p50": hook,
    }
    print(json.dumps(result, indent=2))
    print(f"\n| kind | fires | precision | recall | tokens per session (mean / max) |"
          f"\n|---|---|---|---|---|\n| before an edit | {fired} of {edits} edits | "
          f"{result['precision']} | {result['recall']} | {result['tokens_per_session_mean']} / "
          f"{result['tokens_per_session_max']} |")
    print("\n| PreToolUse, process start to exit, p50 | ms |\n|---|---|\n"
          + "\n".join(f"| {k} | {v} |" for k, v in hook.items()))


def _hook_times(ws: Path, noted: str, runs: int) -> dict:
    """p50 ms of the hook for a file with no history and one with history (each run a new
    session: its first note), and of `python -c pass`, measured in turns."""
    import subprocess
    import uuid
    env = dict(os.environ, PRIMA_EDIT_NOTES="1", CLAUDE_PROJECT_DIR=str(ws),
               PRIMA_PYTHON=sys.executable)
    cmd = ["bash", str(REPO / "hooks" / "run.sh"), "hook", "pre-tool-use"]
    times: dict[str, list[float]] = {"python -c pass": [], "a file with no history": [],
                                     "a file with history (its note)": []}
    for _ in range(runs):
        for what, path in (("a file with no history", str(ws / "src" / "brand_new.py")),
                           ("a file with history (its note)", noted)):
            data = json.dumps({"session_id": str(uuid.uuid4()), "cwd": str(ws),
                               "hook_event_name": "PreToolUse", "tool_name": "Edit",
                               "tool_input": {"file_path": path}}).encode()
            t = time.perf_counter()
            p = subprocess.run(cmd, input=data, env=env, capture_output=True, cwd=str(ws))
            times[what].append((time.perf_counter() - t) * 1000)
            if what.startswith("a file with history") and b"additionalContext" not in p.stdout:
                raise SystemExit(f"no note for {path}: {p.stdout[:300]!r} {p.stderr[-300:]!r}")
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"])
        times["python -c pass"].append((time.perf_counter() - t) * 1000)
    return {k: round(statistics.median(v), 1) for k, v in times.items()}


if __name__ == "__main__":
    main()
