"""Runs the real Claude Code CLI, installed from npm at a pinned version, offline against the local
mock of the Messages API (mock_messages_api.py), in a fake HOME. Used by test_e2e_claude_code.py
and bench/claude_code.py.

Nothing leaves the machine: the API is the mock on 127.0.0.1, telemetry, auto-update, error
reporting and nonessential traffic are off, and HTTP(S)_PROXY point at a closed port on loopback
so any other request Claude Code might try fails at once instead of going out.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

VERSION = os.environ.get("PRIMA_E2E_CLAUDE_CODE_VERSION", "2.1.197")
PACKAGE = "@anthropic-ai/claude-code"
CLOSED_PORT = "http://127.0.0.1:9"  # discard port: nothing listens, a connection is refused


class Unavailable(Exception):
    """npm or the package cannot be had here: the caller skips, saying why."""


def run(argv, *, timeout: float, env=None, cwd=None, input: str | None = None):
    """subprocess.run in its own process group, the whole group killed on timeout."""
    p = subprocess.Popen(argv, env=env, cwd=cwd, text=True, start_new_session=True,
                         stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        raise AssertionError(f"{argv[:3]} ran past {timeout}s\nstdout: {out[-2000:]}\n"
                             f"stderr: {err[-2000:]}") from None
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def install_claude(prefix: Path, version: str = VERSION) -> Path:
    """`npm install` the pinned CLI into a folder of the caller's; returns the `claude` path."""
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable("npm is not installed")
    prefix.mkdir(parents=True, exist_ok=True)
    p = run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
             "--loglevel=error", f"{PACKAGE}@{version}"], timeout=600)
    claude = prefix / "node_modules" / ".bin" / "claude"
    if p.returncode != 0 or not claude.exists():
        raise Unavailable(f"npm could not install {PACKAGE}@{version}: "
                          f"{(p.stderr or p.stdout).strip()[-300:]}")
    v = run([str(claude), "--version"], timeout=60)
    if version not in v.stdout:
        raise Unavailable(f"{claude} --version says {v.stdout.strip()!r}, not {version}")
    return claude


def claude_env(base: dict, claude: Path, api_url: str, home: Path) -> dict:
    env = dict(base)
    env.update(
        HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"),
        XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        PATH=f"{claude.parent}{os.pathsep}{base.get('PATH', os.defpath)}",
        ANTHROPIC_BASE_URL=api_url, ANTHROPIC_API_KEY="sk-ant-test-dummy-key",
        DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        HTTP_PROXY=CLOSED_PORT, HTTPS_PROXY=CLOSED_PORT, NO_PROXY="127.0.0.1,localhost",
        PRIMA_BACKGROUND="0",  # no embedder outliving a test (tests/test_semantic.py covers it)
    )
    for k in ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX",
              "CLAUDE_PROJECT_DIR", "CLAUDE_PLUGIN_ROOT", "CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT"):
        env.pop(k, None)
    return env


def session_start_hook_ms(debug_log: Path) -> float | None:
    """How long the SessionStart hook took as Claude Code logged it: the time it states
    (2.1.332: "Hooks: SessionStart:startup [...] finished with status 0 (90ms)"), else from its
    hook_execution_start line to the line where Claude Code reads the hook's output (2.1.197)."""
    start = end = None
    try:
        lines = debug_log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        stated = re.search(r"Hooks: SessionStart:\w+ .* finished with status \d+ \((\d+)ms\)", line)
        if stated:
            return float(stated.group(1))
        m = re.match(r"(\d{4}-\d\d-\d\dT[\d:.]+)Z ", line)
        if not m:
            continue
        if start is None and "hook_execution_start" in line:
            start = _ts(m.group(1))
        elif start is not None and ("Hook output does not start with" in line
                                    or re.search(r"Hook SessionStart:\w+ \(SessionStart\)", line)):
            end = _ts(m.group(1))
            break
    return None if start is None or end is None else (end - start) * 1000


def hook_times_ms(debug_log: Path, event: str) -> list[float]:
    """Each run of an event's hooks, as Claude Code states its time in its debug log (2.1.332:
    "Hooks: PreToolUse:Write [...] finished with status 0 (41ms)"; 2.1.197 states none)."""
    try:
        text = debug_log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [float(m) for m in re.findall(
        rf"Hooks: {re.escape(event)}:\S* .* finished with status \d+ \((\d+)ms\)", text)]


def mcp_connect(debug_log: Path, server: str) -> tuple[float, float] | None:
    """(connect ms, timeout ms) of an MCP server as Claude Code logged them: its "Starting
    connection with timeout of N ms" and "Successfully connected (transport: ...) in N ms"."""
    try:
        text = debug_log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    name = re.escape(f'MCP server "{server}":')
    timeout = re.search(name + r" Starting connection with timeout of (\d+)ms", text)
    took = re.search(name + r" Successfully connected \(transport: \w+\) in (\d+)ms", text)
    return None if not (timeout and took) else (float(took.group(1)), float(timeout.group(1)))


def _ts(text: str) -> float:
    from datetime import datetime, timezone
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def installed_plugins(home: Path) -> dict:
    path = home / ".claude" / "plugins" / "installed_plugins.json"
    return json.loads(path.read_text()) if path.exists() else {}
