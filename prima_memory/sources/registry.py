"""The sources, behind one small interface, each producing the same records.

A source says where it looks (`locations`), finds its files cheaply (`discover`: paths, with
what reading one needs), reads one (`read`, or `read_chunks` in steps: the session records it
holds), and whether a record belongs to this workspace (`in_scope`). Its `mode` says how a file
that is gone is taken: "append" files are archived (their sessions stay searchable), "snapshot"
files take their session with them. `whole(path)` says a changed file is read again from the
start (VS Code rewrites a chat on every save); otherwise it is resumed from its byte offset
(Codex and Claude Code append).

Indexer.run reads every source through one pipeline. What a source declares changes how:
- `streamed`: its files are listed and checked by the pipeline itself, with scopes (one
  session's files for Stop: `session_files`; a quick look for SessionStart: `files` of some
  folders and `file`), read newest first within a time budget, by a second process for a big
  cold run (`read_chunks` takes `bulk`). `skips_reply` is for the Stop hook's provisional reply.
  Every source has these (the streamed protocol): the base class builds them on `discover` and
  `read`, so a source declares `streamed` without writing them, and the indexer asks any
  source (`session_files` of a source that does not tell its files apart by session: none).
- `spans_files`: a session is several files (a transcript and its subagents'): a rewritten file
  is read again with its whole session, and a file read from the start replaces no other.
- `claims_cwdless`: whether a file whose lines name no working folder yet is this workspace's.
Claude Code is the one source with all three.

A source read only as a search's last step (the session history summaries) is never indexed: it
offers `fallback_search`, and the registry asks FALLBACKS for it (fallback_search,
fallback_status). Each source's name, label and agent are data in names.py (the lists of sources
a person reads are built from it), and each brings a `sample` of its files for the contract test
(tests/test_source_contract.py). To add a source: its module, its class here (in SOURCES), its
line in names.py.
"""
from __future__ import annotations

import os

from ..workspace import is_within
from ..settings import flag
from . import claude_code, names
from .base import Source, by_heads, sample_file
from .listing import shared_log_folder, subdirs, utf8_name, vscode_user_dirs
from .listing import files as _files
from .listing import size as _size


