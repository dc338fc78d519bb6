"""Bring a workspace's index up to date with its source files, doing work proportional to change.

One pipeline for every source (see Indexer.run); what differs between sources is what each
declares (sources/registry.py). One writer at a time (a file lock beside the index). Each step of
a file is applied in one transaction together with the file's new offset and parser state, so a
kill at any point leaves the index consistent and the next run resumes exactly where the last
commit stopped.
"""
from __future__ import annotations

import os
import stat
import time
from collections import namedtuple

from . import forgotten, jsontext
from .errors import NotNow
from .records import Message, SessionDelta
from .sources import registry
from .sources.listing import UNLISTED
from .storage import FAILED, Busy, Store, is_store_error
from .workspace import O_NOFOLLOW

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of every hook)
if TYPE_CHECKING:
    from collections.abc import Callable

LOCAL = "~"  # a message key made up by a source or the Stop hook: no copy of another's
PROVISIONAL_KEY = LOCAL + "last-assistant-message"  # see Indexer.note_reply
HEAD_BYTES = 1024  # a file whose first bytes changed was rewritten, not appended to
BATCH_BYTES = 16 << 20  # a file is read this much at a time, bounding what one step holds
STEP_BYTES = 2 * BATCH_BYTES  # commit at least this often ...
BATCH_SECONDS = 2.0  # ... and at least this often, so readers see progress
BULK_BYTES = 8 << 20  # a run this big parses with orjson and fully merges the index after
RECENT = 2 * 86400  # a SessionStart looks again at the files changed in the last two days ...
SWEEP = 500  # ... and at this many of the others, in turn (PRIMA_SWEEP)
SEARCH_SWEEP = 64  # a search's share of that sweep: it pays a stat per file, per search
# What an older version made of the files differently, made again once per index (meta
# "rules"; no schema change): 2, titles cut after a whole word and left as written, and the
# extracts dated by their sessions (#21).
RULES = "2"


class Report:
    """What one run did."""

    def __init__(self) -> None:
        self.files_seen = 0
        self.files_read = 0
        self.bytes_read = 0
        self.sessions_touched: set[int] = set()
        self.archived = 0
        self.pruned = 0
        self.pending_files = 0  # left for the next run (time budget)
        self.extracts: list[str] = []


