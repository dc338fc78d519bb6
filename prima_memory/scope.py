"""What a request reads: one interface for a workspace's memory (memory.Memory) and every
project's (projects.AllProjects), and next a team's. The data API (api.py) asks only this, so
it has no branch on which one it holds.

A request has two steps, in this order, under one guard:
  1. `bring_up`: the explicit, bounded step that writes (what changed indexed, a deep search's
     extracts read back, new exchanges embedded and linked within a budget). A front end or
     hook runs it, or skips it when it brought the index up to date itself.
  2. the read: `memories()` opens what is there and the data API answers inside one read
     transaction of each index (api._reading); nothing in it writes.
`guarded` is the one place where a request is tried again: on a damaged index (that index
alone is moved aside and made again from its transcripts) and once on a busy one.
"""
from __future__ import annotations

import time

from .errors import Failure
from .storage import Busy, is_corruption, own_error

TYPE_CHECKING = False  # (typing's own import costs every hook: see memory.py)
if TYPE_CHECKING:
    from .logs import Log
    from .memory import Memory

BUSY_PAUSE = 0.5  # seconds before the one more try a busy index gets


class Scope:
    """The interface (Memory and AllProjects implement it); `guarded` is shared."""
    log: Log
    # the answer names each hit's project (it may come from any; "all": of this machine, "team":
    # of a team's server, and its member): see api.session_json
    wide: bool | str = False

    def memories(self, warnings: list[str]) -> list[tuple[Memory, set[int]]]:
        """The memories a read covers, as they stand (nothing updated), each with the sessions
        it leaves to another one of them (a session is shown once)."""
        raise NotImplementedError

    def bring_up(self, warnings: list[str], *, progress=None, deep: bool = False) -> None:
        """Index what changed, within the scope's budget; `deep`: the extracts too. Trouble
        that leaves the index as it stands (busy, read-only, a full disk) is a warning."""
        raise NotImplementedError

    def embedder(self):
        """The embedding model, loaded once for the scope (raises when it cannot load)."""
        raise NotImplementedError

    def embed_new(self, embedder, budget: float, warnings: list[str]) -> None:
        """New exchanges embedded for up to `budget` seconds, newest first; the rest is left to
        the background, said in `warnings`."""
        raise NotImplementedError

    def link_new(self, budget: float, warnings: list[str]) -> None:
        """SIMILAR_TO edges of the exchanges embedded since, for up to `budget` seconds."""
        raise NotImplementedError

    def early_model(self) -> bool:
        """Whether the model is worth loading on another thread while bring_up runs."""
        return False

    def describe(self, mems: list[Memory]) -> dict:
        """What an answer says of where it looked (`scope`, and how much)."""
        raise NotImplementedError

    def damaged(self, e: BaseException) -> Memory | None:
        """The memory whose index raised the corruption `e` (its path says), if one of ours."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def own_error(self, e: BaseException) -> BaseException:
        """The store's type for a driver error from a plain read, else `e`."""
        return own_error(e)

    def guarded(self, fn):
        """fn(), tried again for each index found damaged on the way (that index, and no other,
        moved aside and made again), and once more after a pause for an index busy past its
        wait. A driver error from a plain read leaves as the store's own type."""
        recovered: set[str] = set()
        paused = False
        while True:
            try:
                return fn()
            except Exception as e:
                if is_corruption(e):
                    mem = self.damaged(e)
                    if mem is None or mem.db_path in recovered:
                        raise Failure(f"an index is damaged ({' '.join(str(e).split())})"
                                      ) from None
                    recovered.add(mem.db_path)
                    mem.recover_corrupt(f"{type(e).__name__}: {e}")
                    continue
                own = self.own_error(e)
                if isinstance(own, Busy) and not paused:
                    paused = True
                    time.sleep(BUSY_PAUSE)
                    continue
                if own is e:
                    raise
                raise own from None
