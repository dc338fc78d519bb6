"""This checkout against an earlier revision, on what must not get slower. One command:

    .venv/bin/python bench/versus.py --base e34880c [--size M] [--runs 15]

Checks the base revision out into a temporary git worktree and gives each version its own copy
of the benchmark history (bench/run.py's, generated once per folder) and its own index. Then, in
one run and interleaved (base, this, base, this ...) so the machine's noise falls on both alike:
- each hook as Claude Code runs it (`bash hooks/run.sh hook EVENT`, the hook JSON on stdin):
  SessionStart with the index current, SessionStart and Stop after one appended exchange (with
  PRIMA_BACKGROUND=0: the hook's own cost), and Stop as users run it (starting the background
  embedder, whose work then gets a pause before the next measurement);
- `prima-memory search --mode keyword`, a cold process, on fixed queries;
- MCP answers from each version's warm server over stdio (the `mcp` SDK's client): after the
  hook rounds, both servers up at once and asked in turn, `search_sessions` by keyword and
  combined and `get_file_history` of the path most changed.
Each version imports only its own code (PYTHONPATH). Prints a markdown table with the ratios.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.run import _cpu_name, append_exchange  # noqa: E402

# run as a script, this file's folder comes first on the path, and its name hides the SDK's
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]

QUERIES = ["database migration", "timeout", "zqmarker503", "retry backoff", "websocket"]


class Version:
    def __init__(self, name: str, root: Path, out: Path):
        self.name, self.root = name, root
        # generate with this checkout's generator (deterministic: the same files for both)
        subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                        "from bench.run import prepare; prepare(sys.argv[2], sys.argv[3])",
                        str(REPO), SIZE, str(out)], check=True)
        from prima_memory.sources.claude_code import encode_project_dir
        self.ws = out / SIZE / "work space" / "bench project"
        self.pdir = out / SIZE / "claude" / "projects" / encode_project_dir(str(self.ws))
        self.env = dict(os.environ, CLAUDE_CONFIG_DIR=str(out / SIZE / "claude"),
                        HOME=str(out / "home"), PRIMA_PYTHON=sys.executable,
                        CLAUDE_PROJECT_DIR=str(self.ws), PYTHONPATH=str(root),
                        PRIMA_BACKGROUND="0")  # what a hook costs, not what it starts
        self.env.pop("PRIMA_EXPECTED_HOST", None)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "prima_memory")],
                       check=True, stdout=subprocess.DEVNULL)
        self.cli(["index"])
        # a build format this version cannot use (the other's): its own ONNX build, made once
        built = subprocess.run([sys.executable, "-m", "prima_memory.embed_build", "--check-only"],
                               env=self.env, capture_output=True, cwd=str(self.root))
        if built.returncode:
            self.env["PRIMA_ONNX_DIR"] = str(out / "onnx")
            subprocess.run([sys.executable, "-m", "prima_memory.embed_build"], env=self.env,
                           check=True, capture_output=True, cwd=str(self.root))
        # embedded (and linked) beforehand, as a user's history is: the background embedder a
        # Stop starts then has only the new exchange, not the whole history, to work through
        subprocess.run([sys.executable, "-m", "prima_memory", "--workspace", str(self.ws),
                        "embed"], env=self.env, capture_output=True, cwd=str(self.root))
        newest = max(self.pdir.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
        self.newest, self.original = newest, newest.read_bytes()
        self.start = json.dumps({"session_id": "bench-new-session", "cwd": str(self.ws),
                                 "source": "startup", "hook_event_name": "SessionStart",
                                 "transcript_path": str(self.pdir / "bench-new.jsonl")}).encode()
        self.stop = json.dumps({"session_id": newest.stem, "cwd": str(self.ws),
                                "hook_event_name": "Stop", "transcript_path": str(newest),
                                "stop_hook_active": False,
                                "last_assistant_message": "benchmark appended answer"}).encode()

    def cli(self, args) -> float:
        t = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "prima_memory", "--workspace", str(self.ws),
                            *args], env=self.env, capture_output=True, cwd=str(self.root))
        if p.returncode:
            raise SystemExit(f"{self.name}: {args} exited {p.returncode}: {p.stderr[-400:]}")
        return (time.perf_counter() - t) * 1000

    def hook(self, event: str, payload: bytes, **env) -> float:
        cmd = f'bash "{self.root}/hooks/run.sh" hook {event}'
        t = time.perf_counter()
        p = subprocess.run(cmd, shell=True, input=payload, env=dict(self.env, **env),
                           capture_output=True)
        if p.returncode:
            raise SystemExit(f"{self.name}: hook {event} exited {p.returncode}")
        return (time.perf_counter() - t) * 1000


SIZE = "M"
MCP_WAIT = 300  # seconds for any one answer: a hung server fails the run instead of stalling it


def changed_most(v: Version) -> str:
    """The workspace-relative path with the most changes in the history."""
    got = json.loads(subprocess.run(
        [sys.executable, "-m", "prima_memory", "--workspace", str(v.ws), "files", "--json"],
        env=v.env, capture_output=True, check=True, cwd=str(v.root)).stdout)
    counts = collections.Counter(f["relative"] for s in got["sessions"] for f in s["files"])
    return counts.most_common(1)[0][0]


def mcp_rounds(versions: list[Version], runs: int) -> dict[str, dict[str, list[float]]]:
    """Each version's warm MCP server, both up at once, asked in turn (base, this, base...)."""
    import anyio  # (the SDK: only this part of the run needs it)
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    path = changed_most(versions[0])
    asks = {"MCP search_sessions, keyword": lambda i: ("search_sessions", {
                "query": QUERIES[i % len(QUERIES)], "mode": "keyword", "limit": 10}),
            "MCP search_sessions, combined": lambda i: ("search_sessions", {
                "query": QUERIES[i % len(QUERIES)], "mode": "combined", "limit": 10}),
            "MCP get_file_history": lambda i: ("get_file_history", {"path": path})}
    rows: dict[str, dict[str, list[float]]] = {k: {v.name: [] for v in versions} for k in asks}

    async def ask(s, v, what, i, keep):
        tool, args = asks[what](i)
        t = time.perf_counter()
        with anyio.fail_after(MCP_WAIT):
            r = await s.call_tool(tool, args)
        if r.is_error:
            raise SystemExit(f"{v.name}: {tool} {args} answered an error: {r.content}")
        if keep:
            rows[what][v.name].append((time.perf_counter() - t) * 1000)

    async def run() -> None:
        async with contextlib.AsyncExitStack() as stack:
            sessions = []
            for v in versions:
                p = StdioServerParameters(command=sys.executable, cwd=str(v.root), env=v.env,
                                          args=["-m", "prima_memory", "--workspace", str(v.ws),
                                                "mcp"])
                r, w = await stack.enter_async_context(stdio_client(p))
                s = await stack.enter_async_context(ClientSession(r, w))
                with anyio.fail_after(MCP_WAIT):
                    await s.initialize()
                sessions.append(s)
            for i in range(-len(QUERIES), runs):  # the first round of each query warms up
                for what in asks:
                    for v, s in zip(versions, sessions):
                        await ask(s, v, what, i, keep=i >= 0)

    anyio.run(run)
    return rows


