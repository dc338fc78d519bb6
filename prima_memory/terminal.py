"""The one rule for text the command line writes to a terminal: a transcript, a branch name, a
file path or a shared-log entry can hold anything, and nothing in one may act on the terminal it
is printed to (clear it, set its title, write the clipboard with OSC 52, hide a link behind
OSC 8, reorder a line with a bidirectional override: "Trojan Source"). Every write of the CLI
to stdout or stderr goes through `write`, which applies `neutral`.

What it changes, and how each is shown (nothing is dropped: a user still recognises the text):
- C0 controls but a line end and a tab, DEL, the C1 controls U+0080-U+009F (8-bit CSI U+009B,
  OSC U+009D, DCS U+0090, ST U+009C...) and the bidirectional embeddings, overrides and
  isolates (U+202A-U+202E, U+2066-U+2069) are shown as their escape, as Python spells it: `\\x1b`,
  `\\x07`, `\\x9b`, `\\u202e` (`\\r`, `\\n`, `\\t` where the text is one line). Every ESC-based
  sequence (CSI, OSC with its BEL or ST end, DCS, APC, PM, SOS) then prints whole as its own
  text, inert: `\\x1b]52;c;aGk=\\x07`, `\\x1b[2J`. In text of several lines a CRLF is a line end.
- A lone surrogate (a cut emoji, a name whose bytes are not UTF-8) is U+FFFD, as everywhere.
- JSON (`json=True`): the same characters as `\\uXXXX` escapes, which JSON reads back as the
  very same characters (the encoder already escapes C0): a program gets the exact strings.
A backslash is left as it is: a transcript's `\\x1b`, typed as text, reads the same.

Standard library only and cheap (no re): a keyword search prints through it.
"""
from __future__ import annotations

import sys

_BIDI = (*range(0x202A, 0x202F), *range(0x2066, 0x206A))
_CONTROLS = (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), *_BIDI)
# one translation table per form: each character that could act -> what is shown instead
_LINE = {c: repr(chr(c))[1:-1] for c in _CONTROLS}
_LINES = {c: s for c, s in _LINE.items() if chr(c) not in "\n\t"}
_JSON = {c: f"\\u{c:04x}" for c in _CONTROLS if chr(c) not in "\n\t"}


def neutral(text: str, *, multiline: bool = True, json: bool = False) -> str:
    """`text` as it may be written to a terminal (see the module's doc). `multiline`: the text
    is output of several lines (a line end and a tab are kept); else one line, which a line end
    in it (a branch or a file named with one) must not break. `json`: a JSON document
    (jsontext's, ensure_ascii=False), its controls escaped as JSON spells them."""
    table = _JSON if json else _LINES if multiline else _LINE
    if text.isascii():
        if text.isprintable():  # (most text, at no cost)
            return text
    else:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if multiline and not json and "\r" in text:
        text = text.replace("\r\n", "\n")
    if table is _LINE or len(text) < 4096:
        return text.translate(table)
    # a long text: a line that is printable (but for its tabs), as most are, holds nothing to
    # change; translating every character instead would cost a tenth of a second a megabyte
    return "\n".join(line if line.isprintable() or line.replace("\t", "").isprintable()
                     else line.translate(table) for line in text.split("\n"))


def write(text: str, stream=None, *, multiline: bool = True, start: str = "",
          end: str = "\n") -> None:
    """Write `text`, neutral, to `stream` (stdout) between `start` and `end`, and flush: the one
    way the command line writes to a terminal. `start` and `end` are the program's own, never
    data (a progress bar's "\\r")."""
    stream = stream or sys.stdout
    stream.write(start + neutral(text, multiline=multiline) + end)
    stream.flush()
