"""Codex CLI rollouts ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl, and archived_sessions/)
as records: one file, one session, read from a byte offset (Codex appends on resume).

The four eras (docs/design.md § Other agents' formats): era 1 is one JSON document
(`{session, items}`); era 2 is bare lines (a `SessionMeta` header, then bare `ResponseItem`s and
`record_type` markers); eras 3 and 4 wrap every line as `{timestamp, type, payload}`. Codex
records most text twice (a `response_item` message and an `event_msg`): one stream is kept, the
response items, falling back to the events in a file that has none. Developer and system
messages, and the context Codex injects as user messages (`<environment_context>`,
`<user_instructions>`, AGENTS.md), are not conversation.

Indexed through sources/registry.py (Codex: append mode, scoped to the workspace).
"""
from __future__ import annotations

import json
import os
import re

from .. import titles
from ..records import FileChange, Message, SessionDelta, ToolCall
from . import tool_calls
from .text import (NotNow, TooBig, dated_by_file, head, load_json, open_bounded, parse_ts,
                   read_document, scrubber, strip_private)
from .jsonl import JsonlReader

SOURCE = "codex"
LABEL = "[Codex]"

_INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions",
             "<user_shell_command>")
_CWD = re.compile(r"<cwd>([^<\n]+)</cwd>")
_CD = re.compile(r"^\s*cd\s+(\"[^\"]+\"|'[^']+'|\S+)\s*&&")
_SHELLS = ("shell", "container.exec", "exec_command", "local_shell")
# Lines known by their bytes to hold nothing to index (two thirds of a rollout's bytes), left
# unparsed. A key spelled `"type":"..."` with bare quotes can only be a real key (quotes inside
# a string are escaped); Codex writes compact JSON, and anything spelled otherwise is parsed.
_NEEDLESS = (b'"type":"function_call_output"', b'"type":"custom_tool_call_output"',
             b'"type":"reasoning"', b'"type":"token_count"', b'"type":"agent_reasoning"')


def _needless(line: bytes | bytearray, start: int = 0, end: int | None = None) -> bool:
    """Whether line[start:end] is one of those (JsonlReader's skip: looked at where it lies)."""
    if end is None:
        end = len(line)
    return any(line.find(m, start, end) >= 0 for m in _NEEDLESS) \
        and line.find(b'"type":"message"', start, end) < 0


# line types with nothing to index, known so that only new ones are counted (see status)
_KNOWN = {"compacted", "world_state", "inter_agent_communication",
          "inter_agent_communication_metadata"}
KNOWN_TYPES = _KNOWN | {"session_meta", "turn_context", "response_item", "event_msg"}


# A .jsonl.zst is read as it decompresses, a line at a time, so memory does not grow with it;
# what bounds it is time. A rollout's JSON compresses some 5 to 20 times (the public fixture:
# 20); a file that decompresses to INFLATE_RATIO times its size, and past INFLATE_FLOOR, is a
# bomb (33 kB of zstd make 1 GB of zeros): it is not read on (#18).
INFLATE_RATIO = 100
INFLATE_FLOOR = 256 << 20


def read(path: str, offset: int = 0, state: dict | None = None, mtime: float | None = None):
    """Parse a rollout from `offset`. Returns (deltas, end offset, new state, problems); a
    rollout is one session, so `deltas` holds at most one."""
    return next(read_chunks(path, offset, state, mtime))


def read_chunks(path: str, offset: int = 0, state: dict | None = None,
                mtime: float | None = None, max_bytes: int | None = None):
    """read()'s results, one for each `max_bytes` of lines (all of them in one without it), so
    what a rollout of gigabytes holds is written to the index as it is read, never held whole.
    Raises ValueError for a file that cannot be read (text.TooBig past a bound)."""
    state = dict(state or {})
    if path.endswith(".json"):
        yield _dated(path, *_read_era1(path, state))
        return
    if path.endswith(".zst"):
        with _inflating(path) as stream:
            # (a compressed rollout is complete: its last line is not one being written)
            reader = JsonlReader(path, offset, mtime=0, skip=_needless, bulk=True, stream=stream)
            yield from _chunks(path, reader, state, max_bytes)
    else:
        reader = JsonlReader(path, offset, mtime=mtime, skip=_needless, bulk=True)
        yield from _chunks(path, reader, state, max_bytes)


