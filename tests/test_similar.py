"""find_similar and its SIMILAR_TO edges, in-process against hand-chosen vectors: the ranking's
formula on hand-computed cases, and edges kept incrementally that equal edges from scratch."""
from __future__ import annotations

import time

import numpy as np
import pytest

from prima_memory import semantic
from prima_memory.storage.sqlite import vectors as store_mod
from prima_memory.storage.shared import SHIFT
from prima_memory.storage import Store

from test_semantic import KEY, Fake, _store_with, _unit

FAR = _unit(0, 0, 0, 1)  # orthogonal to every query here: an exchange that never matches


class Quiet(Fake):
    """The texts the test names get their vectors; every other text is FAR."""

    def _hashed(self, t: str):
        return FAR

DAY = 86400.0
NOW = 1_800_000_000.0


def _session_of(st: Store, exchange: int) -> str:
    return st.session(exchange >> SHIFT).session_id


def test_the_ranking_formula_on_hand_computed_cases(tmp_path):
    assert semantic.recency(NOW, NOW) == 1.0
    assert semantic.recency(NOW - 73 * DAY, NOW) == pytest.approx(0.8)
    assert semantic.recency(NOW - 365 * DAY, NOW) == 0.0
    assert semantic.recency(NOW - 800 * DAY, NOW) == 0.0, "zero past a year, never negative"
    assert semantic.recency(None, NOW) == 0.0
    assert semantic.score(0.9, 0.8, 25) == pytest.approx(0.7 * 0.9 + 0.2 * 0.8 + 0.1 * 0.5)
    assert semantic.score(0.5, 0.0, 500) == pytest.approx(0.35 + 0.1), "depth is capped at 1"

    # A: very similar, a year old, 1 turn; B: less similar, today, 50 turns; C: between.
    e = Quiet({"q": _unit(1, 0, 0, 0),
               "a0\n\nold and close": _unit(0.95, 0.312249900, 0, 0),
              "b\n\nnew and deep": _unit(0.6, 0.8, 0, 0),
              "c\n\nmiddle": _unit(0.8, 0.6, 0, 0)})
    st = _store_with(tmp_path, {
        "A": [("a0", "old and close", NOW - 400 * DAY)],
        "B": [(f"b{i}" if i else "b", f"r{i}" if i else "new and deep", NOW - 60 * (50 - i))
              for i in range(50)],
        "C": [("c", "middle", NOW - 182.5 * DAY)] + [(f"c{i}", f"s{i}", NOW - 182 * DAY + i)
                                                     for i in range(1, 10)]})
    semantic.Embedding(st, e).run()
    got = semantic.similar(st, e, "q", limit=10, floor=0.5, now=NOW)
    scores = {_session_of(st, m.exchange): (round(m.similarity, 4), round(m.recency, 4), m.turns,
                                            round(m.score, 4)) for m in got}
    # the exchange ts is its reply's (the prompt's + 1 s)
    rb = 1 - (60 * 50 - 1) / (365 * DAY)
    rc = 1 - (182.5 * DAY - 1) / (365 * DAY)
    assert scores == {
        "A": (0.95, 0.0, 1, round(0.7 * 0.95 + 0 + 0.1 * 1 / 50, 4)),
        "B": (0.6, round(rb, 4), 50, round(0.7 * 0.6 + 0.2 * rb + 0.1, 4)),
        "C": (0.8, round(rc, 4), 10, round(0.7 * 0.8 + 0.2 * rc + 0.1 * 10 / 50, 4)),
    }
    # B 0.42 + 0.2 + 0.1 = 0.72 > C 0.56 + 0.1 + 0.02 = 0.68 > A 0.665 + 0 + 0.002 = 0.667:
    # the most similar comes last, being old and short
    assert [_session_of(st, m.exchange) for m in got] == ["B", "C", "A"], "by the score"
    assert all(m.score >= n.score for m, n in zip(got, got[1:]))
    best = got[0].exchange
    assert st.exchange_texts([best])[best] == ("b", "new and deep"), "a session's best exchange"
    # limit 1: turns can still decide, so every candidate within 0.1 is weighed
    assert [_session_of(st, m.exchange) for m in
            semantic.similar(st, e, "q", limit=1, floor=0.5, now=NOW)] == ["B"]
    assert semantic.similar(st, e, "q", limit=10, floor=0.9, now=NOW)[0].exchange >> SHIFT == \
        st.session_by_session_id("A", "claude-code").id


