"""Tombstones: the sessions a user had forgotten (`prima-memory forget`) or kept out of the
memory (`PRIMA_MEMORY=off`), kept in a small file beside the index so that no later `index`,
`index --rebuild`, Stop hook or copied fork brings them back, and a damaged index moved aside
loses none of them.

The file holds ids and hashes, never the text forgotten: each session's source and id, and the
hashes of its messages' keys (a fork or a resume copies them with the same key) and of its longer
texts (a copy under another key). Written whole by temp file and rename, and signed with the
user's key (owner.py) like an index: a file a cloned repository ships forgets nothing of ours.
"""
from __future__ import annotations

import os
import time

from . import jsontext
from .errors import Failure
from .workspace import read_plain, replace_whole

FILE = "forgotten.json"
META = "forgotten"  # the index's note of the file it last applied (its stamp)
SCRUB_OWED = "forgotten_scrub_owed"  # set with a forget's deletes, until the file is rewritten
LOG_OWED = "forgotten_log_owed"  # set while a forget's write-ahead log could not be emptied
MAX_BYTES = 64 << 20  # a damaged or planted file is not read whole into memory
TEXT_MIN = 64  # a shorter text ("ok", "go on") is not told apart from another session's by it
_MAGIC = "prima-memory tombstones"


class Unreadable(Failure):
    """A tombstone file of ours that cannot be read: nothing may be indexed until it can, or a
    forgotten session would come back."""


def key_hash(source: str, key: str) -> str:
    import hashlib  # (3 ms of OpenSSL: only where there are tombstones; a search has none)
    return hashlib.sha256(f"{source}\0{key}".encode("utf-8", "surrogatepass")).hexdigest()[:32]


