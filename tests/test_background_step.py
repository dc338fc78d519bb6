"""background.step: the one embed-then-link sequence the background embedder and the MCP
server's idle loop share."""
from __future__ import annotations

from prima_memory import background


class FakeMemory:
    """Records the calls; embed and link answer as told (None: another process holds the lock)."""

    def __init__(self, embed, link=(0, 0)):
        self.answers = {"embed": embed, "link": link}
        self.calls: list[tuple[str, float | None, float]] = []

    def embed(self, budget, *, wait=0.0, should_stop=None):
        self.calls.append(("embed", budget, wait))
        return self.answers["embed"]

    def link(self, budget, *, wait=0.0, should_stop=None):
        self.calls.append(("link", budget, wait))
        return self.answers["link"]


def never() -> bool:
    return False


def test_links_once_nothing_is_left_to_embed():
    mem = FakeMemory(embed=(7, 0), link=(3, 2))
    assert background.step(mem, 1.0, never, wait=0.5) == (7, 2)
    assert mem.calls == [("embed", 1.0, 0.5), ("link", 1.0, 0.5)]


def test_does_not_link_while_exchanges_wait_to_be_embedded():
    mem = FakeMemory(embed=(4, 9))
    assert background.step(mem, 1.0, never) == (4, 9)
    assert [c[0] for c in mem.calls] == ["embed"]


def test_another_process_at_the_work():
    assert background.step(FakeMemory(embed=None), None, never) is None
    mem = FakeMemory(embed=(2, 0), link=None)  # it links them: nothing left for this one
    assert background.step(mem, None, never) == (2, 0)
