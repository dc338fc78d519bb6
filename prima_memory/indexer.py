"""Bring a workspace's index up to date with its source files, doing work proportional to change.

One writer at a time (a file lock beside the index). Each batch of lines is applied in one
transaction together with the file's new offset and parser state, so a kill at any point leaves
the index consistent and the next run resumes exactly where the last commit stopped.
"""
from __future__ import annotations

import os
import zlib
import time
from dataclasses import dataclass, field

import orjson

from . import tagging
from .records import SessionDelta
from .sources import claude_code
from .store import SHIFT, Store

HEAD_BYTES = 1024  # a file whose first bytes changed was rewritten, not appended to
BATCH_BYTES = 16 << 20  # commit at least this often, and bound what one delta holds in memory


@dataclass
class Report:
    files_seen: int = 0
    files_read: int = 0
    bytes_read: int = 0
    sessions_touched: set = field(default_factory=set)
    archived: int = 0
    pruned: int = 0
    pending_files: int = 0  # left for the next run (time budget)
    extracts: list = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.pending_files == 0


def _head_hash(path: str, n: int) -> str | None:
    try:
        with open(path, "rb") as f:
            return format(zlib.crc32(f.read(n)), "08x")
    except OSError:
        return None


class Indexer:
    def __init__(self, workspace: str, store: Store, log, *, progress=None, extracts=True):
        self.ws = workspace
        self.store = store
        self.log = log
        self.progress = progress
        self.write_extracts = extracts
        self._sessions: dict[tuple[str, str], list] = {}  # (source, id) -> [rowid, next_ord, tags]
        self._terms_seen: set[str] = set()
        self._last_scan = None  # pending()'s look at the files, reused by the run that follows

    # -- public ----------------------------------------------------------------------------------

    def run(self, *, budget: float | None = None, only_session: str | None = None,
            prune: bool = False) -> Report:
        """Index what changed. `budget` (seconds) stops before the next file once spent; the
        newest files go first so what is left waiting is the oldest."""
        t0 = time.monotonic()
        rep = Report()
        store = self.store
        scan, self._last_scan = self._last_scan, None
        found, stats, known = scan if scan and not only_session else self._scan(only_session)
        rep.files_seen = len(found)

        def changed(path, st):
            row = known.get(path)
            return row is None or (row[2], row[3], row[4]) != (st.st_size, st.st_mtime_ns, st.st_ino)

        # A rewritten file (shrunk, replaced, new first bytes) or one that came back is read again
        # from the start, with every other file of its session.
        resets = {known[p][0] for p, st in stats.items()
                  if p in known and known[p][0] is not None and changed(p, st)
                  and _rewritten(p, st, known[p])}
        if resets:
            with store.transaction():
                for session in resets:
                    self.log.info(f"session {session}: a file was rewritten; reading it again")
                    store.clear_session(session)
            known = store.files()
            self._sessions.clear()
        work = []
        for sf in found:
            st = stats.get(sf.path)
            if st is None or not changed(sf.path, st):
                continue
            row = known.get(sf.path)
            if row is not None and _rewritten(sf.path, st, row):
                row = None  # a file with no session yet (foreign or empty): start again
            work.append((st.st_mtime_ns, sf, st, row))
        present = {sf.path for sf in found}
        missing = [p for p, row in known.items() if p not in present and row[9] != "missing"]
        with store.transaction():
            if missing:
                rep.archived = store.archive_missing(missing)
            if prune:
                rep.pruned = store.prune_archived()
        work.sort(key=lambda w: w[0], reverse=True)
        total = sum(max(0, st.st_size - (row[7] if row else 0)) for _, _, st, row in work)
        done = 0
        for i, (_, sf, st, row) in enumerate(work):
            if budget is not None and time.monotonic() - t0 > budget:
                rep.pending_files = len(work) - i
                break
            try:
                done += self._index_file(sf, st, row, rep, lambda n: self._tick(done + n, total))
            except OSError as e:
                self.log.warn(f"cannot read {sf.path}: {e}")
        if self.progress:
            self.progress.finish()
        self._finish_sessions(rep)
        return rep

    def _scan(self, only_session=None):
        found = claude_code.discover(self.ws, self.log)
        stats = {}
        for sf in found:
            if only_session and sf.session_id not in (None, only_session):
                continue
            try:
                stats[sf.path] = os.stat(sf.path)
            except OSError as e:
                self.log.warn(f"cannot read {sf.path}: {e}")
        return found, stats, self.store.files()

    def pending(self) -> tuple[int, int]:
        """(files, bytes) changed or gone since indexed, without taking the lock or reading."""
        found, stats, known = self._last_scan = self._scan()
        files = size = 0
        for path, st in stats.items():
            row = known.get(path)
            if row is not None and (row[2], row[3], row[4]) == (st.st_size, st.st_mtime_ns, st.st_ino):
                continue
            if row is not None and row[9] == "foreign" and st.st_size >= (row[2] or 0):
                continue
            files += 1
            size += max(0, st.st_size - (row[7] or 0 if row else 0))
        files += sum(1 for p, row in known.items() if p not in stats and row[9] != "missing")
        return files, size

    # -- one file ------------------------------------------------------------------------------

    def _tick(self, done: int, total: int) -> None:
        if self.progress:
            self.progress.update(done, total)

    def _index_file(self, sf, st, row, rep: Report, tick) -> int:
        store = self.store
        offset, state, session = 0, None, None
        if row is not None:
            session, offset = row[0], row[7] or 0
            state = orjson.loads(row[8]) if row[8] else None
            if row[9] == "foreign":
                return 0
        mtime = st.st_mtime_ns / 1e9
        start = offset
        while True:
            delta, end, state, problems = claude_code.read(sf, offset, state, mtime,
                                                           max_bytes=BATCH_BYTES)
            for p in problems:
                self.log.warn(f"{sf.path}: {p}")
            head_len = min(HEAD_BYTES, end)
            head = _head_hash(sf.path, head_len) if end else None
            status = "ok"
            with store.transaction():
                if delta is not None and offset == 0 and delta.cwd \
                        and not _workspace_session(delta.cwd, self.ws):
                    # Claude Code's folder names collide (my_project, my-project): the records'
                    # cwd is the truth, so another workspace's session is never indexed here.
                    # (A cwd that encodes differently is a moved project: it stays.)
                    status = "foreign"
                    self.log.info(f"{sf.path}: session of {delta.cwd}, not this workspace: skipped")
                    end = st.st_size
                elif delta is not None and not delta.is_empty():
                    session = self._apply(delta)
                    rep.sessions_touched.add(session)
                store.save_file(sf.path, sf.source, session, sf.sidechain, st.st_size,
                                st.st_mtime_ns, st.st_ino, head_len, head,
                                end, orjson.dumps(state).decode(), status)
            rep.bytes_read += end - offset
            tick(end - start)
            if status != "ok" or end >= st.st_size or end == offset:
                break
            offset = end
        rep.files_read += 1
        return st.st_size - start

    def _apply(self, d: SessionDelta) -> int:
        store = self.store
        key = (d.source, d.session_id)
        cached = self._sessions.get(key)
        if cached is None:
            row = store.session_for(d.source, d.session_id, d.label)
            cached = [row.id, store.next_ordinal(row.id), set(row.tag_list), row.decisions]
            self._sessions[key] = cached
        sid, ordinal, tags, decisions = cached
        base = sid << SHIFT
        rows = []
        new_terms = set()
        for m in d.messages:
            rows.append((base | ordinal, sid, m.key, m.role, m.ts, int(m.sidechain),
                         m.pairs_with, m.text))
            ordinal += 1
            if m.text:
                toks = store.tokens(m.text)
                new_terms |= toks
        d.tags |= tagging.work_tags(new_terms)
        if d.decisions:
            d.tags.add("decision")
        store.add_messages(rows)
        new_terms -= self._terms_seen
        if new_terms:
            store.add_terms(new_terms)
            self._terms_seen |= new_terms
        if d.file_changes:
            store.add_file_changes([(sid, fc.path, fc.tool, fc.explanation, fc.ts, fc.message_key)
                                    for fc in d.file_changes])
        tag_text = None
        if not d.tags <= tags:
            tags |= d.tags
            tag_text = " ".join(sorted(tags))
        dec_text = None
        if d.decisions:
            decisions = "\n".join(([decisions] if decisions else []) + d.decisions)[-20000:]
            dec_text = decisions
        store.update_session(sid, cwd=d.cwd, branch=d.branch, author=d.author,
                             custom_title=d.custom_title, summary_title=d.summary_title,
                             first_prompt=d.first_prompt, first_ts=d.first_ts, last_ts=d.last_ts,
                             tags=tag_text, decisions=dec_text, next_ord=ordinal)
        cached[1], cached[3] = ordinal, decisions
        return sid

    def _finish_sessions(self, rep: Report) -> None:
        if not rep.sessions_touched:
            return
        with self.store.transaction():
            for sid in rep.sessions_touched:
                self.store.refresh_counts(sid)
        if self.write_extracts:
            from . import extracts
            for sid in rep.sessions_touched:
                try:
                    path = extracts.maybe_write(self.store, sid, self.ws)
                except OSError as e:
                    self.log.warn(f"could not write an extract: {e}")
                    continue
                if path:
                    rep.extracts.append(path)


def _rewritten(path: str, st, row) -> bool:
    offset = row[7] or 0
    return (row[9] == "missing" or st.st_size < offset or row[4] != st.st_ino
            or bool(offset and row[6] != _head_hash(path, min(row[5] or 0, offset))))


def _workspace_session(cwd: str, ws: str) -> bool:
    """False only for a true collision: another path that Claude Code encodes to this folder."""
    from .workspace import collides
    return not collides(cwd, ws)

