"""The keyword rows (messages_fts) and titles (titles_tri) of a write are kept for its commit, so
SQLite's full-text index writes them in one go (Store._unindex): whatever the write does in
between (a file that fails and rolls its savepoint back, a session read again from its start, a
reply that grows, a retitle) the committed index is what writing each row at once gives."""
from __future__ import annotations

import apsw
import pytest

from prima_memory.storage import Store, Words

NOW = 1_800_000_000.0


def _matching(st: Store, word: str) -> set[int]:
    return st.message_ids_matching(Words([[word]]))


def _add(st: Store, name: str, *texts: str) -> tuple[int, list[int]]:
    row = st.session_for("claude-code", name, "[transcript]")
    ids = list(st.new_message_ids(row.id, len(texts)))
    st.add_messages([(mid, row.id, f"k{i}", "user", NOW + i, 0, None, t)
                     for i, (mid, t) in enumerate(zip(ids, texts))])
    return row.id, ids


def _reopened(st: Store) -> Store:
    """The index as another process sees it: what was committed."""
    return Store(st.path, readonly=True)


def test_a_file_that_fails_leaves_no_keyword_row_and_the_ones_before_stay(tmp_path):
    st = Store(str(tmp_path / "i.db"))
    with st.steps(1 << 30, 3600):
        with st.write():
            _s, kept = _add(st, "a", "zebra one", "zebra two", "")
        with pytest.raises(RuntimeError):
            with st.write():  # the next file's savepoint, rolled back
                _add(st, "b", "zebra three")
                raise RuntimeError("an odd file")
        with st.write():
            _c, later = _add(st, "c", "zebra four")
    assert _matching(_reopened(st), "zebra") == {kept[0], kept[1], later[0]}


def test_a_session_read_again_from_its_start_in_the_same_write_has_no_ghost_rows(tmp_path):
    st = Store(str(tmp_path / "i.db"))
    with st.write():
        sid, first = _add(st, "a", "walrus old text", "walrus reply")
        st.clear_session(sid)  # (a file read again from its start: what it held goes)
        _sid, again = _add(st, "a", "walrus new text")
    got = _reopened(st)
    assert _matching(got, "walrus") == {again[0]}
    assert _matching(got, "old") == set() and _matching(got, "reply") == set()
    assert _matching(got, "new") == {again[0]}


def test_a_reply_that_grows_before_the_commit_is_found_by_its_whole_text(tmp_path):
    st = Store(str(tmp_path / "i.db"))
    with st.write():
        _sid, (mid,) = _add(st, "a", "the first half")
        st.set_message_texts([(mid, "the first half and the second half")])
    with st.write():  # and once more, its row already in the index
        st.set_message_texts([(mid, "the first half and the second half and a third")])
    got = _reopened(st)
    assert _matching(got, "second") == {mid} and _matching(got, "third") == {mid}
    assert len(got.message_ids_matching(Words([["first"]]))) == 1


def test_a_growth_rolled_back_with_its_savepoint_leaves_the_text_before_it(tmp_path):
    st = Store(str(tmp_path / "i.db"))
    with st.steps(1 << 30, 3600):
        with st.write():
            _sid, (mid,) = _add(st, "a", "ocelot says hello")
        with pytest.raises(RuntimeError):
            with st.write():
                st.set_message_texts([(mid, "ocelot says hello and goodbye")])
                raise RuntimeError("the rest of the file was unreadable")
    got = _reopened(st)
    assert _matching(got, "ocelot") == {mid} and _matching(got, "goodbye") == set()
    assert got.message_texts([mid])[mid] == "ocelot says hello"


def test_a_deleted_message_or_session_takes_its_kept_rows_with_it(tmp_path):
    st = Store(str(tmp_path / "i.db"))
    with st.write():
        a, (x, y) = _add(st, "a", "narwhal", "narwhal too")
        b, (z,) = _add(st, "b", "narwhal three")
        st.db.execute("DELETE FROM messages WHERE id = ?", (x,))
        st.delete_session(b)
    assert _matching(_reopened(st), "narwhal") == {y}


def test_a_read_inside_the_write_sees_what_it_wrote(tmp_path):
    st = Store(str(tmp_path / "i.db"))
    with st.write():
        sid, (mid,) = _add(st, "a", "okapi")
        st.update_session(sid, first_prompt="Okapi sightings")
        assert _matching(st, "okapi") == {mid}
        assert st.sessions_with_title_containing("okapi") == {sid}
        st.update_session(sid, custom_title="Renamed")
        assert st.sessions_with_title_containing("okapi") == set()
    assert _reopened(st).sessions_with_title_containing("renamed") == {sid}


