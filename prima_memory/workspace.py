"""Which workspace is served and where its index lives (where each source keeps its sessions is
the source's own: sources/)."""
from __future__ import annotations

import errno
import os
import stat
import time

from .errors import Failure
from .hints import cli

from .host import project_dirs
# path_variants and text_of live in paths.py: kept importable from here, where the rest of the
# package looks for them
from .paths import path_variants as path_variants
from .paths import text_of as text_of
from .sources.names import agents

DATA_DIR_NAME = ".prima-memory"


class WorkspaceError(Failure):
    """A workspace that must not be served (host mode) or cannot be used."""


def home_folder() -> str:
    """The user's home folder, absolute."""
    return os.path.abspath(os.path.expanduser("~"))


def resolve_workspace(explicit: str | None = None) -> str:
    """The folder served: see locate (hooks: hook_workspace)."""
    return locate(explicit).folder


def locate(explicit: str | None = None, empty=None) -> Found:
    """--workspace, then CLAUDE_PROJECT_DIR, then the workspace the current folder is in
    (find_workspace; `empty`: see there)."""
    for cand in (explicit, os.environ.get("CLAUDE_PROJECT_DIR")):
        if cand:
            folder = os.path.abspath(os.path.expanduser(cand))
            return Found(folder, folder, "given")
    return find_workspace(os.getcwd(), empty=empty)


class Found:
    """The workspace a folder is in: `folder`, and `how` it was chosen: "given" (--workspace or
    CLAUDE_PROJECT_DIR), "history" (Claude Code keeps history for it), "index" (it has a
    .prima-memory), "git root" or "here" (neither, in it or above it: no memory to serve)."""

    __slots__ = ("start", "folder", "how")

    def __init__(self, start: str, folder: str, how: str) -> None:
        self.start, self.folder, self.how = start, folder, how

    @property
    def has_memory(self) -> bool:
        return self.how in ("given", "history", "index")

    def nothing_here(self) -> str:
        """The one line said where there is no memory to serve."""
        return (f"no memory for {text_of(self.start)}: Claude Code has no history for it or any "
                f"folder above it, and none has a {DATA_DIR_NAME} folder. Search every project "
                f"with --all-projects, run it in your project's folder, or pass --workspace DIR "
                f"(`{cli()} index` makes a memory here of its {agents(others=True)} sessions)")


def find_workspace(start: str, *, history_only: bool = False, empty=None) -> Found:
    """The nearest folder, `start` or above it, that Claude Code keeps history for or that has a
    .prima-memory; else the git root; else `start` itself. The home folder and the filesystem
    root are taken only when `start` is that folder: the sessions started there are not a
    project's, and every project below them would otherwise fall into them. `history_only`:
    only a folder Claude Code keeps history for counts (a hook's). `empty(folder)`: whether a
    .prima-memory holds no session: one that does is passed over for a folder above it that
    Claude Code keeps history for (an older prima-memory made one in any folder it ran in)."""
    start = os.path.abspath(start)
    home = home_folder()
    git_root = passed = None
    folder = start
    while True:
        parent = os.path.dirname(folder)
        if folder == start or (folder != home and parent != folder):
            try:
                if _claude_keeps(folder):
                    return Found(start, folder, "history")
                if not history_only and passed is None and is_real_dir(data_dir(folder)):
                    if empty is None or not empty(folder):
                        return Found(start, folder, "index")
                    passed = folder
                if git_root is None and os.path.lexists(os.path.join(folder, ".git")):
                    git_root = folder
            except (ValueError, OSError):  # a NUL in the path, an unreadable folder
                pass
        if parent == folder:
            break
        folder = parent
    if passed is not None:
        return Found(start, passed, "index")
    return Found(start, git_root, "git root") if git_root else Found(start, start, "here")


OPT_OUT_FILE = ".prima-memory-off"  # a project's opt-out: committed, or kept local (see README)


def opted_out(workspace: str) -> str | None:
    """The `.prima-memory-off` that keeps the project out of prima-memory (a file, or a link:
    its owner put it there), in its folder or any folder above (committed at a repository's
    root, it covers Claude Code started in a subfolder); None when there is none. Then no hook
    writes anything under it, and no memory is made for it."""
    folder = os.path.abspath(workspace)
    while True:
        mark = os.path.join(folder, OPT_OUT_FILE)
        if os.path.lexists(mark):
            return mark
        up = os.path.dirname(folder)
        if up == folder:
            return None
        folder = up


def hook_workspace(explicit: str | None, payload_cwd) -> str | None:
    """A hook's workspace: --workspace or CLAUDE_PROJECT_DIR (Claude Code always sets it), else
    the nearest folder Claude Code keeps history for, from the payload's cwd or the current
    folder (an existing absolute folder) up; never the filesystem root. None: no memory may be
    made."""
    if explicit or os.environ.get("CLAUDE_PROJECT_DIR"):
        return resolve_workspace(explicit)
    for cand in (payload_cwd, os.getcwd()):
        try:
            if not (isinstance(cand, str) and os.path.isabs(cand) and os.path.isdir(cand)):
                continue
            found = find_workspace(cand, history_only=True)
        except (ValueError, OSError):  # a NUL in the path, an unreadable folder
            continue
        if found.how == "history" and os.path.dirname(found.folder) != found.folder:
            return found.folder
    return None


