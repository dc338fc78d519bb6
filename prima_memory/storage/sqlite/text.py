"""The keyword index. Messages are indexed in a contentless FTS5 table (unicode61,
detail=none) and every distinct token goes into `terms`, itself indexed by trigrams, which turns
the substring rule ("room" finds "bedroom") into a lookup of the tokens that contain the query
word. Word queries (storage.Words) become FTS5 MATCH expressions here and nowhere else; the
facts the keyword ranking reads (and its ORDER BY, from ranking.KEYWORD) too."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterator


from ..shared import AnyWords, SHIFT, SessionFacts, Words, count_by_session
from .folding import _NON_ASCII, _like, fold
from .schema import _OWN, _TITLE
from .sessions import Sessions


_CHAR_SESSIONS = 0x10FFFF - 2048  # the sessions a code point can number (see _per_session)



def _quoted(term: str) -> str:
    """A term as an FTS5 string: the term alone, whatever it holds."""
    return '"' + term.replace('"', '""') + '"'


def _match(query: Words | AnyWords) -> str:
    """A word query as an FTS5 MATCH expression: each group its terms OR-ed, the groups AND-ed;
    AnyWords' each in parentheses, OR-ed. (Only a query that can find something is asked.)"""
    if isinstance(query, AnyWords):
        return " OR ".join(f"({_match(w)})" for w in query.words)
    return " AND ".join("(" + " OR ".join(_quoted(t) for t in g) + ")" for g in query.groups)



def _number(x: float) -> str:
    """A weight of the formula as an SQL literal (a number, never text)."""
    return repr(int(x) if x == int(x) else float(x))


def _returnable(since=None, until=None, branch=None, tag=None, source=None,
                extracts: bool = False) -> tuple[str, tuple]:
    """The WHERE clause (and its arguments) of the sessions a search may return: see
    Store.session_facts."""
    where, args = ["started_at IS NOT NULL", _OWN], []
    if not extracts and source != "extract":
        where.append("source != 'extract'")
    for value, test in ((since, "COALESCE(ended_at, started_at) >= ?"),
                        (until, "started_at <= ?"), (branch, "COALESCE(branch, '') = ?"),
                        (tag and tag.lower(), "instr(' ' || COALESCE(tags, '') || ' ', "
                                              "' ' || ? || ' ') > 0"),
                        (source, "source = ?")):
        if value is not None:
            where.append(test)
            args.append(value)
    return " AND ".join(where), tuple(args)