def text_hash(text: str) -> str | None:
    if len(text) < TEXT_MIN:
        return None
    import hashlib  # (as above)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class Tombstones:
    """What the file holds: entries of {source, id, at, why, keys, texts}."""

    def __init__(self, entries: list[dict] | None = None, *, stamp: str = "") -> None:
        self.entries = list(entries or [])
        self.stamp = stamp  # what the file was when read (Memory notes what it applied)
        self.sessions = {(e["source"], e["id"]): e for e in self.entries}
        self.keys = frozenset(k for e in self.entries for k in e.get("keys", ()))
        self.texts = frozenset(t for e in self.entries for t in e.get("texts", ()))

    def __bool__(self) -> bool:
        return bool(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def holds(self, source: str, session_id: str) -> bool:
        return (source, session_id) in self.sessions

    def drops_key(self, source: str, key: str) -> bool:
        return bool(self.keys) and key_hash(source, key) in self.keys

    def drops_text(self, text: str) -> bool:
        if not self.texts:
            return False
        h = text_hash(text)
        return h is not None and h in self.texts

    def with_entries(self, new: list[dict]) -> Tombstones:
        """These tombstones and `new` (one entry per session: a newer replaces an older)."""
        keep = {(e["source"], e["id"]): e for e in self.entries}
        for e in new:
            old = keep.get((e["source"], e["id"]))
            if old is not None:  # (forgotten again: what either saw stays forgotten)
                e = dict(e, keys=sorted({*old.get("keys", ()), *e.get("keys", ())}),
                         texts=sorted({*old.get("texts", ()), *e.get("texts", ())}))
            keep[(e["source"], e["id"])] = e
        return Tombstones(list(keep.values()))

    def without(self, pairs) -> Tombstones:
        drop = set(pairs)
        return Tombstones([e for e in self.entries if (e["source"], e["id"]) not in drop])


class Later:
    """Tombstones read only when first asked: a run that reads no file never parses them (a
    forget of many long sessions makes a file of megabytes, and every hook runs an update)."""

    def __init__(self, stamp: str, load) -> None:
        self.stamp = stamp
        self._load = load
        self._got: Tombstones | None = None

    def _tombs(self) -> Tombstones:
        if self._got is None:
            self._got = self._load()
        return self._got

    def __bool__(self) -> bool:
        return bool(self._tombs())

    def holds(self, source: str, session_id: str) -> bool:
        return self._tombs().holds(source, session_id)

    def drops_key(self, source: str, key: str) -> bool:
        return self._tombs().drops_key(source, key)

    def drops_text(self, text: str) -> bool:
        return self._tombs().drops_text(text)


def entry(source: str, session_id: str, why: str, keys=(), texts=()) -> dict:
    return {"source": source, "id": session_id, "at": round(time.time(), 3), "why": why,
            "keys": sorted(set(keys)), "texts": sorted(set(texts))}


def _mac(body: bytes) -> str:
    import hashlib  # (only where there are tombstones)
    import hmac

    from .owner import key  # (the user's key, read only where tombstones are)
    try:
        return hmac.new(key(), body, hashlib.sha256).hexdigest()
    except OSError:  # no key can be kept (a read-only home): unsigned, as indexes go unstamped
        return ""


def _same(a: bytes, b: bytes) -> bool:
    import hmac  # (as above)
    return hmac.compare_digest(a, b)


def path(folder: str) -> str:
    return os.path.join(folder, FILE)


def stamp(folder: str) -> str:
    """What changes whenever the file does (its size, time and inode), "" when there is none:
    a run compares it with what it last applied before reading the file."""
    try:
        st = os.lstat(path(folder))
    except FileNotFoundError:
        return ""
    except OSError as e:
        raise Unreadable(f"{path(folder)}: {e.strerror or e}") from None
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


def load(folder: str, warn=None, *, ours: bool = True) -> Tombstones:
    """The folder's tombstones (none when there is no file). A file not signed with the user's
    key is not theirs: it forgets nothing (said through `warn`). Raises Unreadable for one that
    cannot be read where the index has applied tombstones of ours (`ours`): a file damaged
    there would otherwise bring forgotten sessions back. Elsewhere (a cloned folder's garbage)
    it forgets nothing, and stops nothing."""
    p = path(folder)
    was = stamp(folder)
    if not was:
        return Tombstones()
    try:
        got = read_plain(p, MAX_BYTES + 1)
    except OSError as e:
        raise Unreadable(f"{p}: {e.strerror or e}") from None
    if got is None:  # a link or a folder in its place: never followed
        if warn:
            warn(f"{p} is not a plain file: no tombstone read from it")
        return Tombstones(stamp=was)
    data = got[0]
    if len(data) > MAX_BYTES:
        raise Unreadable(f"{p} is over {MAX_BYTES >> 20} MB")
    body, _, rest = data.partition(b"\n")  # (compact JSON holds no line break)
    try:  # a file cut or garbled is taken for the user's own, damaged: nothing is read in
        doc = jsontext.loads(body.decode("utf-8"))
        if not (isinstance(doc, dict) and doc.get("format") == _MAGIC):
            raise ValueError("not a tombstone file")
        entries = [dict(e, **{f: [h for h in e.get(f) or () if isinstance(h, str)]
                              for f in ("keys", "texts")})
                   for e in doc.get("sessions", []) if isinstance(e, dict)
                   and isinstance(e.get("source"), str) and isinstance(e.get("id"), str)]
    except (ValueError, TypeError, AttributeError) as e:
        if not ours:
            if warn:
                warn(f"{p} cannot be read and this index never applied it (a cloned folder's?): "
                     "it forgets nothing here")
            return Tombstones(stamp=was)
        raise Unreadable(f"{p} cannot be read ({e}); until it can, nothing new is indexed here "
                         "(move it away only to have the sessions it forgot back)") from None
    want = _mac(body)
    if want and not _same(want.encode(), rest.strip()):  # whole, but not signed with our key
        if warn:
            warn(f"{p} was not written by your prima-memory (a cloned folder's?): it forgets "
                 "nothing here")
        return Tombstones(stamp=was)
    return Tombstones(entries, stamp=was)


def save(folder: str, tombs: Tombstones) -> str:
    """Write the tombstones whole (temp file, fsync, rename); returns the new stamp."""
    body = jsontext.dumps({"format": _MAGIC, "version": 1, "sessions": tombs.entries},
                          compact=True).encode()  # (ASCII: every other character escaped)
    replace_whole(path(folder), [body, b"\n", _mac(body).encode(), b"\n"], durable=True)
    return stamp(folder)


NONE = Tombstones()