def test_turns_decide_only_within_their_weight(tmp_path):
    """Two sessions equal but for depth: the deeper wins by 0.1 x depth, exactly."""
    e = Quiet({"q": _unit(1, 0, 0, 0), "x\n\nshallow": _unit(0.7, 0.714142843, 0, 0),
              "y\n\ndeep": _unit(0.7, 0.714142843, 0, 0)})
    st = _store_with(tmp_path, {"S": [("x", "shallow", NOW - DAY)],
                                "D": [("y", "deep", NOW - DAY)] +
                                     [(f"p{i}", f"q{i}", NOW - DAY - 10 * i) for i in range(1, 25)]})
    semantic.Embedding(st, e).run()
    got = semantic.similar(st, e, "q", limit=1, floor=0.2, now=NOW)
    assert _session_of(st, got[0].exchange) == "D" and got[0].turns == 25
    s, d = sorted(semantic.similar(st, e, "q", limit=5, floor=0.6, now=NOW), key=lambda m: m.turns)
    assert d.score - s.score == pytest.approx(0.1 * (25 - 1) / 50, abs=1e-6)


def _random_store(tmp_path, name: str, sessions: int, seed: int):
    """Sessions whose exchanges cluster round a few directions: many pairs over 0.85."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(4, 8))
    vectors, layout = {}, {}
    for s in range(sessions):
        ex = []
        for k in range(3):
            v = centres[rng.integers(4)] + rng.normal(scale=0.25, size=8)
            prompt, reply = f"p{s}-{k}", f"r{s}-{k}"
            vectors[f"{prompt}\n\n{reply}"] = list(v)
            ex.append((prompt, reply, NOW - DAY * (sessions - s) + k))
        layout[f"S{s:02d}"] = ex
    (tmp_path / name).mkdir()
    return _store_with(tmp_path / name, layout), vectors, layout


def _rows(st: Store) -> dict[tuple[tuple, tuple], float]:
    """The rows of `similar` by the texts they join (ids differ between stores), cosine rounded."""
    texts = {}
    out = {}
    for a, b, cos in st.db.execute("SELECT a, b, cosine FROM similar WHERE model = ?", (KEY,)):
        for x in (a, b):
            if x not in texts:
                texts[x] = st.exchange_texts([x])[x]
        out[tuple(sorted((texts[a], texts[b])))] = round(cos, 5)
    return out


def _edges(st: Store) -> dict[tuple, list[tuple]]:
    """Each exchange's edges (store.edges), by texts, the most similar first."""
    ids = [x for x, _h in st.embedded_hashes(KEY).items()]
    text = {x: st.exchange_texts([x])[x] for x in ids}
    return {text[x]: [text[y] for y, _c in st.edges(KEY, x)] for x in ids}


def _brute(layout, vectors, k):
    """From scratch by brute force: each exchange's k nearest of another session and another
    text at cosine >= EDGE; the rows (pairs among the nearest of either end) and each exchange's
    edges (pairs among the nearest of both)."""
    vecs = {t: np.asarray(v) / np.linalg.norm(v) for t, v in vectors.items()}
    where = {(p, r): s for s, ex in layout.items() for p, r, _ in ex}
    near = {}
    for e1, s1 in where.items():
        t1 = f"{e1[0]}\n\n{e1[1]}"
        cands = []
        for e2, s2 in where.items():
            t2 = f"{e2[0]}\n\n{e2[1]}"
            c = float(vecs[t1] @ vecs[t2])
            if s1 != s2 and t1 != t2 and c >= semantic.EDGE:
                cands.append((-c, e2))
        near[e1] = {e: -c for c, e in sorted(cands)[:k]}
    rows = {tuple(sorted((e1, e2))): round(c, 5) for e1, n in near.items() for e2, c in n.items()}
    edges = {e1: [e2 for e2 in n if e1 in near[e2]] for e1, n in near.items()}
    return rows, edges


