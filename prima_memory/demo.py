"""`prima-memory quickstart`: index this folder, or a small generated demo history, and show it."""
from __future__ import annotations

import os
import sys
import tempfile

from . import workspace as wsmod

DEMO_SESSIONS = 12


def _demo_paths() -> tuple[str, str]:
    root = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
                        "prima-memory", "demo")
    try:
        os.makedirs(root, exist_ok=True)
    except OSError:
        root = os.path.join(tempfile.gettempdir(), "prima-memory-demo")
        os.makedirs(root, exist_ok=True)
    return os.path.join(root, "claude"), os.path.join(root, "Demo Project")


def quickstart(mem, *, demo: bool = False, as_json: bool = False) -> int:
    from . import commands
    from .memory import Memory

    use_demo = demo or not wsmod.claude_project_dirs(mem.ws)
    if use_demo:
        config, ws = _demo_paths()
        os.makedirs(ws, exist_ok=True)
        os.environ["CLAUDE_CONFIG_DIR"] = config  # this process only: the demo's own history
        os.environ.pop("PRIMA_EXPECTED_HOST", None)
        if not wsmod.claude_project_dirs(ws):
            from .synthetic import generate_history
            generate_history(config, ws, DEMO_SESSIONS, seed=11)
        print(f"No Claude Code history for {mem.ws}: showing a demo history in {ws}.\n"
              f"(Run `prima-memory --workspace <your project> quickstart`, or this script from "
              f"inside a project, to index your own.)\n")
        mem.close()
        mem = Memory(ws)
    args = _Args(json=as_json)
    print("== index ==")
    commands.cmd_index(mem, args)
    print("\n== status ==")
    commands.cmd_status(mem, args)
    query = _sample_query(mem)
    print(f"\n== search {query!r} ==")
    args.query, args.mode, args.limit = [query], "keyword", 3
    commands.cmd_search(mem, args)
    print("\nTry: prima-memory search <words>   prima-memory recent   prima-memory show <id>",
          file=sys.stderr)
    return 0


class _Args:
    def __init__(self, json: bool):
        self.json = json
        self.rebuild = self.prune = self.deep = False
        self.since = self.until = self.branch = self.tag = self.source = None


def _sample_query(mem) -> str:
    """A word from the newest session's title, so the sample search finds something."""
    rows = mem.store().recent_sessions(1)
    if rows:
        title = rows[0].title
        words = sorted((w.strip(".,:;!?()'\"").lower() for w in title.split()), key=len, reverse=True)
        if words and len(words[0]) >= 4:
            return words[0]
    return "test"
