"""Each source's identity as data, with no import: its name (a session's `source`), the label its
sessions carry, and the agent a person knows it by ("" for none: a shared log, prima-memory's own
extracts, the session history summaries). The registry's sources (registry.py) take theirs from
here, and so do the lists of sources a person reads (the CLI's help, the MCP tools' descriptions,
messages), which the CLI's help and the MCP handshake build without importing the sources' code.
"""
from __future__ import annotations

CLAUDE_CODE = ("claude-code", "[transcript]", "Claude Code")
CODEX = ("codex", "[Codex]", "Codex")
COPILOT_CHAT = ("copilot-chat", "[VS Code]", "VS Code")
GEMINI_CLI = ("gemini-cli", "[Gemini CLI]", "Gemini CLI")
CURSOR = ("cursor", "[Cursor]", "Cursor")
CURSOR_AGENT = ("cursor-agent", "[Cursor CLI]", "Cursor CLI")
OPENCODE = ("opencode", "[OpenCode]", "OpenCode")
AIDER = ("aider", "[Aider]", "Aider")
CLINE = ("cline", "[Cline]", "Cline")
ROO_CODE = ("roo-code", "[Roo Code]", "Roo Code")
KILO_CODE = ("kilo-code", "[Kilo Code]", "Kilo Code")
COPILOT_CLI = ("copilot-cli", "[Copilot CLI]", "Copilot CLI")
SHARED_LOG = ("shared-log", "[shared log · author]", "")
EXTRACT = ("extract", "[extract]", "")
SESSION_HISTORY = ("session-history", "Session History Summaries", "")
INDEXED = (CLAUDE_CODE, CODEX, COPILOT_CHAT, GEMINI_CLI, CURSOR, CURSOR_AGENT, OPENCODE, AIDER,
           CLINE, ROO_CODE, KILO_CODE, COPILOT_CLI, SHARED_LOG)  # registry.SOURCES's, in its order


def names() -> list[str]:
    """Every source's name, the indexed ones first (registry.DECLARED's order)."""
    return [n for n, _label, _agent in INDEXED + (EXTRACT, SESSION_HISTORY)]


def agents(word: str = "and", *, others: bool = False) -> str:
    """The agents whose sessions are read, as a phrase: "Claude Code, Codex and VS Code" (`word`
    "or": "..., Codex or VS Code"); `others`: all but the host's, "Codex and VS Code"."""
    said = [agent for _name, _label, agent in INDEXED[1 if others else 0:] if agent]
    return said[0] if len(said) == 1 else f"{', '.join(said[:-1])} {word} {said[-1]}"
