"""Gemini CLI sessions as records: ~/.gemini/tmp/<project>/chats/session-*.jsonl (and the
legacy session-*.json), a subagent's chats/<parent id>/<id>.jsonl. GEMINI_CLI_HOME stands for
the home folder (google-gemini/gemini-cli: packages/core/src/utils/paths.ts, homedir()).

<project> is a slug, which the folder's .project_root file and ~/.gemini/projects.json name the
project folder of (config/projectRegistry.ts, Gemini CLI of February 2026 on); before, the
SHA-256 of the project folder (getProjectHash), which only that folder can be matched against.
The project folder is where Gemini CLI ran: the session's working folder.

A session file is not only appended to: its JSONL lines upsert messages by id (a reply is
written again with each tool call it makes), `$set` changes the metadata or replaces every
message, `$rewindTo` drops a message and all after it, and a resumed legacy .json is rewritten as
.jsonl beside it (services/chatRecordingService.ts, loadConversationRecord). So a changed file is
read whole and its session replaced (whole()); a file that is gone leaves its session archived
(mode "append": Gemini CLI deletes sessions after 30 days, and the memory keeps them).
"""
from __future__ import annotations

import os
import sys

from . import names
from .base import Source, sample_file
from .listing import files as _files
from .listing import entries, watch
from ..paths import path_variants
from ..records import FileChange, Message, SessionDelta
from ..workspace import is_within, read_plain

SOURCE, LABEL = names.GEMINI_CLI[:2]
# What a session file is read to, whole, on each change: a long session's upserted lines (each
# tool call writes its reply again) take tens of megabytes. Only the last version of each
# message is held, as text: the tool results are dropped as they are read.
MAX_SESSION = 256 << 20
BULK = 8 << 20  # from this size on, orjson parses (its import costs 40 ms: big files only)
# A message's `type`, and the operations on the file; anything else is noted as unknown.
KNOWN_TYPES = frozenset({"user", "gemini", "info", "error", "warning", "$set", "$rewindTo"})
# A prompt that is no conversation: a slash command, help, injected context
# (packages/core/src/utils/sessionUtils.ts, isIgnoredUserContent).
_NOT_SAID = ("/", "?", "<session_context>", "<hook_context>")
_CHANGES = ("write_file", "replace")  # the tools that change a file (tool-names.ts)
_SHELL = "run_shell_command"
_FILE_ARGS = ("file_path", "absolute_path")  # (absolute_path: read_file before 11/2025)
_ARG_MAX = 16384  # of an argument kept (a command, a path): tool_calls cuts it shorter
_FAILED = ("error", "cancelled")  # a call in this state changed nothing
_HEX = frozenset("0123456789abcdef")
_SLUG = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


def gemini_dir() -> str:
    """~/.gemini, or $GEMINI_CLI_HOME/.gemini (Gemini CLI's Storage.getGlobalGeminiDir)."""
    home = os.environ.get("GEMINI_CLI_HOME") or os.path.expanduser("~")
    return os.path.join(os.path.abspath(home), ".gemini")


