"""MCP server benchmarks (issue: MCP server). One command:

    .venv/bin/python bench/mcp.py [--size M] [--runs 20] [--starts 5] [--peer-only | --no-peer]
                                  [--edges MODULE:FUNCTION]

On the benchmark history (bench/run.py's), index and embeddings current, our `prima-memory mcp`
over stdio, driven by the `mcp` SDK's client:
- warm server: `search_sessions` (combined and keyword) p50/p95 over bench/run.py's queries,
  `find_similar` over bench/semantic.py's, `get_file_history` on the path changed most;
- server start (process spawned) to initialize done, to the first combined answer, and to the
  first keyword answer (separate starts, median of --starts);
- edge maintenance per new session (--edges names the function; skipped while it is missing).
In the same run, the peer `claude-historian-mcp` (npm, PEER_VERSION) on the same history through
the same client: `search_conversations` p50/p95 warm, start to its first answer, and whether it
finds the sessions ours finds (its answer names no session: its messages are traced back to the
transcripts by their text). Prints a markdown report and writes bench/out/mcp.json.
"""
from __future__ import annotations

import argparse
import collections
import importlib
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import asynccontextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# run as a script, this file's folder comes first on the path, and its name hides the SDK's
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]
sys.path.insert(0, str(REPO))

import anyio  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from bench.run import NOW, QUERIES, SIZES, _cpu_name, pct, prepare  # noqa: E402
from bench.semantic import QUERIES as NL_QUERIES, cli  # noqa: E402

PEER, PEER_VERSION = "claude-historian-mcp", "1.0.3"
PEER_DIR = REPO / "bench" / "out" / "peer"
PEER_ENTRY = PEER_DIR / "node_modules" / PEER / "dist" / "index.js"
LIMIT = 10
TIMEOUT = 300  # seconds for any one answer: a hung server fails the run instead of stalling it


def ms_since(t: float) -> float:
    return (time.perf_counter() - t) * 1000


def stats(xs: list[float]) -> dict:
    return {"p50": round(pct(xs, 50), 1), "p95": round(pct(xs, 95), 1), "n": len(xs)}


def cycle(items, n):
    return [items[i % len(items)] for i in range(n)]


# -- MCP client --------------------------------------------------------------------------------

@asynccontextmanager
async def connect(params: StdioServerParameters, errlog):
    """A started server: yields (session, spawn time, ms from spawn to initialize done)."""
    t0 = time.perf_counter()
    async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w) as s:
        with anyio.fail_after(TIMEOUT):
            await s.initialize()
        yield s, t0, ms_since(t0)


async def call(s: ClientSession, tool: str, args: dict) -> tuple[float, str]:
    """(ms, text of the answer); a tool error ends the run with its message."""
    t = time.perf_counter()
    with anyio.fail_after(TIMEOUT):
        r = await s.call_tool(tool, args)
    took = ms_since(t)
    text = "".join(c.text for c in r.content if getattr(c, "type", None) == "text")
    if r.is_error:
        raise SystemExit(f"{tool} {args} answered an error: {text[:800]}")
    return took, text


# -- our server --------------------------------------------------------------------------------

def ours_params(env: dict, ws: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, cwd=str(REPO), env=env,
                                 args=["-m", "prima_memory", "--workspace", str(ws), "mcp"])


def check_ours(env, ws) -> None:
    p = subprocess.run([sys.executable, "-m", "prima_memory", "--workspace", str(ws), "mcp",
                        "--help"], env=env, capture_output=True, text=True, timeout=60)
    if p.returncode:
        raise SystemExit(f"our MCP server is not there yet: `prima-memory mcp --help` exited "
                         f"{p.returncode}: {p.stderr.strip()[-600:]}\n(--peer-only meanwhile)")


