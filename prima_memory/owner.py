"""Whose index is this? A workspace folder can come from anywhere (a clone, an archive), and with it
a `.prima-memory/index.db` that prima-memory did not make: fake sessions for the briefing, or
triggers that rewrite what gets indexed. Nothing in the file can prove where it came from, so the
proof is kept outside it: a secret key of the user's, in their config folder, signs each index
prima-memory makes or migrates (storage.Store stamps it, and checks the stamp on every open).
A repository cannot carry a valid stamp without the user's key.
"""
from __future__ import annotations

import os

from .workspace import create_whole, read_plain

KEY_BYTES = 32


def key_path() -> str:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "prima-memory", "key")


def key() -> bytes:
    """The user's key, made on first use (private to the user). Raises OSError when it can be
    neither read nor made: a home folder that is read-only, a link or folder in its place."""
    path = key_path()
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    except _Unusable:  # empty or cut short: no index can have been stamped with it
        os.unlink(path)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    # whole or not at all: a process starting at the same moment finds no key or the whole key,
    # never an empty file (which it would replace); if another made it first, theirs is the key
    create_whole(path, os.urandom(KEY_BYTES).hex())
    return _read(path)


class _Unusable(OSError):
    pass


def _read(path: str) -> bytes:
    got = read_plain(path, 4 * KEY_BYTES)  # a link, FIFO or folder there: never followed
    if got is None:
        raise OSError(f"{path} is not a plain file")
    data = got[0].strip()
    if len(data) < KEY_BYTES:
        raise _Unusable(f"{path} is not a usable key ({len(data)} bytes)")
    return data
