"""One session as everything that shows it sees it: the briefing, checkpoints, extracts, `show`,
`recent`, `digest` and, through the data API, the MCP answers. Each of these is defined here
once, read from the store by `build`; the renderers take the view, never the store:

- where the session stopped (`stopped`): its last substantial reply;
- its first and last requests;
- its excerpts: its last substantial replies;
- the files it changed, and its last exchanges.

Standard library only and cheap (plain classes, not dataclasses, whose import costs the
SessionStart hook milliseconds): the hook renders the briefing from these views.
"""
from __future__ import annotations

TYPE_CHECKING = False  # (typing's own costs the hook an import; type checkers read this as True)
if TYPE_CHECKING:  # types only: the store is the caller's, already open
    from .store import SessionRow, Store

# A reply longer than this says something: Claude's replies of a line or two ("Done.", "Let me
# run the tests.") are narration between tool calls, not where the work stood. One threshold
# for every view, the one the briefing, checkpoints and extracts always used (`show` and
# `digest` took 40): what a user sees at every session start stays as it was.
SUBSTANTIAL = 200


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


class SessionView:
    """A session's row and what its renderers show of it. Always there: `last_request` and
    `stopped`. The rest only when `build` was asked for it (empty otherwise): `requests` (every
    request of the main thread, in order; `first_request` comes from it), `changed_paths`,
    `changes`, `excerpts` (newest first) and `exchanges` (the last ones, in order)."""
    __slots__ = ("row", "last_request", "stopped", "requests", "changed_paths", "changes",
                 "excerpts", "exchanges")

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

    @property
    def first_request(self) -> Said | None:
        """The first request of the main thread (known when `requests` was built)."""
        return self.requests[0] if self.requests else None


def build(store: Store, row: SessionRow, *, requests: bool = False, paths: bool = False,
          changes: bool = False, excerpts: int = 0, exchanges: int = 0) -> SessionView:
    """The view of a session, with the parts asked for: a briefing of five sessions or a digest
    of two hundred reads only the little it shows."""
    found = _substantial(store, row.id, max(1, excerpts))
    return SessionView(
        row,
        last_request=last_request(store, row.id),
        stopped=where_it_stopped(store, row.id, found),
        requests=_requests(store, row.id) if requests else None,
        changed_paths=store.changed_paths(row.id) if paths else None,
        changes=[Change(*c) for c in store.file_changes(row.id)] if changes else None,
        excerpts=found[:excerpts],
        exchanges=[Exchange(*e) for e in store.exchanges(row.id)[-exchanges:]]
        if exchanges else None)


def where_it_stopped(store: Store, session: int, substantial: list[Said] | None = None
                     ) -> Said | None:
    """Where a session stopped: its last substantial reply (over SUBSTANTIAL characters) in the
    main thread; else, when none is that long, its last reply. (`substantial`: those replies,
    newest first, when the caller has them.) The one definition: issue #20 changes it here."""
    found = substantial if substantial is not None else _substantial(store, session, 1)
    if found:
        return found[0]
    last = store.last_messages(session, "assistant", 1)
    return Said(*last[0]) if last else None


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