async def bench_ours(env, ws, path, runs, starts, errlog) -> dict:
    async def search(s, q, mode):
        return await call(s, "search_sessions", {"query": q, "limit": LIMIT, "mode": mode})

    async def similar(s, q):
        return await call(s, "find_similar", {"query": q, "limit": LIMIT})

    p = ours_params(env, ws)
    start = collections.defaultdict(list)
    for _ in range(starts):  # combined first and keyword first, interleaved
        for mode in ("combined", "keyword"):
            async with connect(p, errlog) as (s, t0, init):
                await search(s, QUERIES[0], mode)
                start[f"first_{mode}_ms"].append(ms_since(t0))
                start["initialize_ms"].append(init)
    out = {"start": {k: round(pct(v, 50)) for k, v in start.items()}, "file_history_path": path}
    async with connect(p, errlog) as (s, _t0, _init):
        top = {}  # the warm-up's answers: compared with the peer's
        for mode in ("combined", "keyword"):
            top[mode] = {}
            for q in QUERIES:
                text = (await search(s, q, mode))[1]
                top[mode][q] = [r["session_id"] for r in json.loads(text)["results"]]
        for q in NL_QUERIES:
            await similar(s, q)
        await call(s, "get_file_history", {"path": path})
        for mode in ("combined", "keyword"):
            out[f"search_{mode}_ms"] = stats([(await search(s, q, mode))[0]
                                              for q in cycle(QUERIES, runs)])
        out["find_similar_ms"] = stats([(await similar(s, q))[0] for q in cycle(NL_QUERIES, runs)])
        out["get_file_history_ms"] = stats([
            (await call(s, "get_file_history", {"path": path}))[0] for _ in range(runs)])
    out["top"] = top
    return out


def ensure_current(env, ws) -> dict:
    """Index and embeddings current, as bench/semantic.py leaves them."""
    cli(env, ws, "index")
    if cli(env, ws, "status")[1]["semantic"]["pending"]:
        t = time.perf_counter()
        cli(env, ws, "embed")
        print(f"embedded the pending exchanges in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    sem = cli(env, ws, "status")[1]["semantic"]
    assert sem["available"] and sem["pending"] == 0, sem
    return sem


def changed_most(env, ws) -> str:
    """The workspace-relative path with the most changes in the history."""
    sessions = cli(env, ws, "files")[1]["sessions"]  # (one entry per session and file)
    return collections.Counter(f["relative"] for s in sessions for f in s["files"]
                               ).most_common(1)[0][0]


# -- edge maintenance (placeholder until the function is exposed) -------------------------------

def edge_function(spec: str):
    mod, _, name = spec.partition(":")
    try:
        return getattr(importlib.import_module(mod), name)
    except (ImportError, AttributeError):
        return None


def bench_edges(fn, env, ws, pdir, rounds: int) -> dict:
    """Per new session (synthetic, about an average M session's size): index it with the CLI (as
    the Stop hook does), embed it in-process, then time `fn` (the SIMILAR_TO step) linking it,
    as the MCP server does, holding the vectors (it reads only the new ones). The sessions added
    are removed and pruned from the index at the end."""
    from prima_memory.memory import Memory
    from prima_memory.semantic import key_of
    from bench.synthetic import generate_history
    mem = Memory(str(ws))
    key = key_of(mem.embedder())
    t = time.perf_counter()
    first = fn(mem.store(), key)  # whatever was pending before: not per session
    first_ms = ms_since(t)
    added, per, embed, linked = [], [], [], []
    try:
        for i in range(rounds):
            with tempfile.TemporaryDirectory() as d:
                src = generate_history(d, str(ws), 1, seed=1000 + i, now=NOW + 86400,
                                       target_bytes=300_000)["project_dir"]
                for f in Path(src).iterdir():
                    shutil.move(str(f), str(pdir / f.name))
                    added.append(pdir / f.name)
            cli(env, ws, "index")
            t = time.perf_counter()
            mem.embed(None)  # embeds only: linking is what is timed
            embed.append(ms_since(t))
            t = time.perf_counter()
            got = fn(mem.store(), key)
            per.append(ms_since(t))
            linked.append(got[0])
            print(f"edges after new session {i + 1}: {per[-1]:.0f} ms ({got})", file=sys.stderr)
        from prima_memory import semantic
        semantic._LOADED.clear()  # what a fresh process (the background embedder) reads first
        t = time.perf_counter()
        semantic._matrix(mem.store(), key, 384)
        fresh_read = ms_since(t)
    finally:
        mem.close()
        for f in added:
            shutil.rmtree(f) if f.is_dir() else f.unlink(missing_ok=True)
        cli(env, ws, "index", "--prune")  # a session whose file is gone is kept unless pruned
    return {"function": f"{fn.__module__}:{fn.__qualname__}", "first_call_ms": round(first_ms),
            "first_call_returned": repr(first), "per_new_session_ms": stats(per),
            "exchanges_linked_per_session": linked, "fresh_process_vector_read_ms": round(fresh_read),
            "embed_per_new_session_ms": stats(embed)}


# -- the peer ----------------------------------------------------------------------------------

def peer_setup(config: Path) -> tuple[StdioServerParameters, str]:
    """Installs the peer if needed. It reads os.homedir()/.claude/projects and honours no other
    setting, so it gets a HOME of its own whose .claude is the benchmark history's config dir
    (never the real ~/.claude)."""
    if not PEER_ENTRY.exists():
        subprocess.run(["npm", "install", "--prefix", str(PEER_DIR), f"{PEER}@{PEER_VERSION}"],
                       check=True, capture_output=True)
    got = json.loads((PEER_ENTRY.parent.parent / "package.json").read_text())["version"]
    assert got == PEER_VERSION, f"{PEER} {got} installed, {PEER_VERSION} wanted"
    home = PEER_DIR / "home" / config.parent.name
    link = home / ".claude"
    home.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() and link.resolve() != config.resolve():
        link.unlink()
    if not link.is_symlink():
        link.symlink_to(config.resolve(), target_is_directory=True)
    assert link.resolve() == config.resolve()
    node = shutil.which("node") or "node"
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "PATH": os.environ["PATH"]}
    params = StdioServerParameters(command=node, args=[str(PEER_ENTRY)], env=env, cwd=str(home))
    return params, version


