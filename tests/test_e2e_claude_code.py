"""The plugin inside the real Claude Code: the CLI from npm (pinned, see claude_code_harness.VERSION)
runs `claude -p` offline against a local mock of the Messages API, in a fake HOME, under the
default permissions users have (as root Claude Code refuses bypass flags anyway). The assertions
are on what reached the model (the mock records every request) and on what landed on disk.

The tests run in order and build on each other: install (and Claude Code's own checks of the
installed plugin), a session that writes a file, a session that gets the briefing, /recall (plain
and hostile), /compact, recall-only sessions, the plugin disabled, an update while sessions run,
the MCP server (listed, its tools offered to the model, a search and an error through it).
Skipped, with the reason, where npm or the package is unavailable, or where install.sh has not
made .venv.
"""
from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import apsw
import pytest

from conftest import REPO, Env, fresh_database, team_schema

import claude_code_harness as h
import claude_code_tui as tui
from mock_messages_api import MockApi

VENV_PYTHON = REPO / ".venv" / "bin" / "python"
PLUGIN = "prima-memory@prima-memory"
BRIEFING = re.compile(r"<prima-memory>.*?</prima-memory>", re.S)
RECALL_HEADER = re.compile(r'prima-memory: past sessions matching "(.*)" \(quoted data')
RECALL_ANSWER = "prima-memory's answer to /prima-memory:recall"  # how the hook's message starts
# How /recall's words run: under the default permissions users have, and with Bash allowed (as
# many users allow it, or run in a mode that does), where a shell block would run them
PERMS = {"default": (), "bash-allowed": ("--allowedTools", "Bash")}
# How Claude Code names a plugin's MCP server (plugin:<plugin>:<server in .mcp.json>) and the
# tools it offers the model from it (mcp__plugin_<plugin>_<server>__<tool>)
MCP_SERVER = "plugin:prima-memory:prima-memory"
MCP_TOOL = "mcp__plugin_prima-memory_prima-memory__"
MCP_TOOLS = ["search_sessions", "recall_session", "recent_sessions", "find_similar",
             "find_error_fix", "get_file_history", "summarize_period", "rebuild_index"]


class World:
    def __init__(self, env: Env, api: MockApi, claude: Path):
        self.e = env
        self.api = api
        self.claude_bin = claude
        self.ws = env.ws
        self.home = env.home
        self.share = env.home / ".local" / "share" / "prima-memory"
        self.env = h.claude_env(env.env, claude, api.url, env.home)
        # ~/.local/bin first, as install.sh advises: where it links the prima-memory command
        self.local_bin = env.home / ".local" / "bin"
        self.env["PATH"] = f"{self.local_bin}{os.pathsep}{self.env['PATH']}"
        self.canary = env.root / "canary"
        self.canary.mkdir()
        self.sessions: dict[str, str] = {}  # name -> session id
        self.recall_sessions: list[str] = []
        self.mcp_search_result = ""  # the tool_result text search_sessions' answer arrived as

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

    def log_tail(self, n: int = 4000) -> str:
        """The end of the workspace's log, debug lines included: why a hook did what it did."""
        log = self.ws / ".prima-memory" / "prima-memory.log"
        return log.read_text(errors="replace")[-n:] if log.exists() else "(no log)"

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


def test_claude_code_validates_the_installed_plugin_and_reads_its_mcp_json(cc):
    live = cc.share / "plugin"  # the folder Claude Code runs the plugin from
    assert json.loads((live / ".mcp.json").read_text()) == \
        json.loads((REPO / ".mcp.json").read_text())
    # `plugin validate` on the folder reads its marketplace.json; on plugin.json, the manifest,
    # the commands' front matter and hooks/hooks.json. --strict: a warning fails too
    for target, kind in ((live, "marketplace"), (live / ".claude-plugin" / "plugin.json",
                                                 "plugin")):
        p = cc.cc("plugin", "validate", "--strict", str(target))
        assert p.returncode == 0, p.stdout + p.stderr
        assert f"Validating {kind} manifest: {target}" in p.stdout, p.stdout
        verdict = _validation_proper(p.stdout)
        assert "Validation passed" in verdict and "warning" not in verdict.lower(), p.stdout
    # Neither reads .mcp.json in 2.1.197 (a file of garbage passes both), so: the plugin as
    # Claude Code loaded it has the server (the server itself: test_mcp_list_...)
    p = cc.cc("plugin", "details", PLUGIN)
    assert p.returncode == 0, p.stdout + p.stderr
    assert re.search(r"MCP servers \(1\)\s+prima-memory\b", p.stdout), p.stdout


def _validation_proper(out: str) -> str:
    """`plugin validate` less what it says about the plugin directory, Anthropic's catalog
    (2.1.332: an icon, a README in the plugin folder, the hosts a part reaches), which it says
    "do not change the result": those are about a submission, not about our files' validity."""
    start = out.find("Plugin directory checks")
    end = out.find("do not change the result below")
    if start < 0 or end < 0:
        return out
    return out[:start] + out[out.find("\n", end) + 1:]


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
# The words reach prima-memory as the UserPromptSubmit hook's JSON, and its answer reaches the
# model as a system message; the command's own text (the user message) holds no results: a shell
# block's output would land there.

def _texts(request, role: str) -> str:
    return "\n".join(_content_text(m.get("content")) for m in request.messages
                     if isinstance(m, dict) and m.get("role") == role)


def _content_text(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or () if isinstance(b, dict)
                     and isinstance(b.get("text"), str))


def _recall_answer(cc) -> str:
    """The hook's answer as the first request gave it to the model ("" if it is not there)."""
    first = cc.api.requests[0]
    system = _texts(first, "system")
    i = system.find(RECALL_ANSWER)
    if i < 0:
        return ""
    block = system[system.rfind("<prima-memory>", 0, i):]
    return block[:block.find("</prima-memory>") + len("</prima-memory>")]


