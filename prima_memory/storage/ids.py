"""Message ids: `session << SHIFT | ordinal`, so a message's id names its session, and a
session's messages are one range of ids. Only the storage packs and unpacks them; the helpers
work on ints and on numpy arrays of ids alike."""
from __future__ import annotations

from collections import Counter

SHIFT = 24  # ordinals per session: 16M fragments, far past any real transcript


def session_of(message_id):
    """The session of a message id (or of each id in a numpy array)."""
    return message_id >> SHIFT


def first_id(session: int) -> int:
    """The lowest id a session's message can have."""
    return session << SHIFT


def last_id(session: int) -> int:
    """The highest id a session's message can have."""
    return ((session + 1) << SHIFT) - 1


def ordinal_of(message_id: int) -> int:
    """A message's place among its session's (0 the first taken)."""
    return message_id & ((1 << SHIFT) - 1)



def count_by_session(message_ids) -> Counter:
    """session -> how many of these message ids are its (the ids unpacked inline: a common
    word's 20,000 matching messages, counted without a call each)."""
    return Counter(m >> SHIFT for m in message_ids)
