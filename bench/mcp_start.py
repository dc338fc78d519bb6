"""How fast the MCP server answers its handshake, and how fast it ends with its client:

    .venv/bin/python bench/mcp_start.py [--sizes S,M] [--starts 20]

Claude Code waits for every MCP server to connect before a session's first request, so the
server's start is paid by every session. For each history size (bench/run.py's, index current),
the server is started as the plugin starts it (`bash hooks/run.sh mcp`, the venv's Python), in
the workspace, `--starts` times, interleaved with the references measured in the same run:
- spawn to the `initialize` answer, and to the `tools/list` answer (sent right after
  `notifications/initialized`), p50 and max; the CPU the server used for it (handshake, then
  stdin closed);
- `python -c pass` through the same launcher: what any Python server costs;
- `python -c "import mcp.server.mcpserver"`: what the SDK's import alone costs (the server used
  it until this change).
Then the way out, 5 times each: stdin closed while a combined search embeds 3,000 new exchanges
(the answer would take its 20 s budget), and the parent killed while the server idles. Prints
JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from bench.run import _cpu_name, prepare  # noqa: E402

VENV_PY = REPO / ".venv" / "bin" / "python"
LAUNCHER = ["bash", str(REPO / "hooks" / "run.sh")]
INIT = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "bench", "version": "1"}}}).encode() + b"\n"
LIST = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n' \
       b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n'


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def summary(xs: list[float]) -> dict:
    xs = sorted(xs)
    return {"p50": round(statistics.median(xs), 1), "max": round(xs[-1], 1), "n": len(xs)}


def handshake(env: dict, ws: Path) -> tuple[float, float, float]:
    """(ms to initialize, ms to tools/list, CPU ms of the whole server life)."""
    cpu0 = children_cpu()
    t0 = time.perf_counter()
    p = subprocess.Popen([*LAUNCHER, "mcp"], env=env, cwd=str(ws), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    p.stdin.write(INIT)
    p.stdin.flush()
    p.stdout.readline()
    t1 = time.perf_counter()
    p.stdin.write(LIST)
    p.stdin.flush()
    tools = json.loads(p.stdout.readline())["result"]["tools"]
    t2 = time.perf_counter()
    assert len(tools) == 7, tools
    p.stdin.close()
    p.wait()
    return (t1 - t0) * 1000, (t2 - t0) * 1000, (children_cpu() - cpu0) * 1000


def python_alone(env: dict, code: str) -> tuple[float, float]:
    """(ms, CPU ms) of `python -c code` through the launcher's way of finding Python."""
    cpu0 = children_cpu()
    t0 = time.perf_counter()
    subprocess.run(["bash", "-c", f'exec "$PRIMA_PYTHON" -c "{code}"'], env=env, check=True)
    return (time.perf_counter() - t0) * 1000, (children_cpu() - cpu0) * 1000


def long_workspace(root: Path, env: dict) -> Path:
    """A workspace whose one session has 3,000 exchanges, indexed, none embedded."""
    from conftest import Env
    e = Env(root)
    t = e.transcript("9a9a9a9a-0000-4000-8000-000000000009", start=time.time() - 20 * 86400)
    for i in range(3000):
        t.exchange(f"step {i}: tune the quokka cache for shard {i}",
                   f"Shard {i} now evicts after {i % 7 + 1} minutes; " + "detail " * 40)
    env.update({k: e.env[k] for k in ("HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME",
                                       "PRIMA_VSCODE_USER_DIRS")})
    subprocess.run([str(VENV_PY), "-m", "prima_memory", "index"], env=env, cwd=str(e.ws),
                   check=True, capture_output=True)
    return e.ws


def reset_vectors(ws: Path) -> None:
    import apsw
    db = apsw.Connection(str(ws / ".prima-memory" / "index.db"))
    for table in ("linked", "embedded"):
        db.execute(f"DELETE FROM {table}")
    db.close()


