"""Text as the keyword index and the matching see it: NFC, folded, cut for the tokenizer."""
from __future__ import annotations

import apsw


_TOKENIZER_ARGS = ["remove_diacritics", "0"]


_NON_ASCII = "*[^\x01-\x7f]*"  # a GLOB for text with a character beyond ASCII


# Keyword rows kept for a commit are written once they hold this much text (Steps.added, between
# files): a cold index writes a hundred segments, not a thousand, and holds no more memory at
# its peak than when each file's were written at once (1 MB kept: 1.2 MB more).
UNINDEXED_CHARS = 1 << 16


def _after_space(text: str, i: int) -> int:
    """Where a piece of `text` may end at `i` or after: just past white space."""
    nl, sp = text.find("\n", i), text.find(" ", i)
    cut = min(x for x in (nl, sp, len(text) - 1) if x >= 0)
    return cut + 1


def index_text(text: str) -> str:
    """Text as the keyword index sees it: Unicode NFC (so "café" typed either way is one word) and
    Turkish İ as I, whose lower case SQLite's tokenizer and Python disagree on. ASCII as it is."""
    if text.isascii():
        return text
    import unicodedata  # (text beyond ASCII only)
    return unicodedata.normalize("NFC", text).replace("\u0130", "I")


def fold(text: str) -> str:
    """What matching compares, on both sides: index_text, lower case (length kept)."""
    return index_text(text).lower()


def _fold_value(*values):
    """fold() as SQL's prima_fold (one argument): text folded, anything else as it is."""
    return fold(values[0]) if isinstance(values[0], str) else values[0]


def _like(text: str) -> str:
    """A LIKE pattern for "contains text", with LIKE's own wildcards taken literally."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


_TOKENS_PIECE = 1 << 16


class Tokens:
    """The keyword index's tokenizer (FTS5's unicode61, as messages_fts runs it), on an index's
    connection or, for another engine (the team server's, whose lexemes are these tokens), on
    one of its own in memory."""

    def __init__(self, db=None):
        self._db = db  # the connection, or what gives it once it is open
        self._tokenizer = None

    def _tokenize(self, text: str, reason: int):
        if self._tokenizer is None:
            db = self._db() if callable(self._db) else self._db
            self._tokenizer = (db or apsw.Connection(":memory:")).fts5_tokenizer(
                "unicode61", _TOKENIZER_ARGS)
        # the tokens alone, as str (unicode61 makes no colocated ones): half the time of tuples
        return self._tokenizer(text.encode("utf-8"), reason, None, include_offsets=False,
                               include_colocated=False)

    def tokens(self, text: str) -> set[str]:
        """The distinct tokens the keyword index stores for this text (lower case). Read a
        piece at a time, cut at white space (which no token spans): the whole text through the
        tokenizer costs a third less than its distinct words split off first, and its pieces
        bound the list of tokens held at once."""
        out: set[str] = set()
        at, n = 0, len(text)
        while at < n:
            end = n if n - at <= _TOKENS_PIECE else _after_space(text, at + _TOKENS_PIECE)
            out.update(self._tokenize(index_text(text[at:end]), apsw.FTS5_TOKENIZE_DOCUMENT))
            at = end
        return out

    def token_list(self, text: str) -> list[str]:
        return list(self._tokenize(index_text(text), apsw.FTS5_TOKENIZE_QUERY))
