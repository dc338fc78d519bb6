"""What each recent session was told at the point of action (issue #42): `edit-notes.json` in the
memory's folder, session id -> the files it got a note on and the earlier sessions it was
pointed at (hooks.py: each comes once). Read and written whole, never through a link; a
forgotten session leaves it with everything else it held (Memory._bury)."""
from __future__ import annotations

import os

from .workspace import read_plain, replace_whole

FILE = "edit-notes.json"
LIMIT = 1 << 20


def read(folder: str) -> dict[str, list[str]]:
    """The record, or {} for none, a damaged one, or anything but a regular file there."""
    import json  # (json loads re: memory.py imports this module on a keyword search's path)
    try:
        got = read_plain(os.path.join(folder, FILE), LIMIT)
        doc = json.loads(got[0]) if got else {}
    except (OSError, ValueError, RecursionError):
        doc = {}
    return {k: [p for p in v if isinstance(p, str)] for k, v in doc.items()
            if isinstance(k, str) and isinstance(v, list)} if isinstance(doc, dict) else {}


def save(folder: str, noted: dict[str, list[str]]) -> None:
    import json  # (as in read)
    replace_whole(os.path.join(folder, FILE), json.dumps(noted))


def drop(folder: str, session_ids) -> None:
    """The forgotten sessions out of the record: their own entries, and the pointers to them."""
    ids = set(session_ids)
    noted = read(folder)
    kept = {k: [x for x in v if not (x.startswith("\0") and x.split(":", 1)[-1] in ids)]
            for k, v in noted.items() if k not in ids}
    if kept != noted:
        save(folder, kept)
