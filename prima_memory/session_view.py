"""One session as everything that shows it sees it: the briefing, checkpoints, extracts, `show`,
`recent`, `digest` and, through the data API, the MCP answers. Each of these is defined here
once, read from the store by `build`; the renderers take the view, never the store:

- where the session stopped (`stopped`): its last reply, after the one before it when the last
  says too little on its own;
- its first and last requests;
- its excerpts: its last substantial replies;
- the files it changed, and its last exchanges;
- what it left unfinished, and the next step (`left_open`: the briefing marks it).

Standard library only and cheap (plain classes, not dataclasses, whose import costs the
SessionStart hook milliseconds): the hook renders the briefing from these views.
"""
from __future__ import annotations

import re
from bisect import bisect_right

TYPE_CHECKING = False  # (typing's own costs the hook an import; type checkers read this as True)
if TYPE_CHECKING:  # types only: the store is the caller's, already open
    from .storage import SessionRow, Store

# A reply longer than this says something: Claude's replies of a line or two ("Done.", "Let me
# run the tests.") are narration between tool calls. The excerpts (an extract's "last
# substantial replies", the seed's "more than 200 characters": docs/design.md § Extracts) are
# these.
SUBSTANTIAL = 200

# Where a session stopped is its real end: the last reply of its main thread (never a subagent's),
# whatever its length. A last reply shorter than TOO_LITTLE characters (its white space collapsed)
# says too little on its own: "Done.", "All 42 tests pass.", "Should I update the README too?"
# name no subject, so the reply before it comes first, both in order. "The one before" is the
# nearest earlier reply that itself says enough, skipping narration between tool calls ("Now the
# colour.", "Let me run the tests."), which says no more than "Done." does; when none does, the
# reply just before. One short sentence of substance ("Fixed: the socket listeners are removed
# on close; RSS stays flat at 180 MB.", 75 characters) is over the bar and stands alone: it, not
# the long diagnosis before it, is where the work stood. The reply before is cut to
# BEFORE_CHARS, so the last always fits what renders it (see `stopped_line`).
TOO_LITTLE = 60
BEFORE_CHARS = 400


class Said:
    """One message of a session: when, and what."""
    __slots__ = ("at", "text")

    def __init__(self, at: float | None, text: str) -> None:
        self.at = at
        self.text = text

    def __repr__(self) -> str:
        return f"Said({self.at!r}, {self.text[:40]!r})"


class Change:
    """One change of a file: which, with which tool, Claude's reason, when."""
    __slots__ = ("path", "tool", "explanation", "at")

    def __init__(self, path: str, tool: str | None, explanation: str | None,
                 at: float | None) -> None:
        self.path = path
        self.tool = tool
        self.explanation = explanation
        self.at = at


class Exchange:
    """A request of the main thread and the reply to it (None: tools only, no text)."""
    __slots__ = ("id", "at", "prompt", "reply")

    def __init__(self, id: int, at: float | None, prompt: str | None,
                 reply: str | None) -> None:
        self.id = id
        self.at = at
        self.prompt = prompt
        self.reply = reply


class ToolUse:
    """One tool call: which tool, what it acted on, one line about it, when; `kind` says what
    `target` is ("path", "command", "url", or ""); `call` its id in the transcript (None where
    the source gives none)."""
    __slots__ = ("tool", "target", "line", "at", "kind", "sidechain", "call")

    def __init__(self, tool: str, target: str, line: str, at: float | None, kind: str = "",
                 sidechain: bool = False, call: str | None = None) -> None:
        self.tool = tool
        self.target = target
        self.line = line
        self.at = at
        self.kind = kind
        self.sidechain = sidechain
        self.call = call


class Turn:
    """One message as `show` and `export` read it, with the tool calls the agent made in it
    (see `turns`); an agent's turn of tool calls alone has no text."""
    __slots__ = ("role", "at", "sidechain", "text", "tools")

    def __init__(self, role: str, at: float | None, sidechain: bool, text: str) -> None:
        self.role = role
        self.at = at
        self.sidechain = sidechain
        self.text = text
        self.tools: list[ToolUse] = []


