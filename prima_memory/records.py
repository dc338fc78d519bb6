"""The records every source produces: one shape for Claude Code, Codex, Copilot and the logs.

A source reads a file from a byte offset and returns a `SessionDelta`: what those lines add to one
session. The store merges deltas, so a source never needs to know what is already indexed.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Message:
    """One user prompt or one assistant reply (a reply split over several lines is one message)."""

    key: str  # stable within the session: message.id for replies, uuid for prompts
    role: str  # "user" | "assistant"
    text: str  # redacted; a later fragment with the same key is appended to it
    ts: float | None = None
    sidechain: bool = False  # from a subagent file: searchable, not part of the main thread
    pairs_with: str | None = None  # key of the prompt this reply answers first (the exchange)


@dataclass
class FileChange:
    path: str
    tool: str  # Write | Edit | MultiEdit | NotebookEdit | apply_patch ...
    explanation: str  # the text Claude wrote just before the change
    ts: float | None = None
    message_key: str | None = None


@dataclass
class SessionDelta:
    """What a run of lines adds to one session. Empty fields mean "nothing new"."""

    session_id: str
    source: str  # "claude-code"
    label: str  # "[transcript]"
    cwd: str | None = None
    branch: str | None = None
    author: str | None = None
    custom_title: str | None = None
    summary_title: str | None = None
    first_prompt: str | None = None  # the first main-thread prompt, cleaned into a title
    first_ts: float | None = None
    last_ts: float | None = None
    messages: list[Message] = field(default_factory=list)
    file_changes: list[FileChange] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)  # lines carrying DECIDED / SAVE markers
    tags: set[str] = field(default_factory=set)

    def seen(self, ts: float | None) -> None:
        if ts is None:
            return
        if self.first_ts is None or ts < self.first_ts:
            self.first_ts = ts
        if self.last_ts is None or ts > self.last_ts:
            self.last_ts = ts

    def is_empty(self) -> bool:
        return not (self.messages or self.file_changes or self.custom_title or self.summary_title
                    or self.first_ts is not None or self.cwd or self.decisions or self.tags)
