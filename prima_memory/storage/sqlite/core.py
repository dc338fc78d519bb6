"""The SQLite store's core: the connection (opened, stamped, migrated), transactions and
savepoints, the driver's errors made the storage's own, recovery's helpers, the keyword rows
kept for the commit, and the meta table."""
from __future__ import annotations

import os
import time
from collections.abc import Iterator
from types import FunctionType, GeneratorType

import apsw

from ... import jsontext
from ...workspace import open_nofollow, text_of
from ..shared import (Busy, CantOpen, CorruptIndex, DiskFull, ForeignIndex, ReadOnly,
                      SchemaMismatch, StoreError)
from .folding import UNINDEXED_CHARS, Tokens, _fold_value, index_text
from .schema import SCHEMA_VERSION, _META_SQL, _MIGRATIONS, _RETITLE, _SCHEMA


TYPE_CHECKING = False
if TYPE_CHECKING:
    from .store import Store

BUSY_MS = 5000  # how long a statement waits for another writer, unless told otherwise
SCRUB_TRIES, SCRUB_TRY_MS = 40, 100  # a forget's wait for readers to leave the log: 6 s at most


def _uncounted_allocations() -> None:
    """SQLite keeps statistics of its memory (which nothing here reads) under a global lock
    taken on every allocation: without them a common word's search spends half as long in
    SQLite, and so does indexing. They can only be turned off before the library's first use
    in the process (apsw refuses while a connection is open: then they stay)."""
    try:
        apsw.shutdown()
        apsw.config(apsw.SQLITE_CONFIG_MEMSTATUS, 0)
    except apsw.MisuseError:
        pass
    apsw.initialize()


_uncounted_allocations()


def _own(e: BaseException, db, path: str) -> BaseException:
    """The store's type for a driver error `e` raised on `db` (an apsw connection, or None);
    anything else as it is. The one place that reads SQLite's error codes: a full disk is
    SQLITE_FULL, or an I/O error whose cause is ENOSPC (making or growing the -shm or the log)."""
    if not isinstance(e, apsw.Error):
        return e
    import errno  # only on an error: hooks that write nothing never pay for it
    if isinstance(e, (apsw.CorruptError, apsw.NotADBError)):
        return CorruptIndex(f"{path}: {e}", path)
    if isinstance(e, apsw.FullError) or (isinstance(e, apsw.IOError) and db is not None
                                         and db.system_errno == errno.ENOSPC):
        return DiskFull(f"the disk is full: {path} not written", path)
    if isinstance(e, (apsw.BusyError, apsw.LockedError)):
        return Busy(f"{path}: {e}", path)
    if isinstance(e, apsw.ReadOnlyError):
        return ReadOnly(f"{path}: {e}", path)
    if isinstance(e, apsw.CantOpenError):
        return CantOpen(f"{path}: {e}", path)
    return StoreError(f"{path}: {type(e).__name__}: {e}", path)


def is_store_error(e: BaseException) -> bool:
    """`e` is the index's trouble (a driver error not yet translated, one of ours, or text read
    back from a damaged index), not a source file's: the indexer lets it end the run rather than
    mark a file unreadable."""
    return isinstance(e, (StoreError, apsw.Error)) or is_corruption(e)


def own_error(e: BaseException, store: Store | None = None) -> BaseException:
    """The store's type for an error that escaped a plain read (outside write/read/steps),
    for the boundary that reports it (Memory.guarded)."""
    return _own(e, store.db if store is not None else None,
                store.path if store is not None else "the index")


def _bind_path(path: str):
    """A source file's path as the index keeps it: as text, or for a name whose bytes are not
    UTF-8 (os gives it with surrogates, which SQLite cannot take as text) as those bytes, a
    BLOB, so that it comes back as the same path, to be read again."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return os.fsencode(path)


def _path(value) -> str:
    return os.fsdecode(value) if isinstance(value, bytes) else value


def _create_private(path: str) -> None:
    """Create the database file private to the user (SQLite gives the -wal and -shm files its
    mode), never through a symbolic link: the mode is set on what was opened."""
    fd = open_nofollow(path, os.O_RDWR | os.O_CREAT)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def _schema_rows(db) -> list[tuple]:
    """Every schema object but SQLite's statistics (ANALYZE and PRAGMA optimize make those)."""
    return sorted(db.execute("SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master "
                             "WHERE name NOT LIKE 'sqlite\\_stat%' ESCAPE '\\'"))


