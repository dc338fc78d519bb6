"""Session titles: a user-set title, then the summary line, then the cleaned first prompt."""
from __future__ import annotations

import re

from .wording import cut

MAX_TITLE = 80
MAX_STORED = 200

_TAG_BLOCK = re.compile(r"<([A-Za-z][\w:-]*)(?:\s[^>]*)?>.*?</\1\s*>", re.S)
_LONE_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s[^>]*)?/?>")
_OPENERS = re.compile(
    r"^(?:(?:hey|hi|hello|ok(?:ay)?|so|well|now|alright)\b[\s,!.]*)*"
    r"(?:(?:can|could|would|will) you(?: please)?|please|pls|i(?:'d| would) like you to|"
    r"i want you to|i need you to|help me(?: to)?|let'?s|lets|we need to|you should)\b[\s,:]*",
    re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
# A first word that is only lower-case letters ("fix", "don't") is capitalised as a title's is;
# anything else is an identifier, a path or a command, left as written ("test_payment_webhook",
# "parseConfig", "src/app.py", "v2"), and so are the commands people start a request with.
_PLAIN_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?[,:;.!?]?")
_COMMANDS = frozenset("""npm npx pnpm yarn pip pipx uv poetry git gh ls cd rm mv cp cat grep rg
    sed awk curl wget ssh scp sudo brew apt docker kubectl terraform pytest cargo rustc node deno
    bun python python3 ruff mypy tsc eslint""".split())


def clean_first_prompt(text: str) -> str | None:
    """The seed's rule (docs/design.md § Transcripts): first line or sentence, tag-wrapped text
    and opening phrases removed, 80 chars (cut after a whole word, with "…"); its first word
    capitalised when it is a plain word, never an identifier (see _PLAIN_WORD)."""
    text = _TAG_BLOCK.sub(" ", text or "")
    text = _LONE_TAG.sub(" ", text)
    for line in text.splitlines():
        line = " ".join(line.split())
        if not line:
            continue
        line = _SENTENCE_END.split(line, 1)[0]
        line = _OPENERS.sub("", line).strip(" ,:;-")
        if not line:
            continue
        return cut(_capitalised(line), MAX_TITLE)
    return None


def _capitalised(line: str) -> str:
    first, _, rest = line.partition(" ")
    plain = _PLAIN_WORD.fullmatch(first) and first.islower()
    if not plain or first.rstrip(",:;.!?") in _COMMANDS or rest.startswith("-"):  # ("ls -la")
        return line
    return line[0].upper() + line[1:]


def normalize(title: str) -> str | None:
    """How titles are stored: one line, at most 200 characters (see wording.cut), None when
    blank."""
    return cut(" ".join(title.split()), MAX_STORED) or None
