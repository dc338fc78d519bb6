"""Opting out and /prima-memory:forget, through the hooks as Claude Code runs them (the real
launcher, hook JSON on stdin)."""
from __future__ import annotations

import os

from conftest import REPO
from test_forget import SECRET, T0, _bytes_hold, _history
from test_hooks import is_block, payload, run_hook

PROMPT_HOOK = f'bash "{REPO}/hooks/run.sh" hook user-prompt-submit'  # (as hooks.json has it)


def prompt(env, session_id: str, text: str):
    """The UserPromptSubmit hook, through the launcher, for a prompt the user typed."""
    data = {"session_id": session_id, "transcript_path": str(env.project_dir / f"{session_id}.jsonl"),
            "cwd": str(env.ws), "hook_event_name": "UserPromptSubmit", "prompt": text}
    return run_hook(env, "user-prompt-submit", data, cmd=PROMPT_HOOK)


def test_a_session_started_with_prima_memory_off_is_neither_briefed_nor_remembered(env):
    _s, _k = _history(env)
    env.run("index")
    off = env.transcript("dddd4444-0000-0000-0000-000000000004", start=T0 + 20000)
    r = run_hook(env, "session-start", payload(env, "session-start", off.session_id),
                 extra_env={"PRIMA_MEMORY": "off"})
    assert r.rc == 0 and r.out == ""  # no briefing
    off.exchange("the zqxoptedoutword draft", "the zqxoptedoutword reply")
    r = run_hook(env, "stop", payload(env, "stop", off.session_id,
                                      last_assistant_message="the zqxoptedoutword reply"),
                 extra_env={"PRIMA_MEMORY": "off"})
    assert r.rc == 0
    r = run_hook(env, "pre-compact", payload(env, "pre-compact", off.session_id),
                 extra_env={"PRIMA_MEMORY": "off"})
    assert r.rc == 0
    env.run("index")
    env.run("index", "--rebuild")
    assert env.search("zqxoptedoutword") == []
    assert _bytes_hold(env.data, "zqxoptedoutword") == []
    listed = env.json("forget", "--list")["forgotten"]
    assert [(e["session_id"], e["why"]) for e in listed] == [(off.session_id, "opt-out")]
    # resumed later without the switch: what it copies stays out, what is new is kept
    resumed = env.transcript("eeee5555-0000-0000-0000-000000000005", start=T0 + 30000)
    for line in off.path.read_text().splitlines():
        resumed.raw(line.replace(off.session_id, resumed.session_id))
    resumed.exchange("now about zqxkeptword", "kept zqxkeptword")
    env.run("index")
    assert env.search("zqxoptedoutword") == []
    assert [r["session_id"] for r in env.search("zqxkeptword")] == [resumed.session_id]


def test_a_project_that_opts_out_gets_nothing_written(env):
    (env.ws / ".prima-memory-off").write_text("")
    s = env.transcript("ffff6666-0000-0000-0000-000000000006", start=T0)
    s.exchange("a question", "an answer")
    for event in ("session-start", "stop", "pre-compact"):
        r = run_hook(env, event, payload(env, event, s.session_id))
        assert r.rc == 0 and r.out == ""
    r = prompt(env, s.session_id, "/prima-memory:recall question")
    assert r.rc == 0
    assert not env.data.exists()  # nothing under the project at all


def test_forget_this_forgets_the_running_session(env):
    s, _k = _history(env)
    env.run("index")
    r = prompt(env, s.session_id, "/prima-memory:forget this")
    assert r.rc == 0 and is_block(r.out) and "forgot this session" in r.out
    s.exchange(f"and later {SECRET}", f"later {SECRET}")
    run_hook(env, "stop", payload(env, "stop", s.session_id,
                                  last_assistant_message=f"later {SECRET}"))
    env.run("index")
    assert env.search(SECRET) == [] and _bytes_hold(env.data, SECRET) == []


def test_forget_words_lists_and_asks_then_yes_forgets(env):
    s, k = _history(env)
    env.run("index")
    r = prompt(env, k.session_id, f"/prima-memory:forget {SECRET}")
    assert r.rc == 0 and is_block(r.out)
    assert s.session_id in r.out and "nothing is forgotten yet" in r.out
    assert f"/prima-memory:forget --yes {s.session_id}" in r.out
    assert env.search(SECRET)  # listed, not forgotten
    r = prompt(env, k.session_id, f"/prima-memory:forget --yes {s.session_id}")
    assert r.rc == 0 and "forgot, for good" in r.out
    assert env.search(SECRET) == [] and _bytes_hold(env.data, SECRET) == []


def test_a_damaged_tombstone_file_stops_indexing_and_hooks_fail_open(env):
    s, _k = _history(env)
    env.run("index")
    env.run("forget", s.session_id, "--yes")
    tomb = env.data / "forgotten.json"
    raw = tomb.read_bytes()
    tomb.write_bytes(raw[:40] + b"\n" + raw.split(b"\n")[1] + b"\n")  # cut short, our mac kept
    s.exchange(f"more {SECRET}", f"more {SECRET}")
    p = env.run("index", check=False)
    assert p.returncode != 0 and "forgotten.json" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    r = run_hook(env, "stop", payload(env, "stop", s.session_id))
    assert r.rc == 0 and r.out == ""
    assert _bytes_hold(env.data, SECRET) == [] or all(
        os.path.basename(p) == "prima-memory.log" for p in _bytes_hold(env.data, SECRET))
