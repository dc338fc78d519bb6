"""The store's side of embeddings: vectors kept by content, links that the store itself drops
when an exchange's text changes, and schema steps that never throw vectors away."""
from __future__ import annotations


import pytest

from prima_memory.storage import TooManyMessages
from prima_memory.storage.sqlite import core as storemod  # (the version it opens to)
from prima_memory.storage.shared import SHIFT
from prima_memory.storage import Store

M = "all-MiniLM-L6-v2"


def _session(st: Store, prompt="How do I rotate the logs?", reply="Use logrotate weekly."):
    with st.write():
        sid = st.session_for("claude-code", "s1", "[transcript]").id
        st.db.execute("UPDATE sessions SET next_ord = 2 WHERE id = ?", (sid,))
        base = sid << SHIFT
        st.add_messages([(base, sid, "u1", "user", 1.0, 0, None, prompt),
                         (base | 1, sid, "a1", "assistant", 2.0, 0, base, reply)])
    return sid, base | 1


def _embed(st: Store, exchange: int, h: bytes, vecs=(b"v0", b"v1")):
    with st.write():
        st.add_vectors(M, "test", [(h, list(vecs))])
        st.link_exchanges(M, [(exchange, h)])


def test_a_changed_reply_is_pending_again_and_its_old_vectors_stay(tmp_path):
    st = Store(str(tmp_path / "index.db"))
    sid, ex = _session(st)
    assert st.pending_exchanges(M) == [ex]
    assert st.exchange_texts([ex]) == {ex: ("How do I rotate the logs?", "Use logrotate weekly.")}
    _embed(st, ex, b"h1")
    assert st.pending_exchanges(M) == [] and st.count_embedded(M) == 1
    assert sorted(v for _x, _n, v in st.exchange_vectors(M)) == [b"v0", b"v1"]
    with st.write():
        st.set_message_texts([(ex, "Use logrotate weekly.\nAnd compress them.")])
    assert st.pending_exchanges(M) == [ex], "the store dropped the link itself"
    assert st.known_vectors([b"h1"], M) == {b"h1": [b"v0", b"v1"]}, "kept for a text seen again"
    # the same text read again (a rebuild) finds its vectors without the model
    with st.write():
        st.clear_session(sid)
    assert st.count_embedded(M) == 0
    with st.write():
        assert st.drop_unlinked_vectors() == 2
    assert st.known_vectors([b"h1"], M) == {}


def test_another_model_has_its_own_pending(tmp_path):
    st = Store(str(tmp_path / "index.db"))
    _sid, ex = _session(st)
    _embed(st, ex, b"h1")
    assert st.pending_exchanges("other-model") == [ex]
    assert st.count_pending(M) == 0 and st.count_pending("other-model") == 1


def test_a_v6_index_gains_the_vector_tables_in_place(tmp_path):
    path = str(tmp_path / "index.db")
    st = Store(path)
    _sid, ex = _session(st)
    with st.write():
        for name in ("messages_au_vec", "messages_ad_vec"):
            st.db.execute(f"DROP TRIGGER {name}")
        st.db.execute("DROP TABLE embedded")
        st.db.execute("DROP TABLE vectors")
        st.db.execute("PRAGMA user_version = 6")
    st.close()
    st = Store(path)
    assert st.schema_version == storemod.SCHEMA_VERSION
    assert st.pending_exchanges(M) == [ex], "the messages stayed; every exchange starts pending"


def test_a_later_schema_step_keeps_every_vector(tmp_path, monkeypatch):
    path = str(tmp_path / "index.db")
    st = Store(path)
    _sid, ex = _session(st)
    _embed(st, ex, b"h1")
    st.close()
    ran = []

    def step(store):  # a future additive change
        store.db.execute("ALTER TABLE sessions ADD COLUMN later TEXT")
        ran.append(1)

    v = storemod.SCHEMA_VERSION
    monkeypatch.setattr(storemod, "SCHEMA_VERSION", v + 1)
    monkeypatch.setitem(storemod._MIGRATIONS, v, step)
    st = Store(path)
    assert ran == [1] and st.schema_version == v + 1
    assert st.count_embedded(M) == 1 and sorted(v for _x, _n, v in st.exchange_vectors(M)) == [b"v0", b"v1"]
    assert not list(tmp_path.glob("index.db.*")), "migrated in place, not moved aside"


def test_new_message_ids_roll_back_with_their_transaction(tmp_path):
    st = Store(str(tmp_path / "index.db"))
    sid, _ex = _session(st)
    st.db.execute("BEGIN")
    assert list(st.new_message_ids(sid, 3)) == [(sid << SHIFT) | i for i in (2, 3, 4)]
    st.db.execute("ROLLBACK")
    with st.write():
        assert list(st.new_message_ids(sid, 1)) == [(sid << SHIFT) | 2]


def test_a_session_past_its_id_range_is_refused(tmp_path):
    st = Store(str(tmp_path / "index.db"))
    sid, _ex = _session(st)
    with pytest.raises(TooManyMessages), st.write():
        st.new_message_ids(sid, 1 << SHIFT)
    assert st.db.execute("SELECT next_ord FROM sessions WHERE id = ?", (sid,)).fetchone()[0] == 2


def test_a_v8_index_lists_its_vector_keys_to_adopt_and_keeps_every_vector(tmp_path):
    """Schema 9 keys vectors by the build that made them too: the keys of an older index name
    none, so they are listed for the first embedder to adopt or drop (semantic.Embedding.adopt),
    and nothing is thrown away by the migration itself."""
    path = str(tmp_path / "index.db")
    st = Store(path)
    _sid, ex = _session(st)
    _embed(st, ex, b"h1")
    with st.write():
        st.add_vectors("m/windows-v1/onnx-int8-0123", "onnx-int8", [(b"h1", [b"x"])])
        st.db.execute("PRAGMA user_version = 8")
    st.close()
    st = Store(path)
    assert st.schema_version == storemod.SCHEMA_VERSION >= 9
    assert st.legacy_vector_keys() == [M], "a key with its build is not listed"
    assert st.count_embedded(M) == 1 and st.known_vectors([b"h1"], M) == {b"h1": [b"v0", b"v1"]}
    with st.write():
        st.adopt_vectors(M, "m/windows-v1/test", "test")
    assert st.legacy_vector_keys() == [] and st.count_embedded(M) == 0
    assert st.count_embedded("m/windows-v1/test") == 1
    assert st.known_vectors([b"h1"], "m/windows-v1/test") == {b"h1": [b"v0", b"v1"]}