def _arrive(st: Store, layout, names) -> None:
    with st.write():
        for name in names:
            row = st.session_for("claude-code", name, "[transcript]")
            ids = iter(st.new_message_ids(row.id, 2 * len(layout[name])))
            rows = []
            for prompt, reply, ts in layout[name]:
                u, a = next(ids), next(ids)
                rows += [(u, row.id, f"u{u}", "user", ts, 0, None, prompt),
                         (a, row.id, f"a{a}", "assistant", ts + 1, 0, u, reply)]
            st.add_messages(rows)


def _same(got: dict, want: dict) -> bool:
    return got.keys() == want.keys() and all(abs(got[k] - want[k]) < 1e-4 for k in want)


def test_edges_after_incremental_updates_equal_edges_from_scratch(tmp_path, monkeypatch):
    monkeypatch.setattr(semantic, "EDGE_BLOCK", 4)  # several blocks per update
    monkeypatch.setattr(store_mod, "EDGE_K", 3)  # the bound bites: most have more pairs
    full, vectors, layout = _random_store(tmp_path, "full", 24, seed=3)
    e = Fake(vectors, dim=8)
    semantic.Embedding(full, e).run()
    assert semantic.link(full, KEY, 8) == (72, 0)
    rows, edges = _brute(layout, vectors, 3)
    assert len(rows) > 20 and sum(map(len, edges.values())) > 20, "the test needs edges"
    assert all(c >= semantic.EDGE for c in rows.values())
    assert _same(_rows(full), rows), "linked at once: the brute force's rows"
    assert _edges(full) == edges
    assert max(map(len, edges.values())) == 3

    # the same history, arriving a few sessions at a time, linked after each arrival
    inc = Store(str(tmp_path / "inc.db"))
    names = sorted(layout)
    for start in range(0, len(names), 5):
        _arrive(inc, layout, names[start:start + 5])
        semantic.Embedding(inc, e).run()
        linked, left = semantic.link(inc, KEY, 8)
        assert (linked, left) == (3 * len(names[start:start + 5]), 0), "only the new ones"
        assert all(len(v) <= 3 for v in _edges(inc).values()), "the bound holds at every step"
    assert _same(_rows(inc), rows), "float32 products, blocked apart"
    assert _edges(inc) == edges
    assert inc.count_edges(KEY) == full.count_edges(KEY) == sum(map(len, edges.values())) // 2
    assert semantic.link(inc, KEY, 8) == (0, 0), "nothing left to do"


def test_an_old_exchange_keeps_its_strongest_when_a_new_one_comes(tmp_path, monkeypatch):
    """Y has two edges (k = 2); a stronger neighbour comes: Y keeps the two strongest, and the
    weakest, no longer among Y's nearest, is no edge of either end."""
    monkeypatch.setattr(store_mod, "EDGE_K", 2)
    layout = {"Y": [("y", "hub", NOW)], "A": [("a", "weak", NOW)], "B": [("b", "mid", NOW)],
              "C": [("c", "strong", NOW)]}
    vectors = {"y\n\nhub": _unit(1, 0, 0, 0), "a\n\nweak": _unit(0.90, 0, 0.435889894, 0),
               "b\n\nmid": _unit(0.92, 0, 0, 0.391918359),
               "c\n\nstrong": _unit(0.97, 0.243104916, 0, 0)}
    e = Fake(vectors)
    st = Store(str(tmp_path / "index.db"))
    _arrive(st, layout, ["Y", "A", "B"])
    semantic.Embedding(st, e).run()
    semantic.link(st, KEY, 4)
    assert _edges(st)[("y", "hub")] == [("b", "mid"), ("a", "weak")]
    _arrive(st, layout, ["C"])
    semantic.Embedding(st, e).run()
    assert semantic.link(st, KEY, 4) == (1, 0)
    got = _edges(st)
    assert got[("y", "hub")] == [("c", "strong"), ("b", "mid")], "the weakest let go"
    assert got[("a", "weak")] == [], "both ends: A's edge went with it"
    assert max(map(len, got.values())) <= 2
    assert _same(_rows(st), _brute(layout, vectors, 2)[0])


