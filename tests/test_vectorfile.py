"""The file of vectors kept beside the index (vectorfile.py): a cold process maps it instead of
reading every vector from SQLite, reads from the index only what changed since it was written,
and never takes a file that is not its own index's (planted by a cloned folder, left by an index
since made anew, cut short, a link or a FIFO in its place)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from prima_memory import semantic, vectorfile, workspace
from prima_memory.storage.shared import SHIFT
from prima_memory.storage import Store

from test_semantic import KEY, Fake
from test_similar import NOW, _random_store

DIM = 8


def _fresh(st: Store) -> list[tuple]:
    """The rows as a read of the index alone gives them (no file, nothing held)."""
    ids, windows, mat = semantic._read_matrix(Store.exchange_vectors(st, KEY), DIM)
    return sorted(zip(ids.tolist(), windows.tolist(), map(tuple, mat.tolist())))


def _rows(held: semantic.Held) -> list[tuple]:
    return sorted(zip(held.ids.tolist(), held.windows.tolist(), map(tuple, held.mat.tolist())))


def _cold(st: Store) -> semantic.Held:
    """The vectors as a new process gets them."""
    semantic._LOADED.clear()
    return semantic._held(st, KEY, DIM)


def _path(st: Store) -> str:
    return vectorfile.path_for(st.path, KEY)


def _embedded(tmp_path, sessions: int = 6, seed: int = 3):
    st, vectors, _layout = _random_store(tmp_path, "s", sessions, seed=seed)
    e = Fake(vectors, dim=DIM)
    semantic.Embedding(st, e).run()
    return st, e


def _add_session(st: Store, e: Fake, name: str) -> None:
    with st.write():
        row = st.session_for("claude-code", name, "[transcript]")
        u, a = st.new_message_ids(row.id, 2)
        st.add_messages([(u, row.id, "u", "user", NOW, 0, None, f"{name} prompt"),
                         (a, row.id, "a", "assistant", NOW + 1, 0, u, f"{name} reply")])
    semantic.Embedding(st, e).run()


def _no_whole_reads(st: Store, monkeypatch) -> list:
    """Fail any read of every vector; record the reads of some."""
    reads: list = []
    real = st.exchange_vectors

    def reading(model, exchanges=None):
        assert exchanges is not None, "every vector read from the index"
        reads.append(list(exchanges))
        return real(model, exchanges)
    monkeypatch.setattr(st, "exchange_vectors", reading)
    return reads


def test_a_cold_process_maps_the_vectors_a_read_of_the_index_would_give(tmp_path, monkeypatch):
    st, e = _embedded(tmp_path)
    assert not os.path.exists(_path(st))
    first = _cold(st)  # nothing beside the index yet: read from it, then kept beside it
    assert not first.filed or os.path.exists(_path(st))
    assert os.stat(_path(st)).st_mode & 0o777 == 0o600, "private, like the index"
    _no_whole_reads(st, monkeypatch)
    mapped = _cold(st)
    assert mapped.filed and not mapped.mat.flags.writeable, "mapped, read-only"
    assert _rows(mapped) == _rows(first) == _fresh(st)
    assert mapped.hashes == st.embedded_hashes(KEY), "the text each exchange was embedded as"
    got = semantic.search(st, e, "p2-1\n\nr2-1", limit=3, floor=0.0)
    assert got and st.session(got[0].session).session_id == "S02"


def test_an_index_with_no_vectors_yet_keeps_an_empty_file_that_later_reads_grow(tmp_path):
    st, _vectors, _layout = _random_store(tmp_path, "s", 3, seed=1)
    empty = _cold(st)
    assert empty.n == 0 and empty.filed
    mapped = vectorfile.read(_path(st), st.vectors_token(), KEY, DIM)
    assert mapped.hashes() == {} and mapped.mat.shape == (0, DIM)
    semantic.Embedding(st, Fake(dim=DIM)).run()
    assert _rows(_cold(st)) == _fresh(st) and len(_fresh(st)) == 9


def test_a_file_behind_the_index_costs_only_what_changed(tmp_path, monkeypatch):
    st, e = _embedded(tmp_path, sessions=30)
    _cold(st)
    gen = vectorfile.read(_path(st), st.vectors_token(), KEY, DIM).gen
    _add_session(st, e, "NEW")  # one exchange of 91: under REWRITE, the file stays as it was
    with st.write():
        st.delete_session(st.session_by_session_id("S05", "claude-code").id)
    reads = _no_whole_reads(st, monkeypatch)
    held = _cold(st)
    assert reads == [[x for x in st.embedded_hashes(KEY) if st.session(x >> SHIFT).session_id ==
                      "NEW"]], "only the new exchange read from the index"
    monkeypatch.undo()
    assert _rows(held) == _fresh(st), "the same as a read of the index"
    assert not any(st.session(x >> SHIFT) is None for x in held.ids.tolist()), "S05 is gone"
    assert vectorfile.read(_path(st), st.vectors_token(), KEY, DIM).gen == gen, "not rewritten"
    for i in range(8):  # past REWRITE of the exchanges: written again at this state
        _add_session(st, e, f"MORE{i}")
    held = _cold(st)
    again = vectorfile.read(_path(st), st.vectors_token(), KEY, DIM)
    assert again.gen == st.vectors_generation() != gen
    assert _rows(held) == _fresh(st) == _rows(semantic.Held(0, {}, again.ids, again.windows,
                                                              again.mat))


def test_linking_keeps_the_file_current_for_the_next_search(tmp_path, monkeypatch):
    """The background's work (embed, then link) leaves a file a search maps as it is."""
    st, e = _embedded(tmp_path)
    _cold(st)
    _add_session(st, e, "NEW")
    semantic.link(st, KEY, DIM)
    assert vectorfile.read(_path(st), st.vectors_token(), KEY, DIM).gen == \
        st.vectors_generation()
    _no_whole_reads(st, monkeypatch)
    monkeypatch.setattr(st, "embedded_hashes", lambda model: pytest.fail("compared with index"))
    assert _rows(_cold(st)) == _rows(semantic._LOADED[semantic._key(st, KEY, DIM)])


