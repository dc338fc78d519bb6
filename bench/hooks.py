"""Hook latency, end to end as Claude Code runs them (process start to exit). One command:

    .venv/bin/python bench/hooks.py [--size M] [--runs 20]

On the benchmark history (see bench/run.py), each hook is started exactly as hooks/hooks.json
says (`bash "<plugin root>/hooks/run.sh" hook EVENT`, the hook JSON on stdin) and timed next to
`python -c pass` and `bash -c true` in the same run. Prints JSON.
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

from bench.run import _cpu_name, append_exchange, pct, prepare  # noqa: E402


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
    args = ap.parse_args()
    out, config, ws, pdir = prepare(args.size, args.out)
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(config), HOME=str(out / "home"),
               PRIMA_PYTHON=sys.executable, CLAUDE_PROJECT_DIR=str(ws))
    env.pop("PRIMA_EXPECTED_HOST", None)
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
    try:
        subprocess.run([sys.executable, "-m", "prima_memory", "--workspace", str(ws), "index"],
                       env=env, check=True, capture_output=True)
        base_py = [timed([sys.executable, "-c", "pass"], env)[0] for _ in range(args.runs)]
        base_sh = [timed(["bash", "-c", "true"], env)[0] for _ in range(args.runs)]
        up_to_date, grown, stop = [], [], []
        chars = 0
        for i in range(args.runs):
            ms, so, _ = timed(start_cmd, env, start_json, shell=True)
            up_to_date.append(ms)
            chars = len(so.decode())
        for i in range(args.runs):
            append_exchange(newest, 1000 + i)
            grown.append(timed(start_cmd, env, start_json, shell=True)[0])
        for i in range(args.runs):
            append_exchange(newest, 2000 + i)
            stop.append(timed(stop_cmd, env, stop_json, shell=True)[0])
        first = []
        for _ in range(3):
            shutil.rmtree(ws / ".prima-memory", ignore_errors=True)
            first.append(timed(start_cmd, env, start_json, shell=True)[0])
        # imports on every hook path (a fresh index, then the up-to-date case)
        env_imp = dict(env, PYTHONPROFILEIMPORTTIME="1")
        heavy = set()
        for cmd, payload in ((start_cmd, start_json), (stop_cmd, stop_json),
                             (hook_command("pre-compact"), stop_json)):
            _, _, err = timed(cmd, env_imp, payload, shell=True)
            heavy |= {ln.split("|")[-1].strip() for ln in err.decode().splitlines()
                      if "import time:" in ln and any(h in ln for h in ("torch", "sentence_transformers",
                                                                         "transformers", "numpy"))}
    finally:
        newest.write_bytes(original)
    summary = lambda xs: {"p50_ms": round(pct(xs, 50), 1), "p95_ms": round(pct(xs, 95), 1)}  # noqa: E731
    report.update({
        "python_c_pass": summary(base_py),
        "bash_c_true": summary(base_sh),
        "session_start_up_to_date": summary(up_to_date),
        "session_start_after_one_exchange": summary(grown),
        "stop_after_one_exchange": summary(stop),
        "first_session_start_never_indexed_ms": [round(x) for x in first],
        "briefing_chars": chars,
        "heavy_modules_imported": sorted(heavy),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "cpu": _cpu_name()},
    })
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
