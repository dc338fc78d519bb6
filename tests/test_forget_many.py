"""`forget --before/--match` choosing over 200 sessions: refused, naming the way to say yes to
all of them (--all), which forgets every one; /prima-memory:forget keeps the cap."""
from __future__ import annotations

import json

import pytest

from test_forget_hooks import prompt

T0 = 1_760_000_000.0
WORD = "zqxmanyword"
N = 250


def _many(env) -> list[str]:
    ids = [f"{n:08x}-0000-4000-8000-{n:012x}" for n in range(1, N + 1)]
    for n, sid in enumerate(ids):
        env.transcript(sid, start=T0 + n * 60).exchange(f"the {WORD} task {n}", "done")
    env.run("index")
    return ids


@pytest.mark.parametrize("choice", [["--before", "now"], ["--match", WORD]])
def test_over_200_sessions_are_refused_unless_all_is_asked_for(env, choice):
    ids = _many(env)
    p = env.run("forget", *choice, "--yes", check=False)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "over 200 sessions" in p.stderr and "--all" in p.stderr, p.stderr
    assert len(env.search(WORD, "--limit", str(N))) == N  # nothing forgotten
    # --all alone chooses nothing: `forget --all --yes` never means every session
    p = env.run("forget", "--all", "--yes", check=False)
    assert p.returncode == 2 and "--before" in p.stderr, p.stderr
    p = env.run("forget", ids[0], "--all", "--yes", check=False)
    assert p.returncode == 2 and "goes with --before or --match" in p.stderr, p.stderr
    assert len(env.search(WORD, "--limit", str(N))) == N
    # --all lifts the cap, not the question: off a terminal it lists them all and wants --yes
    p = env.run("forget", *choice, "--all", "--json", check=False)
    assert p.returncode == 2 and "--yes" in p.stderr
    assert sorted(r["session_id"] for r in json.loads(p.stdout)["would_forget"]) == ids
    done = env.json("forget", *choice, "--all", "--yes")
    assert sorted(f["session_id"] for f in done["forgotten"]) == ids
    assert env.search(WORD) == []
    assert sorted(e["session_id"] for e in env.json("forget", "--list")["forgotten"]) == ids


def test_the_forget_command_in_claude_code_keeps_the_cap(env):
    """/prima-memory:forget WORDS lists what it would forget for the user to confirm by typing
    every id: over 200 it says so and points to the terminal; --all there is no switch, only a
    word of the search (Claude must never be handed a way to forget hundreds at once)."""
    _many(env)
    r = prompt(env, "cccc3333-0000-4000-8000-000000000003", f"/prima-memory:forget {WORD}")
    assert r.rc == 0 and "over 200 sessions" in r.out and "in a terminal" in r.out, r
    assert "forgot" not in r.out
    assert len(env.search(WORD, "--limit", str(N))) == N
