"""The plugin inside the real Claude Code: the CLI from npm (pinned, see claude_code_harness.VERSION)
runs `claude -p` offline against a local mock of the Messages API, in a fake HOME, under the
default permissions users have (as root Claude Code refuses bypass flags anyway). The assertions
are on what reached the model (the mock records every request) and on what landed on disk.

The tests run in order and build on each other: install, a session that writes a file, a session
that gets the briefing, /recall (plain and hostile), /compact, recall-only sessions, the plugin
disabled, an update while sessions run. Skipped, with the reason, where npm or the package is
unavailable, or where install.sh has not made .venv.
"""
from __future__ import annotations

import glob
import json
import re
import shutil
import sys
import threading
from pathlib import Path

import apsw
import pytest

from conftest import REPO, Env

import claude_code_harness as h
from mock_messages_api import MockApi

VENV_PYTHON = REPO / ".venv" / "bin" / "python"
PLUGIN = "prima-memory@prima-memory"
BRIEFING = re.compile(r"<prima-memory>.*?</prima-memory>", re.S)
RECALL_HEADER = re.compile(r'prima-memory: past sessions matching "(.*)" \(quoted data')


class World:
    def __init__(self, env: Env, api: MockApi, claude: Path):
        self.e = env
        self.api = api
        self.claude_bin = claude
        self.ws = env.ws
        self.home = env.home
        self.share = env.home / ".local" / "share" / "prima-memory"
        self.env = h.claude_env(env.env, claude, api.url, env.home)
        self.canary = env.root / "canary"
        self.canary.mkdir()
        self.sessions: dict[str, str] = {}  # name -> session id
        self.recall_sessions: list[str] = []

    def claude(self, prompt: str, *extra, resume: str | None = None, debug: Path | None = None,
               timeout: float = 120) -> dict:
        """One `claude -p` run; the mock's requests are cleared first. Returns its JSON result."""
        self.api.clear()
        argv = [str(self.claude_bin), "-p", prompt, "--output-format", "json", *extra]
        if resume:
            argv += ["--resume", resume]
        if debug:
            argv += ["--debug-file", str(debug)]
        p = h.run(argv, env=self.env, cwd=str(self.ws), timeout=timeout)
        assert p.returncode == 0, f"claude exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
        out = json.loads(p.stdout) if p.stdout.strip() else {}
        return out

    def cc(self, *args, timeout: float = 120):
        """`claude <args>` (plugin management)."""
        return h.run([str(self.claude_bin), *args], env=self.env, cwd=str(self.ws), timeout=timeout)

    def install(self):
        # no dead proxy here: pip may need the package registry if pyproject.toml changed
        env = {k: v for k, v in self.env.items() if not k.endswith("_PROXY")}
        return h.run(["bash", str(REPO / "install.sh"), "--no-run"], env=env,
                     cwd=str(self.ws), timeout=900)

    def search(self, words: str) -> list[str]:
        """Session ids the CLI finds for a keyword search."""
        p = h.run([str(VENV_PYTHON), "-m", "prima_memory", "search", words, "--mode", "keyword",
                   "--json"], env=self.e.env, cwd=str(self.ws), timeout=120)
        assert p.returncode == 0, p.stderr
        return [r["session_id"] for r in json.loads(p.stdout)["results"]]

    def sent(self) -> str:
        """Everything the model was sent in the last run."""
        return "\n".join(r.text for r in self.api.requests)

    def index(self, sql: str, args=()) -> list:
        """Read the index as it stands (no update first): what the hooks wrote."""
        db = apsw.Connection(str(self.ws / ".prima-memory" / "index.db"),
                             flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return list(db.execute(sql, args))
        finally:
            db.close()


@pytest.fixture(scope="module")
def cc(tmp_path_factory):
    if not VENV_PYTHON.exists():
        pytest.skip("install.sh has not been run here (no .venv): the plugin needs its Python")
    try:
        claude = h.install_claude(tmp_path_factory.mktemp("claude-code"))
    except h.Unavailable as e:
        pytest.skip(str(e))
    env = Env(tmp_path_factory.mktemp("e2e"))
    with MockApi(lifetime=1500) as api:
        yield World(env, api, claude)


def _briefing(text: str) -> str:
    m = BRIEFING.search(text)
    return m.group(0) if m else ""


# -- install ---------------------------------------------------------------------------------

def test_install_sh_with_claude_on_path_registers_the_plugin(cc):
    p = cc.install()
    assert p.returncode == 0, p.stdout + p.stderr
    assert "plugin installed" in p.stdout, p.stdout
    entry = h.installed_plugins(cc.home)["plugins"][PLUGIN]
    assert entry and entry[0]["scope"] == "user"
    known = json.loads((cc.home / ".claude" / "plugins" / "known_marketplaces.json").read_text())
    live = cc.share / "plugin"
    assert known["prima-memory"]["installLocation"] == str(live)
    # the registered folder is a symlink to a complete version folder
    assert live.is_symlink() and (live / "hooks" / "run.sh").is_file()
    assert (cc.home / ".config" / "prima-memory" / "python").read_text().strip() == str(VENV_PYTHON)
    p = cc.cc("plugin", "list")
    assert "prima-memory" in p.stdout


# -- sessions, hooks and the briefing ----------------------------------------------------------

def test_a_session_that_writes_a_file_is_indexed_by_the_stop_hook(cc):
    notes = cc.ws / "zanzibarite-notes.md"
    cc.api.rule("write the zanzibarite notes", {"tool": "Write", "input": {
        "file_path": str(notes), "content": "# Zanzibarite parser\n\nRetry the quokka step.\n"}})
    out = cc.claude("Please write the zanzibarite notes for the parser",
                    "--permission-mode", "acceptEdits")
    sid = cc.sessions["writer"] = out["session_id"]
    assert notes.read_text().startswith("# Zanzibarite parser")
    assert any(r.ends_with_tool_result for r in cc.api.requests)  # the Write really ran
    # the Stop hook indexed it: the index as it stands, no CLI update first
    rows = cc.index("SELECT s.session_id, f.tool, s.title_first FROM file_changes f "
                    "JOIN sessions s ON s.id = f.session WHERE f.path = ?", (str(notes),))
    assert rows == [(sid, "Write", "Write the zanzibarite notes for the parser")]


def test_the_next_session_starts_with_a_briefing_naming_the_last(cc):
    out = cc.claude("What should we look at next?")
    sid = cc.sessions["reader"] = out["session_id"]
    # a one-turn `claude -p` session: its transcript appears only after Stop has started, and
    # Stop still indexes it
    assert cc.index("SELECT title_first FROM sessions WHERE session_id = ?", (sid,)) == [
        ("What should we look at next?",)]
    first = cc.api.requests[0]
    briefing = _briefing(first.text)
    assert briefing, "no <prima-memory> briefing in the first request"
    assert cc.sessions["writer"] in briefing
    assert "Write the zanzibarite notes for the parser" in briefing
    assert "zanzibarite-notes.md" in briefing  # files changed
    # the workspace is no git repository: Claude Code records "HEAD", which is no branch
    assert ", branch " not in briefing, briefing
    # hook context reaches the model as a system message, not as the user's words
    assert [m["role"] for m in first.messages if "<prima-memory>" in json.dumps(m)] == ["system"]


# -- /recall ---------------------------------------------------------------------------------

def _recall(cc, args: str) -> tuple[dict, str | None]:
    """Run /prima-memory:recall; returns (result, the query the search showed or None)."""
    out = cc.claude(f"/prima-memory:recall {args}")
    cc.recall_sessions.append(out.get("session_id"))
    shown = RECALL_HEADER.search(cc.sent())
    return out, shown.group(1) if shown else None


def test_recall_runs_under_default_permissions_and_its_output_reaches_the_model(cc):
    out, shown = _recall(cc, "zanzibarite")
    assert cc.api.requests, "no request reached the model: the command's ``` block was refused"
    assert shown == "zanzibarite"
    sent = cc.sent()
    sid = cc.sessions["writer"]
    assert f"prima-memory show {sid}" in sent and f"claude --resume {sid}" in sent
    # each matching line once
    block = sent[sent.index("prima-memory: past sessions"):]
    hit = block[:block.index("claude --resume")]
    lines = [ln.strip() for ln in hit.splitlines() if ln.strip().startswith(">")]
    assert lines and len(lines) == len(set(lines)), hit


def test_recall_finds_a_session_by_meaning(cc):
    # no word in common with "Please write the zanzibarite notes for the parser"
    out, shown = _recall(cc, "memo on the grammar reader")
    sent = cc.sent()
    assert shown == "memo on the grammar reader"
    assert "semantic search is unavailable" not in sent, "the model did not load in the hook's Python"
    assert f"prima-memory show {cc.sessions['writer']}" in sent, sent[-3000:]


def test_recall_with_no_words_shows_the_recent_sessions(cc):
    cc.claude("/prima-memory:recall")
    cc.recall_sessions.append(None)
    sent = cc.sent()
    assert "the latest sessions in this workspace" in sent
    assert cc.sessions["writer"] in sent and "/prima-memory:recall <words>" in sent


def _end_marker() -> str:
    return re.search(r"<<'([^']+)'", (REPO / "commands" / "recall.md").read_text()).group(1)


def _hostile(canary: Path) -> dict[str, str]:
    c = str(canary)
    return {
        "quotes": f'zanzibarite" ; touch {c}/dq ; echo "it\'s',
        "substitution": f"zanzibarite $(touch {c}/cs) `touch {c}/bt` ${{HOME}}",
        "operators": f"zanzibarite; touch {c}/semi && touch {c}/and | touch {c}/pipe > {c}/redir",
        "newlines": f"zanzibarite\ntouch {c}/nl\n; touch {c}/nl2",
        "end-marker": f"zanzibarite\n{_end_marker()}\ntouch {c}/marker\ntouch {c}/marker2",
        "end-marker-bad-syntax": f"zanzibarite\n{_end_marker()}\ntouch {c}/syntax\n) ( fi done",
        "eof": f"zanzibarite\nEOF\ntouch {c}/eof\nEOF",
    }


# Claude Code splices the words in raw; a line that may end the heredoc then holds a command of
# its own, and Claude Code's own permission check must refuse to run the block at all.
MAY_END_THE_QUERY = {"end-marker", "end-marker-bad-syntax"}


@pytest.mark.parametrize("case", list(_hostile(Path("/x"))))
def test_hostile_recall_words_run_nothing_and_are_searched_literally(cc, case):
    words = _hostile(cc.canary)[case]
    out, shown = _recall(cc, words)
    assert not list(cc.canary.iterdir()), f"{case}: the shell ran part of the query"
    if case in MAY_END_THE_QUERY and shown is None:
        return  # refused by Claude Code: nothing ran
    assert shown is not None, f"{case}: the search did not run"
    assert shown == " ".join(words.split()), case


# -- compaction --------------------------------------------------------------------------------

def test_compact_writes_a_checkpoint_that_the_next_turn_gets_back(cc):
    sid = cc.sessions["writer"]
    cc.claude("/compact", resume=sid)
    found = glob.glob(str(cc.ws / ".prima-memory" / "extracts" / "*" / f"*-{sid}-checkpoint*.md"))
    assert len(found) == 1, found
    checkpoint = Path(found[0]).read_text()
    assert "Write the zanzibarite notes for the parser" in checkpoint
    cc.claude("Where were we?", resume=sid)
    sent = cc.sent()
    assert "The conversation was just compacted" in sent
    assert f"Session ID: `{sid}`" in sent and "zanzibarite-notes.md" in sent


# -- what is not memory --------------------------------------------------------------------------

def test_recall_only_sessions_are_not_sessions(cc):
    assert len(cc.recall_sessions) >= 5
    cc.claude("Anything left to do?")
    briefing = _briefing(cc.api.requests[0].text)
    assert cc.sessions["writer"] in briefing
    assert "/prima-memory" not in briefing.split("To search past sessions")[0], briefing
    for sid in filter(None, cc.recall_sessions):
        assert sid not in briefing
    # and no search finds them: only the session that did the work talks about zanzibarite
    assert cc.search("zanzibarite") == [cc.sessions["writer"]]
    titles = [t for (t,) in cc.index("SELECT title_first FROM sessions WHERE started_at IS NOT NULL")]
    assert not [t for t in titles if t and "prima-memory:" in t], titles


def test_a_disabled_plugin_gives_no_briefing(cc):
    p = cc.cc("plugin", "disable", PLUGIN)
    assert p.returncode == 0, p.stdout + p.stderr
    try:
        cc.claude("Is the plugin quiet now?")
        assert cc.api.requests and "<prima-memory>" not in cc.sent()
    finally:
        p = cc.cc("plugin", "enable", PLUGIN)
        assert p.returncode == 0, p.stdout + p.stderr
    cc.claude("And back?")
    assert "<prima-memory>" in cc.sent()


# -- updates --------------------------------------------------------------------------------------

def test_an_update_never_leaves_the_live_plugin_folder_incomplete(cc):
    live = cc.share / "plugin"
    if live.is_symlink():  # as an older install.sh left it: a real folder, to swap in one step
        target = live.resolve()
        live.unlink()
        shutil.copytree(target, live, symlinks=True)
    needed = [Path("hooks/run.sh"), Path("hooks/hooks.json"), Path("hooks/entry.py"),
              Path("commands/recall.md"), Path(".claude-plugin/plugin.json")]
    missing: list[str] = []
    checks = 0
    stop = threading.Event()

    def watch():
        nonlocal checks
        while not stop.is_set():
            for rel in needed:
                try:
                    if not (live / rel).read_bytes():
                        missing.append(f"{rel} empty")
                except OSError as e:
                    missing.append(f"{rel}: {e}")
            checks += 1

    t = threading.Thread(target=watch)
    t.start()
    try:
        for _ in range(2):
            p = cc.install()
            assert p.returncode == 0, p.stdout + p.stderr
    finally:
        stop.set()
        t.join()
    assert checks > 50 and not missing, (checks, missing[:5])
    assert live.is_symlink()
    versions = sorted((cc.share / "plugin-versions").iterdir())
    assert 1 <= len(versions) <= 2, versions
    assert live.resolve() in [v.resolve() for v in versions]
    # and sessions go on working from it
    cc.claude("Still there?")
    assert cc.sessions["writer"] in _briefing(cc.sent())


# -- cost ------------------------------------------------------------------------------------------

def test_session_start_hook_time_is_read_from_claude_codes_debug_log(cc, tmp_path):
    """Not a timing assertion: the figure bench/claude_code.py reports must stay measurable."""
    log = tmp_path / "debug.txt"
    cc.claude("How long did the hook take?", debug=log)
    ms = h.session_start_hook_ms(log)
    assert ms is not None and 0 < ms < 15000, log.read_text()[-3000:]
    print(f"\nSessionStart hook inside Claude Code {h.VERSION}: {ms:.0f} ms", file=sys.stderr)
