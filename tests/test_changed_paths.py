"""The distinct changed paths a keyword search looks in (schema 12; 13 adds the files by
source): the same answers as a look at every change, kept exact as changes come and go, and
listed by the migration."""
from __future__ import annotations

import apsw

from prima_memory.storage import SCHEMA_VERSION, Store
from prima_memory.storage.sqlite.core import _schema_rows


def _with_changes(path, changes: dict[str, list[str]]) -> tuple[Store, dict[str, int]]:
    """A store whose sessions (name -> the paths it changed, in order) hold those changes."""
    st = Store(str(path))
    ids = {}
    with st.write():
        for name, paths in changes.items():
            row = st.session_for("claude-code", name, "[transcript]")
            ids[name] = row.id
            st.add_file_changes([(row.id, p, "Edit", None, 1.0 + k, f"m{k}")
                                 for k, p in enumerate(paths)])
    return st, ids


def _listed(st: Store) -> list[str]:
    return [r[0] for r in st.db.execute("SELECT path FROM changed_paths ORDER BY path")]


def test_each_session_counts_its_distinct_paths_holding_the_words(tmp_path):
    st, ids = _with_changes(tmp_path / "i.db", {
        "a": ["/w/README.md", "/w/README.md", "/w/docs/readme-old.txt", "/w/src/app.py"],
        "b": ["/w/README.md", "/w/Café/Readme"],
        "c": ["/w/src/app.py"]})
    assert st.sessions_with_path_containing("readme") == {ids["a"]: 2, ids["b"]: 2}
    assert st.sessions_with_path_containing("café") == {ids["b"]: 1}
    assert st.sessions_with_path_containing("app.py") == {ids["a"]: 1, ids["c"]: 1}
    assert st.sessions_with_path_containing("nowhere") == {}
    assert _listed(st) == ["/w/Café/Readme", "/w/README.md", "/w/docs/readme-old.txt",
                           "/w/src/app.py"]


def test_a_path_goes_with_its_last_change(tmp_path):
    st, ids = _with_changes(tmp_path / "i.db", {"a": ["/w/shared.py", "/w/only-a.py"],
                                                "b": ["/w/shared.py"]})
    with st.write():
        st.delete_session(ids["a"])
    assert _listed(st) == ["/w/shared.py"]  # nothing of a's own is named any more
    with st.write():
        st.clear_session(ids["b"])
    assert _listed(st) == [] and st.sessions_with_path_containing("shared") == {}


def test_more_paths_than_one_query_binds(tmp_path):
    paths = [f"/w/src/module_{k:04d}.py" for k in range(1200)]
    st, ids = _with_changes(tmp_path / "i.db", {"a": paths, "b": paths[::2]})
    assert st.sessions_with_path_containing("module_") == {ids["a"]: 1200, ids["b"]: 600}


def test_an_index_of_schema_11_lists_its_paths_when_opened(tmp_path):
    path = tmp_path / "i.db"
    st, ids = _with_changes(path, {"a": ["/w/README.md"], "b": ["/w/setup.cfg"]})
    st.close()
    db = apsw.Connection(str(path))  # as schema 11 left it: no list, no triggers, no index
    db.execute("DROP TRIGGER path_sessions_listed; DROP TRIGGER path_sessions_unlisted; "
               "DROP TABLE changed_paths; DROP INDEX files_source; PRAGMA user_version = 11")
    db.close()
    st = Store(str(path))
    assert st.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    fresh = Store(str(tmp_path / "fresh.db"))
    assert _schema_rows(st.db) == _schema_rows(fresh.db), "each step on, to what a new one is"
    assert _listed(st) == ["/w/README.md", "/w/setup.cfg"]
    assert st.sessions_with_path_containing("readme") == {ids["a"]: 1}
    assert st.db.execute("EXPLAIN QUERY PLAN SELECT path FROM files WHERE source = ?",
                         ("codex",)).fetchall()[0][3].startswith("SEARCH files USING")  # 13
    with st.write():  # and kept from then on
        st.add_file_changes([(ids["b"], "/w/README.md", "Edit", None, 9.0, "m9")])
    assert st.sessions_with_path_containing("readme") == {ids["a"]: 1, ids["b"]: 1}
