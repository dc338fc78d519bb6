"""Every project on this machine and where each one's memory lives: what a search of all
projects reads (`--all-projects`, the MCP tools' scope "all", `/prima-memory:recall --all`).

A project is a folder some agent's sessions ran in: the one a Claude Code project folder's
transcripts record (the records' cwd is the truth; a folder name is never decoded), a Codex
rollout's, a VS Code workspace's. Another agent's folder inside a Claude Code project is that
project's, as a search from there would serve it (workspace.find_workspace).

Its memory is its own .prima-memory when that holds an index this user's prima-memory stamped,
used as it is and never copied. Otherwise it lives in the user-level store
(workspace.detached_dir), made on first use: no .prima-memory ever appears in a folder the user
has not used prima-memory in, a cloned repository's index is never read, and a project whose
folder is gone is still searched, from its transcripts. When a project gets its own memory
later, that takes over what the user-level store held (Memory._adopt_detached).

The catalog (catalog.json in the user-level store) keeps what the sources' files say of their
folders, so each file's head is read once, and the project folders seen. Freshness costs what
changed: one pass stats every source file, and only the projects whose files changed since
their memory was last brought up to date here are updated (a fingerprint of their files, kept
in that memory). The hooks never come here: a SessionStart or Stop touches its own workspace.
"""
from __future__ import annotations

import json
import os
import struct
import time

from . import background, owner
from . import workspace as wsmod
from .errors import Failure
from .indexer import RULES
from .logs import Log
from .memory import ALL, DiskFull, IndexBusy, IndexReadOnly, Memory
from .scope import Scope
from .sources.names import agents
from .sources.registry import SOURCES, every_vscode_workspace
from .storage import SCHEMA_VERSION, CantOpen, ReadOnly, SchemaMismatch, Store, StoreError

TYPE_CHECKING = False  # (typing's own import: see memory.py)
if TYPE_CHECKING:
    from collections.abc import Callable

    from .embed import Embedder

CATALOG = "catalog.json"
CATALOG_VERSION = 1
FOLDER_FILE = "folder"  # in a project's folder of the user-level store: the project it is of
SEEN = "all_projects_seen"  # meta: the fingerprint of a project's files when last brought up
LOCK_WAIT = 2.0  # seconds a project's update waits for another writer (a hook) before going on
RACY_NS = 2 * 10**9  # a file changed this recently may change again within its mtime's tick


class Project:
    """A project folder, its source files (path, how it is stat'ed: through a link for a
    source that reads through links, else Source.stat) and where its memory lives."""

    __slots__ = ("folder", "files", "own", "home")

    def __init__(self, folder: str):
        self.folder = folder
        self.files: list[tuple[str, Callable]] = []  # (path, how it is stat'ed: Source.stat)
        self.own = _has_own(folder)
        self.home = None if self.own else wsmod.detached_dir(folder)

    def fingerprint(self) -> str:
        """What its memory was brought up to date from: every file's size, time and inode (in
        the listing's order: a new order only costs a look that finds nothing), and what
        decides how they are read (the schema, the indexing rules, the VS Code scope)."""
        h = wsmod.blake2b(f"{SCHEMA_VERSION}/{RULES}/{every_vscode_workspace()}".encode(),
                    digest_size=16)
        recent = time.time_ns() - RACY_NS
        pack = _FILE.pack
        for path, stat in self.files:
            try:
                st = stat(path)
            except OSError:
                h.update(b"gone")
                continue
            if st.st_mtime_ns > recent:  # may change again unseen: looked at every time
                h.update(os.urandom(8))
            h.update(pack(st.st_ino, st.st_size, st.st_mtime_ns))
        return h.hexdigest()


_FILE = struct.Struct("<Qqq")  # a file's inode, size and time, as the fingerprint takes them


def _plain_file(path: str) -> bool:
    try:
        return os.path.isfile(path) and not os.path.islink(path)
    except (OSError, ValueError):
        return False


class _Looked(dict):
    """A source's `known` (Source.everywhere): what it looks up or learns is kept, the rest
    (files gone) dropped from the catalog."""

    def __init__(self, old) -> None:
        super().__init__(old if isinstance(old, dict) else {})
        self.used: set = set()

    def get(self, key, default=None):
        self.used.add(key)
        return super().get(key, default)

    def __contains__(self, key) -> bool:
        self.used.add(key)
        return super().__contains__(key)

    def __setitem__(self, key, value) -> None:
        self.used.add(key)
        super().__setitem__(key, value)

    def kept(self) -> dict:
        return {k: v for k, v in self.items() if k in self.used}