def _chunks(path: str, reader: JsonlReader, state: dict, max_bytes: int | None):
    r, start = _Reader(state), reader.start
    # A read in steps that does not know the rollout's folder yet yields as soon as a line
    # names it: a rollout of another folder is known as such from its head, not from its whole
    # first step (every workspace's index, and a search of all projects, looks at every one).
    early = max_bytes is not None and not state.get("cwd")
    for obj in reader:
        try:
            r.take(obj)
        except (TypeError, ValueError, AttributeError, KeyError) as e:
            reader.bad(reader.end, f"unreadable record ({type(e).__name__}: {e})")
        if early and r.state.get("cwd"):
            early = False
            yield _dated(path, r.finish(), reader.end, r.state, _taken(reader) + r.problems)
            r, start = _Reader(dict(r.state)), reader.end  # (a step yielded keeps its state)
        elif max_bytes is not None and reader.end - start >= max_bytes:
            yield _dated(path, r.finish(), reader.end, r.state, _taken(reader) + r.problems)
            r, start = _Reader(dict(r.state)), reader.end  # (a step yielded keeps its state)
    yield _dated(path, r.finish(), reader.end, r.state, _taken(reader) + r.problems)


def _taken(reader: JsonlReader) -> list[str]:
    problems, reader.problems = reader.problems, []
    return problems


def _dated(path: str, deltas, end, state, problems):
    for d in deltas:
        dated_by_file(d, os.stat(path).st_mtime)
    return deltas, end, state, problems


def _zstd():
    """A function that makes a decompressing reader of a binary stream: Python 3.14's own,
    else the zstandard package's; None without either."""
    try:
        from compression import zstd  # Python 3.14+
        return zstd.ZstdFile
    except ImportError:
        pass
    try:
        import zstandard  # optional: the zstd extra, before Python 3.14
    except ImportError:
        return None
    return lambda f: zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True)


class _inflating:
    """A compressed rollout (read only when no plain twin exists) as the stream of its
    decompressed bytes, bounded (INFLATE_RATIO): a damaged archive, or one past the bound, is a
    ValueError when its bytes are reached."""

    def __init__(self, path: str):
        self.path = path

    def __enter__(self):
        opener = _zstd()
        if opener is None:  # (tried again on each look, so installing zstandard is enough)
            raise NotNow("a .zst rollout needs zstd support (Python 3.14, or the zstandard "
                         "package)")
        self.file, st = open_bounded(self.path, 1 << 62, "a rollout")
        self.limit = max(INFLATE_FLOOR, INFLATE_RATIO * st.st_size)
        self.read_so_far = 0
        try:
            self.stream = opener(self.file)
        except Exception as e:  # noqa: BLE001 - whatever the library raises
            self.file.close()
            raise ValueError(f"cannot decompress ({type(e).__name__})") from None
        return self

    def read(self, n: int) -> bytes:
        try:
            got = self.stream.read(n)
        except Exception as e:  # noqa: BLE001 - a damaged or truncated archive
            raise ValueError(f"cannot decompress ({type(e).__name__})") from None
        self.read_so_far += len(got)
        if self.read_so_far > self.limit:
            raise TooBig(f"decompresses to more than {self.limit >> 20} MB ({INFLATE_RATIO} "
                         "times its size, or more): not read on")
        return got

    def __exit__(self, *exc):
        try:
            self.stream.close()
        except Exception:  # noqa: BLE001 - closing a damaged stream
            pass
        self.file.close()
        return False


def _read_era1(path: str, state: dict):
    """Era 1: the whole file is one document, rewritten as the session goes: read whole each
    time (Codex.whole), up to text.MAX_DOCUMENT. An OSError, or a ValueError for a document cut
    short, leaves what the index holds of it."""
    problems: list[str] = []
    raw, st = read_document(path, "a rollout")
    doc = load_json(raw)
    del raw
    r = _Reader({})
    if isinstance(doc, dict):
        meta = doc.get("session")
        r.take(dict(meta) if isinstance(meta, dict) else {})  # a bare header, as in era 2
        items = doc.get("items")
        for n, item in enumerate(items if isinstance(items, list) else ()):
            if isinstance(item, dict):
                try:
                    r.take(item)
                except (TypeError, ValueError, AttributeError, KeyError) as e:
                    problems.append(f"item {n}: unreadable ({type(e).__name__})")
    else:
        problems.append("not a rollout document")
    return r.finish(), st.st_size, r.state, problems + r.problems


