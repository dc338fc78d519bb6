"""The team server's schema (PostgreSQL with pgvector and pg_trgm), as forward-only steps.

Everything lives in the schema `prima`. Its version is the highest row of `prima.version`; each
step runs in one transaction under an advisory lock, so two admins migrating at once apply it
once. A client whose SCHEMA_VERSION is older than the server's reads but refuses to write
(store.TeamStore.check_writable).

Who sees what is PostgreSQL's own row-level security, by role:
  - `prima_member`: the group role every member's login role is in. A member reads the rows of
    the projects shared with a team of theirs (`prima.readable()`), and their own; writes rows
    only as themselves, and only into those projects.
  - `prima_admin`: may remove any rows (and, as the owner of the tables, sets up the rest).
Rows are keyed as on the member's machine: (member, source, session id), and within a session
by its messages' ordinals, so a publish retried, or made from two machines of one member,
writes the same rows again and never a second copy.
"""
from __future__ import annotations

SCHEMA_VERSION = 1

# What every member's row carries: who wrote it, for which project (the policies read these).
_MEMBER_ROWS = ("sessions", "messages", "file_changes", "windows")

# The functions that run as the tables' owner: members and admins alone may call them.
_OWNERS = ", ".join(f"prima.{f}" for f in (
    "my_projects()", "messages_matching(tsquery, bigint)", "texts_matching(tsquery)",
    "terms_like(text, bigint)", "titles_like(text)", "paths_like(text)",
    "drop_unheld(text, text[])"))

_STEP_1 = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
DO $$ BEGIN CREATE ROLE prima_member NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
DO $$ BEGIN CREATE ROLE prima_admin NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
CREATE SCHEMA IF NOT EXISTS prima;
GRANT USAGE ON SCHEMA prima TO prima_member, prima_admin;

-- a member's name as the team reads it (a role name is what the server checks)
CREATE TABLE prima.members(member name PRIMARY KEY DEFAULT current_user,
  name text NOT NULL, joined_at timestamptz NOT NULL DEFAULT now());
-- a team's members, and the projects (as the team names them: their git remote) it shares
CREATE TABLE prima.teams(team text NOT NULL, member name NOT NULL, PRIMARY KEY(team, member));
CREATE TABLE prima.projects(project text NOT NULL, team text NOT NULL,
  PRIMARY KEY(project, team));

CREATE TABLE prima.sessions(
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  member name NOT NULL DEFAULT current_user, source text NOT NULL, session_id text NOT NULL,
  project text NOT NULL, label text NOT NULL, branch text, author text, title text NOT NULL,
  title_folded text NOT NULL, started_at double precision, ended_at double precision,
  tags text NOT NULL DEFAULT '', decisions text NOT NULL DEFAULT '',
  message_count integer NOT NULL DEFAULT 0, files_count integer NOT NULL DEFAULT 0,
  published_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE(member, source, session_id));
CREATE INDEX sessions_project ON prima.sessions(project);
CREATE INDEX sessions_started ON prima.sessions(started_at);
CREATE INDEX sessions_title ON prima.sessions USING gin (title_folded gin_trgm_ops);

-- a message's id packs its session and its ordinal there, as on the member's machine
-- (storage.shared.SHIFT): search reads a message's session from its id
CREATE TABLE prima.messages(
  session bigint NOT NULL REFERENCES prima.sessions ON DELETE CASCADE,
  seq integer NOT NULL CHECK (seq >= 0 AND seq < 16777216),
  id bigint GENERATED ALWAYS AS ((session << 24) | seq) STORED,
  key text NOT NULL, role text NOT NULL, ts double precision,
  sidechain smallint NOT NULL DEFAULT 0, pair integer, text text NOT NULL,
  -- the tokens the member's own keyword index made of the text, as lexemes: no parser of
  -- the server's decides what a word is, so a word matches here as it does at home
  lexemes tsvector NOT NULL,
  member name NOT NULL DEFAULT current_user, project text NOT NULL,
  PRIMARY KEY(session, seq));
CREATE UNIQUE INDEX messages_id ON prima.messages(id);
CREATE INDEX messages_lexemes ON prima.messages USING gin (lexemes);

-- the words of each project's messages, found by any part of them (trigrams): "room" finds
-- "bedroom", as the member's own terms_tri does
CREATE TABLE prima.terms(project text NOT NULL, term text NOT NULL, PRIMARY KEY(project, term));
CREATE INDEX terms_trigrams ON prima.terms USING gin (term gin_trgm_ops);
CREATE INDEX terms_term ON prima.terms(term text_pattern_ops);

