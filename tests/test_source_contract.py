"""The contract every source in the registry keeps, checked in-process at the records seam: on
files of its own kind it returns session records of the shared shape, with its name and label,
text that is redacted, offsets that resume, and nothing for files it cannot read."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from prima_memory.records import FileChange, Message, SessionDelta
from prima_memory.sources import names
from prima_memory.sources.base import Listed
from prima_memory.sources.registry import DECLARED, EXTRACTS, FALLBACKS, SOURCES

SECRET = "sk-ant-api03-" + "Q" * 90


@pytest.fixture
def ws(tmp_path, monkeypatch):
    """A workspace, every agent's home kept inside tmp_path (each source's sample goes where
    the source looks: Source.sample)."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("PRIMA_VSCODE_USER_DIRS", str(tmp_path / "vscode"))
    monkeypatch.setenv("PRIMA_RACY_MS", "0")  # folders made a moment ago count as settled
    # (the other agents keep their files under HOME and the XDG folders)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("PRIMA_CURSOR_USER_DIRS", str(tmp_path / "cursor"))
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "copilot"))
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.mark.parametrize("src", SOURCES + (EXTRACTS,), ids=lambda s: s.name)
def test_every_source_keeps_the_contract(src, ws):
    assert src.name and src.label and src.mode in ("append", "snapshot")
    assert src.discover(str(ws)) == [], "nothing there: nothing found, no error"
    path = Path(src.sample(str(ws), f"key {SECRET}"))
    backing = Path(src.backing(str(path)))  # (a database's session: the database)
    folders: list = []
    found = src.discover(str(ws), folders)
    assert [p for p, _x in found] == [str(path)]
    if not src.streamed:  # the folders listed, whose mtimes tell of a file come or gone
        assert {str(backing.parent), str(backing)} & {f for f, _m in folders}
        assert all(m == os.stat(f).st_mtime_ns for f, m in folders if m is not None)
    assert all(os.path.isabs(loc) for loc in src.locations(str(ws)))
    deltas, end, state, problems = src.read(str(path), found[0][1], 0, None)
    assert problems == [] and end == src.stat(str(path)).st_size
    assert len(deltas) == 1 and isinstance(deltas[0], SessionDelta)
    d = deltas[0]
    assert d.source == src.name and d.label.startswith(src.label.split(" ")[0][:6])
    assert d.messages and all(isinstance(m, Message) for m in d.messages)
    assert all(isinstance(c, FileChange) for c in d.file_changes)
    assert all(SECRET not in m.text for m in d.messages), "redacted like every source"
    assert src.in_scope(d, str(ws))
    if src.mode == "append":  # read on from the end: nothing new
        again, end2, _s, _p = src.read(str(path), found[0][1], end, state)
        assert again == [] and end2 == end
    os.chmod(backing, 0)
    if os.geteuid() != 0:  # (root reads anything) an unreadable file: nothing, or an OSError
        try:               # the indexer logs and goes on from
            got = src.read(str(path), found[0][1], 0, None)[0]
        except OSError:
            got = []
        assert got == []
    os.chmod(backing, 0o600)


@pytest.mark.parametrize("src", SOURCES + (EXTRACTS,), ids=lambda s: s.name)
def test_every_source_speaks_the_streamed_protocol(src, ws):
    # (issue #39) what the pipeline asks of a streamed source, every source answers: its own
    # or the base class's, built on discover and read
    assert src.files(str(ws)) == [] and src.session_files(str(ws), "abc") == []
    path = src.sample(str(ws), "the streamed protocol")
    files = src.files(str(ws))
    assert [f.path for f in files] == [p for p, _x in src.discover(str(ws))] == [path]
    assert [f.path for f in src.files(str(ws), only_dirs=[os.path.dirname(path)])] == [path]
    assert src.files(str(ws), only_dirs=[]) == []
    f = files[0]
    assert isinstance(f.sidechain, bool) and not f.sidechain
    records, end, _state, problems = src.read_chunk(f, 0, None)  # (its first step)
    size = src.stat(path).st_size
    assert problems == [] and 0 < end <= size
    steps = list(src.read_chunks(f.path, f, 0, None, 1 << 20))
    assert [d.session_id for d in steps[0][0]] == [d.session_id for d in records]
    assert steps[-1][1] == size
    whole = src.read(path, src.discover(str(ws))[0][1], 0, None)[0]
    assert {d.session_id for _r, *_x in steps for d in _r} == {d.session_id for d in whole}
    records = [d for r, *_x in steps for d in r]
    assert all(s.path == path for s in src.session_files(str(ws), records[0].session_id))
    assert src.skips_reply(None) is False
    assert src.file(path).path == path


def test_every_fallback_source_keeps_its_contract(ws):
    # a source read only as a search's last step: finds its own sample by every word, redacted
    for src in FALLBACKS:
        assert src.name and src.label and src.answers and src.read_when
        assert src.fallback_search(str(ws), ["key"], 10) == ([], [])
        assert not src.holds(str(ws))
        src.sample(str(ws), f"key {SECRET}")
        found, problems = src.fallback_search(str(ws), ["KEY"], 10)
        assert problems == [] and len(found) == 1 and found[0]["label"] == src.label
        assert SECRET not in str(found), "redacted like every source"
        assert src.fallback_search(str(ws), ["key", "absent"], 10) == ([], [])
        assert src.holds(str(ws)) and src.discover(str(ws)) == []


def test_the_registry_declares_every_source_once():
    # names, labels and agents come from one declaration (sources/names.py), in one order
    assert [(s.name, s.label, s.product) for s in DECLARED] == \
        list(names.INDEXED + (names.EXTRACT, names.SESSION_HISTORY))
    assert names.names() == [s.name for s in DECLARED] and len(set(names.names())) == len(DECLARED)
    assert names.agents("or") == ("Claude Code, Codex, VS Code, Gemini CLI, Cursor, Cursor CLI, "
                                  "OpenCode, Aider, Cline, Roo Code, Kilo Code or Copilot CLI")
    assert names.agents(others=True).startswith("Codex, VS Code, Gemini CLI, ")
    assert Listed("/p", 1).extra == 1


def test_a_source_declared_streamed_is_indexed_by_the_defaults(ws, monkeypatch):
    # (issue #39) streaming is part of the interface: a source that declares `streamed` and
    # writes none of the protocol is listed, scoped and read by the pipeline through the base
    # class (here Codex, as a subclass that says so); `quick` and `only_session` narrow nothing
    from prima_memory.memory import Memory
    from prima_memory.sources.registry import Codex

    class Streamed(Codex):
        streamed = True

    monkeypatch.setenv("HOME", str(ws.parent))
    Streamed().sample(str(ws), "the pelican brief")
    mem = Memory(str(ws))
    mem.update(sources=(Streamed(),))
    held = mem.store().files("codex")
    assert len(held) == 1 and next(iter(held.values())).session is not None
    mem.update(sources=(Streamed(),), quick=True)  # nothing changed: nothing read again
    assert mem.store().files("codex") == held