def _recall(cc, args: str, *extra) -> tuple[dict, str | None]:
    """Run /prima-memory:recall; returns (result, the query the search showed or None). The
    search's answer must be the hook's, in a system message, never in the user's message."""
    out = cc.claude(f"/prima-memory:recall {args}", *extra)
    cc.recall_sessions.append(out.get("session_id"))
    assert cc.api.requests, "no request reached the model"
    user = _texts(cc.api.requests[0], "user")
    assert "<command-name>/prima-memory:recall</command-name>" in user, user[-2000:]
    assert "past sessions matching" not in user and "prima-memory show" not in user, \
        "search output in the user's message: a shell block ran"
    shown = RECALL_HEADER.search(_recall_answer(cc))
    return out, shown.group(1) if shown else None


def _shown(words: str) -> str:
    """The words as the answer shows them back: white space collapsed, cut at QUERY_SHOWN."""
    from prima_memory.recall_text import QUERY_SHOWN
    from prima_memory.wording import one_line
    return one_line(words, QUERY_SHOWN)


def _way_back(answer: str, session_id: str) -> tuple[str, str]:
    """The show and resume lines printed under a hit, each whole on its own line."""
    lines = [ln.strip() for ln in answer.splitlines()]
    show = [ln for ln in lines if re.fullmatch(rf"\S*prima-memory show {session_id} --workspace .+", ln)]
    resume = [ln for ln in lines if ln.startswith("cd ") and ln.endswith(f"&& claude --resume {session_id}")]
    assert len(show) == 1 and len(resume) == 1, answer
    return show[0], resume[0]


def test_recall_runs_under_default_permissions_and_its_output_reaches_the_model(cc):
    out, shown = _recall(cc, "zanzibarite")
    assert shown == "zanzibarite"
    answer = _recall_answer(cc)
    assert answer.startswith(f"<prima-memory>\n{RECALL_ANSWER}")
    sid = cc.sessions["writer"]
    show, resume = _way_back(answer, sid)
    # the command by its name (~/.local/bin is on this PATH), the way back as its own line
    assert shlex.split(show) == ["prima-memory", "show", sid, "--workspace", str(cc.ws)]
    assert shlex.split(resume) == ["cd", str(cc.ws), "&&", "claude", "--resume", sid]
    assert not [ln for ln in answer.splitlines() if " | claude" in ln]
    # each matching line once
    hit = answer[answer.index("1. "):answer.index(show)]
    lines = [ln.strip() for ln in hit.splitlines() if ln.strip().startswith(">")]
    assert lines and len(lines) == len(set(lines)), hit
    # the command's text tells the model where the results are
    assert RECALL_ANSWER in _texts(cc.api.requests[0], "user")


def test_recall_finds_a_session_by_meaning(cc):
    # no word in common with "Please write the zanzibarite notes for the parser"
    out, shown = _recall(cc, "memo on the grammar reader")
    answer = _recall_answer(cc)
    assert shown == "memo on the grammar reader"
    assert "semantic search is unavailable" not in answer, "the model did not load in the hook's Python"
    assert f"prima-memory show {cc.sessions['writer']}" in answer, answer[-3000:]


def test_recall_with_no_words_shows_the_recent_sessions(cc):
    cc.claude("/prima-memory:recall")
    cc.recall_sessions.append(None)
    answer = _recall_answer(cc)
    assert "the latest sessions in this workspace" in answer
    assert cc.sessions["writer"] in answer and "/prima-memory:recall <words>" in answer
    _way_back(answer, cc.sessions["writer"])


def test_recall_all_finds_another_projects_session_with_its_way_back(cc, tmp_path):
    """/prima-memory:recall --all <words>: every project's sessions, each naming its project
    and the way back to it; the plain /recall does not look there, and the other project's
    folder gets no .prima-memory."""
    from conftest import Transcript, encode
    other = tmp_path / "other project"
    other.mkdir()
    sid = "0e0e0e0e-0000-4000-8000-0000000000e0"
    t = Transcript(cc.home / ".claude" / "projects" / encode(str(other)) / f"{sid}.jsonl", sid,
                   str(other), start=time.time() - 86400)
    t.exchange("The quetzalcoatl importer drops rows with a BOM",
               "Strip the BOM before the CSV reader sees the header.")
    _recall(cc, "quetzalcoatl")
    assert sid not in _recall_answer(cc)
    cc.claude("/prima-memory:recall --all quetzalcoatl")
    cc.recall_sessions.append(None)
    answer = _recall_answer(cc)
    assert answer.startswith(f"<prima-memory>\n{RECALL_ANSWER}") and "every project" in answer
    assert f"project {other}" in answer, answer[-3000:]
    resume = [ln.strip() for ln in answer.splitlines() if ln.strip().startswith("cd ")
              and ln.strip().endswith(f"&& claude --resume {sid}")]
    assert [shlex.split(ln) for ln in resume] == [["cd", str(other), "&&", "claude",
                                                   "--resume", sid]]
    assert not (other / ".prima-memory").exists()


TEAM_PROJECT = "github.com/acme/e2e-team"  # the project as the team knows it (#40)


@pytest.fixture
def team_server(pg_server):
    """A team's server of its own (#40): a database on the real PostgreSQL with pgvector, its
    schema migrated, ana and bo in team core, which shares TEAM_PROJECT. Returns {role: DSN}."""
    pytest.importorskip("psycopg", reason="the team memory's driver is not installed")
    from psycopg.conninfo import make_conninfo
    admin = fresh_database(pg_server, f"e2e_team_{os.getpid()}")
    team_schema(admin, {"ana": "core", "bo": "core"}, {TEAM_PROJECT: "core"})
    return {role: make_conninfo(admin, user=role) for role in ("ana", "bo")}