def _newest(mem: Memory) -> float:
    rows = mem.store().recent_sessions(1)
    return (rows[0].ended_at or 0.0) if rows else 0.0


class AllProjects(Scope):
    """Every project's memory, found and opened once and kept open across requests (the MCP
    server keeps one for its life; a command's lives for the command). Its log is the
    user-level store's."""
    wide = "all"  # (each hit names its project)

    def __init__(self, mine: Memory | None = None):
        self.mine = mine  # the serving workspace's own memory, used as it is for its project
        self.log = Log(wsmod.user_store())  # (nothing written until the store is made)
        self._mems: dict[str, Memory] = {}
        self._foreign: dict[str, tuple] = {}  # folder -> its own index's stat, not stamped ours
        self._files: dict[str, int | None] = {}  # folder -> its open memory's index's inode
        self._kept: dict[str, tuple] = {}  # index path -> what exclusions() read of it, and when
        self._embedder: Embedder | None = None
        self._key: tuple[bytes | None] | None = None  # the user's key, once read
        self.budget: float | None = None  # seconds a request brings projects up to date for
        self.left_behind = False  # the last bring_up left projects to index
        self.warnings: list[str] = []  # a background run's, for its log
        self._opened_now: list[tuple[Project, Memory]] | None = None  # by this request's bring_up

    # -- finding the projects ----------------------------------------------------------------------

    def scan(self) -> list[Project]:
        """Every project, with its files, sorted by folder. Reads the sources' listings (and the
        head of each file not seen before) and the user-level store's own project folders."""
        catalog = _load(self.log)
        changed = catalog.get("version") != CATALOG_VERSION
        located: list[tuple[str, Callable, tuple[str, ...]]] = []
        for src in SOURCES:
            looked = _Looked(catalog.get(src.name))
            try:
                got = src.everywhere(looked)
            except Exception as e:  # noqa: BLE001 - one source's trouble never stops a search
                self.log.warn(f"all projects: {src.name}: cannot list its files: "
                              f"{type(e).__name__}: {e}", once=True)
                continue
            kept = looked.kept()
            if kept != catalog.get(src.name):
                catalog[src.name], changed = kept, True
            sane: dict[tuple, tuple] = {}  # (the same folders come with many files)
            for path, named in got:
                if named not in sane:
                    sane[named] = tuple(f for f in map(_folder, named) if f)
                if named and not sane[named]:
                    continue  # it names only folders that cannot be: nobody's
                located.append((path, os.stat if src.follows_links else src.stat, sane[named]))
        claude = {f for path, stat, folders in located if stat is os.stat for f in folders}
        remembered = {_folder(f) for f in catalog.get("folders") or ()} | set(_stored_folders())
        roots = claude | {f for f in remembered if f}
        owner: dict[str, str] = {}
        projects: dict[str, Project] = {}

        def project(folder: str) -> Project:
            if folder not in owner:
                owner[folder] = folder if folder in roots or _has_own(folder) \
                    else _owner(folder, roots)
            top = owner[folder]
            if top not in projects:
                projects[top] = Project(top)
            return projects[top]

        everyone: list[tuple[str, Callable]] = []  # files every workspace takes (no folder named)
        for path, stat, folders in located:
            if not folders:
                everyone.append((path, stat))
            for f in folders:
                project(f).files.append((path, stat))
        for f in roots:
            if f in projects or _kept_anywhere(f):
                project(f)
        _one_per_folder(projects)
        inside = [s for s in SOURCES if s.in_project]  # (a shared log, Aider's history)
        for p in projects.values():
            p.files += everyone
            for src in inside:
                if any(os.path.exists(w) for w in src.locations(p.folder)):  # (most have none)
                    p.files += [(path, src.stat) for path, _ in src.discover(p.folder)]
        found = sorted(projects)
        if changed or found != catalog.get("folders"):
            catalog.update(version=CATALOG_VERSION, folders=found)
            _save(catalog, self.log)
        # a project that keeps itself out (.prima-memory-off) gets no memory; one made before
        # the file was put there is still searched, never updated
        return [projects[f] for f in found if not wsmod.opted_out(f) or _kept_anywhere(f)]

    # -- their memories ------------------------------------------------------------------------------

    def memory(self, p: Project) -> Memory:
        """The project's memory, opened once: its own (stamped by this user), else the
        user-level store's. Raises Failure (host mode, a user-level store that cannot be
        made) when it has none and none may be made."""
        if p.own and self._foreign.get(p.folder) == _stat_of(wsmod.index_path(p.folder)):
            p.own, p.home = False, wsmod.detached_dir(p.folder)  # (found so before, unchanged)
        mem = self._mems.get(p.folder)
        if mem is not None and (not mem.detached) == p.own and (
                mem is self.mine or self._files.get(p.folder) == _inode(mem.db_path)):
            return mem  # (not deleted, nor made again, since it was opened)
        if mem is not None and mem is not self.mine:
            mem.close()
        mem = self._open(p)
        mem.store()
        self._mems[p.folder], self._files[p.folder] = mem, _inode(mem.db_path)
        return mem

    def key(self) -> bytes | None:
        """The user's key, read once (None: it can be neither read nor made)."""
        if self._key is None:
            try:
                self._key = (owner.key(),)
            except OSError as e:
                self.log.warn(f"all projects: the key that proves an index is yours cannot be "
                              f"kept ({e}): no project's own index is used", once=True)
                self._key = (None,)
        return self._key[0]

    def _open(self, p: Project) -> Memory:
        mem = self._opened(p)
        if mem is not self.mine:
            mem.use_key(self.key())
        return mem

    def _opened(self, p: Project) -> Memory:
        if p.own:
            mine = self.mine
            if mine is not None and os.path.abspath(mine.ws) == p.folder and not mine.detached:
                return mine
            key = self.key()
            why = _not_ours(wsmod.index_path(p.folder), key) if key else "cannot be checked"
            if why is None:
                mem = Memory(p.folder, strict=True)
                if wsmod.is_real_dir(wsmod.detached_dir(p.folder)):
                    mem._adopt_detached(mem.store())  # its own memory holds it now
                return mem
            # not known to be this user's (a cloned repository's): never used, never touched
            self.log.warn(f"all projects: {wsmod.index_path(p.folder)} {why}: searching "
                          f"{p.folder} from its transcripts in the user-level store instead",
                          once=True)
            self._foreign[p.folder] = _stat_of(wsmod.index_path(p.folder))
            p.own, p.home = False, wsmod.detached_dir(p.folder)
        mem = Memory(p.folder, home=p.home)
        mem.store()  # opened, or made (host mode refuses here)
        try:  # with the file naming its project (again, if a kill came between the two)
            wsmod.create_whole(os.path.join(mem.dir, FOLDER_FILE), p.folder)
        except (OSError, UnicodeError):  # (read-only, or a name no file holds: the catalog
            pass  # knows it meanwhile)
        return mem

    def update_projects(self, projects: list[Project], *, budget: float | None = None,
                        progress=None, warnings: list[str]) -> list[tuple[Project, Memory]]:
        """Each project's memory, brought up to date where its files changed (within `budget`
        seconds in all: the rest answer as they stand, and a project with no memory yet is
        left out, counted in `warnings`). Another writer's lock is waited for a moment, then
        that project answers as it stands."""
        deadline = None if budget is None else time.monotonic() + budget
        opened, todo, refused = [], [], []
        busy = readonly = waiting = 0

        for p in projects:
            try:
                mem = self.memory(p)
                mark = p.fingerprint()
                if mem.store().get_meta(SEEN) != mark:
                    todo.append((p, mem, mark))
            except (Failure, OSError) as e:
                refused.append(f"{p.folder}: {' '.join(str(e).split())}")
                continue
            opened.append((p, mem))
        overall = _Overall(progress, [sum(_size(f) for f, _ in p.files) for p, _m, _k in todo]) \
            if progress and todo else None
        for n, (p, mem, mark) in enumerate(todo):
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                waiting += 1
                continue
            if overall:
                overall.next(n)
            try:
                rep = _update(mem, left, overall)
                store = mem.store()
                if rep.pending_files:
                    waiting += 1
                elif not store.readonly:
                    with store.write():
                        store.set_meta(SEEN, mark)
            except IndexBusy:
                busy += 1
            except (IndexReadOnly, DiskFull):
                readonly += 1
            except (Failure, OSError) as e:
                refused.append(f"{p.folder}: {' '.join(str(e).split())}")
        if overall:
            overall.done()
        self.left_behind = waiting > 0
        if busy:
            warnings.append(f"{busy} project(s) were being updated by another prima-memory "
                            "process: searched as they stand")
        if readonly:
            warnings.append(f"{readonly} project(s) cannot be written (read-only, or a full "
                            "disk): searched as they stand")
        if waiting:
            warnings.append(f"{waiting} project(s) still have files to index: searched as far "
                            "as they are indexed")
        for line in refused:
            self.log.warn(f"all projects: {line}", once=True)
        if refused:
            warnings.append(f"{len(refused)} project(s) have no memory and none can be made "
                            f"(the first: {refused[0]}); see {self.log.path or 'the log'}")
        self._drop_gone({p.folder for p in projects})
        return [(p, mem) for p, mem in opened if mem.exists()]

    def _drop_gone(self, folders: set[str]) -> None:
        for folder in list(self._mems):
            if folder not in folders:
                mem = self._mems.pop(folder)
                if mem is not self.mine:
                    mem.close()

    def exclusions(self, opened: list[tuple[Project, Memory]]) -> list[set[int]]:
        """Each memory's sessions that another one holds as its own, so every session is
        counted and shown once: a session recorded inside a project nested in this one's
        folder is that project's; one recorded outside this one's folder, or in none (a VS Code
        empty window's chat, which every workspace takes), is its folder's project's when that
        holds it, else the first memory's that holds it."""
        where = {p.folder: n for n, (p, _m) in enumerate(opened)}
        reads = []
        for p, mem in opened:
            store = mem.store()
            inside = tuple(f for f in where if f != p.folder
                           and f.startswith(p.folder.rstrip(os.sep) + os.sep))
            key = (id(store), store.version(), inside)  # (another opening: read again)
            got = self._kept.get(store.path)
            if got is None or got[0] != key:  # (read again only when the index changed)
                got = self._kept[store.path] = (
                    key, store.sessions_within(inside) if inside else set(),
                    store.sessions_elsewhere(p.folder))
            reads.append(got)
        held: set[tuple[str, str]] = set()
        out = []
        for n, (_key, within, elsewhere) in enumerate(reads):
            skip = set(within)
            for sid, source, session_id, cwd in elsewhere:
                m = _nearest(cwd, where)
                if m is not None and m != n and \
                        opened[m][1].store().session_by_session_id(session_id, source):
                    skip.add(sid)
                elif (source, session_id) in held:
                    skip.add(sid)
                else:
                    held.add((source, session_id))
            out.append(skip)
        return out

    # -- the scope of a request (scope.py) ----------------------------------------------------------

    def bring_up(self, warnings: list[str], *, progress=None, deep: bool = False) -> None:
        """The projects whose files changed brought up to date, within `budget` (what is left
        goes on in one background run); `deep`: each project's own extracts read back too."""
        opened = self.update_projects(self.scan(), budget=self.budget, progress=progress,
                                      warnings=warnings)
        if self.left_behind:
            self._background(warnings)
        if deep:
            for _p, mem in opened:
                if not mem.detached:
                    mem.read_extracts([])
        self._opened_now = opened

    def memories(self, warnings: list[str]) -> list[tuple[Memory, set[int]]]:
        """Every project that has a memory: those the bring_up of this request opened, else
        those whose index is there (none is made by a read)."""
        opened, self._opened_now = self._opened_now, None
        if opened is None:
            opened = []
            for p in self.scan():
                path = wsmod.index_path(p.folder) if p.own or p.home is None else \
                    os.path.join(p.home, "index.db")
                if os.path.isfile(path) or p.folder in self._mems:
                    try:
                        opened.append((p, self.memory(p)))
                    except (Failure, OSError) as e:
                        self.log.warn(f"all projects: {p.folder}: {' '.join(str(e).split())}",
                                      once=True)
        opened = [(p, m) for p, m in opened if m.exists()]
        if not opened:
            raise Failure(f"no project has any session to search: no {agents('or')} "
                          "history was found on this machine")
        return list(zip([m for _p, m in opened], self.exclusions(opened)))

    def embed_new(self, embedder, budget: float, warnings: list[str]) -> None:
        """The projects with the newest sessions first share the budget; what is left goes
        to one background run."""
        from .semantic import key_of  # (semantic work only)
        deadline, key = time.monotonic() + budget, key_of(embedder)
        left = 0
        pending = [m for m in self._mems.values() if m.store().count_pending(key)]
        for m in sorted(pending, key=_newest, reverse=True):  # (most have none: no lock taken)
            left += m.embed_within(embedder, max(0.0, deadline - time.monotonic()), None)[0]
        if left:
            warnings.append(f"{left} exchanges are not embedded yet (found by keyword only "
                            "until they are)")
            self._background(warnings)

    def link_new(self, budget: float, warnings: list[str]) -> None:
        deadline, left = time.monotonic() + budget, 0
        for m in list(self._mems.values()):
            left += m.link_within(max(0.0, deadline - time.monotonic()))
        if left:
            warnings.append(f"{left} exchanges have no similarity links yet (they are still "
                            "found; their links come in the background)")

    def describe(self, mems: list[Memory]) -> dict:
        # (a project whose folder is gone is searched from its transcripts: said so)
        return {"scope": "all", "projects": len(mems),
                "gone": sum(not os.path.isdir(m.ws) for m in mems)}

    def damaged(self, e: BaseException) -> Memory | None:
        """The memory whose index the error names (a store error carries its path)."""
        path = getattr(e, "path", None)
        mems = list(self._mems.values()) + ([self.mine] if self.mine else [])
        return next((m for m in mems if m.db_path == path), None)

    def _background(self, warnings: list[str]) -> None:
        """What a request within a budget left (projects to index, exchanges to embed) goes on
        in one background process over every project."""
        try:
            pid = background.start_all()
        except Exception as e:  # noqa: BLE001 - the next request does it anyway
            self.log.warn(f"all projects: could not start the background run: {e}", once=True)
            return
        if pid:
            warnings.append("the rest is being indexed and embedded in the background (a "
                            "search in a minute finds more)")

    def embedder(self, mem: Memory | None = None):
        """The model, loaded once for every memory (`mem`: by that one's, else the first's)."""
        mem = mem or self.mine or next(iter(self._mems.values()), None)
        if mem is None:
            from . import embed  # (semantic work only: no memory open to load it for)
            self._embedder = self._embedder or embed.load()
            return self._embedder
        self._embedder = mem.embedder(self._embedder)
        for m in self._mems.values():
            m.embedder(self._embedder)
        return self._embedder

    def close(self) -> None:
        self._drop_gone(set())