class Open:
    """What a session left unfinished (see `left_open`): `why` is "no reply", "next step",
    "asked", "mid-task" or "todo"; `text` the step it names ("" for "no reply"); `said` the
    words of the last reply that name it, which a renderer need not repeat ("" when none)."""
    __slots__ = ("why", "text", "said")

    def __init__(self, why: str, text: str, said: str = "") -> None:
        self.why = why
        self.text = text
        self.said = said

    def __repr__(self) -> str:
        return f"Open({self.why!r}, {self.text[:40]!r})"


class SessionView:
    """A session's row and what its renderers show of it. Always there: `last_request` and
    `stopped`. The rest only when `build` was asked for it (empty otherwise): `requests` (every
    request of the main thread, in order; `first_request` comes from it), `changed_paths`,
    `changes`, `excerpts` (newest first), `exchanges` (the last ones, in order) and `open`
    (what it left unfinished, None when nothing)."""
    __slots__ = ("row", "last_request", "stopped", "requests", "changed_paths", "changes",
                 "excerpts", "exchanges", "open")

    def __init__(self, row: SessionRow, *, last_request: Said | None = None,
                 stopped: Said | None = None, requests: list[Said] | None = None,
                 changed_paths: list[str] | None = None, changes: list[Change] | None = None,
                 excerpts: list[Said] | None = None,
                 exchanges: list[Exchange] | None = None) -> None:
        self.row = row
        self.last_request = last_request
        self.stopped = stopped
        self.requests = requests or []
        self.changed_paths = changed_paths or []
        self.changes = changes or []
        self.excerpts = excerpts or []
        self.exchanges = exchanges or []
        self.open: Open | None = None

    @property
    def first_request(self) -> Said | None:
        """The first request of the main thread (known when `requests` was built)."""
        return self.requests[0] if self.requests else None

    @property
    def unanswered(self) -> bool:
        """The last request came after the last reply (or there is no reply): the session
        stopped on a request, which `stopped` (a reply, or None) does not show."""
        r, s = self.last_request, self.stopped
        if r is None:
            return False
        return s is None or (r.at is not None and s.at is not None and r.at > s.at)


def build(store: Store, row: SessionRow, *, requests: bool = False, paths: bool = False,
          changes: bool = False, excerpts: int = 0, exchanges: int = 0,
          open_end: bool = False) -> SessionView:
    """The view of a session, with the parts asked for: a briefing of five sessions or a digest
    of two hundred reads only the little it shows."""
    view = SessionView(
        row,
        last_request=last_request(store, row.id),
        stopped=where_it_stopped(store, row.id),
        requests=_requests(store, row.id) if requests else None,
        changed_paths=store.changed_paths(row.id) if paths else None,
        changes=[Change(*c) for c in store.file_changes(row.id)] if changes else None,
        excerpts=_substantial(store, row.id, excerpts) if excerpts else None,
        exchanges=[Exchange(*e) for e in store.exchanges(row.id)[-exchanges:]]
        if exchanges else None)
    if open_end:
        view.open = left_open(store, view)
    return view


def where_it_stopped(store: Store, session: int) -> Said | None:
    """Where a session stopped: its last reply in the main thread; when that says too little on
    its own (under TOO_LITTLE characters), the reply before it that says enough (else the one
    just before; cut to BEFORE_CHARS) then the last, as one text of two paragraphs dated by the
    last. None: no reply yet. The one definition, for the briefing, checkpoints, extracts,
    `show`, `digest` and the MCP tools."""
    got = store.last_messages(session, "assistant", 2)
    if not got:
        return None
    at, text = got[0]
    if len(got) < 2 or not says_too_little(text):
        return Said(at, text)
    # (the last is under TOO_LITTLE once collapsed, but may be longer as stored: 3, not 2)
    enough = [t for _ts, t in store.last_messages(session, "assistant", 3,
                                                  min_chars=TOO_LITTLE - 1)
              if not says_too_little(t)]
    before = (enough[0] if enough else got[1][1]).strip()
    if len(before) > BEFORE_CHARS:
        before = before[:BEFORE_CHARS - 1].rstrip() + "…"
    return Said(at, f"{before}\n\n{text.strip()}")


