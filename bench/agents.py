"""The other agents' sessions (issue #41): index cost against a bare read, incremental updates,
and the hooks with those agents' folders absent, holding a history, holding 10,000 sessions.
One command:

    .venv/bin/python bench/agents.py [--size S] [--rounds 5] [--runs 20] [--profile SOURCE]

Generates once, deterministically (seed 7, bench/run.py's fixed clock), into bench/out/agents/
(ignored by git), a workspace with bench/run.py's Claude Code history of --size (`prepare`; S:
100 sessions) and beside it the other agents' folders in three states, each pointed at by the
agents' own variables (CODEX_HOME, PRIMA_VSCODE_USER_DIRS, PRIMA_CURSOR_USER_DIRS,
CURSOR_CONFIG_DIR, GEMINI_CLI_HOME, XDG_DATA_HOME, COPILOT_HOME, CLINE_DIR; HOME and
XDG_CONFIG_HOME are the benchmark's own, so nothing real is read):
- history: 900 sessions of the eight other agents (Codex and VS Code Copilot Chat from
  bench/synthetic.py's generators; Gemini CLI, Cursor's IDE and cursor-agent, OpenCode, Aider,
  Cline / Roo Code / Kilo Code and the Copilot CLI from bench/agent_writers.py), 10-40
  exchanges each, about 8 % of them run in other folders (out of scope);
- many: 10,000 one-exchange sessions across the six new sources;
- absent: no folder at all.
Aider keeps its history in the workspace (.aider.chat.history.md): each state's file is moved
there while that state is measured.

Then measures, in one run (PRIMA_BACKGROUND=0 throughout):
a. a cold `prima-memory index` of the workspace with the history (fresh index, process start to
   exit) against a bare read of the same files in a process of its own (every JSONL line
   orjson-parsed, each JSON document orjson-parsed, the markdown split into lines, every row of
   Cursor's and OpenCode's tables read and its JSON value parsed), --rounds times, best of each
   and the ratio per round; the same for the Claude Code history alone (the other agents'
   folders absent: bench/run.py's measure), and so what the other agents' files add to each
   side; per source, both in-process in a child process: the bare read of its files, and
   `Memory.update(sources=(source,))` on a fresh index (Memory and the index made before the
   timing, what the update imports on first use within it);
b. one exchange added to one session of each source in turn, then the index brought up to date,
   in-process (`Memory.update` of every source, as a long-lived process does) and through
   `prima-memory index`; and the same with nothing changed (the files grown are restored after);
c. SessionStart and Stop as bench/hooks.py runs them, in turns across the three states, each
   state with its own index made beforehand by `prima-memory index`.
Checks that `prima-memory status --json` counts, per source, the sessions written in scope (else
it stops), and compares what the index holds with what bench/agent_writers.py wrote: the
person's messages, the edits (between one a file a turn and all of them, as each source keeps
them) and the shell commands. --profile SOURCE writes a cProfile of that source's in-process
index to bench/out/agents/<size>/profile-SOURCE.txt. Prints one JSON result and a markdown table
for docs/benchmarks.md; both are also written to bench/out/agents/<size>/.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.hooks import hook_command, timed  # noqa: E402
from bench.run import NOW, SIZES, Indexes, _cpu_name, append_exchange, pct, prepare, run_child  # noqa: E402

PY = sys.executable
# the history's other sessions (with the Claude Code history of --size: S, 1,000 in all)
HISTORY = {"codex": 120, "copilot-chat": 110, "gemini-cli": 110, "cursor": 115, "opencode": 110,
           "aider": 110, "cline": 110, "copilot-cli": 115}
MANY = {"gemini-cli": 1667, "cursor": 1667, "opencode": 1667, "aider": 1666, "cline": 1666,
        "copilot-cli": 1667}  # 10,000 one-exchange sessions of the new sources
AGENT_PREFIXES = ("GEMINI_", "CURSOR_", "OPENCODE", "AIDER_", "COPILOT_", "CLINE_", "ROO_", "KILO_",
                  "CLAUDE", "CODEX", "PRIMA_")
ORDER = ["claude-code", "codex", "copilot-chat", "gemini-cli", "cursor", "cursor-agent", "opencode",
         "aider", "cline", "roo-code", "kilo-code", "copilot-cli"]  # registry.SOURCES's
AIDER = ".aider.chat.history.md"


# -- the agents' folders ------------------------------------------------------------------------

def agent_env(root: Path) -> dict:
    """Every agent's folder under `root` (which need not exist), by the variables each reads."""
    return {"CODEX_HOME": str(root / "codex"), "PRIMA_VSCODE_USER_DIRS": str(root / "vscode" / "User"),
            "PRIMA_CURSOR_USER_DIRS": str(root / "cursor" / "User"),
            "CURSOR_CONFIG_DIR": str(root / "cursor-agent"), "GEMINI_CLI_HOME": str(root / "gemini"),
            "XDG_DATA_HOME": str(root / "data"), "COPILOT_HOME": str(root / "copilot"),
            "CLINE_DIR": str(root / "cline")}


