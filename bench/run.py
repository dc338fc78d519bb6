"""Benchmarks for the core (issue: keyword memory). One command:

    .venv/bin/python bench/run.py [--size M] [--out bench/out] [--quick] [--with-sources]

Generates a deterministic Claude Code history (S: 100 sessions, M: 1,000 sessions of about
300 MB), then measures in one run, each figure next to a baseline measured in the same run:
cold full index vs a bare orjson pass over the same files; incremental update after one
appended exchange; keyword search p50/p95 over 20 fixed queries vs grep (and ripgrep) over the
raw files; and whether the keyword CLI path imports torch. Prints a markdown report.

--with-sources also generates the other sources next to the history (M: 300 Codex rollouts and 200
VS Code Copilot Chat sessions) and measures, in the same run and in turns, the cold index and
keyword search with them against without them (each side its own index, see Indexes).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# sessions, bytes; P is the plugin benchmark's workspace (bench/claude_code.py)
SIZES = {"S": (100, 30_000_000), "P": (150, 45_000_000), "M": (1000, 300_000_000)}
SOURCES = {"S": (30, 20), "M": (300, 200)}  # Codex rollouts, Copilot Chat sessions (--with-sources)
NOW = 1_795_000_000  # fixed "now" for the generator: the history is byte-identical run to run
QUERIES = [
    # common single words
    "test", "error", "database", "config", "deploy",
    # less common single words
    "migration", "timeout", "websocket", "kubernetes", "idempotent",
    # rare words (one session each)
    "zqmarker17", "zqmarker503", "zqmarker999",
    # two words
    "database migration", "fix timeout", "cache invalidation", "retry backoff",
    "zqmarker42 test", "auth token", "flaky test",
]


def pct(values, p):
    v = sorted(values)
    k = (len(v) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def _tree_rss_kb(pid: int) -> int:
    """Resident memory of a process and its children (the indexer's reader process)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                total += next((int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:")), 0)
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            pass
    return total


def run_child(cmd, env):
    """Wall time, peak RSS (MB, the process and its children together, sampled every 20 ms, and
    never below the kernel's own peak for the process) and stdout of a child process."""
    import threading
    t = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss_kb(p.pid))
            done.wait(0.02)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out, err = p.communicate()
    wall = time.perf_counter() - t
    done.set()
    th.join()
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{cmd} failed: {err.decode()[-2000:]}")
    return wall, max(peak[0], ru.ru_maxrss) / 1024, out


BASELINE = r"""
import os, sys, time, orjson
t = time.perf_counter(); n = 0; size = 0
for top in sys.argv[1:]:
    for root, _dirs, files in os.walk(top):
        for name in files:
            if name.endswith('.jsonl'):
                with open(os.path.join(root, name), 'rb') as f:
                    for line in f:
                        size += len(line)
                        if line.strip():
                            orjson.loads(line); n += 1
            elif name.endswith('.json') and os.path.basename(root) == 'chatSessions':
                with open(os.path.join(root, name), 'rb') as f:  # a Copilot Chat session: one document
                    data = f.read()
                size += len(data); orjson.loads(data); n += 1
print(n, size, time.perf_counter() - t)
"""


def prepare(size: str, out_root: str):
    """The benchmark history of a size (generated once, deterministic): (out, config, ws, pdir)."""
    from bench.synthetic import generate_history
    from prima_memory.sources.claude_code import encode_project_dir

    sessions, target = SIZES[size]
    out = Path(out_root) / size
    config = out / "claude"
    ws = out / "work space" / "bench project"
    pdir = config / "projects" / encode_project_dir(str(ws))
    if not pdir.is_dir():
        print(f"generating {size}: {sessions} sessions, ~{target / 1e6:.0f} MB ...", file=sys.stderr)
        t = time.perf_counter()
        generate_history(config, str(ws), sessions, seed=7, target_bytes=target, now=NOW)
        print(f"  generated in {time.perf_counter() - t:.1f}s", file=sys.stderr)
    ws.mkdir(parents=True, exist_ok=True)
    # as install.sh leaves it: compiled modules (PYTHONDONTWRITEBYTECODE would otherwise make
    # every measured process compile them again)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "prima_memory")],
                   check=True, stdout=subprocess.DEVNULL)
    return out, config, ws, pdir


def source_env(out: Path, on: bool) -> dict:
    """Where prima-memory looks for Codex and VS Code: the generated folders under <out>/sources,
    or (off) folders that do not exist; never the real home's, whatever the shell exports."""
    root = out / ("sources" if on else "no-sources")
    return {"CODEX_HOME": str(root / "codex"), "PRIMA_VSCODE_USER_DIRS": str(root / "vscode" / "User")}


