"""Semantic search benchmarks (issue: semantic memory). One command:

    .venv/bin/python bench/semantic.py [--size M] [--runs 15] [--skip-embed]

Measures in one run:
- vector search at 10k and 100k exchanges (random unit vectors in a real index): the first
  search of a process (vectors read from SQLite) and later ones (vectors held), p50;
- on the benchmark history (bench/run.py), embedding every exchange with the production
  embedder: time and rate (`--skip-embed` keeps what an earlier run embedded);
- `prima-memory search` end to end, cold process, index and embeddings current: combined and
  keyword, p50 (keyword is the baseline measured in the same run);
- the same combined search right after one new session was indexed by the Stop hook, with the
  background embedder that Stop started running.
Prints a markdown report.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.run import _cpu_name, append_exchange, prepare  # noqa: E402

QUERIES = ["how did we make the cache expire", "retry with backoff when the upload fails",
           "database migration for the orders table", "flaky test in the scheduler",
           "rotate the api tokens", "why was the websocket closing", "speed up the search index",
           "clean up the webhook handlers", "deploy to kubernetes", "fix the timeout"]


def p50(xs):
    return statistics.median(xs)


class _Query:
    """A stand-in embedder for the vector-search timing: the query's vector is given."""
    model, variant = "bench-model", "random"

    def __init__(self, vec):
        self.vec = vec

    def encode(self, texts, batch_size=32):
        return self.vec[None, :]


def vector_search(n: int, runs: int) -> dict:
    import numpy as np
    from prima_memory import semantic
    from prima_memory.storage import Store
    rng = np.random.default_rng(7)
    key = semantic.key_of(_Query)
    with tempfile.TemporaryDirectory() as d:
        st = Store(os.path.join(d, "index.db"))
        per = 50  # exchanges per session
        with st.write():
            for s in range(n // per):
                row = st.session_for("claude-code", f"s{s}", "[transcript]")
                ids = list(st.new_message_ids(row.id, per))
                st.add_messages([(i, row.id, f"k{i}", "assistant", float(i), 0, None, "x")
                                 for i in ids])
                vecs = rng.normal(size=(per, 384)).astype(np.float32)
                vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
                rows = [(i.to_bytes(8, "big"), [v.tobytes()]) for i, v in zip(ids, vecs)]
                st.add_vectors(key, "random", rows)
                st.link_exchanges(key, [(i, h) for i, (h, _v) in zip(ids, rows)])
        qs = rng.normal(size=(runs + 1, 384)).astype(np.float32)
        qs /= np.linalg.norm(qs, axis=1, keepdims=True)
        semantic._LOADED.clear()
        t = time.perf_counter()
        semantic.search(st, _Query(qs[0]), "q", limit=10, floor=0.0)
        first = (time.perf_counter() - t) * 1000
        warm = []
        for q in qs[1:]:
            t = time.perf_counter()
            got = semantic.search(st, _Query(q), "q", limit=10, floor=0.0)
            warm.append((time.perf_counter() - t) * 1000)
        assert len(got) == 10
        st.close()
    return {"exchanges": n, "first_ms": round(first, 1), "warm_p50_ms": round(p50(warm), 2)}


def cli(env, ws, *args) -> tuple[float, dict]:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "prima_memory", "--workspace", str(ws), *args,
                        "--json"], env=env, capture_output=True, text=True, timeout=600)
    ms = (time.perf_counter() - t) * 1000
    if p.returncode != 0:
        raise SystemExit(f"{args} exited {p.returncode}: {p.stderr[-800:]}")
    return ms, json.loads(p.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="M")
    ap.add_argument("--out", default=str(REPO / "bench" / "out"))
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--skip-embed", action="store_true")
    args = ap.parse_args()
    report = ["# Semantic search benchmarks", "",
              f"Machine: {_cpu_name()}, {os.cpu_count()} cores. Command: "
              f"`.venv/bin/python bench/semantic.py --size {args.size}`", ""]

    report += ["## Vector search (exact, numpy, 384 dims)", "",
               "| exchanges | first search of a process (reads the vectors) | later searches, p50 |",
               "|---|---|---|"]
    for n in (10_000, 100_000):
        r = vector_search(n, args.runs * 2)
        report.append(f"| {n:,} | {r['first_ms']:.0f} ms | {r['warm_p50_ms']:.1f} ms |")
        print(r, file=sys.stderr, flush=True)

    out, config, ws, pdir = prepare(args.size, args.out)
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(config), HOME=str(out / "home"),
               PRIMA_PYTHON=sys.executable, PRIMA_BACKGROUND="0")
    env.pop("PRIMA_EXPECTED_HOST", None)
    cli(env, ws, "index")
    status = cli(env, ws, "status")[1]["semantic"]
    report += ["", f"## The {args.size} history", ""]
    if not args.skip_embed:  # from nothing: every vector of the history made again
        from prima_memory.memory import Memory
        st = Memory(str(ws)).store()
        with st.write():
            st.db.execute("DELETE FROM embedded")
            st.db.execute("DELETE FROM vectors")
        st.close()
        status = cli(env, ws, "status")[1]["semantic"]
    if status["pending"]:
        t = time.perf_counter()
        done = cli(env, ws, "embed")[1]["embedded"]
        secs = time.perf_counter() - t
        report.append(f"Embedding its {done:,} pending exchanges (of "
                      f"{status['embedded'] + status['pending']:,}): {secs:.0f} s, "
                      f"{done / secs:.1f} exchanges/s (model {status['model']}).")
        print(report[-1], file=sys.stderr, flush=True)
    status = cli(env, ws, "status")[1]["semantic"]
    assert status["pending"] == 0, status
    report += ["", f"{status['embedded']:,} exchanges embedded.", "",
               "| `prima-memory search`, cold process, index current | p50 | p95 |", "|---|---|---|"]
    rows = {}
    for mode in ("keyword", "combined", "semantic"):
        times = [cli(env, ws, "search", q, "--mode", mode)[0]
                 for q in QUERIES * max(1, args.runs // len(QUERIES) + 1)][:args.runs]
        rows[mode] = sorted(times)
        report.append(f"| {mode} | {p50(times):.0f} ms | {sorted(times)[int(len(times) * .95) - 1]:.0f} ms |")
        print(report[-1], file=sys.stderr, flush=True)

    # One new session indexed by Stop, which starts the background embedder; search at once.
    sessions = sorted(pdir.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    after = []
    for i in range(max(3, args.runs // 3)):
        newest = sessions[-1]
        append_exchange(newest, 5000 + i)
        stop = json.dumps({"session_id": newest.stem, "cwd": str(ws), "hook_event_name": "Stop",
                           "transcript_path": str(newest), "stop_hook_active": False}).encode()
        hook_env = dict(env, PRIMA_BACKGROUND="1", CLAUDE_PROJECT_DIR=str(ws))
        subprocess.run([sys.executable, "-m", "prima_memory", "hook", "stop"], input=stop,
                       env=hook_env, capture_output=True, timeout=60)
        ms, data = cli(env, ws, "search", "appended benchmark question")
        after.append(ms)
        time.sleep(3)  # let that embedder finish before the next round
    report += [f"| combined, right after a Stop (background embedder running) | {p50(after):.0f} ms "
               f"| {max(after):.0f} ms (max) |", "",
               f"Combined / keyword, p50 ratio: {p50(rows['combined']) / p50(rows['keyword']):.2f}."]
    print("\n".join(report))


if __name__ == "__main__":
    main()
