"""The SQLite engine behind the storage interfaces (one database per workspace, through apsw).
All SQL, FTS5 syntax and id packing of the package live in these modules, one a part of the
store:

    core      the connection, transactions and savepoints, driver errors made the storage's
              own, the keyword rows kept for the commit, the meta table
    schema    the tables, indexes and triggers, and the forward-only migrations
    folding   how text is folded and made ready for the tokenizer (no SQL)
    sessions  sessions and their messages, exchanges, file changes and tool calls
    text      the keyword index: tokens, terms, word queries as FTS5 MATCH, facts for ranking
    files     the file ledger: what was read of each source file
    vectors   embeddings and the similarity edges
    store     Store: all of the above as one, with upkeep (tidy, scrub) and recovery

Each part is a class the next one extends (Core, Sessions, TextIndex, FileLedger, Vectors,
Store): a chain, not mixins side by side, so each part's calls to those below it are checked.
"""
from .core import is_corruption, is_store_error, move_aside, own_error, stamp_of
from .folding import fold, index_text
from .schema import SCHEMA_VERSION
from .store import Store


__all__ = ["SCHEMA_VERSION", "Store", "fold", "index_text", "is_corruption", "is_store_error",
           "move_aside", "own_error", "stamp_of"]