def prepare_sources(size: str, out: Path, ws: Path) -> list[Path]:
    """The other sources of a size beside its history (generated once, deterministic): Codex
    rollouts and Copilot Chat sessions under <out>/sources. Returns their files."""
    from bench.synthetic import generate_codex, generate_copilot
    root = out / "sources"
    if not root.is_dir():
        rollouts, chats = SOURCES[size]
        print(f"generating {rollouts} Codex rollouts, {chats} Copilot Chat sessions ...", file=sys.stderr)
        tmp = out / "sources.partial"
        shutil.rmtree(tmp, ignore_errors=True)
        generate_codex(tmp / "codex", str(ws), rollouts, seed=7, now=NOW)
        generate_copilot(tmp / "vscode" / "User", str(ws), chats, seed=7, now=NOW)
        tmp.rename(root)  # whole or absent: an interrupted run generates them again
    return sorted(p for p in root.rglob("*") if p.is_file())


def db_bytes(db: Path) -> int:
    wal = db.with_name(db.name + "-wal")
    return db.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


class Indexes:
    """One index per side (with and without the other sources). The CLI and the hooks read only
    <ws>/.prima-memory, so the side measured next is renamed into place, outside the timed part,
    and the others wait in <parked>."""

    def __init__(self, ws: Path, parked: Path):
        self.live, self.parked, self.current = ws / ".prima-memory", parked, None
        shutil.rmtree(parked, ignore_errors=True)  # a previous run's: stale
        parked.mkdir(parents=True)

    def use(self, side: str) -> None:
        if side == self.current:
            return
        if self.current is not None and self.live.exists():
            self.live.rename(self.parked / self.current)
        if (self.parked / side).exists():
            (self.parked / side).rename(self.live)
        self.current = side

    def db(self, side: str) -> Path:
        return (self.live if side == self.current else self.parked / side) / "index.db"