def test_copies_of_one_text_are_never_joined(tmp_path):
    """The same exchange in two sessions (a fork's copy, a repeated text): no edge between the
    copies, though their cosine is 1; a third, near but not the same, joins both."""
    same, near = _unit(1, 0, 0, 0), _unit(0.95, 0.312249900, 0, 0)
    e = Fake({"p\n\nsame reply": same, "q\n\nalmost": near})
    st = _store_with(tmp_path, {"A": [("p", "same reply", NOW)], "B": [("p", "same reply", NOW)],
                                "C": [("q", "almost", NOW)]})
    semantic.Embedding(st, e).run()
    semantic.link(st, KEY, 4)
    assert st.count_edges(KEY) == 2
    by = {_session_of(st, x): x for x in st.embedded_hashes(KEY)}
    assert [y for y, _c in st.edges(KEY, by["A"])] == [by["C"]]
    assert [y for y, _c in st.edges(KEY, by["B"])] == [by["C"]]
    assert sorted(y for y, _c in st.edges(KEY, by["C"])) == sorted([by["A"], by["B"]])


def test_an_index_linked_before_the_bound_is_brought_to_it(tmp_path, monkeypatch):
    """An index the old code linked kept every pair (and copies' pairs): the next link keeps
    each exchange's nearest only, as linking from scratch does, once, and gives the pages back."""
    monkeypatch.setattr(store_mod, "EDGE_K", 2)
    st, vectors, layout = _random_store(tmp_path, "old", 16, seed=11)
    copy = ("p0-0", "r0-0")  # session S00's first exchange, copied into a new session
    layout["S99"] = [(*copy, NOW)]
    _arrive(st, layout, ["S99"])
    e = Fake(vectors, dim=8)
    semantic.Embedding(st, e).run()
    # what the code before the bound stored: every pair of other sessions at >= EDGE
    ids, _w, mat = semantic._matrix(st, KEY, 8)
    sims = mat @ mat.T
    with st.write():
        for i, j in zip(*np.nonzero(sims >= semantic.EDGE)):
            a, b = int(ids[i]), int(ids[j])
            if a < b and a >> SHIFT != b >> SHIFT:
                st.db.execute("INSERT OR REPLACE INTO similar VALUES (?, ?, ?, ?)",
                              (a, b, KEY, round(float(sims[i, j]), 6)))
        st.db.executemany("INSERT INTO linked SELECT exchange, model, text_hash FROM embedded "
                          "WHERE exchange = ?", [(int(x),) for x in set(ids.tolist())])
    before = st.db.execute("SELECT a, b, cosine FROM similar").fetchall()
    reclaimed = []
    real = st.reclaim
    monkeypatch.setattr(st, "reclaim", lambda: reclaimed.append(real(share=0.0)))
    assert semantic.link(st, KEY, 8, budget=5.0) == (0, 0), "nothing pending: bounded all the same"
    assert reclaimed == [], "not while a search waits on it"
    with st.write():
        st.set_meta("similar_near", None)
    assert semantic.link(st, KEY, 8) == (0, 0)
    assert reclaimed == [True]
    got = st.db.execute("SELECT a, b, cosine FROM similar").fetchall()
    edges = {x: st.edges(KEY, x) for x in st.embedded_hashes(KEY)}
    assert len(before) > 3 * len(got), "the test needs an index with far more pairs"
    assert st.get_meta("similar_near") == "2"
    assert st.db.execute("PRAGMA freelist_count").get == 0, "the pages given back"
    assert not st.bound_edges(), "once"
    with st.write():  # from scratch
        st.db.execute("DELETE FROM similar")
        st.db.execute("DELETE FROM linked")
    assert semantic.link(st, KEY, 8) == (49, 0)
    again = st.db.execute("SELECT a, b, cosine FROM similar").fetchall()
    assert [r[:2] for r in again] == [r[:2] for r in got]
    assert all(abs(r[2] - q[2]) < 1e-5 for r, q in zip(again, got)), "float32 products"
    assert {x: [y for y, _c in st.edges(KEY, x)] for x in edges} == \
        {x: [y for y, _c in v] for x, v in edges.items()}
    assert max(map(len, edges.values())) == 2
    copies = [x for x in edges if st.exchange_texts([x])[x] == copy]
    assert len(copies) == 2 and copies[1] not in dict(edges[copies[0]])
    assert (min(copies), max(copies)) in {(a, b) for a, b, _c in before}, "the old code joined them"
    monkeypatch.setattr(store_mod, "EDGE_K", 3)  # a bound raised: everything linked again
    assert semantic.link(st, KEY, 8) == (49, 0)
    assert max(len(st.edges(KEY, x)) for x in edges) == 3


