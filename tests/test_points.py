"""An independent check of the seed's points table on sessions whose scores are worked out by
hand below (not by calling the scoring code)."""
from __future__ import annotations

import time

import pytest

from prima_memory.logs import Log
from prima_memory.memory import Memory
from prima_memory.search import keyword

DAY = 86400


@pytest.fixture
def mem(env, monkeypatch):
    for k, v in env.env.items():
        if k in ("HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "PRIMA_VSCODE_USER_DIRS"):
            monkeypatch.setenv(k, v)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    m = Memory(str(env.ws), log=Log(None))
    yield m
    m.close()


def scores(mem, query, now):
    mem.update()
    return {h.row.session_id: h.score for h in keyword(mem.store(), query, limit=50, now=now)}


def test_points_table(env, mem):
    now = time.time()
    ws = str(env.ws)
    # A: 70 days old. Title "Fix the Bedroom heater" (first prompt).
    #    messages: prompt (bedroom, heater), reply1 (heater), reply2 (bedroom, heater, bedroom x2)
    #    query "bedroom heater": title has whole query? "fix the bedroom heater" contains it -> 20
    #    messages with bedroom: prompt, reply2 = 2 -> 4 pts; with heater: prompt, reply1, reply2 = 3 -> 6 pts
    #    files: 2 distinct (one edited twice) -> 2 pts; no path contains the query. Total 32.
    a = env.transcript("a0000000-0000-4000-8000-00000000000a", start=now - 70 * DAY)
    a.user("Fix the Bedroom heater")
    a.reply("The heater relay is stuck.")
    a.tool("Edit", {"file_path": f"{ws}/src/relay.py", "old_string": "x", "new_string": "y"})
    a.tool("Edit", {"file_path": f"{ws}/src/relay.py", "old_string": "y", "new_string": "z"})
    a.tool("Write", {"file_path": f"{ws}/docs/notes.md", "content": "c"})
    a.reply("BEDROOM heater fixed; bedroom lights untouched.")
    # B: 3.5 days old (recency 10 * (1 - 3.5/7) = 5). Path contains the whole query twice
    #    (two distinct files) -> 20; 7 distinct files -> capped 5. No message has either word,
    #    the title neither. Total 30.
    b = env.transcript("b0000000-0000-4000-8000-00000000000b", start=now - 3.5 * DAY)
    b.user("Tidy the repository layout")
    for name in ("bedroom heater/a.py", "bedroom heater/b.py", "c.py", "d.py", "e.py", "f.py",
                 "g.py"):
        b.tool("Write", {"file_path": f"{ws}/{name}", "content": "pass"})
    b.reply("Done.")
    # C: 40 days old; "bedroom" in one message, "heater" in none -> no match at all.
    c = env.transcript("c0000000-0000-4000-8000-00000000000c", start=now - 40 * DAY)
    c.exchange("Paint the bedroom", "Blue it is.")
    # D: 10 days old; "roomy" is not "bedroom"; both words as substrings: "bedrooms" and
    #    "heaters" in one message -> 2 + 2 = 4; no files. Total 4.
    d = env.transcript("d0000000-0000-4000-8000-00000000000d", start=now - 10 * DAY)
    d.exchange("Compare prices", "Two bedrooms with electric heaters.")

    got = scores(mem, "Bedroom  HEATER", now)
    assert got == {"a0000000-0000-4000-8000-00000000000a": 32,
                   "b0000000-0000-4000-8000-00000000000b": pytest.approx(30, abs=0.05),
                   "d0000000-0000-4000-8000-00000000000d": 4}


def test_recency_falls_linearly_to_zero_at_seven_days(env, mem):
    now = time.time()
    for i, age in enumerate((0.0, 1.75, 6.99, 7.0, 30.0)):
        t = env.transcript(f"e000000{i}-0000-4000-8000-00000000000e", start=now - age * DAY)
        t.exchange("kiwi", "ok")  # title "Kiwi" contains the query: 20; one message: 2
    got = scores(mem, "kiwi", now)
    expected = {0.0: 32, 1.75: 29.5, 6.99: 22.01, 7.0: 22, 30.0: 22}
    for i, age in enumerate(expected):
        sid = f"e000000{i}-0000-4000-8000-00000000000e"
        # the first timestamp is written 30 s after `start` by the builder
        assert got[sid] == pytest.approx(expected[age], abs=0.01), (age, got[sid])


def test_each_message_counts_once_per_word(env, mem):
    now = time.time()
    t = env.transcript("f0000000-0000-4000-8000-00000000000f", start=now - 90 * DAY)
    t.exchange("apple apple apple", "apple pie and apple juice")  # 2 messages with apple -> 4
    t.exchange("pear", "no fruit here")  # title is "Apple apple apple": contains "apple" -> 20
    assert scores(mem, "apple", now) == {"f0000000-0000-4000-8000-00000000000f": 24}
    assert scores(mem, "apple pear", now) == {"f0000000-0000-4000-8000-00000000000f": 6}
