"""`files` and MCP's get_file_history with a name beyond ASCII (issue #36, point 23): "café.py"
is two texts, NFC (é, one code point: what a person types, and Linux keeps) and NFD (e and a
combining accent: what macOS hands back for a name read from the disk). A change recorded under
either spelling is found by either, and the listing shows one path for the two."""
from __future__ import annotations

import json
import sys
import time
import unicodedata

import anyio
import pytest

from prima_memory import api

OLD = time.time() - 10 * 86400
NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")
TYPED, ON_DISK = "cafe-1111-0000-4000-8000-000000000001", "cafe-2222-0000-4000-8000-000000000002"


def _history(env):
    """One session changed src/café.py as typed (NFC), another as macOS spells it (NFD), and a
    third changed another file of the folder."""
    assert NFC != NFD
    for sid, name, start in ((TYPED, NFC, OLD), (ON_DISK, NFD, OLD + 3600)):
        t = env.transcript(sid, start=start)
        t.user(f"Tidy up the {name} menu module")
        t.tool("Edit", {"file_path": str(env.ws / "src" / f"{name}.py"), "old_string": "a",
                        "new_string": "b"}, text=f"Sorted the menu of {name}.py by price.")
    t = env.transcript("cafe-3333-0000-4000-8000-000000000003", start=OLD + 7200)
    t.user("Add the bakery")
    t.tool("Write", {"file_path": str(env.ws / "src" / "bakery.py"), "content": "x"},
           text="A bakery module.")


def _changes(data: dict) -> list[dict]:
    """Each file of each session, with its session's id."""
    return [dict(f, session_id=s["session_id"]) for s in data["sessions"] for f in s["files"]]


@pytest.mark.parametrize("asked", [f"{NFC}.py", f"{NFD}.py", f"src/{NFD}.py"])
def test_files_finds_a_change_recorded_under_either_spelling(env, asked):
    _history(env)
    data = env.json("files", asked)
    assert data["warnings"] == [], data["warnings"]  # (the path itself: no "paths containing it")
    assert sorted(c["session_id"] for c in _changes(data)) == [TYPED, ON_DISK]
    # one path for the two spellings, as typed (NFC), in the data and as shown
    assert {c["relative"] for c in _changes(data)} == {f"src/{NFC}.py"}
    assert {c["path"] for c in _changes(data)} == {str(env.ws / "src" / f"{NFC}.py")}
    shown = env.run("files", asked).stdout
    assert shown.count(f"src/{NFC}.py") == 2 and f"src/{NFD}" not in shown, shown


def test_a_folder_and_the_whole_listing_fold_the_two_spellings(env):
    _history(env)
    every = _changes(env.json("files"))
    assert len(every) == 3
    assert {c["relative"] for c in every} == {f"src/{NFC}.py", "src/bakery.py"}
    folder = _changes(env.json("files", "src"))
    assert len(folder) == 3
    # a part of the name, spelled either way, finds both (the paths containing it)
    for part in (NFC, NFD):
        data = env.json("files", part)
        assert sorted(c["session_id"] for c in _changes(data)) == [TYPED, ON_DISK], part


def test_an_absolute_path_spelled_otherwise_than_the_workspace_is_inside_it(tmp_path):
    """The workspace's own folder named beyond ASCII: a path typed in the other spelling is
    still inside it (no 'outside the workspace' error)."""
    ws = str(tmp_path / NFD / "proj")
    assert api.workspace_path(ws, str(tmp_path / NFC / "proj" / "src" / f"{NFD}.py")) == \
        f"src/{NFC}.py"
    assert api.workspace_path(ws, f"src/{NFD}.py") == f"src/{NFC}.py"


def test_get_file_history_finds_either_spelling(env):
    pytest.importorskip("mcp")
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    _history(env)
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "prima_memory", "--workspace", str(env.ws), "mcp"], env=env.env, cwd=str(env.root))

    async def main():
        with open(env.root / "mcp-stderr.log", "a") as errlog:
            async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                out = {}
                for name in (NFC, NFD):
                    got = await s.call_tool("get_file_history", {"path": f"src/{name}.py"})
                    assert not got.is_error, got.content[0].text
                    out[name] = json.loads(got.content[0].text)
                return out
    got = anyio.run(main)
    for name, data in got.items():
        assert sorted(c["session_id"] for c in _changes(data)) == [TYPED, ON_DISK], name
        assert {c["path"] for c in _changes(data)} == {f"src/{NFC}.py"}, name  # (made relative)
