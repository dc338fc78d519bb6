"""Tombstones: the sessions a user had forgotten (`prima-memory forget`) or kept out of the
memory (`PRIMA_MEMORY=off`), kept in a small file beside the index so that no later `index`,
`index --rebuild`, Stop hook or copied fork brings them back, and a damaged index moved aside
loses none of them.

The file holds ids and hashes, never the text forgotten: each session's source and id, and the
hashes of its messages' keys (a fork or a resume copies them with the same key), of its longer
texts and of each message with the one before it (a copy under other keys), and of its titles
(a fork copies the title record too). Written whole by temp file and rename under a lock of its
own (never the index's writer lock: a long index must not keep a forget or an opt-out from being
written), and signed with the user's key (owner.py).

One rule, whatever the state of the key or the file: a tombstone is never ignored. A file that
reads whole is honoured even when its signature is cut or not this user's (their key deleted, or
another XDG_CONFIG_HOME): it can only keep sessions out, those whose ids and keys it names, which
a planted file cannot know. A file that cannot be read (cut, flipped, a link, a folder or a FIFO
in its place, over the size bound) may be the user's own, damaged: nothing new is indexed until
it can be read (Unreadable), rather than bring the sessions it forgot back.
"""
from __future__ import annotations

import os
import time

from . import jsontext, owner
from .errors import Failure
from .locking import LockTimeout, WriterLock
from .workspace import read_plain, replace_whole

FILE = "forgotten.json"
LOCK = "forgotten.lock"  # held while the file is read, changed and written again
META = "forgotten"  # the index's note of the file it last applied (its stamp)
SCRUB_OWED = "forgotten_scrub_owed"  # set with a forget's deletes, until the file is rewritten
LOG_OWED = "forgotten_log_owed"  # set while a forget's write-ahead log could not be emptied
# A file is read whole: past this it cannot be the user's (a forget of 10,000 long sessions
# writes some 60 MB) and is not read into memory.
MAX_BYTES = 512 << 20
TEXT_MIN = 64  # a shorter text ("ok", "go on") is not told apart from another session's alone
PAIR_EVIDENCE = 24  # a message and the one before it, this long together, mark a copy
LOCK_WAIT = 10.0  # seconds a writer of the file waits for another (each holds it a moment)
_MAGIC = "prima-memory tombstones"
_FIELDS = ("keys", "texts", "titles")


class Unreadable(Failure):
    """A tombstone file that cannot be read: nothing may be indexed until it can, or a
    forgotten session would come back."""


def _h(data: str) -> str:
    import hashlib  # (3 ms of OpenSSL: only where there are tombstones; a search has none)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def key_hash(source: str, key: str) -> str:
    return _h(f"{source}\0{key}")


def text_hash(text: str) -> str | None:
    return _h(text) if len(text) >= TEXT_MIN else None


def pair_hash(before: str | None, text: str) -> str | None:
    """A message with the one before it in its session (None: it is the first), so a copy
    under other keys repeats both, where another session's same short reply ("Done.") follows
    something else. None for a message, or one before it, with no text."""
    if before == "" or not text:
        return None
    return _h(f"\0pair\0{'' if before is None else before}\0{before is None}\0{text}")


def title_hash(title: str) -> str:
    return _h(f"\0title\0{title}")


def marks(texts, titles=(), before: str | None = None) -> tuple[set[str], set[str]]:
    """(text hashes, title hashes) of a session's messages' texts, in their order (`before`:
    the text of the message before the first), and titles."""
    out: set[str] = set()
    for text in texts:
        for h in (text_hash(text), pair_hash(before, text)):
            if h:
                out.add(h)
        before = text
    return out, {title_hash(t) for t in titles if t}


class Tombstones:
    """What the file holds: entries of {source, id, at, why, keys, texts, titles}."""

    def __init__(self, entries: list[dict] | None = None, *, stamp: str = "") -> None:
        self.entries = list(entries or [])
        self.stamp = stamp  # what the file was when read (Memory notes what it applied)
        self.sessions = {(e["source"], e["id"]): e for e in self.entries}
        self.keys = frozenset(k for e in self.entries for k in e.get("keys", ()))
        self.texts = frozenset(t for e in self.entries for t in e.get("texts", ()))
        self.titles = frozenset(t for e in self.entries for t in e.get("titles", ()))
        self._owners: dict[str, tuple[str, str]] | None = None

    def __bool__(self) -> bool:
        return bool(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def holds(self, source: str, session_id: str) -> bool:
        return (source, session_id) in self.sessions

    def drops_key(self, source: str, key: str) -> bool:
        return bool(self.keys) and key_hash(source, key) in self.keys

    def owner(self, source: str, key: str) -> tuple[str, str] | None:
        """The forgotten session a message key is of (a fork copied it from there)."""
        if self._owners is None:
            self._owners = {k: (e["source"], e["id"]) for e in self.entries
                            for k in e.get("keys", ())}
        return self._owners.get(key_hash(source, key))

    def drops_title(self, title: str | None, skip=()) -> bool:
        """Whether a title is a forgotten session's; not `skip`'s (sessions whose tombstones
        may hold the reader's own titles, copied: see Indexer._had_first)."""
        h = title_hash(title) if title and self.titles else None
        if h is None or h not in self.titles:
            return False
        return not skip or any(h in e.get("titles", ()) for pair, e in self.sessions.items()
                               if pair not in skip)

    def with_entries(self, new: list[dict]) -> Tombstones:
        """These tombstones and `new` (one entry per session: what either saw stays forgotten)."""
        keep = {(e["source"], e["id"]): e for e in self.entries}
        for e in new:
            old = keep.get((e["source"], e["id"]))
            if old is not None:
                e = dict(old, **{f: sorted({*old.get(f, ()), *e.get(f, ())}) for f in _FIELDS})
            keep[(e["source"], e["id"])] = e
        return Tombstones(list(keep.values()))

    def adds(self, new: list[dict]) -> bool:
        """Whether `new` names a session or a hash these tombstones do not hold."""
        return any(not self.holds(e["source"], e["id"]) or not set(e.get("keys", ())) <= self.keys
                   or not set(e.get("texts", ())) <= self.texts
                   or not set(e.get("titles", ())) <= self.titles for e in new)

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

    def __getattr__(self, name: str):  # (holds, drops_key, texts, ...: the file's, once read)
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._tombs(), name)


