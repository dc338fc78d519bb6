"""Memory at the point of action (issue #42): replay histories and measure, for each kind of
note the hooks add, how often it fires, whether what it names is relevant, and what it costs.
One command:

    .venv/bin/python bench/point_of_action.py [--size M] [--runs 15] [--kinds edits,errors,prompts]

- Before an edit (PreToolUse), on bench/run.py's coding history (`prepare`: S is 100 sessions,
  M 1,000), indexed once: every session is replayed in the order it ran; before each file
  change (once per file per session, at most hooks.NOTES_PER_SESSION a session, as the hook),
  api.before_edit is asked what it would have said then (`until` the change's time, the editing
  session left out) and briefing.edit_note renders it. Fires: edits that get a note; recall: of
  the edits whose file an earlier session changed (the truth, from every change the index
  holds), the share that got one; precision: of the notes, those whose every session named
  changed that very file (its absolute path) before the edit.
- A failed command met before (PostToolUseFailure), on bench/failing_commands.py's history (400
  sessions of commands failing with errors of ten families, each run with its own noise; 70% of
  those that can be fixed by a change are): each failure, in order, is looked up as the hook
  looks it up (api.error_fixes with the output as that run printed it, `until` its time, at
  most hooks.POINTERS_PER_SESSION pointers a session, each earlier session once). Relevant: the
  session named failed earlier with the same error (the same instance: the same module missing,
  not another) and fixed it. Recall: of the failures with such an earlier session, the share
  pointed to one.
- A typed prompt plainly about one session (UserPromptSubmit), on bench/eval's second set (500+
  sessions, its questions with their known answer sessions, split dev/test, and its
  nothing-queries, whose words no session holds): api.prompt_match for each, at the margins and
  floors tried; chosen on dev (the best recall with precision >= 0.9; of equal recall, the more
  precise, then the stricter), reported on test; a fork
  of the answer counts as the answer. Nothing-queries: fires per prompt.
- Tokens added per session (characters / 4), and the in-process time of one lookup.
- The hooks as Claude Code runs them (`bash hooks/run.sh hook EVENT`, the hook JSON on stdin),
  process start to exit, --runs times each in turns, beside `bash -c exit` and `python -c pass`:
  PreToolUse for a file no session changed (the shell's prefilter alone) and for one with
  history (a new session each run: its first note), PostToolUseFailure with a pointer, and
  UserPromptSubmit for a plain prompt with prompt notes on and off.
Prints JSON and markdown tables.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.run import _cpu_name, prepare  # noqa: E402


def _env(out: Path, config: Path) -> None:
    home = out / "home"
    os.environ.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
                      XDG_DATA_HOME=str(home / ".local" / "share"), CLAUDE_CONFIG_DIR=str(config),
                      PRIMA_BACKGROUND="0")


def _p(xs: list[float], q: int) -> float | None:
    return round(sorted(xs)[min(len(xs) - 1, int(len(xs) * q / 100))], 2) if xs else None


def replay_edits(ws: Path) -> tuple[dict, str]:
    """Before an edit: the replay of every file change of the history (see the docstring)."""
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
    per_session = [tokens.get(sid, 0) for sid in order]
    return _kind("before an edit", f"{fired} of {edits} edits", edits, fired, correct, hits,
                 truth, per_session, lookups), noted


def _kind(name, fires, n, fired, correct, hits, truth, per_session, lookups) -> dict:
    return {"kind": name, "fires": fires, "asked": n, "fired": fired,
            "precision": round(correct / fired, 3) if fired else None,
            "recall": round(hits / truth, 3) if truth else None,
            "tokens_per_session_mean": round(statistics.mean(per_session), 1)
            if per_session else 0, "tokens_per_session_max": max(per_session, default=0),
            "lookup_ms_p50": _p(lookups, 50), "lookup_ms_p95": _p(lookups, 95)}


def replay_errors(out: Path) -> tuple[dict, Path, str]:
    """A failed command met before: the replay of every failure (see the docstring)."""
    from bench.failing_commands import write
    from prima_memory import api, briefing
    from prima_memory.hooks import POINTERS_PER_SESSION
    from prima_memory.memory import Memory
    from prima_memory.sources.claude_code import encode_project_dir
    ws = out / "errors" / "shop"
    ws.mkdir(parents=True, exist_ok=True)
    pdir = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / encode_project_dir(str(ws))
    if pdir.exists():
        shutil.rmtree(pdir)
    sessions = write(pdir, str(ws))
    shutil.rmtree(ws / ".prima-memory", ignore_errors=True)
    mem = Memory(str(ws))
    api.update(mem, lock_timeout=60, budget=None)
    fixed_before: dict[str, list[tuple[float, str]]] = {}  # instance -> (fixed at, session)
    asked = fired = correct = hits = truth = 0
    lookups: list[float] = []
    per_session = []
    example = ""
    for s in sessions:
        given: set[str] = set()
        tokens = 0
        for when, family, label, text in s["failures"]:
            asked += 1
            real = {sid for t, sid in fixed_before.get(f"{family}:{label}", []) if t < when}
            truth += bool(real)
            if len(given) >= POINTERS_PER_SESSION:
                continue
            t0 = time.perf_counter()
            got = api.error_fixes(mem, text, s["session"], until=when)
            lookups.append((time.perf_counter() - t0) * 1000)
            fresh = next((x for x in got["sessions"] if x["session_id"] not in given), None)
            if fresh is None:
                continue
            note = briefing.error_note(fresh)
            example = example or text
            given.add(fresh["session_id"])
            fired += 1
            tokens += len(note) // 4
            correct += fresh["session_id"] in real
            hits += bool(real) and fresh["session_id"] in real
        per_session.append(tokens)
        if s["fixed"]:
            for _w, family, label, _t in s["failures"][-1:]:
                fixed_before.setdefault(f"{family}:{label}", []).append(
                    (s["failures"][-1][0], s["session"]))
    mem.close()
    return (_kind("a failed command met before", f"{fired} of {asked} failures", asked, fired,
                  correct, hits, truth, per_session, lookups), ws, example)


MARGINS = (1.5, 2.0, 3.0, 4.0)
FLOORS = (0.3, 0.5, 0.7)


def replay_prompts(out: Path) -> dict:
    """A typed prompt plainly about one session: bench/eval's second set (see the docstring)."""
    sys.path.insert(0, str(REPO / "bench" / "eval"))
    import questions as second  # (bench/eval/questions.py: bench/eval.py's second set)
    from prima_memory import api, briefing
    from prima_memory.memory import Memory
    root = out / "questions"
    config = root / "claude"
    old = os.environ["CLAUDE_CONFIG_DIR"]
    os.environ["CLAUDE_CONFIG_DIR"] = str(config)
    try:
        manifest = second.write_history(root)
        mem = Memory(manifest["workspace"])
        api.update(mem, lock_timeout=60, budget=None)
        qset = second.load_set()
        name_of = {sid: name for name, sid in manifest["sessions"].items()}
        for f in manifest["forks"].values():
            name_of[f["session"]] = f["origin"]  # (a fork of the answer is the answer)
        grid = {}
        lookups: list[float] = []
        tokens: dict[tuple[float, float], list[int]] = {}
        for margin in MARGINS:
            for floor in FLOORS:
                rows = []
                for q in qset["questions"]:
                    t0 = time.perf_counter()
                    got = api.prompt_match(mem, q["query"], margin=margin, floor=floor)
                    lookups.append((time.perf_counter() - t0) * 1000)
                    if got is not None:
                        tokens.setdefault((margin, floor), []).append(
                            len(briefing.prompt_note(got)) // 4)
                    rows.append((second.split(q["query"]), got is not None,
                                 got is not None and name_of.get(got["session_id"]) == q["target"]))
                nothing = [api.prompt_match(mem, q, margin=margin, floor=floor) is not None
                           for q in qset["nothing"]]
                grid[(margin, floor)] = {split: _rates([r for r in rows if r[0] == split])
                                         for split in ("dev", "test")}
                grid[(margin, floor)]["nothing_fires_per_prompt"] = round(
                    sum(nothing) / len(nothing), 3) if nothing else None
        mem.close()
    finally:
        os.environ["CLAUDE_CONFIG_DIR"] = old
    ok = [k for k, v in grid.items() if (v["dev"]["precision"] or 0) >= 0.9]
    # (of equal recall: the more precise, then the stricter)
    chosen = max(ok, key=lambda k: (grid[k]["dev"]["recall"], grid[k]["dev"]["precision"],
                                    k[1], -k[0])) if ok else None
    return {"kind": "a typed prompt plainly about one session", "grid": {
        f"margin {m}, floor {f}": v for (m, f), v in grid.items()},
        "chosen": None if chosen is None else {"margin": chosen[0], "floor": chosen[1],
                                               **grid[chosen], "tokens_per_note_mean": round(
                                                   statistics.mean(tokens[chosen]), 1)},
        "lookup_ms_p50": _p(lookups, 50), "lookup_ms_p95": _p(lookups, 95)}


def _rates(rows: list[tuple[str, bool, bool]]) -> dict:
    fired = sum(f for _s, f, _c in rows)
    right = sum(c for _s, _f, c in rows)
    return {"questions": len(rows), "fired": fired,
            "precision": round(right / fired, 3) if fired else None,
            "recall": round(right / len(rows), 3) if rows else None}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="S")
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "point-of-action"))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--kinds", default="edits,errors,prompts")
    args = ap.parse_args()
    kinds = set(args.kinds.split(","))
    out, config, ws, _pdir = prepare(args.size, args.out)
    _env(out, config)
    result: dict = {"command": " ".join(["bench/point_of_action.py"] + sys.argv[1:]),
                    "machine": f"{_cpu_name()}, {os.cpu_count()} cores", "kinds": []}
    noted, errors_ws, error = None, None, None
    if "edits" in kinds:
        got, noted = replay_edits(ws)
        result["kinds"].append(got)
    if "errors" in kinds:
        got, errors_ws, error = replay_errors(out)
        result["kinds"].append(got)
    if "prompts" in kinds:
        result["prompts"] = replay_prompts(out)
    result["hook_ms_p50"] = _hook_times(ws, noted, errors_ws, error, args.runs)
    print(json.dumps(result, indent=2))
    print("\n| kind | fires | precision | recall | tokens per session (mean / max) | lookup p50 |"
          "\n|---|---|---|---|---|---|")
    for k in result["kinds"]:
        print(f"| {k['kind']} | {k['fires']} | {k['precision']} | {k['recall']} | "
              f"{k['tokens_per_session_mean']} / {k['tokens_per_session_max']} | "
              f"{k['lookup_ms_p50']} ms |")
    if "prompts" in result:
        pr = result["prompts"]
        print("\n| prompts: margin, floor | dev fired / precision / recall | test fired / "
              "precision / recall | nothing-queries fires per prompt |\n|---|---|---|---|")
        for name, v in pr["grid"].items():
            print(f"| {name} | " + " | ".join(
                f"{v[s]['fired']} / {v[s]['precision']} / {v[s]['recall']}"
                for s in ("dev", "test")) + f" | {v['nothing_fires_per_prompt']} |")
        print(f"\nchosen on dev: {pr['chosen']}")
    print("\n| hook, process start to exit, p50 | ms |\n|---|---|\n"
          + "\n".join(f"| {k} | {v} |" for k, v in result["hook_ms_p50"].items()))


