"""Where a cold index's time goes, phase by phase, on bench/real.py's history of real transcripts.

    .venv/bin/python bench/index_phases.py [--size 1000] [--runs 3] [--out /tmp/prima-memory-real]
        [--package PATH] [--against PATH]

The index is made in this one process (no reader process: each phase is timed where it runs,
and the phases add up to its CPU), with timers on:
  - reading: the files' bytes, read in a pass of their own (page cache warm, as in the index);
  - JSON: lines split and parsed (time inside JsonlReader), less that reading;
  - redaction: redact.redact, wherever it is called (parsing, and the writer's joined replies);
  - records: the source's own work on the parsed lines (messages, tool calls, file changes);
  - keyword rows (FTS5 insert): the statements that write messages_fts;
  - commits;
  - other SQL: every other statement (messages, sessions, changes, calls, triggers);
  - extracts: the markdown of substantial sessions;
  - the writer's Python: what the indexer does between statements (merging, tokens, tags).
Then, beside it, `prima-memory index` as a user runs it (two processes: one reads while the other
writes) and one bare orjson pass over the same files, interleaved `--runs` times: their medians
and ratio. `--package`: another checkout's prima_memory to time instead; `--against`: another
checkout's `index` timed in the same rounds (before/after, with the CPU of each).
Prints JSON on stdout, a markdown table on stderr.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]
sys.path.insert(0, str(REPO))


def phases(ws: Path, pdir: Path) -> dict:
    """One cold index in this process, timed by phase: ms."""
    from prima_memory import cli, indexer, redact, storage as store
    from prima_memory.sources import jsonl

    acc = dict.fromkeys(("json", "redaction_reading", "redaction_writing", "read_chunks",
                         "fts", "commit", "sql", "extracts", "index"), 0.0)
    reading = [False]  # inside a source's read_chunks (the reader's half)

    def timed(key, fn):
        def run(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                acc[key] += time.perf_counter() - t
        return run

    real_iter = jsonl.JsonlReader.__iter__

    def json_iter(self):
        it = real_iter(self)
        while True:
            t = time.perf_counter()
            try:
                obj = next(it)
            except StopIteration:
                acc["json"] += time.perf_counter() - t
                return
            acc["json"] += time.perf_counter() - t
            yield obj

    real_redact = redact.redact

    def redacting(text):
        t = time.perf_counter()
        try:
            return real_redact(text)
        finally:
            acc["redaction_reading" if reading[0] else "redaction_writing"] += \
                time.perf_counter() - t

    real_chunks = indexer.read_chunks

    def chunks(job, bulk):
        it = real_chunks(job, bulk)
        while True:
            t = time.perf_counter()
            reading[0] = True
            try:
                item = next(it)
            except StopIteration:
                return
            finally:
                reading[0] = False
                acc["read_chunks"] += time.perf_counter() - t
            yield item

    def profile(sql: str, ns: int) -> None:
        if "'main'." in sql:  # (FTS5's own statements: timed within the one that ran them)
            return
        head = sql.lstrip()[:40].upper()
        key = "fts" if "MESSAGES_FTS(ROWID" in head.replace(" ", "") else \
            "commit" if head.startswith(("COMMIT", "RELEASE")) else "sql"
        acc[key] += ns / 1e9

    real_init = store.Store.__init__

    def init(self, *a, **k):
        real_init(self, *a, **k)
        self.db.set_profile(profile)

    jsonl.JsonlReader.__iter__ = json_iter
    redact.redact = redacting
    for mod in list(sys.modules.values()):  # (modules that took redact by name)
        if getattr(mod, "redact", None) is real_redact and mod is not redact:
            mod.redact = redacting
    indexer.read_chunks = chunks
    indexer._READER_PROCESS = False
    store.Store.__init__ = init
    from prima_memory import extract_writer
    extract_writer.write_unfinished = timed("extracts", extract_writer.write_unfinished)

    data = ws / ".prima-memory"
    kept = ws.parent / ".prima-memory.kept"
    if data.exists():
        data.rename(kept)
    try:
        t = time.perf_counter()
        c = time.process_time()
        with redirect_stdout(io.StringIO()):
            cli.main(["--workspace", str(ws), "index"])
        acc["index"] = time.perf_counter() - t
        acc["cpu"] = time.process_time() - c
    finally:
        shutil.rmtree(data, ignore_errors=True)
        if kept.exists():
            kept.rename(data)
    t = time.perf_counter()
    for f in pdir.iterdir():
        f.read_bytes()
    read = time.perf_counter() - t
    ms = {k: v * 1000 for k, v in acc.items()}
    redaction = ms["redaction_reading"] + ms["redaction_writing"]
    out = {
        "reading": read * 1000,
        "JSON (split, parse)": ms["json"] - read * 1000,
        "redaction": redaction,
        "records (the source's work)": ms["read_chunks"] - ms["json"] - ms["redaction_reading"],
        "keyword rows (FTS5 insert)": ms["fts"],
        "commits": ms["commit"],
        "other SQL (rows, indexes, triggers)": ms["sql"],
        "extracts (markdown)": ms["extracts"],
    }
    out["the writer's Python"] = ms["index"] - (ms["read_chunks"] + ms["fts"] + ms["commit"]
                                                + ms["sql"] + ms["extracts"]
                                                + ms["redaction_writing"])
    out["total, one process"] = ms["index"]
    return {k: round(v) for k, v in out.items()}


def bare_and_cold(ws: Path, pdir: Path, env: dict, runs: int, package: str | None,
                  against: str | None) -> dict:
    """`prima-memory index` (two processes) and one bare orjson pass, interleaved: medians.
    `against`: another checkout's index too, in the same rounds (before/after)."""
    sys.path.insert(0, str(REPO / "bench"))
    from real import bare_pass, cold_index

    def command(pkg: str | None) -> tuple[dict, list[str] | None]:
        if not pkg:
            return env, None
        # python -m (an older checkout's package may not fit this one's launcher), with -P: not
        # the current folder first on the path, which may hold this checkout's package
        return dict(env, PYTHONPATH=pkg), [sys.executable, "-P", "-m", "prima_memory",
                                           "--workspace", str(ws)]

    runs_of = {"timed": command(package), **({"against": command(against)} if against else {})}
    bare: list[float] = []
    got: dict[str, list[tuple[float, float, float]]] = {k: [] for k in runs_of}
    for _ in range(runs):
        bare.append(bare_pass(pdir))
        for k, (e, start) in runs_of.items():
            got[k].append(cold_index(e, ws, start))
    b = statistics.median(bare)
    out: dict = {"orjson_pass_ms": round(b), "runs": runs}
    for k, rows in got.items():
        c = statistics.median(r[0] for r in rows)
        out[k] = {"cold_index_ms": round(c), "ratio": round(c / b, 2),
                  "cpu_ms": round(statistics.median(r[2] for r in rows)),
                  "peak_rss_mb": max(r[1] for r in rows)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default="/tmp/prima-memory-real")
    ap.add_argument("--package", help="the folder holding another checkout's prima_memory")
    ap.add_argument("--against", help="another checkout's folder: its `index` timed in the "
                    "same rounds (before/after)")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO / "bench"))
    from real import Size
    if args.package:  # (real puts this checkout first: the package timed must come before it)
        sys.path.insert(0, str(Path(args.package).resolve()))
    sz = Size(Path(args.out).resolve(), args.size)
    for k, v in sz.env.items():
        os.environ[k] = v
    subprocess.run([sys.executable, "-m", "compileall", "-q",
                    str(Path(args.package or REPO) / "prima_memory")], check=True)
    report = {"size": args.size, "mb": sz.r["mb"],
              "phases_ms": phases(sz.ws, sz.pdir),
              "package": str(Path(sys.modules["prima_memory"].__file__).parent.parent),
              "two_processes": bare_and_cold(sz.ws, sz.pdir, sz.env, args.runs, args.package,
                                             args.against)}
    bare = report["two_processes"]["orjson_pass_ms"]
    lines = [f"| phase ({args.size:,} sessions, {sz.r['mb']} MB) | ms | × one orjson pass |",
             "|---|---|---|"]
    for name, ms in report["phases_ms"].items():
        lines.append(f"| {name} | {ms:,} | {ms / bare:.2f} |")
    tp = report["two_processes"]
    for k, label in (("timed", "`prima-memory index`"), ("against", f"{args.against}'s")):
        if k in tp:
            lines.append(f"| {label} (reader + writer), median of {tp['runs']}; its CPU | "
                         f"{tp[k]['cold_index_ms']:,}; {tp[k]['cpu_ms']:,} | **{tp[k]['ratio']}** |")
    lines.append(f"| one bare orjson pass, median | {bare:,} | 1 |")
    lines.append(f"| peak RSS of `index` | {tp['timed']['peak_rss_mb']:.0f} MB | |")
    print("\n".join(lines), file=sys.stderr)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