def test_a_changed_or_deleted_exchange_takes_its_edges_with_it(tmp_path):
    same = _unit(1, 0, 0, 0)
    e = Fake({"a\n\none": same, "b\n\ntwo": same, "c\n\nthree": _unit(0.9, 0.435889894, 0, 0)})
    st = _store_with(tmp_path, {"A": [("a", "one", NOW)], "B": [("b", "two", NOW)],
                                "C": [("c", "three", NOW)]})
    semantic.Embedding(st, e).run()
    semantic.link(st, KEY, 4)
    assert st.count_edges(KEY) == 3
    a = next(x for x, _n, _v in st.exchange_vectors(KEY) if _session_of(st, x) == "A")
    assert sorted(round(c, 3) for _o, c in st.edges(KEY, a)) == [0.9, 1.0]
    with st.write():  # A's reply grows into something else: its edges go at once
        st.set_message_texts([(a, "one, and then something else entirely")])
    assert st.count_edges(KEY) == 1 and st.edges(KEY, a) == []
    e.vectors["a\n\none, and then something else entirely"] = _unit(0, 0, 1, 0)
    semantic.Embedding(st, e).run()
    assert semantic.link(st, KEY, 4) == (1, 0), "re-linked as its new text"
    assert st.count_edges(KEY) == 1
    with st.write():
        st.delete_session(st.session_by_session_id("B", "claude-code").id)
    assert st.count_edges(KEY) == 0
    assert st.db.execute("SELECT count(*) FROM linked WHERE exchange >> ? = ?",
                         (SHIFT, st.session_by_session_id("C", "claude-code").id)).fetchone()[0] == 1


def test_linking_keeps_its_budget_and_yields(tmp_path, monkeypatch):
    monkeypatch.setattr(semantic, "EDGE_BLOCK", 2)
    st = _store_with(tmp_path, {f"S{i}": [(f"p{i}", f"r{i}", NOW + i)] for i in range(9)})
    semantic.Embedding(st, Fake()).run()
    assert semantic.link(st, KEY, 4, budget=0) == (2, 7), "one block, then the budget is spent"
    assert semantic.link(st, KEY, 4, should_stop=lambda: True) == (0, 7)
    assert semantic.link(st, KEY, 4) == (7, 0)


def test_edges_are_kept_per_model(tmp_path):
    same = _unit(1, 0, 0, 0)
    st = _store_with(tmp_path, {"A": [("a", "one", NOW)], "B": [("b", "two", NOW)]})

    class Other(Fake):
        model = "other-model"
    for emb in (Fake({"a\n\none": same, "b\n\ntwo": same}), Other({"a\n\none": same, "b\n\ntwo": _unit(0, 1, 0, 0)})):
        semantic.Embedding(st, emb).run()
        semantic.link(st, semantic.key_of(emb), 4)
    assert st.count_edges(KEY) == 1
    assert st.count_edges(semantic.key_of(Other())) == 0