def _hook_times(ws: Path, noted: str | None, errors_ws: Path | None, error: str | None,
                runs: int) -> dict:
    """p50 ms of each hook as Claude Code runs it, and of `bash -c exit` and `python -c pass`,
    measured in turns (see the docstring)."""
    import subprocess
    import uuid
    env = dict(os.environ, CLAUDE_PROJECT_DIR=str(ws), PRIMA_PYTHON=sys.executable)
    run_sh = str(REPO / "hooks" / "run.sh")

    def pre(path):
        return ("pre-tool-use", ws, {"tool_name": "Edit", "hook_event_name": "PreToolUse",
                                     "tool_input": {"file_path": path, "old_string": "a",
                                                    "new_string": "b"}}, {})
    cases = {"a file no session changed (the prefilter alone)": pre(str(ws / "src" / "brand_new.py"))}
    if noted:
        cases["a file with history (its note)"] = pre(noted)
    if errors_ws and error:
        cases["a failed command met before (its pointer)"] = (
            "post-tool-use-failure", errors_ws, {"tool_name": "Bash",
                                                 "hook_event_name": "PostToolUseFailure",
                                                 "tool_input": {"command": "python -m app"},
                                                 "error": error, "is_interrupt": False}, {})
    prompt = {"hook_event_name": "UserPromptSubmit",
              "prompt": "the deploy pipeline fails on the websocket reconnect again, why?"}
    cases["a plain prompt, prompt notes on"] = ("user-prompt-submit", ws, prompt,
                                                {"PRIMA_PROMPT_NOTES": "1"})
    cases["a plain prompt, prompt notes off"] = ("user-prompt-submit", ws, prompt,
                                                 {"PRIMA_PROMPT_NOTES": "0"})
    times: dict[str, list[float]] = {"bash -c exit": [], "python -c pass": [],
                                     **{k: [] for k in cases}}
    for _ in range(runs):
        for what, (event, where, data, extra) in cases.items():
            data = {**data, "session_id": str(uuid.uuid4()), "cwd": str(where)}
            e = dict(env, CLAUDE_PROJECT_DIR=str(where), **extra)
            t = time.perf_counter()
            p = subprocess.run(["bash", run_sh, "hook", event], input=json.dumps(data).encode(),
                               env=e, capture_output=True, cwd=str(where))
            times[what].append((time.perf_counter() - t) * 1000)
            if ("its note" in what or "its pointer" in what) \
                    and b"additionalContext" not in p.stdout:
                raise SystemExit(f"{what}: nothing said: {p.stdout[:300]!r} {p.stderr[-300:]!r}")
        for what, argv in (("bash -c exit", ["bash", "-c", "exit"]),
                           ("python -c pass", [sys.executable, "-c", "pass"])):
            t = time.perf_counter()
            subprocess.run(argv)
            times[what].append((time.perf_counter() - t) * 1000)
    return {k: round(statistics.median(v), 1) for k, v in times.items()}


if __name__ == "__main__":
    main()