def peer_messages(text: str) -> list[str]:
    """The messages' text of a search_conversations answer: a header line, a blank line, then
    {"results": [{type, ts, content, project, score, ctx}]} (dist/formatter.js)."""
    return [r["content"] for r in json.loads(text.split("\n\n", 1)[1])["results"]]


def _key(text: str) -> str:
    return " ".join(text.split())[:120]


def transcript_texts(projects: Path) -> dict[str, set[str]]:
    """A message's text as the peer extracts it (dist/utils.js extractContentFromMessage), its
    first 120 characters -> the sessions holding it: the peer's answer names no session, so its
    messages are traced back by text. Top-level transcripts only, like the peer."""
    import orjson

    def block(b: dict) -> str:
        t = b.get("type")
        return (b.get("text", "") if t == "text" else f"[Tool: {b.get('name')}]" if t == "tool_use"
                else "[Tool Result]" if t == "tool_result" else "")
    out: dict[str, set[str]] = collections.defaultdict(set)
    for f in projects.glob("*/*.jsonl"):
        with open(f, "rb") as fh:
            for line in fh:
                try:
                    d = orjson.loads(line)
                    c = (d.get("message") or {}).get("content")
                except (orjson.JSONDecodeError, AttributeError):
                    continue
                if isinstance(c, list):
                    c = " ".join(block(b) for b in c if isinstance(b, dict)).strip()
                if isinstance(c, str) and c:
                    out[_key(c)].add(d.get("sessionId") or f.stem)
    return out


def peer_reading_set(projects: Path) -> set[str]:
    """The transcripts search_conversations reads at all (dist/search.js performOptimizedSearch,
    processProjectFocused): the 4 newest *.jsonl (by mtime) of each of the max(8, limit / 2)
    newest project folders."""
    def newest(paths):
        return sorted(paths, key=lambda p: p.stat().st_mtime, reverse=True)
    dirs = newest(d for d in projects.iterdir() if d.is_dir())[:max(8, math.ceil(LIMIT / 2))]
    return {f.stem for d in dirs for f in newest(d.glob("*.jsonl"))[:4]}