def test_a_vector_of_the_wrong_size_is_linked_with_no_edges(tmp_path):
    st = _store_with(tmp_path, {"A": [("a", "one", NOW)], "B": [("b", "two", NOW)]})
    semantic.Embedding(st, Fake()).run()
    with st.write():
        st.db.execute("UPDATE vectors SET vec = x'00'")
    assert semantic.link(st, KEY, 4) == (2, 0), "not pending for ever"
    assert st.count_edges(KEY) == 0


def test_the_speed_of_linking_does_not_depend_on_time(tmp_path):
    """Linking a new exchange touches only its own edges (the old pairs are never recomputed):
    shown by counting, not timing."""
    st = _store_with(tmp_path, {f"S{i}": [(f"p{i}", f"r{i}", time.time())] for i in range(30)})
    semantic.Embedding(st, Fake()).run()
    semantic.link(st, KEY, 4)
    with st.write():
        row = st.session_for("claude-code", "NEW", "[transcript]")
        u, a = st.new_message_ids(row.id, 2)
        st.add_messages([(u, row.id, "u", "user", NOW, 0, None, "new"),
                         (a, row.id, "a", "assistant", NOW, 0, u, "one")])
    semantic.Embedding(st, Fake()).run()
    assert list(st.unlinked_exchanges(KEY)) == [a]
    assert semantic.link(st, KEY, 4) == (1, 0)


def test_the_vectors_held_in_memory_follow_changes_as_a_fresh_read_would(tmp_path, monkeypatch):
    """A long-lived process reads only what changed: new exchanges, replies grown, sessions
    gone. What it then holds equals what a fresh read gives."""
    monkeypatch.setattr(semantic, "REREAD", 1.0)  # never the whole again, to test the steps
    st, vectors, layout = _random_store(tmp_path, "s", 8, seed=5)
    e = Fake(vectors, dim=8)
    semantic.Embedding(st, e).run()
    semantic._LOADED.clear()

    def held():
        h = semantic._timed(st, KEY, 8)
        return sorted(zip(h.ids.tolist(), h.windows.tolist(), map(tuple, h.mat.tolist()),
                          h.times.tolist()))
    first = held()
    reads = []
    real = st.exchange_vectors
    monkeypatch.setattr(st, "exchange_vectors",
                        lambda model, exchanges=None: reads.append(exchanges) or real(model, exchanges))
    grown = next(x for x, _n, _v in real(KEY) if _session_of(st, x) == "S03")
    with st.write():
        st.set_message_texts([(grown, "a longer reply")])
        st.delete_session(st.session_by_session_id("S05", "claude-code").id)
        row = st.session_for("claude-code", "NEW", "[transcript]")
        u, a = st.new_message_ids(row.id, 2)
        st.add_messages([(u, row.id, "u", "user", NOW, 0, None, "new"),
                         (a, row.id, "a", "assistant", NOW + 1, 0, u, "one")])
    semantic.Embedding(st, e).run()
    after = held()
    assert reads and all(r is not None and len(r) == 2 for r in reads), "only the two changed"
    semantic._LOADED.clear()
    monkeypatch.setattr(st, "exchange_vectors", real)
    assert after == held(), "the same as a fresh read"
    assert len(after) == len(first) - 3 + 1 and after != first
    for i in range(3):  # new sessions only: appended where the rows are, none copied
        with st.write():
            row = st.session_for("claude-code", f"MORE{i}", "[transcript]")
            u, a = st.new_message_ids(row.id, 2)
            st.add_messages([(u, row.id, "u", "user", NOW, 0, None, f"more {i}"),
                             (a, row.id, "a", "assistant", NOW + 2, 0, u, "again")])
        semantic.Embedding(st, e).run()
        grown = held()
    semantic._LOADED.clear()
    assert grown == held() and len(grown) == len(after) + 3