def entry(source: str, session_id: str, why: str, keys=(), texts=(), titles=()) -> dict:
    return {"source": source, "id": session_id, "at": round(time.time(), 3), "why": why,
            "keys": sorted(set(keys)), "texts": sorted(set(texts)), "titles": sorted(set(titles))}


def _mac(body: bytes) -> str:
    import hashlib  # (only where there are tombstones)
    import hmac

    try:
        return hmac.new(owner.key(), body, hashlib.sha256).hexdigest()
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


def _unreadable(p: str, why: str) -> Unreadable:
    return Unreadable(f"{p} {why}: it may be your own, damaged, and what it forgot would come "
                      "back, so nothing new is indexed here until it can be read (move it away "
                      "only if it is not yours)")


def load(folder: str, warn=None) -> Tombstones:
    """The folder's tombstones (none when there is no file). Raises Unreadable for a file that
    cannot be read whole. One that reads whole but is not signed with the user's key is
    honoured all the same (said through `warn`): see the module's note."""
    p = path(folder)
    was = stamp(folder)
    if not was:
        return Tombstones()
    try:
        got = read_plain(p, MAX_BYTES + 1)
    except OSError as e:
        raise _unreadable(p, f"cannot be read ({e.strerror or e})") from None
    if got is None:  # a link, a folder or a FIFO in its place: never followed or waited on
        raise _unreadable(p, "is not a plain file")
    data = got[0]
    if len(data) > MAX_BYTES:
        raise _unreadable(p, f"is over {MAX_BYTES >> 20} MB")
    body, _, rest = data.partition(b"\n")  # (compact JSON holds no line break)
    try:
        doc = jsontext.loads(body.decode("utf-8"))
        if not (isinstance(doc, dict) and doc.get("format") == _MAGIC):
            raise ValueError("not a tombstone file")
        sessions = doc.get("sessions")
        if not isinstance(sessions, list):
            raise ValueError("no list of sessions")
        entries = [dict(e, **{f: [h for h in e.get(f) or () if isinstance(h, str)]
                              for f in _FIELDS})
                   for e in sessions if isinstance(e, dict)
                   and isinstance(e.get("source"), str) and isinstance(e.get("id"), str)]
    except (ValueError, TypeError, AttributeError) as e:
        raise _unreadable(p, f"cannot be read ({e})") from None
    want = _mac(body)
    if want and not _same(want.encode(), rest.strip()) and warn:
        warn(f"{p} is not signed with your key (it was cut, or written with a key you no longer "
             "have, or it came with the folder): honoured all the same, since a tombstone can "
             "only keep sessions out")
    return Tombstones(entries, stamp=was)


def save(folder: str, tombs: Tombstones) -> str:
    """Write the tombstones whole (temp file, fsync, rename); returns the new stamp. Under
    `changing`'s lock."""
    body = jsontext.dumps({"format": _MAGIC, "version": 1, "sessions": tombs.entries},
                          compact=True).encode()  # (ASCII: every other character escaped)
    replace_whole(path(folder), [body, b"\n", _mac(body).encode(), b"\n"], durable=True)
    return stamp(folder)


class Busy(Failure):
    """Another process held the tombstone file's lock past the wait."""


def change(folder: str, fn, *, wait: float = LOCK_WAIT, warn=None) -> Tombstones:
    """fn(the tombstones as they are now) -> new tombstones (None: no change), written under the
    file's own lock; returns them as written (or as they were). Never writes over a file that
    cannot be read (Unreadable): what it held would be lost."""
    lock = WriterLock(os.path.join(folder, LOCK))
    try:
        lock.acquire(timeout=wait)
    except LockTimeout:
        raise Busy(f"another prima-memory process is writing {path(folder)}") from None
    try:
        tombs = load(folder, warn)
        new = fn(tombs)
        if new is None:
            return tombs
        new.stamp = save(folder, new)
        return new
    finally:
        lock.release()


NONE = Tombstones()


def copies(tombs, source: str, messages, before: str | None = None, *,
           by_key: bool = True) -> set[str]:
    """Of one session's messages [(key, stored text)], in their order, the keys of those that are
    a forgotten session's: under its keys (`by_key`: where keys are shared, as Claude Code's
    uuids are), and, once the session is known to copy one (a key of it, or a message with the
    one before it as that session had them), under its texts too: a copy made under new keys.
    `before`: the session's message before these. The same long prompt in a session that copies
    nothing is that session's own."""
    out = {k for k, _t in messages if tombs.drops_key(source, k)} \
        if by_key and tombs.keys else set()
    if not tombs.texts:
        return out
    copying, same = bool(out), set()
    for key, text in messages:
        pair = pair_hash(before, text)
        if pair in tombs.texts:
            same.add(key)  # (a first message alone is as weak as one long text: no evidence)
            copying = copying or (before is not None
                                  and len(before) + len(text) >= PAIR_EVIDENCE)
        elif text_hash(text) in tombs.texts:
            same.add(key)
        before = text
    return out | same if copying else out
