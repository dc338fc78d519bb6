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
        api.refresh(mem, [])
        store = mem.store()
        row = store.session_by_session_id(SID, "claude-code")
        return session_view.build(store, row, **parts)
    finally:
        mem.close()


def test_where_it_stopped_is_the_last_substantial_reply(env):
    t = env.transcript(SID, start=OLD)
    t.exchange("Profile the importer", LONG)
    t.exchange("Ship it", "Done, and the tests pass on the branch now.")  # over 40, under 200
    v = _view(env, requests=True, excerpts=3)
    assert len(LONG) > session_view.SUBSTANTIAL
    assert v.stopped is not None and v.stopped.text == LONG.strip()
    assert (v.first_request.text, v.last_request.text) == ("Profile the importer", "Ship it")
    assert [s.text for s in v.excerpts] == [LONG.strip()]
    assert [s.text for s in v.requests] == ["Profile the importer", "Ship it"]


def test_with_no_substantial_reply_it_stopped_at_the_last_reply(env):
    t = env.transcript(SID, start=OLD)
    t.exchange("Profile the importer", "Looking.")
    t.exchange("Ship it", "Done.")
    v = _view(env)
    assert v.stopped is not None and v.stopped.text == "Done."
    assert v.excerpts == [] and v.requests == [] and v.first_request is None
    assert v.last_request is not None and v.last_request.text == "Ship it"


def test_every_renderer_says_the_same_place(env):
    """The briefing, the checkpoint, the extract, show and digest all render the view's answer."""
    t = env.transcript(SID, start=OLD)
    t.exchange("Profile the importer", LONG)
    t.exchange("Ship it", "Done.")
    v = _view(env, paths=True, requests=True, changes=True, excerpts=5, exchanges=10)
    one = " ".join(LONG.split())
    assert one[:150] in briefing.render([v], chars=9000)
    assert f"Last substantial reply: {one}" in checkpoints.render(v)
    assert LONG.strip() in extract_writer.render(v)
    shown = api.call(str(env.ws), lambda mem: api.show(mem, SID, detail="summary"))
    assert shown["session"]["last_substantial_reply"] == LONG.strip()
    digest = api.call(str(env.ws), lambda mem: api.digest(mem, "30d"))
    assert digest["days"][0]["sessions"][0]["last_substantial_reply"] == LONG.strip()


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
