"""Tags: a language per changed code file type, work kinds from words, decision markers."""
from __future__ import annotations

import os
import re

LANGUAGES = {
    ".py": "python", ".pyi": "python", ".ipynb": "python",
    ".ts": "typescript", ".tsx": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".go": "go", ".rs": "rust", ".java": "java", ".kt": "kotlin", ".kts": "kotlin",
    ".rb": "ruby", ".php": "php", ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp",
    ".cs": "csharp", ".swift": "swift", ".m": "objective-c", ".scala": "scala",
    ".sh": "shell", ".bash": "shell", ".zsh": "shell", ".ps1": "powershell",
    ".sql": "sql", ".html": "html", ".htm": "html", ".css": "css", ".scss": "css",
    ".vue": "vue", ".svelte": "svelte", ".lua": "lua", ".dart": "dart", ".r": "r",
    ".ex": "elixir", ".exs": "elixir", ".erl": "erlang", ".hs": "haskell", ".clj": "clojure",
    ".zig": "zig", ".nim": "nim", ".jl": "julia", ".pl": "perl", ".tf": "terraform",
}

# A tag and the words (whole tokens, lower case) that earn it.
WORK_WORDS = {
    "bugfix": {"bug", "bugs", "bugfix", "fix", "fixes", "fixed", "fixing", "hotfix", "crash",
               "crashes", "crashed", "regression", "broken", "debug", "debugging"},
    "refactor": {"refactor", "refactors", "refactored", "refactoring", "restructure",
                 "restructured", "cleanup", "simplify", "simplified", "rename", "renamed",
                 "reorganize", "dedupe"},
    "testing": {"test", "tests", "testing", "tested", "pytest", "unittest", "jest", "vitest",
                "coverage", "tdd", "spec", "specs", "e2e"},
    "feature": {"feature", "features", "implement", "implements", "implemented", "implementing",
                "implementation"},
}
_ALL_WORK = {w: tag for tag, words in WORK_WORDS.items() for w in words}

_DECISION = re.compile(
    r"\bDECIDED\b|\bDECISION\b|\bSAVE\b|^\s*(?:decision|decided)\s*:|\bwe(?:'ve| have)? decided\b"
    r"|\bdecided to\b|\blet'?s go with\b", re.M)
_SESSION_CLOSE = re.compile(  # matched on lower-case text
    r"\b(?:wrap(?:ping)? (?:it |this )?up|end(?:ing)? (?:the|this) session|session close|"
    r"close (?:out )?the session|that'?s all for today|signing off|call it a day)\b")


_PROJECT_ID = re.compile(r"P\d{3}(?!\w)")  # a literal first letter lets re skip ahead fast


def project_mentions(text: str) -> set[str]:
    """AI Business OS project ids (P001 ...) named in the text, as filterable tags."""
    return {f"project:{m.group()}" for m in _PROJECT_ID.finditer(text)
            if m.start() == 0 or not (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_")}


def language_tag(path: str) -> str | None:
    return LANGUAGES.get(os.path.splitext(path)[1].lower())


def work_tags(tokens) -> set[str]:
    """Tags earned by any of these lower-case tokens (a set: the few words that earn one are
    looked up in it, not its thousands in them)."""
    return {tag for word, tag in _ALL_WORK.items() if word in tokens}


def text_tags(text: str, tokens) -> set[str]:
    """Every tag the words of a conversation earn (language tags come from changed files)."""
    tags = work_tags(tokens) | project_mentions(text)
    if closes_session(text):
        tags.add("session-close")
    return tags


_DECISION_HINTS = ("DECIDED", "DECISION", "SAVE", "ecided", "ecision", "go with")


def decision_lines(text: str) -> list[str]:
    """Lines that carry a decision marker, shortened, for checkpoints and the decision tag."""
    starts: set[int] = set()
    for hint in _DECISION_HINTS:  # literal search first: a regex over every line is 10x slower
        at = text.find(hint)
        while at >= 0:
            starts.add(text.rfind("\n", 0, at) + 1)
            at = text.find(hint, at + len(hint))
    out = []
    for start in sorted(starts):
        end = text.find("\n", start)
        line = text[start:len(text) if end < 0 else end]
        if _DECISION.search(line):
            out.append(" ".join(line.split())[:300])
    return out


_CLOSE_HINTS = ("wrap", "session", "today", "signing off", "call it a day")


def closes_session(text: str) -> bool:
    low = text.lower()
    for hint in _CLOSE_HINTS:  # look only around the hints: a regex over all text is slow
        at = low.find(hint)
        while at >= 0:
            if _SESSION_CLOSE.search(low, max(0, at - 40), at + 40):
                return True
            at = low.find(hint, at + 1)
    return False
