"""Codex CLI rollouts ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl, and archived_sessions/)
as records: one file, one session, read from a byte offset (Codex appends on resume).

The four eras (../shared/spec/formats-other-agents.md, A2): era 1 is one JSON document
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
from ..records import FileChange, Message, SessionDelta
from .text import dated_by_file, head, load_json, parse_ts, scrubber
from .jsonl import JsonlReader

SOURCE = "codex"
LABEL = "[Codex]"

_INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions",
             "<user_shell_command>")
_CWD = re.compile(r"<cwd>([^<\n]+)</cwd>")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Delete|Update) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$",
                         re.M)
_CD = re.compile(r"^\s*cd\s+(\"[^\"]+\"|'[^']+'|\S+)\s*&&")
_SHELLS = ("shell", "container.exec", "exec_command", "local_shell")
# Lines known by their bytes to hold nothing to index (two thirds of a rollout's bytes), left
# unparsed. A key spelled `"type":"..."` with bare quotes can only be a real key (quotes inside
# a string are escaped); Codex writes compact JSON, and anything spelled otherwise is parsed.
_NEEDLESS = (b'"type":"function_call_output"', b'"type":"custom_tool_call_output"',
             b'"type":"reasoning"', b'"type":"token_count"', b'"type":"agent_reasoning"')


def _needless(line: bytes) -> bool:
    return any(m in line for m in _NEEDLESS) and b'"type":"message"' not in line


# line types with nothing to index, known so that only new ones are counted (see status)
_KNOWN = {"compacted", "world_state", "inter_agent_communication",
          "inter_agent_communication_metadata"}
KNOWN_TYPES = _KNOWN | {"session_meta", "turn_context", "response_item", "event_msg"}


def read(path: str, offset: int = 0, state: dict | None = None, mtime: float | None = None):
    """Parse a rollout from `offset`. Returns (deltas, end offset, new state, problems); a
    rollout is one session, so `deltas` holds at most one."""
    state = dict(state or {})
    if path.endswith(".json"):
        deltas, end, state, problems = _read_era1(path, state)
    elif path.endswith(".zst"):
        deltas, end, state, problems = _read_zst(path, offset, state)
    else:
        reader = JsonlReader(path, offset, mtime=mtime, skip=_needless, bulk=True)
        r = _Reader(state)
        for obj in reader:
            try:
                r.take(obj)
            except (TypeError, ValueError, AttributeError, KeyError) as e:
                reader.bad(reader.end, f"unreadable record ({type(e).__name__}: {e})")
        deltas, end, state, problems = r.finish(), reader.end, r.state, \
            list(reader.problems) + r.problems
    for d in deltas:
        dated_by_file(d, os.stat(path).st_mtime)
    return deltas, end, state, problems


def _zstd():
    """A zstd decompressor: Python 3.14's own, else the zstandard package; None without."""
    try:
        from compression import zstd  # Python 3.14+
        return zstd.decompress
    except ImportError:
        pass
    try:
        import zstandard
    except ImportError:
        return None
    return lambda data: zstandard.ZstdDecompressor().decompressobj().decompress(data)


def _read_zst(path: str, offset: int, state: dict):
    """A compressed rollout (read only when no plain twin exists): decompressed whole, then
    read on from `offset` in the decompressed text, whole lines only."""
    decompress = _zstd()
    if decompress is None:  # (tried again on each look, so installing zstandard is enough)
        raise ValueError("a .zst rollout needs zstd support (Python 3.14, or the zstandard "
                         "package)")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        data = decompress(raw)
    except Exception as e:  # noqa: BLE001 - a damaged or truncated archive, whatever the library
        raise ValueError(f"cannot decompress ({type(e).__name__})") from None
    r, problems, pos = _Reader(state), [], offset
    while (nl := data.find(b"\n", pos)) >= 0:
        line, pos = data[pos:nl], nl + 1
        try:
            obj = load_json(line) if line.strip() else None
        except ValueError:
            problems.append(f"byte {pos}: invalid JSON")
            continue
        if isinstance(obj, dict):
            try:
                r.take(obj)
            except (TypeError, ValueError, AttributeError, KeyError) as e:
                problems.append(f"unreadable record ({type(e).__name__})")
    return r.finish(), pos, r.state, problems[:5] + r.problems


