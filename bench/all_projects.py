"""Search across all projects: what `--all-projects` (and the MCP tools' scope "all") costs as the
number of projects on the machine grows.

    .venv/bin/python bench/all_projects.py [--projects 10,50,200] [--sessions 40] [--runs 20] \
        [--out /tmp/prima-memory-bench] [--combined-upto 50] [--embedder onnx|sentence-transformers]

For each project count P, a history is generated once into <out>/allp-P (deterministic: project N
has seed 1000+N): P project folders <out>/allp-P/code/project-NNN, each with --sessions small
Claude Code sessions (bench/synthetic.py's, cut to their first few exchanges, about 10 KB each,
subagent files left out), one Codex rollout for every 5 projects and one VS Code chat for every
10 (half of each in a project's folder, half in a folder of their own). Every session's first
prompt carries a word of its own, zqpPPPnSSS (zqcodexJJJ, zqvscodeJJJ for the others), so a rare
query has exactly one answer on the machine.

Then, in one run (every figure is a process's start to its exit through the real CLI, or a tool
call's round trip through one MCP server, so ratios within a column are meaningful):
  - `python -c pass`, the floor;
  - the first `search --all-projects WORD --mode keyword` from nothing (no memory anywhere, no
    project with its own .prima-memory), once; and again from nothing under a pseudo-terminal,
    where a progress bar ("indexing project") should show on stderr;
  - warm keyword `search --all-projects` over 20 fixed queries (QUERIES), `recent --all-projects`;
  - for P <= --combined-upto: `index --all-projects --worker` (every project indexed, every
    exchange embedded and linked), then the warm combined search (the default mode);
  - one MCP server (`prima-memory --workspace project-000 mcp`, the SDK's stdio client):
    search_sessions with scope "all" in keyword mode, then combined (when the vectors are
    current), and recent_sessions with scope "all";
  - for comparison, the keyword search of one project (`search --workspace project-000`).
--embedder sets PRIMA_EMBEDDER for every process; unset, prima-memory loads its ONNX build when
that passed its verification, else sentence-transformers (whose import alone takes 15-20 s on a
busy 2-core machine: it then dominates every combined figure; `index --worker` embeds some 4
exchanges a second instead of about 30). --projects starts at 3 and --sessions at 10: the rare
queries name projects 0-2 and sessions 0-9.
Prints one JSON document on stdout, and a markdown table (rows: measures, columns: P) on
stderr. Everything prima-memory reads or writes (HOME, CLAUDE_CONFIG_DIR, CODEX_HOME, the VS Code
user folder, XDG_CONFIG_HOME, XDG_DATA_HOME) is under <out>/allp-P; the state is made anew on
every run, the history is kept.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# run as a script, this file's folder comes first on the path, and bench/mcp.py hides the SDK's
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]
sys.path.insert(0, str(REPO))

from bench.hooks import timed  # noqa: E402
from bench.run import NOW, _cpu_name, pct  # noqa: E402

GENERATION = 2  # bump when what is generated changes: a cached history of another one is redone
EXCHANGES = 4  # a session keeps at most its first 4 exchanges...
SESSION_BYTES = 5000  # ...and no new one once it holds this much (so 1-4 exchanges, ~10 KB)
TOOL_CHARS = 400  # tool inputs and outputs cut to this: what makes a session big is not its text

# 20 fixed queries, words the generator writes (counted on its transcripts): common, less common,
# rare (one session on the machine: the markers, in projects 0-2, sessions 0-9), several words.
QUERIES = [
    "test", "config", "error", "import", "migration",
    "token", "schema", "react", "deploy", "backoff",
    "zqp000n000", "zqp001n004", "zqp002n009", "zqcodex000", "zqvscode000",
    "failing test", "invalid token", "schema migration", "rate limiting", "retry backoff",
]
RARE = {q for q in QUERIES if q.startswith("zq")}

# Codex and VS Code sessions: a few plain exchanges each ({m}: a module name)
OTHER_EXCHANGES = [
    ("why does the {m} worker retry forever after a timeout?",
     "The retry loop had no cap: added exponential backoff with at most five tries."),
    ("the flaky test in {m} fails in docker but passes locally",
     "It depended on the container's timezone: the test now sets TZ=UTC itself."),
    ("add rate limiting to the {m} webhook handler",
     "Added a token bucket per tenant in front of the webhook handler, its limits in the config."),
]
MODULES = ["billing", "ingest", "cache", "export", "auth", "search", "scheduler"]

FAILURES: list[dict] = []


# -- the history ---------------------------------------------------------------------------------

def _cut(v):
    """Long strings in a tool's input or output shortened (the rest of the line as it was)."""
    if isinstance(v, str):
        return v if len(v) <= TOOL_CHARS else v[:TOOL_CHARS] + "\n[...]"
    if isinstance(v, list):
        return [_cut(x) for x in v]
    if isinstance(v, dict):
        return {k: _cut(x) for k, x in v.items()}
    return v


