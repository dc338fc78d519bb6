"""Nothing a history holds acts on a terminal: every command, run as the real CLI over a history
whose transcripts, titles, branches, file paths, shared-log entry and session-history summary hold
terminal control sequences (OSC 52 clipboard writes, OSC 0 titles, OSC 8 links, CSI 2J, DCS,
APC/PM/SOS, 8-bit C1, BEL, DEL), bidirectional overrides and lone surrogates, writes none of them
raw to stdout or stderr; its --json still reads back as the exact strings (issue #36, point 8).
The one neutraliser itself (prima_memory/terminal.py) is tested in-process below."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import Env
from prima_memory import jsontext, terminal, titles

T0 = 1_780_000_000.0
SID = "7e57c0de-0000-4000-8000-00000000e5c0"
QUIET = "7e57c0de-0000-4000-8000-0000000000b2"

# every kind of sequence, each spelled as a transcript (or a log) would carry it
SEQUENCES = {
    "osc52": "\x1b]52;c;cHduZWQgY2xpcGJvYXJk\x07",  # a clipboard write, BEL-ended
    "osc0": "\x1b]0;pwned title\x1b\\",  # the window's title, ST-ended
    "osc8": "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\",  # a hidden link
    "csi": "\x1b[2J\x1b[H\x1b[31m",  # clear the screen, home, red
    "dcs": "\x1bP1$r0m\x1b\\",  # a device control string
    "apc-pm-sos": "\x1b_apc\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\",
    "c1": "\x9b2J\x9d0;c1 title\x9c\x90dcs\x9c\x85",  # 8-bit CSI, OSC, ST, DCS, NEL
    "c0": "bel\x07 bs\x08 del\x7f cr\r nul\x00 vt\x0b ff\x0c",
    "bidi": "\u202eevil\u202c \u2066isolate\u2069 \u202a\u202b\u202d\u2067\u2068",
}
HOSTILE = " ".join(SEQUENCES.values())
WORD = "zanzibarite"  # what every search finds
# what may never reach a terminal raw: C0 but \n and \t, DEL, C1, the bidi overrides and
# isolates, a lone surrogate (a str holding one cannot be written as UTF-8 at all)
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def _raw_bytes(out: bytes) -> list[str]:
    """The control characters of a command's output (any lone surrogate would have failed to be
    written: the bytes are UTF-8, or something else broke)."""
    return sorted(set(RAW.findall(out.decode("utf-8"))))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    env = Env(tmp_path_factory.mktemp("terminal"))
    t = env.transcript(SID, start=T0, branch=f"feat/{SEQUENCES['osc0']}{SEQUENCES['c1']}\u202e")
    t.raw({"type": "custom-title", "customTitle": f"{WORD} title {HOSTILE}", "sessionId": SID})
    t.user(f"{WORD} please fix it {HOSTILE} \ud800 lone")
    t.tool("Edit", {"file_path": str(env.ws / f"src/{SEQUENCES['csi']}{SEQUENCES['bidi']}.py"),
                    "old_string": "a", "new_string": "b"},
           text=f"Editing the {WORD} file {SEQUENCES['osc52']}")
    t.reply(f"DECIDED: {WORD} stays {SEQUENCES['osc8']} {SEQUENCES['dcs']}\nFixed {HOSTILE}")
    # one more session, with only a model-written title, to answer `similar` and `digest`
    q = env.transcript(QUIET, start=T0 + 3600, branch="main")
    q.raw({"type": "ai-title", "aiTitle": f"{WORD} ai {SEQUENCES['osc0']}{SEQUENCES['c1']}",
           "sessionId": QUIET})
    q.exchange(f"{WORD} again {SEQUENCES['csi']}", f"Done {SEQUENCES['apc-pm-sos']}")
    # the repository's shared log, and its session-history summaries
    entry = env.ws / ".claude" / "state" / "sessions" / "P001" / "2026-05-01-eve.md"
    entry.parent.mkdir(parents=True)
    entry.write_text(f"**Author:** Eve{SEQUENCES['osc52']}\n**Date:** 2026-05-01\n\n"
                     f"# {WORD} log {SEQUENCES['osc0']}\n{WORD} noted {HOSTILE}\n")
    state = env.ws / ".claude" / "state" / "state.json"
    state.write_text(json.dumps({"sessionHistory": [
        {"date": "2026-05-02", "time": "10:00", "summary": f"{WORD} summary {HOSTILE}"}]}))
    env.run("index")
    return env


def _run(env: Env, *args: str) -> subprocess.CompletedProcess:
    """The real CLI, its output as the bytes a terminal would get."""
    return subprocess.run([sys.executable, "-m", "prima_memory", *args], capture_output=True,
                          cwd=str(env.ws), env=env.env, timeout=120)


COMMANDS = {
    "search-keyword": ["search", WORD, "--mode", "keyword", "--context", "2", "--deep"],
    "search-combined": ["search", WORD, "--mode", "combined"],
    "search-semantic": ["search", f"{WORD} fix it", "--mode", "semantic"],
    "search-none": ["search", f"nothing{SEQUENCES['osc52']}like{SEQUENCES['c1']}it"],
    "search-history": ["search", "summary", "--mode", "keyword"],
    "recent": ["recent"],
    "show": ["show", SID],
    "show-summary": ["show", SID, "--detail", "summary"],
    "files": ["files"],
    "files-path": ["files", f"src/{SEQUENCES['csi']}"],
    "digest": ["digest", "--since", "2020-01-01"],
    "similar": ["similar", f"{WORD} fix {SEQUENCES['osc0']}"],
    "status": ["status"],
    "forget-match": ["forget", "--match", WORD],
    "export-markdown": ["export", SID],
    "export-html": ["export", SID, "--format", "html"],
    "recall": ["recall", WORD],
    "search-all": ["search", WORD, "--mode", "keyword", "--all-projects"],
    "recent-all": ["recent", "--all-projects"],
    "status-all": ["status", "--all-projects"],
    "quickstart": ["quickstart"],
    "help": ["search", "--help"],
    "error-show": ["show", f"nope{SEQUENCES['osc52']}{SEQUENCES['c1']}"],
    "error-usage": ["search", WORD, "--mode", f"x{SEQUENCES['osc0']}"],
    "error-workspace": ["recent", "--workspace", f"/nowhere/{SEQUENCES['osc52']}\u202e"],
}
SLOW = {"search-combined", "search-semantic", "similar"}  # they load the model, where installed


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_no_command_writes_a_control_character(hostile, name, as_json):
    p = _run(hostile, *COMMANDS[name], *(["--json"] if as_json else []))
    assert p.stdout or p.stderr, name
    assert _raw_bytes(p.stdout) == [], f"stdout of {name}: {p.stdout[:3000]!r}"
    assert _raw_bytes(p.stderr) == [], f"stderr of {name}: {p.stderr[:3000]!r}"
    if as_json and p.stdout and name != "help":
        jsontext.loads(p.stdout.decode("utf-8"))  # one valid JSON document
    if name.startswith("error") or name == "forget-match":
        assert p.returncode in (1, 2) and p.stderr.startswith(b"prima-memory: error: "), p.stderr
        assert p.stderr.count(b"\n") == 1, "an error stays one line"
    else:
        assert p.returncode == 0, p.stderr


def test_forget_list_and_a_forget(tmp_path):
    """forget lists what it forgets, then forget --list, with the same history's words."""
    env = Env(tmp_path)
    t = env.transcript(SID, start=T0, branch=SEQUENCES["osc0"])
    t.raw({"type": "custom-title", "customTitle": f"{WORD} {HOSTILE}", "sessionId": SID})
    t.exchange(f"{WORD} {HOSTILE}", f"ok {HOSTILE}")
    env.run("index")
    for args in (["forget", "--match", WORD, "--yes"], ["forget", "--list"],
                 ["forget", "--list", "--json"], ["status"]):
        p = _run(env, *args)
        assert p.returncode == 0, p.stderr
        assert (_raw_bytes(p.stdout), _raw_bytes(p.stderr)) == ([], []), (args, p.stdout)
    assert SID.encode() in _run(env, "forget", "--list").stdout


