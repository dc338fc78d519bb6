"""SIMILAR_TO edges, bounded (issue #20 item 4): what they cost the index, and what linking a
new session costs as the history grows. One command:

    .venv/bin/python bench/edges.py [--size M] [--new 5]

On the benchmark history (bench/run.py's M: 1,000 sessions, generated, indexed and embedded with
the production embedder once, then reused from bench/out/; the first run embeds for minutes),
in one run:
- the index's size (each copy VACUUMed) without edges, with the pairs the code before the bound
  kept (every pair of exchanges of two sessions at cosine >= 0.85, copies included: computed
  here, as that code did), and with the bounded edges (semantic.link from nothing); rows,
  edges, the most edges and rows of one exchange, and the ratio to the index without edges;
- bringing the old pairs to the bound (Store.bound_edges, as the first link after an upgrade
  does, then VACUUM): time, and whether it gives what linking from nothing gives;
- linking one new session at several history sizes: the history is the first n sessions (by
  id), the new sessions the same `--new` sessions of the M history whatever n (spread over its
  ids), linked one at a time as the MCP server links them, holding the vectors: time (median and
  each), compared as ratios to the smallest history in the same run.
The vectors are Words' (below: hashed words, deterministic, seconds for the whole history), or
with --real the production model's. The synthetic history repeats its phrasing and some texts
whole, so near-copies and copies abound, as in the history of the issue.
Prints a markdown report.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.run import _cpu_name, prepare  # noqa: E402


def ms_since(t: float) -> float:
    return (time.perf_counter() - t) * 1000


class Words:
    """A stand-in for the model, deterministic and fast (the shared 2-core machine embeds the M
    history with the real model in minutes when idle, an hour when busy): an exchange's words,
    each hashed to one of 384 signed dimensions, counted and normalised, in windows of 900
    characters overlapping by 200 (about the real windows' span). Texts of the same words are
    as near as the model makes paraphrases; copies are the same vector, near-copies near."""
    model, variant, build, dim = "bench-hashed-words", "hashed-words", "1", 384

    def windows(self, text: str) -> list[str]:
        if len(text) <= 900:
            return [text]
        return [text[a:a + 900] for a in range(0, len(text) - 200, 700)]

    def encode(self, texts, batch_size: int = 32):
        import hashlib
        import re

        import numpy as np
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=4).digest(), "big")
                out[i, h % self.dim] += 1.0 if h & 0x80000000 else -1.0
            n = np.linalg.norm(out[i])
            out[i] = out[i] / n if n else out[i]
        return out


def embedded_index(size: str, out_root: str, real: bool) -> Path:
    """The history's index, embedded (and nothing else pending) by one embedder: made once."""
    import subprocess
    out, config, ws, _pdir = prepare(size, out_root)
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(config), HOME=str(out / "home"),
               PRIMA_PYTHON=sys.executable, PRIMA_BACKGROUND="0")
    env.pop("PRIMA_EXPECTED_HOST", None)
    subprocess.run([sys.executable, "-m", "prima_memory", "--workspace", str(ws), "index",
                    "--json"], env=env, check=True, capture_output=True)
    os.environ.update(env)
    from prima_memory import semantic
    from prima_memory.memory import Memory
    mem = Memory(str(ws))
    st = mem.store()
    embedder = mem.embedder() if real else Words()
    key = semantic.key_of(embedder)
    with st.write():  # one embedder's vectors only: the sizes compare edges, not models
        st.db.execute("DELETE FROM embedded WHERE model != ?", (key,))
        st.db.execute("DELETE FROM vectors WHERE model != ?", (key,))
    t = time.perf_counter()
    got = semantic.Embedding(st, embedder).run()  # embeds only: no edges
    if got and got[0]:
        print(f"embedded {got[0]} exchanges in {ms_since(t) / 1000:.0f} s", file=sys.stderr)
    path = Path(st.path)
    mem.close()
    return path


def copy_index(src: Path, dst: Path, *, edges: bool = False) -> None:
    """A VACUUMed copy of `src`, without its edges unless `edges`."""
    from prima_memory.storage import Store
    st = Store(str(src))
    st.db.execute("VACUUM INTO ?", (str(dst),))
    st.close()
    if not edges:
        st = Store(str(dst))
        with st.write():
            st.db.execute("DELETE FROM similar")
            st.db.execute("DELETE FROM linked")
            st.db.execute("DELETE FROM meta WHERE key = 'similar_near'")
        st.db.execute("VACUUM")
        st.close()


def size_of(path: Path) -> int:
    from prima_memory.storage import Store
    st = Store(str(path))
    st.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    st.db.execute("VACUUM")
    st.close()
    return os.path.getsize(path)