class ClaudeCode(Source):
    (name, label, product), mode, streamed = names.CLAUDE_CODE, "append", True
    spans_files = True  # agent-*.jsonl files carry their parent session's id
    host, agent, resume = True, "Claude", "claude --resume {id}"
    follows_links = True  # a transcript linked into the project folder is read (discover)

    def locations(self, ws: str) -> list[str]:
        """Its project folders, or where the usual one would be (for status)."""
        return claude_code.project_dirs(ws) or [os.path.join(
            claude_code.claude_config_dir(), "projects", claude_code.encode_project_dir(ws))]

    def files(self, ws: str, log=None, only_dirs=None, known=None):
        return claude_code.discover(ws, log, only_dirs, known)

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        return [(sf.path, sf) for sf in self.files(ws)]  # (Indexer.run: its own scopes)

    def sidechain(self, extra) -> bool:
        return extra.sidechain  # a subagent's transcript

    def session_files(self, ws: str, session_id: str):
        return claude_code.session_files(ws, session_id)

    def file(self, path: str):
        return claude_code.source_file(path)

    def read_chunk(self, sf, offset, state, mtime=None, max_bytes=None, bulk=False):
        delta, end, state, problems = claude_code.read(sf, offset, state, mtime,
                                                       max_bytes=max_bytes, bulk=bulk)
        return _records(delta), end, state, problems

    def read(self, path, extra, offset, state):
        return self.read_chunk(extra, offset, state)

    def read_chunks(self, path, extra, offset, state, max_bytes, *, mtime=None, size=None,
                    bulk=False):
        """Successive steps from `offset` to `size`, `max_bytes` at a time. An empty delta
        holds nothing to index (one with a cwd is not empty: its scope is still checked)."""
        size = os.path.getsize(path) if size is None else size
        while True:
            records, end, state, problems = self.read_chunk(extra, offset, state, mtime,
                                                            max_bytes=max_bytes, bulk=bulk)
            yield records, end, state, problems
            if end >= size or end == offset:
                return
            offset = end

    def knows(self, kind: str) -> bool:
        return kind in claude_code.KNOWN_TYPES

    def everywhere(self, known: dict) -> list[tuple[str, tuple[str, ...]]]:
        """Every project folder's transcripts, with the folders its transcripts record (the
        records' cwd is the truth: a name is never decoded), read again when the project
        folder's listing changes. A folder whose transcripts record none is left out: nothing
        says whose it is."""
        out: list[tuple[str, tuple[str, ...]]] = []
        for config in claude_code.claude_config_dirs():
            root = os.path.join(config, "projects")
            try:
                dirs = sorted(e.path for e in os.scandir(root)
                              if e.is_dir(follow_symlinks=False) and utf8_name(e.name))
            except OSError:
                continue
            for d in dirs:
                try:
                    mtime = os.stat(d).st_mtime_ns
                except OSError:
                    continue
                got = known.get(d)
                if not (isinstance(got, list) and len(got) == 2 and got[0] == mtime):
                    got = [mtime, sorted(set(claude_code.recorded_cwds(d)))]
                    if got[1]:  # (none yet: looked at again, a transcript may record one)
                        known[d] = got
                if got[1]:
                    out += [(sf.path, tuple(got[1]))
                            for sf in claude_code.discover("", only_dirs=[d])]
        return out

    def in_scope(self, delta, ws: str) -> bool:
        """Claude Code's folder names collide (my_project, my-project): the records' cwd is the
        truth, so another folder's session is never indexed here. A cwd that encodes
        differently is a moved project: it stays."""
        return not (delta.cwd and claude_code.collides(delta.cwd, ws))

    def claims_cwdless(self, path: str, ws: str, cache: dict | None = None) -> bool:
        """Whether a transcript whose lines record no cwd is this workspace's: by its folder
        (see claude_code.claims_cwdless). `cache`: folder -> answer, for one run."""
        return claude_code.claims_cwdless(path, ws, cache)

    def skips_reply(self, state: dict | None) -> bool:
        """A reply the Stop hook saw is not memory: Claude's answer to our own command."""
        return claude_code.answering_command(state)

    def sample(self, ws: str, text: str) -> str:
        sid = "0c0c0c0c-0000-4000-8000-000000000001"
        return sample_file(os.path.join(self.locations(ws)[0], f"{sid}.jsonl"), [{
            "type": "user", "sessionId": sid, "uuid": "u1", "cwd": ws,
            "timestamp": "2026-01-02T00:00:00Z", "message": {"role": "user", "content": text}}])


def _records(delta) -> list:
    return [delta] if delta is not None and not delta.is_empty() else []


HEAD_BYTES = 65536  # a rollout's first lines, which name its working folder


