"""The sources, behind one small interface, each producing the same records.

A source says where it looks (`locations`), finds its files cheaply (`discover`: paths, with
what reading one needs), reads one (`read`: the session records it holds), and whether a record
belongs to this workspace (`in_scope`). Its `mode` says how a changed file is taken:
"append" files are resumed from a byte offset (Codex appends on resume); "snapshot" files are
read whole and replace their session (VS Code rewrites a chat on every save).

Indexer.index_sources reads them all this way. A `streamed` source is read by Indexer.run
instead, the engine the hooks use: append files read in batches within a time budget, one
session's files alone (Stop), quick looks at what changed (SessionStart), a second process
parsing a cold index. It adds `files` (its file records, optionally only some folders'),
`session_files`, `file` (a path's record), `read_chunk` and `skips_reply` (for the Stop hook's
provisional reply). Claude Code is that source.
"""
from __future__ import annotations

import os
import stat
import sys
import time

from .text import utf8_name


class Source:
    name = ""
    label = ""
    mode = "snapshot"
    streamed = False  # read by Indexer.run (see above), not index_sources
    extracted = True  # its substantial sessions get a markdown extract
    host = False  # the conversations the memory is mostly made of: lists leave its label out
    follows_links = False  # its files may be links, read through (Claude Code's only)
    agent = "Agent"  # who answers, as extracts name it
    resume = ""  # the command that resumes a session, with {id}

    def locations(self, ws: str) -> list[str]:
        raise NotImplementedError

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        """(path, extra) of every file to read; `extra` goes back to read(). `folders` gets
        (folder, mtime) of each folder whose listing this took (see watch): while none of them
        changes, the same files would be found, so a look for changes needs no listing."""
        raise NotImplementedError

    def read(self, path: str, extra, offset: int, state: dict | None):
        """(session records, end offset, new state, problems). Raises (OSError, ValueError...)
        for a file it cannot read: the indexer keeps what it holds of it, and tries again once
        the file changes (on every look after an OSError: fixing permissions changes no file)."""
        raise NotImplementedError

    def read_chunks(self, path: str, extra, offset: int, state: dict | None, max_bytes: int):
        """read()'s results in steps of about `max_bytes` read, for a source whose files can be
        too big to hold what they say at once: each is indexed before the next is read."""
        yield self.read(path, extra, offset, state)

    def in_scope(self, delta, ws: str) -> bool:
        return True

    def looks_at(self, ws: str) -> list:
        """What a listing depends on, noted with the folders it listed: where it looks (and
        what it takes there). Another value lists again, nothing on disk changed."""
        return self.locations(ws)

    def knows(self, kind: str) -> bool:
        """Whether this version knows record type `kind`: one an older version noted as unknown
        in a file's state (see status) is no longer counted."""
        return False

    def whole(self, path: str) -> bool:
        """This file is read whole every time (never resumed from an offset)."""
        return self.mode == "snapshot"


RACY_MS = 2000  # an mtime this recent may not change for a file added in the same clock tick


def watch(folders: list | None, path: str) -> None:
    """Note a folder's mtime (None: absent) before listing it: a file added after this still
    changes what was noted. A just-changed folder (coarse file-system clocks) is noted as -1,
    which matches nothing, so the next look lists it again, as git treats a racy index entry."""
    if folders is not None:
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            folders.append((path, None))
            return
        racy = time.time_ns() - mtime < _racy_ms() * 10**6
        folders.append((path, -1 if racy else mtime))


def _racy_ms() -> int:
    try:  # PRIMA_RACY_MS: the window, for file systems known to be fine-grained (and tests)
        return int(os.environ.get("PRIMA_RACY_MS", RACY_MS))
    except ValueError:
        return RACY_MS


UNLISTED = "unlisted"


def unlisted(folders: list | None, path: str, error: OSError) -> None:
    """A folder that exists but cannot be listed (permissions): never taken as unchanged, since
    fixing it changes no mtime, and the files the index knows there are not taken as gone."""
    if folders is not None and not isinstance(error, (FileNotFoundError, NotADirectoryError)):
        folders.append((path, UNLISTED))


def _size(path: str) -> int:
    """The size of the file at `path` itself once read, by lstat: 0 for what is no regular file
    there now (a link, never followed, or a FIFO swapped in after the read)."""
    st = os.lstat(path)
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


