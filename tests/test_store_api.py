"""The store's one way to write, its steps and its own error types (issue #19): nothing outside
store.py needs the SQLite driver to write or to tell what went wrong."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from prima_memory import storage as storemod
from prima_memory.storage.shared import SHIFT
from prima_memory.storage import Store


def test_a_write_that_would_wait_past_its_wait_is_busy_and_the_store_goes_on(tmp_path):
    path = str(tmp_path / "index.db")
    st, other = Store(path), Store(path)
    with other.write():  # another writer holds the index
        with pytest.raises(storemod.Busy):
            with st.write(wait=0.05):
                st.set_meta("x", 1)
    with st.write(wait=0.05):  # free again
        st.set_meta("x", 2)
    assert st.get_meta("x") == "2"


def test_a_failed_write_keeps_nothing_and_a_nested_one_is_a_savepoint(tmp_path):
    st = Store(str(tmp_path / "index.db"))
    with pytest.raises(ValueError), st.write():
        st.set_meta("a", 1)
        raise ValueError("no")
    assert st.get_meta("a") is None
    with st.write():
        st.set_meta("b", 1)
        with pytest.raises(ValueError), st.write():
            st.set_meta("c", 1)
            raise ValueError("no")
    assert (st.get_meta("b"), st.get_meta("c")) == ("1", None)


def test_a_driver_error_leaves_the_store_as_its_own_type(tmp_path):
    st = Store(str(tmp_path / "index.db"))
    with pytest.raises(storemod.StoreError) as e, st.write():
        st.db.execute("SELECT * FROM no_such_table")
    assert type(e.value) is storemod.StoreError and "no_such_table" in str(e.value)


def test_steps_commit_what_they_wrote_and_roll_back_on_an_exception(tmp_path):
    st = Store(str(tmp_path / "index.db"))
    with pytest.raises(RuntimeError), st.steps(1, 60.0) as steps:
        st.set_meta("kept", 1)
        steps.added(10)  # past max_bytes: a commit
        st.set_meta("lost", 1)
        raise RuntimeError("killed")
    assert (st.get_meta("kept"), st.get_meta("lost")) == ("1", None)


def test_lookups_of_many_ids_are_asked_in_parts(tmp_path):
    st = Store(str(tmp_path / "index.db"))
    with st.write():
        sid = st.session_for("claude-code", "s", "[transcript]").id
        base = sid << SHIFT
        st.add_messages([(base | i, sid, f"k{i}", "user", float(i), 0, None, f"text {i}")
                         for i in range(1201)])
    ids = [base | i for i in range(1201)]
    assert len(st.message_texts(ids)) == 1201 and st.message_texts(ids)[base | 1200] == "text 1200"
    assert len(st.messages_by_key(sid, [f"k{i}" for i in range(1201)] + ["none"])) == 1201
    assert [r.id for r in st.sessions_by_id([sid] * 3)] == [sid]


def test_no_module_but_the_store_imports_the_driver():
    root = os.path.join(os.path.dirname(__file__), "..", "prima_memory")
    found = subprocess.run(["grep", "-rln", "--include=*.py", "apsw", root], capture_output=True, text=True).stdout
    engine = os.sep + os.path.join("storage", "sqlite") + os.sep
    assert [p for p in found.split() if engine not in p] == [], found
    assert sys.modules.get("prima_memory.storage") is storemod
