"""A request has two steps: `api.bring_up`, the only one that writes, then a read that only reads;
a workspace's memory and every project's answer through one scope interface; and a request is
tried again in one place, which knows the damaged index by the path its error carries (#39)."""
from __future__ import annotations

import ast
import hashlib
import inspect
import time
from pathlib import Path

import pytest
from test_all_projects import _damage

from prima_memory import api, memory, projects, scope

SID = "5c0be000-0000-4000-8000-000000000001"
OLD = time.time() - 40 * 86400


def _digest(folder: Path) -> dict[str, str]:
    """Every file of the memory folder (the index, its log, its extracts), by content."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.name.endswith("-shm")}


def _reads(mem) -> dict:
    """Every read of the data API, keyword only (no model in these tests)."""
    return {"search": api.search(mem, "walrus", mode="keyword"),
            "recent": api.recent(mem, 5),
            "show": api.show(mem, SID[:8], detail="summary"),
            "files": api.files(mem, "."),
            "digest": api.digest(mem, "1000d")}


def test_a_read_writes_nothing_and_bring_up_is_the_step_that_does(env):
    t = env.transcript(SID, start=OLD)
    t.exchange("Why does the importer drop rows?", "It stops at the first blank line.")
    env.run("index")
    t.exchange("And the walrus column?", "The walrus column is read as text now.")  # unread yet
    mem = api.open_memory(str(env.ws))
    try:
        mem.store()
        before = _digest(env.data)
        got = _reads(mem)
        assert got["search"]["results"] == [], "read as it stands: the new line is not indexed"
        assert _digest(env.data) == before, "a read wrote something"
        ready = api.bring_up(mem)
        assert _digest(env.data) != before
        found = api.search(mem, "walrus", mode="keyword", ready=ready)
        assert [r["session_id"] for r in found["results"]] == [SID]
    finally:
        mem.close()


def test_a_search_writes_no_extract_an_update_does(env):
    """Extracts come from Stop, `index` and the background, never from a search."""
    t = env.transcript(SID, start=OLD)
    for i in range(30):  # substantial: over 50 messages
        t.exchange(f"step {i} of the walrus migration?", f"Step {i} is done.")
    assert env.search("walrus")
    assert not list(env.data.rglob("*-session-extract.md"))
    env.run("index")
    assert len(list(env.data.rglob("*-session-extract.md"))) == 1


def test_a_workspace_and_every_project_implement_the_whole_scope():
    abstract = {n for n, f in vars(scope.Scope).items() if callable(f) and _raises(f)}
    assert {"memories", "bring_up", "embed_new", "link_new", "describe", "damaged"} <= abstract
    for cls in (memory.Memory, projects.AllProjects):
        assert issubclass(cls, scope.Scope)
        missing = {n for n in abstract if getattr(cls, n) is getattr(scope.Scope, n)}
        assert missing == set(), (cls.__name__, missing)


def _raises(fn) -> bool:
    return "raise NotImplementedError" in inspect.getsource(fn)


def test_the_data_api_has_no_branch_on_which_scope_it_holds():
    tree = ast.parse(Path(api.__file__).read_text(encoding="utf-8"))
    named = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id == "isinstance"
             and any(k in ast.unparse(n.args[1]) for k in ("Memory", "AllProjects", "Scope"))]
    assert named == []


def test_a_request_is_tried_again_in_one_place():
    # one guard for every request: no other module keeps its own retry of a whole request
    package = Path(api.__file__).parent
    defined = sorted(str(p.relative_to(package)) for p in package.rglob("*.py")
                     if "def guarded(" in p.read_text(encoding="utf-8"))
    assert defined == ["scope.py"]


def _damaged(env):
    """(the workspace's memory, open on an index damaged under it, the index's path)."""
    t = env.transcript(SID, start=OLD)
    t.exchange("Why does the importer drop rows?", "It stops at the first walrus line.")
    env.run("index")
    db = env.data / "index.db"
    mem = api.open_memory(str(env.ws))
    mem.store()
    _damage(db)
    return mem, db


def test_a_damaged_index_is_named_by_its_error_and_made_again(env):
    mem, db = _damaged(env)
    try:
        with pytest.raises(memory.CorruptIndex) as e:
            api.search(mem, "walrus", mode="keyword")
        assert e.value.path == str(db)
        assert mem.damaged(e.value) is mem
        calls = []

        def request():
            calls.append(1)
            return api.search(mem, "walrus", mode="keyword", ready=api.bring_up(mem))
        got = mem.guarded(request)
        assert len(calls) == 2, "tried once more, on an index made again"
        assert [r["session_id"] for r in got["results"]] == [SID]
        assert list(env.data.glob("index.db.corrupt-*"))
    finally:
        mem.close()


def test_among_several_the_damaged_one_is_found_by_its_path(env):
    every = projects.AllProjects()
    mine = api.open_memory(str(env.ws))
    every.mine = mine
    try:
        error = memory.CorruptIndex("damaged", mine.db_path)
        assert every.damaged(error) is mine
        assert every.damaged(memory.CorruptIndex("damaged", "/elsewhere/index.db")) is None
        assert every.damaged(memory.CorruptIndex("no path")) is None
    finally:
        mine.close()


def test_rows_read_lazily_from_a_damaged_index_name_it_too(env):
    # (a generator or cursor a store method hands back fails only as it is read: its error
    # must carry the path all the same, or a search of all projects cannot place it)
    mem, db = _damaged(env)
    try:
        rows = mem.store().all_message_texts()
        with pytest.raises(memory.CorruptIndex) as e:
            list(rows)
        assert e.value.path == str(db)
    finally:
        mem.close()