class Codex(Source):
    (name, label, product), mode = names.CODEX, "append"
    agent, resume = "Codex", "codex resume {id}"

    def home(self) -> str:
        return os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")

    def locations(self, ws: str) -> list[str]:
        return [os.path.join(self.home(), d) for d in ("sessions", "archived_sessions")]

    def knows(self, kind: str) -> bool:
        # only once this source is read (never by a hook)
        from .codex import KNOWN_TYPES
        return kind in KNOWN_TYPES

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        def rollout(n: str) -> bool:
            return n.startswith("rollout-") and n.endswith((".jsonl", ".json", ".jsonl.zst"))
        paths = [p for loc in self.locations(ws) for p in _files(loc, rollout, folders)]
        plain = set(paths)  # a compressed rollout is read only when no plain twin exists
        return [(p, None) for p in paths if not (p.endswith(".zst") and p[:-4] in plain)]

    def read(self, path, extra, offset, state):
        from . import codex  # only once this source is read (never by a hook)
        return codex.read(path, offset, state)

    def read_chunks(self, path, extra, offset, state, max_bytes, *, mtime=None, size=None,
                    bulk=False):
        from . import codex  # only once this source is read (never by a hook)
        return codex.read_chunks(path, offset, state, max_bytes=max_bytes)

    def whole(self, path: str) -> bool:
        return path.endswith((".json", ".zst"))  # era 1 is one document; .zst is compressed

    def holds(self, ws: str) -> bool:
        """Rollouts of every folder lie together: a rollout's head names its folder (one that
        names none is every workspace's, as in_scope takes it)."""
        return any(folder is not None and (not folder or is_within(folder, ws))
                   for folder in map(self._folder, (p for p, _extra in self.discover(ws))))

    def in_scope(self, delta, ws: str) -> bool:
        """The seed's scope (docs/design.md § Sources): this workspace or a folder inside it, or
        no folder recorded."""
        return not delta.cwd or is_within(os.path.normpath(delta.cwd), ws)

    def everywhere(self, known: dict) -> list[tuple[str, tuple[str, ...]]]:
        """Every rollout, with the folder its head names (base.by_heads)."""
        return by_heads((p for p, _extra in self.discover("")), known, self._folder)

    def sample(self, ws: str, text: str) -> str:
        return sample_file(os.path.join(self.locations(ws)[0], "2026", "01", "02",
                                    "rollout-2026-01-02T00-00-00-abc.jsonl"), [
            {"timestamp": "2026-01-02T00:00:00Z", "type": "session_meta",
             "payload": {"id": "abc", "cwd": ws}},
            {"timestamp": "2026-01-02T00:00:01Z", "type": "response_item",
             "payload": {"type": "message", "role": "user",
                         "content": [{"type": "input_text", "text": text}]}}])

    def _folder(self, path: str) -> str | None:
        """The folder a rollout's head names ("": none), None when it cannot be read or holds
        no line yet."""
        from . import codex  # only once this source is read (never by a hook)
        try:  # (the first step ends where a line first names the folder: codex._chunks)
            deltas, end, state, _problems = next(codex.read_chunks(path, max_bytes=HEAD_BYTES))
        except (OSError, ValueError, StopIteration):
            return None
        if not end:  # (not one whole line yet)
            return None
        cwd = next((d.cwd for d in deltas if d.cwd), None) or (state or {}).get("cwd")
        return os.path.normpath(cwd) if isinstance(cwd, str) and cwd else ""


ALL_WORKSPACES = "PRIMA_VSCODE_ALL_WORKSPACES"


def every_vscode_workspace() -> bool:
    """PRIMA_VSCODE_ALL_WORKSPACES=1: the seed's rule, every VS Code workspace's chats."""
    return flag(ALL_WORKSPACES, default=False)


def _chat_here(folder: str | None, ws: str) -> bool:
    return not folder or every_vscode_workspace() or is_within(os.path.normpath(folder), ws)


class CopilotChat(Source):
    (name, label, product), mode, agent = names.COPILOT_CHAT, "snapshot", "Copilot"

    def locations(self, ws: str) -> list[str]:
        return vscode_user_dirs()

    def looks_at(self, ws: str) -> list:
        # switching the rule lists again: the other workspaces' chats go (or come back)
        return self.locations(ws) + (["every workspace"] if every_vscode_workspace() else [])

    def in_scope(self, delta, ws: str) -> bool:
        """A chat of this workspace (or a folder inside it, as Codex's), or of a workspace
        VS Code does not name (an empty window, no workspace.json); every workspace's with
        PRIMA_VSCODE_ALL_WORKSPACES=1. The seed took every workspace's because "Copilot records
        no workspace path", yet workspace.json names the folder, and another project's chats
        in this one's answers are noise."""
        return _chat_here(delta.cwd, ws)

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        """Chat files of this workspace (see in_scope), the newest copy of each session id (VS
        Code copies a chat when its workspace changes: the copy in another workspace wins). A
        chat out of scope is not listed, so one indexed before is dropped as gone."""
        return [(p, project) for p, project in self._chats(folders=folders)
                if _chat_here(project, ws)]

    def read(self, path, extra, offset, state):
        from . import copilot  # only once this source is read (never by a hook)
        deltas, problems = copilot.read(path)
        for d in deltas:
            d.cwd = extra  # the workspace folder, shown as the session's project
        return deltas, _size(path), state, problems

    def everywhere(self, known: dict) -> list[tuple[str, tuple[str, ...]]]:
        """Every chat, with its workspace's folder (an empty window's: none); with
        PRIMA_VSCODE_ALL_WORKSPACES=1 every chat is every workspace's."""
        every = every_vscode_workspace()
        return [(p, () if every or not folder else (os.path.normpath(folder),))
                for p, folder in self._chats(known)]

    def sample(self, ws: str, text: str) -> str:
        """A chat of a workspace VS Code does not name (no workspace.json): every one takes it."""
        return sample_file(os.path.join(self.locations(ws)[0], "workspaceStorage", "w1",
                                    "chatSessions", "abc.json"), [
            {"version": 3, "sessionId": "abc", "requests": [
                {"requestId": "r", "message": {"text": text}, "response": [{"value": "ok"}]}]}],
            whole=True)

    def _chats(self, known: dict | None = None, folders: list | None = None):
        """(path, its workspace's folder or None) of every chat file, the newest copy of each
        session id. `known`: storage folder -> workspace folder, read once; `folders`: see
        Source.discover."""
        from . import copilot  # only once this source is read (never by a hook)
        known = {} if known is None else known
        newest: dict[str, tuple[float, str, str | None]] = {}
        for user in self.locations(""):
            # (noted: a new workspace; a chat folder made later is noted absent)
            spaces = subdirs(os.path.join(user, "workspaceStorage"), folders)
            for sp in spaces:
                if sp not in known:
                    known[sp] = copilot.workspace_folder(sp)
            groups = [(os.path.join(sp, sub), known[sp]) for sp in spaces for sub in
                      ("chatSessions", os.path.join("GitHub.copilot-chat", "transcripts"))]
            groups.append((os.path.join(user, "globalStorage", "emptyWindowChatSessions"), None))
            for folder, project in groups:
                for p in _files(folder, lambda n: n.endswith((".json", ".jsonl")), folders):
                    sid = os.path.basename(p).rsplit(".", 1)[0]
                    mtime = os.stat(p).st_mtime
                    if sid not in newest or mtime > newest[sid][0]:
                        newest[sid] = (mtime, p, project)
        return [(p, project) for _m, p, project in sorted(newest.values(), key=lambda v: v[1])]