async def bench_peer(params, runs, errlog) -> dict:
    async def search(s, q):
        return await call(s, "search_conversations", {"query": q, "limit": LIMIT})

    # One process per query for its answers and start times: it caches each parsed transcript
    # with the relevance scores of the query that parsed it (dist/search.js processJsonlFile),
    # so in a warm process every later query is ranked with the first one's scores.
    init, first, answers = [], [], {}
    for q in QUERIES:
        async with connect(params, errlog) as (s, t0, init_ms):
            text = (await search(s, q))[1]
            first.append(ms_since(t0))
            init.append(init_ms)
            answers[q] = peer_messages(text)
    async with connect(params, errlog) as (s, _t0, _init):
        for q in QUERIES:  # warm-up, as for ours
            await search(s, q)
        warm = [(await search(s, q))[0] for q in cycle(QUERIES, runs)]
    return {"search_ms": stats(warm), "answers": answers, "start": {
        "initialize_ms": round(pct(init, 50)), "first_answer_ms": round(pct(first, 50))}}


def compare(top: dict[str, list[str]] | None, answers: dict[str, list[str]], texts: dict,
            visible: set[str]) -> dict:
    """Per query: the sessions the peer's messages come from, against our top 10."""
    rows = {}
    for q, msgs in answers.items():
        found = [texts.get(_key(m), set()) for m in msgs]
        peer = set().union(*found)
        row = {"peer_messages": len(msgs), "peer_sessions": sorted(peer),
               "peer_unattributed": sum(1 for f in found if not f),
               "peer_ambiguous": sum(1 for f in found if len(f) > 1)}
        if top is not None:
            ours = top[q]
            row.update(ours=ours, overlap=len(set(ours) & peer),
                       top1_found=bool(ours) and ours[0] in peer,
                       ours_readable_by_peer=len(set(ours) & visible))
        rows[q] = row
    return rows


# -- report ------------------------------------------------------------------------------------