def stamp_of(db, key: bytes) -> str:
    """The index's stamp: the user's key over its schema, object by object, so that a trigger,
    view, table or index added by anyone else no longer matches."""
    try:  # hashlib's own import loads OpenSSL: 3-6 ms of every hook's start, for blake2b alone
        from _blake2 import blake2b
    except ImportError:  # (not CPython)
        from hashlib import blake2b
    text = "\n".join("\0".join(map(str, row)) for row in _schema_rows(db))
    return blake2b(text.encode("utf-8", "surrogatepass"), key=key[:64], digest_size=32,
                   person=b"prima-memory-idx").hexdigest()


def owner_problem(db, key: bytes, *, unstamped: bool = False) -> str | None:
    """None when this database was made (or last migrated) by prima-memory with this key; else
    why not, in words for a warning. Reads nothing but the schema and, once that is known to
    hold our meta table, the stamp in it (a `meta` made by someone else could be a view).
    `unstamped`: the user vouches for it (an index from before stamps): no stamp is needed, but
    still nothing prima-memory never makes."""
    if (_META_SQL,) not in db.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchall():
        return "is not a prima-memory index"
    row = None if unstamped else db.execute("SELECT value FROM meta WHERE key = 'owner'").fetchone()
    if row and row[0] == stamp_of(db, key):
        return None
    odd = _objects_not_ours(db)
    if odd:
        return "holds what prima-memory never makes (" + ", ".join(odd[:5]) + ")"
    if unstamped:
        return None
    if not row:
        return ("carries no stamp of this user's prima-memory (an index from before stamps, or "
                "one that came with the folder)")
    return "was stamped by another user's or machine's prima-memory"


def _objects_not_ours(db) -> list[str]:
    """The schema objects a new index of this version does not have, as "trigger x"."""
    ref = apsw.Connection(":memory:")
    try:
        ref.execute(_SCHEMA)
        ours = {(t, n) for t, n, _tbl, _sql in _schema_rows(ref)}
    finally:
        ref.close()
    return [f"{t} {n}" for t, n, _tbl, _sql in _schema_rows(db) if (t, n) not in ours]


def _uri(path: str) -> str:
    """A file: URI for SQLite, made from the path's bytes: a folder name that is not UTF-8 (os
    gives it as surrogates, which apsw cannot pass on) reaches SQLite as those very bytes."""
    from urllib.parse import quote  # here: 3-4 ms of every hook's start
    return "file:" + quote(os.fsencode(os.path.abspath(path)))


def _connect(path: str, flags: int) -> apsw.Connection:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return apsw.Connection(_uri(path), flags=flags | apsw.SQLITE_OPEN_URI)
    return apsw.Connection(path, flags=flags)


# The context managers of the store's transactions, as classes: contextlib's generators would
# cost every process that opens an index contextlib's import (and functools'), 1.6 ms.


class _Errors:
    __slots__ = ("store",)

    def __init__(self, store: Core):
        self.store = store

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, e, tb) -> None:  # (None: an exception goes on)
        if kind is not None and issubclass(kind, apsw.Error):
            raise _own(e, self.store.db, self.store.path) from None
        if kind is UnicodeDecodeError and is_corruption(e):  # (text a damaged page left)
            raise CorruptIndex(f"{self.store.path}: {e}", self.store.path) from None