def test_json_keeps_the_exact_strings(hostile):
    """--json escapes every control character as \\uXXXX: nothing acts on a terminal, and a
    program reading it gets the strings the API holds, byte for byte."""
    p = _run(hostile, "show", SID, "--json")
    out = p.stdout.decode("utf-8")
    assert "\\u009b" in out and "\\u202e" in out and "\\u001b" in out
    d = jsontext.loads(out)["session"]
    assert d["title"] == titles.normalize(f"{WORD} title {HOSTILE}"), "the title as stored"
    assert d["branch"] == f"feat/{SEQUENCES['osc0']}{SEQUENCES['c1']}\u202e"
    first = d["messages"][0]["text"]
    assert HOSTILE in first and "\ufffd lone" in first, "a lone surrogate is U+FFFD, as stored"
    found = json.loads(_run(hostile, "search", WORD, "--mode", "keyword", "--json").stdout)
    assert any(r["branch"] == d["branch"] for r in found["results"])
    files = [f for s in json.loads(_run(hostile, "files", "--json").stdout)["sessions"]
             for f in s["files"]]
    assert any(c["relative"] == f"src/{SEQUENCES['csi']}{SEQUENCES['bidi']}.py" for c in files)


def test_text_shows_each_sequence_as_its_escape(hostile):
    """A control character is shown as its escape (\\x1b, \\x9b, \\u202e): the sequence stays
    legible, as the transcript has it, and inert; and a one-line field (a branch) stays on its
    line."""
    out = _run(hostile, "show", SID).stdout.decode("utf-8")
    assert "\\x1b]52;c;cHduZWQgY2xpcGJvYXJk\\x07" in out
    assert "\\x1b[2J\\x1b[H" in out and "\\x9b2J" in out and "\\u202eevil\\u202c" in out
    assert "\\ud800" not in out and "\ufffd lone" in out
    listing = _run(hostile, "recent").stdout.decode("utf-8")
    assert "(feat/\\x1b]0;pwned title\\x1b\\" in listing


