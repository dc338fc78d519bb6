"""What a tool call printed and what an edit changed, read back from a session's Claude Code
transcripts for an export (`prima-memory export`): the index keeps a call in brief, never its
output, so these exist only while the transcript does.

Each text is taken as every other text is (sources/text.py): the <private> spans out, then
redacted, then cut to OUTPUT_MAX characters (a window a little past the cut is redacted, so a
secret halved by it is still found; a 50 MB output costs a read, not a document). An edit's
change is a unified diff of its old and new text, each redacted before it is compared: a secret
split over `-` and `+` lines would escape the patterns.
"""
from __future__ import annotations

from .jsonl import JsonlReader
from .text import _SLACK, head, line_cut, strip_private

OUTPUT_MAX = 20_000  # characters of one output, or one diff, that an export carries

_DIFFED = ("Edit", "MultiEdit", "Write")


class Detail:
    """A call's output (`output`, redacted, cut; `output_chars`: its whole length, `output_cut`:
    whether it was cut; `error`: the tool failed) and its change (`diff`, `diff_cut`)."""
    __slots__ = ("output", "output_chars", "output_cut", "error", "diff", "diff_cut")

    def __init__(self) -> None:
        self.output: str | None = None
        self.output_chars = 0
        self.output_cut = False
        self.error = False
        self.diff: str | None = None
        self.diff_cut = False


def read(paths, scrub) -> tuple[dict[str, Detail], int]:
    """Call id -> its Detail, from the transcripts at `paths` (a session's files: its own and its
    subagents'), and how many of their lines could not be read (over the reader's MAX_LINE, or
    not JSON: the outputs they held are missing). A file gone or unreadable adds nothing.
    `scrub`: text -> redacted text."""
    out: dict[str, Detail] = {}
    unread = 0
    for path in paths:
        # (mtime 0: a last line without its newline is read as it stands, nothing waits on it)
        reader = JsonlReader(path, 0, mtime=0, skip=_no_call)
        try:
            for obj in reader:
                _take(obj, out, scrub)
        except (OSError, ValueError):
            pass
        unread += reader.bad_lines
    return out, unread


def _no_call(line, start: int, end: int) -> bool:
    return line.find(b"tool_use", start, end) < 0  # (tool_use blocks and tool_use_id results)


def _take(obj: dict, out: dict[str, Detail], scrub) -> None:
    msg = obj.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "tool_use" and block.get("name") in _DIFFED:
            call, inp = block.get("id"), block.get("input")
            if isinstance(call, str) and isinstance(inp, dict):
                d = out.setdefault(call, Detail())
                d.diff, d.diff_cut = _diff(block["name"], inp, scrub)
        elif kind == "tool_result":
            call = block.get("tool_use_id")
            if isinstance(call, str):
                d = out.setdefault(call, Detail())
                whole = _result_text(block.get("content"))
                d.output_chars = len(whole)
                d.output = kept(whole, scrub)
                d.output_cut = len(whole) > OUTPUT_MAX
                d.error = block.get("is_error") is True


def _result_text(content) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for b in content if isinstance(content, list) else ():
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str):
            parts.append(b["text"])
        elif isinstance(b, dict) and b.get("type") == "image":
            parts.append("[image]")
    return "\n".join(parts)


def kept(text: str, scrub, n: int = OUTPUT_MAX) -> str:
    """`text` as an export may carry it: without its <private> spans, redacted, cut to n
    characters (never inside a [REDACTED:kind] tag), its lone surrogates as U+FFFD."""
    if not text:
        return ""
    text = head(scrub(line_cut(strip_private(text), n + _SLACK)), n)
    if not text.isascii():
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _diff(tool: str, inp: dict, scrub) -> tuple[str | None, bool]:
    """An edit's change as a unified diff (old and new each redacted first), cut to OUTPUT_MAX."""
    if tool == "Edit":
        pairs = [(inp.get("old_string"), inp.get("new_string"))]
    elif tool == "MultiEdit":
        edits = inp.get("edits")
        pairs = [(e.get("old_string"), e.get("new_string"))
                 for e in (edits if isinstance(edits, list) else ()) if isinstance(e, dict)]
    else:
        pairs = [("", inp.get("content"))]
    # only an export with outputs compares texts (difflib: 10 ms of import)
    import difflib
    hunks: list[str] = []
    cut = False
    for old, new in pairs:
        if not isinstance(old, str) or not isinstance(new, str):
            continue
        a, b = kept(old, scrub), kept(new, scrub)
        cut = cut or max(len(old), len(new)) > OUTPUT_MAX
        # (no names in the header: the call shows its file, as short as the workspace allows)
        lines = list(difflib.unified_diff(a.splitlines(), b.splitlines(),
                                          "/dev/null" if tool == "Write" else "before",
                                          "after", lineterm="", n=2))
        hunks += lines if not hunks else lines[2:]  # (the file's header once)
    if not hunks:
        return None, False
    text = "\n".join(hunks)
    if len(text) > OUTPUT_MAX:
        text, cut = line_cut(text, OUTPUT_MAX, OUTPUT_MAX // 4), True
    return text, cut