class _Transaction(_Errors):
    """Store.write (`writes`) or Store.read: a transaction, or inside one already a savepoint
    (a write) or nothing (a read)."""
    __slots__ = ("writes", "wait", "nested", "mark")

    def __init__(self, store: Core, writes: bool, wait: float | None = None):
        super().__init__(store)
        self.writes, self.wait, self.nested, self.mark = writes, wait, False, 0

    def __enter__(self) -> Store:  # type: ignore[override]
        store, db = self.store, self.store.db
        with _Errors(store):
            self.nested = db.in_transaction
            if self.nested:
                if self.writes:
                    db.__enter__()  # a savepoint
                    self.mark = len(store._undo)
                    store._savepoints += 1
            elif not self.writes:
                db.execute("BEGIN")
            else:
                if self.wait is not None:
                    db.setbusytimeout(int(self.wait * 1000))
                try:
                    db.execute("BEGIN IMMEDIATE")
                finally:
                    if self.wait is not None:
                        db.setbusytimeout(BUSY_MS)
        return store  # type: ignore[return-value]  # (every Core is made as a Store)

    def __exit__(self, kind, e, tb) -> None:
        store, db = self.store, self.store.db
        with _Errors(store):
            if self.nested:
                if self.writes:
                    store._savepoints -= 1
                    if kind is None:
                        db.__exit__(kind, e, tb)  # released
                    elif db.in_transaction:
                        store._rewind(self.mark)
                        db.__exit__(kind, e, tb)  # rolled back
                    else:
                        # SQLite rolled the whole transaction back itself (a full disk as it
                        # spilled pages to the log): no savepoint is left, and apsw's "no such
                        # savepoint" would hide the error in flight (it counts its savepoint
                        # closed all the same)
                        store._forget_unindexed()
                        try:
                            db.__exit__(kind, e, tb)
                        except apsw.SQLError:
                            pass
            elif not self.writes:
                db.execute("COMMIT")
            elif kind is not None:
                store._rollback()
            else:
                try:
                    store._settle()
                    db.execute("COMMIT")
                except BaseException:
                    store._rollback()
                    raise
        super().__exit__(kind, e, tb)


class _Stepped(_Errors):
    __slots__ = ("steps",)

    def __init__(self, store: Store, max_bytes: int, max_seconds: float):
        super().__init__(store)
        with _Errors(store):
            self.steps = Steps(store, max_bytes, max_seconds)

    def __enter__(self) -> Steps:  # type: ignore[override]
        return self.steps

    def __exit__(self, kind, e, tb) -> None:
        with _Errors(self.store):
            self.steps.close(commit=kind is None)
        super().__exit__(kind, e, tb)


class Steps:
    """One transaction over many files: a commit per file costs more than the parsing. The
    caller reports each file's bytes once its lines, offset and state are written; every
    `max_bytes` or `max_seconds` it commits, with the touched sessions' counts and the new
    terms sealed first, so a kill at any point leaves a consistent index the next run continues."""

    def __init__(self, store: Store, max_bytes: int, max_seconds: float):
        self.store = store
        self.max_bytes, self.max_seconds = max_bytes, max_seconds
        self.size = 0
        self.sessions: set[int] = set()  # touched since the last commit
        self.started = time.monotonic()
        store.db.execute("BEGIN IMMEDIATE")

    def added(self, n: int, sessions=()) -> None:
        """`n` more bytes are written, with records of `sessions`: commit if a step is done."""
        self.size += n
        self.sessions.update(sessions)
        if self.size >= self.max_bytes or time.monotonic() - self.started > self.max_seconds:
            self._seal()
            self.store.db.execute("COMMIT; BEGIN IMMEDIATE")
            self.size = 0
            self.started = time.monotonic()
        elif self.store.unindexed_chars > UNINDEXED_CHARS:  # (between files: no savepoint open)
            self.store._settle()

    def _seal(self) -> None:
        for sid in self.sessions:
            self.store.refresh_counts(sid)
        self.sessions.clear()
        self.store.index_terms()
        self.store._settle()

    def close(self, commit: bool) -> None:
        if not commit:  # (the keyword rows kept go too, when SQLite has rolled back itself)
            self.store._rollback()
        elif self.store.db.in_transaction:
            self._seal()
            self.store.db.execute("COMMIT")


def _lenient(db, sql: str, args=()) -> list[tuple]:
    """Rows of a query that selects its text columns AS BLOB, decoded here: bytes a damaged page
    left in a text become U+FFFD instead of failing the whole read."""
    return [tuple(v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in r)
            for r in db.execute(sql, args)]


_ENGINE = os.path.dirname(__file__)  # (where the engine reads rows: see is_corruption)


