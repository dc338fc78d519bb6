"""This checkout against an earlier revision, on what must not get slower. One command:

    .venv/bin/python bench/versus.py --base e34880c [--size M] [--runs 15]

Checks the base revision out into a temporary git worktree and gives each version its own copy
of the benchmark history (bench/run.py's, generated once per folder) and its own index. Then, in
one run and interleaved (base, this, base, this ...) so the machine's noise falls on both alike:
- each hook as Claude Code runs it (`bash hooks/run.sh hook EVENT`, the hook JSON on stdin):
  SessionStart with the index current, SessionStart and Stop after one appended exchange (with
  PRIMA_BACKGROUND=0: the hook's own cost), and Stop as users run it (starting the background
  embedder, whose work then gets a pause before the next measurement);
- `prima-memory search --mode keyword`, a cold process, on fixed queries.
Each version imports only its own code (PYTHONPATH). Prints a markdown table with the ratios.
"""
from __future__ import annotations

import argparse
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