class _Reader:
    """One read of one rollout: the records it adds, and what the next read must know."""

    def __init__(self, state: dict):
        self.state = state
        self.problems: list[str] = []
        self.delta: SessionDelta | None = None
        self.responses: list[Message] = []  # the stream kept ...
        self.events: list[Message] = []  # ... unless the file has no response items at all
        self.changes: list[FileChange] = []
        self.calls: list[ToolCall] = []
        self.ts: float | None = None
        self.scrub = scrubber(self.problems)  # redacted and cut, as every source's text is
        self.unknown: set[str] = set()  # record types this reader does not know

    def _d(self) -> SessionDelta | None:
        if self.delta is None and self.state.get("sid"):
            self.delta = SessionDelta(self.state["sid"], SOURCE, LABEL)
        return self.delta

    def take(self, obj: dict) -> None:
        if "record_type" in obj:  # era 2 state marker
            return
        if "type" in obj and "payload" in obj:  # eras 3 and 4
            self.ts = parse_ts(obj.get("timestamp")) or self.ts
            kind, p = obj["type"], obj["payload"]
            if not isinstance(p, dict):
                return
            if kind == "session_meta":
                self._meta(p)
            elif kind == "turn_context":
                self._cwd(p.get("cwd"))
            elif kind == "response_item":
                self._item(p)
            elif kind == "event_msg":
                self._event(p)
            elif kind not in _KNOWN and len(self.unknown) < 50:
                self.unknown.add(str(kind)[:40])
            return
        if "type" not in obj and obj.get("id") and obj.get("timestamp"):  # era 1/2 header
            self._meta(obj)
        elif "type" in obj:  # era 2 bare response item
            self._item(obj)

    # -- records -------------------------------------------------------------------------------

    def _meta(self, p: dict) -> None:
        sid = p.get("id") or p.get("session_id")
        if not isinstance(sid, str) or not sid:
            return
        if self.state.get("sid") and self.state["sid"] != sid:
            return  # a fork or subagent copies its parent's meta: the file's own came first
        self.state["sid"] = sid
        d = self._d()
        assert d is not None  # its id was just set
        self.ts = self.ts or parse_ts(p.get("timestamp"))
        d.seen(parse_ts(p.get("timestamp")))
        self._cwd(p.get("cwd"))
        git = p.get("git")
        if isinstance(git, dict) and isinstance(git.get("branch"), str):
            d.branch = self.scrub(git["branch"])  # a name is any text: a token pasted as one

    def _cwd(self, cwd) -> None:
        if not (isinstance(cwd, str) and cwd):
            return
        d = self._d()
        if d is not None:
            self.state["cwd"] = cwd
            if d.cwd is None and not self.state.get("cwd_set"):
                d.cwd = cwd
                self.state["cwd_set"] = True

    def _text(self, role: str, text: str, stream: list) -> None:
        text = text.strip()
        if not text or self._d() is None:
            return
        if role == "user" and text.startswith(_INJECTED):
            m = _CWD.search(text)  # eras 1 and 2 say where they ran only here
            if m:
                self._cwd(m.group(1).strip())
            return
        n = self.state.get("n", 0)
        self.state["n"] = n + 1
        which = "r" if stream is self.responses else "e"
        key = f"{which}{n}"
        pairs = self.state.get(f"prompt_{which}") if role == "assistant" else None
        # the user's <private> spans out before anything reads the text (redaction, the cut,
        # the title finish() takes from it); Codex's replies are its own
        text = self.scrub(strip_private(text) if role == "user" else text)
        stream.append(Message(key, role, text, self.ts, pairs_with=pairs))
        if stream is self.responses:
            self.state["at"] = key  # the message the calls after it follow (ToolCall.message_key)
        if role == "user":
            self.state[f"prompt_{which}"] = key
        else:  # said before a change: its reason, cut once redacted (a token cut escapes)
            self.state["said"] = head(text, 500)

    def _item(self, p: dict) -> None:
        kind = p.get("type")
        if kind == "message":
            role = p.get("role")
            if role not in ("user", "assistant"):
                return  # developer and system messages are instructions, not conversation
            parts = [c["text"] for c in p.get("content") or ()
                     if isinstance(c, dict) and isinstance(c.get("text"), str)]
            self.state["resp"] = True
            self._text(role, "\n".join(parts), self.responses)
        elif kind == "custom_tool_call" and p.get("name") in ("apply_patch", "applypatch"):
            self._patch(p.get("input"), p.get("call_id"), "apply_patch")
        elif kind in ("function_call", "custom_tool_call"):
            raw = p.get("arguments" if kind == "function_call" else "input")
            args, name = _json(raw), p.get("name")
            if name in ("apply_patch", "applypatch"):
                self._patch(args.get("input") if isinstance(args, dict) else raw,
                            p.get("call_id"), "apply_patch")
            elif name in _SHELLS and isinstance(args, dict):
                self._shell(args.get("command") or args.get("cmd"), args.get("workdir"),
                            p.get("call_id"), name)
            else:
                self._call(tool_calls.codex(name, raw if args is None else args, self.scrub,
                                            self.ts, self.state.get("at"), p.get("call_id")))
        elif kind == "local_shell_call":
            action = p.get("action") or {}
            self._shell(action.get("command"), action.get("working_directory"), p.get("call_id"),
                        "local_shell")
        elif kind in ("web_search_call", "tool_search_call"):
            self._call(tool_calls.codex(kind[:-5], p.get("action") or p.get("arguments"),
                                        self.scrub, self.ts, self.state.get("at"),
                                        p.get("call_id") or p.get("id")))

    def _event(self, p: dict) -> None:
        kind = p.get("type")
        if kind == "user_message" and isinstance(p.get("message"), str):
            self._text("user", p["message"], self.events)
        elif kind == "agent_message" and isinstance(p.get("message"), str):
            self._text("assistant", p["message"], self.events)
        elif kind == "patch_apply_end" and isinstance(p.get("changes"), dict):
            # resolved, absolute paths: these stand for the call's parsed ones
            call = p.get("call_id")
            paths = [k for k in p["changes"] if isinstance(k, str)]
            for c in p["changes"].values():
                if isinstance(c, dict) and isinstance(c.get("move_path"), str):
                    paths.append(c["move_path"])
            self.changes = [c for c in self.changes if c.message_key != call or call is None]
            self._record(paths, call, "apply_patch")

    # -- file changes --------------------------------------------------------------------------

    def _shell(self, command, workdir, call_id, name: str = "shell") -> None:
        if isinstance(command, str):
            command = ["bash", "-lc", command]
        if not isinstance(command, list) or not command or not all(isinstance(c, str)
                                                                    for c in command):
            return
        if command[0] in ("apply_patch", "applypatch") and len(command) > 1:
            self._patch(command[1], call_id, "apply_patch", workdir)
            return
        if len(command) >= 3 and command[1] in ("-lc", "-c"):
            script = command[2]
            if "apply_patch" in script or "applypatch" in script:
                cd = _CD.match(script)
                base = workdir or self.state.get("cwd")
                if cd:  # `cd X && apply_patch ...`: its paths are relative to X
                    sub = cd.group(1).strip("'\"")
                    base = sub if os.path.isabs(sub) or not base else os.path.join(base, sub)
                if self._patch(script, call_id, "apply_patch", base):
                    return
        self._call(tool_calls.make(name, tool_calls.command_text(command), None, self.scrub,
                                   kind="command", ts=self.ts, key=self.state.get("at"),
                                   call=call_id))

    def _patch(self, patch, call_id, tool: str, base: str | None = None) -> bool:
        if not isinstance(patch, str) or "*** " not in patch:
            return False
        paths = tool_calls.patched_paths(patch)
        root = base or self.state.get("cwd")
        paths = [p if os.path.isabs(p) or not root else os.path.normpath(os.path.join(root, p))
                 for p in paths]
        self._record(paths, call_id, tool)
        self._call(tool_calls.patch(list(dict.fromkeys(paths)), self.scrub, self.ts,
                                    self.state.get("at"), call_id))
        return True

    def _call(self, call: ToolCall) -> None:
        if self._d() is not None:
            self.calls.append(call)

    def _record(self, paths, call_id, tool: str) -> None:
        if self._d() is None:
            return
        why = self.state.get("said", "")
        for p in dict.fromkeys(paths):
            self.changes.append(FileChange(p, tool, why, self.ts, call_id))

    # -- the delta -----------------------------------------------------------------------------

    def finish(self) -> list[SessionDelta]:
        if self.unknown:  # noted in the file's state for `status`, as Claude Code's are
            self.state["unk"] = sorted((set(self.state.get("unk", ())) - KNOWN_TYPES)
                                       | self.unknown)[:50]
        d = self.delta
        if d is None:
            return []
        # one stream: the response items, unless this file never had any (then the events)
        d.messages = self.responses if self.state.get("resp") else self.events
        d.cwd = d.cwd or self.state.get("cwd")  # each read's records carry it: scope is per read
        d.file_changes = self.changes
        d.tool_calls = self.calls
        if not self.state.get("resp"):  # the calls follow response items the events stand for
            for c in d.tool_calls:
                c.message_key = None
        for m in d.messages:
            d.seen(m.ts)
            if m.role == "user" and d.first_prompt is None and not self.state.get("titled"):
                d.first_prompt = titles.clean_first_prompt(m.text)
                self.state["titled"] = True
        # a rollout of metadata alone (Codex opened, nothing asked) is no session yet
        return [d] if d.messages or d.file_changes or d.tool_calls else []


def _json(text):
    if isinstance(text, dict):
        return text
    try:
        return json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        return None