def generate(state: str, root: Path, ws: Path, pdir: Path, size: str) -> dict:
    """A state's folders under root (generated once: made.json written last says they are
    whole). Returns what was written (aw.Made's fields, as JSON)."""
    done = root / "made.json"
    if done.exists():
        return json.loads(done.read_text())
    from bench import agent_writers as aw
    from bench.synthetic import _content_for, generate_codex, generate_copilot
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    print(f"generating the {state} state ...", file=sys.stderr)
    t = time.perf_counter()
    c = _content_for(__import__("random").Random(7).getrandbits(64), str(ws))  # (the Claude history's pools)
    w, seed, now_ms, tiny = str(ws), 7 if state == "history" else 8, NOW * 1000, state == "many"
    plan = HISTORY if state == "history" else MANY
    made = aw.Made()
    if state == "history":
        got = generate_codex(root / "codex", w, plan["codex"], seed=seed, now=NOW)
        for where in got["cwd"]:
            made.session("codex", where != "elsewhere")
        for p in sorted((root / "codex").rglob("rollout-*.jsonl")):
            made.file("codex", "jsonl", p)
            if "codex" not in made.grow and got["cwd"][got["sessions"].index(p.stem[-36:])] == "ws":
                made.grow["codex"] = {"path": str(p)}
        generate_copilot(root / "vscode" / "User", w, plan["copilot-chat"], seed=seed, now=NOW)
        from prima_memory.sources.copilot import workspace_folder
        from prima_memory.workspace import is_within
        for sd in sorted((root / "vscode" / "User" / "workspaceStorage").iterdir()):
            here = is_within(os.path.normpath(workspace_folder(str(sd)) or "/"), w)
            made.file("copilot-chat", "raw", sd / "workspace.json")
            for p in sorted((sd / "chatSessions").glob("*.json")):
                made.session("copilot-chat", here, {"path": str(p)})
                made.file("copilot-chat", "json", p)
    made.add(aw.write_gemini(root / "gemini", c, w, plan["gemini-cli"], seed, now_ms, tiny))
    made.add(aw.write_cursor(root / "cursor" / "User", root / "cursor-agent", c, w, plan["cursor"], seed,
                             now_ms, tiny))
    made.add(aw.write_opencode(root / "data", c, w, plan["opencode"], seed, now_ms, tiny))
    made.add(aw.write_aider(root / AIDER, root / "elsewhere", c, w, plan["aider"], seed, now_ms, tiny))
    made.add(aw.write_cline(root / "vscode" / "User", c, w, plan["cline"], seed, now_ms, tiny))
    system = "You are the GitHub Copilot CLI, a terminal assistant built by GitHub.\n\n" \
        + c.prose.slice(__import__("random").Random(seed), 24_000) + "\n\n<environment_context>\n" \
        "* Current working directory: {cwd}\n* Operating System: Linux\n</environment_context>\n"
    made.add(aw.write_copilot_cli(root / "copilot", c, w, plan["copilot-cli"], seed, now_ms, tiny,
                                  system="" if tiny else system))
    live = str(ws / AIDER)  # (where it is read: moved there while this state is measured)
    made.files = [(s, k, live if p == str(root / AIDER) else p) for s, k, p in made.files]
    if "aider" in made.grow:
        made.grow["aider"] = {"path": live}
    if state == "history":  # the Claude Code history of --size is the workspace's, in every state
        made.expected["claude-code"] = SIZES[size][0]
        made.written += SIZES[size][0]
        files = sorted(pdir.rglob("*.jsonl"))
        made.files = [("claude-code", "jsonl", str(p)) for p in files] + made.files
        made.grow["claude-code"] = {"path": str(max(files, key=lambda p: p.stat().st_size))}
    out = {"expected": made.expected, "prompts": made.prompts, "steps": made.steps, "files": made.files, "grow": made.grow,
           "written": made.written, "generated_s": round(time.perf_counter() - t, 1)}
    done.write_text(json.dumps(out))
    print(f"  {made.written} sessions in {out['generated_s']} s", file=sys.stderr)
    return out


class States:
    """One index per state (bench/run.py's Indexes: the live one in the workspace, the others
    parked), and each state's Aider history moved into the workspace while it is measured."""

    def __init__(self, ws: Path, roots: dict[str, Path], parked: Path):
        self.ws, self.roots, self.idx = ws, roots, Indexes(ws, parked)
        self.aider = None
        owner = [s for s in ("history", "many") if not (roots[s] / AIDER).exists()]
        if (ws / AIDER).exists() and len(owner) == 1:  # (a run interrupted: put back)
            (ws / AIDER).rename(roots[owner[0]] / AIDER)

    def use(self, state: str) -> None:
        self.idx.use(state)
        if self.aider == state:
            return
        live = self.ws / AIDER
        if self.aider is not None and live.exists():
            live.rename(self.roots[self.aider] / AIDER)
        if (self.roots[state] / AIDER).exists():
            (self.roots[state] / AIDER).rename(live)
        self.aider = state

    def park(self) -> None:
        """The Aider history back in its state's folder (the workspace left as generated)."""
        if self.aider is not None and (self.ws / AIDER).exists():
            (self.ws / AIDER).rename(self.roots[self.aider] / AIDER)
        self.aider = None