def _files(root: str, accept, folders: list | None = None) -> list[str]:
    """Regular files under root that `accept(name)`, links never followed (the directory
    entries' own types: no stat per file)."""
    out = []
    watch(folders, root)
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as e:
        unlisted(folders, root, e)
        return out
    for e in entries:
        if not utf8_name(e.name):
            continue
        if e.is_dir(follow_symlinks=False):
            out += _files(e.path, accept, folders)
        elif accept(e.name) and e.is_file(follow_symlinks=False):
            out.append(e.path)
    return out


class ClaudeCode(Source):
    name, label, mode, streamed = "claude-code", "[transcript]", "append", True
    host, agent, resume = True, "Claude", "claude --resume {id}"
    follows_links = True  # a transcript linked into the project folder is read (discover)

    def locations(self, ws: str) -> list[str]:
        """Its project folders, or where the usual one would be (for status)."""
        from .claude_code import claude_config_dir, encode_project_dir, project_dirs
        return project_dirs(ws) or [os.path.join(claude_config_dir(), "projects",
                                                  encode_project_dir(ws))]

    def files(self, ws: str, log=None, only_dirs=None, known=None):
        from .claude_code import discover
        return discover(ws, log, only_dirs, known)

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        return [(sf.path, sf) for sf in self.files(ws)]  # (Indexer.run: its own quick look)

    def session_files(self, ws: str, session_id: str):
        from .claude_code import session_files
        return session_files(ws, session_id)

    def file(self, path: str):
        from .claude_code import source_file
        return source_file(path)

    def read_chunk(self, sf, offset, state, mtime=None, max_bytes=None, bulk=False):
        from .claude_code import read
        return read(sf, offset, state, mtime, max_bytes=max_bytes, bulk=bulk)

    def read(self, path, extra, offset, state):
        delta, end, state, problems = self.read_chunk(extra, offset, state)
        return ([delta] if delta is not None and not delta.is_empty() else []), end, state, \
            problems

    def knows(self, kind: str) -> bool:
        from .claude_code import KNOWN_TYPES
        return kind in KNOWN_TYPES

    def in_scope(self, delta, ws: str) -> bool:
        """Claude Code's folder names collide (my_project, my-project): the records' cwd is the
        truth, so another folder's session is never indexed here. A cwd that encodes
        differently is a moved project: it stays."""
        from .claude_code import collides
        return not (delta.cwd and collides(delta.cwd, ws))

    def claims_cwdless(self, path: str, ws: str, cache: dict | None = None) -> bool:
        """Whether a transcript whose lines record no cwd is this workspace's: by its folder
        (see claude_code.claims_cwdless). `cache`: folder -> answer, for one run."""
        from .claude_code import claims_cwdless
        return claims_cwdless(path, ws, cache)

    def skips_reply(self, state: dict | None) -> bool:
        """A reply the Stop hook saw is not memory: Claude's answer to our own command."""
        from .claude_code import answering_command
        return answering_command(state)


class Codex(Source):
    name, label, mode = "codex", "[Codex]", "append"
    agent, resume = "Codex", "codex resume {id}"

    def home(self) -> str:
        return os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")

    def locations(self, ws: str) -> list[str]:
        return [os.path.join(self.home(), d) for d in ("sessions", "archived_sessions")]

    def knows(self, kind: str) -> bool:
        from .codex import KNOWN_TYPES
        return kind in KNOWN_TYPES

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        def rollout(n: str) -> bool:
            return n.startswith("rollout-") and n.endswith((".jsonl", ".json", ".jsonl.zst"))
        paths = [p for loc in self.locations(ws) for p in _files(loc, rollout, folders)]
        plain = set(paths)  # a compressed rollout is read only when no plain twin exists
        return [(p, None) for p in paths if not (p.endswith(".zst") and p[:-4] in plain)]

    def read(self, path, extra, offset, state):
        from . import codex
        return codex.read(path, offset, state)

    def read_chunks(self, path, extra, offset, state, max_bytes):
        from . import codex
        return codex.read_chunks(path, offset, state, max_bytes=max_bytes)

    def whole(self, path: str) -> bool:
        return path.endswith((".json", ".zst"))  # era 1 is one document; .zst is compressed

    def in_scope(self, delta, ws: str) -> bool:
        """The seed: this workspace or a folder inside it, or no folder recorded."""
        from ..workspace import is_within
        return not delta.cwd or is_within(os.path.normpath(delta.cwd), ws)


