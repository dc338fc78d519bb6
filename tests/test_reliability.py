"""Reliability and security through the real CLI (DESIGN sections 2, 5, 7 and 8).

Incremental reads, rewritten and replaced files, retention of deleted sessions, bad input of every
kind, SIGKILL in the middle of an index, a corrupt database, file modes, secret redaction, read-only
sources, host mode, many processes at once, and rebuilds.

Everything runs the CLI as a subprocess over temporary folders (conftest's `env`). The database is
opened directly only to check what the CLI cannot show: integrity, raw bytes, exact stored rows.
"""
from __future__ import annotations

import base64
import glob
import hashlib
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import apsw
import pytest

from bench import synthetic
from conftest import Env, Transcript
from prima_memory.memory import OTHERS

START = 1_700_000_000.0  # Nov 2023: far outside the recency window, so scores are stable
DAY = 86400


def sid(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-{n:012x}"


S1, S2, S3, S4 = sid(1), sid(2), sid(3), sid(4)


# -- helpers ---------------------------------------------------------------------------------------

def log_text(env) -> str:
    p = env.data / "prima-memory.log"
    return p.read_text(encoding="utf-8", errors="replace") if p.exists() else ""


def warnings_about(env, needle: str) -> list[str]:
    return [ln for ln in log_text(env).splitlines() if " WARNING " in ln and needle in ln]


def show(env, session_id: str) -> dict:
    return env.json("show", session_id)["session"]


def texts(env, session_id: str) -> list[str]:
    """The main thread's messages, checking the session's message count against them."""
    s = show(env, session_id)
    out = [m["text"] for m in s["messages"] if not m["sidechain"] and not m.get("calls_only")]
    assert s["message_count"] == len(out), (s["message_count"], out)
    return out


def ids(results) -> list[str]:
    return [r["session_id"] for r in results]


def status(env) -> dict:
    return env.json("status")


def connect(path) -> apsw.Connection:
    return apsw.Connection(str(path))


def integrity(path) -> list[str]:
    db = connect(path)
    try:
        out = [r[0] for r in db.execute("PRAGMA integrity_check")]
        for table in ("messages_fts", "terms_tri"):
            try:
                db.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
            except apsw.Error as e:
                out.append(f"{table}: {e}")
        return out
    finally:
        db.close()


def db_state(path) -> dict:
    """Everything the index holds about each session, keyed by session id (not by rowid)."""
    db = connect(path)
    try:
        out = {}
        for (rowid, session_id, cwd, branch, tc, ts_, tf, started, ended, tags, decisions, mc, fc,
             archived) in db.execute(
                "SELECT id, session_id, cwd, branch, title_custom, title_summary, title_first, "
                "started_at, ended_at, tags, decisions, message_count, files_count, archived "
                "FROM sessions"):
            msgs = sorted(db.execute(
                "SELECT m.role, m.key, m.sidechain, m.ts, m.text, u.key FROM messages m "
                "LEFT JOIN messages u ON u.id = m.pair WHERE m.session = ?", (rowid,)),
                key=lambda r: (r[2], r[3] or 0, r[1]))
            changes = sorted(db.execute(
                "SELECT path, tool, explanation, ts, message_key FROM file_changes "
                "WHERE session = ?", (rowid,)), key=repr)
            real = sum(1 for m in msgs if m[4] and not m[2])
            out[session_id] = {
                "cwd": cwd, "branch": branch, "titles": (tc, ts_, tf), "started": started,
                "ended": ended, "tags": tags, "decisions": decisions, "message_count": mc,
                "real_message_count": real, "files_count": fc, "archived": archived,
                "messages": msgs, "changes": changes}
        return out
    finally:
        db.close()


def fts_hits(path, word: str) -> set:
    """(session id, message key) of the messages the full-text index returns for one token."""
    db = connect(path)
    try:
        return set(db.execute(
            "SELECT s.session_id, m.key FROM messages_fts f JOIN messages m ON m.id = f.rowid "
            "JOIN sessions s ON s.id = m.session WHERE messages_fts MATCH ?", (f'"{word}"',)))
    finally:
        db.close()


def all_bytes_under(folder: Path) -> bytes:
    out = b""
    for p in sorted(folder.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out += p.read_bytes()
    return out


def build_lines(path: Path, session_id: str, cwd: str, pairs) -> bytes:
    """The bytes Claude Code would write for these exchanges (a fresh file each time)."""
    if path.exists():
        path.unlink()
    t = Transcript(path, session_id, cwd, start=START)
    for prompt, answer in pairs:
        t.exchange(prompt, answer)
    return path.read_bytes()


class _Umask:
    def __init__(self, mask: int):
        self.mask = mask

    def __enter__(self):
        self.old = os.umask(self.mask)

    def __exit__(self, *exc):
        os.umask(self.old)


# -- incremental updates ---------------------------------------------------------------------------

def test_append_reads_only_the_new_bytes_and_duplicates_nothing(env):
    t = env.transcript(S1, start=START)
    t.exchange("how do we rotate the flamingo logs", "Rotate them daily with logrotate.")
    t.exchange("and compress them too?", "Use gzip in the postrotate hook.")
    size0 = t.path.stat().st_size
    first = env.json("index")
    assert first["bytes_read"] == size0 and first["files_read"] == 1

    t.exchange("now add a pelican dashboard", "Dashboard added with pelican charts.")
    size1 = t.path.stat().st_size
    rep = env.json("index")
    assert rep["files_read"] == 1
    assert rep["bytes_read"] == size1 - size0

    t.exchange("one more: the heron alerts", "Heron alerts now page on-call.")
    size2 = t.path.stat().st_size
    assert env.json("index")["bytes_read"] == size2 - size1
    assert env.json("index")["bytes_read"] == 0  # nothing new: nothing read

    assert ids(env.search("pelican")) == [S1]
    assert ids(env.search("heron")) == [S1]
    assert ids(env.search("flamingo")) == [S1]
    assert texts(env, S1) == [
        "how do we rotate the flamingo logs", "Rotate them daily with logrotate.",
        "and compress them too?", "Use gzip in the postrotate hook.",
        "now add a pelican dashboard", "Dashboard added with pelican charts.",
        "one more: the heron alerts", "Heron alerts now page on-call."]


OLD_PAIRS = [("first question about the walrusone migration", "Answer about walrusone."),
             ("second question on the tusks", "Second answer on tusks."),
             ("third question on the ice floes", "Third answer about floes.")]
# The same shape with different words of the same length: the same size, other first bytes.
SAME_SIZE_PAIRS = [("first question about the narwhalxy migration", "Answer about narwhalxy."),
                   ("second question on the horns", "Second answer on horns."),
                   ("third question on the fjordland", "Third answer about fjord.")]
SHORT_PAIRS = [("only question: the beluga", "Only answer.")]
LONG_PAIRS = SAME_SIZE_PAIRS + [("fourth question about the orca pods", "Fourth answer, orca.")]


@pytest.mark.parametrize("mode", ["shorter", "replaced_same_size", "replaced_larger",
                                  "in_place_same_size", "in_place_larger"])
def test_rewritten_or_replaced_file_is_read_again_from_the_start(env, mode):
    path = env.project_dir / f"{S1}.jsonl"
    scratch = env.root / "scratch" / f"{S1}.jsonl"
    old = build_lines(scratch, S1, str(env.ws), OLD_PAIRS)
    new_pairs = {"shorter": SHORT_PAIRS, "replaced_same_size": SAME_SIZE_PAIRS,
                 "replaced_larger": LONG_PAIRS, "in_place_same_size": SAME_SIZE_PAIRS,
                 "in_place_larger": LONG_PAIRS}[mode]
    new = build_lines(scratch, S1, str(env.ws), new_pairs)
    if "same_size" in mode:
        assert len(new) == len(old) and new.split(b"\n")[0] != old.split(b"\n")[0]  # premise
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(old)
    assert env.json("index")["bytes_read"] == len(old)
    inode = path.stat().st_ino

    if mode.startswith("replaced"):
        scratch.write_bytes(new)
        os.replace(scratch, path)
        assert path.stat().st_ino != inode
    elif mode.startswith("in_place"):
        with open(path, "r+b") as f:
            f.write(new)
        assert path.stat().st_ino == inode
    else:  # shorter, same inode
        with open(path, "r+b") as f:
            f.truncate(0)
            f.write(new)
        assert path.stat().st_ino == inode
    assert path.read_bytes() == new

    rep = env.json("index")
    assert rep["bytes_read"] == len(new), rep
    assert env.search("walrusone") == []  # nothing stale
    new_word = {"shorter": "beluga"}.get(mode, "narwhalxy")
    assert ids(env.search(new_word)) == [S1]
    expected = [x for pair in new_pairs for x in pair]
    assert texts(env, S1) == expected
    state = db_state(env.data / "index.db")
    assert list(state) == [S1]
    assert sorted(m[4] for m in state[S1]["messages"]) == sorted(expected)  # no stale row at all


# -- retention -------------------------------------------------------------------------------------

def _two_sessions(env):
    a = env.transcript(S1, start=START)
    a.exchange("tell me about the quokka enclosure", "The quokka enclosure needs shade.")
    a.exchange("and the feeding plan", "Twice a day, leaves.")
    b = env.transcript(S2, start=START + DAY)
    b.exchange("plan the wombat burrow", "The wombat burrow goes under the fence.")
    return a, b


def test_deleted_session_stays_searchable_and_archived_until_prune(env):
    a, b = _two_sessions(env)
    env.json("index")
    before = texts(env, S1)
    a.path.unlink()
    rep = env.json("index")
    assert rep["archived"] == 1

    res = env.search("quokka")
    assert ids(res) == [S1] and res[0]["archived"] is True
    assert env.search("wombat")[0]["archived"] is False
    s = show(env, S1)
    assert s["archived"] is True and [m["text"] for m in s["messages"]] == before
    st = status(env)
    assert st["counts"]["archived"] == 1 and st["counts"]["sessions"] == 2
    assert st["sources"][0]["archived"] == 1 and st["sources"][0]["sessions"] == 2
    # later runs keep it, archived, and do not archive it again
    assert env.json("index")["archived"] == 0
    assert ids(env.search("quokka")) == [S1]

    rep = env.json("index", "--prune")
    assert rep["pruned"] == 1
    assert env.search("quokka") == []
    p = env.run("show", S1, check=False)
    assert p.returncode == 1 and "no session" in p.stderr
    st = status(env)
    assert st["counts"]["archived"] == 0 and st["counts"]["sessions"] == 1
    assert ids(env.search("wombat")) == [S2]
    assert integrity(env.data / "index.db") == ["ok"]


def test_a_file_that_comes_back_is_unarchived_without_duplicates(env):
    a, _ = _two_sessions(env)
    env.json("index")
    before = texts(env, S1)
    saved = a.path.read_bytes()
    a.path.unlink()
    env.json("index")
    assert show(env, S1)["archived"] is True
    a.path.write_bytes(saved)  # restored from a backup: a new inode, the same bytes
    env.json("index")
    s = show(env, S1)
    assert s["archived"] is False
    assert [m["text"] for m in s["messages"]] == before
    assert env.search("quokka")[0]["archived"] is False
    assert status(env)["counts"]["archived"] == 0


def test_a_file_that_comes_back_after_a_rebuild_is_unarchived_without_duplicates(env):
    a, _ = _two_sessions(env)
    env.json("index")
    before = texts(env, S1)
    saved = a.path.read_bytes()
    a.path.unlink()
    env.json("index")
    env.json("index", "--rebuild")
    assert show(env, S1)["archived"] is True
    assert [m["text"] for m in show(env, S1)["messages"]] == before
    a.path.write_bytes(saved)
    env.json("index")
    s = show(env, S1)
    assert s["archived"] is False
    assert [m["text"] for m in s["messages"]] == before  # replies not doubled, prompts not lost


# -- bad input -------------------------------------------------------------------------------------

GOOD_BEFORE = ("before the bad line: capybara", "Capybara answer.")
GOOD_AFTER = ("after the bad line: axolotl", "Axolotl answer.")


def _around(env, bad_lines: list[bytes]):
    t = env.transcript(S1, start=START)
    t.exchange(*GOOD_BEFORE)
    with open(t.path, "ab") as f:
        for line in bad_lines:
            f.write(line + b"\n")
    t.exchange(*GOOD_AFTER)
    return t


def _check_around(env, t, *, extra_ok=None):
    """Both good exchanges indexed, whole file consumed, a warning naming the file, nothing else."""
    rep = env.json("index")
    assert rep["bytes_read"] == t.path.stat().st_size  # read to its end: not half-indexed
    got = texts(env, S1)
    expected = [*GOOD_BEFORE, *GOOD_AFTER]
    if extra_ok is not None and len(got) == 5:
        assert extra_ok(got[2]), got
        got = got[:2] + got[3:]
    assert got == expected
    assert ids(env.search("axolotl capybara")) == [S1]
    assert warnings_about(env, t.path.name), log_text(env)
    assert status(env)["pending"]["files"] == 0
    assert env.json("index")["bytes_read"] == 0  # the bad line is not read again


def test_invalid_json_line_in_the_middle(env):
    t = _around(env, [b'{"type": "user", "message": {"role": "user", "content": "half a re',
                      b"this is not json at all"])
    _check_around(env, t)
    assert warnings_about(env, "invalid JSON")


def test_non_utf8_bytes_inside_a_line(env):
    line = json.dumps({"parentUuid": None, "isSidechain": False, "type": "user",
                       "cwd": str(env.ws), "sessionId": S1, "uuid": "bad-utf8-0001",
                       "timestamp": "2023-11-14T22:14:00.000Z",
                       "message": {"role": "user", "content": "tapir caf@@ latin-1 text"}})
    bad = line.encode().replace(b"@@", b"\xe9\xff\xfe")
    t = _around(env, [bad])
    # Kept with replacement characters, or skipped: either way valid text, never raw bytes.
    _check_around(env, t, extra_ok=lambda s: "tapir" in s and "\ufffd" in s)


@pytest.mark.parametrize("cut", ["mid_line", "before_newline"])
def test_line_being_written_waits_for_its_newline(env, cut):
    t = env.transcript(S1, start=START)
    t.exchange("the first question: gecko", "The first answer.")
    size0 = t.path.stat().st_size
    t.exchange("the second question: iguana", "The second answer.")
    appended = t.path.read_bytes()[size0:]
    first_line = appended[:appended.index(b"\n") + 1]
    at = len(first_line) // 2 if cut == "mid_line" else len(first_line) - 1
    with open(t.path, "r+b") as f:
        f.truncate(size0)
        f.seek(size0)
        f.write(appended[:at])

    rep = env.json("index")
    assert rep["bytes_read"] == size0  # the partial line is left for later
    assert env.search("iguana") == []
    assert texts(env, S1) == ["the first question: gecko", "The first answer."]
    assert warnings_about(env, t.path.name) == []  # a line being written is not a problem

    with open(t.path, "ab") as f:
        f.write(appended[at:])
    rep = env.json("index")
    assert rep["bytes_read"] == len(appended)
    assert texts(env, S1) == ["the first question: gecko", "The first answer.",
                              "the second question: iguana", "The second answer."]
    assert ids(env.search("iguana")) == [S1]
    assert warnings_about(env, t.path.name) == []


@pytest.mark.parametrize("cut", ["mid_line", "before_newline"])
def test_stalled_last_line_completed_later_is_indexed_once(env, cut):
    """A writer that stalls for longer than the tail grace period and then finishes the line."""
    t = env.transcript(S1, start=START)
    t.exchange("the first question: gecko", "The first answer.")
    size0 = t.path.stat().st_size
    t.exchange("the second question: iguana", "The second answer.")
    appended = t.path.read_bytes()[size0:]
    first_line = appended[:appended.index(b"\n") + 1]
    at = len(first_line) // 2 if cut == "mid_line" else len(first_line) - 1
    with open(t.path, "r+b") as f:
        f.truncate(size0)
        f.seek(size0)
        f.write(appended[:at])
    old = time.time() - 120
    os.utime(t.path, (old, old))
    env.json("index")
    with open(t.path, "ab") as f:
        f.write(appended[at:])
    env.json("index")
    assert texts(env, S1) == ["the first question: gecko", "The first answer.",
                              "the second question: iguana", "The second answer."]


def test_five_megabyte_line_with_a_pasted_image(env):
    rnd = random.Random(5)
    data = base64.b64encode(rnd.randbytes(3_800_000)).decode()
    assert len(data) > 5_000_000
    t = env.transcript(S1, start=START)
    t.exchange(*GOOD_BEFORE)
    t.user([{"type": "text", "text": "what is wrong in this manatee chart screenshot"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": data}}])
    t.reply("The manatee chart axis is inverted.")
    t.exchange(*GOOD_AFTER)
    rep = env.json("index")
    assert rep["bytes_read"] == t.path.stat().st_size
    assert texts(env, S1) == [*GOOD_BEFORE, "what is wrong in this manatee chart screenshot",
                              "The manatee chart axis is inverted.", *GOOD_AFTER]
    assert ids(env.search("manatee")) == [S1] and ids(env.search("axolotl")) == [S1]
    stored = all_bytes_under(env.data)
    assert data[1000:1064].encode() not in stored  # the image itself is not stored
    assert (env.data / "index.db").stat().st_size < 2_000_000


def _unknown_noted(env, kind: str) -> list[str]:
    return [ln for ln in log_text(env).splitlines() if "record types" in ln and kind in ln]


def test_unknown_record_types_are_counted_in_status_warned_once_and_the_rest_indexed(env):
    """A record type nobody knows yet (a newer Claude Code): skipped, the rest indexed; status
    counts it, by type and files, outside the source's warnings; the log says it once per
    file, as a warning naming the first file to show it (#41: a format that drifted), then at
    info level."""
    t = env.transcript(S1, start=START)
    t.exchange(*GOOD_BEFORE)
    for i in range(3):
        t.raw({"type": "brand-new-record", "sessionId": S1, "n": i})
    t.raw({"type": "another-new-kind", "sessionId": S1})
    t.exchange(*GOOD_AFTER)
    other = env.transcript(S2, start=START + DAY)
    other.exchange("a question about the lemur", "Lemur answer.")
    other.raw({"type": "brand-new-record", "sessionId": S2})
    other.raw({"type": "x" * 5000, "sessionId": S2})  # kept cut short
    env.json("index")
    assert texts(env, S1) == [*GOOD_BEFORE, *GOOD_AFTER]
    warned = warnings_about(env, "record types")
    assert all(sum(kind in w for w in warned) == 1
               for kind in ("brand-new-record", "another-new-kind", "x" * 40)), log_text(env)
    assert len(warned) == 2 and all(S1 in w or S2 in w for w in warned), "each names its file"
    assert len(_unknown_noted(env, "brand-new-record")) == 2, log_text(env)
    st = status(env)
    cc = {s["source"]: s for s in st["sources"]}["claude-code"]
    assert cc["unknown_record_types"] == [{"type": "brand-new-record", "files": 2},
                                          {"type": "another-new-kind", "files": 1},
                                          {"type": "x" * 40, "files": 1}]
    assert cc["warnings"] == [] and len(st["warnings"]) == 2
    human = env.run("status").stdout
    assert ("skipped, unknown to this version: record types brand-new-record (2 files), "
            "another-new-kind (1 file)") in human, human
    # more lines of the same kinds later: nothing new in the log, the new exchange indexed
    t.raw({"type": "brand-new-record", "sessionId": S1, "n": 9})
    t.exchange("later question about the okapi", "Later answer.")
    env.json("index")
    assert len(_unknown_noted(env, "brand-new-record")) == 2
    assert texts(env, S1)[-2:] == ["later question about the okapi", "Later answer."]


def test_a_file_of_many_unknown_record_types_is_counted_within_bounds(env):
    t = env.transcript(S1, start=START)
    t.exchange(*GOOD_BEFORE)
    for i in range(500):
        t.raw({"type": f"kind-{i:04d}", "sessionId": S1})
    t.exchange(*GOOD_AFTER)
    env.json("index")
    assert texts(env, S1) == [*GOOD_BEFORE, *GOOD_AFTER]
    db = apsw.Connection(str(env.data / "index.db"))
    (state,), = db.execute("SELECT state FROM files").fetchall()
    db.close()
    assert len(json.loads(state)["unk"]) == 50  # noted per file, at most
    cc = {s["source"]: s for s in status(env)["sources"]}["claude-code"]
    assert len(cc["unknown_record_types"]) == 20  # shown, at most
    assert len(_unknown_noted(env, "kind-0000")) == len(warnings_about(env, "kind-")) == 1


def test_types_an_older_version_noted_as_unknown_are_not_counted_once_known(env):
    """An index made before 2.1.332's records were known holds them in its files' states."""
    t = env.transcript(S1, start=START)
    t.exchange(*GOOD_BEFORE)
    t.raw({"type": "brand-new-record", "sessionId": S1})
    env.json("index")
    db = apsw.Connection(str(env.data / "index.db"))
    db.execute("UPDATE files SET state = json_set(state, '$.unk', json(?))",
               (json.dumps(["api-request", "brand-new-record", "cost-state"]),))
    cc = {s["source"]: s for s in status(env)["sources"]}["claude-code"]
    assert cc["unknown_record_types"] == [{"type": "brand-new-record", "files": 1}]
    t.exchange(*GOOD_AFTER)  # read on: the file's state forgets them
    env.json("index")
    (state,), = db.execute("SELECT state FROM files").fetchall()
    db.close()
    assert json.loads(state)["unk"] == ["brand-new-record"]
    assert _unknown_noted(env, "api-request") == []


# Records Claude Code 2.1.332 writes around each request, as it writes them (shortened).
NEWER_RECORDS = [
    {"type": "tools-used", "tools": ["Bash"], "sessionId": S1},
    {"type": "atis-latch", "atis": "", "sessionId": S1},
    {"type": "api-request-shape", "sessionId": S1, "shapeHash": "0ce162dc",
     "timestamp": "2023-11-14T22:40:43.582Z", "version": "2.1.332",
     "shape": {"system": [{"type": "text", "text": "You are a Claude agent, zanzibarshape."}]}},
    {"type": "api-request-blob", "sessionId": S1, "hash": "bb08f39b",
     "message": {"role": "user", "content": [
         {"type": "text", "text": "zanzibarblob: a copy of what the request sent"},
         {"type": "tool_result", "tool_use_id": "toolu_01", "content": "zanzibarblob out"}]}},
    {"type": "api-request", "sessionId": S1, "id": "fbe10917-d93e-46a0-a88d-57a61cf75a90",
     "timestamp": "2023-11-14T22:40:43.582Z", "version": "2.1.332", "querySource": "sdk",
     "shapeHash": "0ce162dc", "params": {"model": "claude-opus-5-5", "max_tokens": 128000}},
    {"type": "cost-state", "sessionId": S1, "totalCostUSD": 0.0008, "totalAPIDuration": 44,
     "modelUsage": {"claude-opus-5-5": {"inputTokens": 100, "outputTokens": 20}}},
]


def test_the_records_claude_code_2_1_332_adds_are_known_and_left_unparsed(env):
    from prima_memory.sources.claude_code import _needless
    t = env.transcript(S1, start=START)
    t.exchange(*GOOD_BEFORE)
    lines = [json.dumps(rec, separators=(",", ":")) for rec in NEWER_RECORDS]  # compact, as
    for line in lines:                                                        # Claude Code's
        t.raw(line)
    t.exchange(*GOOD_AFTER)
    env.json("index")
    assert texts(env, S1) == [*GOOD_BEFORE, *GOOD_AFTER]
    assert env.search("zanzibarblob") == [] and env.search("zanzibarshape") == []
    assert " WARNING " not in log_text(env), log_text(env)
    cc = {s["source"]: s for s in status(env)["sources"]}["claude-code"]
    assert cc["unknown_record_types"] == [] and cc["warnings"] == []
    # known from their first bytes: the bulky copies of requests are never parsed
    assert [r["type"] for r, line in zip(NEWER_RECORDS, lines) if not _needless(line.encode())] \
        == []


def test_json_lines_that_are_not_objects(env):
    t = _around(env, [b"[1,2]", b'"x"', b"3", b"null", b"true"])
    _check_around(env, t)


def test_records_with_fields_of_unexpected_types(env):
    """Objects of the right shape with the wrong types inside: skipped, never a crash."""
    weird = [
        {"type": ["user"], "sessionId": S1},
        {"type": {"a": 1}, "sessionId": S1},
        {"type": 7},
        {"type": "user", "sessionId": S1, "message": "not an object"},
        {"type": "user", "sessionId": S1, "uuid": "w-0001", "message": {"content": 5}},
        {"type": "user", "sessionId": S1, "uuid": "w-0002", "timestamp": 12345,
         "message": {"content": [None, 3, {"type": "text", "text": 7}]}},
        {"type": "assistant", "sessionId": S1, "message": {"id": 5, "content": "x"}},
        {"type": "assistant", "sessionId": S1, "uuid": "w-0003",
         "message": {"id": "msg_weird1", "content": [
             {"type": "tool_use", "name": ["Write"], "input": {"file_path": 3}}]}},
        {"type": "assistant", "sessionId": S1,
         "message": {"id": "msg_weird2", "content": [
             {"type": "tool_use", "name": "Write", "input": ["x"]}]}},
        {"type": "summary", "summary": ["list"]},
        {"type": "custom-title", "customTitle": {"x": 1}},
    ]
    _around(env, [json.dumps(o).encode() for o in weird])
    p = env.run("index", "--json", check=False)
    assert p.returncode == 0, p.stderr
    got = texts(env, S1)
    assert got[:2] == list(GOOD_BEFORE) and got[-2:] == list(GOOD_AFTER), got
    assert ids(env.search("axolotl")) == [S1]


def test_empty_jsonl_file_warns_and_is_read_once_it_has_lines(env):
    a = env.transcript(S1, start=START)
    a.exchange(*GOOD_BEFORE)
    empty = env.project_dir / f"{S2}.jsonl"
    empty.touch()
    p = env.run("index", "--json", check=False)
    assert p.returncode == 0, p.stderr
    assert ids(env.search("capybara")) == [S1]
    assert status(env)["counts"]["sessions"] == 1
    assert warnings_about(env, empty.name), log_text(env)
    b = env.transcript(S2, start=START + DAY)
    b.exchange("now it has a line about the lemur", "Lemur answer.")
    env.json("index")
    assert ids(env.search("lemur")) == [S2]


def test_empty_project_folder_warns(env):
    env.project_dir.mkdir(parents=True)
    p = env.run("index", "--json")
    assert json.loads(p.stdout)["files_seen"] == 0
    assert warnings_about(env, "empty"), log_text(env)


def _unreadable_case(env):
    a = env.transcript(S1, start=START)
    a.exchange(*GOOD_BEFORE)
    b = env.transcript(S2, start=START + DAY)
    b.exchange("a locked question about the pangolin", "Pangolin answer.")
    os.chmod(b.path, 0)
    rep = env.json("index")
    assert ids(env.search("capybara")) == [S1]
    assert env.search("pangolin") == []
    assert warnings_about(env, b.path.name), log_text(env)
    assert rep["files_seen"] == 2
    os.chmod(b.path, 0o644)  # readable again: read in full, once
    env.json("index")
    assert texts(env, S2) == ["a locked question about the pangolin", "Pangolin answer."]
    assert ids(env.search("pangolin")) == [S2]


def test_unreadable_file(env):
    if os.geteuid() != 0:
        _unreadable_case(env)
        return
    # As root chmod 000 stops nothing: run the CLI as an unprivileged user over folders it owns.
    setpriv = shutil.which("setpriv")
    if not setpriv:
        pytest.skip("running as root without setpriv: cannot make a file unreadable")
    nobody = 65534
    drop = [setpriv, f"--reuid={nobody}", f"--regid={nobody}", "--clear-groups"]
    root = Path(tempfile.mkdtemp(prefix="prima rel "))  # pytest's tmp folders are root-only
    try:
        os.chmod(root, 0o755)
        e = Env(root)
        e.env["PYTHONDONTWRITEBYTECODE"] = "1"

        def run(*args, check=True, **_):
            p = subprocess.run([*drop, sys.executable, "-m", "prima_memory", *args],
                               capture_output=True, text=True, cwd=str(e.ws), env=e.env,
                               timeout=120)
            if check and p.returncode != 0:
                raise AssertionError(f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
            return p

        probe = run("--version", check=False)
        if probe.returncode != 0:
            pytest.skip(f"cannot run the CLI as an unprivileged user: {probe.stderr.strip()}")
        e.run = run
        e.json = lambda *args, **kw: json.loads(run(*args, "--json").stdout)
        e.search = lambda q, *x: e.json("search", q, "--mode", "keyword", *x)["results"]
        a = e.transcript(S1, start=START)
        a.exchange(*GOOD_BEFORE)
        b = e.transcript(S2, start=START + DAY)
        b.exchange("a locked question about the pangolin", "Pangolin answer.")
        for dirpath, _dirs, filenames in os.walk(root):
            os.chown(dirpath, nobody, nobody)
            for n in filenames:
                os.chown(os.path.join(dirpath, n), nobody, nobody)
        os.chmod(b.path, 0)
        assert run("search", "x", check=False).returncode == 0  # sanity: the user can work here
        assert subprocess.run([*drop, "cat", str(b.path)], capture_output=True).returncode != 0
        rep = e.json("index")
        assert rep["files_seen"] == 2
        assert ids(e.search("capybara")) == [S1]
        assert e.search("pangolin") == []
        assert warnings_about(e, b.path.name), log_text(e)
        os.chmod(b.path, 0o644)  # readable again: read in full, once
        e.json("index")
        assert [m["text"] for m in e.json("show", S2)["session"]["messages"]] == \
            ["a locked question about the pangolin", "Pangolin answer."]
        assert ids(e.search("pangolin")) == [S2]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_symlink_loops_in_the_project_folder(env):
    a = env.transcript(S1, start=START)
    a.exchange(*GOOD_BEFORE)
    sub = env.project_dir / S1 / "subagents"
    ag = Transcript(sub / "agent-a1.jsonl", S1, str(env.ws), start=START + 10, sidechain=True,
                    agent_id="a1")
    ag.user("subagent task: the tamarin survey")
    ag.reply("Tamarin survey done.", msg_id="msg_sub_a1_0001")  # API ids are unique
    pd = env.project_dir
    os.symlink("loop.jsonl", pd / "loop.jsonl")  # ln -s loop.jsonl loop.jsonl
    os.symlink("loop", pd / "loop")
    os.symlink(".", pd / "dirloop")  # a directory symlink back to the folder itself
    os.symlink("..", sub / "up")
    os.symlink("agent-loop.jsonl", sub / "agent-loop.jsonl")
    os.symlink("ping.jsonl", pd / "pong.jsonl")
    os.symlink("pong.jsonl", pd / "ping.jsonl")
    p = subprocess.run([sys.executable, "-m", "prima_memory", "index", "--json"], cwd=str(env.ws),
                       env=env.env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert ids(env.search("capybara")) == [S1] and ids(env.search("tamarin")) == [S1]
    assert status(env)["counts"]["sessions"] == 1
    assert len(texts(env, S1)) == 2  # subagent messages are not in the main thread count
    for name in ("loop.jsonl", "agent-loop.jsonl", "ping.jsonl", "pong.jsonl"):
        assert warnings_about(env, name), (name, log_text(env))
    # the loops do not make the session be read twice
    st = db_state(env.data / "index.db")[S1]
    assert len(st["messages"]) == 4 and len({m[4] for m in st["messages"]}) == 4


# -- kill -9 in the middle of an index -------------------------------------------------------------

def test_sigkill_at_any_point_then_the_next_run_completes_it(env, tmp_path):
    synthetic.generate_history(env.claude, str(env.ws), 200, seed=11, target_bytes=100_000_000,
                               now=START, images=0)
    cmd = [sys.executable, "-m", "prima_memory", "index", "--json"]

    # the reference: a clean index of the same files, built in one go
    t0 = time.monotonic()
    clean_rep = env.json("index")
    clean_seconds = time.monotonic() - t0
    total = clean_rep["bytes_read"]
    clean_dir = env.root / "clean data"
    os.replace(env.data, clean_dir)

    # Kill again and again: a little later each time a kill found nothing new committed, a
    # little sooner after one that did (each run resumes the one before, with less left to do:
    # at the same moment, a fast machine's resumed run had finished, leaving one kill mid-way).
    # (small steps: a clean index of these 100 MB takes well under a second on a fast machine)
    delay, last_done = 0.1, 0
    mid = partial = 0
    trace = []
    for i in range(30):
        p = subprocess.Popen(cmd, cwd=str(env.ws), env=env.env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, preexec_fn=lambda: os.umask(0),
                             start_new_session=True)
        time.sleep(delay)
        alive = p.poll() is None
        if alive:
            p.send_signal(signal.SIGKILL)
        try:
            err = p.communicate(timeout=60)[1].decode()
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            pytest.fail(f"a killed index run still holds its output open after 60s: {trace}")
        if not alive:
            assert p.returncode == 0, err
            trace.append((round(delay, 2), "finished"))
            break
        db = env.data / "index.db"
        for suffix in ("", "-wal", "-shm"):
            f = Path(str(db) + suffix)
            if f.exists():  # created under umask 0 by a killed process: still private
                assert stat.S_IMODE(f.stat().st_mode) == 0o600, (f, oct(f.stat().st_mode))
        done = 0
        if db.exists():  # look at a copy: the real files stay exactly as the kill left them
            snap = tmp_path / f"snap{i}"
            snap.mkdir()
            for suffix in ("", "-wal"):
                if Path(str(db) + suffix).exists():
                    shutil.copy(str(db) + suffix, snap / ("index.db" + suffix))
            c = connect(snap / "index.db")
            try:
                done = c.execute("SELECT coalesce(sum(offset), 0) FROM files").fetchone()[0]
            except apsw.SQLError:
                done = 0  # killed before the schema was committed
            c.close()
        trace.append((round(delay, 2), done))
        mid += done > 0
        partial += 0 < done < total
        if done <= last_done:
            delay += 0.05
        else:  # a resumed run has less left: the next kill a little sooner, to land mid-way
            delay = max(0.05, delay - 0.025)
        last_done = done
    assert mid >= 2 and partial >= 1, (
        f"{mid} kills after a commit, {partial} with files left (clean index "
        f"{clean_seconds:.1f}s, {total} bytes; delay, bytes committed: {trace})")

    env.json("index")
    db = env.data / "index.db"
    problems = []
    ok = integrity(db)
    if ok != ["ok"]:
        problems.append(f"integrity: {ok}")
    got, want = db_state(db), db_state(clean_dir / "index.db")
    if set(got) != set(want):
        problems.append(f"sessions differ: {sorted(set(got) ^ set(want))[:5]}")
    for s in sorted(set(got) & set(want)):
        diff = [k for k in want[s] if got[s][k] != want[s][k]]
        if diff:
            problems.append(f"session {s}: {', '.join(diff)} differ (" + "; ".join(
                f"{k} {str(got[s][k])[:60]!r} != {str(want[s][k])[:60]!r}" for k in diff[:2]) + ")")
    words = ["zqmarker0", "zqmarker42", "zqmarker199", "cache", "invoice"]
    for w in words:
        if fts_hits(db, w) != fts_hits(clean_dir / "index.db", w):
            problems.append(f"full-text hits for {w!r} differ")
    search_killed = {w: [(r["session_id"], r["score"], r["archived"]) for r in
                         env.search(w, "--limit", "50")] for w in words}
    extracts_killed = sorted(p.name for p in (env.data / "extracts").rglob("*.md")) \
        if (env.data / "extracts").exists() else []
    os.replace(env.data, env.root / "killed data")
    os.replace(clean_dir, env.data)
    search_clean = {w: [(r["session_id"], r["score"], r["archived"]) for r in
                        env.search(w, "--limit", "50")] for w in words}
    extracts_clean = sorted(p.name for p in (env.data / "extracts").rglob("*.md"))
    for w in words:
        if search_killed[w] != search_clean[w]:
            problems.append(f"search {w!r}: {search_killed[w][:3]} != {search_clean[w][:3]}")
    if extracts_killed != extracts_clean:
        problems.append(f"extracts: {len(extracts_killed)} written after the kills, "
                        f"{len(extracts_clean)} by a clean index")
    kinds = sorted({q.split(": ", 1)[1].split(" (")[0] if q.startswith("session ") else q[:60]
                    for q in problems})
    assert not problems, "\n".join(problems[:8]) + f"\n({len(problems)} problems: {kinds})"


# -- corrupt database ------------------------------------------------------------------------------

def _corruptible(env):
    """An archived session indexed first (early pages), then bulky live sessions."""
    arch = env.transcript(S4, start=START)
    arch.exchange("the archived dugong question", "The archived dugong answer.")
    arch.exchange("second dugong question", "Second dugong answer.")
    env.json("index")
    rnd = random.Random(3)
    vocab = [f"w{n:05d}" for n in range(4000)]
    live = {}
    for i in range(6):
        s = sid(100 + i)
        t = env.transcript(s, start=START + (i + 1) * DAY)
        for j in range(40):
            words = " ".join(rnd.choice(vocab) for _ in range(40))
            t.exchange(f"question {j} in livesession{i}: {words}", f"answer {j}: {words}")
        live[s] = f"livesession{i}"
    env.json("index")
    arch.path.unlink()
    assert env.json("index")["archived"] == 1
    db = env.data / "index.db"
    before = db_state(db)
    assert not Path(str(db) + "-wal").exists() or Path(str(db) + "-wal").stat().st_size == 0
    return live, before


@pytest.mark.parametrize("damage", ["garbage", "truncated_to_half"])
def test_corrupt_database_is_moved_aside_and_rebuilt(env, damage):
    live, before = _corruptible(env)
    db = env.data / "index.db"
    size = db.stat().st_size
    assert size > 200_000
    if damage == "garbage":
        db.write_bytes(random.Random(9).randbytes(size))
    else:
        with open(db, "r+b") as f:
            f.truncate(size // 2)
    p = env.run("search", "livesession", "--mode", "keyword", "--json", check=False)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    assert sorted(ids(json.loads(p.stdout)["results"])) == sorted(live)  # results are back
    moved = glob.glob(str(db) + ".corrupt-*[0-9]")
    assert len(moved) == 1, os.listdir(env.data)
    assert warnings_about(env, "moved it to"), log_text(env)
    assert integrity(db) == ["ok"]
    after = db_state(db)
    for s in live:
        assert after[s] == before[s], s  # every live session exactly as it was
    assert ids(env.search("livesession3")) == [sid(103)]
    assert len(glob.glob(str(db) + ".corrupt-*[0-9]")) == 1  # the next run is quiet


def test_archived_session_is_recovered_from_a_truncated_index(env):
    """DESIGN 8: sessions only the old index held are recovered from it where it can be read."""
    live, before = _corruptible(env)
    arch_texts = [m[4] for m in before[S4]["messages"]]
    db = env.data / "index.db"
    with open(db, "r+b") as f:
        f.truncate(db.stat().st_size // 2)
    p = env.run("search", "dugong", "--mode", "keyword", "--json", check=False)
    assert p.returncode == 0, p.stderr
    moved = [m for m in glob.glob(str(db) + ".corrupt-*") if not m.endswith(("-wal", "-shm"))]
    assert len(moved) == 1
    # premise: the archived session's rows are still readable in the moved-aside file
    old = apsw.Connection(moved[0], flags=apsw.SQLITE_OPEN_READONLY)
    try:
        old.execute("PRAGMA writable_schema=ON")  # SQLite refuses a short file without it
        rowid = old.execute("SELECT id FROM sessions WHERE session_id = ?", (S4,)).fetchone()[0]
        readable = sorted(r[0] for r in old.execute(
            "SELECT text FROM messages WHERE session = ?", (rowid,)))
    finally:
        old.close()
    assert readable == sorted(arch_texts), "test premise: the archived rows were cut off"
    res = json.loads(p.stdout)["results"]
    assert ids(res) == [S4], log_text(env)
    assert res[0]["archived"] is True
    after = db_state(db)
    assert after[S4]["messages"] == before[S4]["messages"]
    assert after[S4]["message_count"] == before[S4]["message_count"]
    assert all(after[s] == before[s] for s in live)


# -- permissions -----------------------------------------------------------------------------------

@pytest.mark.parametrize("first_command", ["index", "search"])
def test_index_folder_and_database_are_private(env, first_command):
    t = env.transcript(S1, start=START)
    t.exchange(*GOOD_BEFORE)
    with _Umask(0):  # a careless umask must not make the index readable by others
        if first_command == "index":
            env.run("index")
        else:
            env.run("search", "capybara")
    mode = lambda p: stat.S_IMODE(p.stat().st_mode)  # noqa: E731
    assert mode(env.data) == 0o700
    db = env.data / "index.db"
    assert mode(db) == 0o600
    for suffix in ("-wal", "-shm"):
        f = Path(str(db) + suffix)
        if f.exists():
            assert mode(f) == 0o600, f
    assert (env.data / ".gitignore").read_text().split() == ["*"]
    log = env.data / "prima-memory.log"
    if log.exists():
        assert mode(log) & 0o077 == 0


# -- secrets ---------------------------------------------------------------------------------------

def test_secrets_never_reach_the_index(env):
    rnd = random.Random(42)
    alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    ant_key = "sk-ant-api03-" + "".join(rnd.choice(alnum + "-_") for _ in range(93)) + "AA"
    aws_id = "AKIA" + "".join(rnd.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))
    body = [base64.b64encode(rnd.randbytes(48)).decode() for _ in range(8)]
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----"
    url = "https://user:hunter2pass@example.com/repo.git"
    t = env.transcript(S1, start=START)
    t.exchange(f"configure the gannetclient with key {ant_key} please",
               f"Done: gannetclient now reads {ant_key} from the environment.")
    t.exchange(f"the cormorantdeploy uses AWS id {aws_id} in eu-west-1",
               f"Set {aws_id} for cormorantdeploy.")
    t.exchange(f"here is the puffinserver key:\n{pem}\nstore it safely",
               f"I stored the puffinserver key:\n{pem}")
    t.exchange(f"clone {url} for the shearwaterapp", f"Cloned {url} into shearwaterapp.")
    t.tool("Write", {"file_path": str(env.ws / "cfg.env"), "content": f"KEY={ant_key}"},
           text=f"Writing the skuaconfig with {ant_key} and {url}.")
    env.json("index")
    secrets = [ant_key, ant_key[13:60], aws_id, "hunter2pass", *body, *(b[:24] for b in body)]
    db = env.data / "index.db"
    raw = db.read_bytes() + (Path(str(db) + "-wal").read_bytes()
                             if Path(str(db) + "-wal").exists() else b"")
    everything = all_bytes_under(env.data)
    assert [s for s in secrets if s.encode() in raw] == []
    # nor anywhere else under .prima-memory, nor as a lower-cased index term
    assert [s for s in secrets if s.encode() in everything or s.lower().encode() in everything] == []
    # every word must appear in the session for it to match: one query checks all five
    assert ids(env.search("gannetclient cormorantdeploy puffinserver shearwaterapp skuaconfig")) \
        == [S1]
    for s in (ant_key, aws_id, "hunter2pass", body[0][:20]):
        assert env.search(s) == [], s
    shown = json.dumps(show(env, S1))
    assert not any(s in shown for s in secrets)
    assert "[REDACTED" in shown
    everything = all_bytes_under(env.data)
    assert [s for s in secrets if s.encode() in everything] == []  # queries are not kept


# -- sources are read-only -------------------------------------------------------------------------

def _tree(root: Path) -> dict:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        st = d.stat()
        out[str(d)] = ("dir", st.st_mtime_ns, stat.S_IMODE(st.st_mode), sorted(dirnames + filenames))
        for n in filenames:
            p = d / n
            st = p.lstat()
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None
            out[str(p)] = ("file", st.st_size, st.st_mtime_ns, stat.S_IMODE(st.st_mode),
                           st.st_ino, digest)
    return out


def test_sources_are_never_written(env):
    synthetic.generate_history(env.claude, str(env.ws), 6, seed=5, now=START, images=1)
    t = env.transcript(S1, start=START)
    t.exchange("the ibis question", "Ibis answer.")
    with open(t.path, "ab") as f:
        f.write(b'{"type": "user", "partial')  # a partial last line, as Claude Code writes it
    sub = Transcript(env.project_dir / S1 / "subagents" / "agent-b2.jsonl", S1, str(env.ws),
                     start=START + 5, sidechain=True, agent_id="b2")
    sub.user("subagent: ibis nests")
    sub.reply("Nests counted.", msg_id="msg_sub_b2_0001")
    (env.claude / "settings.json").write_text('{"theme": "dark"}')
    before = _tree(env.claude)
    assert sum(1 for v in before.values() if v[0] == "file") >= 8
    for args in (["index"], ["search", "ibis", "--deep"], ["show", S1], ["recent"], ["files"],
                 ["status"], ["index", "--rebuild"], ["index", "--prune"]):
        env.run(*args, "--json")
    assert _tree(env.claude) == before


# -- host mode -------------------------------------------------------------------------------------

def test_host_mode_refuses_a_folder_claude_code_does_not_know(env):
    host = {"PRIMA_EXPECTED_HOST": "claude-code"}
    stranger = env.root / "not a project"
    stranger.mkdir()
    for args in (["search", "anything"], ["search", "anything", "--json"], ["index", "--json"]):
        p = env.run(*args, "--workspace", str(stranger), check=False, env=host)
        assert p.returncode == 1, (args, p.stdout, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
        assert not (stranger / ".prima-memory").exists()
    # the current folder as the workspace (no --workspace), and $HOME: the classic wrong place
    for where in (stranger, env.home):
        p = env.run("index", check=False, cwd=where, env=host)
        assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1
        assert not (where / ".prima-memory").exists()
    # where Claude Code has a projects folder it works
    t = env.transcript(S1, start=START)
    t.exchange(*GOOD_BEFORE)
    env.run("index", env=host)
    assert ids(env.json("search", "capybara", "--mode", "keyword", env=host)["results"]) == [S1]
    assert (env.data / "index.db").exists()


# -- concurrency -----------------------------------------------------------------------------------

class _SlowTranscript(Transcript):
    """Writes each line in two pieces, the way a big line can reach the disk."""

    def raw(self, obj):
        line = (obj if isinstance(obj, str) else json.dumps(obj)) + "\n"
        half = len(line) // 2
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line[:half])
            f.flush()
            time.sleep(0.003)
            f.write(line[half:])


def test_first_use_by_many_processes_at_once(env):
    """Several Claude Code sessions start together in a workspace with no index yet."""
    t = env.transcript(S1, start=START)
    t.exchange("the first question about the egret", "Egret answer.")
    base = [sys.executable, "-m", "prima_memory"]
    for round_ in range(4):  # a race: a few rounds make a miss unlikely
        shutil.rmtree(env.data, ignore_errors=True)
        procs = [subprocess.Popen(base + (["index", "--json"] if k % 2 else
                                          ["search", "egret", "--mode", "keyword", "--json"]),
                                  cwd=str(env.ws), env=env.env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE) for k in range(8)]
        outs = [p.communicate(timeout=90) for p in procs]
        failed = [(p.args[3], p.returncode, err.decode()[-300:])
                  for p, (_, err) in zip(procs, outs) if p.returncode != 0]
        assert not failed, (round_, failed)
        for p, (out, _) in zip(procs, outs):
            if p.args[3] == "search":
                assert ids(json.loads(out)["results"]) == [S1]
        assert integrity(env.data / "index.db") == ["ok"]
        assert [m[4] for m in db_state(env.data / "index.db")[S1]["messages"]] == \
            ["the first question about the egret", "Egret answer."]


def test_many_processes_at_once_while_a_transcript_grows(env):
    """Six index and six search processes at once on an indexed workspace while a session grows
    (the first use by many processes is test_first_use_by_many_processes_at_once)."""
    expected: dict[str, list[str]] = {}
    for i in range(4):
        s = sid(200 + i)
        t = env.transcript(s, start=START + i * DAY)
        expected[s] = []
        for j in range(15):
            q, a = f"question {j} of colony{i} about egret{j}", f"answer {j} for colony{i}"
            t.exchange(q, a)
            expected[s] += [q, a]
    grow = sid(299)
    g = _SlowTranscript(env.project_dir / f"{grow}.jsonl", grow, str(env.ws), start=START + 10 * DAY)
    g.exchange("growing session starts: kestrel", "Started.")
    expected[grow] = ["growing session starts: kestrel", "Started."]
    env.run("index")

    stop = threading.Event()

    def writer():
        for k in range(40):
            q, a = f"live prompt {k} about kestrel{k}", f"live answer {k}"
            g.exchange(q, a)
            expected[grow].extend([q, a])
            time.sleep(0.02)
        stop.set()

    th = threading.Thread(target=writer)
    base = [sys.executable, "-m", "prima_memory"]
    th.start()
    procs = []
    for k in range(6):
        procs.append(subprocess.Popen(base + ["index", "--json"], cwd=str(env.ws), env=env.env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        procs.append(subprocess.Popen(base + ["search", f"egret{k}", "--mode", "keyword", "--json"],
                                      cwd=str(env.ws), env=env.env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE))
    outs = [p.communicate(timeout=90) for p in procs]
    th.join(timeout=60)
    assert stop.is_set()
    failed = [(p.args[3], p.returncode, err.decode()[-300:]) for p, (_, err) in zip(procs, outs)
              if p.returncode != 0]
    assert not failed, failed
    for out, _ in outs:
        json.loads(out)  # every process printed one whole JSON document

    env.run("index")
    db = env.data / "index.db"
    assert integrity(db) == ["ok"]
    state = db_state(db)
    assert set(state) == set(expected)
    for s, want in expected.items():
        got = [m[4] for m in state[s]["messages"] if m[4]]
        assert sorted(got) == sorted(want), (s, len(got), len(want))
        assert state[s]["message_count"] == len(want), s
    assert ids(env.search("kestrel39")) == [grow]


def test_a_transaction_that_reads_then_writes_waits_for_another_writer(env):
    """What the Stop hook does last: the extracts of the sessions it indexed, read and then
    marked done in one transaction. Another process writing meanwhile (a background embedder,
    the MCP server's idle work) used to fail it at once with "database is locked": SQLite cannot
    wait to turn a reading transaction into a writing one. Now it waits for the writer."""
    from prima_memory.extract_writer import write_unfinished
    from prima_memory.logs import Log
    from prima_memory.storage import Store
    t = env.transcript(S1, start=START)
    for i in range(30):  # substantial: an extract is written
        t.exchange(f"step {i} of the heron migration", f"Did step {i} of the heron work.")
    env.run("index")
    store = Store(str(env.data / "index.db"))
    with store.write():
        store.db.execute("UPDATE sessions SET unfinished = 1")
    other = apsw.Connection(str(env.data / "index.db"))
    for case in ("holds the write lock", "commits in between"):
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('other', ?)", (case,))
        release = threading.Timer(0.5, lambda: other.execute("COMMIT"))
        release.start()
        try:
            if case == "holds the write lock":
                write_unfinished(store, str(env.ws), Log(None))
            else:
                with store.write():
                    got = store.get_meta("heron")
                    release.join()  # another process writes between the read and the write
                    store.set_meta("heron", (got or "") + "x")
        finally:
            release.join()
        assert store.unfinished_sessions() == [] and store.get_meta("other") == case
    assert store.get_meta("heron") == "x"
    assert list((env.data / "extracts").rglob("*-session-extract.md"))
    other.close()
    store.close()


@pytest.mark.parametrize("source", ["claude-code", "codex"])
def test_archiving_a_file_gone_waits_for_another_writer(env, source):
    """A run that finds a transcript (or another agent's file) gone archives its session: it
    reads the file's row, then marks it. Another process writing at that moment (a background
    embedder, the MCP server's idle work) used to fail it at once with "database is locked"
    (a deferred transaction, fixed in 4c7c01b for every Store.transaction); now it waits."""
    from prima_memory.memory import Memory
    gone = env.transcript(S2, start=START + DAY)
    gone.exchange("a question about the ibis", "Ibis answer.")
    codex = Path(env.env["CODEX_HOME"]) / "sessions" / "2026" / "03" / "01"
    codex.mkdir(parents=True)
    rollout = codex / "rollout-2026-03-01T10-00-00-cx-ibis.jsonl"
    rollout.write_text("".join(json.dumps(x) + "\n" for x in [
        {"timestamp": "2026-03-01T10:00:00.000Z", "type": "session_meta",
         "payload": {"id": "cx-ibis", "timestamp": "2026-03-01T10:00:00.000Z",
                     "cwd": str(env.ws)}},
        {"timestamp": "2026-03-01T10:00:01.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "user",
                     "content": [{"type": "input_text", "text": "ibis in codex"}]}}]))
    env.run("index")
    (gone.path if source == "claude-code" else rollout).unlink()
    other = apsw.Connection(str(env.data / "index.db"))
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('other', 'x')")
    release = threading.Timer(0.5, lambda: other.execute("COMMIT"))
    mem = Memory(str(env.ws))
    release.start()
    try:
        rep = mem.update() if source == "claude-code" else mem.update(sources=OTHERS)
    finally:
        release.join()
        mem.close()
        other.close()
    assert rep.archived == 1
    wanted = S2 if source == "claude-code" else "cx-ibis"
    db = connect(env.data / "index.db")
    try:
        archived = [r[0] for r in db.execute("SELECT session_id FROM sessions WHERE archived = 1")]
    finally:
        db.close()
    assert archived == [wanted]


# -- rebuild ---------------------------------------------------------------------------------------

def test_rebuild_gives_the_same_index_and_keeps_archived_sessions(env):
    a, b = _two_sessions(env)
    c = env.transcript(S3, start=START + 2 * DAY, branch="feature/y")
    c.exchange("refactor the lynx parser", "Parser refactored.")
    c.tool("Edit", {"file_path": str(env.ws / "src" / "lynx.py"), "old_string": "a",
                    "new_string": "b"}, text="Splitting the lynx tokenizer out.")
    c.raw({"type": "custom-title", "customTitle": "Lynx parser work", "sessionId": S3})
    ag = env.subagent(S3, "c3", start=START + 2 * DAY + 50)
    ag.user("subagent: find lynx usages")
    ag.reply("Found 4 lynx usages.", msg_id="msg_sub_c3_0001")
    env.json("index")
    a.path.unlink()
    env.json("index")
    db = env.data / "index.db"
    words = ["quokka", "lynx"]
    before = db_state(db)
    before_search = {w: env.search(w) for w in words}
    assert before[S1]["archived"] == 1

    rep = env.json("index", "--rebuild")
    assert rep["bytes_read"] == b.path.stat().st_size + c.path.stat().st_size + \
        ag.path.stat().st_size
    after = db_state(db)
    assert after == before
    assert {w: env.search(w) for w in words} == before_search
    assert before_search["quokka"][0]["archived"] is True
    assert integrity(db) == ["ok"]
    env.json("index", "--rebuild")  # twice: still the same
    assert db_state(db) == before
    st = status(env)
    assert st["counts"]["archived"] == 1 and st["counts"]["sessions"] == 3