def main() -> None:
    global SIZE
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True, help="the git revision to compare with")
    ap.add_argument("--size", default="M")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "versus"))
    args = ap.parse_args()
    SIZE = args.size
    out = Path(args.out)
    tree = Path(tempfile.mkdtemp(prefix="prima-base-"))
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-f", "--detach", str(tree),
                    args.base], check=True, capture_output=True)
    try:
        versions = [Version("base", tree, out / "base"), Version("this", REPO, out / "this")]
        rows = {k: {v.name: [] for v in versions} for k in
                ("SessionStart, index current", "SessionStart after one exchange",
                 "Stop after one exchange", "Stop after one exchange, as users run it",
                 "keyword search (CLI)")}
        for i in range(args.runs):
            for v in versions:
                rows["SessionStart, index current"][v.name].append(v.hook("session-start", v.start))
                append_exchange(v.newest, 1000 + i)
                rows["SessionStart after one exchange"][v.name].append(
                    v.hook("session-start", v.start))
                append_exchange(v.newest, 2000 + i)
                rows["Stop after one exchange"][v.name].append(v.hook("stop", v.stop))
                rows["keyword search (CLI)"][v.name].append(
                    v.cli(["search", QUERIES[i % len(QUERIES)], "--mode", "keyword", "--json"]))
                # with the background embedder it may start (this version): its work is not the
                # hook's, so it is given time to finish before anything else is timed
                append_exchange(v.newest, 3000 + i)
                rows["Stop after one exchange, as users run it"][v.name].append(
                    v.hook("stop", v.stop, PRIMA_BACKGROUND="1"))
                time.sleep(3)
        for v in versions:
            v.newest.write_bytes(v.original)
        rows.update(mcp_rounds(versions, args.runs))
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                       capture_output=True)
        shutil.rmtree(tree, ignore_errors=True)
    med = statistics.median
    print(f"# {args.base} against this checkout\n\nMachine: {_cpu_name()}, {os.cpu_count()} cores; "
          f"history {SIZE}; {args.runs} interleaved runs each. Command: `.venv/bin/python "
          f"bench/versus.py --base {args.base} --size {SIZE} --runs {args.runs}`\n")
    print(f"| p50 | {args.base} | this | this / base |\n|---|---|---|---|")
    for what, by in rows.items():
        b, t = med(by["base"]), med(by["this"])
        print(f"| {what} | {b:.0f} ms | {t:.0f} ms | {t / b:.2f} |")


if __name__ == "__main__":
    main()
