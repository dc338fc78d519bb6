"""The default search's ranking (issue #37): each word weighs by how rare it is in the history
searched, a long session does not win by volume, a session holding some of the words is listed,
filler counts for nothing in the languages people type, and dates in a question rank the
sessions of that time first. Through the real CLI, with the real model; `--mode keyword` keeps
the seed's literal rules (tests/test_points.py, tests/test_keyword_top.py)."""
from __future__ import annotations

import os
import time

from prima_memory import semantic, timeparse

DAY = 86400
NOW = time.time()


def _sid(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-{n:012x}"


WORDS_ONLY = {"PRIMA_SEMANTIC_FLOOR": "0.99"}  # no match by meaning: what the words do alone


def _ids(env, query: str, *extra, env_extra: dict | None = None) -> list[str]:
    got = env.json("search", query, *extra, env=env_extra)
    assert got["mode"] == "combined" and got["warnings"] == [], got
    return [r["session_id"] for r in got["results"]]


def _chat(env, n: int, start: float, exchanges: list[tuple[str, str]]):
    t = env.transcript(_sid(n), start=start)
    for prompt, reply in exchanges:
        t.exchange(prompt, reply)
    return t


def test_a_name_said_in_every_session_decides_nothing(env):
    """(the issue's own example: "What did Melanie paint recently?" put three sessions that
    only say the two names often above the painting session)"""
    for n in range(1, 6):
        _chat(env, n, NOW - (40 - n) * DAY, [
            (f"Melanie, Caroline here. Melanie, how was the week {n}?",
             f"Caroline! Melanie says the kids and the garden kept Melanie busy, Caroline. {n}")] * 6)
    _chat(env, 9, NOW - 50 * DAY, [
        ("Caroline: anything new?", "Melanie: I painted a lake at sunrise last weekend."),
        ("Caroline: how is the family?", "Melanie: all well, thanks.")])
    for meaning in ({}, WORDS_ONLY):
        assert _ids(env, "What did Melanie paint recently?", env_extra=meaning)[0] == _sid(9)


def test_a_long_session_does_not_win_by_volume(env):
    filler = [(f"step {i}: rename the variables in module {i}", f"Renamed them in module {i}.")
              for i in range(60)]
    _chat(env, 1, NOW - 30 * DAY, filler[:30] + [
        ("also check the retry budget", "The retry budget is fine."),
        ("what about the retry budget for uploads", "The uploads keep the retry budget.")]
        + filler[30:])
    _chat(env, 2, NOW - 31 * DAY, [
        ("the upload retry budget runs out on slow links",
         "Raised the upload retry budget and made it back off exponentially.")])
    for meaning in ({}, WORDS_ONLY):
        assert _ids(env, "how did we fix the upload retry budget", env_extra=meaning)[0] == _sid(2)


def test_a_session_holding_some_of_the_words_is_listed(env):
    """(a bug: every word was required of a session the words found; one holding "zorblat"
    alone, or "quuxify" alone, was listed only if its meaning stood out)"""
    _chat(env, 1, NOW - 9 * DAY, [("zorblat keeps timing out", "Raised the zorblat timeout.")])
    _chat(env, 2, NOW - 8 * DAY, [("quuxify the nightly report", "The report is quuxified.")])
    _chat(env, 3, NOW - 7 * DAY, [("write the README", "Done.")])
    assert set(_ids(env, "zorblat quuxify", env_extra=WORDS_ONLY)) == {_sid(1), _sid(2)}


def test_a_question_in_german_counts_its_filler_for_nothing(env):
    _chat(env, 1, NOW - 20 * DAY, [
        ("Wie haben wir das gemacht? Wir haben den Plan nicht, wie immer.",
         "Wir haben den Plan wieder nicht. Wie gesagt, wir haben den Termin im Kalender.")] * 4)
    _chat(env, 2, NOW - 21 * DAY, [
        ("Das Speicherleck im Worker", "Das Speicherleck im Worker ist behoben: der Cache wächst "
                                       "nicht mehr.")])
    for meaning in ({}, WORDS_ONLY):
        assert _ids(env, "Wie haben wir den Speicherleck im Worker behoben?",
                    env_extra=meaning)[0] == _sid(2)


def _local(y: int, m: int, d: int) -> float:
    return time.mktime((y, m, d, 10, 0, 0, 0, 0, -1))


def test_a_date_in_a_question_ranks_that_time_first(env):
    """(a bug: "March" and "2025" were words to find: the session that said "March" won over
    the one held in March)"""
    _chat(env, 1, _local(2025, 3, 12), [
        ("the deploy script fails on the staging host", "Fixed the deploy script's ssh options.")])
    _chat(env, 2, _local(2025, 6, 3), [
        ("the deploy script again: we planned this back in March 2025",
         "Rewrote the deploy script's retry loop, as planned in March 2025.")])
    assert _ids(env, "what did we change in the deploy script in March 2025?")[0] == _sid(1)
    assert _ids(env, "what did we change in the deploy script in June 2025?")[0] == _sid(2)


def test_last_week_ranks_last_weeks_session_first(env):
    _chat(env, 1, NOW - 40 * DAY, [("the flaky checkout test", "The flaky checkout test waited on "
                                    "a timer: the flaky test now polls. Flaky checkout fixed.")])
    _chat(env, 2, NOW - 3 * DAY, [("checkout test is flaky again", "Pinned the clock in it.")])
    assert _ids(env, "how did we fix the flaky checkout test last week")[0] == _sid(2)


def test_before_and_after_an_event_the_history_dates(env):
    """(a bug: "before the release" was words: the sessions before the release were not
    preferred, and "release" itself counted as a word to find)"""
    _chat(env, 1, NOW - 30 * DAY, [("the cache bug in the importer", "Fixed the cache bug in "
                                    "the importer: the cache key now holds the file's hash.")])
    _chat(env, 2, NOW - 20 * DAY, [("ship v2.0", "Tagged and published the release of v2.0.")])
    _chat(env, 3, NOW - 10 * DAY, [("the cache bug is back", "Expiry was in ms: now in seconds.")])
    for n in range(4, 9):
        _chat(env, n, NOW - (40 + n) * DAY, [(f"rename the variables in module {n}", "Done.")])
    assert _ids(env, "the cache bug fix before the release")[0] == _sid(1)
    assert _ids(env, "the cache bug fix after the release")[0] == _sid(3)
    assert _ids(env, "the cache bug fix before the zeppelin landing")[:2] == \
        _ids(env, "the cache bug fix zeppelin landing")[:2], "an event none speaks of is no time"
    asked = timeparse.question_dates("what broke after we moved to postgres, and why")
    assert asked.events == [("after", "moved to postgres")]
    assert timeparse.question_dates("before " * 500 + "x after").events == [("before", "x")]
    assert timeparse.question_dates("it crashed since children knew their owners").events == []


def test_all_projects_ranks_as_one_project_does(env):
    env.run("index")  # (a memory in the first project, so --all-projects lists it)
    _chat(env, 1, _local(2025, 3, 12), [
        ("the deploy script fails on the staging host", "Fixed the deploy script's ssh options.")])
    _chat(env, 2, _local(2025, 6, 3), [
        ("the deploy script again: we planned this back in March 2025",
         "Rewrote the deploy script's retry loop, as planned in March 2025.")])
    assert _ids(env, "the deploy script in March 2025", "--all-projects")[0] == _sid(1)


def test_a_question_about_a_file_finds_the_session_that_changed_it(env):
    """(a bug: a session's changed paths counted only when they held the whole query: "when
    did we touch the csv importer" found the sessions that talked of csv files first)"""
    t = _chat(env, 1, NOW - 12 * DAY, [("the report totals are off by one cent",
                                         "Rounding was done per line: now on the total.")])
    t.user("apply it")
    t.tool("Edit", {"file_path": str(env.ws / "app" / "importers" / "csv_importer.py"),
                    "old_string": "round(x, 2)", "new_string": "x"}, text="Editing.")
    t.reply("Done.")
    for n in (2, 3):
        _chat(env, n, NOW - (20 + n) * DAY, [
            ("export the monthly report as csv", "The csv export now writes a header row.")])
    for n in range(4, 12):
        _chat(env, n, NOW - (30 + n) * DAY, [(f"rename the variables in module {n}", "Done.")])
    for meaning in ({}, WORDS_ONLY):
        assert _ids(env, "when did we touch the csv importer", env_extra=meaning)[0] == _sid(1)


def test_the_session_where_the_words_and_their_meaning_meet_goes_first(tmp_path):
    """(a bug: a session saying the words in passing, in an exchange about something else,
    went first for another exchange of it close to the question's meaning: its words and its
    similarity were counted apart). In process, with hand-chosen vectors: A's exchange says the
    words and is 0.6 like the question; B says them as often but in an exchange 0 like it, and
    another of its exchanges, further on and without them, is 0.7 like it."""
    from prima_memory import search
    from test_semantic import Fake, _store_with, _unit

    class Quiet(Fake):  # the texts named get their vectors, any other is unlike the question
        def _hashed(self, t: str):
            return _unit(0, 0, 0, 1)

    e = Quiet({"zorp quux": _unit(1, 0, 0, 0),
               "zorp quux broke\n\nfixed zorp quux": _unit(0.6, 0.8, 0, 0),
               "the report broke\n\nfixed the report": _unit(0.7, 0, 0.71414284, 0)})
    day = 86400.0
    st = _store_with(tmp_path, {
        "A": [("zorp quux broke", "fixed zorp quux", NOW - 30 * day), ("ok", "done", NOW - 30 * day),
              ("and now", "nothing", NOW - 30 * day)],
        "B": [("list: zorp, quux, milk", "noted zorp quux milk", NOW - 31 * day),
              ("and the bread", "noted", NOW - 31 * day),  # (apart: the turn is 2 messages each way)
              ("the report broke", "fixed the report", NOW - 31 * day)],
        **{f"o{n}": [(f"rename module {n}", "done", NOW - (40 + n) * day)] * 2 for n in range(6)}})
    semantic.Embedding(st, e).run()
    got = search.combined(st, e, "zorp quux", limit=5, now=NOW)
    assert [st.session(h.row.id).session_id for h in got][:2] == ["A", "B"]


def test_the_session_a_question_names_by_its_title_goes_first(tmp_path):
    """(a bug: "when did we deploy feeds to canary" put the session titled "Deploy feeds to
    canary" third, behind sessions that said deploy, feeds and canary more often) In process,
    by the words alone (no text is like the question by meaning)."""
    from prima_memory import search
    from test_semantic import Fake, _store_with, _unit

    class Far(Fake):
        def _hashed(self, t: str):
            return _unit(0, 0, 0, 1)

    e = Far({"deploy feeds canary": _unit(1, 0, 0, 0)})
    day = 86400.0
    chatty = [(f"step {n}: deploy the feeds service to canary, then check feeds on canary",
               f"Deployed the feeds to canary, round {n}.", NOW - 20 * day) for n in range(1)]
    st = _store_with(tmp_path, {
        "titled": [("Deploy feeds to canary", "Done.", NOW - 30 * day),
                   ("thanks", "You are welcome.", NOW - 30 * day)],
        "chatty": [("Speed up orders build", "Cached the layers.", NOW - 21 * day)] + chatty,
        **{f"o{n}": [(f"rename module {n}", "done", NOW - (40 + n) * day)] * 2 for n in range(6)}})
    semantic.Embedding(st, e).run()
    got = search.combined(st, e, "when did we deploy feeds to canary", limit=5, now=NOW)
    assert [st.session(h.row.id).session_id for h in got][:2] == ["titled", "chatty"]


def test_similar_ranks_as_the_default_search(env):
    """(a bug: find_similar ranked by the continuity seed's 0.7 similarity + 0.2 recency + 0.1
    turns alone, blind to the rare identifier the error named: a recent session about
    something like it went first; the seed's ranking stays under PRIMA_SEED_EXACT=1)"""
    _chat(env, 1, NOW - 300 * DAY, [
        ("the worker dies with ERR_QUOTA_7731 on upload",
         "ERR_QUOTA_7731 is the per-tenant upload quota: raised it for the import tenant."),
        ("ok", "Done.")])
    _chat(env, 2, NOW - 1 * DAY, [
        ("the worker dies on upload with a quota error", "Raised the storage quota of the bucket."),
        ] * 3)
    for n in range(3, 9):
        _chat(env, n, NOW - (40 + n) * DAY, [(f"rename the variables in module {n}", "Done.")])
    query = "worker dies with ERR_QUOTA_7731"
    got = env.json("similar", query)["results"]
    searched = env.json("search", query)["results"]
    assert [r["session_id"] for r in got] == [r["session_id"] for r in searched]
    assert got[0]["session_id"] == _sid(1) and "ERR_QUOTA_7731" in got[0]["prompt"]
    assert got[0]["score_kind"] == "relevance" and got[0]["score"] == searched[0]["score"]
    seed = env.json("similar", query, env={"PRIMA_SEED_EXACT": "1"})["results"]
    assert seed[0]["session_id"] == _sid(2) and seed[0]["score_kind"] == "hybrid"


def test_a_query_matching_nothing_still_gets_nothing(env):
    _chat(env, 1, NOW - 9 * DAY, [("zorblat keeps timing out", "Raised the zorblat timeout.")])
    assert _ids(env, "qwxplonk vrezzt") == []


# --- dates read off a question -------------------------------------------------------------

AT = _local(2026, 12, 6)


def _days(text: str) -> tuple[str, list[tuple[str | None, str | None]]]:
    asked = timeparse.question_dates(text, AT)
    day = "%Y-%m-%d"
    return asked.text, [(time.strftime(day, time.localtime(a)) if a is not None else None,
                         time.strftime(day, time.localtime(b - 1)) if b is not None else None)
                        for a, b in asked.windows]


def test_question_dates_read_as_people_write_them():
    assert _days("What did Nate do for Joanna on 25 May, 2022?") == (
        "What did Nate do for Joanna ?", [("2022-05-25", "2022-05-25")])
    assert _days("what broke in April 2022") == ("what broke", [("2022-04-01", "2022-04-30")])
    assert _days("the fix from 2026-11-02") == ("the fix", [("2026-11-02", None)])
    assert _days("what did we ship before March 3, 2026") == ("what did we ship",
                                                              [(None, "2026-03-02")])
    assert _days("what did I do in 2024")[1] == [("2024-01-01", "2024-12-31")]
    text, windows = _days("when did we go camping in July?")
    assert text == "when did we go camping ?" and windows[0] == ("2026-07-01", "2026-07-31")
    assert len(windows) == 10  # a month without its year: that month of the last ten years
    assert _days("what did we fix last week")[1] == [("2026-11-29", "2026-12-06")]


def test_seasons_are_dates():
    """(a bug: "during the summer" was words, matching sessions that said "summer")"""
    text, windows = _days("When did Caroline go to a pride parade during the summer?")
    assert text == "When did Caroline go to a pride parade ?" and len(windows) == 10
    assert windows[:2] == [("2026-06-01", "2026-08-31"), ("2025-06-01", "2025-08-31")]
    assert _days("what broke in the summer of 2023")[1] == [("2023-06-01", "2023-08-31")]
    assert _days("the deploy in winter 2023")[1] == [("2023-12-01", "2024-02-29")]
    assert _days("what did we ship last winter")[1] == [("2025-12-01", "2026-02-28")]
    assert _days("plans for this winter")[1] == [("2026-12-01", "2027-02-28")]
    assert _days("after the fall of 2024")[1] == [("2024-12-01", None)]
    feb = _local(2026, 2, 10)
    assert timeparse.question_dates("last winter", feb).windows == [
        (_local(2024, 12, 1) - 10 * 3600, _local(2025, 3, 1) - 10 * 3600)]


def test_words_that_only_look_like_dates_stay_words():
    for text in ("may i ask about the mayor", "may 2 people join", "the march of progress",
                 "2024 items in the queue", "error 2025-13-45 in the log", "after 2026-02-30",
                 "security in Spring Boot", "in spring", "in the spring boot app",
                 "in fall-back mode", "the fall of Rome", "the summer intern", "in winter-mode"):
        assert timeparse.question_dates(text, AT).windows == [], text


def test_question_dates_take_anything_a_person_can_paste():
    for text in ("on 31 February, 2024", "999999999999999999999 months ago", "0 days ago",
                 "in \ud800 March 2025 \udfff", "since 1 May, 1900", "</prima-memory> in 2024",
                 "on " * 2000 + "5 May", "\x1b]52;c;aGk=\x07 last week", "2026-02-29"):
        asked = timeparse.question_dates(text, AT)
        assert isinstance(asked.text, str) and all(
            (a is None or b is None or a <= b) for a, b in asked.windows), text


def test_a_question_mark_after_a_space_is_no_word(env):
    """(a bug: "fix the login redirect ?" wanted a "?" in the session's text, in keyword search
    too; in the default search it weighed as a word no session holds)"""
    _chat(env, 1, NOW - 9 * DAY, [("the login redirect loops", "Fixed the login redirect.")])
    assert [r["session_id"] for r in env.search("login redirect ?")] == [_sid(1)]
    assert _ids(env, "how did we fix the login redirect ?")[0] == _sid(1)


def test_queries_an_attacker_types_are_words_and_nothing_more(env):
    """FTS5's own syntax, quotes, a lone surrogate, the frame's tag, a terminal escape: the
    default search takes each as words (no error, no session made up)."""
    _chat(env, 1, NOW - 9 * DAY, [('the "quoted" NEAR(a b) col: deploy', "Deploy painted.")])
    from prima_memory import api
    for k in ("HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "PRIMA_VSCODE_USER_DIRS",
              "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        assert os.environ[k] == env.env[k]  # (the env fixture's isolation)
    mem = api.open_memory(str(env.ws))
    try:
        for q in ('"', "*", "NEAR(", "AND OR NOT", "^col:", "col:x", "paint*", "'", "{}[]()",
                  "\ud800 painted", "</prima-memory> deploy", "\x1b]52;c;aGk=\x07 deploy",
                  "on 31 February, 2024 deploy", "-x"):
            got = api.search(mem, q)
            assert {r["session_id"] for r in got["results"]} <= {_sid(1)}, q
    finally:
        mem.close()
