"""Hostile and unlucky input (the hardening issue): each case is what a transcript, a cloned
repository or a hook payload can hold, checked where a user meets it (the CLI, the hooks fed hook
JSON) and, where there is one, at the clean seam (source file -> records)."""
from __future__ import annotations

import json
import time

from conftest import Env
from test_hooks import payload, query, run_hook, sid

from prima_memory.sources import claude_code

DAY = 86400
OLD = time.time() - 30 * DAY
A, B = sid(0xA1), sid(0xB2)


# -- a lone UTF-16 surrogate --------------------------------------------------------------------

def _surrogate_history(env: Env):
    """Claude Code writes a string cut mid-emoji as a lone surrogate escape: valid JSON."""
    t = env.transcript(A, start=OLD)
    t.exchange("Deploy the rocketship \ud83d now, and the \ude00 too", "Deployed the rocketship.")
    t.exchange("Keep the whole 😀 and the escaped \\ud83d text", "Kept both.")
    env.transcript(B, start=OLD + DAY).exchange("Tune the quokka cache", "Tuned.")
    raw = (env.project_dir / f"{A}.jsonl").read_bytes()
    assert b"\\ud83d now" in raw and b"\\ude00 too" in raw  # really lone escapes on disk
    return t


def test_a_lone_surrogate_is_kept_as_a_replacement_character_and_breaks_nothing(env):
    _surrogate_history(env)
    env.run("index")
    assert [r["session_id"] for r in env.search("rocketship")] == [A]
    assert [r["session_id"] for r in env.search("quokka")] == [B]
    texts = [m["text"] for m in env.json("show", A)["session"]["messages"]]
    assert texts[0] == "Deploy the rocketship \ufffd now, and the \ufffd too"
    assert texts[2] == "Keep the whole 😀 and the escaped \\ud83d text"
    assert env.json("status")["counts"]["sessions"] == 2
    assert len(env.json("recent")["sessions"]) == 2
    r = run_hook(env, "session-start", payload(env, "session-start", sid(9)))
    assert r.rc == 0 and A in r.out and B in r.out


def test_both_parsers_read_a_lone_surrogate_the_same(env):
    _surrogate_history(env)
    sf = claude_code.SourceFile(str(env.project_dir / f"{A}.jsonl"), A, False)
    plain = claude_code.read(sf, 0, None, mtime=0, bulk=False)
    bulk = claude_code.read(sf, 0, None, mtime=0, bulk=True)  # orjson, above the bulk threshold
    assert [m.text for m in plain[0].messages] == [m.text for m in bulk[0].messages]
    assert len(plain[0].messages) == 4 and plain[3] == bulk[3] == []  # no line lost or warned


def test_a_lone_surrogate_in_a_hook_payload_or_a_query(env):
    _surrogate_history(env)
    env.run("index")
    data = json.dumps(payload(env, "stop", A, last_assistant_message="Cut mid-emoji \ud83d here"))
    assert "\\ud83d" in data
    r = run_hook(env, "stop", data)
    assert r.rc == 0 and r.err == ""
    assert query(env, "SELECT count(*) FROM messages WHERE text = ?",
                 ("Cut mid-emoji \ufffd here",))[0][0] == 1
    # command-line bytes that are not UTF-8 reach Python as lone surrogates
    p = env.run("search", "rocketship\udcff", "--mode", "keyword", "--json")
    assert json.loads(p.stdout)["query"] == "rocketship\ufffd"
    p = env.run("recall", "rocketship", "\udcff")
    assert p.stdout.splitlines()[0].startswith('prima-memory: past sessions matching "rocketship \ufffd"')
