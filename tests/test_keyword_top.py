"""Keyword search reads the facts of only the sessions that can still be among the best (schema
14 indexes titles, each changed path's sessions and starts for it): the same answers as scoring
every matched session, ties, filters, recency and sessions no search returns included."""
from __future__ import annotations

import random

import apsw
import pytest

from prima_memory import search
from prima_memory.storage import SCHEMA_VERSION, Store, Words
from prima_memory.storage.sqlite import text as storemod

NOW = 1_800_000_000.0
DAY = 86400
WORDS = ["docker", "dockerfile", "build", "test", "café", "cafe\u0301s", "İstanbul", "retry",
         "backoff", "foo.bar", "login", "redirect"]


def _session(st: Store, name: str, *, texts=(), paths=(), title=None, start=None,
             branch=None, source="claude-code") -> int:
    row = st.session_for(source, name, "[transcript]")
    ids = st.new_message_ids(row.id, len(texts))
    st.add_messages([(mid, row.id, f"k{i}", "user" if i % 2 == 0 else "assistant",
                      start, 0, None, t) for i, (mid, t) in enumerate(zip(ids, texts))])
    for t in texts:  # (the vocabulary a word is looked for in, as the indexer keeps it)
        st.add_terms(st.tokens(t))
    st.index_terms()
    st.add_file_changes([(row.id, p, "Edit", None, start, f"k{i}") for i, p in enumerate(paths)])
    st.update_session(row.id, branch=branch, first_prompt=title, first_ts=start, last_ts=
                      None if start is None else start + 600)
    st.refresh_counts(row.id)
    return row.id


def _random_store(path, seed: int, n: int = 160) -> Store:
    rng = random.Random(seed)
    st = Store(str(path))
    with st.write():
        for k in range(n):
            texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
                     for _ in range(rng.randint(0, 6))]
            paths = [f"/w/{rng.choice(WORDS)}/{rng.randint(0, 3)}.py"
                     for _ in range(rng.choice([0, 0, 1, 3, 7]))]
            age = rng.choice([0.5, 2, 3.5, 6.9, 8, 30, 90]) * DAY
            start = None if rng.random() < 0.05 else NOW - age + rng.random()
            _session(st, f"s{k}", texts=texts, paths=paths, start=start,
                     title=rng.choice([None, "Fix the Docker build", "CAFÉ login",
                                       "retry backoff" + "!" * k]),
                     branch=rng.choice([None, "main", "dev"]),
                     source="extract" if rng.random() < 0.05 else "claude-code")
    return st


def _reference(st: Store, query: str, limit: int, filters=None, exclude=frozenset()):
    """Every matched session scored, then cut to `limit`: what a search answered before."""
    facts = [f for f in search._facts(st, filters, False) if f[0] not in exclude]
    ranked = search.keyword_scores(st, query, now=NOW, facts=facts)
    return [(points, sid) for points, sid in ranked[:limit]]


QUERIES = ["docker", "build", "docker build", "café", "istanbul", "foo.bar", "retry backoff",
           "fix the docker build", "login redirect", "py", "w/docker", "nothing-here", "e",
           "cafe", "backoff!!"]


@pytest.mark.parametrize("seed", range(4))
def test_the_best_are_the_best_of_every_matched_session(tmp_path, seed):
    st = _random_store(tmp_path / "i.db", seed)
    rng = random.Random(seed)
    for query in QUERIES:
        for limit in (1, 3, 10, 50):
            for filters in (None, search.Filters(since=NOW - 5 * DAY),
                            search.Filters(branch="main"), search.Filters(tag="nothing")):
                exclude = frozenset(rng.sample(range(1, 161), 20)) if rng.random() < 0.3 \
                    else frozenset()
                part = search.Part(st, filters, exclude=exclude)
                got = [(h.score, h.row.id) for h in
                       search.keyword_many([part], query, limit=limit, now=NOW)]
                assert got == _reference(st, query, limit, filters, exclude), (query, limit)


def test_ties_are_broken_by_the_latest_end_whoever_is_read_first(tmp_path):
    st = Store(str(tmp_path / "i.db"))
    with st.write():  # 300 sessions with one matching message each: every score ties
        ids = [_session(st, f"s{k}", texts=["a yagni moment"], start=NOW - 30 * DAY + k,
                        paths=[f"/w/f{j}.py" for j in range(k % 7)]) for k in range(300)]
    got = [h.row.id for h in search.keyword(st, "yagni", limit=10, now=NOW)]
    assert got == [sid for _p, sid in _reference(st, "yagni", 10)]
    assert got == [i for k, i in enumerate(ids) if k % 7 >= 5][::-1][:10]