def is_within(path: str | None, workspace: str) -> bool:
    """True if a recorded cwd is the workspace or inside it (either spelling of the path)."""
    if not path:
        return False
    for ws in path_variants(workspace):
        ws = ws.rstrip("/\\") or ws
        if path == ws or path.startswith(ws + os.sep) or path.startswith(ws + "/"):
            return True
    return False


def _claude_keeps(workspace: str) -> bool:
    """Claude Code keeps history for this folder (the hooks and host mode are Claude Code's)."""
    return bool(project_dirs(workspace))


def stays_inside(path: str, workspace: str) -> bool:
    """A path under the workspace that a link does not lead out of it (a cloned repository can
    make .claude/state a link to anywhere)."""
    return is_within(os.path.realpath(path), workspace)


def data_dir(workspace: str) -> str:
    return os.path.join(workspace, DATA_DIR_NAME)


def index_path(workspace: str) -> str:
    return os.path.join(data_dir(workspace), "index.db")


def user_store() -> str:
    """The user-level store: the memories of the projects a search of all projects covers that
    have none of their own (the folder a project's .prima-memory would be is never made for it:
    see projects.py). $XDG_DATA_HOME/prima-memory/memories, else
    ~/.local/share/prima-memory/memories (beside the plugin install.sh keeps there)."""
    base = os.environ.get("XDG_DATA_HOME")
    if not base or not os.path.isabs(base):  # (the spec: a relative value is ignored)
        base = os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "prima-memory", "memories")


def blake2b(data: bytes = b"", **kw):
    """hashlib.blake2b without hashlib's import, which loads OpenSSL (see store.stamp_of)."""
    try:  # CPython's own module
        from _blake2 import blake2b as make
    except ImportError:  # (another Python)
        from hashlib import blake2b as make
    return make(data, **kw)


def make_private(folder: str) -> None:
    """`folder` and the user-level store's folders above it, each made private to the user
    (os.makedirs gives the mode to the last alone)."""
    top = user_store()
    chain = [folder]
    while chain[-1] != top and os.path.dirname(chain[-1]) != chain[-1] \
            and chain[-1].startswith(top):
        chain.append(os.path.dirname(chain[-1]))
    os.makedirs(os.path.dirname(chain[-1]), exist_ok=True)
    for f in reversed(chain):
        try:
            os.mkdir(f, 0o700)
        except FileExistsError:
            pass


def detached_dir(workspace: str) -> str:
    """Where the user-level store keeps a project's memory: a name made from its folder (a
    readable start, and a hash of the whole path: Claude Code's spelling alone collides)."""
    import re  # (all projects only)
    digest = blake2b(os.fsencode(workspace), digest_size=8).hexdigest()
    readable = re.sub(r"[^A-Za-z0-9]+", "-", text_of(workspace)).strip("-")[-60:]
    return os.path.join(user_store(), "projects", f"{readable or 'root'}-{digest}")


def check_host(workspace: str, index: str | None = None) -> None:
    """Host mode: never create an index (`index`: the workspace's own, by default) where Claude
    Code has no projects folder."""
    if os.environ.get("PRIMA_EXPECTED_HOST", "").strip().lower() != "claude-code":
        return
    if os.path.exists(index or index_path(workspace)):
        return
    if not _claude_keeps(workspace):
        raise WorkspaceError(
            f"host mode (PRIMA_EXPECTED_HOST=claude-code): Claude Code has no projects folder for "
            f"{workspace}; refusing to create an index there")


# Names prima-memory opens in its folder. A cloned repository can ship any of them, or the folder
# itself, as a symbolic link: none is ever followed (docs/design.md § Safety).
SWEEP_FILE = "sweep"  # where a search's share of the sweep goes on from (Memory.update)
_OWN_NAMES = (".gitignore", "index.db", "index.db-wal", "index.db-shm", "index.db-journal",
              "index.lock", "embed.lock", "embedder.lock", "rebuild.lock", "prima-memory.log",
              "prima-memory.log.1", "extracts", SWEEP_FILE)