CREATE TABLE prima.file_changes(
  session bigint NOT NULL REFERENCES prima.sessions ON DELETE CASCADE,
  n integer NOT NULL, path text NOT NULL, path_folded text NOT NULL, tool text,
  explanation text, ts double precision,
  member name NOT NULL DEFAULT current_user, project text NOT NULL,
  PRIMARY KEY(session, n));
CREATE INDEX file_changes_path ON prima.file_changes USING gin (path_folded gin_trgm_ops);

-- each embedded exchange's windows, computed on the member's machine (the server has no model);
-- an exchange is its reply's message id (its prompt: the reply's `pair`)
CREATE TABLE prima.windows(
  session bigint NOT NULL REFERENCES prima.sessions ON DELETE CASCADE,
  exchange bigint NOT NULL, n smallint NOT NULL, model text NOT NULL,
  v vector(384) NOT NULL,
  member name NOT NULL DEFAULT current_user, project text NOT NULL,
  PRIMARY KEY(session, exchange, n, model));
CREATE INDEX windows_nearest ON prima.windows USING hnsw (v vector_cosine_ops);
CREATE INDEX windows_session ON prima.windows(session);

-- a forgotten session, and its messages' keys (a fork copies them): never published again
CREATE TABLE prima.tombstones(member name NOT NULL DEFAULT current_user, source text NOT NULL,
  session_id text NOT NULL, at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY(member, source, session_id));
CREATE TABLE prima.forgotten_keys(member name NOT NULL DEFAULT current_user, key text NOT NULL,
  PRIMARY KEY(member, key));

CREATE FUNCTION prima.readable() RETURNS text[] LANGUAGE sql STABLE AS
  $f$ SELECT coalesce(array_agg(DISTINCT project), '{}') FROM prima.projects $f$;

-- The lookups a search makes by word and by part of a word. Row-level security lets PostgreSQL
-- use an index only for a condition that is leakproof, which a word match (@@) and LIKE are
-- not: through the policies every message would be read. These functions run as the tables'
-- owner, with the index, and apply the policies' own rule to the member connected
-- (session_user: their login role): their own rows, and the projects of their teams.
CREATE FUNCTION prima.my_projects() RETURNS text[] LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp AS
  $f$ SELECT coalesce(array_agg(DISTINCT p.project), '{}') FROM prima.projects p
      JOIN prima.teams t ON t.team = p.team WHERE t.member = session_user $f$;
CREATE FUNCTION prima.messages_matching(q tsquery, lim bigint) RETURNS SETOF bigint
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
  $f$ SELECT m.id FROM prima.messages m WHERE m.lexemes @@ q AND (m.member = session_user
      OR m.project = ANY ((SELECT prima.my_projects())::text[])) LIMIT lim $f$;