def _planted_variants(tmp_path, st: Store, good: bytes):
    """What a cloned folder (or an unlucky disk) can put at the file's name."""
    other = Store(str(tmp_path / "other.db"))  # another index: another token
    rng = np.random.default_rng(0)
    mat = rng.normal(size=(3, DIM)).astype(np.float32)
    ids = np.asarray([1 << SHIFT, 2 << SHIFT, 3 << SHIFT], dtype=np.int64)
    hashes = {int(x): b"h" * 16 for x in ids}
    theirs = str(tmp_path / "theirs.bin")
    assert vectorfile.write(theirs, other.vectors_token(), KEY, st.vectors_generation(), ids,
                            np.zeros(3, dtype=np.int32), mat, hashes)
    other.close()
    head = vectorfile._head()
    fields = list(head.unpack(good[:head.size]))
    huge = fields.copy()
    huge[7] = 1 << 40  # rows
    yield "another index's", open(theirs, "rb").read()
    yield "cut short", good[:-1]
    yield "one byte more", good + b"\0"
    yield "a header that claims a terabyte", head.pack(*huge).ljust(vectorfile.HEADER, b"\0") + \
        good[vectorfile.HEADER:]
    yield "empty", b""
    yield "not vectors at all", b"<html>" * 100


def test_a_file_that_is_not_this_indexs_own_is_never_read(tmp_path):
    st, _e = _embedded(tmp_path)
    truth = _rows(_cold(st))
    path = _path(st)
    good = open(path, "rb").read()
    for what, data in _planted_variants(tmp_path, st, good):
        with open(path, "wb") as f:
            f.write(data)
        assert vectorfile.read(path, st.vectors_token(), KEY, DIM) is None, what
        held = _cold(st)
        assert _rows(held) == truth, what
        assert open(path, "rb").read() == good, f"{what}: written again, whole"
    assert vectorfile.read(path, st.vectors_token(), KEY, DIM + 1) is None, "another size"
    assert vectorfile.read(path, st.vectors_token(), KEY + "x", DIM) is None, "another model"
    assert vectorfile.read(path, None, KEY, DIM) is None, "an index without a token"


def test_a_link_or_a_fifo_in_the_files_place_is_never_followed(tmp_path):
    st, _e = _embedded(tmp_path)
    truth = _rows(_cold(st))
    path = _path(st)
    shutil.move(path, tmp_path / "elsewhere.bin")  # a valid file, reached only through the link
    kept = (tmp_path / "elsewhere.bin").read_bytes()
    os.symlink(tmp_path / "elsewhere.bin", path)
    assert vectorfile.read(path, st.vectors_token(), KEY, DIM) is None
    assert _rows(_cold(st)) == truth
    assert not os.path.islink(path), "the link replaced by a file, not written through"
    assert (tmp_path / "elsewhere.bin").read_bytes() == kept
    os.unlink(path)
    os.mkfifo(path)
    assert vectorfile.read(path, st.vectors_token(), KEY, DIM) is None, "never waited on"
    assert _rows(_cold(st)) == truth
    assert os.path.isfile(path) and not os.path.islink(path)