# -- the measures' children ---------------------------------------------------------------------

BARE = r"""
import json, os, sqlite3, sys, time, urllib.parse
t0 = time.perf_counter()
import orjson
files = json.load(open(sys.argv[1]))
TABLES = {"sqlite:cursor": ("SELECT key, value FROM cursorDiskKV", "SELECT key, value FROM ItemTable"),
          "sqlite:opencode": ("SELECT * FROM session", "SELECT id, data FROM message",
                              "SELECT id, data FROM part")}
out = {}
for source, kind, path in files:
    t = time.perf_counter(); n = size = 0
    if kind == "jsonl":
        with open(path, "rb") as f:
            for line in f:
                size += len(line)
                if line.strip():
                    orjson.loads(line); n += 1
    elif kind in ("json", "md", "raw"):
        with open(path, "rb") as f:
            data = f.read()
        size, n = len(data), 1
        if kind == "json":
            orjson.loads(data)
        elif kind == "md":
            n = len(data.decode("utf-8").splitlines())
    else:  # every row of the tables read, each JSON value parsed
        size = os.path.getsize(path)
        con = sqlite3.connect("file:" + urllib.parse.quote(path) + "?mode=ro", uri=True)
        for sql in TABLES[kind]:
            for row in con.execute(sql):
                n += 1
                v = row[-1]
                if isinstance(v, (bytes, str)) and v[:1] in (b"{", b"[", "{", "["):
                    orjson.loads(v)
        con.close()
    s = out.setdefault(source, [0.0, 0, 0])
    s[0] += time.perf_counter() - t; s[1] += n; s[2] += size
print(json.dumps({"sources": out, "in_process_s": time.perf_counter() - t0}))
"""

ONE = r"""
import json, os, sys, time
from prima_memory.logs import Log
from prima_memory.memory import Memory
from prima_memory.sources.registry import source_named
ws, name, profile = sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else ""
mem = Memory(ws, log=Log(None))
mem.store()
src = source_named(name)
if profile:
    import cProfile, pstats
    prof = cProfile.Profile()
    prof.enable()
t = time.perf_counter()
rep = mem.update(sources=(src,))
s = time.perf_counter() - t
if profile:
    prof.disable()
    pstats.Stats(prof, stream=open(profile, "w")).sort_stats("cumulative").print_stats(40)
    pstats.Stats(prof, stream=open(profile + ".tottime", "w")).sort_stats("tottime").print_stats(30)
mem.close()
print(json.dumps({"s": s, "files_read": rep.files_read, "sessions": len(rep.sessions_touched)}))
"""


def cli(ws: Path, env: dict, *args) -> tuple[float, float, dict]:
    """(wall seconds, peak MB, its --json output) of a prima-memory command."""
    wall, peak, out = run_child([PY, "-m", "prima_memory", "--workspace", str(ws), *args, "--json"], env)
    return wall, peak, json.loads(out)


def counted(ws: Path, env: dict, made: dict) -> dict:
    """status's sessions per source, and the person's messages the index holds per source,
    against what was written in scope."""
    _w, _p, status = cli(ws, env, "status")
    by = {s["source"]: s for s in status["sources"] if "sessions" in s}
    con = sqlite3.connect(f"file:{ws / '.prima-memory' / 'index.db'}?mode=ro", uri=True)
    prompts = dict(con.execute("SELECT s.source, count(*) FROM messages m JOIN sessions s ON s.id = m.session"
                               " WHERE m.role = 'user' AND m.sidechain = 0 GROUP BY s.source"))
    changes = dict(con.execute("SELECT s.source, count(*) FROM file_changes c JOIN sessions s ON s.id = c.session"
                               " GROUP BY s.source"))
    commands = dict(con.execute("SELECT s.source, count(*) FROM tool_calls c JOIN sessions s ON s.id = c.session"
                                " WHERE c.kind = 'command' GROUP BY s.source"))
    con.close()
    out = {}
    for name in ORDER:
        got = by.get(name, {})
        out[name] = {"written_in_scope": made["expected"].get(name, 0),
                     "status_sessions": got.get("sessions", 0), "archived": got.get("archived", 0),
                     "skipped_out_of_scope": got.get("skipped", 0),
                     "prompts_written": made["prompts"].get(name), "prompts_indexed": prompts.get(name, 0),
                     # edits written (all; one a file a turn), commands run; and what the index holds
                     "edits_written": made.get("steps", {}).get(name, [None, None])[:2],
                     "file_changes_indexed": changes.get(name, 0),
                     "commands_written": made.get("steps", {}).get(name, [None, None, None])[2],
                     "commands_indexed": commands.get(name, 0),
                     "warnings": got.get("warnings", []), "unknown_record_types": got.get("unknown_record_types", [])}
    return out


