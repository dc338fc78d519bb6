"""Session titles: a user-set title, then the summary line, then the cleaned first prompt."""
from __future__ import annotations

import re

MAX_TITLE = 80

_TAG_BLOCK = re.compile(r"<([A-Za-z][\w:-]*)(?:\s[^>]*)?>.*?</\1\s*>", re.S)
_LONE_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s[^>]*)?/?>")
_OPENERS = re.compile(
    r"^(?:(?:hey|hi|hello|ok(?:ay)?|so|well|now|alright)\b[\s,!.]*)*"
    r"(?:(?:can|could|would|will) you(?: please)?|please|pls|i(?:'d| would) like you to|"
    r"i want you to|i need you to|help me(?: to)?|let'?s|lets|we need to|you should)\b[\s,:]*",
    re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def clean_first_prompt(text: str) -> str | None:
    """The seed's rule: first line or sentence, tag-wrapped text and opening phrases removed, 80 chars."""
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
        line = line[0].upper() + line[1:]
        return line[:MAX_TITLE].rstrip()
    return None


def normalize(title: str) -> str | None:
    """How titles are stored: one line, at most 200 characters, None when blank."""
    return " ".join(title.split())[:200] or None