def exit_after_eof_mid_call(env: dict, ws: Path) -> float:
    """ms from stdin closed, in the middle of a search that embeds, to the process gone."""
    reset_vectors(ws)
    p = subprocess.Popen([*LAUNCHER, "mcp"], env=env, cwd=str(ws), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    p.stdin.write(INIT + LIST)
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "search_sessions", "arguments": {"query": "quokka cache"}}}).encode() + b"\n")
    p.stdin.flush()
    p.stdout.readline()
    p.stdout.readline()  # the handshake's two answers
    time.sleep(2.0)  # model loaded, embedding under way
    assert not select.select([p.stdout], [], [], 0)[0], "the search answered already"
    t0 = time.perf_counter()
    p.stdin.close()
    p.wait()
    return (time.perf_counter() - t0) * 1000


def exit_after_parent_dies(env: dict, ws: Path) -> float:
    """ms from the parent SIGKILLed (our end of the server's stdin kept open) to it gone."""
    r, w = os.pipe()
    middle = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys, time\n"
         f"p = subprocess.Popen(sys.argv[1:], stdin={r}, stdout=subprocess.DEVNULL, "
         f"stderr=subprocess.DEVNULL, pass_fds=[{r}])\n"
         "print(p.pid, flush=True)\ntime.sleep(600)\n", *LAUNCHER, "mcp"],
        env=env, cwd=str(ws), pass_fds=[r], stdout=subprocess.PIPE)
    os.close(r)
    pid = int(middle.stdout.readline())
    time.sleep(1.0)
    t0 = time.perf_counter()
    os.kill(middle.pid, signal.SIGKILL)
    middle.wait()
    while True:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except OSError:
            break
        time.sleep(0.005)
    took = (time.perf_counter() - t0) * 1000
    os.close(w)
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="S,M")
    ap.add_argument("--starts", type=int, default=20)
    ap.add_argument("--exits", type=int, default=5)
    ap.add_argument("--out", default=str(REPO / "bench" / "out"))
    args = ap.parse_args()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "PRIMA_"))}
    base.update(PRIMA_PYTHON=str(VENV_PY), PRIMA_BACKGROUND="0")
    report: dict = {"machine": {"cpu": _cpu_name(), "cores": os.cpu_count(),
                                "python": platform.python_version()},
                    "command": "bench/mcp_start.py " + " ".join(sys.argv[1:]), "sizes": {}}
    for size in args.sizes.split(","):
        _out, config, ws, _pdir = prepare(size, args.out)
        env = dict(base, CLAUDE_CONFIG_DIR=str(config), CLAUDE_PROJECT_DIR=str(ws))
        subprocess.run([str(VENV_PY), "-m", "prima_memory", "index"], env=env, cwd=str(ws),
                       check=True, capture_output=True)
        res: dict[str, list[float]] = {k: [] for k in (
            "initialize_ms", "tools_list_ms", "server_cpu_ms", "python_pass_ms",
            "python_pass_cpu_ms", "sdk_import_ms", "sdk_import_cpu_ms")}
        for _ in range(args.starts):
            a, b, c = handshake(env, ws)
            res["initialize_ms"].append(a)
            res["tools_list_ms"].append(b)
            res["server_cpu_ms"].append(c)
            a, c = python_alone(env, "pass")
            res["python_pass_ms"].append(a)
            res["python_pass_cpu_ms"].append(c)
            a, c = python_alone(env, "import mcp.server.mcpserver")
            res["sdk_import_ms"].append(a)
            res["sdk_import_cpu_ms"].append(c)
        report["sizes"][size] = {k: summary(v) for k, v in res.items()}
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(base)
        ws = long_workspace(Path(tmp), env)
        env["CLAUDE_PROJECT_DIR"] = str(ws)
        report["exit_after_stdin_closed_mid_call_ms"] = summary(
            [exit_after_eof_mid_call(env, ws) for _ in range(args.exits)])
        report["exit_after_parent_killed_ms"] = summary(
            [exit_after_parent_dies(env, ws) for _ in range(args.exits)])
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