def test_an_index_made_anew_never_reads_the_file_of_the_one_before(tmp_path):
    st, e = _embedded(tmp_path)
    _cold(st)
    old = open(_path(st), "rb").read()
    st.close()
    os.unlink(tmp_path / "s" / "index.db")
    other, _vectors, _layout = _random_store(tmp_path, "t", 2, seed=9)  # another history...
    other.close()
    shutil.copy(tmp_path / "t" / "index.db", tmp_path / "s" / "index.db")
    st = Store(str(tmp_path / "s" / "index.db"))  # ...at the same place, its file left there
    assert open(_path(st), "rb").read() == old
    semantic.Embedding(st, Fake(dim=DIM)).run()
    assert _rows(_cold(st)) == _fresh(st)
    assert len(_fresh(st)) == 6


def test_a_writer_killed_mid_write_leaves_nothing_behind_the_next_write(tmp_path):
    st, e = _embedded(tmp_path)
    folder = tmp_path / "s"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    left = folder / f"{workspace.TEMP_PREFIX}{dead}-0a1b2c"
    left.write_bytes(b"\0" * 4096)  # what a kill during the write leaves
    live = folder / f"{workspace.TEMP_PREFIX}{os.getpid()}-3d4e5f"
    live.write_bytes(b"being written")  # another writer, still at it
    _cold(st)
    assert not left.exists() and live.exists()
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".prima-tmp")) == \
        [live.name]


def test_a_read_only_index_reads_its_file_and_writes_none(tmp_path):
    st, _e = _embedded(tmp_path)
    st.close()
    ro = Store(str(tmp_path / "s" / "index.db"), readonly=True)
    assert _rows(_cold(ro)) == _fresh(ro)
    assert not os.path.exists(_path(ro)), "nothing written beside a read-only index"


def test_every_index_has_a_token_of_its_own_and_an_older_one_gets_one(tmp_path):
    a, b = Store(str(tmp_path / "a.db")), Store(str(tmp_path / "b.db"))
    assert len(a.vectors_token()) == 32 and a.vectors_token() != b.vectors_token()
    with a.write():
        a.db.execute("DELETE FROM meta WHERE key = 'vectors_token'")
        a.db.execute("PRAGMA user_version = 14")
    a.close()
    a = Store(str(tmp_path / "a.db"))
    assert len(a.vectors_token() or "") == 32, "migrated: 14 -> 15"


def test_two_threads_reading_vectors_and_loading_numpy_at_once(tmp_path):
    """A search reads its vectors on one thread while the model loads on another: numpy is
    imported once, by one of them (two importing it at once can fail, now and then)."""
    script = textwrap.dedent("""
        import threading
        from prima_memory import embed, semantic
        got = []
        t = threading.Thread(target=lambda: got.append(embed.offline_env()))
        t.start()
        np = semantic._numpy()
        t.join()
        print(np.ones(3).sum(), got)
    """)
    for _ in range(5):
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0 and out.stdout.strip() == "3.0 [None]", out.stderr[-2000:]


def test_a_search_through_the_cli_keeps_the_vectors_beside_the_index_and_maps_them(env):
    """What a user meets: the first search by meaning keeps the vectors beside the index; the
    next maps them, answers the same, and a session written since is still found by meaning."""
    from test_semantic import BACKUP, DAY, OLD, _corpus
    _corpus(env)
    query = "copying our postgres data every night"
    first = env.json("search", query)
    assert first["results"][0]["session_id"] == BACKUP
    files = list(env.data.glob("vectors-*.bin"))
    assert len(files) == 1 and files[0].stat().st_mode & 0o777 == 0o600
    kept = files[0].read_bytes()
    assert env.json("search", query)["results"] == first["results"]
    assert files[0].read_bytes() == kept, "mapped as it was: nothing changed"
    new = "dddd4444-0000-4000-8000-000000000004"
    env.transcript(new, start=OLD + 3 * DAY).exchange(
        "Our Grafana panels freeze whenever the browser tab sleeps",
        "The dashboard polled with setInterval, which background tabs throttle; switched to "
        "the streaming query API and the panels resume on focus.")
    got = env.json("search", "charts stop updating in an inactive tab", "--mode", "semantic")
    assert got["results"][0]["session_id"] == new, got