def compare_search(idx: Indexes, sides: dict, ws: Path) -> dict:
    """Keyword search on each side's index, query by query in turns: in-process (median of 5
    each) and through the CLI, whose freshness check also looks at every source file; and that
    check alone (an update of the other sources with nothing changed)."""
    from prima_memory import search as searchmod
    from prima_memory.logs import Log
    from prima_memory.memory import OTHERS, Memory
    from prima_memory.storage import Store
    stores = {s: Store(str(idx.db(s))) for s in sides}
    counts = {s: st.source_counts() for s, st in stores.items()}
    for q in QUERIES:  # warm
        for st in stores.values():
            searchmod.keyword(st, q)
    inproc = {s: [] for s in sides}
    for q in QUERIES:
        for s, st in stores.items():
            times = []
            for _ in range(5):
                t = time.perf_counter()
                searchmod.keyword(st, q)
                times.append((time.perf_counter() - t) * 1000)
            inproc[s].append(statistics.median(times))
    for st in stores.values():
        st.close()
    cli, check = {s: [] for s in sides}, {s: [] for s in sides}
    for i, q in enumerate(QUERIES):
        for s, env in list(sides.items())[::1 if i % 2 == 0 else -1]:
            idx.use(s)
            cli[s].append(run_child([sys.executable, "-m", "prima_memory", "--workspace", str(ws), "search",
                                     "--mode", "keyword", "--json", "--", q], env)[0] * 1000)
            os.environ.update(env)  # the sources' locations are read from the environment
            mem = Memory(str(ws), log=Log(None))
            mem.store()
            t = time.perf_counter()
            mem.update(sources=OTHERS)
            check[s].append((time.perf_counter() - t) * 1000)
            mem.close()
    out = {"sessions_by_source": counts}
    for what, by in (("inprocess", inproc), ("cli", cli), ("sources_check", check)):
        for s in sides:
            out[f"{what}_ms_p50_{s}"] = pct(by[s], 50)
            out[f"{what}_ms_p95_{s}"] = pct(by[s], 95)
        if "sources" in sides:
            out[f"{what}_p50_with_over_without"] = pct(by["sources"], 50) / pct(by["claude"], 50)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", choices=SIZES, default="M")
    ap.add_argument("--out", default=str(REPO / "bench" / "out"))
    ap.add_argument("--repeat", type=int, default=3, help="cold index runs (best and median kept)")
    ap.add_argument("--with-sources", action="store_true",
                    help="also index Codex and Copilot Chat sessions, compared with the history alone")
    args = ap.parse_args()

    sessions = SIZES[args.size][0]
    out, config, ws, pdir = prepare(args.size, args.out)
    files = [p for p in pdir.rglob("*.jsonl")]
    corpus = sum(p.stat().st_size for p in files)
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(config), HOME=str(out / "home"))
    env.pop("PRIMA_EXPECTED_HOST", None)
    sides = {"claude": dict(env, **source_env(out, False))}
    src_files = []
    if args.with_sources:
        src_files = prepare_sources(args.size, out, ws)
        sides["sources"] = dict(env, **source_env(out, True))
    env = sides["claude"]
    idx = Indexes(ws, out / "indexes")
    py = sys.executable
    report = {"size": args.size, "sessions": sessions, "files": len(files), "corpus_bytes": corpus}

    # warm the page cache so both sides read from memory
    for p in files + src_files:
        p.read_bytes()

    # -- cold index vs bare orjson pass ------------------------------------------------------
    base_walls, base_all = [], []
    walls, rss = {s: [] for s in sides}, {s: [] for s in sides}
    for i in range(args.repeat):
        wall, _, _ = run_child([py, "-c", BASELINE, str(pdir)], env)
        base_walls.append(wall)
        if src_files:  # the same pass over every file the side with the sources reads
            base_all.append(run_child([py, "-c", BASELINE, str(pdir), str(out / "sources")], env)[0])
        for side, e in list(sides.items())[::1 if i % 2 == 0 else -1]:
            idx.use(side)
            shutil.rmtree(idx.live, ignore_errors=True)
            wall, peak, _ = run_child([py, "-m", "prima_memory", "--workspace", str(ws), "index", "--json"], e)
            walls[side].append(wall)
            rss[side].append(peak)
    index_walls, rss_claude = walls["claude"], rss["claude"]
    idx.use("claude")
    base, cold = min(base_walls), min(index_walls)
    db_size = db_bytes(idx.db("claude"))
    report["cold"] = {"baseline_orjson_s": base, "index_s": cold, "ratio": cold / base,
                      "index_s_median": statistics.median(index_walls),
                      "baseline_s_median": statistics.median(base_walls),
                      "mb_per_s": corpus / 1e6 / cold, "peak_rss_mb": max(rss_claude),
                      "index_bytes": db_size, "index_over_corpus": db_size / corpus}
    if src_files:
        with_s = min(walls["sources"])
        report["sources"] = {
            "codex_rollouts": SOURCES[args.size][0], "copilot_sessions": SOURCES[args.size][1],
            "files": len(src_files), "bytes": sum(p.stat().st_size for p in src_files),
            "cold": {"index_s_without": cold, "index_s_with": with_s, "with_over_without": with_s / cold,
                     "with_over_without_per_run": [round(a / b, 3) for a, b in zip(walls["sources"], walls["claude"])],
                     "index_s_with_all": walls["sources"], "index_s_without_all": walls["claude"],
                     "baseline_orjson_all_files_s": min(base_all),
                     "with_over_orjson_history": with_s / base, "with_over_orjson_all_files": with_s / min(base_all),
                     "peak_rss_mb_with": max(rss["sources"]), "index_bytes_with": db_bytes(idx.db("sources"))},
            "search": compare_search(idx, sides, ws)}
        idx.use("claude")

    # -- incremental update after one appended exchange ---------------------------------------
    from prima_memory.logs import Log
    from prima_memory.memory import Memory
    os.environ.update(CLAUDE_CONFIG_DIR=str(config), HOME=str(out / "home"), **source_env(out, False))
    target_file = max((p for p in pdir.glob("*.jsonl")), key=lambda p: p.stat().st_size)
    original = target_file.read_bytes()
    mem = Memory(str(ws), log=Log(None))
    mem.update()
    inproc = []
    for i in range(20):
        append_exchange(target_file, i)
        t = time.perf_counter()
        rep = mem.update()
        inproc.append((time.perf_counter() - t) * 1000)
        assert rep.files_read == 1, rep
    cli = []
    for i in range(10):
        append_exchange(target_file, 100 + i)
        wall, _, _ = run_child([py, "-m", "prima_memory", "--workspace", str(ws), "index", "--json"], env)
        cli.append(wall * 1000)
    noop = []
    for _ in range(10):
        t = time.perf_counter()
        mem.update()
        noop.append((time.perf_counter() - t) * 1000)
    report["incremental"] = {"inprocess_ms_p50": pct(inproc, 50), "inprocess_ms_p95": pct(inproc, 95),
                             "cli_ms_p50": pct(cli, 50), "cli_ms_p95": pct(cli, 95),
                             "nothing_changed_ms_p50": pct(noop, 50)}

    # -- keyword search ------------------------------------------------------------------------
    from prima_memory import search as searchmod
    store = mem.store()
    for q in QUERIES:  # warm
        searchmod.keyword(store, q)
    inproc, fresh, found = [], [], {}
    for q in QUERIES:
        times = []
        for _ in range(5):
            t = time.perf_counter()
            hits = searchmod.keyword(store, q)
            times.append((time.perf_counter() - t) * 1000)
        inproc.append(statistics.median(times))
        found[q] = len(hits)
        t = time.perf_counter()
        mem.update()
        searchmod.keyword(store, q)
        fresh.append((time.perf_counter() - t) * 1000)
    cli, grep, rg = [], [], []
    has_rg = shutil.which("rg")
    for q in QUERIES:
        wall, _, _ = run_child([py, "-m", "prima_memory", "--workspace", str(ws), "search", "--mode",
                                "keyword", "--json", "--", q], env)
        cli.append(wall * 1000)
        word = q.split()[0]
        t = time.perf_counter()
        subprocess.run(["grep", "-r", "-c", "-i", "-F", "--include=*.jsonl", word, str(pdir)],
                       stdout=subprocess.DEVNULL)
        grep.append((time.perf_counter() - t) * 1000)
        if has_rg:
            t = time.perf_counter()
            subprocess.run(["rg", "-c", "-i", "-F", word, str(pdir)], stdout=subprocess.DEVNULL)
            rg.append((time.perf_counter() - t) * 1000)
    report["search"] = {
        "queries": len(QUERIES), "results_per_query": found,
        "inprocess_ms_p50": pct(inproc, 50), "inprocess_ms_p95": pct(inproc, 95),
        "inprocess_with_refresh_ms_p50": pct(fresh, 50), "inprocess_with_refresh_ms_p95": pct(fresh, 95),
        "cli_ms_p50": pct(cli, 50), "cli_ms_p95": pct(cli, 95),
        "grep_ms_p50": pct(grep, 50), "grep_ms_p95": pct(grep, 95),
        "grep_over_inprocess_p50": pct(grep, 50) / pct(inproc, 50),
        "grep_over_cli_p50": pct(grep, 50) / pct(cli, 50),
        "per_query_ms": dict(zip(QUERIES, [round(x, 2) for x in inproc])),
    }
    if rg:
        report["search"].update(rg_ms_p50=pct(rg, 50), rg_over_inprocess_p50=pct(rg, 50) / pct(inproc, 50))
    mem.close()
    target_file.write_bytes(original)

    # -- imports on the keyword path ----------------------------------------------------------
    p = subprocess.run([py, "-X", "importtime", "-m", "prima_memory", "--workspace", str(ws), "search",
                        "--mode", "keyword", "--json", "test"], env=env, capture_output=True, text=True)
    heavy = sorted({ln.split("|")[-1].strip().split(".")[0] for ln in p.stderr.splitlines()
                    if "import time:" in ln and any(h in ln for h in ("torch", "sentence_transformers",
                                                                     "transformers", "numpy"))})
    total_us = sum(int(ln.split("|")[0].split(":")[1]) for ln in p.stderr.splitlines()
                   if ln.startswith("import time:") and ln.split("|")[0].split(":")[1].strip().isdigit())
    report["imports"] = {"heavy_modules_imported": heavy, "total_import_ms": total_us / 1000}
    report["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version(),
                         "platform": platform.platform(), "processor": _cpu_name()}
    print(json.dumps(report, indent=2))