class GeminiCli(Source):
    (name, label, product), mode, agent = names.GEMINI_CLI, "append", "Gemini"
    # `gemini --resume <session UUID>`, run in the project folder (its sessions are the
    # project's): docs/cli/session-management.md, "Resume by ID"; a subagent's cannot be
    resume = "gemini --resume {id}"

    def locations(self, ws: str) -> list[str]:
        return [os.path.join(gemini_dir(), "tmp")]  # (its project folders: see discover)

    def whole(self, path: str) -> bool:
        return True  # upserts and rewinds: see above

    def knows(self, kind: str) -> bool:
        return kind in KNOWN_TYPES

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        """The session files of the project folders that are this workspace or inside it, each
        with (that folder, as the workspace spells it; whether it is a subagent's)."""
        out: list[tuple[str, object]] = []
        for project, root in _projects(folders, ws):
            cwd = _inside(root, ws)
            if cwd is not None:
                out += [(p, (cwd, sub)) for p, sub in _chats(project, folders)]
        return out

    def read(self, path, extra, offset, state):
        """The session a file holds, read whole (the indexer reads it from 0 each time it
        changes). From an offset, nothing if the file has not grown past it."""
        if offset:
            try:
                if os.lstat(path).st_size == offset:
                    return [], offset, state, []
            except OSError:
                pass  # (the read says why)
        cwd, sub = extra if isinstance(extra, tuple) and len(extra) == 2 else _where(path)
        return read_session(path, cwd, sub)

    def in_scope(self, delta, ws: str) -> bool:
        """A project folder that is this workspace or inside it (one not known: every
        workspace's, as Codex takes a rollout that names none)."""
        return not delta.cwd or is_within(os.path.normpath(delta.cwd), ws)

    def everywhere(self, known: dict) -> list[tuple[str, tuple[str, ...]]]:
        """Every session file whose project folder can be told: a slug's (its .project_root,
        else projects.json), a hash's when it is the hash of one of those. Another hash's
        folder is nobody's here; a search of its own project finds it (discover)."""
        return [(p, (os.path.normpath(root),)) for project, root in _projects(None, None)
                for p, _sub in _chats(project, None)]

    def sample(self, ws: str, text: str) -> str:
        tmp = os.path.join(gemini_dir(), "tmp")
        base, n = _slugify(os.path.basename(ws)), 0
        while _marker(os.path.join(tmp, base if n == 0 else f"{base}-{n}")) not in (None, ws):
            n += 1  # (taken by another folder: Gemini CLI's claimNewSlug)
        project = os.path.join(tmp, base if n == 0 else f"{base}-{n}")
        os.makedirs(project, exist_ok=True)
        with open(os.path.join(project, ".project_root"), "w", encoding="utf-8") as f:
            f.write(ws)
        sid = "0c0c0c0c-0000-4000-8000-000000000001"
        return sample_file(os.path.join(project, "chats", "session-2026-01-02T00-00-0c0c0c0c.jsonl"), [
            {"sessionId": sid, "projectHash": _sha256(ws), "startTime": "2026-01-02T00:00:00.000Z",
             "lastUpdated": "2026-01-02T00:00:00.000Z", "kind": "main"},
            {"id": "u1", "timestamp": "2026-01-02T00:00:01.000Z", "type": "user",
             "content": [{"text": text}]}])


# -- where: the project folders -----------------------------------------------------------------

def _projects(folders: list | None, ws: str | None) -> list[tuple[str, str]]:
    """(project folder under ~/.gemini/tmp, the folder it is of) for each that can be told:
    a slug's by its .project_root (what Gemini CLI trusts), else by projects.json; a hash's
    when it is the SHA-256 of `ws` (as given or resolved: Node's cwd is) or of a slug's folder.
    ~/.gemini is watched too: projects.json is replaced there."""
    gem = gemini_dir()
    tmp = os.path.join(gem, "tmp")
    watch(folders, gem)
    registry: dict[str, str] | None = None
    slugs: list[tuple[str, str]] = []
    hashed: list[tuple[str, str]] = []
    for entry in entries(tmp, folders):
        if not entry.is_dir(follow_symlinks=False):
            continue
        if len(entry.name) == 64 and _HEX.issuperset(entry.name):
            hashed.append((entry.name, entry.path))
        elif _SLUG.issuperset(entry.name):
            root = _marker(entry.path)
            if root is None:
                if registry is None:
                    registry = _registry(gem)
                root = registry.get(entry.name)
            if root:
                slugs.append((entry.path, root))
    if not hashed:  # (Gemini CLI moved them into slugs: most machines have none left)
        return slugs
    digests = {_sha256(r): r for _p, r in slugs}
    if ws:
        digests.update((_sha256(v), ws) for v in path_variants(ws))
    return slugs + [(path, digests[name]) for name, path in hashed if name in digests]


def _chats(project: str, folders: list | None) -> list[tuple[str, bool]]:
    """(session file, whether a subagent's) in a project folder's chats/: session-*.json(l),
    and <parent id>/<id>.json(l) (a legacy .json with a .jsonl twin is that session before
    Gemini CLI rewrote it: the twin is read)."""
    chats = os.path.join(project, "chats")
    found = []
    for p in _files(chats, lambda n: n.endswith((".json", ".jsonl")), folders):
        rel = os.path.relpath(p, chats).split(os.sep)
        if len(rel) == 1 and rel[0].startswith("session-"):
            found.append((p, False))
        elif len(rel) == 2:
            found.append((p, True))
    plain = {p for p, _sub in found}
    return [(p, sub) for p, sub in found if not (p.endswith(".json") and p + "l" in plain)]


