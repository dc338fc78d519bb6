"""`prima-memory quickstart`: index this folder, or a small generated demo history, and show it."""
from __future__ import annotations

import os
import tempfile

from .sources.claude_code import project_dirs

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


def quickstart(mem, *, demo: bool = False) -> dict:
    """Index the workspace (or, where it has no Claude Code history, a generated demo one), and
    return what a new user should see: the index report, the status and a sample search."""
    from . import api
    from .background import start_embedder
    from .memory import Memory

    note = None
    if demo or not project_dirs(mem.ws):
        config, ws = _demo_paths()
        os.makedirs(ws, exist_ok=True)
        os.environ["CLAUDE_CONFIG_DIR"] = config  # this process only: the demo's own history
        os.environ.pop("PRIMA_EXPECTED_HOST", None)
        if not project_dirs(ws):
            from .synthetic import generate_history
            generate_history(config, ws, DEMO_SESSIONS, seed=11)
        from .hints import cli
        note = (f"No Claude Code history for {mem.ws}: showing a demo history in {ws}. (Run "
                f"`{cli()} --workspace <your project> quickstart`, or install.sh from inside "
                "a project, to index your own.)")
        mem = Memory(ws)
    try:
        index = api.index(mem)
        start_embedder(mem)  # so searches by meaning are ready soon, without waiting
        query = _sample_query(mem)
        return {"note": note, "index": index, "status": api.status(mem),
                "search": api.search(mem, query, mode="keyword", limit=3)}
    finally:
        if note:
            mem.close()


def _sample_query(mem) -> str:
    """A word from the newest session's title, so the sample search finds something."""
    rows = mem.store().recent_sessions(1)
    if rows:
        title = rows[0].title
        words = sorted((w.strip(".,:;!?()'\"").lower() for w in title.split()), key=len, reverse=True)
        if words and len(words[0]) >= 4:
            return words[0]
    return "test"
