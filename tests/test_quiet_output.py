"""What a listing prints carries something (issue #38's noise): absent sources in one line, the
projects a search of all counted as they are, a way back under every `similar` hit, and no
"> continue" under a hit. Through the real CLI."""
from __future__ import annotations

import shutil
import time

from conftest import Transcript, encode

T0 = time.time() - 3 * 86400
SID = "a1b2c3d4-0000-4000-8000-000000000001"


def _session(env):
    t = env.transcript(SID, start=T0)
    t.exchange("fix the deploy script's ssh options", "Fixed the deploy script's ssh options.")
    t.user("continue")
    t.tool("Bash", {"command": "make deploy"}, result="deployed")
    t.reply("Continuing: the deploy went through.")
    return t


def test_absent_sources_are_one_line(env):
    """(a bug: status listed five absent sources at full length, each with its paths)"""
    _session(env)
    out = env.run("status").stdout
    assert "(absent)" not in out, out
    absent = [ln for ln in out.splitlines() if ln.startswith("absent ")]
    assert len(absent) == 1 and "Codex" in absent[0] and "VS Code" in absent[0], out
    assert "[transcript] (found)" in out  # a source found keeps its line
    assert {s["source"]: s["found"] for s in env.json("status")["sources"]}["codex"] is False


def test_a_line_that_says_nothing_is_not_shown_under_a_hit(env):
    """(a bug: hits showed "> continue", a prompt whose reply was all tool calls)"""
    _session(env)
    for mode in ("keyword", "combined"):
        out = env.run("search", "continue", "deploy", "--mode", mode).stdout
        assert f"--resume {SID}\n   > " in out, out  # (a line that says something)
        assert "> continue\n" not in out + "\n", out


def test_similar_prints_the_way_back(env):
    """(a bug: a `similar` hit had no way back to its session)"""
    _session(env)
    out = env.run("similar", "the deploy script's ssh options").stdout
    assert f"claude --resume {SID}" in out, out


def test_a_search_of_all_projects_says_which_folders_are_gone(env, tmp_path):
    """(a bug: "(searched 10 projects)" counted two whose folders were gone, unsaid)"""
    _session(env)
    gone = tmp_path / "old project"
    gone.mkdir()
    t = Transcript(env.claude / "projects" / encode(str(gone)) / "b0b0b0b0-0000-4000-8000-"
                   "000000000002.jsonl", "b0b0b0b0-0000-4000-8000-000000000002", str(gone),
                   start=T0)
    t.exchange("the deploy script of the old project", "Its deploy script was retired.")
    shutil.rmtree(gone)
    out = env.run("search", "deploy script", "--all-projects").stdout
    assert "(searched 2 projects, 1 of them in folders now gone)" in out, out
    assert env.json("search", "deploy script", "--all-projects")["gone"] == 1