def test_a_folder_whose_name_holds_an_escape(tmp_path):
    """The workspace's own path (status, an error quoting it) goes through it too."""
    env = Env(tmp_path)
    odd = tmp_path / f"odd{SEQUENCES['osc0']}\u202e\x9b"
    odd.mkdir()
    env.ws = odd
    t = env.transcript(SID, start=T0)
    t.exchange(f"{WORD} here", "ok")
    for args in (["index"], ["status"], ["recent"], ["search", WORD, "--mode", "keyword"],
                 ["status", "--json"]):
        p = _run(env, *args)
        assert p.returncode == 0, p.stderr
        assert (_raw_bytes(p.stdout), _raw_bytes(p.stderr)) == ([], []), (args, p.stdout)


def test_export_to_a_file_keeps_no_control_character(hostile, tmp_path):
    for fmt in ("markdown", "html"):
        out = tmp_path / f"s.{fmt}"
        p = _run(hostile, "export", SID, "--format", fmt, "-o", str(out))
        assert p.returncode == 0, p.stderr
        assert _raw_bytes(out.read_bytes()) == [], fmt
        assert "\\x1b]0;pwned title" in out.read_text(encoding="utf-8"), "the text is kept"


# -- the neutraliser ----------------------------------------------------------------------------

def test_every_control_character_is_shown_and_nothing_else_changes():
    every = "".join(map(chr, range(0x00, 0xa0))) + BIDI
    text = terminal.neutral(every)
    assert RAW.search(text) is None
    assert "\n" in text and "\t" in text, "a multi-line text keeps its lines and tabs"
    one = terminal.neutral(every, multiline=False)
    assert RAW.search(one) is None and "\n" not in one and "\t" not in one
    assert "\\n" in one and "\\t" in one
    # what it leaves as it is: printable text of every script, emoji and their joiners, NBSP
    kept = "café 日本語 עברית العربية 😀 👩\u200d💻 a\u00a0b \u200b \\x1b literal \u2028 tab\tend"
    assert terminal.neutral(kept) == kept
    assert terminal.neutral("a\r\nb") == "a\nb", "a Windows line end is a line end"
    assert terminal.neutral("50%\rdone") == "50%\\rdone", "a lone CR cannot rewrite the line"
    assert terminal.neutral("\ud800x\udcff") == "\ufffdx\ufffd"
    for spelled in SEQUENCES.values():  # idempotent: printing twice changes nothing more
        once = terminal.neutral(spelled)
        assert terminal.neutral(once) == once


def test_the_progress_bar_label(monkeypatch):
    """A bar's label can name a project: it is shown as any text; the bar's own "\\r" stays."""
    import io
    from prima_memory import progress

    class Tty(io.StringIO):
        def isatty(self):
            return True
    out = Tty()
    bar = progress.Progress.for_terminal(out, label=f"indexing {SEQUENCES['osc52']}\u202e")
    monkeypatch.setattr(progress.time, "monotonic", lambda: 10.0)  # (past the bar's delay)
    bar.start = bar.last = 0.0
    bar.update(50, 100)
    bar.finish()
    text = out.getvalue()
    assert text.startswith("\rindexing \\x1b]52;") and text.endswith("\n"), text
    assert RAW.search(text.replace("\r", "", 1)) is None, text