def _one_per_folder(projects: dict[str, Project]) -> None:
    """Two spellings of one folder (a linked path, as some tool recorded it) are one project,
    under the first spelling: both would read the same transcripts (path_variants)."""
    seen: dict[str, Project] = {}
    for folder in sorted(projects):
        try:
            real = os.path.realpath(folder)
        except (OSError, ValueError):
            continue
        first = seen.setdefault(real, projects[folder])
        if first is not projects[folder]:
            first.files += projects.pop(folder).files


def _nearest(path: str, where: dict[str, int]) -> int | None:
    """The value of `where` for the project folder nearest at or above `path`, if any."""
    f = _folder(path)
    while f:
        if f in where:
            return where[f]
        parent = os.path.dirname(f)
        f = None if parent == f else parent
    return None


def _update(mem: Memory, left: float | None, progress):
    """A project's update within what is left of the time, a damaged index made again."""
    wait = LOCK_WAIT if left is None else min(LOCK_WAIT, left)
    return mem.guarded(lambda: mem.update(sources=ALL, lock_timeout=wait, budget=left,
                                          progress=progress))


def _folder(value) -> str | None:
    """A folder as a source recorded it, if it can be a project: an absolute path, normalised
    (a transcript can say anything: `../x`, a relative name, a NUL)."""
    if not isinstance(value, str) or not os.path.isabs(value) or "\0" in value:
        return None
    return os.path.normpath(value)


