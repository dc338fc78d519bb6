"""`files`: one entry per session and file (its edits counted, first and last time, tools), with
the best reason the session holds for the change: Claude's words next to the edit when they say
something, else Claude's reply before it (earlier in that turn or the turn before), else the
user's request; "ok let's do that" and "Editing." are no reason. Through the CLI and MCP's
get_file_history, on what an index already holds (read, not stored again)."""
from __future__ import annotations

import json
import time

import pytest
from test_mcp import cli, ok, serve

from prima_memory.reasons import says_something
from prima_memory.wording import one_line

DAY = 86400
NOW = time.time()
FIX = "1a2b3c4d-5e6f-4a1b-9c2d-3e4f5a6b7c8d"
RENAME = "2b3c4d5e-6f70-4b2c-8d3e-4f5a6b7c8d9e"
AGE = "3c4d5e6f-7081-4c3d-9e4f-5a6b7c8d9e0f"
PRIV = "4d5e6f70-8192-4d4e-8f50-6b7c8d9e0f1a"
GONE = "5e6f7081-92a3-4e5f-9061-7c8d9e0f1a2b"
HUGE = "6f708192-a3b4-4f60-8172-8d9e0f1a2b3c"
PROPOSAL = ("The session cookie is set with SameSite=Strict, so the browser drops it on the "
            "redirect back from the OAuth provider. Setting it to Lax fixes the loop. Shall I?")


def _history(env) -> None:
    cookies = {"file_path": str(env.ws / "src" / "auth" / "cookies.py")}
    # the case: the fix proposed in a reply, "ok let's do that", edits with no words
    t = env.transcript(FIX, start=NOW - 5 * DAY)
    t.user("signing in bounces back to the login page after the OAuth callback")
    t.reply(PROPOSAL)
    t.user("ok let's do that")
    t.tool("Edit", dict(cookies, old_string="Strict", new_string="Lax"))
    t.tool("Edit", dict(cookies, old_string="a", new_string="b"), text="Editing.")
    t.tool("MultiEdit", dict(cookies, edits=[]))
    t.reply("Done.")
    # a trivial edit with words of its own
    t = env.transcript(RENAME, start=NOW - 4 * DAY)
    t.user("rename COOKIE to SESSION_COOKIE")
    t.tool("Edit", dict(cookies, old_string="COOKIE", new_string="SESSION_COOKIE"),
           text="Renaming the constant COOKIE to SESSION_COOKIE everywhere.")
    # no words of Claude's at all: the user's request is the reason
    t = env.transcript(AGE, start=NOW - 3 * DAY)
    t.user("make the cookie max-age configurable through SESSION_MAX_AGE")
    t.tool("Edit", dict(cookies, old_string="3600", new_string="age"))
    t.user("continue")
    t.tool("Edit", dict(cookies, old_string="x", new_string="y"))
    # a private span never comes back as a reason, nor a forgotten session's words
    t = env.transcript(PRIV, start=NOW - 2 * DAY)
    t.user("<private>zqxprivatehost</private> point the cookie domain at it")
    t.tool("Edit", dict(cookies, old_string="d", new_string="e"))
    t = env.transcript(GONE, start=NOW - 1 * DAY)
    t.user("zqxforgottenword: drop the cookie")
    t.reply("zqxforgottenword is why the cookie goes.")
    t.user("ok")
    t.tool("Edit", dict(cookies, old_string="f", new_string="g"))


