"""The first search in a project, again and again: #36 saw 2 of 45 hang for ever (a reader process
forked while the model's thread was importing).

    .venv/bin/python bench/first_search.py [--sessions 659] [--runs 200] [--timeout 300]
        [--out /tmp/prima-memory-real] [--package PATH] [--query "..."]

Each run is `prima-memory search "<a plain-English question>"` as a user types it in the project's
folder (default, combined mode: the model loads on a thread beside the cold index and its reader
process), in a fresh `.prima-memory` (the index made from nothing every time), on bench/real.py's
history of real transcripts (`--sessions` of them). PRIMA_BACKGROUND=0: no background embedder
outlives a run (a user's first search starts one for the exchanges it left). A run that has not
ended after `--timeout` seconds is a hang: it is killed and counted. Also counted: runs that
failed (exit status not 0, or no result), and runs answered by keywords alone (the model did not
load: the output's warnings say why). `--package`: the checkout whose prima_memory runs (this
one by default). Prints JSON on stdout (every run's time), a summary on stderr as it goes.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]
sys.path.insert(0, str(REPO))

from bench.real import Size  # noqa: E402
from bench.run import _cpu_name, pct  # noqa: E402

QUERY = "how did we get the playwright screenshots working in the browser agent again?"
# the launcher's own two lines (scripts/launcher.py), run by this Python with -P: the package
# comes from PYTHONPATH (the checkout measured), never from the current folder
LAUNCHER = "from prima_memory.main import exit_with, main; exit_with(main())"


def one(cmd: list[str], env: dict, ws: Path, timeout: float) -> dict:
    """One first search: its time, and how it ended."""
    shutil.rmtree(ws / ".prima-memory", ignore_errors=True)
    t = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, cwd=ws, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)  # (a hang is killed with its reader process)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return {"s": round(time.perf_counter() - t, 2), "end": "hung"}
    s = round(time.perf_counter() - t, 2)
    try:
        data = json.loads(out)
    except ValueError:
        data = None
    if p.returncode or not isinstance(data, dict) or not data.get("results"):
        return {"s": s, "end": "failed", "exit": p.returncode,
                "stderr": err.decode("utf-8", "replace")[-300:]}
    keyword = [w for w in data.get("warnings", []) if "semantic search is unavailable" in w]
    return {"s": s, "end": "keywords only" if keyword else "ok",
            **({"warning": keyword[0]} if keyword else {})}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=659)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--out", default="/tmp/prima-memory-real")
    ap.add_argument("--package", default=str(REPO), help="the checkout whose prima_memory runs")
    ap.add_argument("--query", default=QUERY)
    args = ap.parse_args()
    sz = Size(Path(args.out).resolve(), args.sessions)
    package = str(Path(args.package).resolve())
    env = dict(sz.env, PYTHONPATH=package)
    cmd = [sys.executable, "-P", "-c", LAUNCHER, "search", args.query, "--json"]
    commit = subprocess.run(["git", "-C", package, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or None
    runs = []
    for k in range(args.runs):
        runs.append(one(cmd, env, sz.ws, args.timeout))
        r = runs[-1]
        print(f"run {k + 1}/{args.runs}: {r['end']} in {r['s']}s", file=sys.stderr, flush=True)
    shutil.rmtree(sz.ws / ".prima-memory", ignore_errors=True)
    times = [r["s"] for r in runs if r["end"] in ("ok", "keywords only")]
    ends = {e: sum(r["end"] == e for r in runs) for e in ("ok", "keywords only", "failed", "hung")}
    report = {
        "sessions": args.sessions, "mb": sz.r["mb"], "runs": args.runs, "query": args.query,
        "timeout_s": args.timeout, "package": package, "commit": commit, **ends,
        "p50_s": round(pct(times, 50), 2) if times else None,
        "p90_s": round(pct(times, 90), 2) if times else None,
        "max_s": max(times) if times else None,
        "median_s": round(statistics.median(times), 2) if times else None,
        "machine": f"{_cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "every_run": runs,
    }
    print(f"{args.runs} first searches, {args.sessions} sessions ({sz.r['mb']} MB): "
          f"{ends['hung']} hung, {ends['failed']} failed, {ends['keywords only']} by keywords "
          f"only; p50 {report['p50_s']}s, p90 {report['p90_s']}s, max {report['max_s']}s",
          file=sys.stderr)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