def report(r: dict) -> str:
    m, o, p = r["machine"], r.get("ours"), r.get("peer")
    out = ["# MCP server benchmarks", "",
           f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, node {m['node']}. "
           f"History {r['size']} ({r['sessions']} sessions). Command: `{r['command']}`", ""]
    if o:
        out += ["## prima-memory mcp (warm server, index and embeddings current)", "",
                "| tool | p50 | p95 |", "|---|---|---|"]
        for name, k in (("search_sessions, combined", "search_combined_ms"),
                        ("search_sessions, keyword", "search_keyword_ms"),
                        ("find_similar", "find_similar_ms"),
                        (f"get_file_history (`{o['file_history_path']}`)", "get_file_history_ms")):
            out.append(f"| {name} | {o[k]['p50']:.1f} ms | {o[k]['p95']:.1f} ms |")
        st, e = o["start"], r.get("edges")
        out += ["", f"Server start (median of {r['starts']}): initialize done "
                f"{st['initialize_ms']} ms; first combined answer {st['first_combined_ms']} ms; "
                f"first keyword answer {st['first_keyword_ms']} ms.", ""]
        out.append(f"Edge maintenance per new session: {e['per_new_session_ms']['p50']:.0f} ms p50, "
                   f"{e['per_new_session_ms']['p95']:.0f} ms p95, vectors re-read included "
                   f"({e['function']}, {e['exchanges_linked_per_session']} exchanges linked; "
                   f"embedding that session: {e['embed_per_new_session_ms']['p50']:.0f} ms p50); "
                   f"a fresh process (the background embedder) first reads every vector: "
                   f"{e['fresh_process_vector_read_ms']} ms."
                   if e else
                   f"Edge maintenance per new session: not measured ({r['edges_skipped']}).")
    if p:
        c = r["compare"]
        out += [""] * bool(o) + [
                f"## {PEER} {PEER_VERSION}: `search_conversations`, same history and client",
                "", f"Warm process: p50 {p['search_ms']['p50']:.1f} ms, p95 "
                f"{p['search_ms']['p95']:.1f} ms. Start (median of {len(QUERIES)}): initialize "
                f"done {p['start']['initialize_ms']} ms, first answer "
                f"{p['start']['first_answer_ms']} ms.",
                f"It reads {len(c['peer_reads'])} transcripts at all, the 4 newest of each project "
                f"folder, of {r['sessions']}.", ""]
        q = c["queries"]
        if not o:
            out += ["| query | peer: messages / sessions |", "|---|---|"]
            out += [f"| {k} | {v['peer_messages']} / {len(v['peer_sessions'])} |"
                    for k, v in q.items()]
            return "\n".join(out)
        out += ["| query | ours: top-10 sessions (combined) | peer: messages / sessions | both "
                "| our top 1 found by peer | our top 10 the peer reads |",
                "|---|---|---|---|---|---|"]
        out += [f"| {k} | {len(v['ours'])} | {v['peer_messages']} / {len(v['peer_sessions'])} | "
                f"{v['overlap']} | {'yes' if v['top1_found'] else 'no'} | "
                f"{v['ours_readable_by_peer']} |" for k, v in q.items()]
        out.append("")
        for mode, rows in (("Combined", q.values()), ("Keyword", c["keyword"].values())):
            top1, both = sum(v["top1_found"] for v in rows), sum(v["overlap"] for v in rows)
            out.append(f"{mode}: of our top 1 the peer finds {top1} of {len(rows)}; of our top-10 "
                       f"sessions {both} of {sum(len(v['ours']) for v in rows)}.")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", choices=SIZES, default="M")
    ap.add_argument("--out", default=str(REPO / "bench" / "out"))
    ap.add_argument("--runs", type=int, default=20, help="timed calls per tool on a warm server")
    ap.add_argument("--starts", type=int, default=5, help="server starts per first-answer measure")
    ap.add_argument("--edges", default="prima_memory.semantic:link",
                    help="MODULE:FUNCTION bringing the edges current: f(store, vector key)")
    ap.add_argument("--edge-runs", type=int, default=3, help="new sessions for the edge measure")
    side = ap.add_mutually_exclusive_group()
    side.add_argument("--peer-only", action="store_true")
    side.add_argument("--no-peer", action="store_true")
    args = ap.parse_args()

    out, config, ws, pdir = prepare(args.size, args.out)
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(config), HOME=str(out / "home"),
               PRIMA_PYTHON=sys.executable, PRIMA_BACKGROUND="0")
    env.pop("PRIMA_EXPECTED_HOST", None)
    command = " ".join([".venv/bin/python", "bench/mcp.py", *sys.argv[1:]])
    res = {"size": args.size, "sessions": len(list(pdir.glob("*.jsonl"))), "runs": args.runs,
           "starts": args.starts, "command": command,
           "queries": QUERIES, "find_similar_queries": NL_QUERIES,
           "machine": {"cpu": _cpu_name(), "cores": os.cpu_count(), "node": "-",
                       "python": platform.python_version(), "platform": platform.platform()}}
    errlog = open(Path(args.out) / "mcp-stderr.log", "w")  # both servers' stderr, for a post-mortem

    if not args.peer_only:
        res["semantic"] = ensure_current(env, ws)
        path = changed_most(env, ws)
        check_ours(env, ws)
        res["ours"] = anyio.run(bench_ours, env, ws, path, args.runs, args.starts, errlog)
        print("ours:", {k: v for k, v in res["ours"].items() if k != "top"}, file=sys.stderr)
    if not args.no_peer:
        params, res["machine"]["node"] = peer_setup(config)
        res["machine"]["peer"] = f"{PEER}@{PEER_VERSION}"
        res["peer"] = anyio.run(bench_peer, params, args.runs, errlog)
        print("peer:", {k: v for k, v in res["peer"].items() if k != "answers"}, file=sys.stderr)
        answers, projects = res["peer"]["answers"], config / "projects"
        texts = transcript_texts(projects) if any(answers.values()) else {}
        visible = peer_reading_set(projects)
        top = res.get("ours", {}).get("top")
        res["compare"] = {"peer_reads": sorted(visible),
                          "queries": compare(top and top["combined"], answers, texts, visible)}
        if top:
            res["compare"]["keyword"] = compare(top["keyword"], answers, texts, visible)
        res["peer"]["answers"] = {q: [m[:200] for m in v] for q, v in answers.items()}  # JSON size
    if not args.peer_only:  # last: it adds sessions to the history (and takes them out again)
        fn = edge_function(args.edges)
        if fn is None:
            res["edges_skipped"] = f"{args.edges} is missing"
        else:
            res["edges"] = bench_edges(fn, env, ws, pdir, args.edge_runs)
    (Path(args.out) / "mcp.json").write_text(json.dumps(res, indent=2))
    print(report(res))


if __name__ == "__main__":
    main()