def test_titles_are_indexed_at_the_commit_and_go_with_their_sessions(tmp_path):
    st = Store(str(tmp_path / "i.db"))
    with st.write():
        a, _ = _add(st, "a", "x")
        b, _ = _add(st, "b", "y")
        st.update_session(a, first_prompt="Ibis migration plan")
        st.update_session(b, first_prompt="Ibis release")
        assert st.db.execute("SELECT count(*) FROM titles_stale").get == 2  # (kept: not yet)
    assert st.db.execute("SELECT count(*) FROM titles_stale").get == 0
    other = _reopened(st)
    assert other.sessions_with_title_containing("ibis") == {a, b}
    with st.write():
        st.delete_session(a)
    assert _reopened(st).sessions_with_title_containing("ibis") == {b}
    assert _reopened(st).sessions_with_title_containing("untitled") == set()


def test_a_rolled_back_write_keeps_nothing_for_the_next(tmp_path):
    st = Store(str(tmp_path / "i.db"))
    with pytest.raises(RuntimeError):
        with st.write():
            _add(st, "a", "quokka")
            raise RuntimeError("no")
    with st.write():
        _sid, (mid,) = _add(st, "b", "wombat")
    got = _reopened(st)
    assert _matching(got, "quokka") == set() and _matching(got, "wombat") == {mid}
    assert got.db.execute("SELECT count(*) FROM messages").get == 1



def test_a_step_sqlite_rolled_back_itself_says_why_and_leaves_no_row_for_the_next(tmp_path):
    """A full disk as SQLite spills a step's pages: it rolls the whole transaction back itself,
    savepoints and all (tests/test_disk.py makes a real one). The error in flight is what the
    caller sees, not "no such savepoint", and the next write, under the ids handed out again,
    keeps nothing of the lost one."""
    from prima_memory.storage import DiskFull
    st = Store(str(tmp_path / "i.db"))
    with pytest.raises(DiskFull), st.steps(1 << 30, 3600):
        with st.write():
            _add(st, "a", "zebra one")
        with st.write():  # the next file's savepoint
            _add(st, "b", "zebra two")
            st.db.execute("ROLLBACK")  # (what SQLite does on SQLITE_FULL here)
            raise apsw.FullError("database or disk is full")
    with st.write():
        _sid, ids = _add(st, "c", "wombat", "wombat again")
    got = _reopened(st)
    assert _matching(got, "zebra") == set() and _matching(got, "wombat") == set(ids)
    assert got.db.execute("SELECT count(*) FROM messages").get == 2


def test_many_files_make_few_segments(tmp_path):
    """The point of keeping them: a write of many files is one flush of the full-text index,
    not one per file (each a segment, merged again and again)."""
    st = Store(str(tmp_path / "i.db"))
    with st.steps(1 << 30, 3600):
        for k in range(300):
            with st.write():
                sid, _ = _add(st, f"s{k}", f"word{k} common text", "")
                st.add_file_changes([(sid, f"/w/{k % 7}.py", "Edit", None, NOW, "k0")])
                st.update_session(sid, first_prompt=f"title {k}")
    db = apsw.Connection(st.path, flags=apsw.SQLITE_OPEN_READONLY)
    # (the index's pages of segments: 17 when each file's rows were written at once)
    pages = db.execute("SELECT count(*) FROM messages_fts_idx").get
    assert pages <= 4, pages
    got = _reopened(st)
    assert len(_matching(got, "common")) == 300 and len(_matching(got, "word299")) == 1


@pytest.mark.parametrize("piece", [7, 64, 1 << 18])
def test_the_vocabulary_of_a_text_read_in_pieces_is_its_words_tokens(tmp_path, monkeypatch,
                                                                     piece):
    """Store.tokens reads a text a piece at a time: the same tokens as its distinct words
    tokenized one by one, wherever the pieces are cut (NFD accents, Turkish İ, no spaces)."""
    import random

    from prima_memory.storage.sqlite import folding as storemod
    monkeypatch.setattr(storemod, "_TOKENS_PIECE", piece)
    st = Store(str(tmp_path / "i.db"))
    rng = random.Random(piece)
    words = ["docker", "Café", "cafe\u0301", "İstanbul", "x_y", "foo.bar", "a-b", "42", "naïve",
             "😀", "ǅemal", "ΣΊΣΥΦΟΣ", "snake_case_name", "url://x/y?z=1", "\u200bzero", "tab\tend"]
    for _ in range(40):
        text = "".join(rng.choice(words) + rng.choice([" ", "\n", "", "  ", "\t", "\r\n"])
                       for _ in range(rng.randint(0, 60)))
        ref = set()
        for w in set(text.split()):
            ref |= set(st._tokens._tokenize(storemod.index_text(w), apsw.FTS5_TOKENIZE_DOCUMENT))
        assert st.tokens(text) == ref, text
