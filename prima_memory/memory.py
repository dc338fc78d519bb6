"""One workspace's memory: opening its index safely, updating it under the lock, rebuilding it.

The data API (api.py) and so the CLI, the hooks and the MCP server go through here, so
corruption handling, host mode and locking behave the same everywhere.
"""
from __future__ import annotations

import os
import time

from . import background, changed_names, forgotten, notes_given, owner
from . import workspace as wsmod
from .errors import Failure, IndexBusy, IndexReadOnly
from .indexer import SEARCH_SWEEP, Indexer, session_marks
from .locking import LockTimeout, WriterLock
from .logs import Log
from .scope import Scope
from .sources import registry
from .storage import (SCHEMA_VERSION, CantOpen, CorruptIndex, DiskFull, ForeignIndex, ReadOnly,
                    SchemaMismatch, Store, StoreError, is_corruption, move_aside, own_error)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of every hook)
if TYPE_CHECKING:
    from .embed import Embedder

# Which sources an update reads (Memory.update's `sources`).
HOOK = (registry.CLAUDE_CODE,)  # what a hook reads: a machine-wide look at VS Code is not for it
ALL = registry.SOURCES  # every agent's sessions (a search, an index, the background)
OTHERS = registry.OTHERS  # all but the hooks' (the background embedder, after a hook's run)
EXTRACTS = (registry.EXTRACTS,)  # prima-memory's own extracts, for a deep search
IDS_CLEARED = "forgotten_ids"  # meta: the forgotten sessions the folder's files were cleared of


class ForgetPending(Failure):
    """The index holds a forgotten session that cannot be removed now: it is not read."""


