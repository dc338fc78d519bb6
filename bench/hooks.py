"""Hook latency, end to end as Claude Code runs them (process start to exit). One command:

    .venv/bin/python bench/hooks.py [--size M] [--runs 20] [--with-sources]

On the benchmark history (see bench/run.py), each hook is started exactly as hooks/hooks.json
says (`bash "<plugin root>/hooks/run.sh" hook EVENT`, the hook JSON on stdin) and timed next to
`python -c pass` and `bash -c true` in the same run. Prints JSON.

--with-sources: the same hooks in turns on two indexes, the history alone and the history with
the other sources (bench/run.py's Codex and Copilot Chat sessions, indexed beforehand by
`prima-memory index`: hooks never read them), with PRIMA_BACKGROUND=0 on both (a Stop's
background embedder would hold an index that is renamed away next): the hooks' own cost.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.run import Indexes, _cpu_name, append_exchange, pct, prepare, prepare_sources, source_env  # noqa: E402


def hook_command(event: str) -> str:
    hooks = json.loads((REPO / "hooks" / "hooks.json").read_text())["hooks"]
    name = {"session-start": "SessionStart", "stop": "Stop", "pre-compact": "PreCompact"}[event]
    cmd = hooks[name][0]["hooks"][0]["command"]
    return cmd.replace("${CLAUDE_PLUGIN_ROOT}", str(REPO))


def timed(cmd, env, stdin: bytes = b"", shell: bool = False) -> tuple[float, bytes, bytes]:
    t = time.perf_counter()
    p = subprocess.run(cmd, input=stdin, env=env, capture_output=True, shell=shell)
    ms = (time.perf_counter() - t) * 1000
    if p.returncode != 0:
        raise SystemExit(f"{cmd} exited {p.returncode}: {p.stderr.decode()[-500:]}")
    return ms, p.stdout, p.stderr


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="M")
    ap.add_argument("--out", default=str(REPO / "bench" / "out"))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--with-sources", action="store_true",
                    help="also on an index holding Codex and Copilot Chat sessions, in turns")
    args = ap.parse_args()
    out, config, ws, pdir = prepare(args.size, args.out)
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(config), HOME=str(out / "home"),
               PRIMA_PYTHON=sys.executable, CLAUDE_PROJECT_DIR=str(ws))
    env.pop("PRIMA_EXPECTED_HOST", None)
    sides = {"claude": dict(env, **source_env(out, False))}
    if args.with_sources:
        prepare_sources(args.size, out, ws)
        sides["sources"] = dict(env, **source_env(out, True))
        for e in sides.values():
            e["PRIMA_BACKGROUND"] = "0"
    env = sides["claude"]
    idx = Indexes(ws, out / "indexes")

    def turns(i):  # every side once, the order alternating so neither always goes first
        return list(sides.items())[::1 if i % 2 == 0 else -1]
    sessions = sorted(pdir.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    newest = sessions[-1]
    sid = newest.stem
    start_json = json.dumps({"session_id": "bench-new-session", "cwd": str(ws), "source": "startup",
                             "hook_event_name": "SessionStart",
                             "transcript_path": str(pdir / "bench-new-session.jsonl")}).encode()
    stop_json = json.dumps({"session_id": sid, "cwd": str(ws), "hook_event_name": "Stop",
                            "transcript_path": str(newest), "stop_hook_active": False,
                            "last_assistant_message": "benchmark appended answer"}).encode()
    original = newest.read_bytes()
    start_cmd, stop_cmd = hook_command("session-start"), hook_command("stop")
    report: dict = {"size": args.size, "runs": args.runs}
    up_to_date, grown, stop, first = ({s: [] for s in sides} for _ in range(4))
    chars: dict = {}
    try:
        for side, e in sides.items():
            idx.use(side)
            subprocess.run([sys.executable, "-m", "prima_memory", "--workspace", str(ws), "index"],
                           env=e, check=True, capture_output=True)
        base_py = [timed([sys.executable, "-c", "pass"], env)[0] for _ in range(args.runs)]
        base_sh = [timed(["bash", "-c", "true"], env)[0] for _ in range(args.runs)]
        for i in range(args.runs):
            for side, e in turns(i):
                idx.use(side)
                ms, so, _ = timed(start_cmd, e, start_json, shell=True)
                up_to_date[side].append(ms)
                chars[side] = len(so.decode())
        for i in range(args.runs):
            append_exchange(newest, 1000 + i)  # each side's index then takes the same new lines
            for side, e in turns(i):
                idx.use(side)
                grown[side].append(timed(start_cmd, e, start_json, shell=True)[0])
        for i in range(args.runs):
            append_exchange(newest, 2000 + i)
            for side, e in turns(i):
                idx.use(side)
                stop[side].append(timed(stop_cmd, e, stop_json, shell=True)[0])
        for i in range(3):
            for side, e in turns(i):
                idx.use(side)
                shutil.rmtree(ws / ".prima-memory", ignore_errors=True)
                first[side].append(timed(start_cmd, e, start_json, shell=True)[0])
        # imports on every hook path (a fresh index, then the up-to-date case)
        heavy = set()
        for side, e in sides.items():
            idx.use(side)
            env_imp = dict(e, PYTHONPROFILEIMPORTTIME="1")
            for cmd, payload in ((start_cmd, start_json), (stop_cmd, stop_json),
                                 (hook_command("pre-compact"), stop_json)):
                _, _, err = timed(cmd, env_imp, payload, shell=True)
                heavy |= {ln.split("|")[-1].strip() for ln in err.decode().splitlines()
                          if "import time:" in ln and any(h in ln for h in ("torch", "sentence_transformers",
                                                                             "transformers", "numpy"))}
    finally:
        newest.write_bytes(original)
        idx.use("claude")
    summary = lambda xs: {"p50_ms": round(pct(xs, 50), 1), "p95_ms": round(pct(xs, 95), 1)}  # noqa: E731

    def rows(s):
        return {"session_start_up_to_date": summary(up_to_date[s]),
                "session_start_after_one_exchange": summary(grown[s]),
                "stop_after_one_exchange": summary(stop[s]),
                "first_session_start_never_indexed_ms": [round(x) for x in first[s]],
                "briefing_chars": chars[s]}
    report.update({"python_c_pass": summary(base_py), "bash_c_true": summary(base_sh), **rows("claude")})
    if "sources" in sides:
        report["with_sources"] = rows("sources")
        report["with_over_without_p50"] = {
            k: round(pct(by["sources"], 50) / pct(by["claude"], 50), 3)
            for k, by in (("session_start_up_to_date", up_to_date), ("session_start_after_one_exchange", grown),
                          ("stop_after_one_exchange", stop), ("first_session_start_never_indexed", first))}
    report.update({
        "heavy_modules_imported": sorted(heavy),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "cpu": _cpu_name()},
    })
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