def _plugin_installed(cc) -> None:
    """install.sh run, as the first test does, where this test runs alone (-k)."""
    if not (h.installed_plugins(cc.home).get("plugins") or {}).get(PLUGIN):
        p = cc.install()
        assert p.returncode == 0, p.stdout + p.stderr


def test_recall_team_finds_a_teammates_session_on_the_server(cc, team_server, tmp_path):
    """/prima-memory:recall --team <words>: ana, in her own HOME, joins the team's server and
    publishes a session with the CLI; bo (this Claude Code's user) joins the same server for the
    same project, and his /recall --team answers from it: her session, naming her and the
    project, its way back a `show --team` (a teammate's session is read, not resumed); the plain
    /recall does not look there."""
    ana = Env(tmp_path / "ana")
    ana.env["GIT_CONFIG_GLOBAL"] = str(ana.home / ".gitconfig")
    sid = "0e0e0e0e-0000-4000-8000-0000000000a7"
    title = "Fix the zqxheron webhook retries after the gateway timeout"
    ana.transcript(sid, start=time.time() - 86400).exchange(
        title, "The gateway closed idle connections at 30 s; retry with jittered backoff.")
    ana.run("team", "join", team_server["ana"], "--member", "Ana", "--project", TEAM_PROJECT)
    published = ana.run("team", "publish", "--json", env={"PRIMA_EMBED_BUDGET": "0"})
    assert json.loads(published.stdout)["sessions"] == 1, published.stdout + published.stderr

    def bo(*args):  # bo's own CLI, in his HOME (his team.json) and workspace
        p = h.run([str(VENV_PYTHON), "-m", "prima_memory", "team", *args], env=cc.e.env,
                  cwd=str(cc.ws), timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        return p

    _plugin_installed(cc)
    bo("join", team_server["bo"], "--member", "Bo", "--project", TEAM_PROJECT)
    try:
        joined = json.loads((cc.share / "team.json").read_text())  # bo's own, in his HOME
        assert joined["projects"][str(cc.ws)]["member"] == "Bo", joined
        _recall(cc, "zqxheron webhook")
        assert sid not in _recall_answer(cc)
        _recall(cc, "--team zqxheron webhook")
        first = cc.api.requests[0]
        answer = _recall_answer(cc)
        assert answer.startswith(f"<prima-memory>\n{RECALL_ANSWER}"), _texts(first, "system")[-3000:]
        assert answer.endswith("</prima-memory>")
        assert first.text.count(answer) == 1, first.text[-6000:]  # the framed answer, once
        # one answer, the team's (the command's own text names the answer once more)
        assert first.text.count(RECALL_ANSWER) == 1 + _texts(first, "user").count(RECALL_ANSWER)
        assert "team's memory" in answer, answer
        assert "past sessions matching \"zqxheron webhook\", on the team's server" in answer
        hits = re.findall(rf"^\d+\. .*{re.escape(title)} — .*$", answer, re.M)
        assert len(hits) == 1, answer  # her session, once (its title is its matching line too)
        assert answer.count(f"Ana · project {TEAM_PROJECT}") == 1, answer
        show = [ln.strip() for ln in answer.splitlines()
                if re.fullmatch(rf"\S*prima-memory show {sid} --team --workspace .+", ln.strip())]
        assert len(show) == 1, answer
        assert f"claude --resume {sid}" not in answer
    finally:
        bo("leave")  # the later tests' sessions publish nothing


OLD_END_MARKER = "PRIMA_MEMORY_RECALL_QUERY_9F2C4E7A"  # the heredoc /recall's ```! block once had


def _hostile(canary: Path) -> dict[str, str]:
    c = str(canary)
    return {
        "quotes": f'zanzibarite" ; touch {c}/dq ; echo "it\'s',
        "substitution": f"zanzibarite $(touch {c}/cs) `touch {c}/bt` ${{HOME}}",
        "operators": f"zanzibarite; touch {c}/semi && touch {c}/and | touch {c}/pipe > {c}/redir",
        "newlines": f"zanzibarite\ntouch {c}/nl\n; touch {c}/nl2",
        "end-marker": f"zanzibarite\n{OLD_END_MARKER}\ntouch {c}/marker\ntouch {c}/marker2",
        "end-marker-bad-syntax": f"zanzibarite\n{OLD_END_MARKER}\ntouch {c}/syntax\n) ( fi done",
        "eof": f"zanzibarite\nEOF\ntouch {c}/eof\nEOF",
        "unicode": "zanzibarite 日本語 café — «naïve» 😀 Ωμέγα",
    }


@pytest.mark.parametrize("perm", list(PERMS))
@pytest.mark.parametrize("case", list(_hostile(Path("/x"))))
def test_hostile_recall_words_run_nothing_and_are_searched_literally(cc, case, perm):
    """The words reach the search as the hook's JSON: every case runs the search, none is
    refused, nothing runs, with Bash allowed as under the default permissions."""
    words = _hostile(cc.canary)[case]
    out, shown = _recall(cc, words, *PERMS[perm])
    assert not list(cc.canary.iterdir()), f"{case}: the shell ran part of the query"
    assert not out.get("permission_denials"), out  # nothing asked to run
    assert shown is not None, f"{case}: the search did not run"
    assert shown == _shown(words) == " ".join(words.split()), case
    # (Whether the writer ranks among the answers for words like these is a question of how a
    # sentence is searched, #20, and of whether its exchange is embedded yet: not asserted here.)


RECALL_OFFERED = "Search past Claude Code sessions in this workspace"  # commands/recall.md


def _tui_words(canary: Path) -> str:
    """Pasted after the command: every hostile case at once, on several lines."""
    c = str(canary)
    return (f"zanzibarite \"dq\" 'sq' `touch {c}/tui-bt` $(touch {c}/tui-cs) ; touch {c}/tui-semi "
            f"&& touch {c}/tui-and | cat > {c}/tui-redir\n{OLD_END_MARKER}\ntouch {c}/tui-marker\n"
            f"EOF\ntouch {c}/tui-eof\n日本語 «naïve» 😀\n{OLD_END_MARKER}")


@pytest.mark.parametrize("perm", list(PERMS))
def test_hostile_recall_words_pasted_in_the_interactive_tui_run_nothing(cc, perm):
    """As a user does it: `claude` in a terminal, the command typed, the words pasted (a
    multi-line paste arrives as a bracketed paste), Enter; then /exit."""
    tui.prepare_home(cc.home / ".claude", cc.ws, cc.env["ANTHROPIC_API_KEY"], h.VERSION)
    words = _tui_words(cc.canary)
    cc.api.clear()
    with tui.Tui([str(cc.claude_bin), *PERMS[perm]], env=cc.env, cwd=cc.ws) as t:
        assert t.wait_for("❯", 60), t.screen  # the prompt box
        t.settle()
        t.type("/prima-memory:recall")
        # On a busy machine the prompt comes before the plugins are loaded ("Unknown command"):
        # the command is offered, with its description, once they are. Until then, retype.
        end = time.monotonic() + 90
        while not t.wait_for(RECALL_OFFERED, 3):
            assert time.monotonic() < end, t.screen
            t.erase(1)
            t.type("l")
        t.type(" ")
        t.settle(0.5)  # (a paste on the heels of the space can overtake it: "Unknown command")
        t.paste(words)
        t.settle(0.5)
        t.enter()
        assert t.wait_for("Done.", 120), t.screen  # the mock's reply
        t.settle()
        code = t.exit()
        said = t.screen
    assert code == 0, said
    resumed = re.search(r"claude--resume([0-9a-f-]{36})", said)  # "Resume this session with: ..."
    cc.recall_sessions.append(resumed.group(1) if resumed else None)
    assert not list(cc.canary.iterdir()), "the shell ran part of the pasted words"
    assert len(cc.api.requests) >= 1
    user = _texts(cc.api.requests[0], "user")
    assert "<command-name>/prima-memory:recall</command-name>" in user, user[-2000:]
    assert "past sessions matching" not in user
    shown = RECALL_HEADER.search(_recall_answer(cc))
    assert shown and shown.group(1) == _shown(words), _recall_answer(cc)[:1000]
    # and the words arrived whole: what Claude Code gave the hook is what the user pasted
    assert f"<command-args>{words}</command-args>" in user


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
    assert "/prima-memory" not in briefing.split("\nMore: ")[0], briefing  # (but the footer)
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
        assert not _mcp_tools(cc.api.requests[0])  # nor its MCP server
    finally:
        p = cc.cc("plugin", "enable", PLUGIN)
        assert p.returncode == 0, p.stdout + p.stderr
    cc.claude("And back?")
    assert "<prima-memory>" in cc.sent()
    assert _mcp_tools(cc.api.requests[0]) == sorted(MCP_TOOLS)


# -- updates --------------------------------------------------------------------------------------

def test_an_update_never_leaves_the_live_plugin_folder_incomplete(cc):
    live = cc.share / "plugin"
    if live.is_symlink():  # as an older install.sh left it: a real folder, to swap in one step
        target = live.resolve()
        live.unlink()
        shutil.copytree(target, live, symlinks=True)
    needed = [Path("hooks/run.sh"), Path("hooks/hooks.json"), Path("hooks/entry.py"),
              Path("commands/recall.md"), Path(".claude-plugin/plugin.json"), Path(".mcp.json")]
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
    # and sessions go on working from it, the MCP server too
    cc.claude("Still there?")
    assert cc.sessions["writer"] in _briefing(cc.sent())
    assert _mcp_tools(cc.api.requests[0]) == sorted(MCP_TOOLS)


# -- the MCP server ------------------------------------------------------------------------------
# Here ANTHROPIC_BASE_URL is the mock, and Claude Code then turns its tool search off: a `claude -p`
# session waits for the MCP servers to connect before its first request, which carries their tools
# in `tools`. Against Anthropic's API (tool search on) the first request does not wait, and the
# tools are deferred: named in a system reminder, loaded through ToolSearch.

def _mcp_tools(request) -> list[str]:
    """The prima-memory MCP tools offered in a request, by their own names: in its `tools`
    (2.1.197), or named in its list of deferred tools, loaded through ToolSearch (2.1.332)."""
    names = request.tool_names() + request.deferred_tool_names()
    return sorted({n[len(MCP_TOOL):] for n in names if n.startswith(MCP_TOOL)})


def _schema(cc, tool: str) -> dict | None:
    """A tool's definition as the model gets it: from the first request's `tools`, or, when it
    is deferred, loaded the way the model loads it (ToolSearch "select:<name>")."""
    name = MCP_TOOL + tool
    for t in cc.api.requests[0].body.get("tools") or []:
        if t.get("name") == name:
            return t
    cc.api.rule("load the memory tool", {"tool": "ToolSearch", "input": {"query": "select:" + name}})
    cc.claude("Please load the memory tool")
    for r in cc.api.requests:
        for t in r.body.get("tools") or []:
            if t.get("name") == name:
                return t
    return None


def _mcp_call(cc, trigger: str, tool: str, args: dict, *, allow: bool = True) -> tuple[dict, dict]:
    """A session in which the model calls one prima-memory tool; returns Claude Code's JSON
    result and the tool_result the next request carried ({"tool_use_id", "is_error", "text"})."""
    cc.api.rule(trigger, {"tool": MCP_TOOL + tool, "input": args})
    # Under default permissions an MCP tool needs the user's yes, which `claude -p` has nobody to
    # ask (see test_an_mcp_tool_is_refused_without_permission): the test grants it, as a user
    # would once with "don't ask again", or with permissions.allow in settings.json
    extra = ("--allowedTools", MCP_TOOL + tool) if allow else ()
    out = cc.claude(f"Please {trigger}", *extra)
    results = [t for r in cc.api.requests for t in r.tool_results()]
    assert len(results) == 1, [r.messages[-1] for r in cc.api.requests]
    return out, results[0]


def _answer(text: str):
    """The server's JSON answer from a tool_result's text."""
    return json.loads(text)


def test_mcp_list_shows_the_plugins_server_connected(cc):
    t = time.monotonic()
    p = cc.cc("mcp", "list")
    secs = time.monotonic() - t
    assert p.returncode == 0, p.stdout + p.stderr
    # 2.1.197: "Checking MCP server health…", then for each server
    # "plugin:prima-memory:prima-memory: bash <plugin folder>/hooks/run.sh mcp - ✔ Connected"
    # ("✘ Failed to connect" when the server does not answer)
    lines = [ln for ln in p.stdout.splitlines() if MCP_SERVER in ln]
    assert len(lines) == 1, p.stdout
    line = lines[0]
    assert re.search(r"hooks/run\.sh\"? mcp\b", line), line
    if "health" in p.stdout.lower() or re.search(r"connect|fail|✔|✘|✗", line, re.I):
        assert re.search(r"(?<!not )\bconnected\b", line, re.I), line
        assert not re.search(r"fail|✘|✗|pending|needs", line, re.I), line
    print(f"\n`claude mcp list` with its health check: {secs:.1f} s", file=sys.stderr)


def test_the_mcp_tools_reach_the_model(cc, tmp_path):
    log = tmp_path / "debug.txt"
    cc.claude("Which tools do you have?", debug=log)
    first = cc.api.requests[0]
    assert _mcp_tools(first) == sorted(MCP_TOOLS), first.tool_names()
    connect = h.mcp_connect(log, MCP_SERVER)
    search = _schema(cc, "search_sessions")
    assert search is not None, [r.tool_names() for r in cc.api.requests]
    assert search["input_schema"]["required"] == ["query"]
    assert search["input_schema"]["properties"]["limit"]["maximum"] == 50
    assert "past sessions" in search["description"]
    assert connect is not None, log.read_text()[-3000:]
    ms, timeout = connect
    assert ms < timeout
    print(f"\nMCP server start to connected inside Claude Code {h.VERSION}: {ms:.0f} ms "
          f"(the first request waits for it; Claude Code gives up after {timeout / 1000:.0f} s)",
          file=sys.stderr)


def test_a_search_through_the_mcp_server_reaches_the_model(cc):
    writer = cc.sessions["writer"]
    out, result = _mcp_call(cc, "look through our memory for the parser notes", "search_sessions",
                            {"query": "zanzibarite", "mode": "keyword"})
    assert not out.get("permission_denials"), out
    assert not result["is_error"], result
    cc.mcp_search_result = result["text"]
    assert writer in result["text"]
    answer = _answer(result["text"])
    assert answer["query"] == "zanzibarite" and answer["mode"] == "keyword"
    assert [r["session_id"] for r in answer["results"]] == [writer], answer
    assert answer["results"][0]["title"] == "Write the zanzibarite notes for the parser"


def test_the_search_answer_reaches_the_model_without_a_wrapper(cc):
    if not cc.mcp_search_result:
        pytest.skip("test_a_search_through_the_mcp_server_reaches_the_model did not get that far")
    assert "results" in json.loads(cc.mcp_search_result)


def test_an_mcp_tool_error_reaches_the_model_and_the_file_outside_does_not(cc):
    secret = cc.e.root / "outside" / "secret.txt"
    secret.parent.mkdir(exist_ok=True)
    secret.write_text("quetzalcoatlite passphrase\n")
    rel = "../../outside/secret.txt"
    assert (cc.ws / rel).resolve() == secret.resolve()
    out, result = _mcp_call(cc, "show the history of that file", "get_file_history",
                            {"path": rel})
    assert result["is_error"], result
    assert "outside the workspace" in result["text"] and rel in result["text"], result
    assert "quetzalcoatlite" not in cc.sent()
    assert out.get("result") == "The tool ran; that is done."  # the session went on


def test_an_mcp_tool_is_refused_without_permission(cc):
    """What the --allowedTools of the tests above stand for: with the default permissions Claude
    Code would ask the user; `claude -p` cannot, so it refuses and tells the model."""
    out, result = _mcp_call(cc, "list the recent sessions", "recent_sessions", {}, allow=False)
    assert [d["tool_name"] for d in out.get("permission_denials", [])] == [
        MCP_TOOL + "recent_sessions"], out
    assert result["is_error"] and MCP_TOOL + "recent_sessions" in result["text"], result
    assert cc.sessions["writer"] not in result["text"]


# -- cost ------------------------------------------------------------------------------------------

def test_session_start_hook_time_is_read_from_claude_codes_debug_log(cc, tmp_path):
    """Not a timing assertion: the figure bench/claude_code.py reports must stay measurable."""
    log = tmp_path / "debug.txt"
    cc.claude("How long did the hook take?", debug=log)
    ms = h.session_start_hook_ms(log)
    assert ms is not None and 0 < ms < 15000, log.read_text()[-3000:]
    print(f"\nSessionStart hook inside Claude Code {h.VERSION}: {ms:.0f} ms", file=sys.stderr)



# -- what the plugin costs a session, and how its server ends --------------------------------------

HEAVY = ("apsw", "pydantic_core", "onnxruntime", "numpy", "torch")  # what the memory loads


def _running() -> list[tuple[int, list[bytes]]]:
    """(pid, argv) of every running process (one that ended, not yet reaped, is not)."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    out.append((int(pid), argv))
        except OSError:
            continue
    return out


def _servers(ws: Path) -> dict[int, str]:
    """pid -> /proc/<pid>/maps of the running prima-memory MCP servers of this workspace."""
    out = {}
    for pid, argv in _running():
        if b"mcp" not in argv or not any(a.endswith(b"hooks/entry.py") for a in argv):
            continue
        try:
            if os.readlink(f"/proc/{pid}/cwd") == str(ws):
                out[pid] = Path(f"/proc/{pid}/maps").read_text()
        except OSError:
            continue
    return out


def test_the_mcp_server_has_loaded_nothing_heavy_when_the_session_starts(cc):
    """Claude Code waits for the MCP server before the first request: at that moment the server
    has answered the handshake and listed its tools, and holds none of the SDK, the index or the
    model (each of which cost every session tenths of a second to a second of CPU)."""
    if not os.path.isdir("/proc/self"):
        pytest.skip("reads /proc")
    seen: list[dict[int, str]] = []
    cc.api.on_request = lambda req: seen.append(_servers(cc.ws)) if not seen else None
    try:
        cc.claude("Is the memory there?")
    finally:
        cc.api.on_request = None
    assert _mcp_tools(cc.api.requests[0]) == sorted(MCP_TOOLS)
    assert seen and seen[0], "no prima-memory MCP server was running at the first request"
    for pid, maps in seen[0].items():
        loaded = [lib for lib in HEAVY if lib in maps]
        assert not loaded, f"server {pid} had loaded {loaded} by the first request"


def _busy_loops(n: int):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def test_every_session_on_a_busy_machine_is_offered_the_tools(cc):
    """Ten `claude -p` one after another with two busy loops taking the machine's two cores:
    every first request names all seven tools (a server slower to start than Claude Code's
    wait would leave them out)."""
    busy = _busy_loops(2)
    try:
        offered = []
        for i in range(10):
            cc.claude(f"Busy machine, run {i}")
            offered.append(_mcp_tools(cc.api.requests[0]))
    finally:
        for p in busy:
            p.kill()
            p.wait()
    assert offered == [sorted(MCP_TOOLS)] * 10, offered


def _embedders(ws: Path) -> list[int]:
    """pids of the running background embedders (`embed --worker`) of this workspace."""
    return [pid for pid, argv in _running()
            if b"embed" in argv and b"--worker" in argv and str(ws).encode() in argv]


def test_ten_sessions_at_once_leave_no_server_behind_and_one_embedder(cc):
    """Ten `claude -p` at once, with the background embedder on as users have it: each MCP
    server ends with its session (they used to outlive it by seconds, at a second of CPU each),
    the ten Stops start one embedder alive at a time (30 Stops at once had started up to 11),
    and nothing logs `database is locked`."""
    if not os.path.isdir("/proc/self"):
        pytest.skip("reads /proc")
    results: list = [None] * 10
    env = dict(cc.env, PRIMA_BACKGROUND="1")
    log = cc.ws / ".prima-memory" / "prima-memory.log"
    logged = log.stat().st_size if log.exists() else 0

    def one(i: int) -> None:
        results[i] = h.run([str(cc.claude_bin), "-p", f"Crowd run {i}: the pomelo ledger",
                            "--output-format", "json"], env=env, cwd=str(cc.ws), timeout=300)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    alive_at_once = 0
    while any(t.is_alive() for t in threads):
        alive_at_once = max(alive_at_once, len(_embedders(cc.ws)))
        time.sleep(0.003)
    for t in threads:
        t.join()
    assert [r.returncode for r in results] == [0] * 10, [r.stderr[-500:] for r in results]
    left = _servers(cc.ws)
    for _ in range(30):  # a server is given at most a moment after its session's end
        if not left:
            break
        time.sleep(0.1)
        left = _servers(cc.ws)
    assert not left, f"{len(left)} MCP servers outlived their sessions: {sorted(left)}"
    for _ in range(1200):  # the embedder ends when nothing is left: later tests run without it
        running = _embedders(cc.ws)
        alive_at_once = max(alive_at_once, len(running))
        if not running:
            break
        time.sleep(0.05)
    print(f"\nembedders alive at once: {alive_at_once}", file=sys.stderr)
    assert alive_at_once <= 1, f"{alive_at_once} background embedders alive at once"
    with open(log, "rb") as f:
        f.seek(logged)
        new = f.read().decode("utf-8", "replace")
    assert "database is locked" not in new and "BusyError" not in new, new[-3000:]


def test_claude_codes_own_records_yield_no_warning(cc):
    """Every record type the Claude Code under test writes (2.1.332: api-request, tools-used,
    cost-state ...) is known: none is a warning, none is counted as unknown."""
    p = h.run([str(VENV_PYTHON), "-m", "prima_memory", "status", "--json"], env=cc.e.env,
              cwd=str(cc.ws), timeout=120)
    assert p.returncode == 0, p.stderr
    status = json.loads(p.stdout)
    claude = next(s for s in status["sources"] if s["source"] == "claude-code")
    assert claude["sessions"] > 10
    assert claude["unknown_record_types"] == [], claude
    warnings = status["warnings"] + claude["warnings"]
    assert not [w for w in warnings if "record type" in w], warnings


# -- a forked session -------------------------------------------------------------------------------

def test_a_forked_session_is_its_own_session(cc):
    """`--resume <id> --fork-session` writes a new transcript that starts with copies of the
    earlier session's lines (their uuids too) under a new session id. Here the index keeps the
    fork as a session of its own, with its new turn; folding the copies into the original in
    answers is the answers issue's work (#20). (A session of its own to fork: one that was
    compacted and resumed forks from where it was resumed, not from its first file.)"""
    original = cc.claude("Please keep the quillwort plan in mind")["session_id"]
    fork = cc.claude("Fork: what was the quillwort plan?", "--fork-session",
                     resume=original)["session_id"]
    assert fork != original
    files = {p.stem: p for p in (cc.e.project_dir).glob("*.jsonl")}
    assert fork in files and original in files

    def uuids(path: Path) -> set:
        return {json.loads(ln).get("uuid") for ln in path.read_text().splitlines() if ln} - {None}
    copied = uuids(files[fork]) & uuids(files[original])
    assert copied, "the fork holds no copy of the earlier lines"
    assert "Fork: what was" not in files[original].read_text(), "the original was written to"
    rows = cc.index("SELECT title_first FROM sessions WHERE session_id = ?", (fork,))
    assert len(rows) == 1, (fork, cc.log_tail())  # its Stop hook indexed it
    found = cc.search("quillwort")
    assert sorted(found) == sorted([original, fork]), found  # the copies, found twice (#20)
    print(f"\nfork: {len(copied)} lines copied from the original; a keyword search for its words "
          f"finds both", file=sys.stderr)


# -- taking things out --------------------------------------------------------------------------------

def _bytes_hold(word: str, data: Path) -> list[str]:
    return [str(p) for p in data.rglob("*") if p.is_file() and word.encode() in p.read_bytes()]


def test_forget_this_inside_claude_code_forgets_the_session(cc):
    """/prima-memory:forget this: the hook forgets the running session (its words then in no
    file under .prima-memory, and never stored again by its Stop) and its answer reaches the
    model as a system message."""
    sid = cc.claude("Remember the zqxtamarind launch codes")["session_id"]
    assert cc.search("zqxtamarind") == [sid], cc.log_tail()
    cc.claude("/prima-memory:forget this", resume=sid)
    system = _texts(cc.api.requests[0], "system")
    assert "prima-memory's answer to /prima-memory:forget" in system
    assert f"forgot this session ({sid})" in system
    cc.claude("And the zqxtamarind backup codes?", resume=sid)
    assert cc.search("zqxtamarind") == []
    assert _bytes_hold("zqxtamarind", cc.ws / ".prima-memory") == []


def test_forget_this_keeps_the_turns_after_it_out_of_a_fork(cc):
    """(#36) `/prima-memory:forget this`, two more resumed turns, then `--resume ID
    --fork-session`: the fork copies every turn, and neither later one is indexed under its id
    (nor anywhere); the fork's own turn is."""
    sid = cc.claude("Remember the zqxjuniper rollout order")["session_id"]
    cc.claude("/prima-memory:forget this", resume=sid)
    cc.claude("Add the zqxlaterone step", resume=sid)
    cc.claude("And the zqxlatertwo step", resume=sid)
    fork = cc.claude("Fork: list the zqxforkown steps", "--fork-session",
                     resume=sid)["session_id"]
    assert fork != sid
    for word in ("zqxjuniper", "zqxlaterone", "zqxlatertwo"):
        assert cc.search(word) == [], (word, cc.log_tail())
        assert _bytes_hold(word, cc.ws / ".prima-memory") == [], word
    assert cc.search("zqxforkown") == [fork], cc.log_tail()


def test_a_session_started_with_prima_memory_off_is_not_briefed_nor_remembered(cc):
    off = dict(cc.env, PRIMA_MEMORY="off")
    cc.api.clear()
    p = h.run([str(cc.claude_bin), "-p", "Draft the zqxcardamom memo", "--output-format", "json"],
              env=off, cwd=str(cc.ws), timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert cc.api.requests and "<prima-memory>" not in cc.sent()  # no briefing
    assert cc.search("zqxcardamom") == []
    assert _bytes_hold("zqxcardamom", cc.ws / ".prima-memory") == []


# -- the commands the hints print ------------------------------------------------------------------
# Last: running them continues sessions and adds one, which the checks above must not see.

def test_install_sh_linked_the_command_the_hints_name(cc):
    link = cc.local_bin / "prima-memory"
    assert link.is_symlink() and link.resolve() == (REPO / ".venv" / "bin" / "prima-memory").resolve()


def test_claude_runs_the_show_line_recall_printed(cc):
    """The model runs the `show` line of /recall's answer, exactly as printed, with its Bash
    tool (allowed): the tool's result is the session."""
    out, _shown = _recall(cc, "zanzibarite")
    writer = cc.sessions["writer"]
    show, _resume = _way_back(_recall_answer(cc), writer)
    cc.api.rule("run the line that prints the parser session",
                {"tool": "Bash", "input": {"command": show, "description": "Print the session"}})
    cc.claude("Please run the line that prints the parser session", "--allowedTools", "Bash")
    results = [t for r in cc.api.requests for t in r.tool_results()]
    assert len(results) == 1 and not results[0]["is_error"], results
    assert "command not found" not in results[0]["text"]
    assert "Write the zanzibarite notes for the parser" in results[0]["text"], results
    assert f"session {writer}" in results[0]["text"]


def test_every_printed_hint_runs_from_a_users_shell(cc):
    """Each command line /recall prints (for a search and for the latest sessions) run in
    `bash -c` from the home folder with a user's PATH after install.sh (~/.local/bin first, then
    /usr/bin:/bin; and Claude Code's folder for `claude`): exit 0, and each does what it says.
    The briefing's search too, from the workspace: only Claude reads it, whose Bash tool starts
    there."""
    _recall(cc, "zanzibarite")
    found = _recall_answer(cc)
    _recall(cc, "")
    latest = _recall_answer(cc)
    briefing = _briefing(cc.api.requests[0].text)
    lines = [ln.strip() for ln in (found + "\n" + latest).splitlines()]
    shows = sorted({ln for ln in lines if re.fullmatch(r"\S*prima-memory show \S+ --workspace .+", ln)})
    resumes = sorted({ln for ln in lines if re.fullmatch(r"cd .+ && claude --resume \S+", ln)})
    assert shows and len(shows) == len(resumes), lines
    search = re.search(r"shell: (prima-memory search \"<words>\")", briefing)
    assert search, briefing
    user = dict(cc.env, PATH=f"{cc.local_bin}:/usr/bin:/bin")

    def sh(line: str, env: dict = user, cwd: Path = cc.home, **kw):
        p = subprocess.run(["bash", "-c", line], capture_output=True, text=True, env=env,
                           cwd=str(cwd), timeout=180, **kw)
        assert p.returncode == 0, (line, p.stdout[-1000:], p.stderr[-1000:])
        return p.stdout

    assert cc.sessions["writer"] in sh(search.group(1).replace("<words>", "zanzibarite"),
                                       cwd=cc.ws)
    for line in shows:
        sid = shlex.split(line)[2]
        assert f"session {sid}" in sh(line).splitlines()[1], line
        assert f"session {sid}" in sh(line + " --range -20:")  # as the closing hint offers
    with_claude = dict(user, PATH=f"{user['PATH']}:{cc.claude_bin.parent}")
    for line in resumes:
        sid = shlex.split(line)[-1]
        cc.api.clear()
        sh(line, with_claude, input="Still there after the way back?")  # no terminal: one turn
        sent = cc.sent()
        assert "Still there after the way back?" in sent, line
        assert len(cc.api.requests[0].messages) > 2, "the session was not resumed"
        if sid == cc.sessions["writer"]:
            assert "Please write the zanzibarite notes for the parser" in sent


# -- memory at the point of action (last: their sessions talk of the writer's file) ----------

def test_an_edit_of_a_file_with_history_brings_its_note_once(cc):
    # the writer session changed the notes: before Claude edits them again, the PreToolUse hook
    # names that session, and the note reaches the model in the next request, after the result
    notes = cc.ws / "zanzibarite-notes.md"
    for n, (old, new) in enumerate((("Retry", "Retry twice"), ("twice", "twice, then stop")), 1):
        cc.api.rule(f"touch up the zanzibarite notes, pass {n}", [  # (Claude Code: read first)
            {"tool": "Read", "input": {"file_path": str(notes)}},
            {"tool": "Edit", "input": {"file_path": str(notes), "old_string": old,
                                       "new_string": new}}])
    out = cc.claude("Please touch up the zanzibarite notes, pass 1",
                    "--permission-mode", "acceptEdits")
    sid = out["session_id"]
    assert "Retry twice" in notes.read_text(), "the edit ran as it would have"
    said = "Earlier sessions on zanzibarite-notes.md"
    after = [r for r in cc.api.requests if r.turn[1] == 2]  # (after the Read, then the Edit)
    assert after and not any(said in r.text for r in cc.api.requests[:2]), "after the edit"
    assert after[0].text.count(said) == 1, after[0].text[-3000:]
    note = after[0].text[after[0].text.index(said):].split("</prima-memory>")[0]
    assert cc.sessions["writer"] in note and "Write the zanzibarite notes for the parser" in note
    cc.claude("Please touch up the zanzibarite notes, pass 2", "--permission-mode", "acceptEdits",
              resume=sid)
    assert "then stop" in notes.read_text()
    first, last = cc.api.requests[0], cc.api.requests[-1]
    assert last.ends_with_tool_result and last.text.count(said) == first.text.count(said) <= 1, \
        "once per file a session: the second edit adds no note"


def test_a_command_failing_as_before_brings_back_the_fix(cc):
    # a first session: the command fails, Claude writes the missing module (the fix); Stop
    # indexes it. A second: the module is gone again and the same command fails the same way:
    # the PostToolUseFailure hook points at the first session and its fix, after the error
    mod = cc.ws / "zanzibar_quokka_mod.py"
    cmd = "python3 -c 'import zanzibar_quokka_mod'"
    cc.api.rule("run the quokka import check", [
        {"tool": "Bash", "input": {"command": cmd, "description": "Import the quokka module"}},
        {"tool": "Write", "input": {"file_path": str(mod), "content": "QUOKKA = 1\n"}}])
    cc.api.rule("check the quokka import again", [
        {"tool": "Bash", "input": {"command": cmd, "description": "Import the quokka module"}}])
    fixed = cc.claude("Please run the quokka import check", "--permission-mode", "acceptEdits",
                      "--allowedTools", "Bash")["session_id"]
    assert mod.exists(), "the fix was written"
    mod.unlink()
    cc.claude("Please check the quokka import again", "--allowedTools", "Bash")
    said = "This error was met before"
    after = [r for r in cc.api.requests if r.turn[1] == 1]
    assert after and said in after[0].text, after[0].text[-3000:] if after else cc.log_tail()
    assert after[0].text.count(said) == 1 and "No module named" in after[0].text
    note = after[0].text[after[0].text.index(said):].split("</prima-memory>")[0]
    assert fixed in note and "zanzibar_quokka_mod.py" in note, note
