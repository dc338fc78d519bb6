"""Storage: what prima-memory keeps of its histories, behind small interfaces (see
interfaces.py: Sessions, TextIndex, FileLedger, Vectors, Meta, Upkeep), and the SQLite engine that
implements them (sqlite/); a team's server is the PostgreSQL engine (postgres/, imported only by
a team's commands), which answers the reads search and `show` make. Nothing outside this
package writes SQL or FTS5 syntax, packs a message id, or imports the driver: callers ask
questions ("the sessions holding this word, with counts") with the types named here
(shared.py), and get rows as named tuples.

    Store         the index of one workspace (sqlite.Store)
    rows          SessionRow, FileRow, MessageRow, ... : what reads return
    Words         a word query: groups of alternative terms, every group required;
                  AnyWords: any of several
    session_of    a message id's session (ints and numpy arrays); first_id, last_id
    errors        StoreError and its kinds, raised for every driver error
"""
from .shared import (AnyWords, Busy, CantOpen, CorruptIndex, DiskFull, ExchangeRow, FAILED,
                     FailedCall, FileChangeRow, FileRow, ForeignIndex, LastCall, MessageRow,
                     ReadOnly, SchemaMismatch, SessionFacts, SessionRow, StoreError,
                     TooManyMessages, ToolCallRow, Words, count_by_session, first_id, last_id, ordinal_of,
                     session_of)
from .sqlite import (SCHEMA_VERSION, Store, fold, index_text, is_corruption, is_store_error,
                     move_aside, own_error)

__all__ = ["FAILED", "AnyWords", "Words", "SCHEMA_VERSION", "Busy", "CantOpen", "CorruptIndex", "DiskFull",
           "ExchangeRow", "FailedCall", "FileChangeRow", "FileRow", "ForeignIndex", "LastCall",
           "MessageRow", "SessionFacts", "ToolCallRow", "ReadOnly", "SchemaMismatch", "SessionRow", "Store",
           "StoreError", "TooManyMessages", "count_by_session", "first_id", "fold", "index_text", "is_corruption",
           "is_store_error", "last_id", "move_aside", "ordinal_of", "own_error", "session_of"]