class Memory(Scope):
    """One workspace's memory, and the scope of a request of that workspace (scope.py)."""

    def __init__(self, ws: str, *, log: Log | None = None, before_start=None,
                 home: str | None = None, strict: bool = False):
        """`home`: the folder the memory lives in, when not the workspace's own .prima-memory:
        the user-level store's for a project searched among all (projects.py), where nothing
        of the workspace's own folder is read back (its extracts) or written (extracts).
        `strict`: an index not known to be this user's (not stamped, damaged, of an unknown
        schema) is left as it is (the store's error is raised), not moved aside and replaced:
        a search of all projects writes in no folder the user has not used prima-memory in."""
        self.ws = ws
        # called before .prima-memory is made where there is none: it raises to make nothing
        self.before_start = before_start
        self.detached = home is not None
        self.strict = strict
        self.dir = home or wsmod.data_dir(ws)
        self.db_path = os.path.join(self.dir, "index.db")
        self.log = log or Log(self.dir if wsmod.is_real_dir(self.dir) else None)
        self._store: Store | None = None
        self._lock: WriterLock | None = None
        self._embedder: Embedder | None = None
        self._no_model: Exception | None = None  # why the model would not load, once tried
        self.lasting = False  # held by a process that serves many requests (the MCP server)
        self._key: bytes | None = None  # the user's key, once read (see key)
        self._key_read = False
        self._dir_checked = False  # ensure_data_dir ran (its lstats once, not per use)
        self._writable: bool | None = None  # files could be made in the folder, last looked
        # seconds an opening waits for the writer lock to apply tombstones it has not (see
        # _settle_forgets): a hook waits less
        self.settle_wait = 2.0
        self._tombs_seen = ""  # the tombstone files' stamp last settled (see store)

    # -- opening ---------------------------------------------------------------------------------

    def exists(self) -> bool:
        return os.path.exists(self.db_path)

    def _ensure_dir(self, again: bool = False) -> None:
        if self._dir_checked and not again:
            return
        if not os.path.lexists(self.dir):
            off = wsmod.opted_out(self.ws)
            if off:  # (a memory made before the file was put there is still read)
                raise wsmod.WorkspaceError(f"{self.ws} keeps itself out of prima-memory ({off}): "
                                           "no memory is made for it")
            if self.before_start is not None:
                self.before_start()
        self._dir_checked = True
        notes = wsmod.ensure_data_dir(self.ws, self.dir)
        if self.log.path is None:
            self.log = Log(self.dir)
        for note in notes:
            self.log.warn(note)

    def store(self) -> Store:
        """The index, opened on first use with its tombstones settled (_settle_forgets); and at
        every use after, for a memory held open (the MCP server's, a hook's), settled again if
        the tombstone file changed since (one lstat): another process's forget, which it could
        not finish, is never answered around."""
        if self._store is None:
            self._ensure_dir()
            store = self._open()
            self._writable = self.writable()
            if not self._writable:  # no lock file, log or extract could be made: write nothing
                store.readonly = True
            self._store = store
            try:
                self._settle_forgets(store)
            except BaseException:
                self.close()
                raise
        elif self._tombs_seen != self.tomb_stamp() and not self._holding():
            # (under its own writer lock, a writer applies them itself: update, _bury)
            self._settle_forgets(self._store)
        return self._store

    def _holding(self) -> bool:
        """Whether this memory holds the writer lock now."""
        return self._lock is not None and self._lock.held

    def key(self) -> bytes | None:
        """The user's key (owner.py), or None when it can be neither read nor made: then indexes
        are opened unchecked, and the log says so once."""
        if not self._key_read:
            try:
                self._key = owner.key()
            except OSError as e:
                self.log.warn(f"the key that proves an index is yours cannot be kept at "
                              f"{owner.key_path()} ({e}): indexes are used without that check",
                              once=True)
                self._key = None
            self._key_read = True
        return self._key

    def use_key(self, key: bytes | None) -> None:
        """The key, read once for every memory a search of all projects opens."""
        self._key, self._key_read = key, True

    def writable(self) -> bool:
        """Whether files can be made in the folder now, as writers do (the locks, the log, the
        extracts): not on a read-only file system or mount, nor in a folder made read-only. The
        index file an open connection holds says nothing: it stays writable through it."""
        return os.access(self.dir, os.W_OK)

    def follow_write_access(self) -> None:
        """For a long-lived process (the MCP server), before each use: the folder may have turned
        read-only since the index was opened (remounted, chmodded), or writable again. Read-only,
        the index is read as it stands through the connection already open, and nothing is
        written nor any lock taken (each writer checks store.readonly); writable again, it is
        opened anew for writing."""
        store = self.store()
        writable = self.writable()
        if writable == self._writable:
            return
        self._writable = writable
        if not writable and not store.readonly:
            store.readonly = True
            self.log.warn(f"{self.dir} turned read-only: answering from the index as it stands, "
                          "nothing is updated")
        elif writable and store.readonly:
            self.close()
            self.store()

    def _open(self) -> Store:
        made = not os.path.lexists(self.db_path)
        try:
            store = Store(self.db_path, key=self.key())
            if made and not self.detached:
                self._adopt_detached(store)
            return store
        except (OSError, ReadOnly, CantOpen) as e:
            if not os.path.isfile(self.db_path):
                raise
            # readable, not writable: answer from it as it stands (updates are skipped)
            self.log.warn(f"{self.db_path} cannot be written ({e}): reading it as it stands")
            return self._open_readonly()
        except DiskFull as e:  # cannot even make its -shm: read it as it stands
            self.log.warn(f"{e}: reading it as it stands")
            store = self._open_readonly()
            store.readonly_why = "the disk is full"
            return store
        except ForeignIndex as e:
            if self.strict:
                raise
            return self._replace("foreign", f"{e}: not used", recover=False)
        except CorruptIndex as e:
            if self.strict:  # (whose it is cannot be known)
                raise
            return self._replace("corrupt", f"index is corrupt ({e})")
        except SchemaMismatch as e:
            if e.found is not None and e.found > SCHEMA_VERSION:
                # made by a newer prima-memory (another checkout, an update not yet installed
                # here): never moved aside by an older one, which would lose what it holds
                raise wsmod.WorkspaceError(f"{self.db_path} was made by a newer prima-memory "
                                           f"(schema {e.found}; this one knows {SCHEMA_VERSION}): "
                                           "left as it is; run install.sh of the newer version") from None
            if self.strict:
                raise
            return self._replace(f"v{e.found}", str(e))

    def _open_readonly(self) -> Store:
        """The index where nothing can be written: with what its write-ahead log holds (the
        last writes may be there only), else, when there is no log to read, the file alone."""
        try:
            return Store(self.db_path, readonly=True, key=self.key())
        except (CantOpen, ReadOnly, DiskFull) as e:
            wal = self.db_path + "-wal"
            if os.path.isfile(wal) and os.path.getsize(wal):
                raise wsmod.WorkspaceError(
                    f"{self.db_path}: its latest changes are in {wal}, which cannot be read "
                    f"where nothing can be written ({e}): not used") from None
        return Store(self.db_path, readonly=True, key=self.key(), immutable=True)

    def _replace(self, why: str, message: str, *, recover: bool = True) -> Store:
        """Move the index aside and start a new one. `recover`: copy over the sessions whose
        files are gone (from a file stamped as ours only: see Store.recover_from)."""
        try:
            old = move_aside(self.db_path, why)
        except OSError as e:  # a read-only folder: nothing is moved, and nothing is used
            raise wsmod.WorkspaceError(f"{message}; it cannot be moved aside ({e.strerror or e})"
                                       ": not used") from None
        try:  # (the shell's list of changed names was the old index's: made again from the new)
            os.unlink(os.path.join(self.dir, changed_names.FILE))
        except OSError:  # (none; a folder a cloned repository put there: never read as a list)
            pass
        if recover:
            self.log.warn(f"{message}: moved it to {old} and rebuilding from the source files")
        else:
            self.log.warn(f"{message}: moved it to {old} and rebuilding from the source files; "
                          f"if it is your own, `prima-memory index --recover-from {old}` brings "
                          "back its sessions whose files are gone")
        store = Store(self.db_path, key=self.key())
        if recover:
            try:
                n = store.recover_from(old, os.path.exists, forgotten=self.tombstones())
                if n:
                    self.log.warn(f"recovered {n} session(s) whose files are gone from {old}")
            except (OSError, StoreError, forgotten.Unreadable) as e:
                self.log.warn(f"nothing could be recovered from {old}: {e}")
        return store

    def _adopt_detached(self, store: Store) -> None:
        """A workspace's own index, new, takes over the memory the user-level store kept of it
        for searches of all projects (projects.py), so there is never a second: the sessions
        whose files are gone come over, and that memory is deleted. A failure leaves it, and
        the next search of all projects does the same."""
        home = wsmod.detached_dir(self.ws)
        if not wsmod.is_real_dir(home):
            return
        try:
            theirs = forgotten.load(home).entries  # (what it found a forgotten session said)
            tombs = self._write_tombs(theirs, forgotten.LOCK_WAIT) if theirs \
                else self.tombstones()
            old = os.path.join(home, "index.db")
            n = store.recover_from(old, os.path.exists, forgotten=tombs) \
                if os.path.isfile(old) else 0
            if n:
                self.log.warn(f"recovered {n} session(s) whose files are gone from {old}, the "
                              "memory a search of all projects kept of this workspace")
            import shutil  # (once, when a workspace's index is made)
            shutil.rmtree(home)
        except (OSError, StoreError, forgotten.Unreadable, forgotten.Busy) as e:
            self.log.warn(f"{home}: left as it is: {e}")

    def recover_from(self, path: str, *, lock_timeout: float) -> int:
        """What a user asks for by name: the sessions whose files are gone, from an unstamped
        index of theirs (one from before stamps, set aside as not known to be theirs)."""
        store = self.store()
        if store.readonly:
            raise IndexReadOnly(self.db_path, store.readonly_why)
        self._take_lock(lock_timeout)
        try:
            return store.recover_from(path, os.path.exists, unstamped=True,
                                      forgotten=self.tombstones())
        finally:
            self.lock().release()

    def own_error(self, e: BaseException) -> BaseException:
        return own_error(e, self._store)

    def recover_corrupt(self, why: str = "") -> Store:
        """Called when the database turns out corrupt mid-operation."""
        if self._store is not None:
            try:
                self._store.close()
            except StoreError:
                pass
            self._store = None
        self._ensure_dir(again=True)
        self._store = self._replace("corrupt", f"index is corrupt ({why[:200]})" if why
                                    else "index is corrupt")
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def reopen(self) -> None:
        """The index or its folder was replaced or removed under a long-lived process (another
        process moved a damaged index aside; a `git clean`; a link put in the folder's place):
        close it and check the folder again (a link is set aside) before it is used anew."""
        self.close()
        self._lock = None
        self._dir_checked = False

    # -- writing -----------------------------------------------------------------------------

    def lock(self):
        if self._lock is None:
            self._ensure_dir()
            self._lock = WriterLock(os.path.join(self.dir, "index.lock"))
        return self._lock

    def _take_lock(self, timeout: float) -> None:
        """The writer lock, or IndexBusy after `timeout` seconds; release with lock().release()."""
        try:
            self.lock().acquire(timeout=timeout)
        except LockTimeout:
            raise IndexBusy(f"another prima-memory process is updating {self.db_path}") from None

    def update(self, *, sources=HOOK, lock_timeout: float = 10.0, budget: float | None = None,
               only_session: str | None = None, prune: bool = False, rebuild: bool = False,
               progress=None, extracts: bool = True, quick: bool = False,
               sweep: int | None = None):
        """Index what changed in `sources` (HOOK, ALL, OTHERS, EXTRACTS, or any source or
        sources of sources/registry.py): one pipeline for all, under the writer lock, taken only when
        something changed. The scope: `only_session` (Stop) or `quick` (SessionStart) narrow
        what a streamed source looks at (see Indexer.run); `rebuild` reads everything again;
        `prune` drops archived sessions. `extracts`: write the extracts of the sessions this
        run finished (or one killed before it did). Raises IndexBusy if the lock is not free
        within lock_timeout. HOOK by default: a machine-wide look at VS Code's folders is not
        for a hook's budget."""
        store = self.store()
        if store.readonly:
            raise IndexReadOnly(self.db_path, store.readonly_why)
        if isinstance(sources, registry.Source):
            sources = (sources,)
        if self.detached:  # nothing of the workspace's own .prima-memory, read or written
            sources = tuple(s for s in sources if s is not registry.EXTRACTS)
            extracts = False
        tombs = self._buried(store, lock_timeout)
        indexer = Indexer(self.ws, store, self.log, progress=progress)
        self._watch_tombs(indexer, tombs)
        if wsmod.opted_out(self.ws):  # (.prima-memory-off: nothing new is remembered here)
            return indexer.nothing_to_do()
        if sweep is not None:  # a search's share of the sweep (see indexer.SEARCH_SWEEP)
            indexer.sweep, indexer.place = min(sweep, indexer.sweep), self._search_place()
        todo = list(sources)
        if not (rebuild or prune):
            todo = indexer.sources_changed(sources, only_session, quick)
            if not todo and not (extracts and store.unfinished_sessions()) \
                    and indexer.rules_current():
                if quick and any(src.streamed for src in sources):
                    indexer.quick_done(complete=True)
                self._note_place(indexer)
                return indexer.nothing_to_do()  # no lock taken
        try:
            self._take_lock(lock_timeout)
        except IndexBusy:
            if only_session:
                self.owe(only_session)
            raise
        try:
            if self.tomb_stamp() != tombs.stamp:
                # a forget (another process's) ran between the look above and the lock: what it
                # set aside is read from its start now, and would all come back
                tombs = self._tombs_applied(store)
                indexer.forgotten = tombs
            indexer.apply_rules()
            if rebuild:
                with store.write():
                    store.clear_live()
                indexer = Indexer(self.ws, store, self.log, progress=progress)
                self._watch_tombs(indexer, tombs)
            rep = indexer.run(todo, budget=budget, only_session=only_session, prune=prune,
                              quick=quick and not rebuild)
            # what changed in the tombstones meanwhile (a forget, an opt-out, or what this run
            # found a forgotten session had said since), applied in full before the lock goes
            if self._has_tombs() and (store.get_meta(forgotten.SCRUB_OWED) or
                                      self.tomb_stamp() != (store.get_meta(forgotten.META) or "")):
                self._bury(self.tombstones())
            if quick and not rebuild and not any(src.streamed for src in todo) \
                    and any(src.streamed for src in sources):
                indexer.quick_done(complete=True)  # (run only for the extracts: nothing new)
            if extracts:  # for the sessions this run changed, or one killed before it
                from .extract_writer import write_unfinished
                rep.extracts += write_unfinished(store, self.ws, self.log)
            if only_session and rep.pending_files:
                self.owe(only_session)  # left for the next SessionStart to finish
            self._note_place(indexer)
            # (the names change only with the changes: a Stop that added none reads none)
            self.list_changed_names(missing=not (indexer.paths_changed or rep.pruned or rebuild))
            return rep
        finally:
            self.lock().release()

    # -- forgetting (forgotten.py) ------------------------------------------------------------

    def _tomb_dirs(self) -> list[str]:
        """Where this memory's tombstones are kept: its own folder, and for the user-level
        store's memory of a workspace (projects.py) the workspace's own .prima-memory too, where
        the user forgot sessions before its index was set aside (their key gone, say)."""
        if self.detached:
            own = wsmod.data_dir(self.ws)
            if wsmod.is_real_dir(own) and os.path.lexists(forgotten.path(own)):
                return [self.dir, own]
        return [self.dir]

    def tomb_stamp(self) -> str:
        """What changes whenever a tombstone file of this memory does ("" for none)."""
        return "|".join(forgotten.stamp(d) for d in self._tomb_dirs())

    def tombstones(self) -> forgotten.Tombstones:
        """Every tombstone of this memory (raises forgotten.Unreadable: see forgotten.load)."""
        got = [forgotten.load(d, lambda m: self.log.warn(m, once=True))
               for d in self._tomb_dirs()]
        tombs = got[0] if len(got) == 1 else got[0].with_entries(got[1].entries)
        tombs.stamp = "|".join(t.stamp for t in got)
        return tombs

    def _has_tombs(self) -> bool:
        return any(os.path.lexists(forgotten.path(d)) for d in self._tomb_dirs())

    def forgotten_here(self, session_id: str) -> bool:
        """Whether a Claude Code session is forgotten here: its tombstones applied first (a
        forget killed halfway leaves none of its files), and an unreadable file counts as yes."""
        if not self._has_tombs():
            return False
        try:
            self.store()
            return self.tombstones().holds(registry.CLAUDE_CODE.name, session_id)
        except Failure:
            return True

    def _settle_forgets(self, store: Store) -> None:
        """On opening, and on each use after once the tombstone file changed (see store):
        tombstones this index has not applied (a forget killed halfway, one another process is
        applying, an opt-out written while another process held the index) applied first, so
        that no answer shows what they name. Where they cannot be (another writer holds the
        index past `settle_wait`, or it cannot be written), an index that still holds a session
        they name is not read at all (ForgetPending), until they are."""
        if not self._has_tombs():
            self._tombs_seen = ""
            return
        now = self.tomb_stamp()
        if now == (store.get_meta(forgotten.META) or ""):
            self._tombs_seen = now
            return
        if not store.readonly:
            try:
                self._take_lock(self.settle_wait)
            except IndexBusy:
                pass
            else:
                try:
                    self._tombs_seen = self._tombs_applied(store).stamp
                    return
                finally:
                    self.lock().release()
        tombs = self.tombstones()
        if store.sessions_holding(tombs.sessions):
            raise ForgetPending(f"{self.db_path} still holds a session that was forgotten, and "
                                "cannot be cleared of it now (another prima-memory process is "
                                "updating it, or it is read-only): not read; try again in a "
                                "moment")
        self._tombs_seen = tombs.stamp  # (nothing of them to answer around: not waited for again)

    def _buried(self, store, lock_timeout: float):
        """The tombstones, every one of them applied: a forget killed halfway, or one from
        another process (a hook's `forget this`), finished first. The cost when nothing
        changed: one lstat, one row of meta (the file is parsed only if a file is read)."""
        if not self._has_tombs():
            return forgotten.NONE
        now = self.tomb_stamp()
        tombs: forgotten.Tombstones | forgotten.Later = forgotten.Later(now, self.tombstones)
        if now != (store.get_meta(forgotten.META) or ""):
            self._take_lock(lock_timeout)
            try:
                tombs = self._tombs_applied(store)
            finally:
                self.lock().release()
        elif store.get_meta(forgotten.LOG_OWED):  # a reader kept the last forget's log full
            self._take_lock(lock_timeout)
            try:
                if store.empty_log(tries=1):
                    with store.write():
                        store.set_meta(forgotten.LOG_OWED, None)
            finally:
                self.lock().release()
        return tombs

    def _tombs_applied(self, store) -> forgotten.Tombstones:
        """Under the writer lock: the tombstones as they are now, applied if they were not."""
        tombs = self.tombstones()
        if tombs.stamp != (store.get_meta(forgotten.META) or ""):
            self._bury(tombs)
        return tombs

    def _watch_tombs(self, indexer: Indexer, tombs) -> None:
        """What the indexer asks while it runs: whether the tombstones changed (another
        process's forget or opt-out), and to add what it finds of a forgotten session."""
        indexer.forgotten = tombs
        indexer.tomb_stamp = self.tomb_stamp
        indexer.reload_tombs = self.tombstones
        indexer.extend_tombs = lambda new: self._write_tombs(new, forgotten.LOCK_WAIT)

    def _write_tombs(self, new: list[dict], wait: float) -> forgotten.Tombstones:
        """`new` entries added to the tombstones, under the file's own lock (never the
        writer's: a forget or an opt-out is written even while a long index runs, which applies
        it before its next step); returns every tombstone of this memory as it is now."""
        forgotten.change(self.dir, lambda t: t.with_entries(new) if t.adds(new) else None,
                         wait=wait, warn=lambda m: self.log.warn(m, once=True))
        return self.tombstones()

    def forget(self, rows, *, why: str = "forget", lock_timeout: float = 10.0,
               also: dict | None = None) -> dict:
        """Forget these sessions (the store's rows) for good: their tombstone written first (from
        then on they are forgotten, and a run killed after it is finished by the next), then
        everything the index and the folder hold of them removed (see _bury) when the writer
        lock comes within `lock_timeout` (else by its holder, before its next step: "pending").
        `also`: (source, session id) -> (key, text, title hashes) of sessions the index may not
        hold (yet)."""
        store = self.store()
        if store.readonly:
            raise IndexReadOnly(self.db_path, store.readonly_why)
        found = {pair: tuple(set(h) for h in hashes) for pair, hashes in (also or {}).items()}
        for row in rows:
            keys, texts, titles = found.setdefault((row.source, row.session_id),
                                                   (set(), set(), set()))
            said = list(store.message_keys_and_texts(row.id))
            keys.update(forgotten.key_hash(row.source, k) for k, _t in said)
            more, named = forgotten.marks([t or "" for _k, t in said],
                                          [row.title_custom, row.title_summary])
            origin = store.origins([row.id]).get(row.id)
            if origin is not None:  # (a fork copies its origin's title: the origin's still)
                named -= forgotten.marks((), (origin.title_custom, origin.title_summary))[1]
            texts |= more
            titles |= named
        new = [forgotten.entry(src, sid, why, *hashes) for (src, sid), hashes in found.items()]
        self._write_tombs(new, max(lock_timeout, 1.0))
        try:
            self._take_lock(lock_timeout)
        except IndexBusy:
            return {"sessions": 0, "files": [], "log_emptied": False, "pending": True}
        try:
            return self._bury(self.tombstones())
        finally:
            self.lock().release()

    def keep_out(self, session_id: str, *, why: str = "opt-out",
                 lock_timeout: float = 10.0) -> dict:
        """A Claude Code session its user keeps out of the memory (PRIMA_MEMORY=off, or
        /prima-memory:forget this): tombstoned with what its transcript holds so far (a later
        resume copies it), and whatever the index holds of it removed. What it says later is
        added by every run that reads its transcript (Indexer._grow), and by each of its Stops."""
        src = registry.CLAUDE_CODE
        row = self.store().session_by_session_id(session_id, src.name)
        return self.forget([row] if row is not None else [], why=why, lock_timeout=lock_timeout,
                           also={(src.name, session_id): session_marks(src, self.ws, session_id,
                                                                       self.store())})

    def remember_again(self, pairs, *, lock_timeout: float = 10.0) -> int:
        """Take these (source, session id) out of the tombstones; their files are read again by
        the next run (those of sessions still forgotten are set aside again). Returns how many
        were there. All under the writer lock, taken first: when it does not come within
        `lock_timeout` (IndexBusy) nothing has changed, and the same undo can be tried again.
        The files are let go before the tombstones are changed, so that a kill between the two
        leaves the sessions forgotten (the next run sets their files aside again), not their
        files set aside with no tombstone left to undo."""
        store = self.store()
        if store.readonly:
            raise IndexReadOnly(self.db_path, store.readonly_why)
        self._take_lock(lock_timeout)
        try:
            tombs = self.tombstones()
            if not any(tombs.holds(*p) for p in pairs):
                return 0
            with store.write():
                store.unset_aside()
            there: list = []

            def take_out(tombs):
                there.extend(p for p in pairs if tombs.holds(*p))
                return tombs.without(there) if there else None
            forgotten.change(self.dir, take_out, wait=lock_timeout,
                             warn=lambda m: self.log.warn(m, once=True))
            return len(there)
        finally:
            self.lock().release()

    def _bury(self, tombs) -> dict:
        """Under the writer lock: what the index and the folder still hold of the tombstoned
        sessions, removed. In an order a kill can stop anywhere: the files first (their paths
        are in the rows), then the rows, the file rewritten and its log emptied, and only then
        the tombstones noted as applied: until that, every run does it all again."""
        from .checkpoints import files_naming  # (only where a session is forgotten)
        store = self.store()
        ids = {sid for _src, sid in tombs.sessions}
        held = store.sessions_holding(tombs.sessions)
        # The folder's files are looked through when the tombstones name a session they did not
        # the last time: no extract, checkpoint or index moved aside names one after that.
        import hashlib  # (as forgotten's: only where tombstones are)
        mark = hashlib.sha256("\0".join(sorted(ids)).encode("utf-8", "surrogatepass")).hexdigest()
        fresh = store.get_meta(IDS_CLEARED) != mark
        paths = set(files_naming(self.dir, ids)) if fresh else set()
        for sid in held:
            row = store.session(sid)
            if row is not None and row.extract_path:
                paths.add(row.extract_path)
        held += store.sessions_of_files(paths)  # (an extract read back by a deep search)
        removed = []
        for p in sorted(paths):
            try:
                os.unlink(p)
                removed.append(p)
            except FileNotFoundError:
                pass
        if fresh:
            removed += self._drop_copies_aside(ids)
        if held:
            with store.write():
                store.forget(sorted(set(held)))
                store.set_meta(forgotten.SCRUB_OWED, 1)  # (with the deletes: a kill after them)
        # Rewriting the file costs its size (seconds at 10,000 sessions): only after a delete,
        # never for a session the index never held (each Stop of a PRIMA_MEMORY=off session).
        clean = True
        scrubbed = bool(store.get_meta(forgotten.SCRUB_OWED))
        if scrubbed:
            if not held:  # (copies a run deleted: Indexer._grow; a forget killed after them)
                with store.write():
                    store.scrub_words()
            self._drop_vector_files()
            clean = store.scrub_free_space()
            self._drop_vector_files()  # (one a search wrote meanwhile, from rows now gone)
        self.log.drop_naming(ids)
        if scrubbed:  # (rows deleted: the names they held leave the shell's list)
            self.list_changed_names()
        if fresh:  # (sessions newly forgotten: out of the record of notes given)
            try:
                notes_given.drop(self.dir, ids)
            except OSError as e:
                self.log.warn(f"{notes_given.FILE} not cleared of forgotten sessions "
                              f"({e.strerror or e})")
        with store.write():
            store.set_meta(forgotten.SCRUB_OWED, None)
            store.set_meta(forgotten.META, tombs.stamp)
            store.set_meta(IDS_CLEARED, mark)
            # (until emptied, the file keeps the pages' old images: the next run tries again)
            store.set_meta(forgotten.LOG_OWED, None if clean else 1)
        if not clean:
            self.log.warn("the index's write-ahead log could not be emptied while another "
                          "process read it: the next forget or index empties it")
        return {"sessions": len(set(held)), "files": removed, "log_emptied": clean}

    def list_changed_names(self, *, missing: bool = False) -> None:
        """The list hooks/run.sh reads before an edit (changed_names.py), made again when the
        index holds other names (`missing`: only when there is no such file there, or a link
        or a FIFO the shell never reads). Not for a memory kept elsewhere: the shell looks in
        the workspace's own folder."""
        if self.detached or missing and changed_names.listed(self.dir):
            return
        try:
            changed_names.refresh(self.dir, self.store().every_changed_path())
        except OSError as e:
            self.log.warn(f"{changed_names.FILE} not written ({e.strerror or e}): every edit "
                          "starts Python to look", once=True)

    def _drop_copies_aside(self, ids: set[str]) -> list[str]:
        """The indexes moved aside in the folder (damaged, not known to be this user's, of an
        older schema: kept for `index --recover-from`) that hold a forgotten session: deleted
        whole, since one that may be damaged cannot be cleared row by row."""
        wanted = [i.encode("utf-8", "surrogatepass") for i in ids if i]
        gone = []
        try:
            names = sorted(os.listdir(self.dir))
        except OSError:
            names = []
        for name in names:
            if not name.startswith("index.db.") or name.endswith(("-wal", "-shm", "-journal")):
                continue  # (an index moved aside is index.db.<why>-<time>: store.move_aside)
            p = os.path.join(self.dir, name)
            if _holds_any(p, wanted) or _holds_any(p + "-wal", wanted):
                for q in (p, p + "-wal", p + "-shm", p + "-journal"):
                    try:
                        os.unlink(q)
                        gone.append(q)
                    except OSError:
                        pass
                self.log.warn(f"{p}: deleted, since it held a forgotten session (an index moved "
                              "aside before the forget)")
        return gone

    def _drop_vector_files(self) -> None:
        """The mapped copies of the vectors (vectorfile.py): made again from the index."""
        try:
            names = os.listdir(self.dir)
        except OSError:
            return
        for name in names:
            if name.startswith("vectors-") and name.endswith(".bin"):
                try:
                    os.unlink(os.path.join(self.dir, name))
                except OSError:
                    pass

    # A search sweeps its share of the known files from where the last search's share ended,
    # noted in a file of its own: in the index it would cost every search a write, and the
    # checkpoint that follows (a disk flush or two).
    def _search_place(self) -> int:
        try:
            got = wsmod.read_plain(os.path.join(self.dir, wsmod.SWEEP_FILE), 32)
            return int(got[0]) if got else 0
        except (OSError, ValueError):
            return 0

    def _note_place(self, indexer: Indexer) -> None:
        to = indexer.swept_to()
        if indexer.place is None or to is None or to == indexer.place:
            return
        try:
            wsmod.replace_whole(os.path.join(self.dir, wsmod.SWEEP_FILE), str(to))
        except OSError:  # (a read-only folder: the next search sweeps the same share)
            pass

    def owe(self, session_id: str) -> None:
        """A session this run could not index (busy, out of time, its file not yet written): the
        next quick run, a SessionStart's, does."""
        store = self.store()
        if store.readonly:
            return
        try:
            with store.write():
                store.owe(session_id)
        except StoreError:  # busy: the sweep comes to it in time anyway
            pass

    def note_last_reply(self, session_id: str, text: str, *, lock_timeout: float) -> bool:
        """Claude's last reply as the Stop hook saw it, for a transcript that lags behind: kept
        as one provisional message until the transcript's own lines bring it."""
        store = self.store()
        if store.readonly:
            return False
        try:
            self._take_lock(lock_timeout)
        except IndexBusy:
            return False
        try:
            return Indexer(self.ws, store, self.log).note_reply(session_id, text)
        finally:
            self.lock().release()

    # -- embeddings ----------------------------------------------------------------------------

    def embedder(self, loaded=None, load=None):
        """The embedding model, loaded once per process (raises embed.ModelUnavailable), or
        `loaded` if none is yet (one loaded by another thread); `load`: what loads it (an early
        load's result: see api.Early), embed.load by default."""
        if self._embedder is None:
            # semantic work only: the model, numpy
            from . import embed
            if loaded is None and self._no_model is not None:
                raise self._no_model  # not tried again in this process (the MCP server's)
            try:
                self._embedder = loaded or (load or embed.load)()
            except Exception as e:
                if not isinstance(e, embed.ModelLate):  # (late is no reason to stop trying)
                    self._no_model = e
                raise
            if self._embedder.note:
                self.log.warn(f"embeddings: {self._embedder.note}", once=True)
        return self._embedder

    def model_tried(self) -> bool:
        """Whether this process loaded the model, or found it would not load."""
        return self._embedder is not None or self._no_model is not None

    def semantic_work(self) -> bool:
        """Whether exchanges wait to be embedded or linked, known without loading the model (a
        second of CPU), so that it is loaded for work only. True when the model's name cannot be
        had: loading it says why."""
        # semantic work only: the model, numpy
        from . import embed
        from .semantic import key_of, vector_key
        try:
            key = key_of(self._embedder) if self._embedder else vector_key(
                embed.model_name(embed.model_dir()), None, embed.expected_build())
        except embed.ModelUnavailable:
            return True
        store = self.store()
        return bool(store.count_pending(key) or store.unlinked_exchanges(key))

    def side_lock(self, name: str):
        """The lock of a background job ("embed", "rebuild"): held for the job's whole life, so
        a holder that died frees it and its recorded state is known to be stale."""
        self._ensure_dir()
        return WriterLock(os.path.join(self.dir, f"{name}.lock"))

    def under_lock(self, name: str, wait: float, fn):
        """fn() holding job `name`'s lock, waited for up to `wait` seconds; None when another
        process holds it."""
        lock = self.side_lock(name)
        try:
            lock.acquire(timeout=wait)
        except LockTimeout:
            return None
        try:
            return fn()
        finally:
            lock.release()

    def embed(self, budget: float | None, *, wait: float = 0.0, progress=None,
              should_stop=None, settings=None) -> tuple[int, int] | None:
        """Embed pending exchanges, newest first, for up to `budget` seconds, under the embed
        lock (waiting up to `wait` for a background embedder to finish first). Returns
        (embedded, still pending), or None when another process holds the lock."""
        # semantic work only: the model, numpy
        from .semantic import Embedding, key_of
        store = self.store()
        if store.readonly:
            return 0, store.count_pending(key_of(self.embedder(), settings))
        t0 = time.monotonic()

        def run():
            left = None if budget is None else max(0.0, budget - (time.monotonic() - t0))
            return Embedding(store, self.embedder(), settings).run(left, progress=progress,
                                                                    should_stop=should_stop)
        return self.under_lock("embed", wait, run)

    def link(self, budget: float | None, *, wait: float = 0.0, should_stop=None,
             settings=None) -> tuple[int, int] | None:
        """Compute the SIMILAR_TO edges of exchanges embedded since, for up to `budget`
        seconds, under the embed lock. Returns (linked, still pending), or None when another
        process holds the lock."""
        # semantic work only: the model, numpy
        from .semantic import key_of, link
        store = self.store()
        embedder = self.embedder()
        model = key_of(embedder, settings)
        if store.readonly:
            return 0, len(store.unlinked_exchanges(model))
        return self.under_lock("embed", wait, lambda: link(
            store, model, getattr(embedder, "dim", 384), budget=budget, should_stop=should_stop))

    def pending(self) -> tuple[int, int]:
        """(files, bytes) changed on disk since they were indexed, without indexing them."""
        return Indexer(self.ws, self.store(), self.log).pending()

    # -- the scope of a request (scope.py) ----------------------------------------------------------

    def memories(self, warnings: list[str]) -> list[tuple[Memory, set[int]]]:
        return [(self, set())]

    def bring_up(self, warnings: list[str], *, progress=None, deep: bool = False) -> None:
        """What changed indexed, so a session written a second ago is found (`deep`: the
        extracts and checkpoints too). Not while a rebuild reads the files: it holds the index,
        and answers from what it has read. No extract is written here: Stop and the background
        write them."""
        if self.store().get_meta(background.REBUILD_KEY):  # (a state only when one left it)
            state = background.rebuild_state(self)
            if state and state.get("phase") == "reading":
                warnings.append(f"a rebuild is reading every file (pid {state.get('pid')}): "
                                "answering from what it has read so far")
                return
        try:
            self.update(sources=ALL, lock_timeout=LOCK_SECONDS, progress=progress, quick=True,
                        sweep=SEARCH_SWEEP, extracts=False)
        except IndexBusy as e:
            warnings.append(f"{e} for more than {LOCK_SECONDS:.0f}s: "
                            "answering from the index as it stands")
        except (IndexReadOnly, DiskFull) as e:
            warnings.append(f"{e}: answering from the index as it stands")
        if deep:
            self.read_extracts(warnings)

    def read_extracts(self, warnings: list[str]) -> None:
        """A deep search's extracts and checkpoints, read back into the index."""
        if not self.store().readonly:  # (read-only: bring_up has said so once)
            try:
                self.update(sources=EXTRACTS, lock_timeout=LOCK_SECONDS, extracts=False)
            except (IndexBusy, IndexReadOnly, DiskFull) as e:
                warnings.append(f"{e}: extracts searched as last indexed")

    def embed_new(self, embedder, budget: float, warnings: list[str]) -> None:
        left, ran = self.embed_within(embedder, budget, warnings)
        if left:
            warnings.append(f"{left} exchanges are not embedded yet (found by keyword only "
                            "until they are); they are being embedded in the background")
            if ran:  # (not: the background embedder is on them already)
                background.start_embedder(self)

    def embed_within(self, embedder, budget: float,
                     warnings: list[str] | None) -> tuple[int, bool]:
        """New exchanges embedded for up to `budget` seconds: (how many are left, whether this
        process embedded: else another one, the background embedder, is at it). `warnings`
        gets why none could be (a rebuild running, a read-only index)."""
        from .semantic import key_of  # (semantic work only)
        store = self.store()
        if background.rebuild_state(self):
            if warnings is not None:
                warnings.append("a rebuild is running: searching the exchanges it has embedded "
                                "so far")
            return 0, False
        left = store.count_pending(key_of(embedder))  # (known already if read ahead: prefetch)
        if not left:
            return 0, False
        if store.readonly:
            if warnings is not None:
                warnings.append(f"the index is read-only: {left} exchanges cannot be embedded "
                                "and are found by keyword only")
            return 0, False
        try:
            # a background embedder already works newest first: wait for it only a moment
            got = self.embed(budget, wait=min(budget, EMBEDDER_WAIT))
        except Exception as e:
            if is_corruption(e):
                raise
            self.log.warn(f"embedding before the search failed: {type(e).__name__}: {e}")
            if warnings is not None:
                warnings.append(f"new exchanges could not be embedded ({_line(e)}): "
                                "searching the ones embedded before")
            return 0, False
        return (got[1] if got is not None else store.count_pending(key_of(embedder))), \
            got is not None

    def link_new(self, budget: float, warnings: list[str]) -> None:
        left = self.link_within(budget)
        if left:
            warnings.append(f"{left} exchanges have no similarity links yet (they are still "
                            "found; their links come in the background)")

    def link_within(self, budget: float) -> int:
        """SIMILAR_TO edges of what was embedded since, for up to `budget` seconds: how many
        exchanges are left unlinked."""
        from .semantic import key_of  # (semantic work only)
        store = self.store()
        if store.readonly or background.rebuild_state(self):
            return 0
        got = self.link(budget, wait=EMBEDDER_WAIT)
        return len(store.unlinked_exchanges(key_of(self.embedder()))) if got is None else got[1]

    def early_model(self) -> bool:
        return not self.model_tried()

    def describe(self, mems: list[Memory]) -> dict:
        return {"scope": "project", "sessions": self.store().count_sessions(),
                "home": self.ws == wsmod.home_folder()}

    def damaged(self, e: BaseException) -> Memory | None:
        return self  # (the one index a request of this memory reads)


LOCK_SECONDS = 10.0  # how long a request waits for another writer before answering as it stands
EMBEDDER_WAIT = 2.0  # seconds a search waits for a running background embedder (newest first)


def _line(e: BaseException) -> str:
    return " ".join(str(e).split())[:300] or type(e).__name__


def _holds_any(path: str, wanted: list[bytes]) -> bool:
    """Whether the file at `path` (a plain file: a link is not followed) holds any of these."""
    import re  # (only where a moved-aside index is looked at)
    if not wanted:
        return False
    find = re.compile(b"|".join(re.escape(w) for w in wanted))
    keep = max(len(w) for w in wanted)
    try:
        fd = wsmod.open_nofollow(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        tail = b""
        while chunk := f.read(1 << 20):
            if find.search(tail + chunk):
                return True
            tail = chunk[-keep:]
    return False
