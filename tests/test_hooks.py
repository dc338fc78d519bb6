"""Claude Code hooks, run the way Claude Code runs them (issue 3; DESIGN sections 2 and 6;
formats-claude-code.md section 3).

Every hook is started through the command string of hooks/hooks.json, with ${CLAUDE_PLUGIN_ROOT}
replaced by the plugin folder, run by bash (so the quoting is exercised), with the hook's JSON on
stdin, the current folder set to the workspace, and conftest's temporary HOME / Claude config /
workspace (all with spaces in their paths). The contract checked everywhere: exit 0, nothing on
stdout but a proper <prima-memory> block (SessionStart only), well inside the time budget, and a
line in .prima-memory/prima-memory.log when something went wrong.

The database is opened directly (read-only) only to see what a hook left in the index *before*
any CLI call, since the CLI brings the index up to date itself and would hide a hook that did not.
"""
from __future__ import annotations

import fcntl
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

from conftest import REPO, Env

START = 1_750_000_000.0  # June 2025: fixed, so dates in the briefing are predictable
HOUR = 3600.0
FAST = 5.0  # generous bound for one hook (not a benchmark): Claude Code waits on SessionStart

HOOKS_JSON = json.loads((REPO / "hooks" / "hooks.json").read_text(encoding="utf-8"))
EVENT_NAMES = {"session-start": "SessionStart", "stop": "Stop", "pre-compact": "PreCompact",
               "pre-tool-use": "PreToolUse", "post-tool-use-failure": "PostToolUseFailure",
               "user-prompt-submit": "UserPromptSubmit"}
EVENTS = ("session-start", "stop", "pre-compact")  # (the hooks that open the index every time)

# Secrets of formats the redactor knows (see test_reliability's secrets test).
ANT_KEY = "sk-ant-api03-" + "Zq8" * 31 + "AA"
AWS_ID = "AKIA" + "QWERTYUIOP234567"
GH_TOKEN = "ghp_" + "a1B2c3D4e5" * 3 + "F6g7H8"