def is_corruption(e: BaseException) -> bool:
    """An error that says the index itself is damaged: SQLite's own, or text that is no longer
    UTF-8 (random bytes in a text page pass SQLite's checks and fail only when a row is read).
    A decode error counts only where it came from reading the index, in this engine's modules."""
    if isinstance(e, (CorruptIndex, apsw.CorruptError, apsw.NotADBError)):
        return True
    if isinstance(e, UnicodeDecodeError):
        tb = e.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        return tb is not None and os.path.dirname(tb.tb_frame.f_code.co_filename) == _ENGINE
    return False


def errors_carry_the_path(cls):
    """Every public method of the store raises the store's own errors, carrying its path: a
    read of several indexes knows which one is damaged (scope.Scope.guarded) from the error
    alone. Rows handed back to be read later (a cursor, a generator) translate theirs as they
    are read. Those that hand back a transaction translate their own (_Errors)."""
    def wrap(fn):
        def run(self, *args, **kw):
            try:
                got = fn(self, *args, **kw)
            except Exception as e:
                own = _with_path(self, e)
                if own is e:
                    raise
                raise own from None
            if isinstance(got, (GeneratorType, apsw.Cursor)):
                return _rows_with_path(self, got)
            return got
        run.__name__, run.__qualname__, run.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
        run.__wrapped__ = fn  # type: ignore[attr-defined]
        return run
    names = {n for klass in cls.__mro__ for n, f in vars(klass).items()
             if not n.startswith("_") and isinstance(f, FunctionType)}
    for name in names - {"write", "read", "steps"}:
        setattr(cls, name, wrap(getattr(cls, name)))
    return cls


def _with_path(store, e: Exception) -> BaseException:
    """The store's own error for `e`, carrying the store's path; anything else as it is."""
    if isinstance(e, StoreError):
        return e
    if isinstance(e, apsw.Error):
        return _own(e, store.db, store.path)
    if isinstance(e, UnicodeDecodeError) and is_corruption(e):
        return CorruptIndex(f"{store.path}: {e}", store.path)
    return e


def _rows_with_path(store, rows):
    try:
        yield from rows
    except Exception as e:
        own = _with_path(store, e)
        if own is e:
            raise
        raise own from None


