"""The team server's engine: PostgreSQL with pgvector and pg_trgm (docs/team-memory.md).
Only a team's commands import it (psycopg is the `team` extra)."""
from .schema import SCHEMA_VERSION
from .store import TeamDenied, TeamError, TeamOutdated, TeamStore, TeamUnreachable, where

__all__ = ["SCHEMA_VERSION", "TeamDenied", "TeamError", "TeamOutdated", "TeamStore",
           "TeamUnreachable", "where"]