def _is_prompt(d: dict) -> bool:
    """A person's prompt: a user line that is not a tool's result (nor meta, nor a subagent's)."""
    if d.get("type") != "user" or d.get("isMeta") or d.get("isSidechain"):
        return False
    c = (d.get("message") or {}).get("content")
    return isinstance(c, str) or (isinstance(c, list) and not any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in c))


def _mark(d: dict, word: str) -> None:
    msg = d["message"]
    if isinstance(msg["content"], str):
        msg["content"] += f" ({word})"
        return
    for b in msg["content"]:
        if isinstance(b, dict) and b.get("type") == "text":
            b["text"] += f" ({word})"
            return
    msg["content"].append({"type": "text", "text": f"({word})"})


def small_session(path: Path, word: str) -> tuple[int, int]:
    """Cut a generated session to its first exchanges, at an exchange's end (so what is kept is
    a whole, shorter session), and mark its first prompt with `word`. Returns (bytes, exchanges)."""
    st = path.stat()
    kept, size, prompts = [], 0, 0
    for line in path.read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        if _is_prompt(d):
            if prompts >= EXCHANGES or size >= SESSION_BYTES:
                break
            if prompts == 0:
                _mark(d, word)
            prompts += 1
        if "toolUseResult" in d:
            d["toolUseResult"] = _cut(d["toolUseResult"])
        content = (d.get("message") or {}).get("content")
        for b in content if isinstance(content, list) else ():
            if isinstance(b, dict) and b.get("type") in ("tool_result", "tool_use", "thinking"):
                for k in ("content", "input", "thinking", "signature"):
                    if k in b:
                        b[k] = _cut(b[k])
        s = json.dumps(d, ensure_ascii=False, separators=(",", ":")) + "\n"
        kept.append(s)
        size += len(s.encode())
    path.write_text("".join(kept), encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the session's own time, as generated
    return size, prompts


def codex_rollout(home: Path, j: int, cwd: str, start: float) -> Path:
    """A Codex rollout (the format tests/test_all_projects.py's `codex` writes), 3 exchanges."""
    sid = f"0199a000-0000-7000-8000-{j:012d}"
    day, stamp = time.strftime("%Y/%m/%d", time.gmtime(start)), \
        time.strftime("%Y-%m-%dT%H-%M-%S", time.gmtime(start))
    path = home / "sessions" / day / f"rollout-{stamp}-{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)

    def iso(t):
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))

    def line(t, kind, payload):
        return json.dumps({"timestamp": iso(t), "type": kind, "payload": payload}) + "\n"

    def msg(role, text):
        kind = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}
    out = [line(start, "session_meta", {"id": sid, "timestamp": iso(start), "cwd": cwd})]
    for k, (prompt, answer) in enumerate(OTHER_EXCHANGES):
        prompt = prompt.format(m=MODULES[(j + k) % len(MODULES)])
        if k == 0:
            prompt += f" (zqcodex{j:03d})"
        out += [line(start + 120 * k, "response_item", msg("user", prompt)),
                line(start + 120 * k + 60, "response_item", msg("assistant", answer))]
    path.write_text("".join(out))
    os.utime(path, (start + 400, start + 400))
    return path