CREATE FUNCTION prima.texts_matching(q tsquery) RETURNS TABLE(id bigint, text text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
  $f$ SELECT m.id, m.text FROM prima.messages m WHERE m.lexemes @@ q AND (m.member = session_user
      OR m.project = ANY ((SELECT prima.my_projects())::text[])) $f$;
CREATE FUNCTION prima.terms_like(pattern text, lim bigint) RETURNS SETOF text
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
  $f$ SELECT DISTINCT t.term FROM prima.terms t WHERE t.term LIKE pattern
      AND t.project = ANY ((SELECT prima.my_projects())::text[]) LIMIT lim $f$;
CREATE FUNCTION prima.titles_like(pattern text) RETURNS SETOF bigint
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
  $f$ SELECT s.id FROM prima.sessions s WHERE s.title_folded LIKE pattern AND
      (s.member = session_user OR s.project = ANY ((SELECT prima.my_projects())::text[])) $f$;
CREATE FUNCTION prima.paths_like(pattern text) RETURNS TABLE(session bigint, path text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
  $f$ SELECT f.session, f.path FROM prima.file_changes f WHERE f.path_folded LIKE pattern AND
      (f.member = session_user OR f.project = ANY ((SELECT prima.my_projects())::text[])) $f$;
-- The words of a project no message holds any more (after a forget, a leave), dropped from its
-- vocabulary: a member deletes none of it otherwise (others' searches rest on it).
CREATE FUNCTION prima.drop_unheld(p text, words text[]) RETURNS void
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
  $f$ DELETE FROM prima.terms t WHERE t.project = p AND t.term = ANY (words)
      AND p = ANY ((SELECT prima.my_projects())::text[]) AND NOT EXISTS (SELECT 1 FROM
      prima.messages m WHERE m.project = p AND m.lexemes @@ quote_literal(t.term)::tsquery) $f$;
REVOKE EXECUTE ON FUNCTION {_OWNERS} FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {_OWNERS} TO prima_member, prima_admin;

CREATE FUNCTION prima.not_tombstoned() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  IF EXISTS (SELECT 1 FROM prima.tombstones WHERE member = NEW.member AND source = NEW.source
             AND session_id = NEW.session_id) THEN
    RETURN NULL;
  END IF;
  RETURN NEW;
END $f$;
CREATE TRIGGER sessions_tombstoned BEFORE INSERT ON prima.sessions
  FOR EACH ROW EXECUTE FUNCTION prima.not_tombstoned();
CREATE FUNCTION prima.key_not_forgotten() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  IF EXISTS (SELECT 1 FROM prima.forgotten_keys WHERE member = NEW.member AND key = NEW.key) THEN
    RETURN NULL;
  END IF;
  RETURN NEW;
END $f$;
CREATE TRIGGER messages_forgotten BEFORE INSERT ON prima.messages
  FOR EACH ROW EXECUTE FUNCTION prima.key_not_forgotten();

GRANT SELECT ON prima.teams, prima.projects TO prima_member;
GRANT SELECT, INSERT, UPDATE ON prima.members TO prima_member;
GRANT SELECT, INSERT, UPDATE, DELETE ON prima.sessions, prima.messages, prima.file_changes,
  prima.windows TO prima_member;
GRANT SELECT, INSERT ON prima.terms TO prima_member;
GRANT SELECT, INSERT ON prima.tombstones, prima.forgotten_keys TO prima_member;
GRANT SELECT, DELETE ON prima.sessions, prima.messages, prima.file_changes, prima.windows,
  prima.terms, prima.tombstones, prima.forgotten_keys TO prima_admin;

ALTER TABLE prima.teams ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON prima.teams FOR SELECT TO prima_member USING (member = current_user);
ALTER TABLE prima.projects ENABLE ROW LEVEL SECURITY;
CREATE POLICY of_my_teams ON prima.projects FOR SELECT TO prima_member
  USING (team IN (SELECT team FROM prima.teams));
ALTER TABLE prima.members ENABLE ROW LEVEL SECURITY;
CREATE POLICY read ON prima.members FOR SELECT USING (true);
CREATE POLICY own ON prima.members FOR INSERT WITH CHECK (member = current_user);
CREATE POLICY own_update ON prima.members FOR UPDATE USING (member = current_user);
ALTER TABLE prima.terms ENABLE ROW LEVEL SECURITY;
CREATE POLICY shared ON prima.terms FOR SELECT USING (project = ANY ((SELECT prima.readable())::text[]));
CREATE POLICY shared_insert ON prima.terms FOR INSERT TO prima_member
  WITH CHECK (project = ANY ((SELECT prima.readable())::text[]));
CREATE POLICY admin ON prima.terms FOR ALL TO prima_admin USING (true);
ALTER TABLE prima.tombstones ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON prima.tombstones FOR ALL TO prima_member USING (member = current_user)
  WITH CHECK (member = current_user);
CREATE POLICY admin ON prima.tombstones FOR ALL TO prima_admin USING (true);
ALTER TABLE prima.forgotten_keys ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON prima.forgotten_keys FOR ALL TO prima_member USING (member = current_user)
  WITH CHECK (member = current_user);
CREATE POLICY admin ON prima.forgotten_keys FOR ALL TO prima_admin USING (true);
""".replace("{_OWNERS}", _OWNERS) + "".join(f"""
ALTER TABLE prima.{t} ENABLE ROW LEVEL SECURITY;
CREATE POLICY shared ON prima.{t} FOR SELECT
  USING (member = current_user OR project = ANY ((SELECT prima.readable())::text[]));
CREATE POLICY own_insert ON prima.{t} FOR INSERT TO prima_member
  WITH CHECK (member = current_user AND project = ANY ((SELECT prima.readable())::text[]));
CREATE POLICY own_update ON prima.{t} FOR UPDATE TO prima_member USING (member = current_user)
  WITH CHECK (member = current_user AND project = ANY ((SELECT prima.readable())::text[]));
CREATE POLICY own_delete ON prima.{t} FOR DELETE TO prima_member USING (member = current_user);
CREATE POLICY admin ON prima.{t} FOR ALL TO prima_admin USING (true);
""" for t in _MEMBER_ROWS)

# version -> the step that makes it from the one before. Steps are only ever added.
STEPS = {1: _STEP_1}
assert sorted(STEPS) == list(range(1, SCHEMA_VERSION + 1))

# the advisory lock two admins' migrations take (any fixed number: "prima" in ASCII)
MIGRATE_LOCK = 0x7072696D61

VERSION_TABLE = """
CREATE SCHEMA IF NOT EXISTS prima;
CREATE TABLE IF NOT EXISTS prima.version(version integer PRIMARY KEY,
  at timestamptz NOT NULL DEFAULT now());
GRANT USAGE ON SCHEMA prima TO PUBLIC;
GRANT SELECT ON prima.version TO PUBLIC;
"""