def _where(path: str) -> tuple[str | None, bool]:
    """(project folder, subagent's) of a session file given without discover's extra."""
    chats = os.path.dirname(path)
    sub = os.path.basename(chats) != "chats"
    if sub:
        chats = os.path.dirname(chats)
    project = os.path.dirname(chats)
    root = _marker(project)
    if root is None and len(os.path.basename(project)) != 64:
        root = _registry(os.path.dirname(os.path.dirname(project))).get(os.path.basename(project))
    return root, sub


def _marker(project: str) -> str | None:
    """The folder a project folder's .project_root names (a plain file, read bounded)."""
    try:
        got = read_plain(os.path.join(project, ".project_root"), 4096)
    except OSError:
        return None
    root = got[0].decode("utf-8", "replace").strip() if got else ""
    return root if os.path.isabs(root) and "\0" not in root else None


def _registry(gem: str) -> dict[str, str]:
    """slug -> folder, from projects.json ({"projects": {folder: slug}}); {} for anything else."""
    from .text import load_json  # (only where Gemini CLI keeps projects)
    try:
        got = read_plain(os.path.join(gem, "projects.json"), 1 << 20)
        doc = load_json(got[0]) if got else None
    except (OSError, ValueError):
        return {}
    projects = doc.get("projects") if isinstance(doc, dict) else None
    out: dict[str, str] = {}
    if not isinstance(projects, dict):
        return out
    for folder, slug in projects.items():
        if isinstance(slug, str) and slug and _SLUG.issuperset(slug) and isinstance(folder, str) \
                and os.path.isabs(folder) and "\0" not in folder:
            out.setdefault(slug, folder)
    return out


def _sha256(path: str) -> str:
    import hashlib  # (loads OpenSSL: only where Gemini CLI keeps projects)
    try:
        return hashlib.sha256(path.encode("utf-8")).hexdigest()
    except UnicodeEncodeError:  # (a name that is not UTF-8: Node hashes it otherwise)
        return ""


def _inside(root: str, ws: str) -> str | None:
    """`root` when it is `ws` or a folder inside it, spelled as `ws` spells it, else None.
    Windows: Gemini CLI records folders in lower case (projectRegistry.ts normalizePath)."""
    root = os.path.normpath(root)
    if is_within(root, ws):
        return root
    if sys.platform == "win32":
        w = os.path.normpath(ws)
        r, c = os.path.normcase(root), os.path.normcase(w)
        if r == c or r.startswith(c.rstrip("\\") + "\\"):
            return w + root[len(w):]  # (normcase keeps the length)
    return None


def _slugify(name: str) -> str:
    """A folder's name as Gemini CLI makes a slug of it (projectRegistry.ts slugify)."""
    s = "".join(c if c in _SLUG and c != "-" else "-" for c in name.lower())
    return "-".join(filter(None, s.split("-"))) or "project"


# -- the reader -------------------------------------------------------------------------------------

def read_session(path: str, cwd: str | None, sub: bool = False):
    """(deltas, end offset, state, problems) of one session file, read whole. Raises OSError,
    or ValueError for a legacy .json that is not JSON (being written) and text.TooBig past a
    bound: what the index holds of it then stays."""
    from . import text  # (only once this source is read, never by a hook)
    from .jsonl import JsonlReader
    s = _Session()
    problems: list[str] = []
    if path.endswith(".json"):
        doc, st = text.read_json(path, "a Gemini CLI session")
        end = st.st_size
        if not isinstance(doc, dict):
            return [], end, {}, ["not a Gemini CLI session"]
        s.taken(s.header, doc)
    else:
        st = os.lstat(path)
        if st.st_size > MAX_SESSION:
            raise text.TooBig(f"{st.st_size >> 20} MB, more than the {MAX_SESSION >> 20} MB a "
                              "Gemini CLI session is read to: not read")
        reader = JsonlReader(path, 0, bulk=st.st_size > BULK)
        for obj in reader:
            s.taken(s.take, obj)
        end = reader.end
        problems += reader.problems
    # (the indexer warns of a type none of this source's files showed before, naming the file)
    state: dict = {"unk": sorted(s.unknown)[:50]} if s.unknown else {}
    deltas = s.finish(cwd, sub, st.st_mtime, problems)
    if s.odd:
        problems.append(f"{s.odd} record(s) of an unexpected shape skipped")
    return deltas, end, state, problems


