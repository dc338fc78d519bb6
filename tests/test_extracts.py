"""Session extracts, exactly as the seed says: which sessions get one, where it goes, what it
holds, one per project folder per local day, what blocks one, and that it is never rewritten."""
from __future__ import annotations

import os
import re
import time
from datetime import datetime, timedelta, timezone

import pytest

DAY = 86400
# A zone far from UTC, in POSIX form (no tz database needed): local 05:30 ahead of UTC, so local
# and UTC dates differ for a start between 18:30 and 24:00 UTC.
TZ = "XST-05:30"
LOCAL = timezone(timedelta(hours=5, minutes=30))
BASE = (int(time.time() - 60 * DAY) // DAY) * DAY  # a UTC midnight 60 days ago


def _local(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, LOCAL)


def _name(ts: float) -> str:
    return _local(ts).strftime("%Y-%m-%d-%H%M") + "-session-extract.md"


def _extracts(env) -> list[str]:
    root = env.data / "extracts"
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) \
        if root.exists() else []


def _sid(n: int) -> str:
    return f"e0e0e0e0-0000-4000-8000-{n:012d}"


def _prepare(env):
    env.env["TZ"] = TZ


# -- session builders (every one starts with a prompt at exactly `start`) -----------------------

def _messages_session(env, sid, n, start, **kw):
    t = env.transcript(sid, start=start, **kw)
    t.user("Walk me through the ledger module", step=0)
    t.reply("It has three parts.")
    for i in range((n - 2) // 2):
        t.exchange(f"And part {i}?", f"Part {i} sums the rows.")
    if n % 2:
        t.user("One more question")
    return t


def _files_session(env, sid, n_files, start, *, changes=None, **kw):
    t = env.transcript(sid, start=start, **kw)
    t.user("Split the ledger into modules", step=0)
    paths = [str(env.ws / "ledger" / f"part_{i}.py") for i in range(n_files)]
    for i in range(changes or n_files):
        t.tool("Write", {"file_path": paths[i % n_files], "content": "x = 1\n"})
    t.reply("Split done.")
    return t


def _duration_session(env, sid, seconds, start, **kw):
    t = env.transcript(sid, start=start, **kw)
    t.user("Review the ledger totals", step=0)
    t.reply("Looking.", step=5)
    t.user("And the rounding?", step=seconds - 10)
    t.reply("Rounding is fine.", step=5)
    assert abs(t.t - start - seconds) < 1e-6
    return t


# -- which sessions are substantial -------------------------------------------------------------

@pytest.mark.parametrize("kind, amount, written", [
    ("messages", 50, True), ("messages", 49, False),
    ("files", 10, True), ("files", 9, False),
    ("seconds", 30 * 60, True), ("seconds", 29 * 60, False), ("seconds", 30 * 60 - 1, False),
])
def test_each_criterion_alone(env, kind, amount, written):
    _prepare(env)
    sid, start = _sid(1), BASE + 10 * 3600
    if kind == "messages":
        _messages_session(env, sid, amount, start)
    elif kind == "files":  # 9 files: ten changes, one file changed twice
        _files_session(env, sid, amount, start, changes=10)
    else:
        _duration_session(env, sid, amount, start)
    env.run("index")  # (extracts are written by an update, never by a read: #39)
    s = env.json("show", sid)["session"]
    # the session is what it says, and below the other two thresholds
    files = len({c["path"] for c in s["files_changed"]})
    minutes = (datetime.fromisoformat(s["ended_at"][:-1]) -
               datetime.fromisoformat(s["started_at"][:-1])).total_seconds() / 60
    if kind == "messages":
        assert s["message_count"] == amount
    else:
        assert s["message_count"] < 50
    assert files == (amount if kind == "files" else 0)
    if kind == "seconds":
        assert abs(minutes * 60 - amount) <= 1
    else:
        assert minutes < 30
    assert _extracts(env) == ([f"my-project/{_name(start)}"] if written else [])


def test_a_session_that_becomes_substantial_later_gets_its_extract_then(env):
    _prepare(env)
    sid, start = _sid(2), BASE + 10 * 3600
    t = _messages_session(env, sid, 40, start)
    env.run("index")
    assert _extracts(env) == []
    for i in range(5):
        t.exchange(f"Later question {i}", f"Later answer {i}")
    env.run("index")
    assert _extracts(env) == [f"my-project/{_name(start)}"]


# -- where ---------------------------------------------------------------------------------------

def test_path_uses_local_start_time_and_project_id(env):
    _prepare(env)
    a_start = BASE + 20 * 3600  # 20:00 UTC = 01:30 the next day, local
    b_start = BASE + 3 * 3600 + 17 * 60
    _duration_session(env, _sid(3), 31 * 60, a_start, cwd="/tmp/x/Example Consulting")
    _duration_session(env, _sid(4), 31 * 60, b_start, cwd="/srv/clients/Acme, Inc. (2024)")
    env.run("index")
    assert _local(a_start).date() != datetime.fromtimestamp(a_start, timezone.utc).date()
    assert _extracts(env) == sorted([f"example-consulting/{_name(a_start)}",
                                     f"acme-inc-2024/{_name(b_start)}"])
    assert _name(a_start).endswith("-0130-session-extract.md")


# -- what ----------------------------------------------------------------------------------------

def _sized(tag: str, n: int) -> str:
    """A reply of exactly n characters, starting with its tag, with no outer whitespace."""
    body = f"{tag}: " + "the ledger total reconciles with the bank feed " * (n // 40 + 2)
    return body[: n - 1] + "."


def test_extract_content(env):
    _prepare(env)
    sid, start = _sid(5), BASE + 9 * 3600
    ws = env.ws
    t = env.transcript(sid, start=start, branch="feature/ledger")
    t.user("Rework the ledger export so totals reconcile. P01-prompt", step=0)
    t.tool("Write", {"file_path": str(ws / "ledger" / "export.py"), "content": "x"},
           text="Create the exporter module that writes CSV totals.")
    t.tool("Edit", {"file_path": str(ws / "ledger" / "totals.py"), "old_string": "a",
                    "new_string": "b"}, text="Round totals | per currency before summing.")
    t.tool("Write", {"file_path": str(ws / "docs" / "ledger.md"), "content": "x"},
           text="Document the export format.")
    replies = {1: _sized("L1", 260), 2: _sized("L2", 260), 6: _sized("L3", 201),
               8: _sized("L4", 260), 10: _sized("L5", 260), 11: _sized("EX200", 200),
               12: _sized("L6", 260), 13: _sized("L7", 1500) + " END-OF-L7"}
    p14 = "P14-prompt: " + "please also check the opening balances carefully " * 18 + "P14-END"
    t.reply(replies[1])
    for k in range(2, 15):
        t.user(p14 if k == 14 else f"P{k:02d}-prompt: next step {k} of the ledger work",
               step=1500 if k == 8 else 30)
        t.reply(replies.get(k, f"R{k:02d}-short done."))
    duration_min = int((t.t - start) // 60)
    assert 30 <= duration_min < 60
    assert len(replies[6]) == 201 and len(replies[11]) == 200

    env.run("index")
    files = _extracts(env)
    assert files == [f"my-project/{_name(start)}"]
    text = (env.data / "extracts" / files[0]).read_text(encoding="utf-8")
    lines = text.splitlines()

    def line_with(*needles, pattern=None):
        return any(all(n.lower() in ln.lower() for n in needles)
                   and (pattern is None or re.search(pattern, ln)) for ln in lines)

    # header
    assert line_with(sid)
    assert line_with("date", _local(start).strftime("%Y-%m-%d"))
    assert line_with("duration", pattern=rf"\b{duration_min}\s*m")
    assert line_with(str(ws))
    assert line_with("branch", "feature/ledger")
    assert line_with("message", pattern=r"\b31\b")  # 14 prompts, 17 replies with text
    assert line_with("files", pattern=r"\b3\b")
    assert line_with("tags", "python")
    # title
    assert line_with("Rework the ledger export so totals reconcile")
    # files table with the explanations
    assert line_with("export.py", "Create the exporter module that writes CSV totals.")
    assert line_with("totals.py", "Round totals", "per currency before summing.")
    assert line_with("ledger.md", "Document the export format.")
    # the last five replies over 200 characters, most recent first (L7 .. L3), then the last ten
    # exchanges (turns 5-14) in full and in order
    first = [text.find(replies[k]) for k in (13, 12, 10, 8, 6)]
    assert -1 not in first and first == sorted(first), first
    for k in (6, 8, 10, 12, 13):
        assert text.count(replies[k]) == 2, k  # once among the long replies, once in full
    assert text.count(replies[11]) == 1  # exactly 200 characters: not "more than 200"
    assert replies[1] not in text and replies[2] not in text  # older than both windows
    assert "END-OF-L7" in text and p14 in text
    prompts = [text.find(f"P{k:02d}-prompt") for k in range(5, 15)]
    assert -1 not in prompts and prompts == sorted(prompts)
    assert all(text.count(f"P{k:02d}-prompt") == 1 for k in range(5, 15))
    assert not any(f"P{k:02d}-prompt" in text for k in range(1, 5))
    assert "R03-short" not in text and "R04-short" not in text
    # where it stopped (beyond the seed's parts): "R14-short done." says too little on its own,
    # so it follows the reply before it, L7, shortened
    stopped = text.split("## Where it stopped\n\n", 1)[1].split("\n", 1)[0]
    assert stopped.startswith(replies[13][:100]) and stopped.endswith("… R14-short done."), stopped
    assert text.find("## Where it stopped") < min(first)
    assert text.count("R05-short") == 1 and text.count("R14-short") == 2
    assert text.rfind("R14-short") > max(first)  # short replies are not among the long ones


def test_secrets_do_not_reach_the_extract(env):
    _prepare(env)
    sid, start = _sid(6), BASE + 9 * 3600
    key = ("sk-ant-api03-" + "Zq7x9KfT2mWb4HvLr8PjN6cYd3QsA1uEgR5" * 2
           + "oI0lVwX-_kB7nM2pTu6hJ3gF9dS4aAA")
    assert len(key) == 114
    t = env.transcript(sid, start=start)
    t.user(f"Use this key for staging: {key}", step=0)
    t.reply(f"Configured the staging client with {key} and verified the connection works. "
            + "The ledger sync now authenticates on every request and retries twice. " * 4)
    t.user("Thanks", step=31 * 60)
    t.reply("You're welcome.")
    env.run("index")
    files = _extracts(env)
    assert len(files) == 1
    text = (env.data / "extracts" / files[0]).read_text(encoding="utf-8")
    assert "Configured the staging client" in text
    assert key not in text and key[13:45] not in text


# -- one per project folder per day, and what blocks one -----------------------------------------

def test_one_extract_per_project_folder_per_local_day(env):
    _prepare(env)
    a = BASE + 19 * 3600  # local: day 1, 00:30
    b = BASE + DAY + 17 * 3600  # local: day 1, 22:30 (another UTC day than a)
    c = BASE + DAY + 18 * 3600 + 40 * 60  # local: day 2, 00:10 (the same UTC day as b)
    assert _local(a).date() == _local(b).date() != _local(c).date()
    _duration_session(env, _sid(7), 31 * 60, a)
    env.run("index")
    assert _extracts(env) == [f"my-project/{_name(a)}"]
    _duration_session(env, _sid(8), 31 * 60, b)
    _duration_session(env, _sid(9), 31 * 60, c)
    # a backfill: two substantial sessions of day 4, first seen in the same run
    d, e = BASE + 3 * DAY + 3 * 3600, BASE + 3 * DAY + 8 * 3600
    _duration_session(env, _sid(10), 40 * 60, d)
    _duration_session(env, _sid(11), 40 * 60, e)
    env.run("index")
    got = _extracts(env)
    assert got[:2] == sorted([f"my-project/{_name(a)}", f"my-project/{_name(c)}"])
    assert len(got) == 3 and got[2] in (f"my-project/{_name(d)}", f"my-project/{_name(e)}")
    texts = {f: (env.data / "extracts" / f).read_text(encoding="utf-8") for f in got}
    assert _sid(7) in texts[f"my-project/{_name(a)}"]
    assert _sid(9) in texts[f"my-project/{_name(c)}"]
    assert not any(_sid(8) in x for x in texts.values())
    # another project folder keeps its own count for the same day
    _duration_session(env, _sid(12), 31 * 60, b, cwd=str(env.ws / "Side Project"))
    env.run("index")
    assert f"side-project/{_name(b)}" in _extracts(env)


def test_checkpoint_of_the_day_or_a_file_naming_the_session_blocks_it(env):
    _prepare(env)
    folder = env.data / "extracts" / "my-project"
    folder.mkdir(parents=True)
    a, b, c = BASE + 9 * 3600, BASE + DAY + 9 * 3600, BASE + 2 * DAY + 9 * 3600
    day_a = _local(a).strftime("%Y-%m-%d")
    blockers = {
        f"{day_a}-0900-0f0f0f0f-1111-4000-8000-000000000000-checkpoint.md": "# checkpoint\n",
        f"2020-01-01-0000-{_sid(14)}-checkpoint.md": "# old checkpoint of b\n",
    }
    for name, body in blockers.items():
        (folder / name).write_text(body, encoding="utf-8")
    other = env.data / "extracts" / "other-project"
    other.mkdir()
    day_c = _local(c).strftime("%Y-%m-%d")
    (other / f"{day_c}-0800-0a0a0a0a-2222-4000-8000-000000000000-checkpoint.md").write_text("x")
    _duration_session(env, _sid(13), 31 * 60, a)  # its day has a checkpoint
    _duration_session(env, _sid(14), 31 * 60, b)  # a file already names it
    _duration_session(env, _sid(15), 31 * 60, c)  # a checkpoint of its day, another folder only
    env.run("index")
    assert sorted(p.name for p in folder.iterdir()) == sorted([*blockers, _name(c)])
    for name, body in blockers.items():
        assert (folder / name).read_text(encoding="utf-8") == body


# -- never rewritten -----------------------------------------------------------------------------

def test_an_extract_is_never_updated_and_survives_a_rebuild(env):
    _prepare(env)
    sid, start = _sid(16), BASE + 9 * 3600
    t = _duration_session(env, sid, 31 * 60, start)
    env.run("index")
    [rel] = _extracts(env)
    path = env.data / "extracts" / rel
    before = path.read_bytes()
    # the session grows: new prompts, long replies, file changes
    for i in range(30):
        t.exchange(f"growthword question {i}", _sized(f"growthword answer {i}", 300))
    t.tool("Write", {"file_path": str(env.ws / "late.py"), "content": "x"}, text="A late file.")
    env.run("index")
    assert [r["session_id"] for r in env.search("growthword")] == [sid]  # it was read again
    assert path.read_bytes() == before
    assert _extracts(env) == [rel]
    env.run("index", "--rebuild")
    assert path.read_bytes() == before
    assert _extracts(env) == [rel]
    assert env.json("show", sid)["session"]["message_count"] == 65


# -- cut short while written ---------------------------------------------------------------------

# A process that dies halfway through writing its first file in the extracts folder: killed
# (SIGKILL, the machine going down) or stopped by the hook's alarm (an exception at any point).
_DIES_WRITING = r'''
import os, sys
how = sys.argv.pop(1)
real = os.fdopen

class Alarm(BaseException):
    pass

def fdopen(fd, *args, **kw):
    f = real(fd, *args, **kw)
    mode = args[0] if args else kw.get("mode", "r")
    if "w" not in mode or "/extracts/" not in os.readlink(f"/proc/self/fd/{fd}"):
        return f
    class Dying:
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            f.close()
        def write(self, text):
            data = text.encode("utf-8")
            os.write(fd, data[: len(data) // 2])
            if how == "killed":
                os._exit(9)
            raise Alarm()
    return Dying()

os.fdopen = fdopen
from prima_memory.main import main
sys.exit(main(sys.argv[1:]))
'''


def _dies_writing(env, how: str, *args, input: str | None = None):
    import subprocess
    import sys
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc to tell which file is written")
    return subprocess.run([sys.executable, "-c", _DIES_WRITING, how, *args], input=input,
                          capture_output=True, text=True, cwd=str(env.ws), env=env.env,
                          timeout=120)


def _indexed_extracts(env) -> list[str]:
    """The extracts prima-memory reads back for a deep search, by their names."""
    import apsw
    db = apsw.Connection(str(env.data / "index.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return sorted(r[0] for r in db.execute(
            "SELECT session_id FROM sessions WHERE source = 'extract'"))
    finally:
        db.close()


@pytest.mark.parametrize("how", ["killed", "alarm"])
def test_an_extract_cut_short_is_written_whole_by_the_next_run(env, how):
    """(a bug: the extract was written in place after its O_EXCL create, so a run killed or
    stopped halfway left a truncated file that took the day's place for ever)"""
    _prepare(env)
    sid, start = _sid(30), BASE + 9 * 3600
    _duration_session(env, sid, 31 * 60, start)
    p = _dies_writing(env, how, "index")
    assert p.returncode != 0, p.stdout + p.stderr
    assert not list((env.data / "extracts").rglob("*.md")), "a part of an extract was left"
    env.run("index")
    path = env.data / "extracts" / "my-project" / _name(start)
    text = path.read_text(encoding="utf-8")
    assert sid in text and text.rstrip().endswith("Rounding is fine.")
    env.run("search", "rounding", "--deep", "--mode", "keyword")  # reads the extracts back
    assert _indexed_extracts(env) == [f"extract:my-project/{_name(start)}"]


@pytest.mark.parametrize("how", ["killed", "alarm"])
def test_a_checkpoint_cut_short_is_neither_injected_nor_in_the_way(env, how):
    """(a bug: as for an extract; a truncated checkpoint was injected after the compaction, and
    named the session, so that no extract of it was ever written)"""
    import json
    _prepare(env)
    sid, start = _sid(31), BASE + 9 * 3600
    t = env.transcript(sid, start=start)
    t.exchange("Review the ledger totals", "Looking.")  # not substantial yet: no extract
    env.run("index")
    hook_input = json.dumps({"session_id": sid, "cwd": str(env.ws), "trigger": "auto",
                             "hook_event_name": "PreCompact"})
    p = _dies_writing(env, how, "--workspace", str(env.ws), "hook", "pre-compact",
                      input=hook_input)
    assert (p.returncode != 0) == (how == "killed"), p.stdout + p.stderr
    assert not list((env.data / "extracts").rglob("*.md")), "a part of a checkpoint was left"
    after = env.run("--workspace", str(env.ws), "hook", "session-start", input=json.dumps(
        {"session_id": sid, "cwd": str(env.ws), "source": "compact",
         "hook_event_name": "SessionStart"}))
    assert "checkpoint" not in after.stdout.lower()
    t.exchange("And the rounding?", "Rounding is fine.")
    t.user("Thanks", step=31 * 60)  # substantial now
    env.run("index")  # no file names the session: its extract is written
    assert [p.name for p in (env.data / "extracts").rglob("*.md")] == [_name(start)]
    env.run("--workspace", str(env.ws), "hook", "pre-compact", input=hook_input)
    [checkpoint] = (env.data / "extracts").rglob("*-checkpoint.md")
    assert checkpoint.read_text(encoding="utf-8").rstrip().endswith("Rounding is fine.")


def test_writing_whole_keeps_the_old_guards(tmp_path, monkeypatch):
    """(guards of the fix above) what is at the name is never followed, replaced or clobbered,
    even when it comes between the look and the write; no temporary file outlives a write; a
    temporary file a killed run left is neither an extract nor a checkpoint."""
    from prima_memory import checkpoints, extract_writer, workspace
    from prima_memory.sources import extract_reader
    ws = tmp_path / "ws"
    folder = ws / ".prima-memory" / "extracts" / "p"
    folder.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("secret")
    (folder / "link.md").symlink_to(victim)
    (folder / "dangling.md").symlink_to(tmp_path / "nowhere")
    (folder / "kept.md").write_text("complete")
    for name in ("link.md", "dangling.md", "kept.md"):
        assert extract_writer.write_new(str(folder / name), "new text") is False
    with monkeypatch.context() as m:  # another writer takes the name after the look
        m.setattr(extract_writer.os.path, "lexists", lambda p: False)
        assert extract_writer.write_new(str(folder / "kept.md"), "new text") is False
        assert extract_writer.write_new(str(folder / "link.md"), "new text") is False
    assert victim.read_text() == "secret" and not (tmp_path / "nowhere").exists()
    assert (folder / "kept.md").read_text() == "complete" and (folder / "link.md").is_symlink()
    sid = "e0e0e0e0-0000-4000-8000-000000000099"
    left = folder / f"{workspace.TEMP_PREFIX}123-abc"
    left.write_text(f"# Checkpoint: half of {sid}")  # what a killed run leaves
    names = sorted(p.name for p in folder.iterdir())
    assert extract_writer.write_new(str(folder / "new.md"), "whole") is True
    assert sorted(p.name for p in folder.iterdir()) == sorted(names + ["new.md"])
    assert (folder / "new.md").read_text() == "whole"
    assert not extract_writer._day_taken(str(folder), "2026-01-01", sid)
    assert checkpoints.latest(str(ws), sid) is None
    assert str(left) not in extract_reader.discover(str(ws))