def vscode_chat(user_dir: Path, j: int, folder: str, start: float) -> Path:
    """A VS Code Copilot chat (the format tests/test_all_projects.py's `vscode` writes)."""
    sid = f"5e55c0de-0000-4000-8000-{j:012d}"
    space = user_dir / "workspaceStorage" / f"bench{j:04d}"
    (space / "chatSessions").mkdir(parents=True, exist_ok=True)
    (space / "workspace.json").write_text(json.dumps({"folder": "file://" + urllib.parse.quote(folder)}))
    requests = []
    for k, (prompt, answer) in enumerate(OTHER_EXCHANGES):
        prompt = prompt.format(m=MODULES[(j + k + 3) % len(MODULES)])
        if k == 0:
            prompt += f" (zqvscode{j:03d})"
        requests.append({"requestId": f"r{k}", "message": {"text": prompt, "parts": []},
                         "response": [{"value": answer}], "timestamp": int((start + 120 * k) * 1000),
                         "agent": {"extensionId": {"value": "GitHub.copilot-chat"}}})
    doc = {"version": 3, "sessionId": sid, "creationDate": int(start * 1000),
           "responderUsername": "GitHub Copilot", "requests": requests}
    path = space / "chatSessions" / f"{sid}.json"
    path.write_text(json.dumps(doc))
    os.utime(path, (start + 400, start + 400))
    return path


def history(out: Path, projects: int, sessions: int) -> dict:
    """The history of `projects` projects (generated once; its manifest, written last, says it
    is whole). Project folders are named in the transcripts, so it is made where it stays."""
    from bench.synthetic import generate_history
    root = out / f"allp-{projects}"
    manifest = root / "history.json"
    want = {"generation": GENERATION, "projects": projects, "sessions": sessions}
    if manifest.is_file():
        got = json.loads(manifest.read_text())
        if {k: got.get(k) for k in want} == want:
            return got
    shutil.rmtree(root, ignore_errors=True)
    t = time.perf_counter()
    config, code = root / "claude", root / "code"
    codex_home, vscode_user = root / "codex", root / "vscode" / "User"
    total = exchanges = 0
    for i in range(projects):
        ws = code / f"project-{i:03d}"
        ws.mkdir(parents=True)
        # target_bytes=1: the generator's smallest sessions (it cannot go below ~10-300 KB
        # each; small_session cuts them further)
        got = generate_history(config, str(ws), sessions, seed=1000 + i, target_bytes=1,
                               now=NOW, images=0)
        pdir = Path(got["project_dir"])
        for p in pdir.iterdir():  # subagents' files: not what a small text-like session has
            if p.is_dir():
                shutil.rmtree(p)
            elif p.name.startswith("agent-"):
                p.unlink()
        for n, sid in enumerate(got["sessions"]):
            size, ex = small_session(pdir / f"{sid}.jsonl", f"zqp{i:03d}n{n:03d}")
            total += size
            exchanges += ex
    extra = set()  # folders found only from Codex or VS Code
    n_codex, n_vscode = math.ceil(projects / 5), math.ceil(projects / 10)
    for j in range(n_codex):  # even: inside a project's folder; odd: a folder of its own
        cwd = code / f"project-{5 * j:03d}" / "services" if j % 2 == 0 else code / f"codex-only-{j:03d}"
        cwd.mkdir(parents=True, exist_ok=True)
        extra |= {str(cwd)} if j % 2 else set()
        total += codex_rollout(codex_home, j, str(cwd), NOW - 86400 * (3 * j + 1)).stat().st_size
    for j in range(n_vscode):
        folder = code / f"project-{10 * j:03d}" if j % 2 == 0 else code / f"vscode-only-{j:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        extra |= {str(folder)} if j % 2 else set()
        total += vscode_chat(vscode_user, j, str(folder), NOW - 86400 * (3 * j + 2)).stat().st_size
    got = dict(want, claude_sessions=projects * sessions, codex_rollouts=n_codex,
               vscode_chats=n_vscode, sessions_total=projects * sessions + n_codex + n_vscode,
               claude_prompts=exchanges, bytes=total, expected_projects=projects + len(extra),
               generated_s=round(time.perf_counter() - t, 1))
    manifest.write_text(json.dumps(got, indent=1))
    return got


def describe(h: dict) -> str:
    return (f"{h['projects']} projects: {h['claude_sessions']} Claude Code sessions "
            f"({h['claude_prompts']} prompts), {h['codex_rollouts']} Codex rollouts, "
            f"{h['vscode_chats']} VS Code chats, {h['bytes'] / 1e6:.1f} MB")