class SharedLog(Source):
    (name, label, product), mode, in_project = names.SHARED_LOG, "snapshot", True

    def locations(self, ws: str) -> list[str]:
        return [shared_log_folder(ws)]  # (its module only once the source is read)

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        from . import shared_log  # only once this source is read (never by a hook)
        return [(p, project) for project, p in shared_log.discover(ws, folders)]

    def read(self, path, extra, offset, state):
        from . import shared_log  # only once this source is read (never by a hook)
        d, problems = shared_log.read(path, extra)
        return ([d] if d else []), _size(path), state, problems

    def sample(self, ws: str, text: str) -> str:
        return sample_file(os.path.join(self.locations(ws)[0], "P1", "abc.md"),
                       [f"**Author:** A\n{text}"])


class Extracts(Source):
    """prima-memory's own extracts and checkpoints, read back for a deep search (no extract of
    an extract is ever written)."""
    (name, label, product), mode, extracted = names.EXTRACT, "snapshot", False

    def locations(self, ws: str) -> list[str]:
        # only once this source is read (never by a hook)
        from . import extract_reader as extracts
        return [extracts.root(ws)]

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        # only once this source is read (never by a hook)
        from . import extract_reader as extracts
        return [(p, ws) for p in extracts.discover(ws, folders)]

    def read(self, path, extra, offset, state):
        # only once this source is read (never by a hook)
        from . import extract_reader as extracts
        d = extracts.read(extra, path)  # None for a link, never followed
        return ([d] if d else []), _size(path), state, []

    def sample(self, ws: str, text: str) -> str:
        return sample_file(os.path.join(self.locations(ws)[0], "2026-01", "2026-01-02-abc.md"),
                       [f"# Session abc\n\n## Request\n{text}\n"])


class SessionHistory(Source):
    """Claude Code's session history summaries (.claude/state, sources/history.py): never
    indexed, read as the last step of a search whose conversations matched nothing."""
    name, label, product = names.SESSION_HISTORY
    answers, read_when = "history", "only when the conversations find nothing"

    def locations(self, ws: str) -> list[str]:
        return [os.path.join(ws, ".claude", "state")]  # (history.folder)

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        return []  # never indexed

    def read(self, path, extra, offset, state):
        return [], offset, state, []

    def holds(self, ws: str) -> bool:
        from . import history  # read only by a search, and where no memory exists yet
        return bool(history.current(ws, []))

    def fallback_search(self, ws: str, words: list[str],
                        limit: int) -> tuple[list[dict], list[str]]:
        from . import history  # read only when the conversations found nothing
        found, problems = history.search(ws, words, limit=limit)
        return found, [f"session history: {p}" for p in problems]

    def sample(self, ws: str, text: str) -> str:
        return sample_file(os.path.join(self.locations(ws)[0], "state.json"), [{"sessionHistory": [
            {"date": "2026-01-02", "summary": text, "projectsWorked": ["P1"]}]}], whole=True)


