"""What a failing command said, reduced to the line that names its error (issue #42: "a problem
met before brings back its fix"). The index keeps that line for each failed call of a command
tool, with a key: the line with what changes from run to run taken out (paths but their file's
name, numbers, addresses, hashes, case). A failure now is looked up by its key, so "seen before"
means the same error, not a few shared words: the pointer it leads to must be right nine times
in ten.

A line too plain to tell one error from another ("make: *** Error 2", "1 failed, 3 passed",
"Exit code 1") is no signature: such a failure is never looked up."""
from __future__ import annotations

SIGNATURE_CHARS = 300  # a signature line kept, at most
KEY_CHARS = 200
READ_LINES = 400  # lines of an error read from each end: a 50 MB output is not scanned whole
READ_CHARS = READ_LINES * 2000  # and characters: each line is read up to 2,000

_patterns = None


def _compiled():
    global _patterns
    if _patterns is None:
        import re  # (only where an error is read: not on every hook's path)
        _patterns = (
            # a line that names an error
            re.compile(r"(?i)error|exception|\b(?:fatal|panic|failed|failure|not found|"
                       r"cannot|can't|could not|couldn't|no such|denied|refused|undefined|"
                       r"unresolved|unknown|invalid|missing|segmentation fault|timed out|"
                       r"traceback)\b"),
            # a typed error ("KeyError: 'x'", "error TS2322:", "E0425"): the most telling kind
            re.compile(r"[a-z](?:Error|Exception)\b|\berror\[?[A-Z]*\d+|\bE\d{4}\b"),
            # wrappers that say a command failed, never why
            re.compile(r"(?i)^(?:exit code \d+|error: process completed|process exited|"
                       r"make(?:\[\d+\])?: \*\*\*|npm err! (?:code|errno|a complete log|"
                       r"this is probably|failed at)|error command failed|elifecycle|"
                       r"=+ .*(?:failed|error)|failed$|\d+ (?:failed|errors?)\b|"
                       r"errors? occurred|short test summary|traceback \(most recent)"),
            re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"),  # escapes
            # what changes from one run of the same error to the next: a path's folders (from a
            # word's start only, each ending at its slash: a long word is not tried at every
            # letter)
            re.compile(r"(?<![\w.@+-])(?:[A-Za-z]:)?[\\/]?(?:[\w.@+-]+[\\/])+"),
            re.compile(r"0x[0-9a-f]+|\b[0-9a-f]{7,}\b"),  # addresses, hashes
            re.compile(r"\b\d+\b"),  # numbers on their own (a code such as TS2322 stays)
            re.compile(r"[a-z]{3,}"),
        )
    return _patterns


_PLAIN = frozenset("error errors exception failed failure fatal exit code command code process "
                   "with the and not for line file status returned".split())


def read(text, scrub) -> tuple[str, str] | None:
    """(the line naming a failure's error, redacted by `scrub`, and its key), or None: what the
    index keeps of a failed call, and what a failure now is looked up by."""
    sig = signature(text)
    if sig is None:
        return None
    sig = scrub(sig)
    k = key(sig)
    return None if k is None else (sig, k)


def signature(text: str) -> str | None:
    """The line of a failure's output that names its error, as it reads (escapes out, spaces
    collapsed, at most SIGNATURE_CHARS); None when no line does, or only a plain one."""
    if not isinstance(text, str) or not text:
        return None
    erroneous, typed, wrapper, escapes, *_ = _compiled()
    if len(text) > 2 * READ_CHARS:  # (a long output is never split whole: its ends are read)
        lines = text[:READ_CHARS].splitlines()[:READ_LINES] \
            + text[-READ_CHARS:].splitlines()[1:][-READ_LINES:]
    else:
        lines = text.splitlines()
        if len(lines) > 2 * READ_LINES:
            lines = lines[:READ_LINES] + lines[-READ_LINES:]
    found = []
    for raw in lines:
        line = " ".join(escapes.sub("", raw[:2000]).split())
        line = line.removeprefix("E ").strip()
        if len(line) >= 12 and erroneous.search(line) and not wrapper.match(line) \
                and key(line) is not None:
            found.append(line)
    if not found:
        return None
    # a typed error names the cause: the last one (a traceback ends with it); else the first
    # line that says what went wrong (a compiler's first error)
    best = next((ln for ln in reversed(found) if typed.search(ln)), found[0])
    return best[:SIGNATURE_CHARS]


def key(line: str) -> str | None:
    """A signature's key: the same for the same error met again elsewhere or later (paths but
    their file's name, numbers, addresses and case out). None when too little is left to tell
    it from other errors: fewer than two words beyond the plain ones ("KeyError: 'user_id'"
    has two: keyerror, user)."""
    *_, folders, hexes, digits, words = _compiled()
    k = folders.sub("", line.lower())
    k = hexes.sub("#", k)
    k = digits.sub("0", k)
    k = " ".join(k.split()).strip(" .:;,")
    if len({w for w in words.findall(k) if w not in _PLAIN}) < 2:
        return None
    return k[:KEY_CHARS]