# -- running it ------------------------------------------------------------------------------------

def environment(root: Path, embedder: str | None) -> dict:
    """Every folder prima-memory reads or writes under `root`: nothing of the real home's."""
    state = root / "state"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CLAUDE", "PRIMA_", "CODEX", "XDG_"))}  # (PRIMA_EXPECTED_HOST too)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # users have .pyc files: no recompiling every start
    env.update(HOME=str(state / "home"), CLAUDE_CONFIG_DIR=str(root / "claude"),
               CODEX_HOME=str(root / "codex"), PRIMA_VSCODE_USER_DIRS=str(root / "vscode" / "User"),
               XDG_CONFIG_HOME=str(state / "config"), XDG_DATA_HOME=str(state / "data"),
               XDG_CACHE_HOME=str(state / "cache"), PRIMA_BACKGROUND="0",
               PRIMA_PYTHON=sys.executable)
    if embedder:  # else prima-memory's own choice: the ONNX build when verified
        env["PRIMA_EMBEDDER"] = embedder
    return env


def from_nothing(root: Path) -> None:
    """No memory anywhere: the user-level store (with the state around it) and any project's
    own .prima-memory (the one-project search of a previous run makes project-000's) gone."""
    shutil.rmtree(root / "state", ignore_errors=True)
    for d in (root / "code").glob("*/.prima-memory"):
        shutil.rmtree(d)
    (root / "state" / "home").mkdir(parents=True)


def run(what: str, cmd: list[str], env: dict) -> tuple[float | None, dict | None]:
    """One CLI process, start to exit: (ms, its --json answer), or (None, None) when it failed
    (said on stderr, kept in the report's failures)."""
    try:
        ms, out, _err = timed(cmd, env)
    except SystemExit as e:  # bench.hooks.timed's way of saying the command failed
        if not any(f["what"] == what for f in FAILURES):
            print(f"FAILED {what}: {e}", file=sys.stderr)
        FAILURES.append({"what": what, "error": str(e)})
        return None, None
    try:
        return ms, json.loads(out)
    except ValueError:
        return ms, None


def under_terminal(cmd: list[str], env: dict) -> tuple[float, int, str]:
    """A CLI process with a pseudo-terminal for stderr (stdout a pipe): (ms, exit code, what
    it wrote to stderr)."""
    import pty
    master, slave = pty.openpty()
    seen: list[bytes] = []

    def drain():  # read the terminal as the child writes, or a long bar would block it
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every end of the terminal closed (the child is gone)
                return
            if not data:
                return
            seen.append(data)
    t = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=slave)
    os.close(slave)
    th = threading.Thread(target=drain, daemon=True)
    th.start()
    p.communicate()
    ms = (time.perf_counter() - t) * 1000
    th.join(5)
    os.close(master)
    return ms, p.returncode, b"".join(seen).decode(errors="replace")


def summary(xs: list[float]) -> dict | None:
    if not xs:
        return None
    return {"p50_ms": round(pct(xs, 50), 1), "p95_ms": round(pct(xs, 95), 1), "n": len(xs)}


def once(ms: float | None) -> float | None:
    return None if ms is None else round(ms, 1)


