"""The records every source produces: one shape for Claude Code, Codex, Copilot and the logs.

A source reads a file from a byte offset and returns a `SessionDelta`: what those lines add to one
session. The store merges deltas, so a source never needs to know what is already indexed.
(Plain classes, not dataclasses: hooks import this, and `dataclasses` costs 30 ms to import.)
"""
from __future__ import annotations

# A cold index's reader process pickles every record it reads to the writer. By default a record
# with __slots__ is pickled as a dict of its slots' names and values, made for each one: as its
# class and its fields in order (what __init__ takes), it pickles and unpickles in about two
# thirds of the time, and takes 8% less.


class Message:
    """One user prompt or one assistant reply (a reply split over several lines is one message)."""

    __slots__ = ("key", "role", "text", "ts", "sidechain", "pairs_with")

    def __init__(self, key: str, role: str, text: str, ts: float | None = None,
                 sidechain: bool = False, pairs_with: str | None = None):
        self.key = key  # stable within the session: message.id for replies, uuid for prompts
        self.role = role  # "user" | "assistant"
        self.text = text  # redacted; a later fragment with the same key is appended to it
        self.ts = ts
        self.sidechain = sidechain  # from a subagent file: searchable, not the main thread
        self.pairs_with = pairs_with  # key of the prompt this reply answers first (the exchange)

    def __reduce__(self):  # (pickled as its fields: see above)
        return Message, (self.key, self.role, self.text, self.ts, self.sidechain, self.pairs_with)


class FileChange:
    __slots__ = ("path", "tool", "explanation", "ts", "message_key")

    def __init__(self, path: str, tool: str, explanation: str, ts: float | None = None,
                 message_key: str | None = None):
        self.path = path
        self.tool = tool  # Write | Edit | MultiEdit | NotebookEdit | apply_patch ...
        self.explanation = explanation  # the text Claude wrote just before the change
        self.ts = ts
        self.message_key = message_key

    def __reduce__(self):  # (pickled as its fields: see above)
        return FileChange, (self.path, self.tool, self.explanation, self.ts, self.message_key)


class ToolCall:
    """One call of a tool: which, what it acts on (`target`: a file, a command, a URL, a
    pattern...), one short line about it. Both texts redacted, on one line, cut short."""
    __slots__ = ("tool", "target", "line", "ts", "message_key", "sidechain", "call", "kind")

    def __init__(self, tool: str, target: str, line: str, ts: float | None = None,
                 message_key: str | None = None, sidechain: bool = False,
                 call: str | None = None, kind: str = ""):
        self.tool = tool
        self.target = target
        self.line = line
        self.ts = ts
        # the message it follows: the reply that made it (Claude Code, Copilot), or the last
        # message before it (Codex), None if none; a fork's copies of its origin's calls are
        # known by it
        self.message_key = message_key
        self.sidechain = sidechain
        self.call = call  # its id in the file (a call read twice is stored once)
        self.kind = kind  # what target is: "path", "command", "url" or "" (anything else)

    def __reduce__(self):  # (pickled as its fields: see above)
        return ToolCall, (self.tool, self.target, self.line, self.ts, self.message_key,
                          self.sidechain, self.call, self.kind)


class CallError:
    """A call that failed (its tool's result marked an error): the line naming its error
    (failures.signature, redacted) and its key (failures.key). Its call came before, in this
    read or an earlier one: `call` names it."""
    __slots__ = ("call", "error", "key", "ts")

    def __init__(self, call: str, error: str, key: str, ts: float | None = None):
        self.call, self.error, self.key, self.ts = call, error, key, ts

    def __reduce__(self):  # (pickled as its fields: see above)
        return CallError, (self.call, self.error, self.key, self.ts)


class SessionDelta:
    """What a run of lines adds to one session. Empty fields mean "nothing new"."""

    def __init__(self, session_id: str, source: str, label: str):
        self.session_id = session_id
        self.source = source  # "claude-code"
        self.label = label  # "[transcript]"
        self.cwd: str | None = None
        self.branch: str | None = None
        self.author: str | None = None
        self.custom_title: str | None = None
        self.summary_title: str | None = None
        self.first_prompt: str | None = None  # the first main-thread prompt, cleaned into a title
        self.first_ts: float | None = None
        self.last_ts: float | None = None
        self.messages: list[Message] = []
        self.file_changes: list[FileChange] = []
        self.tool_calls: list[ToolCall] = []
        self.call_errors: list[CallError] = []
        self.decisions: list[str] = []  # lines carrying DECIDED / SAVE markers
        self.tags: set[str] = set()
        # the messages' keys name them across sessions: a fork or a resume that copies a message
        # keeps its key, and the index stores it once (Claude Code's uuids and message ids)
        self.shared_keys = False
        self.copies_forgotten = False  # it holds copies of a forgotten session (Indexer._forgotten)

    def seen(self, ts: float | None) -> None:
        if ts is None:
            return
        if self.first_ts is None or ts < self.first_ts:
            self.first_ts = ts
        if self.last_ts is None or ts > self.last_ts:
            self.last_ts = ts

    def is_empty(self) -> bool:
        return not (self.messages or self.file_changes or self.tool_calls or self.call_errors
                    or self.custom_title or self.summary_title or self.first_ts is not None
                    or self.cwd or self.decisions or self.tags)