O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def is_real_dir(path: str) -> bool:
    """A folder, and not a symbolic link to one."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _set_aside(path: str, notes: list[str]) -> None:
    """Rename a symbolic link out of the way: the link itself moves, its target is untouched."""
    try:
        target = f" (to {os.readlink(path)})"
    except OSError:
        target = ""
    dest = f"{path}.moved-aside-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    os.rename(path, dest)
    notes.append(f"{path} was a symbolic link{target}: moved it to {dest}; nothing in "
                 ".prima-memory is followed out of it")


def ensure_data_dir(workspace: str, d: str | None = None) -> list[str]:
    """Create .prima-memory/ (or `d`, a project's folder in the user-level store) private to the
    user, with a .gitignore so git never sees it, and set aside any symbolic link where
    prima-memory keeps its files. Returns warnings for the log."""
    d = d or data_dir(workspace)
    check_host(workspace, os.path.join(d, "index.db"))
    notes: list[str] = []
    if os.path.islink(d):
        _set_aside(d, notes)
    if d != data_dir(workspace):  # the user-level store's folders, made private
        make_private(os.path.dirname(d))
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        pass
    if not is_real_dir(d):  # a file of the user's, or a link put back in between: refuse
        raise OSError(f"{d} is not a folder")
    try:
        os.chmod(d, 0o700)
    except OSError:
        pass
    for name in _OWN_NAMES:
        p = os.path.join(d, name)
        if os.path.islink(p):
            _set_aside(p, notes)
    try:  # the project folders of extracts/ (their files are opened without following links)
        for entry in os.scandir(os.path.join(d, "extracts")):
            if entry.is_symlink():
                _set_aside(entry.path, notes)
    except OSError:
        pass
    try:
        fd = open_nofollow(os.path.join(d, ".gitignore"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except OSError:  # there already, or a read-only folder
        pass
    else:
        with os.fdopen(fd, "w") as f:
            f.write("*\n")
    return notes


_ID_FIRST = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_ID_REST = _ID_FIRST | {".", "-"}


def safe_session_id(value) -> str | None:
    """A session id as a hook payload gives it, if it is one: Claude Code's are UUIDs; anything
    outside a conservative set (a path, `..`, an empty or huge string) is refused: a letter, a
    digit or _, then at most 199 of those, . and - ."""
    if isinstance(value, str) and 0 < len(value) <= 200 and value[0] in _ID_FIRST \
            and _ID_REST.issuperset(value) and ".." not in value:
        return value
    return None


def file_id(session_id: str) -> str:
    """The id as a part of a file name: the id itself where it is safe, else a sanitised copy
    (ids read from transcripts are not checked like a hook's)."""
    return safe_session_id(session_id) or "".join(
        c if c in _ID_REST and c != "." else "_" for c in session_id[:100]) or "_"


def open_nofollow(path: str, flags: int = os.O_RDONLY, mode: int = 0o600) -> int:
    """os.open that refuses a symbolic link in the last place (ELOOP) instead of following it."""
    return os.open(path, flags | O_NOFOLLOW, mode)


def read_plain(path: str, limit: int):
    """(its first `limit` bytes, its stat) for a regular file; None for anything else there: a
    link (never followed), a FIFO (never waited on), a folder. Raises OSError for a file that
    cannot be read."""
    try:
        fd = open_nofollow(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        if e.errno == errno.ELOOP:
            return None
        raise
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):  # (before fdopen, which refuses a folder: IsADirectoryError)
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read(limit), st


TEMP_PREFIX = ".prima-tmp-"  # a file being written: no ".md", no session id (nothing it blocks)
_NO_LINKS = {getattr(errno, n) for n in ("EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS")
             if hasattr(errno, n)}


def create_whole(path: str, text: str) -> bool:
    """Create `path` holding `text`, or False if something is there already: written whole to a
    temporary file beside it (O_EXCL|O_NOFOLLOW), then linked to its name. Nobody ever reads it
    half written, a kill leaves only a temporary file nothing reads, and link() never follows
    or replaces what is at the name (a concurrent writer's file, a planted link)."""
    if os.path.lexists(path):
        return False
    tmp = os.path.join(os.path.dirname(path), f"{TEMP_PREFIX}{os.getpid()}-{os.urandom(6).hex()}")
    fd = open_nofollow(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            os.link(tmp, path)  # atomic, and fails if the name is taken (even by a link)
        except FileExistsError:
            return False
        except OSError as e:
            if e.errno not in _NO_LINKS:
                raise
            return _create_in_place(path, text)  # a file system without hard links
        return True
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def replace_whole(path: str, data, *, durable: bool = False) -> None:
    """Write `path` whole, replacing what is there: a temporary file beside it, then renamed
    over the name (a link there is replaced, never followed; a reader sees the old or the new,
    and a kill leaves only a temporary file nothing reads). `data`: text, or the pieces (bytes,
    buffers) of a binary file. `durable`: on disk before it takes the name, so that a power cut
    cannot leave a torn file behind it."""
    tmp = os.path.join(os.path.dirname(path), f"{TEMP_PREFIX}{os.getpid()}-{os.urandom(6).hex()}")
    fd = open_nofollow(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        if isinstance(data, str):
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(data)
        else:
            with os.fdopen(fd, "wb") as b:
                for piece in data:
                    b.write(piece)
                if durable:
                    b.flush()
                    os.fsync(b.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _create_in_place(path: str, text: str) -> bool:
    try:
        fd = open_nofollow(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return True