def _owner(folder: str, roots: set[str]) -> str:
    """The project another agent's folder belongs to: the nearest Claude Code project,
    remembered project or folder with its own index above it, never the home folder or the
    file-system root, which a folder below is not taken into (find_workspace's rule); else
    where a search from it would serve (its git root), else itself."""
    home = wsmod.home_folder()
    f = folder
    while True:
        parent = os.path.dirname(f)
        if parent == home or os.path.dirname(parent) == parent:  # (the root, or above it)
            break
        f = parent
        if f in roots or _has_own(f):
            return f
    if os.path.isdir(folder):
        try:
            found = wsmod.find_workspace(folder, history_only=True)
        except (OSError, ValueError):
            return folder
        if found.how == "git root" or found.folder in roots:
            return found.folder
    return folder


def _has_own(folder: str) -> bool:
    """Whether the folder keeps its own index, a file in a real .prima-memory folder (a link
    is not followed): a search from it would be served there."""
    return wsmod.is_real_dir(wsmod.data_dir(folder)) and _plain_file(wsmod.index_path(folder))


def _kept_anywhere(folder: str) -> bool:
    """Whether a project seen before still has a memory (its own, or the user-level store's):
    its sessions are searched even when no source file of it is left."""
    return (_has_own(folder)
            or _plain_file(os.path.join(wsmod.detached_dir(folder), "index.db")))