class _Session:
    """A session file's lines taken in order, as Gemini CLI's loader takes them: the metadata
    merged, each message by id (a later version in the earlier's place), a rewind cutting the
    messages from the one it names. A message is held as (type, time, text, tool calls): its
    tool results, the bulk of a file, are never kept."""

    def __init__(self) -> None:
        self.meta: dict = {}
        self.msgs: dict[str, tuple | None] = {}  # id -> message, in order (None: not said)
        self.unknown: set[str] = set()
        self.odd = 0  # records of a known kind, in a shape that is not

    def taken(self, take, obj: dict) -> None:
        """`take(obj)`, a record of the wrong shape skipped whole and counted."""
        try:
            take(obj)
        except (TypeError, ValueError, AttributeError, KeyError, RecursionError):
            self.odd += 1  # (wrong types: a record is skipped whole, never half taken)

    def take(self, obj: dict) -> None:
        """One JSONL line (loadConversationRecord's order of tests)."""
        if isinstance(obj.get("$rewindTo"), str):
            self.rewind(obj["$rewindTo"])
        elif isinstance(obj.get("id"), str):
            self.put(obj)
        elif isinstance(obj.get("$set"), dict):
            self.set(obj["$set"])
        elif isinstance(obj.get("sessionId"), str) and isinstance(obj.get("projectHash"), str):
            self.header(obj)
        else:
            op = next((k for k in obj if k.startswith("$")), None)
            if op in KNOWN_TYPES or op is None and ("id" in obj or "sessionId" in obj):
                self.odd += 1  # (a known kind with a field of the wrong type)
            else:
                self._unknown(op or "(a line with no id)")

    def header(self, obj: dict) -> None:
        """The first line, or a legacy .json whole (its messages inside)."""
        self.set({k: v for k, v in obj.items() if k != "messages"})
        if isinstance(obj.get("messages"), list):
            for m in obj["messages"]:
                if isinstance(m, dict) and isinstance(m.get("id"), str):
                    self.taken(self.put, m)
                elif isinstance(m, dict):
                    self.odd += 1  # (Gemini CLI loads no message without an id)

    def set(self, upd: dict) -> None:
        for k in ("sessionId", "startTime", "lastUpdated", "summary", "kind"):
            if isinstance(upd.get(k), str):
                self.meta[k] = upd[k]
        if isinstance(upd.get("messages"), list):  # a checkpoint: every message, again
            self.msgs.clear()
            for m in upd["messages"]:
                if isinstance(m, dict) and isinstance(m.get("id"), str):
                    self.taken(self.put, m)

    def rewind(self, mid: str) -> None:
        if mid not in self.msgs:
            self.msgs.clear()  # (as Gemini CLI's loader does)
            return
        ids = list(self.msgs)
        for k in ids[ids.index(mid):]:
            del self.msgs[k]

    def put(self, m: dict) -> None:
        from .text import parse_ts  # (only once this source is read, never by a hook)
        kind = m.get("type")
        ts = parse_ts(m.get("timestamp"))
        if kind == "user":
            said = _text(m.get("displayContent")) or _text(m.get("content"))
            self.msgs[m["id"]] = ("user", ts, said, ())
        elif kind == "gemini":
            calls = m.get("toolCalls")
            calls = tuple(c for c in (_call(c) for c in calls) if c) if isinstance(calls, list) \
                else ()
            self.msgs[m["id"]] = ("gemini", ts, _text(m.get("content")), calls)
        else:
            self.msgs[m["id"]] = None  # (kept in its place: a rewind may name it)
            if not isinstance(kind, str):
                self.odd += 1
            elif kind not in KNOWN_TYPES:
                self._unknown(kind)

    def _unknown(self, kind: str) -> None:
        if len(self.unknown) < 50:
            self.unknown.add(kind[:40])

    def finish(self, cwd: str | None, sub: bool, mtime: float, problems: list[str]):
        from .. import titles  # (only once this source is read, never by a hook)
        from . import tool_calls
        from .text import dated_by_file, parse_ts, scrubber, strip_private, tail
        sid = self.meta.get("sessionId")
        if not sid:
            problems.append("not a Gemini CLI session (no sessionId)")
            return []
        scrub = scrubber(problems)

        def clean(t: str) -> str:  # the person's <private> spans out before anything reads it
            return scrub(strip_private(t))
        side = sub or self.meta.get("kind") == "subagent"
        d = SessionDelta(sid, SOURCE, LABEL)
        d.cwd = cwd
        d.seen(parse_ts(self.meta.get("startTime")))
        d.seen(parse_ts(self.meta.get("lastUpdated")))
        if self.meta.get("summary", "").strip():  # the generated one-line title (2025-12 on)
            d.summary_title = titles.normalize(clean(self.meta["summary"]))
        prompt = last = None  # the prompt the next reply pairs with; the last message said
        said = ""  # what the agent said since the prompt: a change's reason
        shown: dict = {}  # tool names as stored (tool_calls.make)
        changed: set[tuple[str, str | None]] = set()
        for key, m in self.msgs.items():
            if m is None:
                continue
            kind, ts, body, calls = m
            d.seen(ts)
            body = body.strip()
            if kind == "user":
                if not body or body.startswith(_NOT_SAID):
                    continue
                d.messages.append(Message(key, "user", clean(body), ts, side))
                if d.first_prompt is None:
                    d.first_prompt = titles.clean_first_prompt(d.messages[-1].text)
                prompt = last = key
                said = ""
                continue
            if body:
                d.messages.append(Message(key, "assistant", clean(body), ts, side, prompt))
                prompt, last = None, key
                said = d.messages[-1].text
            for name, args, cid, cts, status in calls:
                d.seen(cts)
                at = cts or ts
                target, what, line = _target(name, args)
                d.tool_calls.append(tool_calls.make(name, target, line, scrub, kind=what, ts=at,
                                                    key=last, sidechain=side, call=cid,
                                                    names=shown))
                if name in _CHANGES and isinstance(target, str) and what == "path" \
                        and status not in _FAILED:
                    path = target if os.path.isabs(target) or not cwd else \
                        os.path.normpath(os.path.join(cwd, target))
                    if (path, last) not in changed:
                        changed.add((path, last))
                        why = said or (clean(line) if isinstance(line, str) else "")
                        d.file_changes.append(FileChange(path, name, tail(why, 500), at, last))
        if not (d.messages or d.file_changes or d.tool_calls):
            return []  # (opened, nothing asked: Gemini CLI deletes such a session itself)
        dated_by_file(d, mtime)
        return [d]