# -- growing one session of each source (the incremental measure) ----------------------------------

def grow(source: str, g: dict, i: int) -> None:
    """One exchange more in one session of `source`, written as that agent writes it."""
    import orjson
    from bench.synthetic import _iso
    ms = NOW * 1000 + 60_000 * (i + 1)
    said, answer = f"benchmark appended question {i} about zqgrow{i}", f"benchmark appended answer {i}"

    def lines(path, *objs):
        with open(path, "ab") as f:
            f.write(b"".join(orjson.dumps(o) + b"\n" for o in objs))
    if source == "claude-code":
        append_exchange(Path(g["path"]), 3000 + i)
    elif source == "codex":
        lines(g["path"], *[{"timestamp": _iso(ms), "type": t, "payload": p} for t, p in (
            ("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": said}]}),
            ("event_msg", {"type": "user_message", "message": said, "images": []}),
            ("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]}),
            ("event_msg", {"type": "agent_message", "message": answer}))])
    elif source == "copilot-chat":
        doc = orjson.loads(Path(g["path"]).read_bytes())
        req = dict(doc["requests"][-1], requestId=f"request_grow_{i}", responseId=f"response_grow_{i}", timestamp=ms,
                   message={"text": said, "parts": [{"text": said, "kind": "text"}]},
                   response=[{"value": answer, "supportThemeIcons": False, "supportHtml": False}])
        doc["requests"].append(req)
        doc["lastMessageDate"] = ms
        Path(g["path"]).write_bytes(orjson.dumps(doc))
    elif source == "gemini-cli":
        lines(g["path"], {"id": f"grow-u{i}", "timestamp": _iso(ms), "type": "user", "content": [{"text": said}]},
              {"id": f"grow-g{i}", "timestamp": _iso(ms + 5), "type": "gemini", "content": answer, "thoughts": [],
               "tokens": {"input": 1, "output": 1, "cached": 0, "thoughts": 0, "tool": 0, "total": 2},
               "model": "gemini-2.5-pro"}, {"$set": {"lastUpdated": _iso(ms + 5)}})
    elif source == "cursor":
        con = sqlite3.connect(g["db"])
        key = f"composerData:{g['cid']}"
        doc = orjson.loads(con.execute("SELECT value FROM cursorDiskKV WHERE key = ?", (key,)).fetchone()[0])
        for n, (kind, text) in enumerate(((1, said), (2, answer))):
            bid = f"grow-{i}-{n}"
            con.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"bubbleId:{g['cid']}:{bid}", orjson.dumps(
                {"_v": 3, "type": kind, "bubbleId": bid, "text": text, "createdAt": _iso(ms + n)})))
            doc["fullConversationHeadersOnly"].append({"bubbleId": bid, "type": kind})
        doc["lastUpdatedAt"] = ms
        con.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (key, orjson.dumps(doc)))
        con.commit()
        con.close()
    elif source == "cursor-agent":
        lines(g["path"], {"role": "user", "message": {"content": [{"type": "text", "text": f"<user_query>\n{said}\n</user_query>"}]}},
              {"role": "assistant", "message": {"content": [{"type": "text", "text": answer}]}})
    elif source == "opencode":
        con = sqlite3.connect(g["db"])
        for n, (role, text) in enumerate((("user", said), ("assistant", answer))):
            mid = f"msg_grow_{i:04d}_{n}"
            info = {"role": role, "time": {"created": ms + n}, "agent": "build"}
            if role == "assistant":
                info.update(parentID=f"msg_grow_{i:04d}_0", modelID="claude-sonnet-4-5", providerID="anthropic",
                            path={"cwd": g["cwd"], "root": g["cwd"]})
            con.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, g["sid"], ms + n, ms + n,
                                                                       orjson.dumps(info).decode()))
            con.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", (f"prt_grow_{i:04d}_{n}", mid, g["sid"], ms + n,
                                                                      ms + n, orjson.dumps({"type": "text", "text": text}).decode()))
        con.execute("UPDATE session SET time_updated = ? WHERE id = ?", (ms + 1, g["sid"]))
        con.commit()
        con.close()
    elif source == "aider":
        with open(g["path"], "a", encoding="utf-8") as f:
            f.write(f"\n#### {said}  \n\n{answer}\n\n> Tokens: 1.0k sent, 10 received.  \n")
    elif source in ("cline", "roo-code", "kilo-code"):
        msgs = orjson.loads(Path(g["path"]).read_bytes())
        msgs += [{"ts": ms, "type": "say", "say": "user_feedback", "text": said},
                 {"ts": ms + 5, "type": "say", "say": "completion_result", "text": answer}]
        Path(g["path"]).write_bytes(orjson.dumps(msgs))
    elif source == "copilot-cli":
        lines(g["path"], {"type": "user.message", "data": {"content": said}, "id": f"grow-u{i}",
                          "timestamp": _iso(ms), "parentId": None},
              {"type": "assistant.message", "data": {"messageId": f"grow-a{i}", "content": answer, "toolRequests": []},
               "id": f"grow-a{i}", "timestamp": _iso(ms + 5), "parentId": f"grow-u{i}"})