def model_of(st) -> str:
    return st.db.execute("SELECT model FROM embedded GROUP BY model ORDER BY count(*) DESC "
                         "LIMIT 1").get


def old_rule(st, model: str) -> float:
    """What the code before the bound stored: every pair of exchanges of two sessions at
    cosine >= EDGE (best window pair), copies included. Returns seconds."""
    import numpy as np
    from prima_memory import semantic
    from prima_memory.storage.shared import SHIFT
    t = time.perf_counter()
    ids, _w, mat = semantic._matrix(st, model, 384)
    sessions = ids >> SHIFT
    with st.write():
        for i in range(0, len(ids), 1024):
            sims = mat[i:i + 1024] @ mat.T
            r, c = np.nonzero((sims >= semantic.EDGE - 1e-4)
                              & (ids[i:i + 1024][:, None] < ids[None, :])
                              & (sessions[i:i + 1024][:, None] != sessions[None, :]))
            x, y = ids[i:i + 1024][r], ids[c]
            cos = np.einsum("ij,ij->i", mat[i:i + 1024][r].astype(np.float64),
                            mat[c].astype(np.float64))  # as semantic._edges: in float64
            near = cos >= semantic.EDGE
            x, y, cos = x[near], y[near], cos[near]
            st.db.executemany(  # the best window pair of each: the highest written last
                "INSERT INTO similar(a, b, model, cosine) VALUES (?, ?, ?, ?) ON CONFLICT "
                "DO UPDATE SET cosine = max(cosine, excluded.cosine)",
                ((int(p), int(q), model, round(float(v), 6)) for p, q, v in zip(x, y, cos)))
        st.db.execute("INSERT OR REPLACE INTO linked SELECT exchange, model, text_hash "
                      "FROM embedded WHERE model = ?", (model,))
    return time.perf_counter() - t


def degrees(st, model: str) -> tuple[int, int]:
    """(the most edges of one exchange, the most rows of one exchange)."""
    rows = st.db.execute(
        "SELECT max(n) FROM (SELECT x, count(*) AS n FROM (SELECT a AS x FROM similar WHERE "
        "model = ?1 UNION ALL SELECT b FROM similar WHERE model = ?1) GROUP BY x)", (model,)).get
    most = max((len(st.edges(model, x)) for x, in st.db.execute(
        "SELECT DISTINCT a FROM similar WHERE model = ?", (model,))), default=0)
    return most, rows or 0


def sizes(base: Path, work: Path) -> tuple[list[str], Path]:
    from prima_memory import semantic
    from prima_memory.storage import Store
    none = work / "none.db"
    copy_index(base, none)
    report = ["| index | size | × without edges | rows | edges | most edges of one exchange "
              "| most rows of one exchange | time |", "|---|---|---|---|---|---|---|---|"]
    without = size_of(none)
    report.append(f"| without edges | {without / 1e6:.1f} MB | 1.00 | 0 | 0 | | | |")

    old = work / "old.db"
    shutil.copy(none, old)
    st = Store(str(old))
    model = model_of(st)
    secs = old_rule(st, model)
    rows = st.count_similar_rows(model)
    st.close()
    old_size = size_of(old)
    report.append(f"| every pair (the code before the bound) | {old_size / 1e6:.1f} MB | "
                  f"{old_size / without:.2f} | {rows:,} | {rows:,} | | | {secs:.0f} s |")

    new = work / "new.db"
    shutil.copy(none, new)
    st = Store(str(new))
    semantic._LOADED.clear()
    t = time.perf_counter()
    linked = semantic.link(st, model, 384)
    secs = time.perf_counter() - t
    rows, edges = st.count_similar_rows(model), st.count_edges(model)
    most, most_rows = degrees(st, model)
    st.close()
    new_size = size_of(new)
    report.append(f"| bounded (semantic.link from nothing: {linked[0]:,} exchanges) | "
                  f"{new_size / 1e6:.1f} MB | **{new_size / without:.2f}** | {rows:,} | "
                  f"{edges:,} | {most} | {most_rows} | {secs:.0f} s |")

    st = Store(str(old))  # the old pairs brought to the bound, as after an upgrade
    semantic._LOADED.clear()
    t = time.perf_counter()
    st.bound_edges()
    trim = time.perf_counter() - t
    t = time.perf_counter()
    st.reclaim()
    vac = time.perf_counter() - t
    got = (st.count_similar_rows(model), st.count_edges(model))
    st.close()
    same = "the same rows and edges as from nothing" if got == (rows, edges) else \
        f"{got[0]:,} rows, {got[1]:,} edges"

    report.append(f"| every pair, brought to the bound (Store.bound_edges, then VACUUM) | "
                  f"{size_of(old) / 1e6:.1f} MB | {size_of(old) / without:.2f} | "
                  f"{same} | | | | "
                  f"{trim:.1f} s + {vac:.1f} s |")
    return report, none


