"""Word queries: what search asks the keyword index, in no engine's dialect.

A Words asks for the messages holding, for every one of its groups, one of the group's terms
(index terms, as the store lists them: Store.terms_containing, Store.terms_starting): one
query word, its tokens each a group of the terms that contain it, or of its forms. AnyWords
asks for the messages any of several Words finds. Either is false when it can find nothing
(a group without a term; no Words that can): the caller need not ask."""
from __future__ import annotations


class Words:
    __slots__ = ("groups",)

    def __init__(self, groups=()):
        self.groups: tuple[tuple[str, ...], ...] = tuple(tuple(g) for g in groups)

    def __bool__(self) -> bool:
        return bool(self.groups) and all(self.groups)

    def __eq__(self, other) -> bool:
        return isinstance(other, Words) and other.groups == self.groups

    def __hash__(self) -> int:
        return hash(self.groups)

    def __repr__(self) -> str:
        return f"Words({self.groups!r})"


class AnyWords:
    __slots__ = ("words",)

    def __init__(self, words=()):
        self.words: tuple[Words, ...] = tuple(w for w in words if w)

    def __bool__(self) -> bool:
        return bool(self.words)

    def __repr__(self) -> str:
        return f"AnyWords({self.words!r})"