def grown_files(g: dict) -> list[Path]:
    base = Path(g.get("db") or g["path"])
    return [base] + ([base.with_name(base.name + s) for s in ("-wal", "-shm")] if "db" in g else [])


def snapshot(paths: list[Path]) -> dict:
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) if p.exists() else None for p in paths}


def restore(saved: dict) -> None:
    for p, got in saved.items():
        if got is None:
            p.unlink(missing_ok=True)
        else:
            p.write_bytes(got[0])
            os.utime(p, ns=(got[1], got[1]))


# -- the run ------------------------------------------------------------------------------------

def summary(xs: list[float], scale: float = 1000.0) -> dict:
    return {"p50_ms": round(pct(xs, 50) * scale, 1), "p95_ms": round(pct(xs, 95) * scale, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", choices=("S", "M"), default="S", help="the Claude Code history (bench/run.py)")
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "agents"))
    ap.add_argument("--rounds", type=int, default=5, help="cold-index and incremental rounds")
    ap.add_argument("--runs", type=int, default=20, help="runs of each hook in each state")
    ap.add_argument("--parts", default="index,incremental,hooks")
    ap.add_argument("--profile", default="", help="a source whose in-process index is profiled (cProfile)")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    t_start = time.perf_counter()

    out, config, ws, pdir = prepare(args.size, args.out)
    (ws / "web").mkdir(exist_ok=True)  # (a folder inside the workspace some sessions ran in)
    home = out / "home"
    roots = {"absent": out / "agents-absent", "history": out / "agents-history", "many": out / "agents-many"}
    made = {s: generate(s, roots[s], ws, pdir, args.size) for s in ("history", "many")}
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(AGENT_PREFIXES) and k not in ("APPDATA", "LOCALAPPDATA", "XDG_STATE_HOME")}
    base.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), CLAUDE_CONFIG_DIR=str(config),
                PRIMA_PYTHON=PY, CLAUDE_PROJECT_DIR=str(ws), PRIMA_BACKGROUND="0")
    envs = {s: dict(base, **agent_env(r)) for s, r in roots.items()}
    states = States(ws, roots, out / "indexes")
    shutil.rmtree(ws / ".prima-memory", ignore_errors=True)  # (a previous run's, of any state)
    hist = made["history"]
    manifest, claude_only = out / "history-files.json", out / "claude-files.json"
    manifest.write_text(json.dumps(hist["files"]))
    claude_only.write_text(json.dumps([f for f in hist["files"] if f[0] == "claude-code"]))
    states.use("history")  # (its Aider history in the workspace)
    by_source: dict[str, list] = {}
    for s, _k, p in hist["files"]:
        by_source.setdefault(s, []).append(p)
    files_bytes = {s: sum(os.path.getsize(p) for p in ps) for s, ps in by_source.items()}
    report: dict = {
        "command": " ".join(["bench/agents.py"] + sys.argv[1:]),
        "history": {"sessions_written": hist["written"], "in_scope": hist["expected"],
                    "files": len(hist["files"]), "bytes": sum(files_bytes.values()),
                    "bytes_by_source": files_bytes},
        "many": {"sessions_written": made["many"]["written"], "in_scope": made["many"]["expected"]}}
    env = envs["history"]
    try:
        states.use("history")
        for p in by_source.values():  # warm the page cache: both sides read from memory
            for f in p:
                Path(f).read_bytes()

        # -- a. cold index against a bare read ----------------------------------------------------
        if parts & {"index", "incremental"}:
            bare_walls, cold_walls, peaks, bare_src, one_src = [], [], [], {}, {}
            alone = {"bare": [], "cold": []}  # the Claude Code history alone (bench/run.py's measure)
            for r in range(args.rounds):
                for name in ORDER:  # each source alone, in-process, a fresh index each
                    shutil.rmtree(ws / ".prima-memory", ignore_errors=True)
                    p = subprocess.run([PY, "-c", ONE, str(ws), name], env=env, capture_output=True, text=True)
                    if p.returncode:
                        raise SystemExit(f"index of {name} alone failed: {p.stderr[-2000:]}")
                    one_src.setdefault(name, []).append(json.loads(p.stdout))
                sides = ["bare", "cold", "bare-alone", "cold-alone"]
                for side in sides if r % 2 == 0 else sides[::-1]:
                    if side == "bare-alone":
                        alone["bare"].append(run_child([PY, "-c", BARE, str(claude_only)], env)[0])
                    elif side == "cold-alone":
                        states.use("absent")
                        shutil.rmtree(ws / ".prima-memory", ignore_errors=True)
                        alone["cold"].append(cli(ws, envs["absent"], "index")[0])
                        states.use("history")
                    elif side == "bare":
                        wall, _peak, so = run_child([PY, "-c", BARE, str(manifest)], env)
                        bare_walls.append(wall)
                        for s, v in json.loads(so)["sources"].items():
                            bare_src.setdefault(s, []).append(v)
                    else:
                        shutil.rmtree(ws / ".prima-memory", ignore_errors=True)
                        wall, peak, got = cli(ws, env, "index")
                        cold_walls.append(wall)
                        peaks.append(peak)
                        report.setdefault("cold_index_output", {k: got.get(k) for k in (
                            "files_seen", "files_read", "bytes_read", "sessions_updated", "warnings")})
                        report["cold_index_output"]["extracts_written"] = len(got.get("extracts_written") or ())
                print(f"  round {r + 1}: cold {cold_walls[-1]:.2f} s, bare {bare_walls[-1]:.2f} s; Claude Code alone: "
                      f"cold {alone['cold'][-1]:.2f} s, bare {alone['bare'][-1]:.2f} s", file=sys.stderr)
            check = counted(ws, env, hist)
            report["counted"] = check
            wrong = {k: v for k, v in check.items() if v["status_sessions"] != v["written_in_scope"] or v["archived"]}
            per_source = {}
            for name in ORDER:
                b = [v[0] for v in bare_src.get(name, [[0, 0, 0]])]
                i = [v["s"] for v in one_src[name]]
                per_source[name] = {
                    "files": len(by_source.get(name, [])), "bytes": files_bytes.get(name, 0),
                    "bare_ms": round(min(b) * 1000, 1), "index_alone_ms": round(min(i) * 1000, 1),
                    "ratio": round(min(i) / min(b), 2) if min(b) else None,
                    "ratio_per_round": [round(x / y, 2) for x, y in zip(i, b)] if min(b) else None,
                    "files_read": one_src[name][-1]["files_read"], "sessions": one_src[name][-1]["sessions"]}
            report["cold"] = {
                "index_s_best": round(min(cold_walls), 3), "bare_s_best": round(min(bare_walls), 3),
                "ratio_best": round(min(cold_walls) / min(bare_walls), 2),
                "ratio_per_round": [round(a / b, 2) for a, b in zip(cold_walls, bare_walls)],
                "index_s_all": [round(x, 3) for x in cold_walls], "bare_s_all": [round(x, 3) for x in bare_walls],
                "index_s_median": round(statistics.median(cold_walls), 3), "peak_rss_mb": round(max(peaks), 1),
                "claude_code_alone": {
                    "index_s_best": round(min(alone["cold"]), 3), "bare_s_best": round(min(alone["bare"]), 3),
                    "ratio_best": round(min(alone["cold"]) / min(alone["bare"]), 2),
                    "ratio_per_round": [round(a / b, 2) for a, b in zip(alone["cold"], alone["bare"])]},
                # what the other agents' files add to each side, index over bare
                "others_added": {
                    "index_s": round(min(cold_walls) - min(alone["cold"]), 3),
                    "bare_s": round(min(bare_walls) - min(alone["bare"]), 3),
                    "ratio": round((min(cold_walls) - min(alone["cold"])) / (min(bare_walls) - min(alone["bare"])), 2),
                    "ratio_per_round": [round((a - c) / (b - d), 2) for a, b, c, d in
                                        zip(cold_walls, bare_walls, alone["cold"], alone["bare"])]},
                "per_source": per_source}
            if wrong:
                print(json.dumps(report, indent=2))
                raise SystemExit(f"status counts other sessions than were written in scope: {sorted(wrong)}")
            if args.profile:
                shutil.rmtree(ws / ".prima-memory", ignore_errors=True)
                prof = out / f"profile-{args.profile}.txt"
                subprocess.run([PY, "-c", ONE, str(ws), args.profile, str(prof)], env=env, check=True,
                               capture_output=True)
                report["profile"] = str(prof)
                shutil.rmtree(ws / ".prima-memory", ignore_errors=True)
                cli(ws, env, "index")

        # -- b. one exchange more in one session of each source -------------------------------------
        if "incremental" in parts:
            from prima_memory.logs import Log
            from prima_memory.memory import ALL, Memory
            saved = snapshot([f for g in hist["grow"].values() for f in grown_files(g)])
            environ = dict(os.environ)
            inc: dict[str, list] = {}
            inproc: dict[str, list] = {}
            try:
                cli(ws, env, "index")  # (up to date first)
                noop = [cli(ws, env, "index")[0] for _ in range(args.rounds)]
                os.environ.clear()
                os.environ.update(env)  # (the agents' folders are read from the environment)
                mem = Memory(str(ws), log=Log(None))
                mem.update(sources=ALL)
                noop_in = []
                for r in range(args.rounds):  # in-process, as a long-lived process (the MCP server)
                    t = time.perf_counter()
                    mem.update(sources=ALL)
                    noop_in.append(time.perf_counter() - t)
                    for name in ORDER:
                        grow(name, hist["grow"][name], 100 + r)
                        t = time.perf_counter()
                        rep = mem.update(sources=ALL)
                        inproc.setdefault(name, []).append((time.perf_counter() - t, rep.files_read,
                                                            len(rep.sessions_touched)))
                mem.close()
                for r in range(args.rounds):  # through the CLI, process start to exit
                    for name in ORDER:
                        grow(name, hist["grow"][name], r)
                        wall, _peak, got = cli(ws, env, "index")
                        inc.setdefault(name, []).append((wall, got["files_read"], got["sessions_updated"]))
                noop += [cli(ws, env, "index")[0] for _ in range(args.rounds)]
            finally:
                os.environ.clear()
                os.environ.update(environ)
                restore(saved)
            report["incremental"] = {
                "nothing_changed_cli": summary(noop), "nothing_changed_inprocess": summary(noop_in),
                "per_source": {n: {"cli": summary([w for w, _f, _s in v]), "inprocess": summary([w for w, _f, _s in inproc[n]]),
                                   "files_read": [f for _w, f, _s in v + inproc[n]],
                                   "sessions_updated": [s for _w, _f, s in v + inproc[n]]} for n, v in inc.items()}}

        # -- c. the hooks in three states ---------------------------------------------------------
        if "hooks" in parts:
            report["hooks"] = hooks(states, envs, ws, pdir, args.runs)
    finally:
        states.use("history")
        states.park()
    report["machine"] = {"cpu": _cpu_name(), "cores": os.cpu_count(), "python": platform.python_version(),
                         "commit": subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                                  capture_output=True, text=True).stdout.strip(),
                         "date": time.strftime("%Y-%m-%d")}
    report["runtime_s"] = round(time.perf_counter() - t_start, 1)
    text = json.dumps(report, indent=2)
    table = markdown(report, args)
    (out / "result.json").write_text(text)
    (out / "result.md").write_text(table)
    print(text)
    print()
    print(table)