def _stored_folders() -> list[str]:
    """The projects the user-level store keeps a memory of (each folder's FOLDER_FILE)."""
    root = os.path.join(wsmod.user_store(), "projects")
    out = []
    try:
        entries = [e for e in os.scandir(root) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    for e in entries:
        try:
            got = wsmod.read_plain(os.path.join(e.path, FOLDER_FILE), 8192)
        except OSError:
            continue
        text = got[0].decode("utf-8", "surrogateescape").strip() if got else ""
        # (only a folder whose name is this file's, so a renamed or planted file adds nothing)
        if os.path.isabs(text) and wsmod.detached_dir(text) == e.path:
            out.append(text)
    return out


def _not_ours(path: str, key: bytes) -> str | None:
    """Why the index at `path` is not known to be this user's (None: it is), found by reading
    it alone: nothing is written in its folder, not even a log line or a byte of a -shm (a
    read-only open of an index in WAL mode makes a -shm and a -wal beside it, and writes the
    -shm). With a -shm there, its write-ahead log is read through it, the -shm only read (a
    process may have it open, its last changes in the log); else the file alone."""
    shm = _plain_file(path + "-shm")
    try:
        try:
            Store(path, key=key, shm_kept=shm, immutable=not shm).close()
        except (CantOpen, ReadOnly):  # the -shm gone meanwhile, or one that cannot be read
            Store(path, key=key, immutable=True).close()
    except SchemaMismatch as e:  # (stamped: its schema is checked after the stamp)
        return None if e.found is not None and e.found < SCHEMA_VERSION else str(e)
    except StoreError as e:
        return " ".join(str(e).split()).replace(path, "").strip() or type(e).__name__
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    return None


def _stat_of(path: str) -> tuple:
    try:
        st = os.lstat(path)
    except OSError:
        return ()
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _inode(path: str) -> int | None:
    return (_stat_of(path) or (None,))[0]


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _load(log: Log) -> dict:
    path = os.path.join(wsmod.user_store(), CATALOG)
    try:
        got = wsmod.read_plain(path, 256 << 20)
        data = json.loads(got[0]) if got else {}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        log.warn(f"{path}: unreadable ({e}): made again", once=True)
        return {}
    return data if isinstance(data, dict) else {}


def _save(catalog: dict, log: Log) -> None:
    root = wsmod.user_store()
    try:
        wsmod.make_private(root)
        wsmod.replace_whole(os.path.join(root, CATALOG),
                            json.dumps(catalog, ensure_ascii=False, separators=(",", ":")))
    except (OSError, UnicodeEncodeError) as e:  # the next search reads the heads again
        log.warn(f"the catalog of projects cannot be kept in {root}: {e}", once=True)


class _Overall:
    """One progress bar over the indexing of several projects: each project's steps (the
    indexer's done/total within it) after the sizes of the projects before it."""

    def __init__(self, bar, sizes: list[int]):
        self.bar, self.sizes = bar, sizes
        self.total = sum(sizes)
        self.base = 0
        self.n = -1

    def next(self, n: int) -> None:
        self.base = sum(self.sizes[:n])
        self.n = n
        self.bar.label = f"indexing project {n + 1}/{len(self.sizes)}"

    def update(self, done: int, total: int) -> None:
        self.bar.update(self.base + min(done, self.sizes[self.n]), self.total)

    def finish(self) -> None:  # (the indexer's, after each project: the bar goes on)
        pass

    def done(self) -> None:
        self.bar.finish()
