"""Listing a source's folders: the files found, and each listed folder's mtime noted so that a
later look for changes can skip the listing while none of them changed.

Its own module, below registry.py: the sources' discover functions (shared_log, extracts) use
it, and registry.py imports those sources.
"""
from __future__ import annotations

import os
import stat
import sys
import time

def shared_log_folder(ws: str) -> str:
    """The shared log's folder (here, so that looking at it does not import its reader)."""
    return os.path.join(ws, ".claude", "state", "sessions")


def utf8_name(name: str) -> bool:
    """A file name the index can hold: one whose bytes are not UTF-8 (the OS hands it over with
    lone surrogates) could be neither stored nor printed, and is no agent's."""
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


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


def size(path: str) -> int:
    """The size of the file at `path` itself once read, by lstat: 0 for what is no regular file
    there now (a link, never followed, or a FIFO swapped in after the read)."""
    st = os.lstat(path)
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


def entries(root: str, folders: list | None = None) -> list:
    """The entries directly in `root` whose names the index can hold, by name, `root` noted
    first (watch); none for a folder that cannot be listed (noted: unlisted)."""
    watch(folders, root)
    try:
        return sorted((e for e in os.scandir(root) if utf8_name(e.name)), key=lambda e: e.name)
    except OSError as e:
        unlisted(folders, root, e)
        return []


def subdirs(root: str, folders: list | None = None) -> list[str]:
    """The folders directly in `root` (a link is never followed), as `entries` lists them."""
    return [e.path for e in entries(root, folders) if e.is_dir(follow_symlinks=False)]


def regular(path: str) -> bool:
    """Whether `path` itself is a regular file (a link is never followed)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def files(root: str, accept, folders: list | None = None) -> list[str]:
    """Regular files under root that `accept(name)`, links never followed (the directory
    entries' own types: no stat per file)."""
    out: list[str] = []
    for entry in entries(root, folders):
        if entry.is_dir(follow_symlinks=False):
            out += files(entry.path, accept, folders)
        elif accept(entry.name) and entry.is_file(follow_symlinks=False):
            out.append(entry.path)
    return out


def app_config_base() -> str:
    """Where desktop applications (VS Code, Cursor...) keep their settings on this system."""
    home = os.path.expanduser("~")
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Application Support")
    if sys.platform == "win32":
        return os.environ.get("APPDATA") or os.path.join(home, "AppData", "Roaming")
    return os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")


def vscode_user_dirs() -> list[str]:
    """Every VS Code user folder of this account (PRIMA_VSCODE_USER_DIRS overrides the list)."""
    given = os.environ.get("PRIMA_VSCODE_USER_DIRS")
    if given is not None:
        return [d for d in given.split(os.pathsep) if d]
    home = os.path.expanduser("~")
    base = app_config_base()
    return [os.path.join(base, a, "User") for a in ("Code", "Code - Insiders", "VSCodium")] + [
        os.path.join(home, ".vscode-server", "data", "User"),
        os.path.join(home, ".vscode-server-insiders", "data", "User")]
