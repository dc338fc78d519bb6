"""The search's own time, this checkout against another, on bench/real.py's history:

    .venv/bin/python bench/search_speed.py --against DIR [--size 1000] [--rounds 5]
        [--out /tmp/prima-memory-real]

DIR: a checkout of the revision to compare with (`git worktree add --detach DIR REV`). The
history and its index (every exchange embedded) are bench/real.py's, made by `bench/real.py
--sizes N --combined-at N` first. Each side runs in its own process, importing only its own
code, one Memory kept open (as the MCP server keeps it), and times `api.search` in process on
real.py's 20 queries and three questions typed as sentences, combined and keyword: the
interpreter's start and the model's load, the same for both, are left out. Rounds alternate the
sides; each query's best of the rounds, then the median over queries. Prints a markdown table.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.real import QUERIES  # noqa: E402

SENTENCES = ["how did we get the playwright screenshots working in the browser agent again?",
             "what did we change in the docker build last week",
             "fix the typescript build error"]
SIDE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from prima_memory import api
mem = api.open_memory(sys.argv[2], lasting=True)
import inspect
# a search only reads (#39); before, `fresh=False` kept it from bringing the index up first
KW = {"fresh": False} if "fresh" in inspect.signature(api.search).parameters else {}
api.search(mem, "warm up", mode="combined", **KW)
out = {}
for mode in ("combined", "keyword"):
    for q in json.loads(sys.argv[3]):
        t = time.perf_counter()
        got = api.search(mem, q, mode=mode, **KW)
        out[mode + " " + q] = (time.perf_counter() - t) * 1000
        assert not got["warnings"], got["warnings"]
print(json.dumps(out))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", required=True)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default="/tmp/prima-memory-real")
    args = ap.parse_args()
    base = Path(args.out) / f"real-{args.size}"
    state = base / "state"
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(base / "claude"), HOME=str(state / "home"),
               CODEX_HOME=str(state / "codex"), PRIMA_VSCODE_USER_DIRS=str(state / "vscode"),
               XDG_DATA_HOME=str(state / "data"), PRIMA_BACKGROUND="0")
    ws = str(base / "code" / "project")
    if not (Path(ws) / ".prima-memory").is_dir():
        sys.exit(f"no index at {ws}: run bench/real.py --sizes {args.size} "
                 f"--combined-at {args.size} first")
    queries = json.dumps(QUERIES + SENTENCES)
    sides = {"this": str(REPO), "against": str(Path(args.against).resolve())}
    best: dict[str, dict[str, float]] = {name: {} for name in sides}
    for _ in range(args.rounds):
        for name, root in sides.items():
            p = subprocess.run([sys.executable, "-c", SIDE, root, ws, queries], env=env,
                               capture_output=True, text=True, timeout=600, check=True)
            for k, ms in json.loads(p.stdout).items():
                best[name][k] = min(ms, best[name].get(k, ms))
    print(f"| ms, median over {len(QUERIES) + len(SENTENCES)} queries of each one's best of "
          f"{args.rounds} | this | against | this / against |\n|---|---|---|---|")
    for mode in ("combined", "keyword"):
        a, b = (statistics.median(v for k, v in best[n].items() if k.startswith(mode))
                for n in sides)
        print(f"| {mode} | {a:.1f} | {b:.1f} | {a / b:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