def move_aside(path: str, why: str) -> str:
    """Rename a database (and its -wal, -shm, -journal) out of the way; returns the new name."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    dest = f"{path}.{why}-{stamp}"
    n = 1
    while os.path.exists(dest):
        n += 1
        dest = f"{path}.{why}-{stamp}-{n}"
    os.replace(path, dest)
    for suffix in ("-wal", "-shm", "-journal"):
        if os.path.lexists(path + suffix):
            try:
                os.replace(path + suffix, dest + suffix)
            except OSError:
                pass
    return dest


class Core:
    def __init__(self, path: str, *, readonly: bool = False, key: bytes | None = None,
                 immutable: bool = False, shm_kept: bool = False):
        """`key`: the user's key (owner.key()); the index is stamped with it when made or
        migrated, and an index without a valid stamp raises ForeignIndex. None: no check (a
        user whose key cannot be kept; tests of the store alone). `readonly`: read with its
        write-ahead log (SQLite reads a -shm it cannot write from memory), or, `immutable`, the
        file alone, with no lock and no -shm (a read-only disk where the log cannot be opened),
        or, `shm_kept`, with its log through the -shm there, which is only read: nothing is
        made or written beside it (CantOpen where there is no -shm)."""
        self.path = path
        self.readonly = readonly or immutable or shm_kept
        self.readonly_why: str | None = None  # said when an update is refused, if not "read-only"
        self.key = key
        self._tokens = Tokens(lambda: self.db)
        self._pending: dict[str, tuple[tuple[int, int], list[int]]] = {}  # pending_exchanges'
        # keyword rows waiting for the commit (see _settle), and how to take back what a
        # savepoint rolled back adds or changes among them: (rowid, its text before, or None)
        self._unindexed: dict[int, str] = {}
        self._undo: list[tuple[int, str | None]] = []
        self.unindexed_chars = 0  # kept so far (about: what growth replaced is counted too)
        self._settled_at = 0  # total_changes() when last settled: none since, nothing staged
        self._savepoints = 0  # open (Store.write inside a write)
        db: apsw.Connection | None = None
        try:
            if self.readonly:
                mode = "?immutable=1" if immutable else \
                    "?mode=ro&readonly_shm=1" if shm_kept else "?mode=ro"
                db = apsw.Connection(_uri(path) + mode,
                                     flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
            else:
                _create_private(path)
                db = _connect(path, apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)
            self.db: apsw.Connection = db
            db.setbusytimeout(BUSY_MS)
            # the schema's triggers fold titles as matching does (innocuous: trusted_schema off)
            db.create_scalar_function("prima_fold", _fold_value, 1, deterministic=True,
                                      flags=apsw.SQLITE_INNOCUOUS)
            self._init_with_retry()
        except apsw.Error as e:
            own = _own(e, db, path)
            if isinstance(own, DiskFull):
                raise DiskFull(f"the disk is full: {path} cannot be opened for writing") from e
            raise own from e

    def _init_with_retry(self) -> None:
        """Several processes opening a brand-new index at once: switching it to WAL can answer
        "locked" without waiting, so try again for a few seconds."""
        deadline = time.monotonic() + 10
        while True:
            try:
                return self._init()
            except apsw.BusyError:
                self._rollback()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _init(self) -> None:
        db = self.db
        # Defence in depth: a view or trigger in a file not ours can call no function that is
        # not innocuous (ours use none), even before the stamp is checked.
        db.execute("PRAGMA trusted_schema=OFF")
        has_meta = "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
        wal = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL"
        if not db.execute(has_meta).fetchone():
            if self.readonly:
                raise StoreError(f"{self.path} is not a prima-memory index")
            if not db.execute("SELECT count(*) FROM sqlite_master").get:
                db.execute(wal)  # a new file: made in WAL mode from the start
            db.execute("BEGIN IMMEDIATE")  # several first users at once: one creates, all see it
            try:
                if not db.execute(has_meta).fetchone():
                    if db.execute("SELECT count(*) FROM sqlite_master").get:
                        raise ForeignIndex(self.path, "is a database prima-memory did not make")
                    db.execute(_SCHEMA)
                    self._stamp()
                db.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
        if self.key is not None:
            why = owner_problem(db, self.key)
            if why:
                raise ForeignIndex(self.path, why)
        if not self.readonly:
            db.execute(wal)
        version = self._version()
        if version in _MIGRATIONS and not self.readonly:
            db.execute("BEGIN IMMEDIATE")  # one process migrates; the others see it done
            try:
                version = self._version()
                while version in _MIGRATIONS:
                    _MIGRATIONS[version](self)  # type: ignore[arg-type]  # (a Store's)
                    version += 1
                    self._set_version(version)
                self._stamp()  # its schema has changed: so has its stamp
                self._settle()
                db.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
        if version != SCHEMA_VERSION:
            raise SchemaMismatch(version, SCHEMA_VERSION)

    def _stamp(self) -> None:
        if self.key is not None:
            self.set_meta("owner", stamp_of(self.db, self.key))

    def _rollback(self) -> None:
        """ROLLBACK unless SQLite has already rolled back itself (a full disk, an I/O error):
        a second "cannot rollback - no transaction is active" would hide the first error."""
        self._forget_unindexed()
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")

    def _version(self) -> int | None:
        """The schema version: SQLite's user_version (in the file header: read before any
        table), or, in an index from before it was used (schema 3 to 6), the meta row."""
        version = self.db.execute("PRAGMA user_version").get
        if version:
            return version
        row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        try:
            return int(row[0]) if row else None
        except ValueError:
            return None

    def _set_version(self, version: int) -> None:
        """In the migration's transaction. The meta row is kept too, for older prima-memory
        versions, which read only that."""
        self.db.execute(f"PRAGMA user_version = {int(version)}")
        self.set_meta("schema_version", version)

    @property
    def schema_version(self) -> int | None:
        return self._version()

    def close(self) -> None:
        with self._errors():
            self.db.close()

    def _errors(self) -> _Errors:
        """`with store._errors():` driver errors raised inside, as the store's own (see _own),
        in one line."""
        return _Errors(self)

    def write(self, wait: float | None = None) -> _Transaction:
        """`with store.write():` the one way to write: commits, or rolls back on an exception.
        It holds the write lock from its start (waiting up to the busy timeout, or `wait`
        seconds, for another writer: Busy after that), so what it reads stays true until it
        commits: a deferred transaction that reads and then writes gets "database is locked" at
        once when another process writes meanwhile, since SQLite cannot wait there. Inside
        another write (or steps) it is a savepoint of it."""
        return _Transaction(self, True, wait)

    def read(self) -> _Transaction:
        """`with store.read():` reads that see one state of the index (a read transaction),
        unless in one already."""
        return _Transaction(self, False)

    def _chunked(self, sql: str, ids, before: tuple = (), after: tuple = ()) -> Iterator[tuple]:
        """The rows of `sql` for every id of `ids`, its "{}" an `IN (...)` list. Numbers and
        texts go as one JSON array (json_each): one statement, prepared once whatever their
        number, where a list of ?s was prepared again for each length (a cold index: a
        thousand times). Anything else (blobs) is asked 500 at a time (SQLite's limit on bound
        values is lower on some builds)."""
        ids = list(ids)
        if ids and all(type(i) is int or type(i) is str for i in ids):
            yield from self.db.execute(sql.format("SELECT value FROM json_each(?)"),
                                       (*before, jsontext.dumps(ids, compact=True), *after))
            return
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            yield from self.db.execute(sql.format(",".join("?" * len(part))),
                                       (*before, *part, *after))

    def _unindex(self, rowid: int, text: str) -> None:
        """A message's keyword row, kept for the commit (_settle). SQLite's full-text index
        writes what it holds to disk whenever a statement that may fail starts (a statement
        savepoint), which each file's writes hold: written at once, a cold index made a
        thousand small segments and merged them again and again (a sixth of its time)."""
        old = self._unindexed.get(rowid)
        if text:
            self._unindexed[rowid] = index_text(text)
            self.unindexed_chars += len(text)
        elif old is None:
            return
        else:
            del self._unindexed[rowid]
        self._undo.append((rowid, old))

    def _rewind(self, mark: int) -> None:
        """The keyword rows as they were when a savepoint rolled back now began."""
        while len(self._undo) > mark:
            rowid, old = self._undo.pop()
            if old is None:
                self._unindexed.pop(rowid, None)
            else:
                self._unindexed[rowid] = old

    def _settle(self) -> None:
        """Just before a commit: the keyword rows kept for it, and the titles changed (see
        _TITLES_STAGED), written in one go. A message deleted since its row was kept (a session
        read again) has none."""
        if self._unindexed:
            rows = self._unindexed
            alive = {i for (i,) in self._chunked("SELECT id FROM messages WHERE id IN ({})",
                                                  rows)}
            self.db.executemany("INSERT INTO messages_fts(rowid, text) VALUES (?, ?)",
                                ((i, t) for i, t in rows.items() if i in alive))
            self._forget_unindexed()
        if self.db.execute("SELECT EXISTS (SELECT 1 FROM titles_stale)").get:
            self.db.execute(_RETITLE)
        self._settled_at = self.db.total_changes()

    def _settled(self) -> None:
        """Before a keyword read: what this connection's own write has kept for its commit,
        written now, so the read sees it (a search, which writes nothing, asks nothing). Not
        inside a savepoint: its rollback would take rows kept before it with it."""
        if not self._savepoints and (self._unindexed or
                                     self.db.total_changes() != self._settled_at):
            self._settle()

    def _forget_unindexed(self) -> None:
        self._unindexed, self._undo, self.unindexed_chars = {}, [], 0

    # -- meta --------------------------------------------------------------------------------

    def get_meta(self, key: str, default=None):
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (text_of(key),)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value) -> None:
        # (keys may name a folder: one not UTF-8 is keyed by its U+FFFD spelling, alike both ways)
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                        (text_of(key), None if value is None else str(value)))

    def version(self) -> tuple[int, int]:
        """Changes whenever anything is committed to the index, by this connection or another:
        what a reader keeps of it (a search of all projects' exclusions) is read again."""
        return self.db.execute("PRAGMA data_version").get, self.db.total_changes()