def hooks(states: States, envs: dict, ws: Path, pdir: Path, runs: int) -> dict:
    """SessionStart (up to date, and after one exchange) and Stop after one exchange, as
    bench/hooks.py runs them, in turns across the states, each with its own index."""
    order = ["absent", "history", "many"]
    indexed = {}
    for s in order:
        states.use(s)
        wall, _peak, got = cli(ws, envs[s], "index")
        indexed[s] = {"index_s": round(wall, 2), "files_read": got["files_read"]}
    sessions = sorted(pdir.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    newest = sessions[-1]
    start_json = json.dumps({"session_id": "bench-new-session", "cwd": str(ws), "source": "startup",
                             "hook_event_name": "SessionStart",
                             "transcript_path": str(pdir / "bench-new-session.jsonl")}).encode()
    stop_json = json.dumps({"session_id": newest.stem, "cwd": str(ws), "hook_event_name": "Stop",
                            "transcript_path": str(newest), "stop_hook_active": False,
                            "last_assistant_message": "benchmark appended answer"}).encode()
    start_cmd, stop_cmd = hook_command("session-start"), hook_command("stop")
    original = (newest.read_bytes(), newest.stat().st_mtime_ns)
    got = {k: {s: [] for s in order} for k in ("session_start_up_to_date", "session_start_after_one_exchange",
                                                "stop_after_one_exchange")}

    def turns(i):  # every state once, in an order that rotates
        return order[i % 3:] + order[:i % 3]
    try:
        base_py = [timed([PY, "-c", "pass"], envs["absent"])[0] for _ in range(runs)]
        for i in range(runs):
            for s in turns(i):
                states.use(s)
                got["session_start_up_to_date"][s].append(timed(start_cmd, envs[s], start_json, shell=True)[0])
        for i in range(runs):
            append_exchange(newest, 4000 + i)  # (each state's index takes the same new lines)
            for s in turns(i):
                states.use(s)
                got["session_start_after_one_exchange"][s].append(timed(start_cmd, envs[s], start_json, shell=True)[0])
        for i in range(runs):
            append_exchange(newest, 5000 + i)
            for s in turns(i):
                states.use(s)
                got["stop_after_one_exchange"][s].append(timed(stop_cmd, envs[s], stop_json, shell=True)[0])
    finally:
        newest.write_bytes(original[0])
        os.utime(newest, ns=(original[1], original[1]))
    out: dict = {"runs": runs, "indexed_beforehand": indexed, "python_c_pass": summary(base_py, 1)}
    for k, by in got.items():
        out[k] = {s: summary(v, 1) for s, v in by.items()}
        out[k]["p50_over_absent"] = {s: round(pct(by[s], 50) / pct(by["absent"], 50), 3) for s in order[1:]}
    return out


LABELS = {"claude-code": "Claude Code", "codex": "Codex", "copilot-chat": "VS Code Copilot Chat",
          "gemini-cli": "Gemini CLI", "cursor": "Cursor (IDE, state.vscdb)", "cursor-agent": "Cursor CLI (cursor-agent)",
          "opencode": "OpenCode (opencode.db)", "aider": "Aider", "cline": "Cline", "roo-code": "Roo Code",
          "kilo-code": "Kilo Code", "copilot-cli": "Copilot CLI"}


def markdown(rep: dict, args) -> str:
    m = rep["machine"]
    h = rep["history"]
    lines = [f"`.venv/bin/python {rep['command']}`: {m['cpu']}, {m['cores']} cores, Python {m['python']}, "
             f"commit {m['commit']}, {m['date']}.", ""]
    if "cold" in rep:
        c = rep["cold"]
        lines += [
            f"History: {h['sessions_written']:,} sessions ({sum(h['in_scope'].values()):,} of the workspace), "
            f"{h['files']:,} files, {h['bytes'] / 1e6:.1f} MB.", "",
            "| What | Measured | Target |", "|---|---|---|",
            f"| Cold full index (`prima-memory index`, a fresh index, process start to exit) | {c['index_s_best']:.2f} s "
            f"(best of {len(c['index_s_all'])}; median {c['index_s_median']:.2f} s), peak RSS {c['peak_rss_mb']:.0f} MB | |",
            f"| Bare read of the same files (a process of its own) | {c['bare_s_best']:.2f} s (best of {len(c['bare_s_all'])}) | |",
            f"| Cold index / bare read | **{c['ratio_best']:.2f}×** (per round: {', '.join(f'{x:.2f}' for x in c['ratio_per_round'])}) | within 3× |"]
        a, o = c["claude_code_alone"], c["others_added"]
        lines += [
            f"| … the Claude Code history alone (the other agents' folders absent), the same measure | {a['index_s_best']:.2f} s / "
            f"{a['bare_s_best']:.2f} s = {a['ratio_best']:.2f}× (per round: {', '.join(f'{x:.2f}' for x in a['ratio_per_round'])}) | |",
            f"| … what the other agents' files add: index / bare | +{o['index_s']:.2f} s / +{o['bare_s']:.2f} s = "
            f"**{o['ratio']:.2f}×** (per round: {', '.join(f'{x:.2f}' for x in o['ratio_per_round'])}) | |"]
        if "incremental" in rep:
            n, m_ = rep["incremental"]["nothing_changed_cli"], rep["incremental"]["nothing_changed_inprocess"]
            lines.append(f"| `index` with nothing changed: CLI, in-process | p50 {n['p50_ms']:.0f} ms, {m_['p50_ms']:.0f} ms | |")
        lines += ["", "| Source | sessions (workspace / status) | prompts (written / indexed) | files | MB | bare read "
                  "| index alone | index / bare | +1 exchange, p50: CLI `index`, in-process (files read) |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for name in ORDER:
            s, k = c["per_source"][name], rep["counted"][name]
            inc = rep.get("incremental", {}).get("per_source", {}).get(name)
            grown = f"{inc['cli']['p50_ms']:.0f} ms, {inc['inprocess']['p50_ms']:.0f} ms " \
                f"({'/'.join(map(str, sorted(set(inc['files_read']))))})" if inc else ""
            said = f"{k['prompts_written']:,} / {k['prompts_indexed']:,}" if k["prompts_written"] is not None \
                else f"— / {k['prompts_indexed']:,}"
            lines.append(f"| {LABELS[name]} | {k['written_in_scope']} / {k['status_sessions']} | {said} | {s['files']} | "
                         f"{s['bytes'] / 1e6:.1f} | {s['bare_ms']:.0f} ms | {s['index_alone_ms']:.0f} ms | "
                         f"{s['ratio']:.2f}× | {grown} |")
    if "hooks" in rep:
        k = rep["hooks"]
        ix = k["indexed_beforehand"]
        lines += ["", f"Hooks ({k['runs']} runs each, in turns; `python -c pass` p50 {k['python_c_pass']['p50_ms']:.0f} ms): "
                  f"the other agents' folders absent, holding the history above, holding {rep['many']['sessions_written']:,} "
                  f"one-exchange sessions of the six new sources (their cold `index` beforehand: {ix['many']['index_s']:.1f} s, "
                  f"{sum(rep['many']['in_scope'].values()):,} sessions of the workspace).", "",
                  "| Hook | absent p50 / p95 | history p50 / p95 | 10,000 sessions p50 / p95 | p50 ratio history / 10k vs absent |",
                  "|---|---|---|---|---|"]
        for what, label in (("session_start_up_to_date", "SessionStart, index up to date"),
                            ("session_start_after_one_exchange", "SessionStart after one exchange"),
                            ("stop_after_one_exchange", "Stop after one exchange")):
            v = k[what]
            cells = " | ".join(f"{v[s]['p50_ms']:.0f} / {v[s]['p95_ms']:.0f} ms" for s in ("absent", "history", "many"))
            lines.append(f"| {label} | {cells} | {v['p50_over_absent']['history']:.2f}× / {v['p50_over_absent']['many']:.2f}× |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
