"""The session view: where a session stopped, its first and last requests and its excerpts,
defined once (session_view.py) and the same in every renderer that shows them."""
from __future__ import annotations

import time

from prima_memory import api, briefing, checkpoints, extract_writer, session_view

OLD = time.time() - 3 * 86400
LONG = "The importer rebuilds each row for every column it reads. " * 5  # over SUBSTANTIAL
SID = "5e55e55e-0000-4000-8000-000000000001"


def _view(env, **parts):
    mem = api.open_memory(str(env.ws))
    try:
        api.bring_up(mem)
        store = mem.store()
        row = store.session_by_session_id(SID, "claude-code")
        return session_view.build(store, row, **parts)
    finally:
        mem.close()


# A memory-leak session (issue #20): a long diagnosis, then the fix in one sentence. The fix is
# where it stopped.
DIAGNOSIS = ("The leak is in the WebSocket layer: every reconnect adds a 'message' listener to "
             "the shared emitter and nothing removes it, so each closed socket stays reachable. "
             "Heap snapshots would show thousands of WebSocket objects. " + "Evidence. " * 20)
FIX = "Fixed: the socket listeners are removed on close; RSS stays flat at 180 MB."


def test_where_it_stopped_is_the_last_reply_however_short(env):
    t = env.transcript(SID, start=OLD)
    t.exchange("Why does the server's memory grow?", DIAGNOSIS)
    t.exchange("Fix it", FIX)
    v = _view(env, requests=True, excerpts=3)
    assert session_view.TOO_LITTLE <= len(FIX) < session_view.SUBSTANTIAL
    assert v.stopped is not None and v.stopped.text == FIX
    assert not v.unanswered
    assert (v.first_request.text, v.last_request.text) == ("Why does the server's memory grow?",
                                                           "Fix it")
    # the excerpts are still the seed's "more than 200 characters"
    assert [s.text for s in v.excerpts] == [DIAGNOSIS.strip()]


def test_a_last_reply_that_says_too_little_follows_the_one_before(env):
    t = env.transcript(SID, start=OLD)
    t.exchange("Profile the importer", LONG * 2)
    t.user("Ship it")
    t.tool("Bash", {"command": "git push"}, text="Pushing.")  # narration: skipped
    t.reply("Done.")
    v = _view(env)
    assert v.stopped is not None and len(LONG * 2) > session_view.BEFORE_CHARS
    before = (LONG * 2)[:session_view.BEFORE_CHARS - 1].rstrip() + "…"
    assert v.stopped.text == before + "\n\nDone.", "the reply before, then the last"
    assert v.excerpts == [] and v.requests == [] and v.first_request is None
    assert v.last_request is not None and v.last_request.text == "Ship it"


def test_short_replies_only_stopped_at_the_last_two(env):
    t = env.transcript(SID, start=OLD)
    t.exchange("Profile the importer", "Looking.")
    t.exchange("Ship it", "Done.")
    v = _view(env)
    assert v.stopped is not None and v.stopped.text == "Looking.\n\nDone."


def test_a_subagent_or_a_request_after_the_last_reply_is_not_where_it_stopped(env):
    t = env.transcript(SID, start=OLD)
    t.exchange("Why does the server's memory grow?", DIAGNOSIS)
    t.exchange("Fix it", FIX)
    env.subagent(SID, "a1b2c3d4", start=OLD + 3600).exchange(
        "Check the other emitters", "The subagent checked every other emitter in the code base.")
    t.user("Now write the changelog entry")  # no reply yet
    v = _view(env)
    assert v.stopped is not None and v.stopped.text == FIX
    assert v.last_request is not None and v.last_request.text == "Now write the changelog entry"
    assert v.unanswered


def test_no_reply_at_all(env):
    env.transcript(SID, start=OLD).user("Start the capybara migration")
    v = _view(env)
    assert v.stopped is None and v.unanswered


def test_stopped_line_loses_the_middle_never_the_end():
    text = LONG.strip() + "\n\nDone."
    for limit in (160, 220, 300, 1200):
        line = session_view.stopped_line(text, limit)
        assert len(line) <= limit and line.endswith("Done.") and line.startswith("The importer")
    assert session_view.stopped_line("Done.", 160) == "Done."
    # the end kept starts at a word
    line = session_view.stopped_line("word " * 100 + FIX, 160)
    assert line.endswith(FIX) or line.split(" … ")[1] in FIX
    assert " … " in line and not line.split(" … ")[1].startswith(("ord", "rd"))


def test_every_renderer_says_the_same_place(env):
    """The briefing, the checkpoint, the extract, show and digest all render the view's answer."""
    t = env.transcript(SID, start=OLD)
    t.exchange("Why does the server's memory grow?", DIAGNOSIS)
    t.exchange("Fix it", FIX)
    v = _view(env, paths=True, requests=True, changes=True, excerpts=5, exchanges=10)
    assert f'where it stopped: "{FIX}"' in briefing.render([v], chars=9000)
    assert f"Stopped at: {FIX}" in checkpoints.render(v)
    assert f"## Where it stopped\n\n{FIX}\n" in extract_writer.render(v)
    shown = api.call(str(env.ws), lambda mem: api.show(mem, SID, detail="summary"))
    assert shown["session"]["stopped_at"] == FIX and shown["session"]["unanswered"] is False
    digest = api.call(str(env.ws), lambda mem: api.digest(mem, "30d"))
    d = digest["days"][0]["sessions"][0]
    assert (d["stopped_at"], d["last_request"]) == (FIX, "Fix it")


def test_every_renderer_shows_the_reply_before_a_short_last_one(env):
    t = env.transcript(SID, start=OLD)
    t.exchange("Why does the server's memory grow?", DIAGNOSIS)
    t.exchange("Ship it", "Done.")
    v = _view(env, paths=True, requests=True, changes=True, excerpts=5, exchanges=10)
    for text in (briefing.render([v], chars=9000), checkpoints.render(v),
                 extract_writer.render(v)):
        line = next(ln for ln in text.splitlines() if "The leak is in the WebSocket" in ln
                    and "Done." in ln)
        assert line.index("The leak") < line.index("Done."), line
    shown = api.call(str(env.ws), lambda mem: api.show(mem, SID, detail="summary"))
    assert shown["session"]["stopped_at"] == v.stopped.text
    assert v.stopped.text.startswith("The leak is in") and v.stopped.text.endswith("…\n\nDone.")


def test_the_hooks_api_writes_a_checkpoint_and_briefs(env):
    t = env.transcript(SID, start=OLD)
    t.exchange("Profile the importer", LONG)
    mem = api.open_memory(str(env.ws))
    try:
        assert api.update(mem, lock_timeout=1.0, budget=5.0) is not None
        path = api.checkpoint(mem, SID, "manual")
        assert path and checkpoints.latest(str(env.ws), SID) == path
        assert api.checkpoint(mem, "no-such-session") is None
        assert SID in api.briefing(mem)
        assert api.briefing(mem, exclude_session=SID) == ""
    finally:
        mem.close()