def _text(value) -> str:
    """A message's text: a string, or parts ({text}, never a thought's), joined as Gemini CLI
    joins them (partToString); other parts (files, calls) are not text."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return ""
    return "".join(p if isinstance(p, str) else p["text"] for p in value
                   if isinstance(p, str) or isinstance(p, dict) and isinstance(p.get("text"), str)
                   and not p.get("thought"))


def _call(c) -> tuple | None:
    """(name, its arguments, id, time, status) of a tool call record. Only the arguments that
    can name the call are kept, cut short (a call's line keeps less): its result, a file's
    content, an edit's strings, the bulk of a file, are dropped as it is read."""
    from .text import parse_ts  # (only once this source is read, never by a hook)
    if not isinstance(c, dict) or not isinstance(c.get("name"), str):
        return None
    args = c.get("args")
    if not isinstance(args, dict):
        args = {}
    keep = {k: v[:_ARG_MAX] for k, v in args.items()
            if isinstance(v, str) and k not in ("content", "old_string", "new_string")}
    cid = c.get("id") if isinstance(c.get("id"), str) else None
    return c["name"], keep, cid, parse_ts(c.get("timestamp")), c.get("status")


def _target(name: str, args: dict) -> tuple[str | None, str, str | None]:
    """(what a call acts on, what kind of thing that is, its line): a shell command with its
    description (the agent's reason), a file (an edit's instruction), a search's pattern and
    folder, else the usual field (tool_calls)."""
    from . import tool_calls  # (only once this source is read, never by a hook)
    if name == _SHELL:
        return args.get("command"), "command", args.get("description")
    for field in _FILE_ARGS:
        if args.get(field):
            return args[field], "path", args.get("instruction") if name == "replace" else None
    where = args.get("dir_path") or args.get("path")
    if args.get("pattern"):  # glob, grep_search
        return args["pattern"], "", f"in {where}" if where else None
    if where:  # list_directory
        return where, "path", None
    target, kind = tool_calls._usual(args)
    return target, kind, None