def sid(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-{n:012x}"


# -- running hooks ---------------------------------------------------------------------------------

def command(event: str, root: Path = REPO) -> str:
    """The command line Claude Code runs for this event, from hooks/hooks.json."""
    entry = HOOKS_JSON["hooks"][EVENT_NAMES[event]][0]["hooks"][0]
    assert entry["type"] == "command"
    return entry["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(root))


class HookRun:
    def __init__(self, rc: int, out: str, err: str, secs: float):
        self.rc, self.out, self.err, self.secs = rc, out, err, secs

    def __repr__(self):
        return f"HookRun(rc={self.rc}, secs={self.secs:.2f}, out={self.out[:300]!r}, err={self.err[:600]!r})"


def payload(env: Env, event: str, session_id: str | None, **fields) -> dict:
    d = {"session_id": session_id,
         "transcript_path": str(env.project_dir / f"{session_id}.jsonl"),
         "cwd": str(env.ws), "hook_event_name": EVENT_NAMES.get(event, event),
         "permission_mode": "default"}
    d.update({"session-start": {"source": "startup"},
              "stop": {"stop_hook_active": False},
              "pre-compact": {"trigger": "auto", "custom_instructions": ""}}.get(event, {}))
    d.update(fields)
    return {k: v for k, v in d.items() if v is not None}


def hook_env(env: Env, extra: dict | None = None, unset=()) -> dict:
    e = dict(env.env)
    e.update(PRIMA_PYTHON=sys.executable, CLAUDE_PROJECT_DIR=str(env.ws),
             CLAUDE_PLUGIN_ROOT=str(REPO))
    e.update(extra or {})
    for k in unset:
        e.pop(k, None)
    return e


def _stdin_bytes(data) -> bytes | None:
    if data is subprocess.DEVNULL:
        return None
    if isinstance(data, (dict, list)):
        return json.dumps(data).encode()
    if isinstance(data, str):
        return data.encode()
    return data


def spawn(env: Env, event: str, data, *, extra_env=None, unset=(), cwd=None, root=REPO,
          cmd: str | None = None):
    """Start a hook; returns (process, stdin bytes, start time). `data`: dict, str, bytes or DEVNULL."""
    cmd = cmd or command(event, root)
    stdin = subprocess.DEVNULL if data is subprocess.DEVNULL else subprocess.PIPE
    t0 = time.monotonic()
    p = subprocess.Popen(["bash", "-c", cmd], stdin=stdin, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=str(cwd or env.ws),
                         env=hook_env(env, extra_env, unset), start_new_session=True)
    return p, _stdin_bytes(data), t0


def finish(started, timeout: float = 60) -> HookRun:
    p, data, t0 = started
    try:
        out, err = p.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        raise AssertionError(f"hook still running after {timeout}s: {err!r}") from None
    return HookRun(p.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                   time.monotonic() - t0)


def run_hook(env: Env, event: str, data=None, **kw) -> HookRun:
    return finish(spawn(env, event, {} if data is None else data, **kw))


# -- checking what a hook did ------------------------------------------------------------------------

def is_block(out: str, cap: int = 9000) -> bool:
    """A proper context block: one <prima-memory> ... </prima-memory>, nothing around it."""
    text = out.rstrip("\n")
    return (text.startswith("<prima-memory>") and text.endswith("</prima-memory>")
            and text.count("<prima-memory>") == 1 and text.count("</prima-memory>") == 1
            and len(text) <= cap)


def assert_fail_open(r: HookRun, event: str, limit: float = FAST) -> None:
    assert r.rc == 0, r
    assert r.secs < limit, r
    if event == "session-start":
        assert r.out == "" or is_block(r.out), r
    else:
        assert r.out == "", r
    assert "Traceback" not in r.err, r


def log_lines(env: Env) -> list[str]:
    p = env.data / "prima-memory.log"
    return p.read_text(encoding="utf-8", errors="replace").splitlines() if p.exists() else []


def query(env: Env, sql: str, args=()) -> list:
    db = apsw.Connection(str(env.data / "index.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return list(db.execute(sql, args))
    finally:
        db.close()


def integrity(env: Env) -> list[str]:
    db = apsw.Connection(str(env.data / "index.db"))
    try:
        out = [r[0] for r in db.execute("PRAGMA integrity_check")]
        try:
            db.execute("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')")
        except apsw.Error as e:
            out.append(f"messages_fts: {e}")
        return out
    finally:
        db.close()


def texts_with(env: Env, session_id: str, word: str) -> list[tuple[str, str]]:
    """(role, text) of the session's messages containing the word, straight from the index."""
    return query(env, "SELECT m.role, m.text FROM messages m JOIN sessions s ON s.id = m.session "
                      "WHERE s.session_id = ? AND m.text LIKE ? ORDER BY m.id",
                 (session_id, f"%{word}%"))


def fts_sessions(env: Env, word: str) -> list[str]:
    """Session ids of every message the keyword index returns for one word (with repeats)."""
    return sorted(r[0] for r in query(
        env, "SELECT s.session_id FROM messages_fts f JOIN messages m ON m.id = f.rowid "
             "JOIN sessions s ON s.id = m.session WHERE messages_fts MATCH ?", (f'"{word}"',)))


def indexed_sessions(env: Env) -> set[str]:
    if not (env.data / "index.db").exists():
        return set()
    return {r[0] for r in query(env, "SELECT s.session_id FROM sessions s WHERE EXISTS "
                                     "(SELECT 1 FROM messages m WHERE m.session = s.id)")}


def provisional_rows(env: Env) -> int:
    from prima_memory.indexer import PROVISIONAL_KEY
    return query(env, "SELECT count(*) FROM messages WHERE key = ?", (PROVISIONAL_KEY,))[0][0]


def search_ids(env: Env, words: str) -> list[str]:
    return [r["session_id"] for r in env.search(words)]


def shown_messages(env: Env, session_id: str) -> list[dict]:
    s = env.json("show", session_id)["session"]
    msgs = [m for m in s["messages"] if not m["sidechain"]]
    assert s["message_count"] == len(msgs), (s["message_count"], msgs)
    return msgs


def local_minute(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def checkpoint_files(env: Env, session_id: str) -> list[Path]:
    return sorted(Path(p) for p in glob.glob(
        str(env.data / "extracts" / "*" / f"*{session_id}-checkpoint*.md")))


# -- the workspaces ----------------------------------------------------------------------------------

A, B, C, D = sid(0xA), sid(0xB), sid(0xC), sid(0xD)
LONG_A = ("The wombatstop change is in: the export button now uses the brand blue, the CSV "
          "writer escapes quotes and newlines, and the header row follows the column order of "
          "the invoice table. " + "Details follow. " * 150 + "TAILMARKER the very end.")


def briefing_workspace(env: Env) -> dict:
    """Three earlier sessions (A oldest, C newest) and the current one (D, newer still)."""
    a = env.transcript(A, start=START, branch="feature/invoice-export")
    a.exchange("Add CSV export to the invoice page", "I'll implement the export in src/export.py.")
    a.tool("Write", {"file_path": str(env.ws / "src" / "export.py"), "content": "import csv\n"},
           text="Writing the exporter module.")
    a.user("also make the quokkaexport button blue")
    a.reply(LONG_A)
    a.tool("Edit", {"file_path": str(env.ws / "src" / "button.css"), "old_string": "red",
                    "new_string": "blue"}, text="Now the colour.")
    a.reply("Done.")

    b = env.transcript(B, start=START + 2 * HOUR, branch="bugfix/login-crash")
    b.exchange("Fix the login crash when the password field is empty",
               "Found it: the crash comes from a missing None check in auth.py. " + "More. " * 40)
    b.tool("Edit", {"file_path": str(env.ws / "app" / "auth.py"), "old_string": "if pw",
                    "new_string": "if pw is not None"}, text="Fixing the None check.")
    b.tool("Write", {"file_path": str(env.ws / "tests" / "test_auth.py"), "content": "def test(): pass"},
           text="Adding a regression test.")
    b.user(f"rotate the staging key {ANT_KEY} after this")
    b.reply(f"Noted. The AWS id {AWS_ID} used for eu-west-1 is rotated as well, and the pytest "
            "suite passes again with the regression test for the empty password field included. "
            + "Checked. " * 20)

    c = env.transcript(C, start=START + 4 * HOUR, branch="main")
    c.raw({"type": "custom-title", "customTitle": "Quarterly pipeline cleanup", "sessionId": C})
    c.exchange("refactor the report pipeline", "The pelicanreply refactor is done: the report "
               "pipeline now has three stages, each with its own retry policy. " + "Stage. " * 30)

    d = env.transcript(D, start=START + 6 * HOUR, branch="main")
    d.user("Start the capybara migration now")
    return {"A": a, "B": b, "C": c, "D": d}


# -- hooks.json ------------------------------------------------------------------------------------

def test_hooks_json_quotes_the_plugin_root_and_fits_its_timeouts():
    from prima_memory.hooks import LIMITS
    hooks = HOOKS_JSON["hooks"]
    assert set(hooks) == {"SessionStart", "Stop", "PreCompact", "UserPromptSubmit", "PreToolUse",
                          "PostToolUseFailure"}
    matchers = set(hooks["SessionStart"][0]["matcher"].split("|"))
    assert {"startup", "resume", "clear", "compact"} <= matchers
    for event, name in EVENT_NAMES.items():
        entry = hooks[name][0]["hooks"][0]
        # quoted, so a plugin folder with a space in its path works
        assert f'bash "${{CLAUDE_PLUGIN_ROOT}}/hooks/run.sh" hook {event}' == entry["command"]
        # timeouts are in seconds, and each hook's own hard deadline ends before Claude Code's
        assert 1 <= entry["timeout"] <= 120, entry
        assert LIMITS[event][2] < entry["timeout"], (event, LIMITS[event], entry)


# -- SessionStart: the briefing ----------------------------------------------------------------------

@pytest.mark.parametrize("source", ["startup", "resume", "clear"])
def test_briefing_tells_recent_work_as_quoted_data(env, source):
    briefing_workspace(env)
    r = run_hook(env, "session-start", payload(env, "session-start", D, source=source))
    assert r.rc == 0 and r.secs < FAST, r
    out = r.out
    assert is_block(out, 2500), r
    low = out.lower()
    assert "quoted data" in low and "not instructions" in low  # framed as data, not orders
    assert re.search(r"/(prima-memory:)?recall\b", out), out  # how to search
    tools = [ln for ln in out.splitlines() if "MCP" in ln]  # and that the tools exist, in a line
    assert len(tools) == 1 and all(t in tools[0] for t in ("search_sessions", "recall_session")), out
    # the current session is not briefed to itself
    assert D not in out and "capybara" not in low
    # newest first; a block per session runs from its title to the next one's
    titles = {"C": "Quarterly pipeline cleanup", "B": "Fix the login crash when the password field is empty",
              "A": "Add CSV export to the invoice page"}
    pos = {k: out.find(t) for k, t in titles.items()}
    assert all(p >= 0 for p in pos.values()), (pos, out)
    assert pos["C"] < pos["B"] < pos["A"], out
    block = {"C": out[pos["C"]:pos["B"]], "B": out[pos["B"]:pos["A"]], "A": out[pos["A"]:]}
    line_of = {k: out[out.rfind("\n", 0, p) + 1:out.find("\n", p)] for k, p in pos.items()}
    starts = {"A": START, "B": START + 2 * HOUR, "C": START + 4 * HOUR}
    branches = {"A": "feature/invoice-export", "B": "bugfix/login-crash", "C": "main"}
    for k in "ABC":
        assert local_minute(starts[k] + 30)[:10] in line_of[k], (k, line_of[k])  # when
        assert branches[k] in line_of[k], (k, line_of[k])
    # A: files changed, the last request and where it stopped: "Done." says too little on
    # its own, so the reply before it that says something comes first (shortened), then "Done."
    assert "src/export.py" in block["A"] and "src/button.css" in block["A"], block["A"]
    assert str(env.ws) + "/src/export.py" not in block["A"]  # shown relative to the project
    assert "tags:" not in out  # (unless asked: test_briefing_tags_only_when_asked)
    assert "also make the quokkaexport button blue" in block["A"]
    assert "wombatstop" in block["A"], block["A"]  # not the short "Done." that came after it
    assert "TAILMARKER" not in out  # shortened
    stop_line = next(ln for ln in block["A"].splitlines() if "wombatstop" in ln)
    assert len(stop_line) < 700, stop_line
    assert "where it stopped" in stop_line and stop_line.endswith('Done."'), stop_line
    assert "Now the colour" not in stop_line  # narration between tool calls says no more
    # B: files; its secrets never reach Claude
    assert "app/auth.py" in block["B"] and "tests/test_auth.py" in block["B"], block["B"]
    assert "rotate the staging key" in block["B"]
    for secret in (ANT_KEY, ANT_KEY[13:50], AWS_ID):
        assert secret not in out
    assert "[REDACTED" in block["B"]
    assert "pelicanreply" in block["C"]


LEAK = ("The leak is in the WebSocket layer: every reconnect adds a 'message' listener to the "
        "shared emitter and nothing removes it, so each closed socket stays reachable. Heap "
        "snapshots would show thousands of WebSocket objects. " + "More evidence. " * 15)
LEAK_FIX = "Fixed: the socket listeners are removed on close; RSS stays flat at 180 MB."


def test_briefing_says_where_a_session_really_stopped(env):
    """Issue #20: a memory-leak session ends on its fix, one sentence after a long diagnosis;
    the briefing says the fix, not the diagnosis. Another ends on "Done.": the reply before it,
    then "Done."."""
    a = env.transcript(A, start=START, branch="fix/leak")
    a.exchange("Why does the server's memory keep growing?", LEAK)
    a.tool("Edit", {"file_path": str(env.ws / "src" / "ws.js"), "old_string": "on(",
                    "new_string": "once("}, text="Removing the listener on close.")
    a.exchange("Fix it", LEAK_FIX)
    b = env.transcript(B, start=START + HOUR, branch="main")
    b.exchange("Bump the parser to 2.0", "Bumped the parser to 2.0 in pyproject.toml and "
               "regenerated the lock file; the 214 tests pass.")
    b.exchange("Commit it", "Done.")
    env.transcript(D, start=START + 2 * HOUR).user("What next?")
    r = run_hook(env, "session-start", payload(env, "session-start", D))
    assert r.rc == 0 and is_block(r.out), r
    stops = [ln.strip() for ln in r.out.splitlines() if "where it stopped" in ln]
    assert stops == [
        'where it stopped: "Bumped the parser to 2.0 in pyproject.toml and regenerated the lock '
        'file; the 214 tests pass. Done."',
        f'where it stopped: "{LEAK_FIX}"'], r.out
    assert "Heap snapshots" not in r.out


def test_briefing_without_claude_project_dir_uses_the_hook_folder(env):
    briefing_workspace(env)
    r = run_hook(env, "session-start", payload(env, "session-start", D),
                 unset=("CLAUDE_PROJECT_DIR",))
    assert r.rc == 0 and is_block(r.out), r
    assert "Quarterly pipeline cleanup" in r.out
    assert (env.ws / ".prima-memory" / "index.db").exists()


def test_hook_in_a_subfolder_serves_the_project(env):
    """Claude Code runs hooks in the session's current folder; CLAUDE_PROJECT_DIR names the project."""
    briefing_workspace(env)
    sub = env.ws / "src dir" / "deep"
    sub.mkdir(parents=True)
    data = payload(env, "session-start", D, cwd=str(sub))
    r = run_hook(env, "session-start", data, cwd=sub)
    assert r.rc == 0 and is_block(r.out) and "Quarterly pipeline cleanup" in r.out, r
    r = run_hook(env, "stop", payload(env, "stop", D, cwd=str(sub)), cwd=sub)
    assert r.rc == 0 and r.out == "", r
    assert not (sub / ".prima-memory").exists() and not (env.ws / "src dir" / ".prima-memory").exists()
    assert D in indexed_sessions(env)


def _busy_workspace(env: Env, sessions: int = 8) -> list[str]:
    """Sessions with long titles, prompts, replies and many changed files; newest last."""
    ids = []
    for n in range(sessions):
        s = sid(0x100 + n)
        ids.append(s)
        t = env.transcript(s, start=START + n * HOUR, branch=f"feature/very-long-branch-name-{n}-" + "x" * 40)
        t.exchange(f"Session{n}marker " + "please rework the whole billing subsystem " * 8,
                   "Reworked. " + "The subsystem now has clear module boundaries. " * 40)
        for f in range(12):
            t.tool("Edit", {"file_path": str(env.ws / "pkg" / f"module_{n}_{f}.py"),
                            "old_string": "a", "new_string": "b"}, text=f"Edit {f}: " + "because " * 30)
        t.exchange("and what about the tests? " + "consider every edge case " * 20,
                   "Tests added and passing. " + "Each edge case is covered by a test. " * 40)
    return ids


def test_briefing_default_cap(env):
    _busy_workspace(env)
    r = run_hook(env, "session-start", payload(env, "session-start", sid(0xFFF)))
    assert r.rc == 0 and r.secs < FAST, r
    assert is_block(r.out, 2500), (len(r.out.rstrip("\n")), r)
    assert "Session7marker" in r.out  # the newest session is there
    assert sum(f"Session{n}marker" in r.out for n in range(8)) <= 5


@pytest.mark.parametrize("value, cap, at_least", [
    ("1200", 1200, 1),       # small: still tells the newest session
    ("300", 300, 0),         # tiny: a block that fits, or nothing
    ("100000", 9000, 2),     # huge: never over the hard cap
    ("not a number", 2500, 1),
    ("-5", 2500, 0),
])
def test_briefing_chars_setting(env, value, cap, at_least):
    _busy_workspace(env)
    r = run_hook(env, "session-start", payload(env, "session-start", sid(0xFFF)),
                 extra_env={"PRIMA_BRIEFING_CHARS": value})
    assert r.rc == 0 and r.secs < FAST, r
    assert len(r.out.rstrip("\n")) <= cap, (len(r.out), r)
    assert r.out == "" or is_block(r.out, cap), r
    assert sum(f"Session{n}marker" in r.out for n in range(8)) >= at_least, r


def test_briefing_never_over_the_hard_cap_with_huge_fields(env):
    """File paths are not shortened: long ones must still not push the briefing past 9,000."""
    for n in range(6):
        t = env.transcript(sid(0x200 + n), start=START + n * HOUR)
        t.user(f"Longpaths{n} work on the nested modules")
        for f in range(5):
            deep = "/".join(["very-deeply-nested-folder-name"] * 20) + f"/file_{n}_{f}.py"
            t.tool("Write", {"file_path": str(env.ws / deep), "content": "x"}, text="Writing.")
        t.reply("Done with the nested modules. " + "More detail. " * 30)
    r = run_hook(env, "session-start", payload(env, "session-start", sid(0xFFF)),
                 extra_env={"PRIMA_BRIEFING_CHARS": "50000"})
    assert r.rc == 0, r
    assert len(r.out.rstrip("\n")) <= 9000, len(r.out)
    assert is_block(r.out) and "Longpaths5" in r.out, r


def test_no_briefing_without_sessions(env):
    # no Claude Code project folder at all
    r = run_hook(env, "session-start", payload(env, "session-start", A))
    assert (r.rc, r.out) == (0, ""), r
    # a project folder with nothing in it
    env.project_dir.mkdir(parents=True)
    r = run_hook(env, "session-start", payload(env, "session-start", A))
    assert (r.rc, r.out) == (0, ""), r
    # only the session that is starting
    t = env.transcript(A, start=START)
    t.exchange("a first question about the heronbeak", "A first answer. " * 30)
    for source in ("startup", "resume", "clear"):
        r = run_hook(env, "session-start", payload(env, "session-start", A, source=source))
        assert (r.rc, r.out) == (0, ""), r
        assert r.secs < FAST


def test_briefing_indexes_newest_first_within_its_budget(env):
    """A large history not yet indexed: SessionStart indexes within its budget, newest files first,
    and the briefing tells the newest session. (On a fast machine everything fits: still true.)"""
    n_sessions, per = 50, 40
    filler = " ".join(f"w{i}q" for i in range(300))
    order = []
    for n in range(n_sessions):
        s = sid(0x300 + n)
        order.append(s)
        path = env.project_dir / f"{s}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = []
        for j in range(per):
            ts = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(START + n * HOUR + j * 10))
            base = {"isSidechain": False, "userType": "external", "cwd": str(env.ws),
                    "sessionId": s, "version": "2.1.100", "gitBranch": "main", "timestamp": ts}
            lines.append(json.dumps({**base, "type": "user", "uuid": f"{s[:8]}-u{j}",
                                     "message": {"role": "user", "content": f"Bulk{n}topic q{j} {filler}"}}))
            lines.append(json.dumps({**base, "type": "assistant", "uuid": f"{s[:8]}-a{j}",
                                     "message": {"id": f"msg_{n}_{j}", "role": "assistant", "model": "m",
                                                 "content": [{"type": "text", "text": f"a{j} {filler} {filler}"}]}}))
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.utime(path, (START + n * HOUR, START + n * HOUR))
    r = run_hook(env, "session-start", payload(env, "session-start", sid(0xFFF)))
    assert r.rc == 0 and r.secs < FAST, r
    assert is_block(r.out, 2500), r
    assert f"Bulk{n_sessions - 1}topic" in r.out  # the newest session is briefed
    done = indexed_sessions(env)
    assert done, "nothing indexed"
    # newest first: what got indexed is the newest k files, with no gap
    k = len(done)
    assert done == set(order[-k:]), (k, sorted(order.index(s) for s in done))
    assert integrity(env) == ["ok"]


# -- PreCompact and SessionStart "compact" -----------------------------------------------------------

S, T = sid(0x51), sid(0x52)


def compact_workspace(env: Env):
    t = env.transcript(S, start=START, branch="feature/ledger")
    t.exchange("Design the ledger sync for the billing service",
               "We decided to use SQLite WAL mode for the ledger cache, because readers must never "
               "wait for the writer. " + "Reasoning. " * 30)
    t.tool("Edit", {"file_path": str(env.ws / "src" / "ledger.py"), "old_string": "a", "new_string": "b"},
           text="Updating the ledger writer to batch inserts.")
    t.exchange("now handle the retry path",
               f"Retries now back off exponentially (checkpointalpha); the token {GH_TOKEN} stays "
               "in the environment. " + "Retry detail. " * 20)
    other = env.transcript(T, start=START + HOUR, branch="main")
    other.exchange("Tune the otherproject caching layer", "Tuned. otherprojectword " * 20)
    return t, other


def test_a_session_started_in_the_home_folder_compacts_without_writing_there(env):
    """(issue #38: nothing is written in ~) A Claude Code session run in the home folder is
    briefed, checkpointed before compaction and given it back after, all from the user-level
    store: no ~/.prima-memory appears."""
    from conftest import Transcript, encode
    sid = "c0c0c0c0-0000-4000-8000-000000000003"
    t = Transcript(env.claude / "projects" / encode(str(env.home)) / f"{sid}.jsonl", sid,
                   str(env.home), start=START)
    t.exchange("sort my downloads folder by year", "Sorted them: homecheckpointword. " * 5)
    home = {"CLAUDE_PROJECT_DIR": str(env.home)}
    data = {"session_id": sid, "transcript_path": str(t.path), "cwd": str(env.home),
            "permission_mode": "default"}
    for event, fields in (("session-start", {"source": "startup"}),
                          ("pre-compact", {"trigger": "auto", "custom_instructions": ""}),
                          ("session-start", {"source": "compact"})):
        r = run_hook(env, event, {**data, "hook_event_name": EVENT_NAMES[event], **fields},
                     extra_env=home, cwd=env.home)
        assert r.rc == 0, r
    assert "homecheckpointword" in r.out and is_block(r.out, 6000), r
    assert not (env.home / ".prima-memory").exists()


def test_compact_round_trip(env):
    t, other = compact_workspace(env)
    before = time.time()
    r1 = run_hook(env, "pre-compact", payload(env, "pre-compact", S, trigger="manual"))
    assert r1.rc == 0 and r1.out == "" and r1.secs < FAST, r1
    files = checkpoint_files(env, S)
    assert len(files) == 1, files
    first = files[0]
    # .prima-memory/extracts/<project-id>/YYYY-MM-DD-HHMM-<session-id>-checkpoint.md
    assert first.parent == env.data / "extracts" / "my-project", first
    m = re.fullmatch(rf"(\d{{4}}-\d{{2}}-\d{{2}}-\d{{4}})-{S}-checkpoint\.md", first.name)
    assert m, first.name
    stamps = {time.strftime("%Y-%m-%d-%H%M", time.localtime(x)) for x in (before, time.time())}
    assert m.group(1) in stamps, (m.group(1), stamps)
    text1 = first.read_text(encoding="utf-8")
    low = text1.lower()
    assert "design the ledger sync for the billing service" in low  # title
    for section in ("what was asked", "decisions", "files changed", "last exchanges", "where it stopped"):
        assert section in low, (section, text1)
    assert "now handle the retry path" in text1  # what was asked / where it stopped
    assert "decided to use SQLite WAL mode" in text1  # decisions
    assert "src/ledger.py" in text1 and "batch inserts" in text1  # files with explanations
    assert "checkpointalpha" in text1  # the last exchanges
    assert GH_TOKEN not in text1 and GH_TOKEN[4:24] not in text1
    assert "otherprojectword" not in text1
    mtime1 = first.stat().st_mtime_ns

    # more work, then a second compaction (most likely in the same minute): a new file
    t.exchange("add metrics for the retry path", "Added the metrics: checkpointbravo counters. " * 5)
    r2 = run_hook(env, "pre-compact", payload(env, "pre-compact", S, trigger="auto"))
    assert r2.rc == 0 and r2.out == "", r2
    files = checkpoint_files(env, S)
    assert len(files) == 2, files
    second = next(f for f in files if f != first)
    assert first.read_text(encoding="utf-8") == text1 and first.stat().st_mtime_ns == mtime1
    assert "checkpointbravo" in second.read_text(encoding="utf-8")
    assert "checkpointbravo" not in text1

    # another session compacts after: its checkpoint is the newest overall
    r3 = run_hook(env, "pre-compact", payload(env, "pre-compact", T))
    assert r3.rc == 0 and len(checkpoint_files(env, T)) == 1, r3

    r = run_hook(env, "session-start", payload(env, "session-start", S, source="compact"))
    assert r.rc == 0 and r.secs < FAST, r
    assert is_block(r.out, 6000), r
    assert "checkpointbravo" in r.out  # the latest checkpoint of THIS session
    assert "otherprojectword" not in r.out and "Tune the otherproject" not in r.out
    assert "Recent sessions in this workspace" not in r.out  # the checkpoint instead of the briefing
    assert "quoted data" in r.out.lower() and "not instructions" in r.out.lower()
    assert GH_TOKEN not in r.out
    # nothing was overwritten along the way
    assert first.read_text(encoding="utf-8") == text1


def test_compact_without_a_checkpoint_of_this_session(env):
    compact_workspace(env)
    assert run_hook(env, "pre-compact", payload(env, "pre-compact", T)).rc == 0
    r = run_hook(env, "session-start", payload(env, "session-start", S, source="compact"))
    assert r.rc == 0 and (r.out == "" or is_block(r.out)), r
    assert "Checkpoint" not in r.out and "compacted" not in r.out  # never another session's


def test_compact_picks_the_later_checkpoint_when_mtimes_tie(env):
    """Two compactions in one minute on a file system with coarse timestamps (or after a copy
    that reset them): the later checkpoint is still the one injected."""
    t, _ = compact_workspace(env)
    assert run_hook(env, "pre-compact", payload(env, "pre-compact", S)).rc == 0
    t.exchange("one more step", "Final step done: tiebreakerword. " * 5)
    assert run_hook(env, "pre-compact", payload(env, "pre-compact", S)).rc == 0
    files = checkpoint_files(env, S)
    assert len(files) == 2
    later = next(f for f in files if "tiebreakerword" in f.read_text(encoding="utf-8"))
    earlier = next(f for f in files if f != later)
    if earlier.name[:15] != later.name[:15]:
        pytest.skip("the two checkpoints fell in different minutes")
    stamp = int(time.time())
    for f in files:
        os.utime(f, (stamp, stamp))
    r = run_hook(env, "session-start", payload(env, "session-start", S, source="compact"))
    assert r.rc == 0 and is_block(r.out), r
    assert "tiebreakerword" in r.out, (earlier.name, later.name, r.out[:400])


def _long_session(env: Env, session_id: str) -> None:
    t = env.transcript(session_id, start=START, branch="main")
    for n in range(30):
        t.exchange(f"Step {n} of the longcheckpoint work: " + "describe the change in detail " * 30,
                   f"Step {n} done. " + "A long explanation of what changed and why. " * 40)
    t.exchange("the final longrequestword step", "Finished: finalreplyword. " + "Summary. " * 40)


@pytest.mark.parametrize("value, cap", [(None, 6000), ("2000", 2000), ("100000", 9000),
                                        ("300", 300)])
def test_compact_checkpoint_within_its_cap(env, value, cap):
    _long_session(env, S)
    assert run_hook(env, "pre-compact", payload(env, "pre-compact", S)).rc == 0
    (cp,) = checkpoint_files(env, S)
    assert len(cp.read_text(encoding="utf-8")) > 9000  # big enough for every cap to bite
    extra = {} if value is None else {"PRIMA_CHECKPOINT_CHARS": value}
    r = run_hook(env, "session-start", payload(env, "session-start", S, source="compact"),
                 extra_env=extra)
    assert r.rc == 0 and r.secs < FAST, r
    assert len(r.out.rstrip("\n")) <= cap, len(r.out)
    assert r.out == "" or is_block(r.out, cap), r.out[-300:]
    if cap >= 2000:
        assert r.out, r
        assert "where it stopped" in r.out.lower() and "longrequestword" in r.out


def test_a_checkpoint_of_a_gigabyte_is_read_to_its_cap_only(env):
    """A checkpoint in a cloned workspace can be anything: grown to a sparse 1 GB, only what the
    cap can use is read. (#18: the hook read it whole, gigabytes for a 6000-character block)"""
    compact_workspace(env)
    assert run_hook(env, "pre-compact", payload(env, "pre-compact", S)).rc == 0
    (cp,) = checkpoint_files(env, S)
    os.truncate(cp, 1 << 30)
    r = run_hook(env, "session-start", payload(env, "session-start", S, source="compact"))
    assert r.rc == 0 and r.secs < 2, r
    assert is_block(r.out, 6000) and "checkpointalpha" in r.out, r.out[-300:]


# -- Stop -------------------------------------------------------------------------------------------

def test_stop_makes_a_just_appended_exchange_searchable(env):
    t = env.transcript(A, start=START)
    t.exchange("first question about the marmot", "First answer about the marmot.")
    r = run_hook(env, "stop", payload(env, "stop", A, last_assistant_message="First answer about the marmot."))
    assert r.rc == 0 and r.out == "" and r.secs < FAST, r
    assert A in indexed_sessions(env)
    t.exchange("what about the narwhalgizmo?", "The narwhalgizmo is configured for production.")
    r = run_hook(env, "stop", payload(env, "stop", A,
                                      last_assistant_message="The narwhalgizmo is configured for production."))
    assert r.rc == 0 and r.out == "" and r.secs < FAST, r
    # indexed by the hook itself (no CLI has run since): the prompt and the reply, once each
    assert [role for role, _ in texts_with(env, A, "narwhalgizmo")] == ["user", "assistant"]
    assert fts_sessions(env, "narwhalgizmo") == [A, A]
    assert search_ids(env, "narwhalgizmo") == [A]


def test_stop_before_its_transcript_exists_leaves_the_session_owed_and_says_so(env):
    """Claude Code writes a transcript asynchronously; on a loaded machine it can come after the
    Stop's wait. The session is then owed to the next SessionStart, and the log says why."""
    env.transcript(A, start=START).exchange("index me first", "Indexed.")
    assert run_hook(env, "stop", payload(env, "stop", A)).rc == 0
    r = run_hook(env, "stop", payload(env, "stop", B))  # B's file is not written yet
    assert r.rc == 0 and r.out == "", r
    assert query(env, "SELECT key FROM meta WHERE key = ?", (f"owed:{B}",)) == [(f"owed:{B}",)]
    assert any("no reply in the transcript after" in ln for ln in log_lines(env)), log_lines(env)
    env.transcript(B, start=START).exchange("the late kestrelwing file", "Here now.")
    assert run_hook(env, "session-start", payload(env, "session-start", "c" * 8)).rc == 0
    assert B in indexed_sessions(env)
    assert query(env, "SELECT key FROM meta WHERE key LIKE 'owed:%'") == []


def test_stop_waits_for_the_reply_of_a_transcript_written_in_steps(env):
    """A forked session's file shows its first records (a mode line) before the turns it copies
    and its own: Stop waits a moment for a reply in it (the hook's own wait, in-process: a
    subprocess's start would hide the race), and the session is indexed whole."""
    import threading
    from prima_memory import hooks
    from prima_memory.memory import Memory
    path = env.project_dir / f"{B}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"type": "mode", "sessionId": B}) + "\n")
    later = threading.Timer(0.1, lambda: env.transcript(B, start=START).exchange(
        "what was the quillwort plan?", "Planting in May."))
    later.start()
    mem = Memory(str(env.ws))
    try:
        assert hooks._await_transcript(mem, str(path))
        assert "Planting in May" in path.read_text()  # it returned once the reply was there
        later.join()
        hooks.stop(mem, {"transcript_path": str(path)}, B, 3.0, 5.0)
    finally:
        mem.close()
    assert [role for role, _ in texts_with(env, B, "quillwort")] == ["user"]
    assert [role for role, _ in texts_with(env, B, "May")] == ["assistant"]


def test_stop_with_a_lagging_transcript_keeps_the_reply_once(env):
    t = env.transcript(A, start=START)
    t.exchange("set up the otter pipeline", "The otter pipeline is set up.")
    assert run_hook(env, "stop", payload(env, "stop", A)).rc == 0
    reply1 = "The ocelotfeather cache keeps the last 500 entries and evicts the oldest first."
    t.user("explain the ocelot cache")  # the reply is not in the file yet
    r = run_hook(env, "stop", payload(env, "stop", A, last_assistant_message=reply1))
    assert r.rc == 0 and r.out == "" and r.secs < FAST, r
    assert [role for role, _ in texts_with(env, A, "ocelotfeather")] == ["assistant"]
    assert fts_sessions(env, "ocelotfeather") == [A]
    assert search_ids(env, "ocelotfeather") == [A]

    # the transcript catches up, and the next turn lags in turn
    t.reply(reply1)
    reply2 = "The zebrafinch migration ran cleanly on all four shards."
    t.user("now run the zebra migration")
    r = run_hook(env, "stop", payload(env, "stop", A, last_assistant_message=reply2))
    assert r.rc == 0 and r.out == "", r
    assert len(texts_with(env, A, "ocelotfeather")) == 1
    assert len(texts_with(env, A, "zebrafinch")) == 1

    t.reply(reply2)
    r = run_hook(env, "stop", payload(env, "stop", A, last_assistant_message=reply2, stop_hook_active=True))
    assert r.rc == 0 and r.out == "", r
    assert len(texts_with(env, A, "ocelotfeather")) == 1
    assert len(texts_with(env, A, "zebrafinch")) == 1
    assert provisional_rows(env) == 0
    assert fts_sessions(env, "ocelotfeather") == [A]
    assert fts_sessions(env, "zebrafinch") == [A]
    msgs = shown_messages(env, A)
    assert [m["text"] for m in msgs] == [
        "set up the otter pipeline", "The otter pipeline is set up.",
        "explain the ocelot cache", reply1, "now run the zebra migration", reply2]
    assert integrity(env) == ["ok"]


def test_repeated_stop_while_the_transcript_lags_keeps_the_reply(env):
    """The same Stop input twice before the transcript has the reply (the plugin installed at two
    scopes runs two Stop hooks; a retried hook): the reply must stay searchable, once."""
    t = env.transcript(A, start=START)
    t.exchange("set up the otter pipeline", "The otter pipeline is set up.")
    reply = "The ocelotfeather cache keeps the last 500 entries and evicts the oldest first."
    t.user("explain the ocelot cache")
    for n in range(3):
        r = run_hook(env, "stop", payload(env, "stop", A, last_assistant_message=reply))
        assert r.rc == 0 and r.out == "", r
        assert [role for role, _ in texts_with(env, A, "ocelotfeather")] == ["assistant"], n
    t.reply(reply)
    assert run_hook(env, "stop", payload(env, "stop", A, last_assistant_message=reply)).rc == 0
    assert len(texts_with(env, A, "ocelotfeather")) == 1
    assert provisional_rows(env) == 0


def test_stop_last_reply_is_redacted(env):
    t = env.transcript(A, start=START)
    t.user("configure the gannetclient")
    reply = f"Configured gannetclient with key {ANT_KEY} as requested."
    r = run_hook(env, "stop", payload(env, "stop", A, last_assistant_message=reply))
    assert r.rc == 0 and r.out == "", r
    (row,) = texts_with(env, A, "Configured gannetclient")
    assert ANT_KEY not in row[1] and "[REDACTED" in row[1]
    raw = b"".join(p.read_bytes() for p in env.data.rglob("*") if p.is_file())
    assert ANT_KEY.encode() not in raw and ANT_KEY[13:60].encode() not in raw


def test_stop_writes_the_extract_once_the_session_is_substantial(env):
    t = env.transcript(A, start=START)
    for n in range(20):  # 40 messages, 12 minutes, no files: not substantial yet
        t.exchange(f"question {n} about the puffin colony", f"Answer {n} about the puffin colony.")
    r = run_hook(env, "stop", payload(env, "stop", A))
    assert r.rc == 0 and r.out == "", r
    pattern = str(env.data / "extracts" / "*" / "*-session-extract.md")
    assert glob.glob(pattern) == []
    for n in range(20, 30):  # 60 messages: substantial
        t.exchange(f"question {n} about the puffin colony", f"Answer {n} about the puffin colony.")
    r = run_hook(env, "stop", payload(env, "stop", A, last_assistant_message="Answer 29 about the puffin colony."))
    assert r.rc == 0 and r.out == "" and r.secs < FAST, r
    found = glob.glob(pattern)
    assert len(found) == 1, found
    path = Path(found[0])
    assert path.parent == env.data / "extracts" / "my-project"
    assert path.name == time.strftime("%Y-%m-%d-%H%M", time.localtime(START + 30)) + "-session-extract.md"
    body = path.read_text(encoding="utf-8")
    assert A in body and "puffin colony" in body
    # written once, never rewritten
    t.exchange("question 30 about the puffin colony", "Answer 30.")
    mtime = path.stat().st_mtime_ns
    assert run_hook(env, "stop", payload(env, "stop", A)).rc == 0
    assert glob.glob(pattern) == [found[0]] and path.stat().st_mtime_ns == mtime


# -- fail open --------------------------------------------------------------------------------------

BAD_STDIN = {
    "empty": b"",
    "devnull": subprocess.DEVNULL,
    "invalid": b"{not json at all",
    "partial": b'{"session_id": "' + sid(1).encode() + b'", "cwd": "/tmp/wor',
    "array": json.dumps([{"session_id": sid(1)}]).encode(),
    "string": b'"hello"',
    "null": b"null",
    "binary": bytes(range(256)) * 8,
    "missing-fields": b"{}",
    "wrong-types": json.dumps({"session_id": 42, "cwd": ["x"], "transcript_path": None, "source": 7,
                               "trigger": {}, "last_assistant_message": ["a"],
                               "stop_hook_active": "yes", "hook_event_name": 3}).encode(),
    "hostile-session-id": json.dumps({"session_id": "../../*?[x", "source": "compact",
                                      "last_assistant_message": "hi"}).encode(),
    "unknown-session": None,  # filled in per test: valid JSON, a session nobody has
}


def _one_session(env: Env) -> None:
    t = env.transcript(sid(1), start=START)
    t.exchange("remember the failopenword task", "The failopenword task is done. " * 10)


@pytest.mark.parametrize("event", EVENTS)
@pytest.mark.parametrize("case", list(BAD_STDIN))
def test_bad_stdin_fails_open(env, event, case):
    _one_session(env)
    data = BAD_STDIN[case]
    if case == "unknown-session":
        data = payload(env, event, sid(0xDEAD), source="compact")
    r = run_hook(env, event, data)
    assert_fail_open(r, event)
    if (env.data / "index.db").exists():
        assert integrity(env) == ["ok"]


def test_stdin_left_open_fails_open(env):
    """A mis-started hook whose stdin never ends: it must not wait for it past its budget."""
    _one_session(env)
    procs = {event: subprocess.Popen(["bash", "-c", command(event)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     cwd=str(env.ws), env=hook_env(env)) for event in EVENTS}
    t0 = time.monotonic()
    try:
        for event, p in procs.items():
            rc = p.wait(timeout=15)
            secs = time.monotonic() - t0
            out = p.stdout.read().decode()
            assert rc == 0 and secs < FAST, (event, rc, secs)
            assert out == "" or (event == "session-start" and is_block(out)), (event, out)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.stdin.close()
            p.wait()
            p.stdout.close()
            p.stderr.close()


def test_bad_stdin_leaves_a_line_in_the_log(env):
    """The issue: empty, invalid or partial stdin -> exit 0, nothing on stdout, a line in the log."""
    _one_session(env)
    env.json("index")  # the workspace has its .prima-memory folder (and log) already
    unlogged = []
    for case in ("empty", "invalid", "partial", "array"):
        for event in ("stop", "pre-compact"):
            before = len(log_lines(env))
            r = run_hook(env, event, BAD_STDIN[case])
            assert_fail_open(r, event)
            new = log_lines(env)[before:]
            if not any(w in ln.lower() for ln in new for w in ("stdin", "input", "json")):
                unlogged.append((event, case, new))
    assert unlogged == [], unlogged


@pytest.mark.parametrize("event", EVENTS)
def test_corrupt_index_fails_open_and_is_rebuilt(env, event):
    _one_session(env)
    env.json("index")
    db = env.data / "index.db"
    for extra in ("-wal", "-shm"):
        Path(str(db) + extra).unlink(missing_ok=True)
    db.write_bytes(os.urandom(4096) + b"garbage, not a database" * 100)
    # SessionStart comes from a new session (the briefing leaves out the one starting)
    r = run_hook(env, event, payload(env, event, sid(2) if event == "session-start" else sid(1)))
    assert_fail_open(r, event)
    assert any("corrupt" in ln for ln in log_lines(env)), log_lines(env)
    assert integrity(env) == ["ok"]
    if event == "session-start":
        assert is_block(r.out) and "failopenword" in r.out, r  # rebuilt within the budget
    assert search_ids(env, "failopenword") == [sid(1)]


@pytest.mark.parametrize("event", EVENTS)
def test_missing_index_is_rebuilt(env, event):
    _one_session(env)
    env.json("index")
    for p in env.data.glob("index.db*"):
        p.unlink()
    r = run_hook(env, event, payload(env, event, sid(2)))
    assert_fail_open(r, event)
    if event == "session-start":
        assert is_block(r.out) and "failopenword" in r.out, r


@pytest.mark.parametrize("event", EVENTS)
def test_unusable_index_path_fails_open(env, event):
    """index.db is a folder: nothing can open it; the hook still exits 0 and says why in the log."""
    _one_session(env)
    (env.data / "index.db").mkdir(parents=True)
    r = run_hook(env, event, payload(env, event, sid(1)))
    assert_fail_open(r, event)
    assert (env.data / "index.db").is_dir()
    assert log_lines(env), "no line in the log"


@pytest.mark.parametrize("event", EVENTS)
def test_data_folder_that_is_a_file_fails_open(env, event):
    _one_session(env)
    env.data.write_text("not a folder\n")
    r = run_hook(env, event, payload(env, event, sid(1)))
    assert_fail_open(r, event)
    assert r.out == ""
    assert env.data.read_text() == "not a folder\n"


def test_held_writer_lock(env):
    """Another process is indexing (it holds the writer lock and a write transaction): SessionStart
    still briefs from the index as it stands, quickly; Stop and PreCompact give up in time; once
    the lock is free, Stop indexes what was left."""
    old = env.transcript(A, start=START)
    old.exchange("index the lockedword session", "The lockedword session is indexed. " * 10)
    env.json("index")
    new = env.transcript(B, start=START + HOUR)
    new.exchange("a newer heldlockword session", "Written while the lock is held. " * 10)
    fd = os.open(str(env.data / "index.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    writer = apsw.Connection(str(env.data / "index.db"))
    writer.setbusytimeout(0)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("UPDATE meta SET value = value WHERE key = 'schema_version'")
    try:
        before = len(log_lines(env))
        r = run_hook(env, "session-start", payload(env, "session-start", sid(0xFFF)))
        assert r.rc == 0 and r.secs < 3.0, r
        assert is_block(r.out) and "lockedword" in r.out, r
        procs = [spawn(env, "stop", payload(env, "stop", B, last_assistant_message="Written while the lock is held.")),
                 spawn(env, "pre-compact", payload(env, "pre-compact", A))]
        for ev, pr in zip(("stop", "pre-compact"), procs):
            rr = finish(pr)
            assert_fail_open(rr, ev, limit=10.0)
        new_lines = log_lines(env)[before:]
        assert any("busy" in ln.lower() for ln in new_lines), new_lines
    finally:
        writer.execute("ROLLBACK")
        writer.close()
        os.close(fd)
    r = run_hook(env, "stop", payload(env, "stop", B))
    assert r.rc == 0 and r.out == "", r
    assert B in indexed_sessions(env)
    assert fts_sessions(env, "heldlockword") == [B]
    assert integrity(env) == ["ok"]


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> str:
    """A Python without prima-memory's dependencies (no apsw, no orjson)."""
    where = tmp_path_factory.mktemp("bare") / "bare venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True,
                   capture_output=True, timeout=120)
    py = where / "bin" / "python"
    assert subprocess.run([str(py), "-c", "import apsw"], capture_output=True).returncode != 0
    return str(py)


@pytest.mark.parametrize("event", EVENTS)
def test_python_without_dependencies_fails_open(env, bare_python, event):
    _one_session(env)
    env.json("index")
    # like a plugin copy: no PYTHONPATH, so entry.py falls back to the plugin folder itself
    r = run_hook(env, event, payload(env, event, sid(1)),
                 extra_env={"PRIMA_PYTHON": bare_python}, unset=("PYTHONPATH",))
    assert_fail_open(r, event)
    assert r.out == ""
    assert len(r.err.strip().splitlines()) <= 1, r.err  # quietly: one line at most


def test_python_without_dependencies_is_logged(env, bare_python):
    """The issue lists a missing dependency among the failures that leave a line in the log."""
    _one_session(env)
    env.json("index")
    before = len(log_lines(env))
    r = run_hook(env, "stop", payload(env, "stop", sid(1)),
                 extra_env={"PRIMA_PYTHON": bare_python}, unset=("PYTHONPATH",))
    assert r.rc == 0 and r.out == "", r
    assert log_lines(env)[before:], f"no line in the log; stderr was {r.err!r}"


def test_no_python_at_all(env, tmp_path):
    """A plugin copy with no .venv, no recorded Python and no python on PATH: exit 0 at once."""
    root = tmp_path / "plugin cache" / "prima memory"
    shutil.copytree(REPO / "hooks", root / "hooks")
    bindir = tmp_path / "only bash"
    bindir.mkdir()
    for tool in ("bash", "dirname", "head"):
        os.symlink(shutil.which(tool), bindir / tool)
    _one_session(env)
    for event in EVENTS:
        r = run_hook(env, event, payload(env, event, sid(1)), root=root,
                     extra_env={"PATH": str(bindir)}, unset=("PRIMA_PYTHON",))
        assert r.rc == 0 and r.out == "" and r.secs < FAST, r
    assert not env.data.exists()


def test_missing_prima_python_falls_back(env):
    briefing_workspace(env)
    r = run_hook(env, "session-start", payload(env, "session-start", D),
                 extra_env={"PRIMA_PYTHON": str(env.root / "no such" / "python")})
    assert r.rc == 0 and is_block(r.out) and "Quarterly pipeline cleanup" in r.out, r


def test_plugin_copied_to_a_folder_with_spaces_uses_the_recorded_python(env, tmp_path):
    """Claude Code runs a copy of the plugin from its cache; the launcher finds the Python
    install.sh recorded, whatever the plugin folder is called."""
    root = tmp_path / "plugin cache" / "prima memory 0.1"
    shutil.copytree(REPO / "hooks", root / "hooks")
    shutil.copytree(REPO / "prima_memory", root / "prima_memory",
                    ignore=shutil.ignore_patterns("__pycache__"))
    conf = env.home / ".config" / "prima-memory"
    conf.mkdir(parents=True)
    (conf / "python").write_text(sys.executable + "\n")
    briefing_workspace(env)
    kw = dict(root=root, unset=("PRIMA_PYTHON", "PYTHONPATH"),
              extra_env={"CLAUDE_PLUGIN_ROOT": str(root)})
    r = run_hook(env, "session-start", payload(env, "session-start", D), **kw)
    assert r.rc == 0 and is_block(r.out) and "Quarterly pipeline cleanup" in r.out, r
    r = run_hook(env, "stop", payload(env, "stop", D), **kw)
    assert r.rc == 0 and r.out == "", r
    assert D in indexed_sessions(env)


def test_unknown_event_fails_open(env):
    _one_session(env)
    for name in ("user-prompt-submit", "session-end", "--help", "STOP"):
        cmd = command("stop").replace("hook stop", f"hook {name}")
        r = run_hook(env, "stop", {"session_id": sid(1), "cwd": str(env.ws),
                                   "hook_event_name": "UserPromptSubmit", "prompt": "hi"}, cmd=cmd)
        assert r.rc == 0 and r.out == "" and r.secs < FAST, (name, r)
    assert not env.data.exists()


def test_workspace_not_writable(env):
    _one_session(env)
    os.chmod(env.ws, 0o555)
    try:
        probe = env.ws / "probe"
        try:
            probe.write_text("x")
        except OSError:
            pass
        else:
            probe.unlink()
            pytest.skip("chmod does not stop this user (root)")
        for event in EVENTS:
            r = run_hook(env, event, payload(env, event, sid(1)))
            assert_fail_open(r, event)
            assert r.out == ""
        assert not env.data.exists()
    finally:
        os.chmod(env.ws, 0o755)


# -- injected faults: an exception, a hang, a hang in the middle of a write -------------------------

FAULTS = '''
import os, time
_mode = os.environ.get("PRIMA_TEST_FAULT")
if _mode:
    from prima_memory import hooks
    hooks.LIMITS = {k: (v[0], v[1], 2) for k, v in hooks.LIMITS.items()}  # a 2 s hard deadline
    if _mode == "raise":
        from prima_memory import briefing
        def _boom(*a, **k):
            raise RuntimeError("injected fault")
        briefing.render = _boom
    elif _mode == "hang":
        from prima_memory import briefing
        briefing.render = lambda *a, **k: time.sleep(60)
    elif _mode == "hang-in-write":
        from prima_memory.storage import Store
        _orig = Store.add_messages
        def _slow(self, rows):
            _orig(self, rows)
            time.sleep(60)
        Store.add_messages = _slow
'''


def fault_env(tmp_path: Path, mode: str) -> dict:
    d = tmp_path / "fault hooks"
    d.mkdir(exist_ok=True)
    (d / "sitecustomize.py").write_text(FAULTS)
    return {"PRIMA_TEST_FAULT": mode, "PYTHONPATH": f"{d}{os.pathsep}{REPO}"}


def test_exception_fails_open_and_is_logged(env, tmp_path):
    briefing_workspace(env)
    env.json("index")
    r = run_hook(env, "session-start", payload(env, "session-start", D),
                 extra_env=fault_env(tmp_path, "raise"))
    assert_fail_open(r, "session-start")
    assert r.out == ""
    assert any("injected fault" in ln for ln in log_lines(env)), log_lines(env)


def test_failure_on_a_first_run_is_logged(env, tmp_path):
    """The first hook in a workspace creates .prima-memory; a failure after that is logged there."""
    briefing_workspace(env)
    r = run_hook(env, "session-start", payload(env, "session-start", D),
                 extra_env=fault_env(tmp_path, "raise"))
    assert_fail_open(r, "session-start")
    assert (env.data / "index.db").exists()  # the hook did create the data folder
    assert any("injected fault" in ln for ln in log_lines(env)), (log_lines(env), r.err)


def test_hang_stops_at_the_deadline(env, tmp_path):
    briefing_workspace(env)
    env.json("index")
    r = run_hook(env, "session-start", payload(env, "session-start", D),
                 extra_env=fault_env(tmp_path, "hang"))
    assert_fail_open(r, "session-start", limit=6.0)
    assert r.out == ""
    assert any("deadline" in ln for ln in log_lines(env)), log_lines(env)


def test_deadline_in_the_middle_of_a_write_loses_nothing(env, tmp_path):
    _one_session(env)
    env.json("index")
    t = env.transcript(A, start=START)
    t.exchange("the halfwrite question", "The halfwrite answer. " * 10)
    r = run_hook(env, "stop", payload(env, "stop", A), extra_env=fault_env(tmp_path, "hang-in-write"))
    assert_fail_open(r, "stop", limit=6.0)
    assert any("deadline" in ln for ln in log_lines(env)), log_lines(env)
    assert integrity(env) == ["ok"]
    assert texts_with(env, A, "halfwrite") == []  # rolled back, not half written
    r = run_hook(env, "stop", payload(env, "stop", A))  # the next run completes it
    assert r.rc == 0 and r.out == "", r
    assert [role for role, _ in texts_with(env, A, "halfwrite")] == ["user", "assistant"]
    assert fts_sessions(env, "halfwrite") == [A, A]
    assert integrity(env) == ["ok"]


# -- six Stop hooks at once -------------------------------------------------------------------------

BIRDS = ["heronzq", "ibiszq", "ploverzq", "avocetzq", "godwitzq", "dunlinzq"]


def test_six_stop_hooks_at_once(env):
    ts = [env.transcript(sid(0x600 + n), start=START + n * 60) for n in range(6)]
    sids = [t.session_id for t in ts]

    def reply(n, k):
        return f"Reply {k} about the {BIRDS[n]} round{k}word."

    def all_at_once(last):
        started = [spawn(env, "stop", payload(env, "stop", s, last_assistant_message=last[n]))
                   for n, s in enumerate(sids)]
        for pr in started:
            r = finish(pr)
            assert r.rc == 0 and r.out == "" and r.secs < 15, r
        assert integrity(env) == ["ok"]

    # round 1: six new sessions, no index yet, all just written
    for n, t in enumerate(ts):
        t.exchange(f"Question one about the {BIRDS[n]}", reply(n, 1))
    all_at_once([reply(n, 1) for n in range(6)])
    assert indexed_sessions(env) == set(sids)
    for n, s in enumerate(sids):
        assert [r for r, _ in texts_with(env, s, BIRDS[n])] == ["user", "assistant"], n

    # round 2: a new turn each; for half of them the transcript lags behind the hook
    for n, t in enumerate(ts):
        t.user(f"Question two about the {BIRDS[n]}")
        if n % 2 == 0:
            t.reply(reply(n, 2))
    all_at_once([reply(n, 2) for n in range(6)])
    for n, s in enumerate(sids):
        assert len(texts_with(env, s, "round2word")) == 1, (n, texts_with(env, s, "round2word"))

    # round 3: the lagging transcripts catch up, and the hooks run again
    for n, t in enumerate(ts):
        if n % 2:
            t.reply(reply(n, 2))
    all_at_once([reply(n, 2) for n in range(6)])
    assert provisional_rows(env) == 0
    for n, s in enumerate(sids):
        roles = [r for r, _ in texts_with(env, s, BIRDS[n])]
        assert roles == ["user", "assistant", "user", "assistant"], (n, roles)
        assert len(texts_with(env, s, "round2word")) == 1
        count = query(env, "SELECT message_count FROM sessions WHERE session_id = ?", (s,))[0][0]
        assert count == 4, (n, count)
    dupes = query(env, "SELECT session, text, count(*) FROM messages GROUP BY session, role, text "
                       "HAVING count(*) > 1")
    assert dupes == []
    for n, s in enumerate(sids):
        assert search_ids(env, BIRDS[n]) == [s]


# -- host mode ---------------------------------------------------------------------------------------

def test_host_mode_is_silent_where_claude_code_has_no_project(env):
    host = {"PRIMA_EXPECTED_HOST": "claude-code"}
    stranger = env.root / "stranger dir" / "not a project"
    stranger.mkdir(parents=True)
    for where, unset in ((stranger, ()), (env.home, ("CLAUDE_PROJECT_DIR",))):
        extra = dict(host)
        if not unset:
            extra["CLAUDE_PROJECT_DIR"] = str(where)
        for event in EVENTS:
            data = payload(env, event, sid(1), cwd=str(where), source="startup",
                           last_assistant_message="a reply")
            r = run_hook(env, event, data, extra_env=extra, unset=unset, cwd=where)
            assert (r.rc, r.out, r.err) == (0, "", ""), (where, event, r)
            assert r.secs < FAST
        assert not (where / ".prima-memory").exists(), where
    assert [p.name for p in (env.root / "stranger dir").rglob("*")] == ["not a project"]


def test_host_mode_works_where_claude_code_has_the_project(env):
    host = {"PRIMA_EXPECTED_HOST": "claude-code"}
    d = briefing_workspace(env)["D"]
    r = run_hook(env, "session-start", payload(env, "session-start", D), extra_env=host)
    assert r.rc == 0 and is_block(r.out) and "Quarterly pipeline cleanup" in r.out, r
    d.exchange("the hostmodeword question", "The hostmodeword answer.")
    r = run_hook(env, "stop", payload(env, "stop", D, last_assistant_message="The hostmodeword answer."),
                 extra_env=host)
    assert r.rc == 0 and r.out == "", r
    assert [role for role, _ in texts_with(env, D, "hostmodeword")] == ["user", "assistant"]
    r = run_hook(env, "pre-compact", payload(env, "pre-compact", D), extra_env=host)
    assert r.rc == 0 and r.out == "", r
    assert len(checkpoint_files(env, D)) == 1


# -- the embedding model is never loaded -------------------------------------------------------------

HEAVY = ("torch", "sentence_transformers", "transformers", "numpy", "onnxruntime", "scipy",
         "sklearn", "huggingface_hub", "tokenizers", "safetensors")


# standard modules that cost a hook milliseconds to import (typing 1.6 ms, argparse 4 ms,
# dataclasses more)
SLOW_STDLIB = {"typing", "dataclasses", "asyncio", "argparse"}
OTHER_AGENTS = {"codex", "copilot", "gemini_cli", "cursor", "opencode", "aider", "cline",
                "copilot_cli"}  # sources/'s modules of the other agents


def imported_modules(stderr: str) -> set[str]:
    mods = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name and name != "package":
                mods.add(name)
    return mods


def test_hooks_never_load_the_embedding_model(env):
    t = briefing_workspace(env)["D"]
    prof = {"PYTHONPROFILEIMPORTTIME": "1"}
    runs = {}
    runs["session-start"] = run_hook(env, "session-start", payload(env, "session-start", D), extra_env=prof)
    t.exchange("the importcheck question", "The importcheck answer.")
    runs["stop"] = run_hook(env, "stop", payload(env, "stop", D, last_assistant_message="Lagging importcheck reply."),
                            extra_env=prof)
    runs["pre-compact"] = run_hook(env, "pre-compact", payload(env, "pre-compact", D), extra_env=prof)
    runs["compact"] = run_hook(env, "session-start", payload(env, "session-start", D, source="compact"),
                               extra_env=prof)
    assert is_block(runs["session-start"].out) and is_block(runs["compact"].out)
    assert len(checkpoint_files(env, D)) == 1
    for name, r in runs.items():
        assert r.rc == 0, (name, r)
        mods = imported_modules(r.err)
        assert "prima_memory.hooks" in mods and "apsw" in mods, (name, sorted(mods)[:50])
        heavy = sorted(m for m in mods if m.split(".")[0] in HEAVY)
        assert heavy == [], (name, heavy[:20])
        assert not mods & SLOW_STDLIB, (name, sorted(mods & SLOW_STDLIB))
        # (#41) the hooks read Claude Code alone: the other agents' readers stay unloaded
        others = sorted(m for m in mods if m.rsplit(".", 1)[-1] in OTHER_AGENTS)
        assert others == [], (name, others)


@pytest.mark.parametrize("args", [
    ["--json", "hook", "stop"],
    ["hook", "--json", "stop"],
    ["hook", "stop", "--json"],
    ["--json", "--workspace", "{ws}", "hook", "stop"],
    ["hook", "--workspace={ws}", "stop"],
])
def test_a_hook_with_global_options_anywhere_still_runs_and_fails_open(env, args):
    """`prima-memory --json hook stop` went to argparse, found no cmd_hook and exited 1 with
    KeyError; with --workspace after `hook` the option was taken for the event."""
    S = "aaaa0000-0000-4000-8000-0000000000a1"
    env.transcript(S, start=time.time() - 600).exchange("Tune the zebrafinch cache", "Tuned.")
    argv = [a.replace("{ws}", str(env.ws)) for a in args]
    p = subprocess.run([sys.executable, "-m", "prima_memory", *argv],
                       input=json.dumps(payload(env, "stop", S)), capture_output=True, text=True,
                       cwd=str(env.ws), env=hook_env(env), timeout=60)
    assert (p.returncode, p.stdout, p.stderr) == (0, "", ""), p
    assert [r["session_id"] for r in env.search("zebrafinch")] == [S], "the Stop hook indexed it"