def mcp_calls(env: dict, ws: Path, reps: int, runs: int, combined: bool, errlog: Path) -> dict:
    """One MCP server, as Claude Code starts it: every tool call timed from the client's send
    to its answer (the server warm: its first call, which opens every memory, timed apart)."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "prima_memory", "--workspace", str(ws), "mcp"],
                                   env=env, cwd=str(ws))
    res: dict = {"keyword": [], "combined": [], "recent": [], "hits": {}}

    async def main():
        with open(errlog, "a") as err:
            async with stdio_client(params, errlog=err) as (r, w), ClientSession(r, w) as s:
                await s.initialize()

                async def call(tool, args, what):
                    t = time.perf_counter()
                    got = await s.call_tool(tool, args)
                    ms = (time.perf_counter() - t) * 1000
                    text = got.content[0].text if got.content else ""
                    if got.is_error:
                        FAILURES.append({"what": f"MCP {what}", "error": text[:500]})
                        print(f"FAILED MCP {what} {args}: {text[:500]}", file=sys.stderr)
                        return None, None
                    return ms, text
                ms, _ = await call("search_sessions", {"query": QUERIES[0], "mode": "keyword",
                                                       "scope": "all"}, "keyword search")
                res["first_call_ms"] = once(ms)
                modes = ["keyword"] + (["combined"] if combined else [])
                for mode in modes:
                    if mode == "combined":  # its first call loads the model: timed apart
                        ms, _ = await call("search_sessions", {"query": QUERIES[0], "mode": mode,
                                                               "scope": "all"}, "combined search")
                        res["first_combined_ms"] = once(ms)
                    for _ in range(reps):
                        for q in QUERIES:
                            ms, text = await call("search_sessions", {"query": q, "mode": mode,
                                                                      "scope": "all"}, f"{mode} search")
                            if ms is not None:
                                res[mode].append(ms)
                                if mode == "keyword" and q in RARE:
                                    res["hits"][q] = len(json.loads(text).get("results", []))
                for _ in range(runs):
                    ms, _ = await call("recent_sessions", {"n": 10, "scope": "all"}, "recent")
                    if ms is not None:
                        res["recent"].append(ms)
    try:
        anyio.run(main)
    except Exception as e:  # noqa: BLE001 - the server died or broke the protocol: reported, the run goes on
        tail = errlog.read_text(errors="replace")[-1500:] if errlog.exists() else ""
        FAILURES.append({"what": "MCP server", "error": f"{e!r}; server stderr: {tail}"})
        print(f"FAILED MCP server: {e!r}\n{tail}", file=sys.stderr)
    return res


def measure(out: Path, projects: int, sessions: int, runs: int, combined: bool,
            embedder: str | None) -> dict:
    h = history(out, projects, sessions)
    print(describe(h), file=sys.stderr)
    root = out / f"allp-{projects}"
    env = environment(root, embedder)
    cli = [sys.executable, "-m", "prima_memory"]
    one = root / "code" / "project-000"
    reps = max(1, runs // len(QUERIES))
    from_nothing(root)
    # the CLI runs from a folder of no project (and never from one from_nothing deletes: a
    # process whose working folder is gone cannot load the model's libraries)
    (root / "elsewhere").mkdir(exist_ok=True)
    os.chdir(root / "elsewhere")
    rep: dict = {"sessions": h["sessions_total"], "claude_code_sessions": h["claude_sessions"],
                 "claude_code_prompts": h["claude_prompts"], "codex_rollouts": h["codex_rollouts"],
                 "vscode_chats": h["vscode_chats"], "bytes": h["bytes"],
                 "projects_expected": h["expected_projects"]}

    floor = [timed([sys.executable, "-c", "pass"], env)[0] for _ in range(runs)]
    rep["python_c_pass"] = summary(floor)

    # the first search from nothing: every project indexed into the user-level store
    ms, got = run("first search", cli + ["search", "--all-projects", "test", "--mode", "keyword",
                                         "--json"], env)
    rep["first_keyword_search_ms"] = once(ms)
    if got:
        rep["first_search"] = {"projects": got.get("projects"), "hits": len(got["results"]),
                               "warnings": got.get("warnings")}
    from_nothing(root)  # and again, from nothing, on a terminal: its progress bar
    ms, rc, err = under_terminal(cli + ["search", "--all-projects", "test", "--mode", "keyword"], env)
    rep["first_search_on_a_terminal_ms"] = once(ms)
    rep["progress_bar_shown"] = "indexing project" in err
    if rc != 0:
        FAILURES.append({"what": "first search on a terminal", "error": f"exit {rc}: {err[-500:]}"})
        print(f"FAILED first search on a terminal, exit {rc}: {err[-500:]}", file=sys.stderr)

    _ms, status = run("status", cli + ["status", "--all-projects", "--json"], env)
    if status:
        rep["projects_found"] = len(status["projects"])
        rep["sessions_indexed"] = sum(p["sessions"] or 0 for p in status["projects"])
    rep["own_memories_made"] = len(list((root / "code").glob("*/.prima-memory")))  # must be 0

    # warm: the queries in turns, each --runs/20 times
    kw, hits = [], {}
    for _ in range(reps):
        for q in QUERIES:
            ms, got = run("keyword search", cli + ["search", "--all-projects", q, "--mode",
                                                   "keyword", "--json"], env)
            if ms is not None:
                kw.append(ms)
                hits[q] = len(got["results"]) if got else None
    rep["keyword_search"] = summary(kw)
    rep["keyword_hits"] = hits
    recent = [ms for ms, _ in (run("recent", cli + ["recent", "--all-projects", "--json"], env)
                               for _ in range(runs)) if ms is not None]
    rep["recent_cli"] = summary(recent)

    if combined:  # every vector current, then searches by meaning and words
        ms, got = run("index --worker", cli + ["index", "--all-projects", "--worker", "--json"], env)
        rep["index_worker_ms"] = once(ms)
        if got:
            rep["index_worker"] = {k: got.get(k) for k in ("projects", "embedded",
                                                            "embed_pending", "warnings")}
        comb, warned = [], set()
        for _ in range(reps):
            for q in QUERIES:
                ms, got = run("combined search", cli + ["search", "--all-projects", q, "--json"],
                              env)
                if ms is not None:
                    comb.append(ms)
                    warned |= set(got.get("warnings") or []) if got else set()
        rep["combined_search"] = summary(comb)
        rep["combined_warnings"] = sorted(warned)

    print(f"  MCP server, {len(QUERIES) * reps} calls a mode ...", file=sys.stderr)
    m = mcp_calls(env, one, reps, runs, combined, root / "state" / "mcp-stderr.log")
    rep["mcp"] = {"first_call_ms": m.get("first_call_ms"), "keyword": summary(m["keyword"]),
                  "first_combined_ms": m.get("first_combined_ms"),
                  "combined": summary(m["combined"]), "recent": summary(m["recent"]),
                  "rare_hits": m["hits"]}

    # one project's own search, for comparison (its first call makes project-000's memory)
    ms, _ = run("one project search", cli + ["search", QUERIES[0], "--mode", "keyword",
                                             "--workspace", str(one), "--json"], env)
    rep["one_project_first_ms"] = once(ms)
    single = []
    for _ in range(reps):
        for q in QUERIES:
            ms, _ = run("one project search", cli + ["search", q, "--mode", "keyword",
                                                     "--workspace", str(one), "--json"], env)
            if ms is not None:
                single.append(ms)
    rep["one_project_keyword_search"] = summary(single)
    _ms, st = run("status", cli + ["status", "--workspace", str(one), "--json"], env)
    rep["embedder_build"] = ((st or {}).get("semantic") or {}).get("build")  # e.g. onnx-int8-…, st-fp32
    os.chdir(REPO)
    return rep


# -- the report ----------------------------------------------------------------------------------

def table(report: dict, counts: list[int]) -> str:
    cols = [report["projects"][str(p)] for p in counts]

    def cell(x):  # a summary: "p50 (p95)"
        return "" if x is None else f"{x['p50_ms']:,.0f} ({x['p95_ms']:,.0f})"

    def ms(v):
        return "" if v is None else f"{v:,.0f}"
    rows = [
        ("sessions (Claude Code + Codex + VS Code)", [str(c["sessions"]) for c in cols]),
        ("history, MB", [f"{c['bytes'] / 1e6:.1f}" for c in cols]),
        ("projects found (expected)", [f"{c.get('projects_found')} ({c['projects_expected']})"
                                       for c in cols]),
        ("`python -c pass`, p50", [ms(c["python_c_pass"]["p50_ms"]) for c in cols]),
        ("first keyword search from nothing", [ms(c["first_keyword_search_ms"]) for c in cols]),
        ("the same on a terminal (progress bar shown)",
         [f"{ms(c['first_search_on_a_terminal_ms'])} ({'yes' if c['progress_bar_shown'] else 'no'})"
          for c in cols]),
        ("keyword search, all projects, CLI", [cell(c["keyword_search"]) for c in cols]),
        ("`recent --all-projects`, CLI", [cell(c["recent_cli"]) for c in cols]),
        ("`index --all-projects --worker` (exchanges embedded)",
         [f"{ms(c['index_worker_ms'])} ({(c.get('index_worker') or {}).get('embedded')})"
          if "index_worker_ms" in c else "" for c in cols]),
        ("combined search, all projects, CLI", [cell(c.get("combined_search")) for c in cols]),
        ("MCP search_sessions keyword, scope all (first call)",
         [f"{cell(c['mcp']['keyword'])} ({ms(c['mcp']['first_call_ms'])})" for c in cols]),
        ("MCP search_sessions combined, scope all (first call)",
         [f"{cell(c['mcp']['combined'])} ({ms(c['mcp']['first_combined_ms'])})"
          if c["mcp"]["combined"] else "" for c in cols]),
        ("MCP recent_sessions, scope all", [cell(c["mcp"]["recent"]) for c in cols]),
        ("keyword search, one project, CLI", [cell(c["one_project_keyword_search"]) for c in cols]),
        ("embedder (status --json: semantic.build)", [str(c.get("embedder_build")) for c in cols]),
    ]
    head = "| ms: p50 (p95) | " + " | ".join(f"{p} projects" for p in counts) + " |"
    lines = [head, "|---|" + "---|" * len(counts)]
    lines += [f"| {name} | " + " | ".join(v) + " |" for name, v in rows]
    return "\n".join(lines)


def onnx_build() -> dict | None:
    """The installed ONNX build of the model: unverified, prima-memory loads
    sentence-transformers instead (seconds more for every process that embeds a query)."""
    from prima_memory import embed
    m = embed.read_manifest()
    return None if m is None else {"verified": m.get("verified"), "variant": m.get("variant")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--projects", default="10,50,200", help="project counts, comma-separated")
    ap.add_argument("--sessions", type=int, default=40, help="Claude Code sessions a project")
    ap.add_argument("--runs", type=int, default=20, help="samples a measure (queries: runs/20 "
                    "rounds of the 20, at least one)")
    # (outside any git repository: a folder only Codex or VS Code ran in belongs to the git root
    # above it, so inside this checkout those projects would be this repository's)
    ap.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "prima-memory-bench"))
    ap.add_argument("--combined-upto", type=int, default=50,
                    help="embed every exchange and time combined search up to this many projects")
    ap.add_argument("--embedder", choices=["auto", "onnx", "sentence-transformers"],
                    help="PRIMA_EMBEDDER for every process (default: unset, prima-memory's choice)")
    args = ap.parse_args()
    counts = [int(x) for x in args.projects.split(",") if x]
    if min(counts) < 3 or args.sessions < 10:
        ap.error("the rare queries name projects 0-2 and sessions 0-9: --projects >= 3, "
                 "--sessions >= 10")
    out = Path(args.out).resolve()
    there = next(d for d in (out, *out.parents) if d.is_dir())
    inside = subprocess.run(["git", "-C", str(there), "rev-parse", "--show-toplevel"],
                            capture_output=True, text=True)
    if inside.returncode == 0:
        ap.error(f"--out {out} is inside the git repository {inside.stdout.strip()}: folders "
                 "only Codex or VS Code ran in would be that repository's project")
    # as install.sh leaves it: compiled modules (a CLI start must not compile them)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "prima_memory")],
                   check=True, stdout=subprocess.DEVNULL)
    report: dict = {
        "command": " ".join([sys.executable] + sys.argv),
        "machine": {"cpu": _cpu_name(), "cores": os.cpu_count(),
                    "python": platform.python_version(), "onnx_build": onnx_build()},
        "sessions_per_project": args.sessions, "runs": args.runs, "queries": QUERIES,
        "embedder": args.embedder or "prima-memory's choice (PRIMA_EMBEDDER unset)",
        "projects": {}}
    for p in counts:
        t = time.perf_counter()
        report["projects"][str(p)] = measure(out, p, args.sessions, args.runs,
                                             p <= args.combined_upto, args.embedder)
        print(f"  {p} projects measured in {time.perf_counter() - t:.0f}s", file=sys.stderr)
    report["failures"] = FAILURES
    print(table(report, counts), file=sys.stderr)
    if FAILURES:
        print(f"{len(FAILURES)} failed calls: see the report's failures", file=sys.stderr)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
