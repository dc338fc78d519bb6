"""The interface every source keeps (registry.py's docstring tells it whole): the base class,
the file it hands back to the pipeline (`Listed`), and the sample the contract test reads.

Its own module, below registry.py, so that each source's module can build on it and the
registry can import them all.
"""
from __future__ import annotations

import os


class Source:
    name = ""
    label = ""
    mode = "snapshot"
    streamed = False  # listed, scoped and budgeted by the pipeline itself (see above)
    spans_files = False  # one session, several files (see above)
    extracted = True  # its substantial sessions get a markdown extract
    host = False  # the conversations the memory is mostly made of: lists leave its label out
    product = ""  # the agent a person knows it by ("Codex"), as lists of sources say it
    follows_links = False  # its files may be links, read through (Claude Code's only)
    in_project = False  # its files are kept inside each project (everywhere has none of them)
    agent = "Agent"  # who answers, as extracts name it
    resume = ""  # the command that resumes a session, with {id}
    answers = ""  # a source read as a search's last step: the key its answer holds (see below)
    read_when = ""  # ...and when it is read, as status says

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

    def read_chunks(self, path: str, extra, offset: int, state: dict | None, max_bytes: int,
                    *, mtime: float | None = None, size: int | None = None, bulk: bool = False):
        """read()'s results in steps of about `max_bytes` read, for a source whose files can be
        too big to hold what they say at once: each is indexed before the next is read.
        `mtime`, `size`: the file's, as stat'ed; `bulk`: a big run (see Indexer.run). `extra`
        may be a file of `files` (the streamed protocol): what discover gave goes to read."""
        yield self.read(path, extra.extra if isinstance(extra, Listed) else extra, offset, state)

    # -- the streamed protocol (see above): what the pipeline asks of a streamed source ------------

    def files(self, ws: str, log=None, only_dirs: list[str] | None = None,
              known=None) -> list:
        """The files in scope, each with `path`, `session_id` (None: not known before it is
        read) and `sidechain`, and given back to read_chunks as its `extra`. `only_dirs`: those
        directly in these folders; `known`: the paths the index holds (a source may skip work
        for them); `log`: where a source says what it could not list."""
        out = [Listed(p, x, self.sidechain(x)) for p, x in self.discover(ws)]
        if only_dirs is not None:
            dirs = set(only_dirs)
            out = [f for f in out if os.path.dirname(f.path) in dirs]
        return out

    def file(self, path: str):
        """The file of `files` at `path`, for one the index names (None: not one of its own).
        By default with no extra: a streamed source whose discover gives one writes its own."""
        return Listed(path, None)

    def session_files(self, ws: str, session_id: str) -> list:
        """The files of one session (as `files` gives them), for the Stop hook and a forgotten
        session's marks; none where a file does not name its session before it is read."""
        return []

    def read_chunk(self, sf, offset: int, state: dict | None, mtime: float | None = None,
                   max_bytes: int | None = None, bulk: bool = False):
        """The first step of read_chunks on a file of `files`: (records, end, state, problems)."""
        return next(iter(self.read_chunks(sf.path, sf, offset, state, max_bytes or (1 << 62),
                                          mtime=mtime, bulk=bulk)))

    def skips_reply(self, state: dict | None) -> bool:
        """Whether the Stop hook's provisional reply is not memory, by the session's main file's
        parser state (the reply to a command of our own). None by default."""
        return False


    def claims_cwdless(self, path: str, ws: str, cache: dict | None = None) -> bool:
        """Whether a file whose records name no working folder (yet) is this workspace's."""
        return True

    def sidechain(self, extra) -> bool:
        """Whether the file discover gave with `extra` is a side thread of its session."""
        return False

    def in_scope(self, delta, ws: str) -> bool:
        return True

    def holds(self, ws: str) -> bool:
        """Whether this source has a session of this workspace to index. Asked only where there
        is no other memory (commands.run), before a command starts one there. A database that
        cannot be read now is not known to hold one."""
        try:
            return bool(self.discover(ws))
        except (OSError, ValueError):
            return False

    def looks_at(self, ws: str) -> list:
        """What a listing depends on, noted with the folders it listed: where it looks (and
        what it takes there). Another value lists again, nothing on disk changed."""
        return self.locations(ws)

    def knows(self, kind: str) -> bool:
        """Whether this version knows record type `kind`: one an older version noted as unknown
        in a file's state (see status) is no longer counted."""
        return False

    def stat(self, path: str):
        """What the pipeline compares of a file it found to tell a change (st_size,
        st_mtime_ns, st_ino): the entry itself (a link is never followed). A source whose
        sessions are rows of a database names each by a path of its own and gives it a RowStat."""
        return os.lstat(path)

    def backing(self, path: str) -> str:
        """The file on disk that `path` (as discover gives it) is read from: itself, or the
        database a session's rows are kept in."""
        return path

    def whole(self, path: str) -> bool:
        """This file is read whole every time (never resumed from an offset)."""
        return self.mode == "snapshot"

    def sample(self, ws: str, text: str) -> str:
        """Write one small file of this source's kind, of a session of `ws` saying `text` (a
        person's prompt), where this source finds it (its locations, as the environment sets
        them), and return its path: the contract test's sample (tests/test_source_contract.py),
        which every source brings."""
        raise NotImplementedError

    def fallback_search(self, ws: str, words: list[str],
                        limit: int) -> tuple[list[dict], list[str]]:
        """A source never indexed, read as the last step of a search of one workspace whose
        conversations matched nothing: (entries holding every one of `words`, problems as the
        log says them). None by default."""
        return [], []

    def everywhere(self, known: dict) -> list[tuple[str, tuple[str, ...]]]:
        """For a search of all projects: every file of this source on this machine, each with
        the folders its sessions ran in (none: it records none, and every workspace takes it,
        as in_scope does). A source kept inside a workspace (a shared log) has none here.
        `known`: what an earlier call learned (a folder each file names), brought up to date,
        so a file is read once."""
        return []