def link_times(none: Path, work: Path, counts: list[int], new: int, runs: int) -> list[str]:
    from prima_memory import semantic
    from prima_memory.storage.shared import SHIFT
    from prima_memory.storage import Store
    st = Store(str(none))
    model = model_of(st)
    sessions = [s for s, in st.db.execute(
        "SELECT DISTINCT exchange >> ? FROM embedded WHERE model = ? ORDER BY 1", (SHIFT, model))]
    st.close()
    step = len(sessions) // new
    fresh = [sessions[step * i + step // 2] for i in range(new)]
    rest = [s for s in sessions if s not in fresh]
    counts = [min(n, len(rest)) for n in counts]
    report = ["| history (sessions) | exchanges | link one new session, median | each (ms) | "
              "× the smallest | exchanges linked |", "|---|---|---|---|---|---|"]
    first = None
    for n in counts:
        path = work / f"hist-{n}.db"
        shutil.copy(none, path)
        st = Store(str(path))
        keep = set(rest[:n]) | set(fresh)
        with st.write():
            gone = [x for x, in st.db.execute("SELECT exchange FROM embedded WHERE model = ?",
                                               (model,)) if x >> SHIFT not in keep]
            st.db.executemany("DELETE FROM embedded WHERE exchange = ? AND model = ?",
                              ((x, model) for x in gone))
            later = {s: list(st.db.execute(
                "SELECT exchange, text_hash FROM embedded WHERE model = ? AND exchange "
                "BETWEEN ? AND ?", (model, s << SHIFT, ((s + 1) << SHIFT) - 1))) for s in fresh}
            for rows in later.values():
                st.db.executemany("DELETE FROM embedded WHERE exchange = ? AND model = ?",
                                  ((x, model) for x, _h in rows))
        exchanges = st.count_embedded(model)
        semantic._LOADED.clear()
        semantic.link(st, model, 384)  # the history, from nothing; its vectors now held
        times, linked = [], []
        for _ in range(runs):
            for s in fresh:  # each new session embedded (its vectors kept), then linked
                with st.write():
                    st.link_exchanges(model, later[s])
                t = time.perf_counter()
                got = semantic.link(st, model, 384)
                times.append(ms_since(t))
                linked.append(got[0])
                with st.write():  # gone again for the next run
                    st.db.executemany("DELETE FROM embedded WHERE exchange = ? AND model = ?",
                                      ((x, model) for x, _h in later[s]))
                semantic._held(st, model, 384)  # (held without them: not a new session's cost)
        st.close()
        path.unlink()
        med = statistics.median(times)
        first = first or med
        report.append(f"| {n:,} | {exchanges:,} | {med:.0f} ms | "
                      f"{', '.join(f'{x:.0f}' for x in times[:len(fresh)])} | "
                      f"**{med / first:.2f}** | {', '.join(map(str, linked[:len(fresh)]))} |")
        print(report[-1], file=sys.stderr, flush=True)
    return report


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="M")
    ap.add_argument("--out", default=str(REPO / "bench" / "out"))
    ap.add_argument("--new", type=int, default=5, help="new sessions linked at each size")
    ap.add_argument("--runs", type=int, default=3, help="times each new session is linked")
    ap.add_argument("--sessions", default="250,500,1000")
    ap.add_argument("--real", action="store_true",
                    help="embed with the production model (minutes to an hour) instead of Words")
    args = ap.parse_args()
    from prima_memory.storage.sqlite.vectors import EDGE_K
    base = embedded_index(args.size, args.out, args.real)
    report = ["# SIMILAR_TO edges, bounded", "",
              f"Machine: {_cpu_name()}, {os.cpu_count()} cores. Command: `.venv/bin/python "
              f"bench/edges.py --size {args.size} --new {args.new} --runs {args.runs}"
              f"{' --real' if args.real else ''}`; EDGE_K = {EDGE_K}; vectors: "
              f"{'the production model' if args.real else 'Words (hashed words)'}.", "", f"## Index size, the {args.size} history", ""]
    with tempfile.TemporaryDirectory(dir=str(Path(args.out))) as d:
        part, none = sizes(base, Path(d))
        report += part
        print("\n".join(report), file=sys.stderr, flush=True)
        report += ["", "## Linking one new session as the history grows", ""]
        report += link_times(none, Path(d), [int(n) for n in args.sessions.split(",")],
                             args.new, args.runs)
    print("\n".join(report))


if __name__ == "__main__":
    main()
