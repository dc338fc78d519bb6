"""What forgetting costs, and what a forgotten session costs the hooks afterwards, on bench/real.py's
histories of real transcripts:

    .venv/bin/python bench/forget.py [--sizes 1000,10000] [--runs 9] [--out /tmp/prima-memory-real]
        [--base REV]

For each size, in one run (every time is a process's start to its exit, the hook run as Claude
Code runs it: `bash hooks/run.sh hook stop`, its JSON on stdin, PRIMA_BACKGROUND=0):
  - `forget ID --yes` of one session (the index restored from a copy before each round);
  - the Stop hook of a session after one appended exchange, with 0, 1 and 200 sessions forgotten
    (what the tombstones cost every other session);
  - the Stop hook of a forgotten session after one appended exchange (a `forget this`, then more
    turns: what it says is added to its tombstone), twice: the first reads its file whole (its
    rows went with the forget), the next costs what the exchange is, not what the history is:
    its ratio between sizes is the check.
`--base REV`: the same forget and the same plain Stop, by that revision (a git worktree), in the
same rounds, interleaved. Prints JSON on stdout, a markdown table on stderr.
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
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]
sys.path.insert(0, str(REPO))

from bench.real import history  # noqa: E402
from bench.run import _cpu_name, append_exchange  # noqa: E402


class Side:
    """One checkout's code over its own copy of a history's index."""

    def __init__(self, name: str, root: Path, n: int, out: Path):
        self.name, self.root = name, root
        config, self.ws, self.pdir = history(out, n)
        self.env = dict(os.environ, CLAUDE_CONFIG_DIR=str(config), HOME=str(out / "home"),
                        XDG_CONFIG_HOME=str(out / "home" / ".config"), PYTHONPATH=str(root),
                        PRIMA_PYTHON=sys.executable, CLAUDE_PROJECT_DIR=str(self.ws),
                        PRIMA_BACKGROUND="0")
        # each side's modules compiled beforehand: neither pays for compiling in a hook
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "prima_memory")],
                       check=True, stdout=subprocess.DEVNULL)
        self.data = self.ws / ".prima-memory"
        self.kept = out / f"kept-{n}-{name}"
        if not self.kept.is_dir():
            shutil.rmtree(self.data, ignore_errors=True)
            self.cli("index")
            shutil.copytree(self.data, self.kept)
        files = sorted(self.pdir.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
        self.victim, self.plain, self.others = files[len(files) // 2], files[-1], files[:200]
        self.saved = {p: p.read_bytes() for p in (self.victim, self.plain)}

    def restore(self) -> None:
        shutil.rmtree(self.data, ignore_errors=True)
        shutil.copytree(self.kept, self.data)
        for p, raw in self.saved.items():
            p.write_bytes(raw)

    def cli(self, *args: str) -> float:
        t = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "prima_memory", "--workspace", str(self.ws),
                            *args], env=self.env, capture_output=True, cwd=str(self.root))
        if p.returncode:
            raise SystemExit(f"{self.name}: {args} exited {p.returncode}: {p.stderr[-400:]!r}")
        return (time.perf_counter() - t) * 1000

    def stop(self, path: Path, i: int) -> float:
        append_exchange(path, i)
        data = json.dumps({"session_id": path.stem, "cwd": str(self.ws), "hook_event_name": "Stop",
                           "transcript_path": str(path), "stop_hook_active": False}).encode()
        t = time.perf_counter()
        p = subprocess.run(f'bash "{self.root}/hooks/run.sh" hook stop', shell=True, input=data,
                           env=self.env, capture_output=True)
        if p.returncode:
            raise SystemExit(f"{self.name}: stop exited {p.returncode}")
        return (time.perf_counter() - t) * 1000


def measure(sides: list[Side], runs: int) -> dict:
    got: dict[str, dict[str, list[float]]] = {s.name: {} for s in sides}

    def note(side: Side, what: str, ms: float) -> None:
        got[side.name].setdefault(what, []).append(ms)
    for r in range(runs):
        for s in sides:  # (interleaved: the machine's noise falls on both alike)
            s.restore()
            note(s, "stop, none forgotten", s.stop(s.plain, 2 * r))
            note(s, "forget one", s.cli("forget", s.victim.stem, "--yes"))
            note(s, "stop, 1 forgotten", s.stop(s.plain, 2 * r + 1))
            if s.name == "this":
                # (numbers of their own: an exchange appended under the same keys as another
                # session's is a copy of it, and a copy of a forgotten line is deleted)
                note(s, "its first stop after", s.stop(s.victim, 10**6 + 2 * r))  # (read whole)
                note(s, "its next stop", s.stop(s.victim, 10**6 + 2 * r + 1))
                s.cli("forget", *[p.stem for p in s.others], "--yes")
                note(s, "stop, 200 forgotten", s.stop(s.plain, 10_000 + r))
    for s in sides:
        s.restore()
    return {side: {what: round(statistics.median(v), 1) for what, v in d.items()}
            for side, d in got.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "prima-memory-real"))
    ap.add_argument("--base", help="a revision to measure beside this checkout")
    args = ap.parse_args()
    out = Path(args.out)
    base = None
    if args.base:
        base = out / f"base-{args.base}"
        if not base.is_dir():
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(base),
                            args.base], check=True, capture_output=True)
    report: dict = {"machine": f"{os.cpu_count()} cores, {_cpu_name()}", "runs": args.runs,
                    "base": args.base, "sizes": {}}
    for n in map(int, args.sizes.split(",")):
        sides = [Side("this", REPO, n, out)] + ([Side("base", base, n, out)] if base else [])
        report["sizes"][n] = measure(sides, args.runs)
    print(json.dumps(report, indent=2))
    rows = ["| size | side | " + " | ".join(report["sizes"][n]["this"]) + " |" for n in
            list(report["sizes"])[:1]]
    for n, d in report["sizes"].items():
        for side, vals in d.items():
            rows.append(f"| {n} | {side} | " + " | ".join(f"{v:.0f} ms" for v in vals.values())
                        + " |")
    print("\n".join(rows), file=sys.stderr)


if __name__ == "__main__":
    main()
