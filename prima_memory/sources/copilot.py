"""VS Code Copilot Chat sessions as records: `User/workspaceStorage/<id>/chatSessions/<session>.json`
(versions 1-3) and `.jsonl` (a mutation log, VS Code 1.109+), as docs/design.md § Other agents'
formats says. A session file is a snapshot VS Code rewrites on every save: it is read
whole, and its session replaced.

Indexed through sources/registry.py (CopilotChat: snapshot mode, this workspace's chats by
its workspace.json, every workspace's with PRIMA_VSCODE_ALL_WORKSPACES=1).
"""
from __future__ import annotations

import os
import urllib.parse

from .. import titles
from ..records import FileChange, Message, SessionDelta
from ..workspace import read_plain
from . import tool_calls
from .jsonl import PARSE_BUDGET, estimate
from .text import (MAX_DOCUMENT, TooBig, dated_by_file, load_json, open_bounded, read_json,
                   scrubber, strip_private, tail, valid_ts)

SOURCE = "copilot-chat"
LABEL = "[VS Code]"
COPILOT = "GitHub Copilot"


def read(path: str) -> tuple[list[SessionDelta], list[str]]:
    """The session a chat file holds (none for another provider's chat), and problems. Raises
    OSError, or ValueError for a file that is not JSON (VS Code writing it) or is past its bound
    (text.MAX_DOCUMENT): what the index holds of it then stays."""
    problems: list[str] = []
    if path.endswith(".jsonl"):
        f, st = open_bounded(path, MAX_DOCUMENT, "a chat's log")
        with f:  # line by line: only the document it builds is held
            doc = replay(f, problems)
    else:
        doc, st = read_json(path, "a chat")
    if not isinstance(doc, dict):
        return [], problems + ["not a chat session"]
    sid = doc.get("sessionId") or os.path.basename(path).rsplit(".", 1)[0]
    d = session(doc, str(sid), problems)
    if d is not None:
        dated_by_file(d, st.st_mtime)
    return ([d] if d is not None else []), problems


def replay(lines, problems: list[str]):
    """The session a mutation log (its lines, as bytes) describes: kind 0 sets the whole, 1 sets
    at a path, 2 pushes (truncating first to `i`), 3 deletes. A last line cut short is a write
    in progress. What the document is built of is counted as it grows (jsonl.estimate): many
    small lines can build what one big text would, and that is TooBig."""
    doc = None
    cost = 0
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        # (an op's kind and path, some 500 bytes parsed, are dropped once it is applied)
        cost += max(0, estimate(line) - 512)
        if cost > PARSE_BUDGET:
            raise TooBig(f"a log that would take more than {PARSE_BUDGET >> 20} MB to replay: "
                         "not read")
        try:
            op = load_json(line)
        except ValueError:
            if line.endswith(b"\n"):  # (only the last line can lack one)
                problems.append(f"line {n}: invalid JSON")
            continue
        try:
            kind, keys = op.get("kind"), op.get("k") or []
            if kind == 0:
                doc = op.get("v")
                cost = estimate(line)  # what the document held before is gone
                continue
            parent, last = _walk(doc, keys)
            if kind == 1:
                parent[last] = op.get("v")
            elif kind == 2:
                target = parent[last] if keys else doc
                pushed = op.get("v") or []
                if not isinstance(target, list) or not isinstance(pushed, list):
                    raise TypeError("a push onto or of something not a list")  # nothing changed
                if isinstance(op.get("i"), int):
                    del target[op["i"]:]
                target.extend(pushed)
            elif kind == 3:
                del parent[last]
        except (AttributeError, KeyError, IndexError, TypeError) as e:
            problems.append(f"line {n}: cannot apply ({type(e).__name__})")
    return doc


def _walk(doc, keys):
    node = doc
    for k in keys[:-1]:
        node = node[k]
    return node, (keys[-1] if keys else None)


def is_copilot(doc: dict) -> bool:
    """Copilot's chat, unless the file says another provider answered it (the store is shared
    by every chat provider)."""
    responder = doc.get("responderUsername")
    if isinstance(responder, str) and responder:
        return responder == COPILOT
    agents = []
    for r in _requests(doc):
        agent = r.get("agent")
        ext = agent.get("extensionId") if isinstance(agent, dict) else None
        value = ext.get("value") if isinstance(ext, dict) else ext
        if isinstance(value, str):
            agents.append(value)
    return not agents or any(a.lower().startswith("github.copilot") for a in agents)