CLAUDE_CODE = ClaudeCode()  # what the hooks read
class Deferred(Source):
    """A source whose module is imported the first time anything but its name, label and
    agent is asked of it: every hook imports the registry and reads Claude Code alone, and
    the six other agents' modules would cost each hook some 3 ms to import (bench/versus.py)."""

    def __init__(self, module: str, cls: str, identity: tuple[str, str, str]) -> None:
        self.name, self.label, self.product = identity
        self._where = (module, cls)
        self._real: Source | None = None

    def loaded(self) -> Source:
        real = self._real
        if real is None:
            import importlib  # (already loaded by the import system: no cost)
            module, cls = self._where
            real = self._real = getattr(importlib.import_module(f"{__package__}.{module}"), cls)()
        return real

    def __getattr__(self, attr: str):  # (what the base class does not declare: the source's own)
        if attr.startswith("__") or attr in ("_where", "_real"):
            raise AttributeError(attr)
        return getattr(self.loaded(), attr)


def _forwarded(attr: str) -> property:
    return property(lambda self: getattr(self.loaded(), attr))


# each of the base class's attributes and methods, asked of a Deferred, is its source's
for _attr in [a for a in vars(Source) if not a.startswith("_") and a not in
              ("name", "label", "product")]:
    setattr(Deferred, _attr, _forwarded(_attr))


SOURCES = (CLAUDE_CODE, Codex(), CopilotChat(),
           Deferred("gemini_cli", "GeminiCli", names.GEMINI_CLI),
           Deferred("cursor", "Cursor", names.CURSOR),
           Deferred("cursor", "CursorAgent", names.CURSOR_AGENT),
           Deferred("opencode", "OpenCode", names.OPENCODE),
           Deferred("aider", "Aider", names.AIDER),
           Deferred("cline", "Cline", names.CLINE),
           Deferred("cline", "RooCode", names.ROO_CODE),
           Deferred("cline", "KiloCode", names.KILO_CODE),
           Deferred("copilot_cli", "CopilotCli", names.COPILOT_CLI),
           SharedLog())  # as status lists them
OTHERS = SOURCES[1:]  # the other agents': read outside the hooks
EXTRACTS = Extracts()
FALLBACKS = (SessionHistory(),)  # never indexed: a search's last step (fallback_search)
DECLARED = SOURCES + (EXTRACTS,) + FALLBACKS  # every source


def source_named(name: str) -> Source | None:
    return next((s for s in DECLARED if s.name == name), None)


def fallback_search(ws: str, words: list[str], limit: int,
                    warn) -> tuple[Source, list[dict]] | None:
    """The last search step, for a search of one workspace whose conversations matched nothing
    and that no filter narrows: the first source of FALLBACKS that finds something, with what
    it found; each source's problems go to `warn`."""
    for src in FALLBACKS:
        found, problems = src.fallback_search(ws, words, limit)
        for p in problems:
            warn(p)
        if found:
            return src, found
    return None


def fallback_status(ws: str) -> list[dict]:
    """What status says of the sources read only as a search's last step."""
    return [{"source": src.name, "label": src.label, "locations": src.locations(ws),
             "found": any(os.path.isdir(w) for w in src.locations(ws)), "read": src.read_when}
            for src in FALLBACKS]


def other_agent(source: str, label: str) -> str:
    """A session's label as lists show it: another agent's ("[Codex] "), nothing for the
    host's conversations, which they are mostly made of."""
    src = source_named(source)
    return "" if src is not None and src.host else f"{label} "


def speaker(source: str) -> str:
    """Who answers in a session of `source`, as a session's page names the replies: "claude",
    "codex", "gemini"..."""
    src = source_named(source)
    return (src.agent if src is not None and src.agent != "Agent" else "Claude").lower()