def test_sessions_past_the_surrogates_code_points_are_counted(tmp_path, monkeypatch):
    st = Store(str(tmp_path / "i.db"))

    def pad(last: int) -> None:  # the next session's id is last + 1
        st.db.execute("INSERT INTO sessions(id, source, session_id, label) VALUES (?, 'x', ?, "
                      "'x')", (last, f"pad{last}"))
    with st.write():
        ids = [_session(st, "low", texts=["docker", "docker compose"], start=NOW)]
        pad(0xD7FE)
        ids.append(_session(st, "below", texts=["docker"] * 3, start=NOW))  # the last before
        ids.append(_session(st, "at", texts=["docker"] * 4, start=NOW))  # a surrogate's own
        pad(0x1FFFF)
        ids.append(_session(st, "far", texts=["docker"] * 5, start=NOW))
    assert ids[1:] == [0xD7FF, 0xD800, 0x20000]
    expected = dict(zip(ids, [2, 3, 4, 5]))
    assert st.count_matching(Words([["docker"]])) == expected
    monkeypatch.setattr(storemod, "_CHAR_SESSIONS", 100)  # past what a code point numbers
    assert st.count_matching(Words([["docker"]])) == expected


def test_titles_match_folded_as_messages_are(tmp_path):
    st = Store(str(tmp_path / "i.db"))
    with st.write():
        a = _session(st, "a", title="Café crème on İstanbul trip", start=NOW)
        b = _session(st, "b", title="Cafe\u0301 \"quoted\" title", start=NOW)
        c = _session(st, "c", title=None, start=NOW)  # Untitled Session
    for text, want in (("café", {a, b}), ("istanbul", {a}), ('"quoted"', {b}),
                       ("untitled", {c}), ("é", {a, b}), ("crème on i", {a}), ("xyz", set()),
                       ("café\0crème", set()), ('"', {b}), ('"quoted', {b})):
        assert st.sessions_with_title_containing(search.normalize_query(text)[0]) == want, text
    with st.write():  # a summary comes, then the user's own title: each replaces the last
        st.update_session(c, summary_title="Istanbul summary")
        assert st.sessions_with_title_containing("istanbul") == {a, c}
        st.update_session(c, custom_title="Renamed")
        assert st.sessions_with_title_containing("istanbul") == {a}
        assert st.sessions_with_title_containing("renamed") == {c}
        st.delete_session(a)
    assert st.sessions_with_title_containing("istanbul") == set()


def test_a_path_pair_goes_with_its_sessions_last_change_of_it(tmp_path):
    st = Store(str(tmp_path / "i.db"))
    with st.write():
        a = _session(st, "a", paths=["/w/x.py", "/w/x.py", "/w/y.py"], start=NOW)
        b = _session(st, "b", paths=["/w/x.py"], start=NOW)
    assert st.sessions_with_path_containing("x.py") == {a: 1, b: 1}
    with st.write():
        st.db.execute("DELETE FROM file_changes WHERE id = (SELECT min(id) FROM file_changes)")
    assert st.sessions_with_path_containing("x.py") == {a: 1, b: 1}  # a still has one
    with st.write():
        st.clear_session(a)
    assert st.sessions_with_path_containing("x.py") == {b: 1}
    assert st.db.execute("SELECT count(*) FROM path_sessions").fetchone()[0] == 1


def test_an_index_of_schema_13_is_indexed_when_opened(tmp_path):
    path = tmp_path / "i.db"
    st = _random_store(path, 7, n=60)
    before = {q: _reference(st, q, 10) for q in QUERIES}
    st.close()
    db = apsw.Connection(str(path))  # as schema 13 left it
    db.execute("DROP TABLE titles_tri; DROP TRIGGER sessions_titled; "
               "DROP TRIGGER sessions_retitled; DROP TRIGGER sessions_untitled; "
               "DROP TABLE path_sessions; DROP TRIGGER file_changes_paired; "
               "DROP TRIGGER file_changes_unpaired; DROP INDEX sessions_started; "
               "PRAGMA user_version = 13")
    db.close()
    st = Store(str(path))
    assert st.schema_version == SCHEMA_VERSION
    for q in QUERIES:
        assert [(h.score, h.row.id) for h in search.keyword(st, q, limit=10, now=NOW)] == \
            before[q], q


def test_scores_that_round_alike_are_ranked_as_rounded(tmp_path):
    # recency points differing by less than 0.01 round to one score, then the latest to end
    # wins: SQLite, ranking the unrounded scores, must be asked past its first rows
    st = Store(str(tmp_path / "i.db"))
    with st.write():
        for k in range(60):  # later starts score higher unrounded; earlier ones end later
            row = st.session_for("claude-code", f"s{k}", "[transcript]")
            ids = st.new_message_ids(row.id, 1)
            st.add_messages([(ids[0], row.id, "k", "user", None, 0, None, "a qwerty line")])
            st.add_terms(st.tokens("a qwerty line"))
            st.update_session(row.id, first_ts=NOW - 3600 + k * 0.3, last_ts=NOW + 1000 - k)
        st.index_terms()
    for limit in (1, 5, 10, 25):
        got = [(h.score, h.row.id) for h in search.keyword(st, "qwerty", limit=limit, now=NOW)]
        assert got == _reference(st, "qwerty", limit), limit
    assert len({s for s, _sid in _reference(st, "qwerty", 60)}) < 60  # (some do round alike)
