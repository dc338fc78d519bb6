"""The reason a session holds for changing a file, as `files` and get_file_history show it.

Claude often edits with no words of its own, right after the user's "ok let's do that": the
reason is then in Claude's reply before, or in the request. It is chosen when read, from what
the index holds (the words stored next to each change, the messages before it), so an index
made before this rule answers with it too, and every text has been through the sources'
`<private>` stripping and redaction already."""
from __future__ import annotations

import re

CAP = 600  # characters of one text read for a reason: a 1 MB reply is read as its end

# Words that say nothing of why: assent, "go on", and Claude announcing the edit itself.
_EMPTY = frozenset("""
ok okay k kk yes yeah yep yup sure fine good great nice cool perfect alright right thanks thank
you please pls go ahead do it that this those these let lets let's us me i i'll we we'll will ll
now then so and the a an to on with continue proceed carry keep going next again sounds looks
like done edit edits editing edited update updating updated change changes changing modify
modifying write writing apply applying make making file files fix fixing shall should want can
could would be is it's here there just first also same one more that's what idea plan agreed
agree lgtm for all of them both approve approved ship
""".split())
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_MARKS = re.compile(r"\[(?:private|REDACTED:[^\]]*)\]")


def says_something(text: str | None) -> bool:
    """Whether a text carries a reason: a word beyond assent and announcements ("ok let's do
    that", "Editing.", "continue" carry none), markers of what was taken out not counted."""
    if not text:
        return False
    words = _WORD.findall(_MARKS.sub(" ", text[:CAP]).lower().replace("\u2019", "'"))
    return any(w not in _EMPTY for w in words)


def _last_part(text: str, cut: bool) -> str:
    """A reply read by its end: its last paragraph that says something, from the start of a
    sentence when the read began inside one."""
    parts = [p.strip() for p in text.split("\n\n") if p.strip()]
    for i, p in enumerate(reversed(parts)):
        if says_something(p):
            if cut and i == len(parts) - 1:  # (the first part read: maybe a sentence's tail)
                m = re.search(r"[.!?]\s+(?=\S)", p)
                if m and says_something(p[m.end():]):
                    p = p[m.end():]
            return p
    return text.strip()


def best(changes, before) -> tuple[str, str] | tuple[None, None]:
    """(reason, "claude" or "user") for a file's changes in one session, oldest first, each
    (explanation, message key); `before(key)` gives (Claude's texts, the user's requests) before
    a change, nearest first (Store.before_change). Claude's words next to a change first, then
    Claude's reply before it, then the user's request; the earliest change that has one."""
    for why, _key in changes:
        if says_something(why):
            return why.strip(), "claude"
    asked = None
    # the messages of the first few changes: two small reads each, whatever the session's size
    for key in list(dict.fromkeys(k for _w, k in changes if k))[:3]:
        said, requests = before(key)
        for text in said:
            if says_something(text):
                return _last_part(text, len(text) >= CAP), "claude"
        if asked is None:
            asked = next((r.strip() for r in requests if says_something(r)), None)
    return (asked, "user") if asked else (None, None)