def _read_era1(path: str, state: dict):
    """Era 1: the whole file is one document, rewritten as the session goes: read whole each
    time (Codex.whole). An OSError, or a ValueError for a document cut short, leaves what the
    index holds of it."""
    problems: list[str] = []
    with open(path, "rb") as f:
        doc = load_json(f.read())
    r = _Reader({})
    if isinstance(doc, dict):
        meta = doc.get("session") if isinstance(doc.get("session"), dict) else {}
        r.take(dict(meta))  # a bare header, as in era 2
        items = doc.get("items")
        for n, item in enumerate(items if isinstance(items, list) else ()):
            if isinstance(item, dict):
                try:
                    r.take(item)
                except (TypeError, ValueError, AttributeError, KeyError) as e:
                    problems.append(f"item {n}: unreadable ({type(e).__name__})")
    else:
        problems.append("not a rollout document")
    size = os.path.getsize(path)
    return r.finish(), size, r.state, problems + r.problems


class _Reader:
    """One read of one rollout: the records it adds, and what the next read must know."""

    def __init__(self, state: dict):
        self.state = state
        self.problems: list[str] = []
        self.delta: SessionDelta | None = None
        self.responses: list[Message] = []  # the stream kept ...
        self.events: list[Message] = []  # ... unless the file has no response items at all
        self.changes: list[FileChange] = []
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
        self.ts = self.ts or parse_ts(p.get("timestamp"))
        d.seen(parse_ts(p.get("timestamp")))
        self._cwd(p.get("cwd"))
        git = p.get("git")
        if isinstance(git, dict) and isinstance(git.get("branch"), str):
            d.branch = self.scrub(git["branch"])  # a name is any text: a token pasted as one

    def _cwd(self, cwd) -> None:
        if isinstance(cwd, str) and cwd and self._d() is not None:
            self.state["cwd"] = cwd
            if self.delta.cwd is None and not self.state.get("cwd_set"):
                self.delta.cwd = cwd
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
        text = self.scrub(text)
        stream.append(Message(key, role, text, self.ts, pairs_with=pairs))
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
            parts = [c.get("text") for c in p.get("content") or ()
                     if isinstance(c, dict) and isinstance(c.get("text"), str)]
            self.state["resp"] = True
            self._text(role, "\n".join(parts), self.responses)
        elif kind == "custom_tool_call" and p.get("name") in ("apply_patch", "applypatch"):
            self._patch(p.get("input"), p.get("call_id"), "apply_patch")
        elif kind == "function_call":
            args = _json(p.get("arguments"))
            if p.get("name") in ("apply_patch", "applypatch"):
                self._patch(args.get("input") if isinstance(args, dict) else p.get("arguments"),
                            p.get("call_id"), "apply_patch")
            elif p.get("name") in _SHELLS and isinstance(args, dict):
                self._shell(args.get("command") or args.get("cmd"), args.get("workdir"),
                            p.get("call_id"))
        elif kind == "local_shell_call":
            action = p.get("action") or {}
            self._shell(action.get("command"), action.get("working_directory"), p.get("call_id"))

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

    def _shell(self, command, workdir, call_id) -> None:
        if isinstance(command, str):
            command = ["bash", "-lc", command]
        if not isinstance(command, list) or not command or not all(isinstance(c, str)
                                                                    for c in command):
            return
        if command[0] in ("apply_patch", "applypatch") and len(command) > 1:
            self._patch(command[1], call_id, "apply_patch", workdir)
        elif len(command) >= 3 and command[1] in ("-lc", "-c"):
            script = command[2]
            if "apply_patch" in script or "applypatch" in script:
                cd = _CD.match(script)
                base = workdir or self.state.get("cwd")
                if cd:  # `cd X && apply_patch ...`: its paths are relative to X
                    sub = cd.group(1).strip("'\"")
                    base = sub if os.path.isabs(sub) or not base else os.path.join(base, sub)
                self._patch(script, call_id, "apply_patch", base)

    def _patch(self, patch, call_id, tool: str, base: str | None = None) -> None:
        if not isinstance(patch, str) or "*** " not in patch:
            return
        paths = [a or b for a, b in _PATCH_FILE.findall(patch)]
        root = base or self.state.get("cwd")
        self._record([p if os.path.isabs(p) or not root else os.path.normpath(
            os.path.join(root, p)) for p in paths], call_id, tool)

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
        for m in d.messages:
            d.seen(m.ts)
            if m.role == "user" and d.first_prompt is None and not self.state.get("titled"):
                d.first_prompt = titles.clean_first_prompt(m.text)
                self.state["titled"] = True
        # a rollout of metadata alone (Codex opened, nothing asked) is no session yet
        return [d] if d.messages or d.file_changes else []


def _json(text):
    if isinstance(text, dict):
        return text
    try:
        return json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        return None
