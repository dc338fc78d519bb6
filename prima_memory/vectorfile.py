"""The vectors of one index and model, kept beside the index in a file that is mapped, not read.

A cold search by meaning needs every vector: read from SQLite row by row they cost 30-50 ms at
1,000 sessions and ten times that at 10,000; mapped from this file, a millisecond, and the pages
are read as the query's product touches them. The index stays the truth. The file says which
state of it it holds (the index's vectors_gen), for which model, and whose it is: a token that
only its own index's meta holds, so a file that came with a cloned folder is never read, and
neither is one left by an index since made anew. One that does not match is no error: the
vectors are read from the index, and the file written again (semantic._held decides when).

Layout, little-endian: a 128-byte header, then the rows' vectors (float32, rows x dim, so the
matrix starts aligned), their exchange ids (int64), their window numbers (int32, padded to 8
bytes), then each exchange embedded with the text hash it was embedded as (int64 ids, ascending,
then the hashes, `hlen` bytes each: what a later read compares with the index).
"""
from __future__ import annotations

import os
import stat

from .embed import numpy
from .workspace import TEMP_PREFIX, blake2b, open_nofollow, replace_whole

MAGIC = b"PRIMAVEC"
VERSION = 1
HEADER = 128
TOKEN_BYTES = 16


def _head():
    import struct  # (late: only where vectors are)
    # magic, version, dim, hash length, token, model key digest, gen, rows, exchanges
    return struct.Struct("<8sIII4x16s8sqqq")


def path_for(index: str, model: str) -> str:
    """Where the vectors of `model` (a semantic.vector_key) for the index at `index` are kept."""
    return os.path.join(os.path.dirname(os.path.abspath(index)),
                        f"vectors-{_digest(model).hex()}.bin")


def _digest(model: str) -> bytes:
    return blake2b(model.encode("utf-8", "surrogatepass"), digest_size=8).digest()


def _sizes(n: int, m: int, dim: int, hlen: int) -> tuple[int, int, int, int, int]:
    """Where each part starts: vectors, ids, windows, exchanges, hashes; and the file's size."""
    ids = HEADER + 4 * dim * n
    windows = ids + 8 * n
    exchanges = windows + (4 * n + 7) // 8 * 8
    hashes = exchanges + 8 * m
    return ids, windows, exchanges, hashes, hashes + hlen * m


class Mapped:
    """A file's rows as arrays over its mapping (read-only: nothing is ever written to them)."""

    def __init__(self, gen: int, ids, windows, mat, exchanges, hashes, hlen: int):
        self.gen, self.ids, self.windows, self.mat = gen, ids, windows, mat
        self._exchanges, self._hashes, self._hlen = exchanges, hashes, hlen

    def hashes(self) -> dict[int, bytes]:
        """exchange -> the text hash it was embedded as (read when first asked for)."""
        h, raw = self._hlen, bytes(self._hashes)
        return dict(zip(self._exchanges.tolist(),
                        (raw[i:i + h] for i in range(0, len(raw), h)))) if h else {}


def read(path: str, token: str | None, model: str, dim: int) -> Mapped | None:
    """The file's vectors if it is this index's (`token`, its meta's) for `model` and `dim`;
    None for anything else: no file, a link or FIFO in its place (never followed or waited on),
    another index's, one cut short."""
    import mmap  # (late: only where vectors are)
    key = _token(token)
    if key is None:
        return None
    try:
        fd = open_nofollow(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size < HEADER:
            return None
        head = _head()
        magic, version, fdim, hlen, ftoken, digest, gen, n, m = head.unpack(
            os.pread(fd, head.size, 0))
        if (magic, version, fdim, ftoken, digest) != (MAGIC, VERSION, dim, key, _digest(model)) \
                or min(n, m, hlen) < 0 or _sizes(n, m, dim, hlen)[-1] != st.st_size:
            return None
        mm = mmap.mmap(fd, st.st_size, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    np = numpy()
    at_ids, at_windows, at_exchanges, at_hashes, _end = _sizes(n, m, dim, hlen)
    return Mapped(gen, np.frombuffer(mm, "<i8", n, at_ids), np.frombuffer(mm, "<i4", n, at_windows),
                  np.frombuffer(mm, "<f4", n * dim, HEADER).reshape(n, dim),
                  np.frombuffer(mm, "<i8", m, at_exchanges),
                  memoryview(mm)[at_hashes:at_hashes + hlen * m], hlen)


def write(path: str, token: str | None, model: str, gen: int, ids, windows, mat,
          hashes: dict[int, bytes]) -> bool:
    """Keep these rows (the state `gen` of the index whose meta holds `token`) at `path`: whole,
    or not at all. False when they cannot be: hashes of unlike lengths (not made here), a folder
    that cannot be written (the caller reads the index again next time)."""
    np = numpy()
    key = _token(token)
    lengths = {len(h) for h in hashes.values()}
    if key is None or len(lengths) > 1:
        return False
    hlen = lengths.pop() if lengths else 0
    n, m = len(ids), len(hashes)
    exchanges = sorted(hashes)
    at_ids, at_windows, at_exchanges, _at, _end = _sizes(n, m, mat.shape[1], hlen)
    header = _head().pack(MAGIC, VERSION, mat.shape[1], hlen, key, _digest(model), gen, n, m)
    pad = at_exchanges - at_windows - 4 * n
    _sweep(os.path.dirname(path))
    try:
        replace_whole(path, [
            header.ljust(HEADER, b"\0"),
            np.ascontiguousarray(mat, dtype="<f4"),
            np.ascontiguousarray(ids, dtype="<i8"),
            np.ascontiguousarray(windows, dtype="<i4"), b"\0" * pad,
            np.asarray(exchanges, dtype="<i8"),
            b"".join(hashes[x] for x in exchanges)], durable=True)
    except OSError:
        return False
    return True


def _sweep(folder: str) -> None:
    """The temporary files of writers killed mid-write: a file of vectors is tens of MB."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        pid = name[len(TEMP_PREFIX):].split("-", 1)[0] if name.startswith(TEMP_PREFIX) else ""
        if pid.isdigit() and int(pid) > 0 and not _alive(int(pid)):
            try:
                os.unlink(os.path.join(folder, name))
            except OSError:
                pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # (another user's: alive)
        pass
    return True


def _token(token: str | None) -> bytes | None:
    try:
        key = bytes.fromhex(token or "")
    except ValueError:
        return None
    return key if len(key) == TOKEN_BYTES else None