def append_exchange(path: Path, i: int) -> str:
    """Append one prompt and one reply to a session file; returns its session id."""
    import orjson
    last = None
    with open(path, "rb") as f:
        for line in f:
            last = line
    base = orjson.loads(last)
    sid, cwd = base.get("sessionId"), base.get("cwd")
    ts = "2026-11-20T10:00:%02d.000Z" % (i % 60)
    u = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": sid,
         "version": "2.1.100", "gitBranch": "main", "type": "user", "uuid": f"bench-u-{i}",
         "timestamp": ts, "message": {"role": "user", "content": f"benchmark appended question {i} about zqappend{i}"}}
    a = {"parentUuid": f"bench-u-{i}", "isSidechain": False, "userType": "external", "cwd": cwd,
         "sessionId": sid, "version": "2.1.100", "gitBranch": "main", "type": "assistant",
         "uuid": f"bench-a-{i}", "timestamp": ts,
         "message": {"id": f"msg_bench_{i}", "type": "message", "role": "assistant", "model": "claude",
                     "content": [{"type": "text", "text": f"benchmark appended answer {i}"}]}}
    with open(path, "ab") as f:
        f.write(orjson.dumps(u) + b"\n" + orjson.dumps(a) + b"\n")
    return sid


def _cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


if __name__ == "__main__":
    main()
