"""What the plugin adds to a Claude Code session start, measured inside the real Claude Code:

    .venv/bin/python bench/claude_code.py [--size M] [--runs 10]

The CLI from npm (the version the end-to-end test pins) runs `claude -p` offline against the
local mock of the Messages API (tests/mock_messages_api.py) on the benchmark history. In one run,
interleaved so the machine's noise hits all alike:
- the whole `claude -p` run with the plugin enabled and disabled;
- the SessionStart hook as Claude Code timed it (its debug log, from hook start to its output);
- a SessionStart hook that only runs `true`, the same way: what Claude Code spends on any hook;
- our hook started alone, as bench/hooks.py does, with the same input.
Each run with the plugin adds one small session to the workspace, so each SessionStart first
indexes what Claude Code appended to the one before after its Stop; the runs without the plugin
write no transcript (--no-session-persistence), so they add nothing to the history.
Prints JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

import claude_code_harness as h  # noqa: E402
from bench.run import _cpu_name, prepare  # noqa: E402
from mock_messages_api import MockApi  # noqa: E402

PLUGIN = "prima-memory@prima-memory"
QUIET = "--no-session-persistence"


def summary(xs: list[float]) -> dict:
    xs = sorted(xs)
    return {"p50": round(statistics.median(xs)), "min": round(xs[0]), "max": round(xs[-1]),
            "n": len(xs)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="M")
    ap.add_argument("--out", default=str(REPO / "bench" / "out"))
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    _out, config, ws, _pdir = prepare(args.size, args.out)
    root = Path(args.out) / "claude-code"
    claude = h.install_claude(root / "npm")  # a few seconds when npm's cache has it
    home = root / "home"
    debug = root / "debug"
    for d in (home, debug):
        d.mkdir(parents=True, exist_ok=True)
    with MockApi(lifetime=3600) as api:
        env = h.claude_env(dict(os.environ), claude, api.url, home)
        env["CLAUDE_CONFIG_DIR"] = str(config)  # the benchmark history's Claude folder
        env.pop("PRIMA_EXPECTED_HOST", None)
        settings = config / "settings.json"
        if not settings.exists():  # Claude Code deletes transcripts older than this at start
            settings.write_text(json.dumps({"cleanupPeriodDays": 100000}))
        install_env = {k: v for k, v in env.items() if not k.endswith("_PROXY")}
        p = h.run(["bash", str(REPO / "install.sh"), "--no-run"], env=install_env, cwd=str(ws),
                  timeout=900)
        if p.returncode != 0:
            raise SystemExit(p.stdout + p.stderr)
        plain = json.loads(settings.read_text())

        def cc(*a):
            q = h.run([str(claude), *a], env=env, cwd=str(ws), timeout=120)
            if q.returncode != 0:
                raise SystemExit(f"claude {a}: {q.stdout}{q.stderr}")

        def session(tag: str, i: int, *extra) -> tuple[float, float | None]:
            log = debug / f"{tag}-{i}.txt"
            log.unlink(missing_ok=True)  # Claude Code appends to a debug file
            t = time.perf_counter()
            cc("-p", f"benchmark turn {tag} {i}", "--debug-file", str(log), *extra)
            return (time.perf_counter() - t) * 1000, h.session_start_hook_ms(log)

        def set_plugin(on: bool, true_hook: bool = False) -> None:
            s = json.loads(json.dumps(plain))
            s.setdefault("enabledPlugins", {})[PLUGIN] = on
            if true_hook:
                s["hooks"] = {"SessionStart": [{"hooks": [{"type": "command", "command": "true"}]}]}
            settings.write_text(json.dumps(s, indent=2))

        hook_cmd = json.loads((REPO / "hooks" / "hooks.json").read_text())[
            "hooks"]["SessionStart"][0]["hooks"][0]["command"].replace(
            "${CLAUDE_PLUGIN_ROOT}", str(home / ".local" / "share" / "prima-memory" / "plugin"))
        hook_env = dict(env, CLAUDE_PROJECT_DIR=str(ws))

        def hook_alone(i: int) -> float:
            data = json.dumps({"session_id": f"bench-alone-{i}", "cwd": str(ws),
                               "source": "startup", "hook_event_name": "SessionStart"})
            t = time.perf_counter()
            subprocess.run(["bash", "-c", hook_cmd], input=data.encode(), env=hook_env,
                           cwd=str(ws), capture_output=True, timeout=60)
            return (time.perf_counter() - t) * 1000

        set_plugin(True)
        session("warm", 0)  # the first run indexes whatever the history gained since last time
        res = {k: [] for k in ("with_plugin", "without_plugin", "true_hook_run", "hook_inside",
                               "true_hook_inside", "hook_alone")}
        for i in range(args.runs):
            set_plugin(True)
            wall, hook = session("plugin", i)
            res["with_plugin"].append(wall)
            res["hook_inside"].append(hook)
            res["hook_alone"].append(hook_alone(i))
            set_plugin(False)
            res["without_plugin"].append(session("none", i, QUIET)[0])
            set_plugin(False, true_hook=True)
            wall, hook = session("true", i, QUIET)
            res["true_hook_run"].append(wall)
            res["true_hook_inside"].append(hook)
        settings.write_text(json.dumps(plain, indent=2))
    report = {
        "machine": {"cpu": _cpu_name(), "cores": os.cpu_count(), "python": platform.python_version(),
                    "claude_code": h.VERSION},
        "history": args.size,
        "ms": {k: summary([x for x in v if x is not None]) for k, v in res.items()},
    }
    w, wo = report["ms"]["with_plugin"]["p50"], report["ms"]["without_plugin"]["p50"]
    report["plugin_adds_ms_p50"] = w - wo
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