class Listed:
    """A file as the base class's `files` gives it: discover's (path, extra), with what the
    pipeline asks of a file of a streamed source."""

    __slots__ = ("path", "extra", "session_id", "sidechain")

    def __init__(self, path: str, extra, sidechain: bool = False) -> None:
        self.path, self.extra, self.session_id, self.sidechain = path, extra, None, sidechain


class RowStat:
    """A session kept as rows of a database, as the pipeline compares a file: `size` and
    `mtime_ns` from its rows (say, how many and when last changed; a read ends at `size`), no
    inode, so a change to the rows is a change to the "file" and nothing else is."""

    __slots__ = ("st_size", "st_mtime_ns", "st_ino", "st_mode")

    def __init__(self, size: int, mtime_ns: int) -> None:
        self.st_size, self.st_mtime_ns, self.st_ino, self.st_mode = size, mtime_ns, 0, 0o100600

    @property
    def st_mtime(self) -> float:
        return self.st_mtime_ns / 1e9


def sample_file(path: str, lines: list, whole: bool = False) -> str:
    """A sample file (Source.sample): JSON lines, or one JSON document (`whole`), or text."""
    import json  # (the contract test's samples only)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(lines[0]) if whole else
                "".join(x if isinstance(x, str) else json.dumps(x) + "\n" for x in lines))
    return path


def by_heads(paths, known: dict, folder_of) -> list[tuple[str, tuple[str, ...]]]:
    """Source.everywhere for files whose first lines name the folder their session ran in:
    each path with that folder (`folder_of(path)`: the folder, "" for none, None when it cannot
    be read yet), read once when it names one (a head does not change), else again whenever
    the file does (it may be being written). One that cannot be read yet, or holds nothing
    yet, is nobody's for now; one that names none is every workspace's."""
    out: list[tuple[str, tuple[str, ...]]] = []
    for path in paths:
        got = known.get(path)
        if not isinstance(got, str):
            try:
                st = os.stat(path)
                mark: list = [st.st_size, st.st_mtime_ns]
            except OSError:
                continue
            if not (isinstance(got, list) and got[:2] == mark and len(got) == 3):
                folder = folder_of(path)
                got = known[path] = folder if folder else mark + [folder]
        named = got if isinstance(got, str) else got[2]
        if named is not None:
            out.append((path, (named,) if named else ()))
    return out