def session(doc: dict, sid: str, problems: list[str]) -> SessionDelta | None:
    if not is_copilot(doc):
        return None
    scrub = scrubber(problems)
    d = SessionDelta(sid, SOURCE, LABEL)
    title = doc.get("customTitle") or doc.get("computedTitle")
    if isinstance(title, str) and title.strip():  # (the user's, or made from their request)
        d.custom_title = titles.normalize(scrub(strip_private(title)))
    d.seen(_ms(doc.get("creationDate")))
    d.seen(_ms(doc.get("lastMessageDate")))
    for n, r in enumerate(_requests(doc)):
        ts = _ms(r.get("timestamp"))
        d.seen(ts)
        msg = r.get("message")
        asked = msg.get("text") if isinstance(msg, dict) else msg
        key = str(r.get("requestId") or f"request-{n}")
        if isinstance(asked, str) and asked.strip():  # its <private> spans out before anything
            d.messages.append(Message(f"{key}:q", "user", scrub(strip_private(asked.strip())), ts))
            if d.first_prompt is None:
                d.first_prompt = titles.clean_first_prompt(d.messages[-1].text)
        said: list[str] = []
        why = None  # what was said before an edit: its reason, redacted whole, then its tail

        def reason() -> str:
            nonlocal why
            if why is None:
                # (cut first, a token's end escapes); called only in this request's iteration
                why = tail(scrub(" ".join(said)), 500)  # noqa: B023
            return why
        calls = []
        for part in _list(r.get("response")):
            if not isinstance(part, dict):
                continue
            if part.get("kind") in ("toolInvocationSerialized", "toolInvocation"):
                calls.append(tool_calls.copilot(part, scrub, ts, None, _path))
            text = _markdown(part)
            if text:
                said.append(text)
                why = None
            for uri in _edited(part):
                d.file_changes.append(FileChange(uri, part.get("kind") or "edit", reason(), ts,
                                                 f"{key}:a"))
        for event in _list(r.get("editedFileEvents")):
            path = _path(event.get("uri") if isinstance(event, dict) else None)
            if path:
                d.file_changes.append(FileChange(path, "editedFileEvent", reason(), ts,
                                                 f"{key}:a"))
        if said:
            d.messages.append(Message(f"{key}:a", "assistant", scrub("\n".join(said)), ts,
                                      pairs_with=f"{key}:q" if asked else None))
        for call in calls:  # after the answer they were made in, or the question without one
            call.message_key = f"{key}:a" if said else f"{key}:q" if asked else None
        d.tool_calls += calls
    seen: set[tuple[str, str | None]] = set()
    changes = []
    for c in d.file_changes:  # the first of each (path, message)
        if (c.path, c.message_key) not in seen:
            seen.add((c.path, c.message_key))
            changes.append(c)
    d.file_changes = changes
    return None if d.is_empty() else d


def _requests(doc: dict) -> list[dict]:
    """The chat's requests that are objects (a file of another shape holds none)."""
    return [r for r in _list(doc.get("requests")) if isinstance(r, dict)]


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _markdown(part: dict) -> str | None:
    """Markdown in any of its three shapes: a bare {value}, {kind: markdownContent, value} or
    {content: {value}}."""
    kind = part.get("kind")
    if kind not in (None, "markdownContent"):
        return None
    value = part.get("value")
    if value is None and isinstance(part.get("content"), dict):
        value = part["content"].get("value")
    return (value.strip() or None) if isinstance(value, str) else None


def _edited(part: dict) -> list[str]:
    if part.get("kind") in ("textEditGroup", "codeblockUri"):
        p = _path(part.get("uri"))
        return [p] if p else []
    return []


def _path(uri) -> str | None:
    """A file path from a VS Code URI: a {fsPath, path, scheme} object or a string."""
    if isinstance(uri, dict):
        if isinstance(uri.get("fsPath"), str):
            return uri["fsPath"]
        uri = uri.get("path") if uri.get("scheme") in (None, "file", "vscode-remote") \
            else uri.get("external")
    if not isinstance(uri, str) or not uri:
        return None
    if "://" in uri:
        try:
            uri = urllib.parse.urlparse(uri).path
        except ValueError:  # file://[bad: not a URI any folder has
            return None
    path = urllib.parse.unquote(uri)
    if len(path) > 2 and path[0] == "/" and path[2] == ":":  # /c:/x on Windows
        path = path[1:]
    return path


def workspace_folder(storage_dir: str) -> str | None:
    """The folder a workspaceStorage entry belongs to, from its workspace.json (a plain file of
    a few bytes: a link, a FIFO or a huge file there is none)."""
    try:
        got = read_plain(os.path.join(storage_dir, "workspace.json"), 64 << 10)
        doc = load_json(got[0]) if got else None
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    return _path(doc.get("folder") or doc.get("workspace"))


def _ms(value) -> float | None:
    try:
        return valid_ts(value / 1000.0) if isinstance(value, (int, float)) else None
    except OverflowError:  # an integer of 400 digits
        return None
