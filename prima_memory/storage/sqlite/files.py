"""The file ledger: what the index has read of each source file (size, offset, head hash,
parser state), and the files that failed."""
from __future__ import annotations

from ... import jsontext
from ..shared import FAILED, FileRow
from .core import _bind_path, _path
from .text import TextIndex


class FileLedger(TextIndex):
    def forget_file(self, path: str) -> None:
        self.db.execute("DELETE FROM files WHERE path = ?", (_bind_path(path),))

    # -- files ---------------------------------------------------------------------------------

    _FILE_COLUMNS = ("path, session, sidechain, size, mtime_ns, inode, head_len, head_hash, "
                     "offset, status")
    _FILE_ROW = f"SELECT {_FILE_COLUMNS} FROM files"

    def files(self, source: str, paths=None, session_id: str | None = None) -> dict[str, FileRow]:
        """What the index knows of a source's files (parser state apart: see file_state): all
        of them, or those of `paths` and of its session `session_id`. Each source's rows are its
        own: one source's scans never take another's files for theirs."""
        if paths is None and session_id is None:
            return {_path(r[0]): FileRow(*r[1:]) for r in self.db.execute(
                f"{self._FILE_ROW} WHERE source = ?", (source,))}
        out = {_path(r[0]): FileRow(*r[1:]) for r in self._chunked(
            self._FILE_ROW + " WHERE path IN ({}) AND source = ?",
            [_bind_path(p) for p in paths or ()], after=(source,))}
        if session_id is not None:
            out.update((_path(r[0]), FileRow(*r[1:])) for r in self.db.execute(
                f"{self._FILE_ROW} WHERE session IN (SELECT id FROM sessions WHERE "
                "session_id = ? AND source = ?)", (session_id, source)))
        return out

    def file_paths(self, source: str) -> set[str]:
        return {_path(r[0]) for r in self.db.execute("SELECT path FROM files WHERE source = ?",
                                                     (source,))}

    # (`+source`: by time, or by rowid, not through files_source, which would list them all)
    def recent_file_paths(self, source: str, since_mtime_ns: int) -> set[str]:
        return {_path(r[0]) for r in self.db.execute(
            "SELECT path FROM files WHERE (mtime_ns >= ? OR mtime_ns IS NULL) AND +source = ?",
            (since_mtime_ns, source))}

    def last_file_rowid(self) -> int:
        return self.db.execute("SELECT COALESCE(max(rowid), 0) FROM files").get

    def files_after(self, source: str, rowid: int, n: int) -> list[tuple[int, str, FileRow]]:
        """(rowid, path, what the index knows of it) of the next n files after rowid: a sweep
        through all of them in turn, read in rowid order (neighbouring pages, not a look-up
        of each path)."""
        return [(r[0], _path(r[1]), FileRow(*r[2:])) for r in self.db.execute(
            f"SELECT rowid, {self._FILE_COLUMNS} FROM files WHERE rowid > ? AND +source = ? "
            "ORDER BY rowid LIMIT ?", (rowid, source, n))]

    def unknown_record_types(self, source: str) -> dict[str, int]:
        """Record types a source's reader met and does not know (its parser state's "unk"), with
        the number of this workspace's files showing each."""
        counts: dict[str, int] = {}
        for (state,) in self.db.execute(
                "SELECT state FROM files WHERE source = ? AND status = 'ok' "
                "AND instr(state, '\"unk\":') > 0", (source,)):
            try:
                unk = jsontext.loads(state).get("unk")
            except (ValueError, AttributeError):
                continue
            for kind in {k for k in unk if isinstance(k, str)} if isinstance(unk, list) else ():
                counts[kind] = counts.get(kind, 0) + 1
        return counts

    def file_state(self, path: str) -> str | None:
        row = self.db.execute("SELECT state FROM files WHERE path = ?",
                              (_bind_path(path),)).fetchone()
        return row[0] if row else None

    def main_file_state(self, session: int) -> str | None:
        """The parser state of a session's main file (not a subagent's)."""
        row = self.db.execute("SELECT state FROM files WHERE session = ? AND sidechain = 0 "
                              "AND status = 'ok'", (session,)).fetchone()
        return row[0] if row else None

    def save_file(self, path, source, session, sidechain, size, mtime_ns, inode, head_len,
                  head_hash, offset, state, status="ok") -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO files(path, source, session, sidechain, size, mtime_ns, inode, "
            "head_len, head_hash, offset, state, status) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (_bind_path(path), source, session, int(sidechain), size, mtime_ns, inode, head_len,
             head_hash, offset, state, status))

    def file_read(self, path: str, size: int) -> None:
        """The file is read to its end as it was at `size` (save_file leaves the size out until
        then, so a read stopped half way is not taken for a whole one)."""
        self.db.execute("UPDATE files SET size = ? WHERE path = ?", (size, _bind_path(path)))

    def file_failed(self, path, source, size, mtime_ns, inode, why: str) -> None:
        """A file that could not be read, as it was then: not read again until it changes.
        What the index holds of it (its session, offset and parser state) stays; `why` goes
        into its state, as "failed", for status."""
        row = self.db.execute("SELECT state FROM files WHERE path = ?",
                              (_bind_path(path),)).fetchone()
        try:
            state = jsontext.loads(row[0]) if row and row[0] else {}
        except ValueError:
            state = {}
        state = dict(state, failed=why) if isinstance(state, dict) else {"failed": why}
        if row:
            self.db.execute("UPDATE files SET size = ?, mtime_ns = ?, inode = ?, state = ?, "
                            "status = ? WHERE path = ?",
                            (size, mtime_ns, inode, jsontext.dumps(state), FAILED,
                             _bind_path(path)))
        else:
            self.save_file(path, source, None, 0, size, mtime_ns, inode, None, None, 0,
                           jsontext.dumps(state), FAILED)