class TextIndex(Sessions):
    # -- tokens and terms ----------------------------------------------------------------------

    def tokens(self, text: str) -> set[str]:
        return self._tokens.tokens(text)

    def token_list(self, text: str) -> list[str]:
        return self._tokens.token_list(text)

    def add_terms(self, terms) -> None:
        """Add tokens to the vocabulary (`index_terms` makes them findable by substring)."""
        self.db.executemany("INSERT OR IGNORE INTO terms(term) VALUES (?)", ((t,) for t in terms))

    def index_terms(self) -> None:
        """Put the terms added since the last call into the trigram index (ids only grow), once
        per transaction: per-call trigram inserts cost more than all the rest of indexing."""
        done = int(self.get_meta("terms_indexed", 0))
        last = self.db.execute("SELECT COALESCE(max(id), 0) FROM terms").get
        if last > done:
            self.db.execute("INSERT INTO terms_tri(rowid, term) SELECT id, term FROM terms "
                            "WHERE id > ?", (done,))
            self.set_meta("terms_indexed", last)

    def terms_containing(self, run: str, limit: int) -> list[str] | None:
        """Index terms that contain `run`; None when more than `limit` do (too broad to list)."""
        if len(run) >= 3:
            rows = self.db.execute("SELECT term FROM terms_tri WHERE term LIKE ? LIMIT ?",
                                   (f"%{run}%", limit + 1))
        else:
            rows = self.db.execute("SELECT term FROM terms WHERE instr(term, ?) > 0 LIMIT ?",
                                   (run, limit + 1))
        out = [r[0] for r in rows]
        return None if len(out) > limit else out

    def terms_starting(self, stem: str, limit: int) -> list[str]:
        """Index terms that start with `stem`, at most `limit` (the shortest first)."""
        return [r[0] for r in self.db.execute(
            "SELECT term FROM terms WHERE term >= ? AND term < ? ORDER BY length(term) LIMIT ?",
            (stem, stem + "\U0010ffff", limit))]

    # -- keyword matching ----------------------------------------------------------------------

    def count_matching(self, query: Words | AnyWords) -> dict[int, int]:
        """session -> number of its messages the word query finds."""
        self._settled()
        return self._per_session(f"rowid >> {SHIFT}", "messages_fts WHERE messages_fts MATCH ?",
                                 (_match(query),))

    def count_holding(self, query: Words | AnyWords, text: str) -> dict[int, int]:
        """session -> number of its messages the word query finds whose text holds `text`
        (folded): a word with punctuation, whose tokens find more messages than hold it."""
        texts = self.message_texts(sorted(self.message_ids_matching(query)))
        return dict(count_by_session(mid for mid, t in texts.items() if text in fold(t)))

    def _per_session(self, session: str, source: str, args) -> dict[int, int]:
        """session -> how many rows of `source` (SQL after FROM) name it, `session` being the
        expression that does. The rows come back as one string, a character per row whose code
        point is its session (the surrogates skipped), which Counter counts in C: a common
        word's 20,000 matching messages cost 3 ms so, 5 as rows, 9 grouped by SQLite. Sessions
        past what code points can number are grouped by SQLite."""
        last = self.db.execute("SELECT max(id) FROM sessions").get or 0
        if last > _CHAR_SESSIONS:
            return dict(self.db.execute(f"SELECT {session}, count(*) FROM {source} GROUP BY 1",
                                        args))
        point = session if last < 55296 else f"({session}) + (({session}) >= 55296) * 2048"
        text = self.db.execute(f"SELECT group_concat(char({point}), '') FROM {source}",
                               args).get
        # the code points as machine ints (UTF-32 after its byte-order mark), counted
        counted = Counter(memoryview((text or "").encode("utf-32")).cast("I")[1:])
        if last >= 55296:  # (sessions past the surrogates' code points)
            return {(sid - 2048 if sid >= 0xE000 else sid): n for sid, n in counted.items()}
        return counted

    def message_ids_matching(self, query: Words | AnyWords, limit: int = -1) -> set[int]:
        """The messages the word query finds (at most `limit` of them: -1, all)."""
        self._settled()
        return {r[0] for r in self.db.execute(
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? LIMIT ?",
            (_match(query), limit))}

    def session_facts(self, since=None, until=None, branch=None, tag=None, source=None,
                      extracts: bool = False, ids=None) -> Iterator[SessionFacts]:
        """The facts of each session that a search may return:
        overlapping since..until, on the branch, carrying the tag, from the source; the
        extracts' own records only when asked (a deep search); of `ids` alone when given."""
        where, args = _returnable(since, until, branch, tag, source, extracts)
        sql = f"SELECT id, started_at, ended_at, files_count FROM sessions WHERE {where}"
        if ids is not None:
            return map(SessionFacts._make, self._chunked(sql + " AND id IN ({})", ids,
                                                         before=args))
        return map(SessionFacts._make, self.db.execute(sql, args))

    def best_facts(self, points: dict[int, float], n: int, files: tuple[float, float],
                   since=None, until=None, branch=None, tag=None, source=None,
                   extracts: bool = False) -> list[SessionFacts]:
        """session_facts() of the best `n` of `points`' sessions (session -> its points so far)
        that a search may return, each scoring its points and, `files` being (per file, at
        most), those of the files it changed (the keyword formula's: search.KEYWORD.files):
        the highest first, then the latest to end."""
        if not points:
            return []
        where, args = _returnable(since, until, branch, tag, source, extracts)
        given = "{" + ",".join(f'"{sid}":{pts!r}' for sid, pts in points.items()) + "}"
        per_file, most = files
        return list(map(SessionFacts._make, self.db.execute(
            "SELECT id, started_at, ended_at, files_count FROM (SELECT CAST(key AS INTEGER) "
            f"AS sid, value AS pts FROM json_each(?)) JOIN sessions ON id = sid WHERE {where} "
            f"ORDER BY pts + min({_number(most)}, {_number(per_file)} * files_count) DESC, "
            "ended_at DESC, id LIMIT ?", (given, *args, n))))

    def sessions_with_title_containing(self, text: str) -> set[int]:
        """Sessions whose title contains `text` (folded), compared folded: a phrase of the
        titles' trigrams is a substring of the folded title (a shorter text, which has no
        trigram, or one with a NUL, which ends an FTS5 query, is looked for in every title)."""
        if len(text) < 3 or "\0" in text:
            return {sid for sid, _t in self._containing(
                f"SELECT id, {_TITLE} AS t FROM sessions", text)}
        phrase = '"' + text.replace('"', '""') + '"'
        self._settled()
        return {r[0] for r in self.db.execute(
            "SELECT rowid FROM titles_tri WHERE titles_tri MATCH ?", (phrase,))}

    def sessions_with_path_containing(self, text: str) -> dict[int, int]:
        """session -> number of distinct changed paths containing `text` (folded), compared
        folded."""
        paths = self._paths_with(text)
        out: dict[int, int] = {}
        for i in range(0, len(paths), 500):  # (SQLite's limit on bound values)
            part = paths[i:i + 500]
            got = self._per_session("session", "path_sessions WHERE path IN "
                                    f"({','.join('?' * len(part))})", part)
            if not out:
                out = got
                continue
            for sid, n in got.items():
                out[sid] = out.get(sid, 0) + n
        return out

    def _paths_with(self, text: str) -> list[str]:
        return [p for p, _t in self._containing("SELECT path, path AS t FROM changed_paths", text)]

    def paths_containing(self, text: str) -> dict[str, list[int]]:
        """changed path containing `text` (folded) -> the sessions that changed it."""
        paths = self._paths_with(text)
        out: dict[str, list[int]] = {}
        for i in range(0, len(paths), 500):  # (SQLite's limit on bound values)
            part = paths[i:i + 500]
            for path, sid in self.db.execute("SELECT path, session FROM path_sessions WHERE "
                                              f"path IN ({','.join('?' * len(part))})", part):
                out.setdefault(path, []).append(sid)
        return out

    def started_since(self, since: float) -> dict[int, float]:
        """session -> its start, of the sessions started after `since` (recency's week)."""
        return dict(self.db.execute("SELECT id, started_at FROM sessions WHERE started_at > ?",
                                    (since,)))

    def _containing(self, select: str, text: str):
        """(id, t) of the rows of `select` whose t contains `text` (folded), in one pass: LIKE
        ignores ASCII case, exact for an ASCII query against ASCII text, which is most; text
        beyond ASCII is compared folded (in "cafe\u0301" LIKE sees "cafe", folded it is
        "café")."""
        if not text.isascii():
            return [(i, t) for i, t in self.db.execute(select) if text in fold(t)]
        rows = self.db.execute(f"SELECT * FROM ({select}) WHERE t GLOB ?1 OR t LIKE ?2 "
                               "ESCAPE '\\'", (_NON_ASCII, _like(text)))
        return [(i, t) for i, t in rows if t.isascii() or text in fold(t)]

    def all_message_texts(self, hint: str | None = None):
        """(id, text) of every message with text: the slow path for queries with no usable token
        (`hint`, the word looked for, lets another engine send fewer: this one reads them all).
        (A generator here, not a cursor, so a text that fails to decode fails in this module:
        see is_corruption.)"""
        yield from self.db.execute("SELECT id, text FROM messages WHERE text != ''")

    def session_matches(self, session: int, query: Words | AnyWords):
        """(id, text) of a session's messages the word query finds, newest first,
        their texts read a few at a time (the caller may stop early)."""
        lo, hi = session << SHIFT, ((session + 1) << SHIFT) - 1
        self._settled()
        ids = [r[0] for r in self.db.execute(
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? AND rowid BETWEEN ? AND ? "
            "ORDER BY rowid DESC", (_match(query), lo, hi))]
        for a, b in ((0, 3), *((i, i + 8) for i in range(3, len(ids), 8))):  # (3: enough, mostly)
            texts = self.message_texts(ids[a:b])
            yield from ((mid, texts[mid]) for mid in ids[a:b] if mid in texts)

    def session_message_texts(self, session: int, newest_first: bool = False):
        """(id, text) of a session's messages: its rowid range, in id order."""
        lo, hi = session << SHIFT, ((session + 1) << SHIFT) - 1
        order = "DESC" if newest_first else "ASC"
        yield from self.db.execute(f"SELECT id, text FROM messages WHERE id BETWEEN ? AND ? "
                                   f"AND text != '' ORDER BY id {order}", (lo, hi))
