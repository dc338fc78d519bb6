"""Hook and search cost as the history grows: does work follow what changed, or the history?

    .venv/bin/python bench/scale.py [--sizes 1000,10000,20000] [--runs 10] [--huge-mb 200]

For each size, a history of that many small sessions (generated once into bench/out/scale-N,
deterministic) is indexed, then, `runs` times: one exchange is appended to the newest session and
its Stop hook runs (the payload names the transcript, as Claude Code's does); a new session's
transcript is written and its Stop runs; Claude Code's prompt bookkeeping line is appended after
it and a SessionStart runs (the usual start: the project folder has a new file); a SessionStart
runs again with nothing changed; a keyword search runs through the CLI. Every hook is started as
hooks/hooks.json says. `python -c pass` is timed in the same run as the baseline. Last, one
session of --huge-mb megabytes is indexed and a line appended to it is indexed by its Stop.
Prints JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.hooks import hook_command, timed  # noqa: E402
from bench.run import NOW, _cpu_name, append_exchange, pct  # noqa: E402

BYTES_PER_SESSION = 4000  # "small sessions": a few exchanges each


def summary(xs: list[float]) -> dict:
    return {"p50_ms": round(pct(xs, 50), 1), "p95_ms": round(pct(xs, 95), 1)}


def history(out: Path, n: int) -> tuple[Path, Path, Path]:
    from bench.synthetic import generate_history
    from prima_memory.sources.claude_code import encode_project_dir
    root = out / f"scale-{n}"
    config, ws = root / "claude", root / "work space" / "bench project"
    pdir = config / "projects" / encode_project_dir(str(ws))
    if not pdir.is_dir():
        t = time.perf_counter()
        generate_history(config, str(ws), n, seed=7, target_bytes=n * BYTES_PER_SESSION, now=NOW,
                         images=0)
        print(f"generated {n} sessions in {time.perf_counter() - t:.1f}s", file=sys.stderr)
    ws.mkdir(parents=True, exist_ok=True)
    return config, ws, pdir


def huge_session(out: Path, mb: int) -> tuple[Path, Path, Path]:
    """One session file of `mb` megabytes: many ordinary exchanges, as a long-lived session is."""
    from prima_memory.sources.claude_code import encode_project_dir
    root = out / f"scale-huge-{mb}"
    config, ws = root / "claude", root / "work space" / "bench project"
    pdir = config / "projects" / encode_project_dir(str(ws))
    path = pdir / "0f0f0f0f-0000-4000-8000-000000000200.jsonl"
    if not path.exists():
        pdir.mkdir(parents=True, exist_ok=True)
        ws.mkdir(parents=True, exist_ok=True)
        sid = path.stem
        filler = "lorem ipsum dolor sit amet consectetur " * 50
        with open(path, "w", encoding="utf-8") as f:
            i = 0
            while f.tell() < mb * 1_000_000:
                ts = "2026-11-%02dT10:%02d:%02d.000Z" % (1 + i // 86400 % 28, i // 60 % 60, i % 60)
                base = {"isSidechain": False, "userType": "external", "cwd": str(ws),
                        "sessionId": sid, "version": "2.1.100", "gitBranch": "main",
                        "timestamp": ts}
                user = {"role": "user", "content": f"question {i} about zqhuge{i % 997} {filler}"}
                reply = {"id": f"msg_huge_{i}", "type": "message", "role": "assistant",
                         "content": [{"type": "text", "text": f"answer {i} {filler}"}]}
                f.write(json.dumps(dict(base, type="user", uuid=f"u{i}", message=user)) + "\n")
                f.write(json.dumps(dict(base, type="assistant", uuid=f"a{i}", message=reply)) + "\n")
                i += 1
    return config, ws, pdir


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,20000")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--huge-mb", type=int, default=200)
    ap.add_argument("--out", default=str(REPO / "bench" / "out"))
    args = ap.parse_args()
    out = Path(args.out)
    report: dict = {"runs": args.runs, "machine": {
        "cpu": _cpu_name(), "cores": os.cpu_count(), "python": platform.python_version()}}
    start_cmd, stop_cmd = hook_command("session-start"), hook_command("stop")
    cli = [sys.executable, "-m", "prima_memory"]
    base = dict(os.environ, PRIMA_PYTHON=sys.executable)
    base.pop("PRIMA_EXPECTED_HOST", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "prima_memory")],
                   check=True, stdout=subprocess.DEVNULL)
    for n in [int(x) for x in args.sizes.split(",") if x]:
        config, ws, pdir = history(out, n)
        env = dict(base, CLAUDE_CONFIG_DIR=str(config), HOME=str(out / "home"),
                   CLAUDE_PROJECT_DIR=str(ws))
        t = time.perf_counter()
        subprocess.run(cli + ["--workspace", str(ws), "index"], env=env, check=True,
                       capture_output=True)
        cold = time.perf_counter() - t
        newest = max(pdir.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
        original = newest.read_bytes()
        stop_json = json.dumps({"session_id": newest.stem, "cwd": str(ws),
                                "transcript_path": str(newest), "hook_event_name": "Stop",
                                "stop_hook_active": False,
                                "last_assistant_message": "benchmark appended answer"}).encode()
        start_json = json.dumps({"session_id": "bench-new-session", "cwd": str(ws),
                                 "source": "startup", "hook_event_name": "SessionStart"}).encode()
        res: dict = {k: [] for k in ("python_c_pass", "stop_after_one_exchange",
                                     "stop_of_a_new_session", "session_start_after_a_session",
                                     "session_start_current", "keyword_search_cli")}
        created = []
        try:
            for i in range(args.runs):
                res["python_c_pass"].append(timed([sys.executable, "-c", "pass"], env)[0])
                append_exchange(newest, 5000 + i)
                res["stop_after_one_exchange"].append(timed(stop_cmd, env, stop_json, shell=True)[0])
                new = pdir / f"bbbbbbbb-{i:04d}-4000-8000-{int(time.time() * 1e6) % 10**12:012d}.jsonl"
                created.append(new)
                new.write_text(json.dumps({
                    "type": "user", "uuid": f"bench-new-{i}", "sessionId": new.stem,
                    "cwd": str(ws), "timestamp": "2026-11-20T09:00:00.000Z",
                    "message": {"role": "user", "content": f"a new benchmark session {i}"}}) + "\n")
                append_exchange(new, 7000 + i)
                new_stop = json.dumps({"session_id": new.stem, "cwd": str(ws),
                                       "transcript_path": str(new), "hook_event_name": "Stop",
                                       "stop_hook_active": False}).encode()
                res["stop_of_a_new_session"].append(timed(stop_cmd, env, new_stop, shell=True)[0])
                with open(new, "a") as f:  # what Claude Code writes after the Stop hook
                    f.write(json.dumps({"type": "last-prompt", "lastPrompt": "x",
                                        "sessionId": new.stem}) + "\n")
                res["session_start_after_a_session"].append(
                    timed(start_cmd, env, start_json, shell=True)[0])
                res["session_start_current"].append(timed(start_cmd, env, start_json, shell=True)[0])
                res["keyword_search_cli"].append(timed(
                    cli + ["search", f"zqmarker{i * 37 % n}", "--mode", "keyword", "--json"],
                    env)[0])
        finally:
            newest.write_bytes(original)
            for p in created:
                p.unlink()
        report[f"{n}_sessions"] = {"files": sum(1 for _ in pdir.rglob("*.jsonl")),
                                   "cold_index_s": round(cold, 1),
                                   **{k: summary(v) for k, v in res.items()}}
        print(json.dumps({n: report[f"{n}_sessions"]}), file=sys.stderr)
    if args.huge_mb:
        config, ws, pdir = huge_session(out, args.huge_mb)
        path = next(pdir.glob("*.jsonl"))
        env = dict(base, CLAUDE_CONFIG_DIR=str(config), HOME=str(out / "home"),
                   CLAUDE_PROJECT_DIR=str(ws))
        subprocess.run(cli + ["--workspace", str(ws), "index"], env=env, check=True,
                       capture_output=True)
        size = path.stat().st_size
        stop_json = json.dumps({"session_id": path.stem, "cwd": str(ws),
                                "transcript_path": str(path), "hook_event_name": "Stop",
                                "stop_hook_active": False,
                                "last_assistant_message": "benchmark appended answer"}).encode()
        stops = []
        for i in range(args.runs):  # (the appended exchanges stay: a few hundred bytes each)
            append_exchange(path, int(time.time() * 1000) % 10**9 + i)
            stops.append(timed(stop_cmd, env, stop_json, shell=True)[0])
        report[f"one_session_of_{args.huge_mb}_mb"] = {
            "bytes": size, "stop_after_one_exchange": summary(stops)}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
