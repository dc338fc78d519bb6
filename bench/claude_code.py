"""What the plugin costs a `claude -p` session, measured inside the real Claude Code:

    .venv/bin/python bench/claude_code.py [--size P] [--runs 15] [--versions 2.1.197,2.1.332]

Each Claude Code version from npm (the end-to-end test's pinned one and the newest) runs
`claude -p` offline against the local mock of the Messages API (tests/mock_messages_api.py) in
the workspace of a benchmark history (P: 150 sessions), the plugin installed by install.sh. In
each round, interleaved so the machine's noise hits all alike:
- enabled: the plugin as installed (hooks and MCP server);
- hooks only: the plugin with its .mcp.json taken out of the live plugin folder;
- disabled: the plugin installed but disabled;
- bare HOME: a Claude Code folder with nothing in it (no plugin, no settings, no history).
For each: the whole run's wall time, and the CPU of `claude` and every process it waited for
(hooks, MCP servers: RUSAGE_CHILDREN), with PRIMA_BACKGROUND=0 so no detached embedder is
left running (it is work for the new exchanges, done once, not a start-up cost). Every run keeps
its transcript until it ends, as a user's would, so its Stop indexes it; then it is deleted, so
the history stays at its size (the index made anew before each version, in full).
Also, from Claude Code's debug log: when the MCP server connected, the SessionStart hook's time,
and whether the first request named every tool. Prints JSON.

    .venv/bin/python bench/claude_code.py --edits 20 [--runs 10]

What a session that changes 20 files pays for the hooks at the point of action (issue #42): the
mock has Claude write 20 files in one turn, half of them files the history changed (each then
gets its note) and half new ones (the shell's prefilter alone), and the rounds compare the plugin
as installed ("enabled") with the plugin whose hooks.json lacks PreToolUse and
PostToolUseFailure ("without_point_of_action"), interleaved; each run's files are deleted after
it. Besides wall and CPU time, the PreToolUse hook's runs as Claude Code states their time
(2.1.332's debug log).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

import claude_code_harness as h  # noqa: E402
from bench.run import _cpu_name, prepare  # noqa: E402
from mock_messages_api import MockApi  # noqa: E402

PLUGIN = "prima-memory@prima-memory"
MCP_TOOL = "mcp__plugin_prima-memory_prima-memory__"
SERVER = "plugin:prima-memory:prima-memory"
CONFIGS = ("enabled", "hooks_only", "disabled", "bare_home")
# with --edits: the plugin; without the two hooks; and with a PreToolUse hook that runs `true`
# (Claude Code's own cost of a hook, which its stated times include)
EDIT_CONFIGS = ("enabled", "without_point_of_action", "pre_tool_use_true")
POINT_OF_ACTION = ("PreToolUse", "PostToolUseFailure")  # the hooks --edits takes out
TOOLS = 8  # the MCP server's tools (tests/test_mcp.py's TOOLS)


def summary(xs: list[float]) -> dict:
    xs = sorted(xs)
    return {"p50": round(statistics.median(xs)), "min": round(xs[0]), "max": round(xs[-1]),
            "n": len(xs)}


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def fresh_index(config: Path, ws: Path) -> None:
    """The workspace's index made anew from its history, whole: no SessionStart of a measured run
    indexes more than the runs before it added."""
    shutil.rmtree(ws / ".prima-memory", ignore_errors=True)
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(config), PRIMA_BACKGROUND="0")
    h.run([sys.executable, "-m", "prima_memory", "--workspace", str(ws), "index"], env=env,
          timeout=900)


def changed_paths(config: Path, ws: Path, n: int) -> list[str]:
    """`n` workspace-relative paths the history changed (files with history: each edit of one
    gets its note)."""
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(config), PRIMA_BACKGROUND="0")
    p = h.run([sys.executable, "-m", "prima_memory", "--workspace", str(ws), "files", "--json",
               "--limit", "200"], env=env, timeout=300)
    got = json.loads(p.stdout)
    return list(dict.fromkeys(f["relative"] for x in got["sessions"] for f in x["files"]
                              if not f["relative"].startswith("..")))[:n]


def bench_version(version: str, config: Path, ws: Path, pdir: Path, root: Path,
                  runs: int, edits: int = 0) -> dict:
    claude = h.install_claude(root / f"npm-{version}", version)
    home = root / "home"  # one for both versions: the marketplace is registered at one path
    bare = root / "bare"
    debug = root / f"debug-{version}"
    for d in (home, debug):
        d.mkdir(parents=True, exist_ok=True)
    with MockApi(lifetime=3600) as api:
        env = h.claude_env(dict(os.environ), claude, api.url, home)
        env["CLAUDE_CONFIG_DIR"] = str(config)  # the benchmark history's Claude folder
        env.pop("PYTHONPATH", None)
        settings = config / "settings.json"
        if not settings.exists():  # Claude Code deletes transcripts older than this at start
            settings.write_text(json.dumps({"cleanupPeriodDays": 100000}))
        install_env = {k: v for k, v in env.items() if not k.endswith("_PROXY")}
        p = h.run(["bash", str(REPO / "install.sh"), "--no-run"], env=install_env, cwd=str(ws),
                  timeout=900)
        if p.returncode != 0:
            raise SystemExit(p.stdout + p.stderr)
        plain = json.loads(settings.read_text())
        mcp_json = home / ".local" / "share" / "prima-memory" / "plugin" / ".mcp.json"
        aside = mcp_json.with_name(".mcp.json.aside")

        history = set(os.listdir(pdir))
        hooks_json = mcp_json.parent / "hooks" / "hooks.json"
        full_hooks = hooks_json.read_text()
        without = json.loads(full_hooks)
        for event in POINT_OF_ACTION:
            without["hooks"].pop(event, None)
        noop = json.loads(full_hooks)
        for entry in noop["hooks"]["PreToolUse"]:
            for hook in entry["hooks"]:
                hook["command"] = "true"
        old = changed_paths(config, ws, edits // 2) if edits else []

        def run(cfg: str, i: int) -> dict:
            # the files with history, then new ones, named anew each run: a run's new files get
            # history from the runs before it (their sessions stay indexed, archived)
            targets = old + [f"src/new_{cfg}_{i}_{k}.py" for k in range(edits - len(old))] \
                if edits else []
            if edits:
                api.rule(f"write the benchmark files {cfg} {i}", [
                    {"tool": "Write", "input": {"file_path": str(ws / t), "content": f"# {k}\n"}}
                    for k, t in enumerate(targets)])
            log = debug / f"{cfg}-{i}.txt"
            log.unlink(missing_ok=True)  # Claude Code appends to a debug file
            e = env
            if cfg == "bare_home":
                shutil.rmtree(bare, ignore_errors=True)
                bare.mkdir()
                e = dict(env, HOME=str(bare), CLAUDE_CONFIG_DIR=str(bare / ".claude"),
                         XDG_CONFIG_HOME=str(bare / ".config"),
                         XDG_DATA_HOME=str(bare / ".local" / "share"))
            else:
                s = json.loads(json.dumps(plain))
                s.setdefault("enabledPlugins", {})[PLUGIN] = cfg != "disabled"
                settings.write_text(json.dumps(s, indent=2))
                if cfg == "hooks_only":
                    mcp_json.rename(aside)
                if cfg == "without_point_of_action":
                    hooks_json.write_text(json.dumps(without, indent=2))
                if cfg == "pre_tool_use_true":
                    hooks_json.write_text(json.dumps(noop, indent=2))
            api.clear()
            cpu = children_cpu()
            t = time.perf_counter()
            prompt = f"benchmark turn: write the benchmark files {cfg} {i}" if edits \
                else f"benchmark turn {cfg} {i}"
            try:
                q = h.run([str(claude), "-p", prompt, "--debug-file", str(log),
                           *(["--permission-mode", "acceptEdits"] if edits else [])],
                          env=e, cwd=str(ws), timeout=300)
            finally:
                if aside.exists():
                    aside.rename(mcp_json)
                hooks_json.write_text(full_hooks)
                # the history stays the size it was: this run's transcript goes (the index
                # keeps its session, archived, as it does for a transcript Claude Code deletes)
                for name in set(os.listdir(pdir)) - history:
                    shutil.rmtree(pdir / name) if (pdir / name).is_dir() else (pdir / name).unlink()
            wall = (time.perf_counter() - t) * 1000
            if q.returncode != 0:
                raise SystemExit(f"claude -p ({cfg}): {q.stdout}{q.stderr}")
            first = api.requests[0] if api.requests else None
            names = (first.tool_names() + first.deferred_tool_names()) if first else []
            connect = h.mcp_connect(log, SERVER)
            writes = sum(r.ends_with_tool_result for r in api.requests)
            if edits and writes < len(targets):
                raise SystemExit(f"{cfg}: {writes} of {len(targets)} writes ran")
            for target in targets:
                (ws / target).unlink(missing_ok=True)
            return {"wall": wall, "cpu": (children_cpu() - cpu) * 1000,
                    "hook": h.session_start_hook_ms(log),
                    "pre_tool_use": h.hook_times_ms(log, "PreToolUse"),
                    "notes": sum(r.text.count("Earlier sessions on ") for r in api.requests[-1:]),
                    "connect": connect[0] if connect else None,
                    "tools": len({n for n in names if n.startswith(MCP_TOOL)})}

        run("enabled", -1)  # a first run: Claude Code's own first-run work is not measured
        configs = EDIT_CONFIGS if edits else CONFIGS
        res: dict[str, list[dict]] = {c: [] for c in configs}
        for i in range(runs):
            for cfg in configs:
                res[cfg].append(run(cfg, i))
        settings.write_text(json.dumps(plain, indent=2))
    out: dict = {"claude_code": version}
    if edits:
        for cfg, rows in res.items():
            out[cfg] = {"wall_ms": summary([r["wall"] for r in rows]),
                        "cpu_ms": summary([r["cpu"] for r in rows])}
        half = len(old)  # (each run's PreToolUse times: its files with history first)
        stated = {"with_history": [x for r in res["enabled"] for x in r["pre_tool_use"][:half]],
                  "new_files": [x for r in res["enabled"] for x in r["pre_tool_use"][half:]],
                  "true": [x for r in res["pre_tool_use_true"] for x in r["pre_tool_use"]]}
        out["edits"] = {"files": edits, "with_history": half,
                        "notes_in_last_request": summary([r["notes"] for r in res["enabled"]]),
                        "pre_tool_use_ms_as_claude_code_states": {
                            k: summary(v) if v else None for k, v in stated.items()}}
        out["point_of_action_adds"] = {k: {
            "paired_p50": round(statistics.median(
                a[k] - b[k] for a, b in zip(res["enabled"], res["without_point_of_action"]))),
            "p50_difference": out["enabled"][f"{k}_ms"]["p50"]
            - out["without_point_of_action"][f"{k}_ms"]["p50"]} for k in ("wall", "cpu")}
        out["a_true_hook_adds"] = {k: round(statistics.median(
            a[k] - b[k] for a, b in zip(res["pre_tool_use_true"], res["without_point_of_action"])))
            for k in ("wall", "cpu")}
        return out
    for cfg, rows in res.items():
        out[cfg] = {"wall_ms": summary([r["wall"] for r in rows]),
                    "cpu_ms": summary([r["cpu"] for r in rows])}
    en = res["enabled"]
    out["enabled"]["session_start_hook_ms"] = summary([r["hook"] for r in en if r["hook"]])
    out["enabled"]["mcp_connected_ms"] = summary([r["connect"] for r in en if r["connect"]])
    out["enabled"]["first_request_named_every_tool"] = \
        f"{sum(r['tools'] == TOOLS for r in en)}/{runs}"
    # what the plugin adds: the median of each round's difference (the rounds are interleaved,
    # so a noisy moment hits both sides of a difference), and the difference of the medians
    for cfg in ("enabled", "hooks_only"):
        out[f"{cfg}_adds"] = {k: {
            "paired_p50": round(statistics.median(
                a[k] - b[k] for a, b in zip(res[cfg], res["disabled"]))),
            "p50_difference": out[cfg][f"{k}_ms"]["p50"] - out["disabled"][f"{k}_ms"]["p50"]}
            for k in ("wall", "cpu")}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="P")
    # not under bench/out: Claude Code started in a folder of this checkout reads the repository's
    # own .mcp.json as a project server (one more failing server in every run)
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "prima-memory-bench"))
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--versions", default=f"{h.VERSION},2.1.332")
    ap.add_argument("--edits", type=int, default=0, help="a session writing this many files: "
                    "the plugin against it without the hooks at the point of action")
    args = ap.parse_args()
    _out, config, ws, pdir = prepare(args.size, args.out)
    root = Path(args.out) / "claude-code"
    report = {
        "machine": {"cpu": _cpu_name(), "cores": os.cpu_count(),
                    "python": platform.python_version()},
        "command": "bench/claude_code.py " + " ".join(sys.argv[1:]),
        "history": args.size,
        "versions": [],
    }
    for v in args.versions.split(","):
        fresh_index(config, ws)
        report["versions"].append(bench_version(v, config, ws, pdir, root, args.runs,
                                                args.edits))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