def test_json_form_is_exact():
    values = ["", "plain", "é 😀", *SEQUENCES.values(), HOSTILE, "new\nline\ttab", "\\u009b"]
    text = terminal.neutral(jsontext.dumps(values, indent=2, ensure_ascii=False), json=True)
    assert RAW.search(text) is None
    assert json.loads(text) == values
    assert "é 😀" in text, "only what could act is escaped"


def test_every_write_to_a_terminal_goes_through_it():
    """The command line writes to stdout and stderr only through terminal.write (hooks.py and the
    MCP server write for Claude, not a terminal; forget's question to the user is its own)."""
    root = os.path.join(os.path.dirname(__file__), "..", "prima_memory")
    writes = re.compile(r"\bprint\(|std(?:out|err)\.write\(|\bstream\.write\(")
    for name in ("cli.py", "commands.py", "export.py", "progress.py", "demo.py", "wording.py",
                 "jsontext.py"):
        with open(os.path.join(root, name), encoding="utf-8") as f:
            found = [ln.strip() for ln in f if writes.search(ln)]
        assert found == [], f"{name} writes to a terminal itself: {found}"


def test_the_hooks_and_the_mcp_server_pass_on_no_control_character(hostile):
    """Claude Code shows a hook's context and a tool's result in its terminal: the briefing,
    /recall's answer and an MCP answer carry every sequence inert, as the CLI shows it."""
    from test_forget_hooks import prompt
    from test_hooks import payload, run_hook
    from test_mcp import call, serve
    r = run_hook(hostile, "session-start", payload(hostile, "session-start", "ffff0000-1"))
    assert r.rc == 0 and WORD in r.out and _raw_bytes(r.out.encode()) == []
    r = prompt(hostile, "ffff0000-1", f"/prima-memory:recall {WORD}")
    assert r.rc == 0 and WORD in r.out and _raw_bytes(r.out.encode()) == []

    async def body(session):
        return [await call(session, "search_sessions", query=WORD, mode="keyword"),
                await call(session, "recall_session", session_id=SID, detail="full")]
    for err, text in serve(hostile, body):
        assert not err and WORD in text and _raw_bytes(text.encode()) == []
        json.loads(text)  # (still JSON)


def test_an_mcp_error_passes_on_no_control_character(tmp_path, monkeypatch):
    """A tool's error can name a path (the workspace's, a file's) or quote a title: it reaches
    Claude Code's terminal as a result does, every sequence inert, over stdio to a real client;
    and so does a fault of ours (an exception no tool expected)."""
    from test_mcp import call, serve

    from prima_memory import mcp_protocol as proto
    from prima_memory import mcp_server
    env = Env(tmp_path)
    env.ws = env.root / f"proj {SEQUENCES['csi']}{SEQUENCES['c1']}{SEQUENCES['bidi']}"
    env.ws.mkdir()
    env.transcript(SID, start=T0).exchange(f"{WORD} question", f"{WORD} answer")
    (env.data / "forgotten.json").mkdir(parents=True)  # (unreadable: every tool says so)

    async def body(session):
        return await call(session, "search_sessions", query=WORD, mode="keyword")
    err, text = serve(env, body)
    assert err and "forgotten.json" in text and WORD not in text, text
    assert _raw_bytes(text.encode()) == [] and "\\x9b" in text and "\\u202e" in text, text

    for k, v in env.env.items():
        monkeypatch.setenv(k, v)

    def broken(_args):
        raise RuntimeError(f"{WORD} {HOSTILE}")

    def refused(_args):
        raise proto.ToolError(f"no session titled {WORD} {HOSTILE}")
    memory = mcp_server.ServedMemory(str(env.ws))
    server = proto.Server("t", "0", "", [proto.Tool(name, "", proto.schema({}), run, {})
                                         for name, run in (("broken", broken),
                                                           ("refused", refused))],
                          on_fault=lambda e: mcp_server.fault(memory, e))
    for name in ("broken", "refused"):
        got = server.call(name, {})
        text = got["content"][0]["text"]
        assert got["isError"] and WORD in text and RAW.search(text) is None, text