# A line of the last reply that names what comes next: "Next step: …", "**Next:** …", "- Remaining:
# …", at the start of a line or of a sentence. With nothing after its colon (a heading over a
# list), its first item is the step.
_NEXT = re.compile(
    r"(?:^|(?<=[.!?)] ))[ \t]*(?:[-*•][ \t]+)?(?:\*\*|__)?(?:next steps?|next up|next|remaining"
    r"|still to do|left to do|to do|open questions?|follow[- ]ups?)(?:\*\*|__)?[ \t]*:"
    r"(?:\*\*|__)?[ \t]*(?P<text>[^\n]*)", re.I | re.M)
_ITEM = re.compile(r"^[ \t]*(?:[-*•]|\d+[.)])[ \t]+(?P<text>\S[^\n]*)", re.M)
_FENCE = re.compile(r"^[ \t]*(```|~~~).*?(?:^[ \t]*\1[^\n]*$|\Z)", re.M | re.S)
# The closers that ask nothing: "Let me know if you need anything else!", "Does that help?"
_POLITE = re.compile(r"anything else|let me know|any (?:other |more |further )?questions"
                     r"|further (?:help|assistance)|does (?:that|this) (?:help|make sense)", re.I)
# A sentence ends at ".", "!", "?" or "…" (and the quotes or markup closing it) before white
# space; not at "e.g." or "i.e.".
_SENTENCE_END = re.compile(r"(?<![ (][a-z]\.[a-z])[.!?…][\"')\]*_`]*(?=\s)")
_TODOS = re.compile(r"\d+ todos")  # a TodoWrite call's line when none was in progress


def left_open(store: Store, view: SessionView) -> Open | None:
    """What the session left unfinished, from what the index holds, the first that applies: its
    last request got no reply; its last reply names the next step ("Next step: …"); Claude
    asked something and got no answer (a question ends the last reply, not a polite closer, or
    its last call asks the user); it stopped while working (tool calls after its last reply:
    the todo then in progress, else the last call); its todo list has an item in progress.
    None: it ended on an answer."""
    if view.unanswered:
        return Open("no reply", "")
    got = store.last_messages(view.row.id, "assistant", 1)
    at, last = got[0] if got else (None, "")
    prose = _FENCE.sub("", last)  # (a "# TODO: …" in code is no step of the session)
    steps = list(_NEXT.finditer(prose))
    if steps:
        step = steps[-1]
        text = step["text"].strip().strip("*_").strip()
        said = step.group(0).strip()
        if not text:  # a heading: its first item is the step
            item = _ITEM.search(prose, step.end())
            text = item["text"].strip() if item else ""
            said = ""
        if text:
            return Open("next step", text, said)
    # Tool calls after the last reply: it stopped while working. (Strictly after: a source that
    # dates a whole answer once, as VS Code does, dates its calls as its reply.)
    call_at, tool, target, line = store.last_call(view.row.id) or (None, "", "", "")
    working = call_at is not None and (at is None or call_at > at)
    if working and tool == "AskUserQuestion" and line:
        return Open("asked", line)
    ends = sentences(prose)
    tail = ends[-1] if ends else ""
    if not working and tail.rstrip("*_`\"')").endswith("?") and not _POLITE.search(tail):
        return Open("asked", tail, tail)
    todo = store.last_call(view.row.id, "TodoWrite")
    doing = todo.line if todo and todo.line and not _TODOS.fullmatch(todo.line) else ""
    if working:
        return Open("mid-task", doing or " ".join(filter(None, (tool, target or line))))
    return Open("todo", doing) if doing else None


def sentences(text: str) -> list[str]:
    """`text`'s sentences, in order, each with its own white space."""
    out, start = [], 0
    for end in _SENTENCE_END.finditer(text):
        out.append(text[start:end.end()].strip())
        start = end.end()
    out.append(text[start:].strip())
    return [s for s in out if s]


def says_too_little(reply: str) -> bool:
    """A reply that, alone, does not say where the work stood (see TOO_LITTLE)."""
    return len(" ".join(reply.split())) < TOO_LITTLE