def test_one_entry_per_session_with_the_reason_before_the_edit(env):
    _history(env)
    env.run("forget", GONE, "--yes")
    data = env.json("files", "cookies.py")
    blob = json.dumps(data)
    assert "zqxprivatehost" not in blob and "zqxforgottenword" not in blob
    got = {s["session_id"]: s for s in data["sessions"]}
    assert list(got) == [PRIV, AGE, RENAME, FIX], "newest first, one entry each"
    fix = got[FIX]["files"]
    assert len(fix) == 1
    assert fix[0]["relative"] == "src/auth/cookies.py"
    assert (fix[0]["edits"], fix[0]["tools"]) == (3, ["Edit", "MultiEdit"])
    assert fix[0]["first_at"] < fix[0]["last_at"]
    assert (fix[0]["why"], fix[0]["why_from"]) == (PROPOSAL, "claude")
    rename = got[RENAME]["files"][0]
    assert (rename["why"], rename["why_from"]) == \
        ("Renaming the constant COOKIE to SESSION_COOKIE everywhere.", "claude")
    age = got[AGE]["files"][0]
    assert age["edits"] == 2
    assert (age["why"], age["why_from"]) == \
        ("make the cookie max-age configurable through SESSION_MAX_AGE", "user")
    assert got[PRIV]["files"][0]["why"] == "[private] point the cookie domain at it"
    assert (data["total_sessions"], data["total_changes"], data["more"]) == (4, 7, 0)

    out = env.run("files", "cookies.py").stdout
    assert "zqxprivatehost" not in out and "zqxforgottenword" not in out
    assert out.count("src/auth/cookies.py") == 4, out
    assert f"why: {one_line(PROPOSAL, 160)}" in out
    assert "3 edits (Edit, MultiEdit)" in out
    assert "asked: make the cookie max-age configurable through SESSION_MAX_AGE" in out
    assert "Editing." not in out and "let's do that" not in out


def test_limit_keeps_the_newest_sessions_and_says_how_many_more(env):
    _history(env)
    out = env.run("files", "src/auth/cookies.py", "--limit", "2").stdout
    assert out.rstrip().endswith("… 3 more sessions (use --limit or --skip)"), out
    assert GONE in out and PRIV in out and FIX not in out
    data = env.json("files", "src/auth/cookies.py", "--limit", "2", "--skip", "2")
    assert [s["session_id"] for s in data["sessions"]] == [AGE, RENAME] and data["more"] == 1


def test_a_huge_reply_gives_a_capped_reason(env):
    t = env.transcript(HUGE, start=NOW - DAY)
    t.user("fix it")
    t.reply("word " * 150_000 + "So the fix is to cap the upload.")  # (kept whole: < 1 MB)
    t.user("ok go ahead")
    t.tool("Write", {"file_path": str(env.ws / "up.py"), "content": "x"})
    t = env.transcript(FIX, start=NOW - 2 * DAY)
    t.user("cap the download too " + "please " * 2_000_000)  # (14 MB: its first 1 MB kept)
    t.tool("Write", {"file_path": str(env.ws / "down.py"), "content": "x"})
    why = env.json("files", "up.py")["sessions"][0]["files"][0]["why"]
    assert why.endswith("So the fix is to cap the upload.") and len(why) <= 1000
    why = env.json("files", "down.py")["sessions"][0]["files"][0]["why"]
    assert why.startswith("cap the download too please") and len(why) <= 1000


def test_get_file_history_answers_the_same(env):
    _history(env)

    async def body(s):
        return await ok(s, "get_file_history", path="cookies.py")
    got = serve(env, body)
    assert got == cli(env, "files", "cookies.py", "--limit", "1000")
    fix = next(s for s in got["sessions"] if s["session_id"] == FIX)
    assert fix["files"][0]["why"] == PROPOSAL


@pytest.mark.parametrize("text", ["ok let's do that", "Ok, let\u2019s do that!", "Editing.",
                                  "continue", "yes please, go ahead", "Good idea, do it.",
                                  "Now let me update the file.", "[private]", "Shall I?", "", None])
def test_assent_and_announcements_are_no_reason(text):
    assert not says_something(text)


@pytest.mark.parametrize("text", ["Set SameSite=Lax on the session cookie.", "fix the login loop",
                                  "Renaming COOKIE everywhere.", "ok, but keep the old name"])
def test_a_word_of_substance_is_a_reason(text):
    assert says_something(text)
