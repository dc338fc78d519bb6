"""Every agent's session as a user meets it (issue #41): written where that agent keeps it (each
source's own sample), found by the real CLI in its workspace and across all projects, and by the
MCP server over stdio with the SDK's client, with its label and the way back: for a person, the
agent's own resume command where it has one, else `show`; for the model, recall_session."""
from __future__ import annotations

import shlex
import sys

import anyio
import pytest

pytest.importorskip("mcp")
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from prima_memory.sources.registry import CLAUDE_CODE, SOURCES, SharedLog

AGENTS = [s for s in SOURCES if s is not CLAUDE_CODE and not isinstance(s, SharedLog)]
WORD = "marmalade"


def _sampled(env, src) -> str:
    src.sample(str(env.ws), f"why does the {WORD} importer drop rows")
    return WORD


def _way_back(src, hit: dict) -> None:
    assert hit["label"] == src.label
    if src.resume:  # the agent's own command, from the session's folder
        agent_word = shlex.split(src.resume)[0]
        assert f"&& {agent_word} " in hit["resume"] + " " and hit["resume"].startswith("cd ")
    else:
        assert "resume" not in hit and hit["show"]


@pytest.mark.parametrize("src", AGENTS, ids=lambda s: s.name)
def test_the_cli_finds_every_agents_session_with_its_label_and_way_back(env, src):
    word = _sampled(env, src)
    hits = env.search(word)
    assert [h["source"] for h in hits] == [src.name], hits
    _way_back(src, hits[0])
    text = env.run("search", word, "--mode", "keyword").stdout
    assert src.label in text
    # (a source kept inside projects has no machine-wide list; a chat of no folder, no project)
    if any(folders for _path, folders in src.everywhere({})):
        elsewhere = env.root / "elsewhere"
        elsewhere.mkdir()
        every = env.json("search", word, "--all-projects", "--mode", "keyword",
                         cwd=elsewhere)["results"]
        assert [h["label"] for h in every] == [src.label]


@pytest.mark.parametrize("src", AGENTS, ids=lambda s: s.name)
def test_the_mcp_server_finds_every_agents_session_with_its_label(env, src):
    import json  # (the server's answers)
    word = _sampled(env, src)
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "prima_memory", "--workspace", str(env.ws), "mcp"],
                                   env=env.env, cwd=str(env.root))

    async def main():
        with open(env.root / "mcp-stderr.log", "a") as errlog:
            async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                got = await s.call_tool("search_sessions", {"query": word, "mode": "keyword"})
                assert not got.is_error, got.content[0].text
                found = json.loads(got.content[0].text)
                # the model's way back: the session itself, by the id the hit gave
                sid = found["results"][0]["session_id"] if found["results"] else "-"
                back = await s.call_tool("recall_session", {"session_id": sid,
                                                            "detail": "turns"})
                assert not back.is_error, back.content[0].text
                return found, json.loads(back.content[0].text)["session"]
    found, session = anyio.run(main)
    assert [(h["source"], h["label"]) for h in found["results"]] == [(src.name, src.label)]
    assert session["label"] == src.label and WORD in json.dumps(session)


@pytest.mark.parametrize("src", AGENTS, ids=lambda s: s.name)
def test_every_agents_session_stays_forgotten_and_an_opted_out_project_reads_none(env, src):
    # forget takes any source: the session goes, and its file written again (the agent going
    # on with it) brings none of it back; `.prima-memory-off` silences every agent alike
    word = _sampled(env, src)
    (hit,) = env.search(word)
    env.run("forget", hit["session_id"], "--yes")
    assert env.search(word) == []
    src.sample(str(env.ws), f"the {WORD} importer again, and the quokka exporter")
    assert env.search(word) == [] and env.search("quokka") == []
    (env.ws / ".prima-memory-off").write_text("")
    p = env.run("search", "quokka", "--mode", "keyword", check=False)
    assert "quokka exporter" not in p.stdout
