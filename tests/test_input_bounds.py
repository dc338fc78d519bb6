"""What reading and parsing one input may cost (issue #36, point 23): an MCP request line and a
hook's stdin, each bounded in size and in what parsing it may take, through the real server and
the real launcher. A line of 50 MB, a stream that never ends, 15 MB of `{},{},...` (which json
parses into 400 MB) and JSON nested 100,000 deep are each refused or failed open at once, with
a line saying why, and the server goes on serving.

Memory is measured as each process's peak resident size (Linux's VmHWM, or its waiter's
RUSAGE_CHILDREN), never time: the bounds below are several times what a refused input costs,
and far under what reading it whole did."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import REPO, Env
from test_hooks import HOOKS_JSON, command, hook_env, log_lines, payload, sid
from test_mcp_hostile import Raw, _no_model

LINUX = sys.platform.startswith("linux")
PEAK_MB = 150  # a hook or the server that refuses what it is given stays far under this (20-40)
# the UserPromptSubmit launcher holds up to 16 MB in a shell variable (115 MB at its peak; a 50 MB
# prompt read whole took 250)
LAUNCHER_PEAK_MB = 200

WIDE = b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":[' + b"{}," * (5 << 20) + b'{}]}}'
DEEP = b"[" * 100_000 + b"]" * 100_000


def _peak_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024


# -- the MCP server --------------------------------------------------------------------------------

def _ping(s: Raw, n: int) -> None:
    s.send({"jsonrpc": "2.0", "id": n, "method": "ping"})
    assert s.read(n)["result"] == {}


@pytest.mark.parametrize("line, code", [(b"x" * (50 << 20), -32600), (WIDE, -32600),
                                        (DEEP, -32700)], ids=["50MB", "wide", "deep"])
def test_an_mcp_request_past_its_bounds_is_an_error_and_the_server_goes_on(env, line, code):
    s = Raw(env, extra_env=_no_model(env))
    try:
        _ping(s, 1)
        s.p.stdin.write(line + b"\n")
        s.p.stdin.flush()
        got = s.read(None)
        assert got["error"]["code"] == code, got
        _ping(s, 2)
        err, text = s.call("recent_sessions")
        assert not err, text
        peak = _peak_mb(s.p.pid) if LINUX else 0
    finally:
        s.close()
    assert peak < PEAK_MB, f"the server grew to {peak:.0f} MB"


# -- a hook's stdin, through the launcher ------------------------------------------------------------

def _hook(env: Env, event: str, stdin: bytes | None = None, feed: str | None = None):
    """(exit code, stdout, stderr, peak MB) of a hook run as Claude Code runs it, by hooks.json's
    command: its stdin `stdin`, or the output of shell command `feed` piped in (under a 4 GB
    limit, should the hook read it whole). The peak is the hook's own: measured by a waiter
    process of its own (RUSAGE_CHILDREN), which kills the whole group if it does not end."""
    cmd = command(event) if event != "user-prompt-submit" else HOOKS_JSON["hooks"][
        "UserPromptSubmit"][0]["hooks"][0]["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(REPO))
    if feed is not None:
        cmd = f"ulimit -v 4194304; {feed} | {cmd}"
    waiter = ("import json, os, resource, signal, subprocess, sys\n"
              "p = subprocess.Popen(['bash', '-c', sys.argv[1]], stdout=subprocess.PIPE, "
              "stderr=subprocess.PIPE, start_new_session=True)\n"
              "try:\n"
              "    out, err = p.communicate(timeout=60)\n"
              "except subprocess.TimeoutExpired:\n"
              "    os.killpg(p.pid, signal.SIGKILL)\n"
              "    out, err = p.communicate()\n"
              "    err += b'still running after 60 s'\n"
              "print(json.dumps({'rc': p.returncode, 'out': out.decode('utf-8', 'replace'), "
              "'err': err.decode('utf-8', 'replace'), "
              "'kb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))\n")
    path = env.root / "stdin"
    path.write_bytes(stdin or b"")
    with open(path, "rb") as f:
        p = subprocess.run([sys.executable, "-c", waiter, cmd], stdin=f, capture_output=True,
                           text=True, cwd=str(env.ws), env=hook_env(env), timeout=120)
    got = json.loads(p.stdout)
    return got["rc"], got["out"], got["err"], got["kb"] / 1024


def _history(env: Env) -> None:
    t = env.transcript(sid(1), start=1_750_000_000.0)
    t.exchange("Make the upload retry with backoff", "Added exponential backoff.")
    env.run("index")


HUGE = "x" * (50 << 20)


@pytest.mark.parametrize("event, make, why", [
    ("stop", lambda env: json.dumps(payload(env, "stop", sid(1), prompt=HUGE)).encode(),
     "longer than 16 MB"),
    ("session-start", lambda env: json.dumps(payload(env, "session-start", sid(1))).encode()[:-1]
     + b', "x": [' + b"{}," * (5 << 20) + b"{}]}", "to parse"),
    ("session-start", lambda env: DEEP, "RecursionError"),
], ids=["50MB", "wide", "deep"])
def test_a_hook_given_too_much_fails_open_with_a_log_line(env, event, make, why):
    _history(env)
    rc, out, err, peak = _hook(env, event, make(env))
    assert rc == 0 and "Traceback" not in err, err
    assert out == "" or out.startswith("<prima-memory>")  # (a briefing, without its input)
    assert any(why in line for line in log_lines(env)), log_lines(env)[-5:]
    assert peak < PEAK_MB, f"the hook grew to {peak:.0f} MB"


def test_a_hook_whose_stdin_never_ends_stops_reading_it(env):
    _history(env)
    rc, out, err, peak = _hook(env, "stop", feed="yes '{}'")
    assert rc == 0 and "Traceback" not in err, err
    assert any("longer than 16 MB" in line for line in log_lines(env)), log_lines(env)[-5:]
    assert peak < PEAK_MB, f"the hook grew to {peak:.0f} MB"


@pytest.mark.parametrize("feed", [None, "yes '/prima-memory:recall '"])
def test_a_recall_prompt_past_the_bound_ends_at_once(env, feed):
    """UserPromptSubmit's launcher reads the JSON itself (to start Python only for our commands):
    a 50 MB prompt, or one that never ends, is not held whole there either."""
    _history(env)
    big = json.dumps({"session_id": sid(1), "cwd": str(env.ws), "hook_event_name":
                      "UserPromptSubmit", "prompt": "/prima-memory:recall " + HUGE}).encode()
    if feed is not None:
        feed = "{ printf '%s' '{\"prompt\": \"'; " + feed + "; }"
    rc, out, err, peak = _hook(env, "user-prompt-submit", None if feed else big, feed=feed)
    assert rc == 0 and "Traceback" not in err, err
    assert out == ""  # (its input refused: no /recall to answer)
    assert peak < LAUNCHER_PEAK_MB, f"the hook grew to {peak:.0f} MB"


@pytest.mark.parametrize("prompt", ["/prima-memory:recall backoff", "make the upload faster"])
def test_a_prompt_hook_whose_short_stdin_never_ends_fails_open(env, prompt):
    """UserPromptSubmit's launcher reads the JSON itself, up to 16 MB or the end of its input:
    an input under the bound whose end never comes is waited for a few seconds at most, then
    the hook fails open (exit 0) with a log line, as the Python path does past its bound."""
    import os
    import signal
    _history(env)
    cmd = HOOKS_JSON["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"].replace(
        "${CLAUDE_PLUGIN_ROOT}", str(REPO))
    p = subprocess.Popen(["bash", "-c", cmd], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=str(env.ws), env=hook_env(env),
                         start_new_session=True)
    assert p.stdin is not None
    p.stdin.write(json.dumps({"session_id": sid(1), "cwd": str(env.ws), "hook_event_name":
                              "UserPromptSubmit", "prompt": prompt}).encode())
    p.stdin.flush()  # (and never closed while the hook runs)
    try:
        rc = p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        rc = None
    finally:
        p.stdin.close()
    out, err = p.stdout.read(), p.stderr.read()  # type: ignore[union-attr]
    assert rc == 0, f"the hook still waited for its input after 20 s ({rc})"
    assert b"Traceback" not in err and out == b"", (out, err)
    assert any("did not end within" in line for line in log_lines(env)), log_lines(env)[-5:]
