"""The shared project log and the session-history summaries → records, in-process
(sources/shared_log.py, sources/history.py): both header styles, fallbacks, hostile files, and
the history's order (the current files first, whatever their entries' dates; the archive only
when they find nothing)."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from prima_memory.sources import history, shared_log


def _entry(ws: Path, project: str, name: str, text: str) -> Path:
    p = ws / ".claude" / "state" / "sessions" / project / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_entries_in_both_header_styles(tmp_path):
    ws = tmp_path / "ws"
    a = _entry(ws, "P001", "2026-11-20-alice.md",
               "---\nproject: P001\nauthor: Alice\ntime: 2026-11-20T14:30:00Z\n---\n"
               "# Chose Postgres for the ledger\nDECIDED: Postgres, not Mongo.\nReasons follow.")
    b = _entry(ws, "P001", "bob.md", "# Retry queue notes\n**Project:** P001\n**Author:** Bob\n"
                                     "**Date:** 2026-11-21\n\nThe queue retries 5 times.")
    _entry(ws, "P001", "_template.md", "**Author:** nobody\nignored")
    c = _entry(ws, "P002", "plain.md", "no header at all, just a note")
    os.utime(c, (1_700_000_000, 1_700_000_000))
    found = shared_log.discover(str(ws))
    assert [(p, Path(f).name) for p, f in found] == [
        ("P001", "2026-11-20-alice.md"), ("P001", "bob.md"), ("P002", "plain.md")]
    da, problems = shared_log.read(str(a), "P001")
    assert problems == []
    assert (da.author, da.label, da.source) == ("Alice", "[shared log · Alice]", "shared-log")
    assert da.custom_title == "Chose Postgres for the ledger"
    assert da.first_ts == shared_log.parse_ts("2026-11-20T14:30:00Z")
    assert [m.role for m in da.messages] == ["assistant"], "one exchange"
    assert "project: P001" not in da.messages[0].text, "the front matter is not the entry"
    db, _ = shared_log.read(str(b), "P001")
    assert (db.author, db.custom_title) == ("Bob", "Retry queue notes")
    assert db.first_ts == shared_log.parse_ts("2026-11-21")
    dc, _ = shared_log.read(str(c), "P002")
    assert (dc.author, dc.label, dc.first_ts) == ("unknown", "[shared log · unknown]",
                                                  1_700_000_000)
    assert dc.session_id == "P002/plain.md"


def test_no_log_folder_reads_nothing_and_links_are_not_followed(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    assert shared_log.discover(str(ws)) == []
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("**Author:** x\nsecret")
    logdir = ws / ".claude" / "state" / "sessions"
    logdir.mkdir(parents=True)
    os.symlink(outside, logdir / "P9")  # a project folder that is a link
    (logdir / "P1").mkdir()
    os.symlink(outside / "secret.md", logdir / "P1" / "link.md")  # an entry that is a link
    os.mkfifo(logdir / "P1" / "fifo.md")
    assert shared_log.discover(str(ws)) == []
    assert shared_log.read(str(logdir / "P1" / "fifo.md"), "P1")[0] is None


def test_a_huge_or_binary_entry_is_read_in_part(tmp_path):
    p = _entry(tmp_path, "P1", "big.md", "**Author:** Zed\n" + "word " * 300_000)
    d, problems = shared_log.read(str(p), "P1")
    assert d.author == "Zed" and len(d.messages[0].text) <= shared_log.MAX_BYTES
    assert problems and "start read" in problems[0]
    q = tmp_path / "bin.md"
    q.write_bytes(b"**Author:** \xff\xfe\n\x00\x01 text")
    d, _ = shared_log.read(str(q), "P1")
    assert d is not None and "\ufffd" in d.author


def _state(ws: Path, rel: str, doc) -> None:
    p = ws / ".claude" / "state" / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(doc))


def _clock(monkeypatch, day: str) -> None:
    """Today is `day` for the code under test (the history must not depend on it)."""
    at = time.mktime(time.strptime(day + " 09:00", "%Y-%m-%d %H:%M"))
    monkeypatch.setattr(time, "time", lambda: at)


def test_history_current_files_first_then_the_archive_newest_first(tmp_path, monkeypatch):
    _clock(monkeypatch, "2026-11-25")
    ws = tmp_path
    _state(ws, "state.json", {"sessionHistory": [
        {"date": "2026-11-24", "time": "10:00", "summary": "Migrated the billing cron",
         "projectsWorked": ["P001"]},
        {"date": "2026-10-02", "summary": "billing export from last month"}]})
    _state(ws, "projects/P002.json", {"sessionHistory": [
        {"date": "2026-11-03", "summary": "Billing dashboard polish"}]})
    _state(ws, "history/2026-10.json", [{"date": "2026-10-12", "summary": "Wombat audit"},
                                        {"date": "2026-10-13", "summary": "billing archived"}])
    _state(ws, "history/2026-09.json", {"sessionHistory": [
        {"date": "2026-09-01", "summary": "Wombat audit, first pass"},
        {"date": "2026-09-02", "summary": "Kangaroo import"}]})
    (ws / ".claude" / "state" / "history" / "notes.txt").write_text("not a month")

    found, problems = history.search(str(ws), ["billing"])
    assert problems == []
    assert [e["summary"] for e in found] == [
        "Migrated the billing cron", "Billing dashboard polish",
        "billing export from last month"], "the current files, whatever the date; no archive"
    assert found[0]["label"] == "Session History Summaries" and found[0]["projects"] == ["P001"]
    assert found[1]["file"] == os.path.join(".claude", "state", "projects", "P002.json")
    wombat, _ = history.search(str(ws), ["wombat", "audit"])
    assert [e["date"] for e in wombat] == ["2026-10-12"], "the newest month that answers, alone"
    kangaroo, _ = history.search(str(ws), ["KANGAROO"])
    assert [e["summary"] for e in kangaroo] == ["Kangaroo import"]
    assert history.search(str(ws), ["nothing", "like", "it"])[0] == []


def test_history_at_the_turn_of_the_month(tmp_path, monkeypatch):
    """Issue #20: on December 1st, a summary of November 22nd not yet rotated into
    history/2026-11.json is found in state.json; one already in both is found once."""
    _clock(monkeypatch, "2026-12-01")
    ws = tmp_path
    _state(ws, "state.json", {"sessionHistory": [
        {"date": "2026-11-22", "time": "16:40", "summary": "Quarterly okapi report drafted"},
        {"date": "2026-11-20", "summary": "Okapi data cleaned"}]})
    found, _ = history.search(str(ws), ["okapi", "report"])
    assert [(e["date"], e["summary"]) for e in found] == [
        ("2026-11-22", "Quarterly okapi report drafted")]

    _state(ws, "history/2026-11.json", {"sessionHistory": [
        {"date": "2026-11-20", "summary": "Okapi data cleaned"}]})  # rotated, still in state
    _state(ws, "projects/P001.json", {"sessionHistory": [
        {"date": "2026-11-20", "summary": "Okapi data  cleaned"}]})  # and in its project's file
    found, problems = history.search(str(ws), ["okapi", "cleaned"])
    assert problems == [] and [e["file"] for e in found] == [
        os.path.join(".claude", "state", "state.json")], "found once"


def test_history_entries_with_odd_dates_are_kept(tmp_path, monkeypatch):
    """A date missing, not a string, not a date or megabytes long: the entry is still found
    (after the dated ones), its date shown cut or empty, and nothing fails."""
    _clock(monkeypatch, "2026-12-01")
    ws = tmp_path
    _state(ws, "state.json", {"sessionHistory": [
        {"summary": "emu one: no date"},
        {"date": None, "time": 5, "summary": "emu two: null date"},
        {"date": "x" * 2_000_000, "summary": "emu three: huge date"},
        {"date": ["2026-11-01"], "time": {"h": 1}, "summary": "emu four: a list"},
        {"date": 20261130, "summary": "emu five: a number"},
        {"date": True, "summary": "emu six: a boolean"},
        {"date": "last Tuesday", "summary": "emu seven: words"},
        {"date": "2026-11-29", "summary": "emu eight: a real date"}]})
    found, problems = history.search(str(ws), ["emu"])
    assert problems == []
    assert [e["summary"].split(":")[0] for e in found] == [
        "emu eight", "emu one", "emu two", "emu three", "emu four", "emu five", "emu six",
        "emu seven"]
    dates = {e["summary"].split(":")[0]: e["date"] for e in found}
    assert dates["emu three"] == "x" * history.FIELD_CHARS
    assert (dates["emu one"], dates["emu two"], dates["emu four"], dates["emu six"]) == \
        ("", "", "", "")
    assert dates["emu five"] == "20261130" and found[2]["time"] == "5"
    assert all(e["time"] in (None, "5") for e in found)
    assert len(history.search(str(ws), ["emu"], limit=3)[0]) == 3


def test_history_files_of_odd_shapes_are_tolerated(tmp_path):
    ws = tmp_path
    _state(ws, "state.json", {"sessionHistory": [5, {"date": 7, "summary": None}, "x",
                                                 {"date": "2026-11-01", "summary": "ok one"}]})
    (ws / ".claude" / "state" / "projects").mkdir(parents=True)
    (ws / ".claude" / "state" / "projects" / "P1.json").write_text("{ broken")
    _state(ws, "history/2026-10.json", {"sessionHistory": "not a list"})
    found, problems = history.search(str(ws), ["ok"])
    assert [e["summary"] for e in found] == ["ok one"]
    assert len(problems) == 1 and "P1.json" in problems[0]
    assert history.search(str(tmp_path / "none"), ["ok"]) == ([], [])


def test_a_claude_folder_linked_out_of_the_workspace_is_never_read(tmp_path):
    """A cloned repository can ship .claude as a link to another user folder: neither the shared
    log nor the session history is read through it. A link that stays inside is followed."""
    elsewhere = tmp_path / "elsewhere"
    _entry(elsewhere, "P1", "secret.md", "**Author:** x\nthe secret entry")
    _state(elsewhere, "state.json", {"sessionHistory": [{"date": "2026-11-02",
                                                         "summary": "the secret summary"}]})
    ws = tmp_path / "ws"
    ws.mkdir()
    os.symlink(elsewhere / ".claude", ws / ".claude")
    assert shared_log.discover(str(ws)) == []
    assert history.search(str(ws), ["secret"]) == ([], [])

    inside = tmp_path / "ws2"
    (inside / "real").mkdir(parents=True)
    os.rename(elsewhere / ".claude", inside / "real" / ".claude")
    os.symlink(inside / "real" / ".claude", inside / ".claude")
    assert [os.path.basename(p) for _id, p in shared_log.discover(str(inside))] == ["secret.md"]
    assert [e["summary"] for e in history.search(str(inside), ["secret"])[0]] == [
        "the secret summary"]