def vscode_user_dirs() -> list[str]:
    """Every VS Code user folder of this account (PRIMA_VSCODE_USER_DIRS overrides the list)."""
    given = os.environ.get("PRIMA_VSCODE_USER_DIRS")
    if given is not None:
        return [d for d in given.split(os.pathsep) if d]
    home = os.path.expanduser("~")
    apps = ("Code", "Code - Insiders", "VSCodium")
    if sys.platform == "darwin":
        bases = [os.path.join(home, "Library", "Application Support")]
    elif sys.platform == "win32":
        bases = [os.environ.get("APPDATA", os.path.join(home, "AppData", "Roaming"))]
    else:
        bases = [os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")]
    return [os.path.join(b, a, "User") for b in bases for a in apps] + [
        os.path.join(home, ".vscode-server", "data", "User"),
        os.path.join(home, ".vscode-server-insiders", "data", "User")]


ALL_WORKSPACES = "PRIMA_VSCODE_ALL_WORKSPACES"


def every_vscode_workspace() -> bool:
    """PRIMA_VSCODE_ALL_WORKSPACES=1: the seed's rule, every VS Code workspace's chats."""
    return os.environ.get(ALL_WORKSPACES, "").strip().lower() in ("1", "true", "yes", "on")


def _chat_here(folder: str | None, ws: str) -> bool:
    from ..workspace import is_within
    return not folder or every_vscode_workspace() or is_within(os.path.normpath(folder), ws)


class CopilotChat(Source):
    name, label, mode, agent = "copilot-chat", "[VS Code]", "snapshot", "Copilot"

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
        from . import copilot
        newest: dict[str, tuple[float, str, object]] = {}
        for user in self.locations(ws):
            storage = os.path.join(user, "workspaceStorage")
            watch(folders, storage)  # a new workspace; a chat folder made later is noted absent
            try:
                spaces = sorted(e.path for e in os.scandir(storage)
                                if e.is_dir(follow_symlinks=False) and utf8_name(e.name))
            except OSError as e:
                unlisted(folders, storage, e)
                spaces = []
            groups = [(os.path.join(s, sub), copilot.workspace_folder(s)) for s in spaces
                      for sub in ("chatSessions", os.path.join("GitHub.copilot-chat", "transcripts"))]
            groups.append((os.path.join(user, "globalStorage", "emptyWindowChatSessions"), None))
            for folder, project in groups:
                for p in _files(folder, lambda n: n.endswith((".json", ".jsonl")), folders):
                    sid = os.path.basename(p).rsplit(".", 1)[0]
                    mtime = os.stat(p).st_mtime
                    if sid not in newest or mtime > newest[sid][0]:
                        newest[sid] = (mtime, p, project)
        chats = sorted(newest.values(), key=lambda v: v[1])
        return [(p, project) for _m, p, project in chats if _chat_here(project, ws)]

    def read(self, path, extra, offset, state):
        from . import copilot
        deltas, problems = copilot.read(path)
        for d in deltas:
            d.cwd = extra  # the workspace folder, shown as the session's project
        return deltas, _size(path), state, problems


class SharedLog(Source):
    name, label, mode = "shared-log", "[shared log · author]", "snapshot"

    def locations(self, ws: str) -> list[str]:
        from . import shared_log
        return [shared_log.folder(ws)]

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        from . import shared_log
        return [(p, project) for project, p in shared_log.discover(ws, folders)]

    def read(self, path, extra, offset, state):
        from . import shared_log
        d, problems = shared_log.read(path, extra)
        return ([d] if d else []), _size(path), state, problems


class Extracts(Source):
    """prima-memory's own extracts and checkpoints, read back for a deep search (no extract of
    an extract is ever written)."""
    name, label, mode, extracted = "extract", "[extract]", "snapshot", False

    def locations(self, ws: str) -> list[str]:
        from . import extract_reader as extracts
        return [extracts.root(ws)]

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        from . import extract_reader as extracts
        return [(p, ws) for p in extracts.discover(ws, folders)]

    def read(self, path, extra, offset, state):
        from . import extract_reader as extracts
        d = extracts.read(extra, path)  # None for a link, never followed
        return ([d] if d else []), _size(path), state, []


SOURCES = (ClaudeCode(), Codex(), CopilotChat(), SharedLog())  # the seed's, and status's, list
STREAMED = next(s for s in SOURCES if s.streamed)  # what Indexer.run and the hooks read
OTHERS = tuple(s for s in SOURCES if not s.streamed)  # what index_sources reads
EXTRACTS = Extracts()


def source_named(name: str) -> Source | None:
    return next((s for s in SOURCES + (EXTRACTS,) if s.name == name), None)


def other_agent(source: str, label: str) -> str:
    """A session's label as lists show it: another agent's ("[Codex] "), nothing for the
    host's conversations, which they are mostly made of."""
    src = source_named(source)
    return "" if src is not None and src.host else f"{label} "