def _head_hash(path: str, n: int, follow: bool = False) -> str | None:
    """The CRC of the first n bytes of the regular file at path; None for anything else there.
    It never waits on a FIFO (a file swapped for one after it was read would hang the run),
    nor follows a link unless its source reads through links (Claude Code's transcripts)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow else O_NOFOLLOW)
    try:
        with os.fdopen(os.open(path, flags), "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None
            import zlib  # (a file that changed)
            return format(zlib.crc32(f.read(n)), "08x")
    except OSError:
        return None


class _Listing:
    """A source's files in a run's scope: (path, extra) found, their stats where the listing
    took them (a streamed source's; the others' are taken file by file), what the index knows
    of them, the folders listed (see listing.watch), and the problems status shows."""

    def __init__(self, found: list, stats: dict | None, known: dict, folders: list,
                 problems: list[str]) -> None:
        self.found, self.stats, self.known = found, stats, known
        self.folders, self.problems = folders, problems
        self.unreadable = False  # a file to try again: the folders are listed again next time


class Indexer:
    def __init__(self, workspace: str, store: Store, log, *, progress=None) -> None:
        self.ws = workspace
        self.store = store
        self.log = log
        self.progress = progress
        self._sessions: dict[tuple[str, str], _Session] = {}
        self._terms_seen: set[str] = set()
        self._last_scan: tuple | None = None  # pending()'s look at the files, reused by the run that follows
        # a quick scope's findings, recorded once its files are indexed (see quick_done)
        self._dirs: dict[str, int] = {}
        self._owed: list[str] = []
        self._sweep_to: int | None = None  # where the sweep goes on from
        self.sweep = _sweep_size()  # known files a quick run looks at again, in turn
        # where the sweep starts, when the caller keeps its place (a search's: see Memory.update);
        # None: the index keeps it
        self.place: int | None = None
        self._cwdless: dict[str, bool] = {}  # project folder -> claims_cwdless, for this run
        # (source, cwd) -> in_scope, for this run: it depends on the cwd alone, and each asking
        # resolves the workspace's links (three realpath calls a file)
        self._scopes: dict[tuple[str, str | None], bool] = {}
        self.bulk = False  # a big run: worth orjson's import time
        self.deadline: float | None = None
        self._mtime: int | None = None  # the time of the file being read (see _copies)
        self.handed: set[int] = set()  # sessions whose copies went to the one that had them first
        # the sessions a user forgot (forgotten.py): never indexed again, nor their copies
        self.forgotten = forgotten.NONE
        # Memory's (see Memory._watch_tombs): the tombstones' stamp now, read again, and added to
        self.tomb_stamp: Callable[[], str] | None = None
        self.reload_tombs: Callable[[], forgotten.Tombstones] | None = None
        self.extend_tombs: Callable[[list], forgotten.Tombstones] | None = None
        self.dropped: set[str] = set()  # the keys of the file being read that _forgotten dropped
        self._before: dict[tuple[str, str], str] = {}  # a session's last text in this file
        self._grown: set[tuple[str, str]] = set()  # forgotten sessions read whole this run
        self.forgot: set[int] = set()  # the sessions _recheck removed (their row ids)
        # when a forgotten session had its messages (see _order_of), found once a run
        self._orders: dict[tuple[str, str], tuple[float, float] | None] = {}
        # (source, session id) -> the forgotten sessions that copied lines it had first
        self._copied_from: dict[tuple[str, str], set[tuple[str, str]]] = {}
        self.seen_unchanged = 0  # files of the sources sources_changed found unchanged
        self.paths_changed = False  # a file change was added (changed_names.py: Memory.update)

    # -- public ----------------------------------------------------------------------------------

    def run(self, sources=(registry.CLAUDE_CODE,), *, budget: float | None = None,
            only_session: str | None = None, prune: bool = False, quick: bool = False) -> Report:
        """Index what changed in `sources`, each through the same steps (_index_source).
        `budget` (seconds) stops before the next file once spent; a streamed source's newest
        files go first so what is left waiting is the oldest. `only_session`: that session's
        files alone (Stop); `quick`: new files, recent files and a slice of the rest
        (SessionStart), so the cost does not grow with the history. (Both narrow a streamed
        source; the others are looked at whole.) `prune`: archived sessions are dropped."""
        self.deadline = None if budget is None else time.monotonic() + budget
        rep = self.nothing_to_do()
        for src in sources:
            self._index_source(src, rep, only_session, quick, prune)
            prune = False  # once, after the first source's files gone are noted
        if self.progress:
            self.progress.finish()
        self._finish_sessions(rep)
        return rep

    def sources_changed(self, sources, only_session: str | None = None,
                        quick: bool = False) -> list:
        """The sources with a file new, changed or gone since indexed, known without the lock:
        a streamed source's scope listed and stat'ed (the run that follows reuses the look),
        the others' noted folders and known files stat'ed, no listing. The files of the
        sources found unchanged are counted (seen_unchanged): a run's report counts them
        as seen."""
        changed = []
        self.seen_unchanged = 0
        for src in sources:
            if src.streamed:
                looked = self.pending(only_session, quick, src) != (0, 0)
                if not looked:
                    self.seen_unchanged += len(self._last_scan[0]) if self._last_scan else 0
            else:
                looked = self._source_changed(src)
            if looked:
                changed.append(src)
        return changed

    def rules_current(self) -> bool:
        return self.store.get_meta("rules") == RULES

    def apply_rules(self) -> None:
        """Bring what an older version made to this version's RULES, once, under the writer
        lock: the titles from first prompts made again from the prompts as stored, and the
        extracts forgotten, to be read again by the next deep search."""
        if self.rules_current():
            return
        from . import titles  # (once per index)
        store = self.store
        with store.write():
            for session, old, prompt in store.first_titles():
                new = titles.clean_first_prompt(prompt) if prompt else None
                if new and new != old:
                    store.set_first_title(session, new)
            src = registry.EXTRACTS
            for path, row in store.files(src.name).items():
                if row.session is not None:
                    store.delete_session(row.session)
                store.forget_file(path)
            store.set_meta(f"folders:{src.name}", None)  # (listed again: see _source_changed)
            store.set_meta("rules", RULES)

    def nothing_to_do(self) -> Report:
        """The report of a run before it reads anything: the unchanged files it was spared."""
        rep = Report()
        rep.files_seen = self.seen_unchanged
        return rep

    def _source_changed(self, src) -> bool:
        noted = _loads(self.store.get_meta(f"folders:{src.name}"))
        if not isinstance(noted, dict) or noted.get("at") != src.looks_at(self.ws):
            return True  # never listed (or noted otherwise), or it looks elsewhere now
        for path, mtime in noted.get("folders", ()):
            try:
                now = os.stat(path).st_mtime_ns
            except OSError:
                now = None
            if now != mtime:
                return True  # a file may have come or gone there
        files = 0
        for path, row in self.store.files(src.name).items():
            if row.status == "missing":
                continue  # (back, it changes its folder)
            try:
                st = src.stat(path)  # (discover lists no links)
            except OSError:
                return True
            if not _same(row, st) and not _set_aside_growing(row, st):
                return True
            files += 1
        self.seen_unchanged += files
        return False

    # -- the pipeline ----------------------------------------------------------------------------

    def _index_source(self, src, rep: Report, only_session: str | None, quick: bool,
                      prune: bool) -> None:
        """One source's changes, in the steps every source shares: list the files in scope;
        note those gone (archived, or their sessions dropped: the source's `mode`); read again
        from the start what was rewritten; then read each changed file on from where the index
        stopped (_index_file), committed in steps. A file that cannot be read is noted and the
        rest go on; the folders listed are noted for sources_changed (see _listed), and the
        problems status shows of the source are kept."""
        store = self.store
        listing = self._list(src, only_session, quick)
        if listing is None:
            return
        known = listing.known
        rep.files_seen += len(listing.found)
        present = {path for path, _extra in listing.found}
        blind = tuple(f + os.sep for f, m in listing.folders if m == UNLISTED)
        gone = [p for p, row in known.items() if p not in present and row.status != "missing"
                and not p.startswith(blind)]  # (what a folder not listed holds is not gone)
        if gone or prune:  # (a write waits for any other writer: only if needed)
            with store.write():
                if gone:
                    rep.archived += self._gone(src, gone, known)
                if prune:
                    rep.pruned = store.prune_archived()
            if src.mode != "append":  # (a session dropped takes its other files' rows too)
                known = store.files(src.name)
        rewritten: set[str] = set()
        if listing.stats is not None:
            rewritten, known = self._resets(src, listing, known)
        todo, notes, total = self._plan(src, listing, known, rewritten)
        self.bulk = total > BULK_BYTES
        if self.bulk:
            from .sources import jsonl  # (a big run: orjson for every source's parse)
            jsonl.fast()
        jobs = [job for job, *_rest in todo]
        feed = self._reader(jobs) if src.streamed and self.bulk and len(jobs) >= 8 else None
        done = 0
        tick = (lambda n: self._tick(done + n, total)) if src.streamed else None
        try:
            with store.steps(STEP_BYTES, BATCH_SECONDS) as steps:
                for path, st, row in notes:  # another workspace's session, growing: not read
                    store.save_file(path, src.name, None, 0, st.st_size, st.st_mtime_ns,
                                    st.st_ino, row.head_len, row.head_hash, st.st_size, None,
                                    "foreign")
                for i, (job, st, session) in enumerate(todo):
                    if self._out_of_time():
                        rep.pending_files += len(todo) - i
                        break
                    self._recheck()
                    chunks = feed.chunks(i) if feed else read_chunks(job, self.bulk)
                    try:
                        done += self._index_file(src, job, st, session, chunks, rep, steps,
                                                 listing.problems, tick)
                    except Exception as e:  # one odd file never stops the rest
                        if is_store_error(e):
                            raise  # the index's trouble, not the file's
                        # its step was rolled back: what this run remembered of it goes too
                        # (a session's row id, terms never added)
                        self._sessions.clear()
                        self._terms_seen.clear()
                        self._unreadable(src, job.path, st, e, listing)
                    if feed:
                        feed.skip(i)  # whatever the reader still holds of this file
                self._listed(src, listing)
        finally:
            if feed:
                feed.stop()
        if not src.streamed and (listing.problems or store.get_meta(f"warnings:{src.name}")):
            with store.write():  # what status shows of this source, until it changes
                store.set_meta(f"warnings:{src.name}",
                               jsontext.dumps(listing.problems[:20]) if listing.problems else None)
        if quick and src.streamed:
            self.quick_done(complete=not rep.pending_files)

    def _reader(self, jobs) -> _ReaderProcess | None:
        """A reader process for a cold run's files, or None where there can be none."""
        if not _READER_PROCESS:
            return None
        try:
            return _ReaderProcess(jobs, self.bulk, self.log)
        except Exception as e:  # noqa: BLE001 - no process could start (out of them, or of
            # memory): reading here is as good, only slower
            self.log.warn(f"no reader process ({type(e).__name__}: {e}): this process reads "
                          "the files itself")
            return None

    def _list(self, src, only_session: str | None, quick: bool) -> _Listing | None:
        """The run's scope of a source. A streamed one's: what pending() looked at just before
        (its stats, never its file rows: another writer may have moved on), else a look now
        (_scan). Another's: everything it discovers; None when it cannot list its files."""
        store = self.store
        if src.streamed:
            scan, self._last_scan = self._last_scan, None
            if scan and scan[3] == (src.name, only_session, quick):
                found, stats = scan[0], scan[1]
                known = store.files(src.name, list(scan[2])) if (only_session or quick) else \
                    store.files(src.name)
            else:
                found, stats, known = self._scan(src, only_session, quick)
            return _Listing([(sf.path, sf) for sf in found], stats, known, [], [])
        problems: list[str] = []  # this run's, kept for status
        folders: list = []
        try:
            found = src.discover(self.ws, folders)
        except Exception as e:  # noqa: BLE001 - one source's trouble never stops a search
            self.log.warn(f"{src.name}: cannot list its files: {type(e).__name__}: {e}",
                          once=True)
            return None
        for w in src.locations(self.ws):
            try:
                empty = os.path.isdir(w) and not os.listdir(w)
            except OSError:
                empty = False  # unlistable: discover has noted it
            if empty:
                self.log.warn(f"{src.name}: {w}: empty folder", once=True)
                problems.append(f"{w}: empty folder")
        return _Listing(found, None, store.files(src.name), folders, problems)

    def _gone(self, src, gone: list[str], known: dict) -> int:
        """Files no longer there, in the caller's write: an append source's are archived (their
        sessions stay searchable), a snapshot source's take their sessions with them."""
        store = self.store
        if src.mode == "append":
            return store.archive_missing(gone)
        for p in gone:
            if known[p].session is not None:
                store.delete_session(known[p].session)
            store.forget_file(p)
        return 0

    def _resets(self, src, listing: _Listing, known: dict) -> tuple[set[str], dict]:
        """For a source whose files were stat'ed by the listing: the files rewritten (shrunk,
        replaced, new first bytes, or back after being gone), and the rows known after their
        sessions were cleared to be read again. Where a session spans files, every file of a
        rewritten one's session is read again from the start, and so is a session whose main
        file the index has no record of (recovered from an old index, or kept through a
        rebuild): read afresh rather than on top."""
        store, stats = self.store, listing.stats or {}
        rewritten = {p for p, st in stats.items()
                     if p in known and not _same(known[p], st)
                     and _rewritten(p, st, known[p], src.follows_links)}
        if not src.spans_files:
            return rewritten, known
        resets = {known[p].session for p in rewritten if known[p].session is not None}
        for path, sf in listing.found:
            if path not in known and not sf.sidechain and path in stats:
                sid = store.session_with_messages(src.name, sf.session_id)
                if sid is not None:
                    resets.add(sid)
        if resets:
            with store.write():
                for session in resets:
                    self.log.info(f"session {session}: a file was rewritten; reading it again")
                    store.clear_session(session)
            known = store.files(src.name)  # the sessions' files now start at 0
            self._sessions.clear()
        return rewritten, known

    def _plan(self, src, listing: _Listing, known: dict, rewritten: set[str]):
        """(files to read: (Job, stat, session); files to note as another workspace's:
        (path, stat, row); bytes to read). Unchanged files are skipped (a failed one is noted
        for status); a changed one resumes from its offset and parser state, unless it is
        read whole, was rewritten, or was another workspace's."""
        store = self.store
        work = []
        for path, extra in listing.found:
            row = known.get(path)
            if listing.stats is not None:
                st = listing.stats.get(path)
                if st is None or _same(row, st):
                    continue
                if st.st_size == 0 and (row is None or path in rewritten):
                    self.log.warn(f"{path}: empty file")
            else:
                try:
                    st = src.stat(path)
                except OSError as e:
                    self._unreadable(src, path, None, e, listing)
                    continue
                if row is not None and _same(row, st):
                    if row.status == FAILED:
                        why = (_loads(store.file_state(path)) or {}).get("failed")
                        listing.problems.append(f"{path}: unreadable ({why}); not read again "
                                                "until it changes")
                    continue
                if row is not None and row.status not in SET_ASIDE and not src.whole(path) \
                        and _rewritten(path, st, row, src.follows_links):
                    rewritten.add(path)
            work.append((path, extra, st, row))
        if src.streamed:
            work.sort(key=lambda w: w[2].st_mtime_ns, reverse=True)
        todo, notes, total = [], [], 0
        for path, extra, st, row in work:
            again = path in rewritten
            if not again and _set_aside_growing(row, st):
                notes.append((path, st, row))
                continue
            offset, state, tools = 0, None, False
            if row is not None and not again and row.status not in SET_ASIDE \
                    and not src.whole(path):
                offset, state = row.offset, _loads(store.file_state(path))
                if isinstance(state, dict):
                    state.pop("failed", None)  # (why an earlier read failed: see _unreadable)
                    tools = bool(state.pop("tc", None)) and offset > 0  # (see _backfill)
            total += max(0, st.st_size - offset)
            todo.append((Job(src, path, extra, offset, state, st.st_mtime_ns / 1e9, st.st_size,
                             tools), st, row.session if row is not None else None))
        return todo, notes, total

    def _note_unknown(self, src, path: str, before: dict | None, after: dict | None) -> None:
        """Record types a reader met in this file for the first time and does not know (its
        state's "unk", which `status` counts). A type no file of the source showed before is a
        format that drifted: a warning naming the file, once; the rest an info line."""
        new = _unknown_types(after) - _unknown_types(before)
        if not new:
            return
        known = self.store.unknown_record_types(src.name)
        for say, kinds in ((self.log.warn, [t for t in new if t not in known]),
                           (self.log.info, [t for t in new if t in known])):
            if kinds:
                say(f"{path}: record types this version does not read, skipped: "
                    f"{', '.join(sorted(kinds))}")

    def _unreadable(self, src, path: str, st, e: BaseException, listing: _Listing) -> None:
        """A file that could not be read. For any reason but an OSError or a NotNow, it is
        noted as failed with its size and time: not read again until they change (a 200 MB
        invalid chat was read by every search, #18). What it held stays."""
        if st is not None and not isinstance(e, (OSError, NotNow)):
            with self.store.write():
                self.store.file_failed(path, src.name, st.st_size, st.st_mtime_ns, st.st_ino,
                                       _why(e))
        why = _why(e)
        self.log.warn(f"{path}: cannot read: {why}", once=True)
        listing.problems.append(f"{path}: unreadable ({why})")
        listing.unreadable = listing.unreadable or isinstance(e, (OSError, NotNow))

    def _listed(self, src, listing: _Listing) -> None:
        """What sources_changed looks at next time, for a source it looks at (the folders the
        listing took); a file to try again: listed again on every look."""
        if not src.streamed:
            self.store.set_meta(f"folders:{src.name}", None if listing.unreadable else jsontext.dumps(
                {"at": src.looks_at(self.ws), "folders": listing.folders}))

    def _index_file(self, src, job, st, session, chunks, rep: Report, steps,
                    problems: list[str], tick) -> int:
        """Index one file, a step at a time, each step's records and the file's offset and
        parser state written together. A file read from its start, where a file is a session,
        replaces what it held and any session it names (a rollout moved to archived_sessions/,
        a file recovered). Records of another workspace are not indexed: the file is noted as
        foreign. The file's size is written only once it is read to its end, so a run stopped
        between steps (a kill, the time budget) is not taken for one that read it all."""
        store = self.store
        path, offset, before = job.path, job.offset, job.state
        start = offset
        self._mtime = st.st_mtime_ns
        if job.tools and not self._backfill(job, steps):
            rep.pending_files += 1  # (left as it was, for the next run)
            return 0
        replaces = offset == 0 and not src.spans_files
        self.dropped = set()
        self._before.clear()  # (a session's texts before this file's are not this run's to hold)
        touched: set[int] = set()  # sessions this read wrote: never cleared again by it
        status, held, stop = "ok", False, False
        for deltas, end, state, read_problems in chunks:
            for p in read_problems:
                self.log.warn(f"{path}: {p}")
                problems.append(f"{path}: {p}")
            self._note_unknown(src, path, before, state)
            prior, before = before, state
            applied: set[int] = set()
            self._recheck()
            if session in self.forgot:  # (forgotten meanwhile: this file is noted as its own)
                session = None
                rep.sessions_touched -= self.forgot
            with store.write():  # (a savepoint of the steps: a step that fails leaves nothing)
                if replaces:
                    stale = {sid for sid in (session, *(store.session_with_messages(
                        src.name, d.session_id) for d in deltas)) if sid is not None}
                    for sid in stale - touched:
                        old = store.session(sid)
                        store.clear_session(sid)
                        if old is not None:
                            self._sessions.pop((src.name, old.session_id), None)
                        touched.add(sid)
                for d in deltas:
                    if not (state or {}).get("cwd") \
                            and not src.claims_cwdless(path, self.ws, self._cwdless):
                        # no line yet says where it ran, and its folder may be another
                        # workspace's: held where it stood (not read again until it grows;
                        # then its lines may say)
                        held = True
                        self.log.info(f"{path}: records no working folder, in a folder that "
                                      "may be another workspace's: not indexed until its lines say")
                        end, state = offset, prior
                        break
                    scope = self._scopes.get((src.name, d.cwd))
                    if scope is None:
                        scope = self._scopes[(src.name, d.cwd)] = src.in_scope(d, self.ws)
                    if not scope:
                        # (a cwd may come after lines already indexed: those are dropped too)
                        status, end = "foreign", st.st_size
                        self.log.info(f"{path}: session of {d.cwd}, not this workspace: skipped")
                        if session is not None:  # (one file of a session, or the session)
                            if src.spans_files:
                                store.clear_session(session)
                            else:
                                store.delete_session(session)
                        session = None
                        break
                    if self.forgotten and self._forgotten(d):
                        if session is None:
                            status = "forgotten"
                        self._grow(d)  # (what it said since it was forgotten: never a fork's)
                        continue
                    session = self._apply(d)
                    touched.add(session)
                    applied.add(session)
                    applied |= self.handed  # (their counts change too)
                    rep.sessions_touched |= self.handed
                    self.handed.clear()
                    if not src.extracted:
                        store.mark_finished(session)
                    rep.sessions_touched.add(session)
                # a huge file: the rest waits for the next run
                stop = status != "foreign" and not held and end < st.st_size \
                    and self._out_of_time()
                head_len = min(HEAD_BYTES, end)
                store.save_file(path, src.name, session, src.sidechain(job.extra), None,
                                st.st_mtime_ns, st.st_ino, head_len,
                                _head_hash(path, head_len, src.follows_links) if end else None,
                                end, jsontext.dumps(_without(state, self.dropped, status),
                                                    compact=True) if state else None,
                                status)
            steps.added(max(0, end - offset), applied)
            rep.bytes_read += max(0, end - offset)
            if tick:
                tick(end - start)
            offset = end
            if status == "foreign" or held or stop:
                break
        if stop:
            rep.pending_files += 1
        else:
            store.file_read(path, st.st_size)
        rep.files_read += 1
        return st.st_size - start

    def _backfill(self, job, steps) -> bool:
        """The tool calls of the lines an index from before schema 11 read without them (see
        store._to_v11), and the errors of the failed ones (schema 17): those lines parsed again
        from the file's start, their calls alone written, in one step (a call the read that follows meets again is stored once: see
        Store.add_tool_calls), and a fork's copies of its origin's calls left to the origin, as
        its messages are. False, with nothing written, when the run's time is up first."""
        store, src = self.store, job.source
        sessions: dict[str, int | None] = {}
        try:
            with store.write():
                for deltas, end, _state, _problems in src.read_chunks(
                        job.path, job.extra, 0, None, BATCH_BYTES, mtime=job.mtime,
                        size=job.size, bulk=self.bulk or job.offset >= BULK_BYTES):
                    for d in deltas:
                        if d.session_id not in sessions:
                            row = store.session_by_session_id(d.session_id, d.source)
                            sessions[d.session_id] = row.id if row is not None else None
                        sid, calls = sessions[d.session_id], d.tool_calls
                        if sid is not None and calls and d.shared_keys:
                            held = store.held_keys(sid, {c.message_key for c in calls})
                            calls = [c for c in calls if c.message_key in held]
                        if sid is not None and calls:
                            store.add_tool_calls(_call_rows(sid, calls))
                        if sid is not None and d.call_errors:
                            store.add_call_errors(sid, _error_rows(d.call_errors))
                    if end >= job.offset:
                        break
                    if self._out_of_time():
                        raise _OutOfTime
        except _OutOfTime:
            return False
        steps.added(job.offset)
        return True

    def _scan(self, src, only_session=None, quick=False):
        """(files found, their stats, what the index knows of them) for a run's scope."""
        store = self.store
        if only_session:
            found = src.session_files(self.ws, only_session)
            known = store.files(src.name, [sf.path for sf in found], session_id=only_session)
        elif quick:
            found, known = self._quick_scope(src)
        else:
            found, known = src.files(self.ws, self.log), store.files(src.name)
        stats = {}
        for sf in found:
            try:
                stats[sf.path] = os.stat(sf.path)
            except OSError as e:
                # (a quick scope names known files, and some are gone: no news)
                if not (quick and isinstance(e, FileNotFoundError)):
                    self.log.warn(f"cannot read {sf.path}: {e}", once=True)
        if quick:
            found = [sf for sf in found if sf.path in stats]
        return found, stats, known

    def _quick_scope(self, src):
        """What a SessionStart looks at: every file of a project folder whose listing changed
        (new or deleted sessions) that the index does not know, the files changed in the last
        RECENT seconds, and the next SWEEP known files in turn, so over many starts every file
        is looked at again. Never a stat of the whole history."""
        store = self.store
        paths: set[str] = set()
        for d in src.locations(self.ws):
            try:
                mtime = os.stat(d).st_mtime_ns
            except OSError:
                continue
            if store.get_meta(f"dir:{d}") != str(mtime):
                self._dirs[d] = mtime
        if self._dirs:
            indexed = store.file_paths(src.name)
            paths |= {sf.path for sf in src.files(self.ws, self.log, only_dirs=list(self._dirs),
                                                  known=indexed)}
            for d in self._dirs:  # and the transcripts that are gone (Claude Code's clean-up)
                try:
                    names = set(os.listdir(d))
                except OSError:
                    continue
                cut = len(d) + 1
                paths |= {p for p in indexed if p.startswith(d) and p[cut - 1] == os.sep
                          and os.sep not in p[cut:] and p[cut:] not in names}
        paths |= store.recent_file_paths(src.name, time.time_ns() - RECENT * 10**9)
        self._owed = store.owed()
        for sid in self._owed:
            paths |= {sf.path for sf in src.session_files(self.ws, sid)}
        n = self.sweep
        after = int(store.get_meta("sweep_after", 0)) if self.place is None else self.place
        swept = store.files_after(src.name, after, n) if n else []
        self._sweep_to = swept[-1][0] if swept and len(swept) == n else 0  # wrap at the end
        known = {p: row for _rowid, p, row in swept}
        known.update(store.files(src.name, [p for p in paths if p not in known]))
        paths |= set(known)
        return [sf for sf in map(src.file, sorted(paths)) if sf is not None], known

    def quick_done(self, complete: bool) -> None:
        """After a quick run: the project folders it listed need no listing until they change
        (if everything found was indexed), owed sessions are settled, the sweep moves on. Never
        waits on another writer: a hook would rather leave this to the next start. Writes
        nothing when there is nothing to note (a search that found nothing new)."""
        store = self.store
        complete = complete and bool(self._dirs or self._owed)
        here = self.place is None and self._sweep_to is not None
        if not (complete or here):
            return
        try:
            with store.write(wait=0.05):
                if complete:
                    for d, mtime in self._dirs.items():
                        store.set_meta(f"dir:{d}", mtime)
                    store.settle(self._owed)
                if here:
                    store.set_meta("sweep_after", self._sweep_to)
        except Busy:
            pass

    def swept_to(self) -> int | None:
        """Where the next quick run's sweep goes on from, once this one looked."""
        return self._sweep_to

    def pending(self, only_session: str | None = None, quick: bool = False,
                src=registry.CLAUDE_CODE) -> tuple[int, int]:
        """(files, bytes) of a streamed source changed or gone since indexed, without taking
        the lock or reading."""
        found, stats, known = self._scan(src, only_session, quick)
        self._last_scan = (found, stats, {sf.path for sf in found} | set(known),
                           (src.name, only_session, quick))
        files = size = 0
        for path, st in stats.items():
            row = known.get(path)
            if _same(row, st):
                continue
            if _set_aside_growing(row, st):
                continue
            files += 1
            size += max(0, st.st_size - (row.offset if row else 0))
        files += sum(1 for p, row in known.items() if p not in stats and row.status != "missing")
        return files, size

    # -- one file ------------------------------------------------------------------------------

    def _out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline

    def _tick(self, done: int, total: int) -> None:
        if self.progress:
            self.progress.update(done, total)

    def note_reply(self, session_id: str, text: str) -> bool:
        """Keep a reply the transcript does not show yet as the session's provisional message.
        True when it was kept (a new exchange)."""
        # its rules take 10 ms to compile: only for a reply the Stop hook keeps
        from .redact import scrub
        text = scrub(text.strip())
        store = self.store
        src = registry.CLAUDE_CODE  # (the Stop hook's source)
        row = store.session_by_session_id(session_id, src.name)
        if row is None or row.started_at is None:
            return False  # none of the session's prompts is indexed: a reply alone is no session
        if src.skips_reply(_loads(store.main_file_state(row.id))):
            return False
        if any(t.strip() == text or t.strip().endswith(text)
               for _ts, t in store.last_messages(row.id, "assistant", 3, skip_key=PROVISIONAL_KEY)):
            with store.write():
                store.drop_message(row.id, PROVISIONAL_KEY)
            return False  # the transcript has it already
        d = SessionDelta(session_id, src.name, src.label)
        now = time.time()
        d.messages.append(Message(PROVISIONAL_KEY, "assistant", text, now))
        d.seen(now)
        with store.write():
            store.drop_message(row.id, PROVISIONAL_KEY)
            self._apply(d)
            store.index_terms()
        return True

    def _session(self, d) -> _Session:
        key = (d.source, d.session_id)
        entry = self._sessions.get(key)
        if entry is None:
            row = self.store.session_for(d.source, d.session_id, d.label)
            entry = _Session(row.id, set(row.tag_list),
                             row.decisions, fresh=not self.store.has_messages(row.id))
            entry.titled = row.title_first is not None
            self._sessions[key] = entry
        return entry

    def _forgotten(self, d) -> bool:
        """Whether the delta is a forgotten session's; if not, its copies of a forgotten
        session's messages (a fork's, a resume's, one under new keys: forgotten.copies) and
        titles are taken out of it. A fork of a forgotten session first has what that session
        said since it was forgotten added to its tombstone (_grow_origins)."""
        gone = self.forgotten
        if gone.holds(d.source, d.session_id):
            return True
        if d.shared_keys and gone.keys:
            self._grow_origins(d)
            gone = self.forgotten
        said = _said(d)
        where = (d.source, d.session_id)
        before = self._before.get(where)
        if said:
            self._before[where] = said[-1][1]
        keys = forgotten.copies(gone, d.source, said, before, by_key=d.shared_keys)
        if keys and d.shared_keys:
            keys -= self._had_first(d, keys)
        if keys:
            d.copies_forgotten = True
            self.dropped |= keys
            d.first_prompt = None  # (the forgotten one's: the session's own is found instead)
            d.messages = [m for m in d.messages if m.key not in keys]
            d.file_changes = [c for c in d.file_changes if c.message_key not in keys]
            d.tool_calls = [c for c in d.tool_calls if c.message_key not in keys]
        if gone.titles:  # (a fork copies its origin's title records too)
            forks = self._copied_from.get(where, ())  # (their tombstones may hold its titles)
            if gone.drops_title(d.custom_title, forks):
                d.custom_title = None
            if gone.drops_title(d.summary_title, forks):
                d.summary_title = None
        return False

    def _had_first(self, d, keys: set[str]) -> set[str]:
        """Of the keys of a delta that a forgotten session's tombstone names, those its own
        session had first (_order, as Indexer._copies decides which session holds a message):
        its own lines, which the forgotten one copied as a fork or a resume does (its tombstone
        was written while the index did not hold them yet). They stay, and so do its titles."""
        gone = self.forgotten
        by: dict[tuple[str, str], list[str]] = {}
        for k in keys:
            owner = gone.owner(d.source, k)
            if owner is not None:
                by.setdefault(owner, []).append(k)
        if not by:
            return set()
        store = self.store
        row = store.session_by_session_id(d.session_id, d.source)
        start, mtime = store.precedence(row.id) if row is not None else (None, None)
        firsts = [t for t in (start, d.first_ts) if t is not None]
        mine = _order(min(firsts) if firsts else None, mtime if mtime is not None else self._mtime)
        own: set[str] = set()
        for owner, ks in by.items():
            theirs = self._order_of(*owner)
            # (one whose files are gone, or say no time: its tombstone is taken at its word)
            if theirs is not None and mine < theirs:
                own.update(ks)
                self._copied_from.setdefault((d.source, d.session_id), set()).add(owner)
        return own

    def _order_of(self, source: str, session_id: str) -> tuple[float, float] | None:
        """_order of a session the index does not hold (a forgotten one), from its files as
        they are now, once a run; None when it has none to read."""
        where = (source, session_id)
        if where not in self._orders:
            src = registry.source_named(source)
            self._orders[where] = file_order(src, self.ws, session_id) \
                if src is not None else None
        return self._orders[where]

    def _recheck(self) -> None:
        """The tombstones read again if they changed since (another process forgot a session,
        or kept one out, while this run holds the index): from here on nothing they name is
        read in, and what this run already wrote of them goes now (Memory.update finishes the
        rest before the lock is let go). One lstat."""
        if self.tomb_stamp is None or self.reload_tombs is None \
                or self.tomb_stamp() == self.forgotten.stamp:
            return
        self.forgotten = self.reload_tombs()
        held = self.store.sessions_holding(self.forgotten.sessions)
        if held:
            with self.store.write():
                self.store.forget(held)
                self.store.set_meta(forgotten.SCRUB_OWED, 1)
            self._sessions.clear()
            self.forgot.update(held)

    def _grow(self, d) -> None:
        """A forgotten session's lines read (it went on after a `forget this` or under
        PRIMA_MEMORY=off, or its file was read again): what they hold added to its tombstone, so
        that a fork or a resume that copies them later brings nothing back, and any copy of them
        a fork made before now deleted (its words are cleared by Memory._bury)."""
        said = _said(d)
        where = (d.source, d.session_id)
        before = self._before.get(where)
        if said:
            self._before[where] = said[-1][1]
        self._add_marks(d.source, d.session_id, said, (d.custom_title, d.summary_title),
                        before, shared=d.shared_keys)

    def _grow_origins(self, d) -> None:
        """Before a fork of a forgotten session is read in: what that session said since it was
        forgotten (a `forget this`, then more turns, then `--fork-session`), read from its files
        and added to its tombstone, once a run."""
        gone = self.forgotten
        origins = {o for m in d.messages if (o := gone.owner(d.source, m.key))} - self._grown
        src = registry.source_named(d.source)
        for origin in sorted(origins):
            self._grown.add(origin)
            if src is not None:  # (a source that names no session's files: nothing to read)
                said, titles = read_marks(src, self.ws, origin[1])
                self._add_marks(origin[0], origin[1], said, titles, shared=True)

    def _add_marks(self, source: str, session_id: str, said, titles, before: str | None = None,
                   *, shared: bool) -> None:
        """What a forgotten session's lines `said` [(key, text)] and `titles` hold, added to
        its tombstone (`before`: the text of its message before these), and where keys are
        shared, any copy of them another session holds deleted. Not those another session in
        the index had first (own_marks): a fork's or a resume's copies of its origin's lines
        are the origin's, forgotten only with it."""
        keys, texts, named = own_marks(
            self.store, source, session_id, said, titles, before,
            (lambda: self._order_of(source, session_id)) if shared else None)
        new = [forgotten.entry(source, session_id, "", {forgotten.key_hash(source, k)
                                                        for k in keys}, texts, named)]
        if self.extend_tombs is not None and self.forgotten.adds(new):
            self.forgotten = self.extend_tombs(new)
        if shared and keys:
            with self.store.write():
                if self.store.drop_keyed(source, keys):
                    self.store.set_meta(forgotten.SCRUB_OWED, 1)
                    self._sessions.clear()  # (what this run knew of them may be gone)

    def _apply(self, d) -> int:
        from . import tagging  # parse-time only: hooks that find nothing to do never load it
        store = self.store
        entry = self._session(d)
        sid = entry.id
        merged: dict[str, list] = {}  # key -> [role, ts, sidechain, pairs_with, texts]
        for m in d.messages:
            got = merged.get(m.key)
            if got is None:
                merged[m.key] = [m.role, m.ts, m.sidechain, m.pairs_with, [m.text] if m.text else []]
            elif m.role == "assistant" and m.text:
                got[4].append(m.text)  # a reply split over several lines is one message
        if entry.fresh:  # everything this session has was added by this run
            known = {k: entry.recent[k] for k in merged if k in entry.keys and k in entry.recent}
            missing = [k for k in merged if k in entry.keys and k not in entry.recent]
            if missing:
                known.update(store.messages_by_key(sid, missing))
        else:
            known = store.messages_by_key(sid, merged)
        # Copies come first in a file (a fork or a resume writes the earlier lines, then its
        # own): once a session holds a message of its own, no later key is looked up.
        fresh_keys = [k for k in merged if k not in known]
        copied, held = self._copies(d, sid, fresh_keys) if d.shared_keys and not entry.own \
            else (set(), set())
        if any(k not in held for k in fresh_keys):
            entry.own = True
        if copied:
            d.first_prompt = None  # (the origin's first prompt, not this session's)
        new = sum(k not in known and k not in copied for k in merged)
        ids = iter(store.new_message_ids(sid, new) if new else ())
        inserts, updates, texts_seen = [], [], []
        prompts: dict[str, int] = {}  # this delta's prompts: replies pair with them
        for key, (role, ts, side, pairs_with, texts) in merged.items():
            # A reply split over lines is redacted whole, as it is stored: each line alone can
            # hold half a secret ("the db password is" / "hunter2...").
            text = "\n".join(texts) if len(texts) < 2 else _scrub("\n".join(texts))
            if key in copied:
                continue
            if key in known:
                if role != "assistant" or not text:
                    continue
                mid, old = known[key]
                full = _scrub(f"{old}\n{text}") if old else text
                updates.append((mid, full))
                entry.remember(key, mid, full)
                text = _added(old or "", full)  # what this read adds, for terms and tags
            else:
                mid = next(ids)
                pair = None
                if pairs_with:
                    pair = prompts.get(pairs_with) or entry.recent.get(pairs_with, (None,))[0]
                    if pair is None:
                        pair = store.messages_by_key(sid, [pairs_with]).get(pairs_with, (None,))[0]
                inserts.append((mid, sid, key, role, ts, int(side), pair, text))
                entry.remember(key, mid, text)
                if role == "user":
                    prompts[key] = mid
            if text:
                texts_seen.append(text)
        store.add_messages(inserts)
        if updates:
            store.set_message_texts(updates)
        if not entry.fresh and texts_seen and PROVISIONAL_KEY not in merged:
            store.drop_message(sid, PROVISIONAL_KEY)  # the transcript caught up with the Stop hook
        joined = "\n".join(texts_seen)
        new_terms = store.tokens(joined) if joined else set()
        d.tags |= tagging.text_tags(joined, new_terms)
        d.tags.update(filter(None, (tagging.language_tag(fc.path) for fc in d.file_changes)))
        d.decisions += tagging.decision_lines(joined)
        if d.decisions:
            d.tags.add("decision")
        new_terms -= self._terms_seen
        if new_terms:
            store.add_terms(new_terms)
            self._terms_seen |= new_terms
        changes = [(sid, fc.path, fc.tool, fc.explanation, fc.ts, fc.message_key)
                   for fc in d.file_changes if fc.message_key not in copied]
        if changes:
            store.add_file_changes(changes)
            self.paths_changed = True
        calls = [c for c in d.tool_calls if c.message_key not in copied]
        if calls:
            store.add_tool_calls(_call_rows(sid, calls))
        if d.call_errors:  # (after the calls: a call and its error may come in one read)
            store.add_call_errors(sid, _error_rows(d.call_errors))
        tag_text = None
        if not d.tags <= entry.tags:
            entry.tags |= d.tags
            tag_text = " ".join(sorted(entry.tags))
        dec_text = None
        if d.decisions:
            entry.decisions = "\n".join(([entry.decisions] if entry.decisions else [])
                                        + d.decisions)[-20000:]
            dec_text = entry.decisions
        store.update_session(sid, cwd=d.cwd, branch=d.branch, author=d.author,
                             custom_title=d.custom_title, summary_title=d.summary_title,
                             first_prompt=d.first_prompt, first_ts=d.first_ts, last_ts=d.last_ts,
                             tags=tag_text, decisions=dec_text)
        if d.shared_keys and not entry.titled:  # a fork's title: its own first prompt
            entry.titled = d.first_prompt is not None or self._retitle(sid)
        return sid

    def _retitle(self, session: int) -> bool:
        """Title a session by its first prompt as stored: a fork's own, not the one it copied
        (or gave back). True when it has one."""
        from . import titles  # (only where copies are found or change hands)
        first = self.store.first_prompt(session)
        title = titles.clean_first_prompt(first) if first else None
        self.store.set_first_title(session, title)
        return title is not None

    def _copies(self, d, sid: int, keys: list[str]) -> tuple[set[str], set[str]]:
        """Of a delta's new message keys, those another session had first: copies (a fork or a
        resume writes the earlier session's lines again), not stored again; this session is
        that one's fork. Where this session had them first (a fork indexed before its origin,
        as a cold index reads the newest files first), the holder's copies come over to it.
        Returns (the copies, every key another session held)."""
        store = self.store
        held = store.holders(d.source, sid, [k for k in keys if not k.startswith(LOCAL)]) \
            if keys else {}
        if not held:
            return set(), set()
        start, mtime = store.precedence(sid)
        firsts = [t for t in (start, d.first_ts) if t is not None]
        mine = _order(min(firsts) if firsts else None, mtime if mtime is not None else self._mtime)
        by: dict[int, list[str]] = {}
        for key, holder in held.items():
            by.setdefault(holder, []).append(key)
        copied: set[str] = set()
        for holder, ks in sorted(by.items()):
            if mine < _order(*store.precedence(holder)):
                self.log.info(f"session {holder}: {len(ks)} messages were copied from session "
                              f"{sid}, read now: they are kept there")
                store.hand_over(holder, sid, ks)
                self._retitle(holder)
                self.handed.add(holder)
                # what the run remembered of the holder is gone
                self._sessions = {k: e for k, e in self._sessions.items() if e.id != holder}
            else:
                copied.update(ks)
                store.set_origin(sid, holder)
        return copied, set(held)

    def _finish_sessions(self, rep: Report) -> None:
        if rep.sessions_touched:
            with self.store.write():
                self.store.tidy(bulk=rep.bytes_read > BULK_BYTES)


def _said(d) -> list[tuple[str, str]]:
    """A delta's messages as the index stores them: (key, text), one per key in order (a reply
    split over lines is one message, redacted whole: see Indexer._apply)."""
    texts: dict[str, list[str]] = {}
    for m in d.messages:
        got = texts.get(m.key)
        if got is None:
            texts[m.key] = [m.text] if m.text else []
        elif m.role == "assistant" and m.text:
            got.append(m.text)
    return [(k, "\n".join(t) if len(t) < 2 else _scrub("\n".join(t))) for k, t in texts.items()]


def read_marks(src, ws: str, session_id: str) -> tuple[list[tuple[str, str]], list[str]]:
    """What a session's files hold, for its tombstone: its messages [(key, text)] as the index
    would store them, in order, and its titles, read from the files as they are now."""
    keys: dict[str, str] = {}
    titles: list[str] = []
    for sf in src.session_files(ws, session_id):
        for deltas, _end, _state, _problems in src.read_chunks(sf.path, sf, 0, None, BATCH_BYTES):
            for d in deltas:
                if d.session_id != session_id:
                    continue
                for k, t in _said(d):
                    keys[k] = f"{keys[k]}\n{t}" if keys.get(k) and t else (keys.get(k) or t)
                titles += [t for t in (d.custom_title, d.summary_title) if t]
    return list(keys.items()), titles


def file_order(src, ws: str, session_id: str) -> tuple[float, float] | None:
    """_order of a session from its main file as it is now (its first message's time, the
    file's time): for one the index does not hold. None when it has no main file."""
    for sf in src.session_files(ws, session_id):
        if sf.sidechain:
            continue
        try:
            mtime = os.stat(sf.path).st_mtime_ns
        except OSError:
            continue
        start = None
        for deltas, _end, _state, _problems in src.read_chunks(sf.path, sf, 0, None, BATCH_BYTES):
            firsts = [d.first_ts for d in deltas
                      if d.session_id == session_id and d.first_ts is not None]
            if firsts:
                start = min(firsts)  # (the first lines of a file are its earliest)
                break
        return _order(start, mtime)
    return None


def own_marks(store, source: str, session_id: str, said, titles, before: str | None = None,
              order=None) -> tuple[list[str], set[str], set[str]]:
    """A forgotten session's message keys, and the hashes of its texts and titles
    (forgotten.marks), less what another session in the index had first: the lines of its
    origin that a fork or a resume copies (under the same keys) are the origin's, and so are
    its origin's titles it copied. `order()`: the forgotten session's _order (None: unknown);
    None: its keys are not shared, nothing is another's."""
    keys = [k for k, _t in said if not k.startswith(LOCAL)]
    theirs: dict[str, int] = {}
    if order is not None and keys:
        row = store.session_by_session_id(session_id, source)
        held = store.holders(source, row.id if row is not None else 0, keys)
        mine = order() if held else None
        if mine is not None:
            first: dict[int, bool] = {}
            for k, holder in held.items():
                if holder not in first:  # (as Indexer._copies: the holder keeps a tie)
                    first[holder] = not mine < _order(*store.precedence(holder))
                if first[holder]:
                    theirs[k] = holder
    texts: set[str] = set()
    for k, text in said:
        if k not in theirs:
            texts |= forgotten.marks([text], (), before)[0]
        before = text
    named = forgotten.marks((), titles)[1]
    if theirs:
        for row in store.sessions_by_id(set(theirs.values())):
            named -= forgotten.marks((), (row.title_custom, row.title_summary))[1]
    return [k for k in keys if k not in theirs], texts, named


def session_marks(src, ws: str, session_id: str, store) -> tuple[set[str], set[str], set[str]]:
    """A tombstone entry's keys, texts and titles, from what the session's files hold now
    (read_marks), less its copies of another session's lines (own_marks)."""
    said, titles = read_marks(src, ws, session_id)
    keys, texts, named = own_marks(store, src.name, session_id, said, titles, None,
                                   lambda: file_order(src, ws, session_id))
    return {forgotten.key_hash(src.name, k) for k in keys}, texts, named


def _call_rows(sid: int, calls) -> list[tuple]:
    return [(sid, c.message_key or "", c.call, c.ts, int(c.sidechain), c.tool, c.target,
             c.line, c.kind) for c in calls]


def _error_rows(errors) -> list[tuple]:
    return [(e.error, e.key, e.call) for e in errors]


class _OutOfTime(Exception):
    """The run's time is up in the middle of a step that is all or nothing."""


def _order(start: float | None, mtime_ns: int | None) -> tuple[float, float]:
    """What decides which of two sessions had a message first: the earlier start, then the
    main file last written earlier (a resumed session stopped before its continuation); an
    unknown one comes last."""
    inf = float("inf")
    return (inf if start is None else start, inf if mtime_ns is None else mtime_ns)


def _scrub(text: str) -> str:
    from .redact import scrub  # only for a reply that grows: its rules take 10 ms to compile
    return scrub(text)


def _added(old: str, full: str) -> str:
    """The part of a grown message's text after what it held before (redaction of the joined
    text may have changed the end of the old part: then from where the two differ)."""
    n = len(old) if full.startswith(old) else len(os.path.commonprefix((old, full)))
    return full[n:].lstrip("\n")


def _why(e: BaseException) -> str:
    """Why a file could not be read, in a few words."""
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return f"{type(e).__name__}: {str(e)[:160]}"


def _unknown_types(state) -> set[str]:
    unk = state.get("unk") if isinstance(state, dict) else None
    return {t for t in unk if isinstance(t, str)} if isinstance(unk, list) else set()


# One file of a run: what read_chunks needs to read it from where the index stopped. (Not
# typing.NamedTuple: importing typing costs the hooks 1.6 ms.)
# `tools`: its calls up to `offset` are still to be read (see Indexer._backfill).
Job = namedtuple("Job", "source path extra offset state mtime size tools", defaults=(False,))


def read_chunks(job: Job, bulk: bool):
    """Successive (records, end, state, problems) of a job's file from its offset, BATCH_BYTES
    read at a time (Source.read_chunks)."""
    return job.source.read_chunks(job.path, job.extra, job.offset, job.state, BATCH_BYTES,
                                  mtime=job.mtime, size=job.size, bulk=bulk)


# A cold index parses in a second process while this one writes: two cores, half the time. A
# process started afresh (reader_process.py), never a fork: this one may have threads. POSIX only
# (its pipes are polled).
_READER_PROCESS = os.name == "posix"
# Seconds the reader process may go without a word, while it lives, before it is stopped and
# this process reads on by itself (a healthy one sends every few hundred ms; tests make it short)
READER_STALL = 60.0


class _ReaderProcess:
    """Parses the run's files, in order, in a second process while the parent applies the chunks
    (items arrive as (file number, kind, payload), each file closed by an "end", "oserror" or
    "failed" item: see reader_process). Only the parent writes, so a kill still leaves what it
    committed consistent. If the reader fails, dies or stalls, the parent reads the rest itself,
    from where the applied chunks ended, and logs why."""

    def __init__(self, jobs, bulk: bool, log=None):
        from . import reader_process  # a cold index only
        self.jobs, self.bulk, self.log = jobs, bulk, log
        self.child = reader_process.Child([None if j is None else tuple(j)[:7] for j in jobs],
                                          bulk, BATCH_BYTES, READER_STALL)
        self.proc = self.child.proc
        self.next = 0  # every item of the files before this one has been taken
        self.failed = False

    def _get(self):
        """The reader's next (file number, kind, payload), noting where each file ends; None
        once the reader is gone."""
        if self.failed:
            return None
        got = self.child.get()
        if got is None:
            self.failed = True
            if self.log is not None:
                self.log.warn(f"the reader process {self.child.why}: it was stopped, and "
                              "this process reads the rest of the files itself")
            return None
        if got[1] != "chunk":
            self.next = got[0] + 1
        return got

    def chunks(self, i: int):
        self._drain_to(i)
        job = self.jobs[i]
        while (got := self._get()) is not None:
            _i, kind, item = got
            if kind == "end":
                return
            if kind == "oserror":
                raise OSError(*item)
            if kind == "failed":
                break  # (this process's own read meets the error, and says it)
            job = job._replace(offset=item[1], state=item[2])  # resume point if the reader fails
            yield item
        if job.offset < job.size:  # go on from what was applied
            yield from read_chunks(job, self.bulk)
        self.next = max(self.next, i + 1)

    def skip(self, i: int) -> None:
        """Discard whatever is left of file i (and any before it)."""
        self._drain_to(i + 1)

    def _drain_to(self, i: int) -> None:
        while self.next < i and self._get() is not None:
            pass
        self.next = max(self.next, i)

    def stop(self) -> None:
        self.child.close()


class _Session:
    """What a run knows of a session it is writing, so appends need no lookups."""

    RECENT = 8

    def __init__(self, rowid: int, tags: set, decisions: str, fresh: bool):
        self.id = rowid
        self.tags = tags
        self.decisions = decisions
        self.fresh = fresh  # had no messages when this run first touched it
        self.titled = False  # has its first prompt's title
        self.own = not fresh  # holds a message of its own: no copy can follow (Indexer._apply)
        self.keys: set[str] = set()  # keys added by this run (kept only for fresh sessions)
        self.recent: dict[str, tuple[int, str]] = {}  # the last few messages: a reply may go on

    def remember(self, key: str, mid: int, text: str) -> None:
        if self.fresh:
            self.keys.add(key)
        self.recent[key] = (mid, text)
        if len(self.recent) > self.RECENT:
            del self.recent[next(iter(self.recent))]


def _sweep_size() -> int:
    try:
        return max(0, int(os.environ.get("PRIMA_SWEEP", SWEEP)))
    except ValueError:
        return SWEEP


def _loads(state: str | None) -> dict | None:
    return jsontext.loads(state) if state else None


def _same(row, st) -> bool:
    """The file is as the index last saw it (size, time, inode): nothing to read."""
    return row is not None and (row.size, row.mtime_ns, row.inode) == (st.st_size, st.st_mtime_ns,
                                                                      st.st_ino)


def _without(state: dict, dropped: set[str], status: str = "ok") -> dict:
    """A parser state kept without the text of a message _forgotten dropped, nor any of a
    forgotten session's own file: Claude Code's keeps the tail of the last reply read (and its
    key), for the next change's explanation, and a fork's last reply read may be its copy of a
    forgotten session's."""
    if not dropped and status != "forgotten":
        return state
    out = dict(state)
    for thread in ("main", "side"):
        th = out.get(thread)
        if isinstance(th, dict) and (status == "forgotten" or th.get("tk") in dropped):
            out[thread] = {k: v for k, v in th.items() if k not in ("t", "tk")}
    return out


SET_ASIDE = ("foreign",)  # files read to their end and kept out of the index (a forgotten
# session's are read on: what it says goes into its tombstone, Indexer._grow)


def _set_aside_growing(row, st) -> bool:
    """Another workspace's session grown since: nothing to read (it is noted when its source
    is read for another change)."""
    return row is not None and row.status in SET_ASIDE and st.st_size >= (row.size or 0)


def _rewritten(path: str, st, row, follow: bool = False) -> bool:
    return (row.status == "missing" or st.st_size < row.offset or row.inode != st.st_ino
            or bool(row.offset and row.head_hash != _head_hash(
                path, min(row.head_len or 0, row.offset), follow)))