def stopped_line(text: str | None, limit: int) -> str:
    """Where a session stopped, on one line of at most `limit` characters. A text too long loses
    its middle, never its end: the last reply (under TOO_LITTLE characters when a reply before
    it was added) is the point."""
    text = " ".join((text or "").split())
    if len(text) <= limit:
        return text
    if limit < 4 * TOO_LITTLE // 3:  # (no room for a start and an end)
        return text[:limit - 1].rstrip() + "…"
    keep = min(TOO_LITTLE, limit // 2)
    tail = text[-keep:]
    cut = tail.find(" ")
    if 0 <= cut < len(tail) - 1 and text[-keep - 1] != " ":  # from a whole word on
        tail = tail[cut + 1:]
    head = text[:limit - len(tail) - 3].rstrip()
    return f"{head} … {tail}"


def last_request(store: Store, session: int) -> Said | None:
    """The last request of the main thread (the one it was written last)."""
    got = store.last_messages(session, "user", 1)
    return Said(*got[0]) if got else None


def _substantial(store: Store, session: int, n: int) -> list[Said]:
    """The session's excerpts: its last n substantial replies of the main thread, newest first."""
    return [Said(ts, text) for ts, text in
            store.last_messages(session, "assistant", n, min_chars=SUBSTANTIAL)]


def _requests(store: Store, session: int) -> list[Said]:
    return [Said(ts, text) for _id, role, ts, side, text in store.messages(session)
            if role == "user" and not side]


def turns(store: Store, session: int, *, tools: bool = True) -> list[Turn]:
    """A session's messages in conversation order (its main thread, then its subagents'), each
    with the tool calls after it. A call is the agent's: it goes with the reply that made it
    where that reply is shown (ToolCall.message_key), else with the agent's reply shown nearest
    around it in its turn: the last one since the request before it, else the next before the
    next request (a reply of tool calls alone has no text to show, and Codex's calls follow the
    request); else, when the agent said nothing in that turn, with a turn of the agent's own
    that has no text. A call whose message this session does not hold goes by its own time.
    Those textless turns are counted whether or not `tools` keeps the calls: a message's
    number (`show`'s [n], a range) is the same with them or without."""
    msgs = store.messages(session)  # (by thread, then time and id: the order placed into)
    out = [Turn(role, ts, bool(side), text) for _id, role, ts, side, text in msgs]
    places: dict[bool, tuple[list, list[int]]] = {}  # thread -> (sorted places, turn numbers)
    for n, (mid, _role, ts, side, _text) in enumerate(msgs):
        keys, where = places.setdefault(bool(side), ([], []))
        keys.append((_time(ts), mid))
        where.append(n)
    silent: dict[tuple[bool, int], Turn] = {}  # (thread, after which turn) -> a textless turn
    for c in store.tool_calls(session):
        ts, side = c.ts, c.sidechain
        call = ToolUse(c.tool, c.target, c.line, ts, c.kind, bool(side), c.call)
        place = (_time(c.message_ts), c.message_id) if c.message_id is not None else \
            (_time(ts), _LAST)
        keys, where = places.get(bool(side), ([], []))
        i = bisect_right(keys, place) - 1
        if i >= 0 and out[where[i]].role != "user":
            out[where[i]].tools.append(call)
        elif i + 1 < len(where) and out[where[i + 1]].role != "user":
            out[where[i + 1]].tools.append(call)
        else:
            at = where[i] if i >= 0 else -1
            turn = silent.get((bool(side), at))
            if turn is None:
                turn = silent[(bool(side), at)] = Turn("assistant", ts, bool(side), "")
            turn.tools.append(call)
    if silent:  # each after the turn it follows (or first in its thread)
        merged: list[Turn] = []
        for side in (False, True):
            if (side, -1) in silent:
                merged.append(silent[(side, -1)])
            for n in places.get(side, ((), ()))[1]:
                merged.append(out[n])
                if (side, n) in silent:
                    merged.append(silent[(side, n)])
        out = merged
    if not tools:
        for t in out:
            t.tools = []
    return out


_LAST = 1 << 62  # after every message of the same time


def _time(ts: float | None) -> float:
    return float("-inf") if ts is None else ts  # (SQLite orders no time first)
