"""One data API over a memory: each function returns plain data (what `--json` prints), and
the front ends only render it (commands.py as text, mcp_server.py as a tool result, the hooks
as context for Claude). No front end imports the store, the indexer, the search or the
embeddings: they ask here.

A request reads a scope (scope.py): a workspace's memory or every project's, the same
functions for both. It has two steps: `bring_up`, which a front end or hook runs first and is
the only one that writes (what changed indexed, new exchanges embedded, within budgets), and
the read (`search`, `recent`, `show`, `files`, `similar`, `digest`), which only reads, in one
read transaction of each index. The scope's `guarded` runs both, the one place a request is
tried again (a damaged index made again, a busy one waited for once).

A session is shown from its view (session_view.py): where it stopped, its first and last
requests, its excerpts are defined there once.

Errors are errors.PrimaError: UsageError for a wrong request, Failure for one that cannot be
done now.
"""
from __future__ import annotations

import os
import time

from . import background as bg
from . import failures, hints, jsontext
from . import workspace as wsmod
from .errors import Failure, UsageError
from .memory import ALL, LOCK_SECONDS, DiskFull, IndexBusy, IndexReadOnly, Memory
from .sources.registry import CLAUDE_CODE, FALLBACKS, OTHERS, SOURCES, source_named
from .sources.registry import fallback_search, fallback_status
from .storage import Busy, FailedCall, Store, StoreError, session_of
from .timeparse import iso_utc, local, parse_when
from .wording import cut, short_path
from .workspace import path_variants

TYPE_CHECKING = False  # (typing's own costs the hooks, which import this module, an import)
if TYPE_CHECKING:
    from . import session_view
    from .indexer import Report
    from .projects import AllProjects
    from .search import Filters


def call(ws: str, fn, *, before_start=None, home: str | None = None):
    """fn(memory) on the workspace's memory, guarded (scope.Scope.guarded), then closed.
    `before_start`, `home`: see Memory."""
    mem = Memory(ws, before_start=before_start, home=home)
    try:
        return mem.guarded(lambda: fn(mem))
    finally:
        mem.close()


def memory_home(ws: str) -> str | None:
    """Where a workspace's memory lives when not in its own .prima-memory: the home folder's in
    the user-level store (its sessions are no project's, and nothing is written in ~), unless
    it has a .prima-memory already (an older prima-memory's, or the user's own `index`)."""
    if ws != wsmod.home_folder() or wsmod.is_real_dir(wsmod.data_dir(ws)):
        return None
    return wsmod.detached_dir(ws)


def open_memory(ws: str, *, lasting: bool = False) -> Memory:
    """The workspace's memory, for a caller that holds it open itself (a hook, the MCP server)
    and runs requests on it with `guarded`; `close()` it when done. `lasting`: for a process
    that serves many requests (the MCP server), not one."""
    mem = Memory(ws, home=memory_home(ws))
    mem.lasting = lasting
    return mem


def all_projects(mine: Memory | None = None, *, budget: float | None = None) -> AllProjects:
    """Every project's memory, for a request over all of them: pass it where a Memory goes
    (search, recent, similar, files, show, export, status) and close() it when done. `mine`:
    the caller's own workspace memory, used for its project; `budget`: seconds a request spends
    bringing the projects up to date (None: all of it; a hook or the MCP server give less, and
    a background run does the rest)."""
    from .projects import AllProjects  # (a request of every project's)
    every = AllProjects(mine)
    every.budget = budget
    return every


def team(ws: str, mine: Memory | None = None):
    """The team's memory this workspace joined (team.Team: search, show and recent read it)."""
    from .team import Team  # (a team's reads only)
    return Team(ws, mine)


def other_history(ws: str) -> bool:
    """Whether another agent's sessions (Codex, VS Code, a shared log) belong to this folder,
    where Claude Code keeps no history and no memory exists yet."""
    return any(src.holds(ws) for src in OTHERS + FALLBACKS)


def holds_nothing(ws: str) -> bool:
    """Whether the workspace's index holds no session (or there is none); an index that cannot
    be read counts as holding something: it is not passed over."""
    path = wsmod.index_path(ws)
    if not os.path.lexists(path):
        return True
    try:
        store = Store(path, readonly=True)
    except StoreError:
        return False
    try:
        return store.count_sessions() == 0
    except StoreError:
        return False
    finally:
        store.close()


def error_line(e: BaseException, limit: int = 300) -> str:
    """An error as one line of at most `limit` characters (its type when it says nothing)."""
    return " ".join(str(e).split())[:limit] or type(e).__name__


def clean_text(text: str) -> str:
    """Text that UTF-8 can hold: a lone surrogate (a command-line byte that is not UTF-8, a cut
    emoji) becomes U+FFFD."""
    from .search import clean_text as clean  # the search module: not on the hooks' paths
    return clean(text)


def query_of(text: str) -> str:
    """A search's words as they are looked for; an empty query is a UsageError."""
    query = clean_text(text)
    if not query.strip():
        raise UsageError("the query is empty")
    return query


# -- the step before a read: the only one that writes ---------------------------------------------

class Ready:
    """What `bring_up` leaves for the read that follows: the warnings its answer carries first,
    and for a search by meaning the model (or why it could not load)."""
    __slots__ = ("warnings", "embedder", "why_not")

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.embedder = None
        self.why_not: str | None = None


def bring_up(scope, *, mode: str = "keyword", deep: bool = False, progress=None,
             embed_budget: float | None = None, index: bool = True) -> Ready:
    """The explicit, bounded step a front end runs before a read: what changed indexed
    (`index=False`: the caller did it, a hook within its own budget), a deep search's extracts
    read back, and for a search by meaning (`mode` semantic, combined or "similar") the model
    loaded and the new exchanges embedded within a budget (PRIMA_EMBED_BUDGET, or
    `embed_budget` when shorter, or until semantic.ANSWER_BY after the start), and for
    "similar" their SIMILAR_TO edges linked, for LINK_BUDGET seconds. What is left goes on in
    the background; the read answers from what is there."""
    started = time.monotonic()
    ready = Ready()
    early = Early.start(scope, mode)
    try:
        if index:
            scope.bring_up(ready.warnings, progress=progress, deep=deep)
        if mode != "keyword":
            if early:  # (a scope of all projects lists its memories once, for the read)
                early.prefetch([m for m, _x in scope.memories(ready.warnings)])
            ready.embedder, ready.why_not = _model(scope, early)
            if ready.embedder is not None:
                from .semantic import Settings  # (semantic work only)
                settings = Settings()
                budget = min(settings.budget, embed_budget if embed_budget is not None
                             else float("inf"))
                if settings.answer_by is not None:
                    budget = min(budget, max(0.0, started + settings.answer_by
                                             - time.monotonic()))
                scope.embed_new(ready.embedder, budget, ready.warnings)
                if mode == "similar":
                    scope.link_new(LINK_BUDGET, ready.warnings)
    finally:
        if early:
            early.wait()  # (a thread still loading must not outlive a failed request)
    return ready


def _model(scope, early=None):
    """(the model, None), or (None, why) when it cannot load: then a search answers by its
    words, and says so."""
    try:
        return (scope.embedder(load=early) if early else scope.embedder()), None
    except Exception as e:  # noqa: BLE001 - any failure to load means: keyword results, said so
        scope.log.warn(f"semantic search unavailable: {type(e).__name__}: {e}", once=True)
        return None, error_line(e)


def _meaning(scope, ready: Ready | None, mode: str):
    """A read's model: the one bring_up loaded (or why it could not), else loaded now; none for
    a keyword search."""
    if mode == "keyword":
        return None, None
    if ready is not None and (ready.embedder is not None or ready.why_not):
        return ready.embedder, ready.why_not
    return _model(scope)


def _read(scope, ready: Ready | None) -> tuple[list[str], list[Memory], list[set[int]]]:
    """A read's start: the warnings its answer carries (bring_up's first), the memories it
    reads and the sessions each leaves to another."""
    warnings = list(ready.warnings) if ready is not None else []
    opened = scope.memories(warnings)
    return warnings, [m for m, _x in opened], [x for _m, x in opened]


# Seconds a search waits for the model to load beside it, from when it first needs it (the load
# takes 0.3 s for the ONNX build, 6 s for sentence-transformers, more on a busy machine), before
# it answers by keywords, saying so: a load that hangs never hangs the search (#36). Tests make
# it short.
MODEL_WAIT = 120.0


class Early:
    """The model loaded on another thread while this one brings the index up to date (a
    cold process's combined search: onnxruntime makes its session without the GIL). Only for
    one workspace's memory, once per process. Its waits end MODEL_WAIT seconds after the first
    of them began (not the load: a cold index beside it may take longer): a load not done by
    then is given up, its thread (a daemon) left to end."""

    def __init__(self, brief: bool) -> None:
        import threading  # (only for a search by meaning)
        self._brief = brief
        self._result: list = []
        self._wants: tuple[str, int] | None = None  # the model's vector key and size, once known
        self._known = threading.Event()
        self._until: float | None = None  # (see _left)
        self._thread = threading.Thread(target=self._load, name="model", daemon=True)
        self._thread.start()

    @classmethod
    def start(cls, scope, mode: str) -> Early | None:
        if mode == "keyword" or not scope.early_model():
            return None
        return cls(brief=not scope.lasting)

    def _load(self) -> None:
        from . import embed  # semantic work only
        try:
            embed.offline_env()  # (numpy first: the other thread may read vectors once _known)
            self._wants = _wants()
        except Exception:  # noqa: BLE001 - the load itself says what is wrong
            pass
        finally:
            self._known.set()
        try:
            self._result.append(embed.load(brief=self._brief))
        except BaseException as e:  # noqa: BLE001 - given to the request's thread to raise
            self._result.append(e)

    def _left(self) -> float:
        """Seconds left to wait for the load: MODEL_WAIT from the first wait."""
        if self._until is None:
            self._until = time.monotonic() + MODEL_WAIT
        return max(0.0, self._until - time.monotonic())

    def wait(self) -> bool:
        """Whether the load has ended, waiting for it until the deadline at most."""
        self._thread.join(self._left())
        return bool(self._result)

    def prefetch(self, mems: list[Memory]) -> None:
        """The vectors the model will want, read on this thread while the other loads it: known
        from the files alone (embed.expected_build), so they are ready when the model is."""
        if not self._known.wait(self._left()) or self._wants is None:
            return
        from . import semantic  # (as above)
        for m in mems:
            try:
                semantic.prefetch(m.store(), *self._wants)
            except Exception as e:  # noqa: BLE001 - the search reads them again, and says why
                m.log.info(f"vectors not read ahead: {type(e).__name__}: {e}")

    def __call__(self):
        """The model, or the exception its load raised (see Memory.embedder's `load`); one
        that has not loaded by the deadline is unavailable to this search."""
        if not self.wait():
            from .embed import ModelLate  # (loaded by the other thread already)
            raise ModelLate(f"the model did not load within {MODEL_WAIT:g}s")
        got = self._result[0]
        if isinstance(got, BaseException):
            raise got
        return got


def _wants() -> tuple[str, int] | None:
    """The vector key and size the model will have once loaded, known without loading it: for
    the model that comes with prima-memory (another's size is known only from its load)."""
    from . import embed  # semantic work only
    from .semantic import Settings, vector_key
    model = embed.model_name(embed.model_dir())
    if model != embed.MODEL:
        return None
    return vector_key(model, Settings(), embed.expected_build()), embed.DIM


def catch_up(mem: Memory) -> None:
    """Index what changed in every source without waiting (the MCP server's idle work): a
    busy lock means a hook is indexing already, and any other trouble waits for a request to
    say it."""
    try:
        mem.update(sources=ALL, lock_timeout=0, quick=True)
    except Failure:
        pass


# -- what the hooks ask ----------------------------------------------------------------------------

def update(mem: Memory, *, lock_timeout: float, budget: float | None,
           only_session: str | None = None, quick: bool = False,
           extracts: bool = True) -> Report | None:
    """A hook's update of the index, within its budget (see Memory.update): the indexer's
    report, or None when the index is busy, read-only or its disk full, which is logged, not
    raised: the hook answers from what the index holds, and the next run catches up."""
    try:
        return mem.update(lock_timeout=lock_timeout, budget=budget, only_session=only_session,
                          quick=quick, extracts=extracts)
    except (IndexBusy, Busy):
        mem.log.info("hook: index busy, leaving the update to the next run")
    except IndexReadOnly as e:
        mem.log.info(f"hook: {e}")
    except DiskFull as e:  # the briefing still answers from what the index holds
        mem.log.warn(f"hook: {e}")
    return None


def briefing(mem: Memory, *, exclude_session: str | None = None, chars: int | None = None) -> str:
    """The SessionStart briefing: the latest sessions but `exclude_session` (the one starting),
    within `chars` (briefing.py), or "" when there is none."""
    from . import session_view  # (the views of sessions: not a search's)
    from . import briefing as text  # the renderer: only SessionStart imports it
    store = mem.store()
    rows = [r for r in store.recent_sessions(text.MAX_SESSIONS + 1)
            if r.session_id != exclude_session][:text.MAX_SESSIONS]
    return text.render([session_view.build(store, r, paths=True, open_end=True) for r in rows],
                       chars=chars, ws=mem.ws)


def checkpoint(mem: Memory, session_id: str, trigger: str | None = None) -> str | None:
    """Write a checkpoint of the Claude Code session `session_id` (checkpoints.py); its path, or
    None when the index does not hold that session."""
    from . import session_view  # (the views of sessions: not a search's)
    from . import checkpoints  # the writer: only PreCompact imports it
    store = mem.store()
    row = store.session_by_session_id(session_id, CLAUDE_CODE.name)  # Claude's own
    if row is None:
        return None
    view = session_view.build(store, row, requests=True, changes=True,
                              exchanges=checkpoints.EXCHANGES)
    return checkpoints.write(view, mem.ws, trigger, base=mem.dir)


# -- sessions as data -----------------------------------------------------------------------------

def way_back(row, ws: str, every: bool | str = False) -> dict:
    """How to return to a session, as shell commands that run as printed from any folder: print
    it (`show`; found among all projects for a hit of all of them, on the team's server for a
    team's), or continue it in its agent from its own folder (`resume`; the workspace when the
    folder it was recorded in is gone, and made again, empty, when that is gone too: the agent
    finds the session by its folder). A teammate's session is shown, never resumed here."""
    if every == "team":
        return {"show": hints.show(row.session_id, ws, team=True)}
    out = {"show": hints.show(row.session_id, None if every else ws)}
    src = source_named(row.source)
    if src is not None and src.resume:
        folder = row.cwd if row.cwd and os.path.isdir(row.cwd) else ws
        out["resume"] = hints.resume(src.resume, row.session_id, folder,
                                     make=not os.path.isdir(folder))
    return out


def session_json(row, ws: str, origin=None, every: bool | str = False) -> dict:
    """A session as data; `origin`: the session it was forked or resumed from (the one holding
    the messages its first lines copy), if any; `every` (a scope's `wide`): a hit of all
    projects, which names the project (`workspace`) whose memory holds it, or ("team") of the
    team's server, which names the member who published it (`project`: as the team knows it)."""
    return {
        **({"member": row.author, "team": True} if every == "team" else
           {"workspace": ws} if every else {}),
        "session_id": row.session_id,
        "title": row.title,
        "source": row.source,
        "label": row.label,
        "started_at": iso_utc(row.started_at),
        "ended_at": iso_utc(row.ended_at),
        "project": row.cwd,
        "branch": row.branch or None,
        "tags": row.tag_list,
        "author": row.author,
        "archived": bool(row.archived),
        "message_count": row.message_count,
        "origin": None if origin is None else {"session_id": origin.session_id,
                                               "title": origin.title},
        **way_back(row, ws, every),
    }


def filters(since: str | None = None, until: str | None = None, branch: str | None = None,
            tag: str | None = None, source: str | None = None) -> Filters:
    from .search import Filters  # the search module: not imported by the hooks' paths
    start = _when(since) if since else None
    end = _when(until, end_of_day=True) if until else None
    return Filters(since=start, until=end, branch=branch, tag=tag, source=source)


def _when(text: str, end_of_day: bool = False) -> float:
    try:
        ts = parse_when(text, end_of_day=end_of_day)
        iso_utc(ts)  # a time no calendar shows (before year 1, past 9999) is refused here
        return ts
    except ValueError as e:
        if str(e).startswith("not a date"):
            raise UsageError(str(e)) from None
        raise UsageError(f"{text[:40]!r} is out of range ({e})") from None
    except (OverflowError, OSError) as e:
        raise UsageError(f"{text[:40]!r} is out of range ({e})") from None


# -- the requests ---------------------------------------------------------------------------------

def search(scope, query: str, *, mode: str = "combined", limit: int = 10,
           filters: Filters | None = None, deep: bool = False, context: int = 0,
           ready: Ready | None = None) -> dict:
    """Sessions matching the query, best first, with the warnings first (bring_up's, then the
    search's); `context`: the turn that matched best and that many turns each side of it.
    `ready`: what bring_up left (without it, the index is read as it stands and the model, if
    the mode wants it, loaded here). `scope` every project's: their sessions ranked as one
    list, each naming its project. Only reads."""
    from . import search as searchmod  # not imported by the hooks' paths
    query = query_of(query)
    warnings, mems, skip = _read(scope, ready)
    embedder, why_not = _meaning(scope, ready, mode)
    parts = [searchmod.Part(m.store(), filters, deep, x) for m, x in zip(mems, skip)]

    def answer() -> tuple[list[dict], list[str]]:
        hits, search_warnings = searchmod.run_many(parts, query, mode=mode, limit=limit,
                                                   embedder=embedder, why_not=why_not)
        results = []
        origins: dict[int, dict] = {}
        for h in hits:
            m = mems[h.part]
            if h.part not in origins:
                origins[h.part] = m.store().origins(x.row.id for x in hits if x.part == h.part)
            d = session_json(h.row, m.ws, origins[h.part].get(h.row.id), scope.wide)
            d.update(title=h.title, match=h.match, score=h.score, score_kind=h.kind,
                     files_changed=h.files,
                     snippet=h.snippet, matches=h.matches, message_id=h.message_id)
            if context and h.message_id is not None:
                d["context"] = [_turn(t, matched=t.id == h.message_id)
                                for t in m.store().messages_around(h.message_id, context)]
            results.append(d)
        return results, search_warnings
    results, search_warnings = _reading(mems, answer)
    out: dict = {"query": query, "mode": mode, "warnings": search_warnings + warnings,
                 "results": results, **scope.describe(mems)}
    if not results and not filters:  # the last step (docs/design.md § Search steps):
        # what the sources keep besides the conversations (the session history summaries,
        # which no filter applies to), for a workspace's memory
        for m in mems[:1] if not scope.wide else ():
            got = fallback_search(m.ws, searchmod.normalize_query(query)[1], limit,
                                  lambda p, m=m: m.log.warn(p, once=True))
            if got:
                out["warnings"].append(f"no conversation matched: showing {got[0].label}")
                out[got[0].answers] = got[1]
    return out


def _reading(mems: list[Memory], fn):
    """fn() inside a read transaction of each index: one state of each for a whole answer, not
    one per statement (and one lock taken, not one a statement): a read writes nothing.
    (contextlib.ExitStack's work, by hand: its import is 3 ms of a 28 ms search, which loads
    it nowhere else.)"""
    held = []
    try:
        for m in mems:
            tx = m.store().read()
            tx.__enter__()
            held.append(tx)
        result = fn()
    except BaseException:
        for tx in reversed(held):
            try:
                tx.__exit__(None, None, None)
            except Exception:  # noqa: BLE001 - the error that ended the answer is the one to say
                pass
        raise
    for tx in reversed(held):
        tx.__exit__(None, None, None)
    return result


CONTEXT_CHARS = 1200  # a turn around a match is cut here: the match itself is what counts


def _turn(m, *, matched: bool) -> dict:
    _id, role, ts, side, text = m
    cut = text if matched or len(text) <= CONTEXT_CHARS else text[:CONTEXT_CHARS] + "…"
    return {"role": role, "at": iso_utc(ts), "sidechain": bool(side), "matched": matched,
            "text": cut}


def recent(scope, n: int = 10, *, ready: Ready | None = None) -> dict:
    """The latest n sessions, each with its changed files and first and last request
    (`ready`: see search); every project's latest for a scope of all."""
    from . import session_view  # (the views of sessions: not a search's)
    warnings, mems, skip = _read(scope, ready)

    def answer() -> list[dict]:
        latest = sorted(((-(row.ended_at or 0), i, row) for i, m in enumerate(mems)
                         for row in m.store().recent_sessions(n + len(skip[i]))
                         if row.id not in skip[i]), key=lambda x: x[:2])[:n]
        sessions = []
        for _e, i, row in latest:
            store = mems[i].store()
            view = session_view.build(store, row, requests=True, paths=True)
            d = session_json(row, mems[i].ws, store.origins([row.id]).get(row.id), scope.wide)
            d.update(files_changed=view.changed_paths,
                     first_user_message=_text(view.first_request),
                     last_user_message=_text(view.last_request))
            sessions.append(d)
        return sessions
    # (where it looked first: its count of sessions gives way to the sessions listed)
    return {**scope.describe(mems), "workspace": None if scope.wide else mems[0].ws,
            "warnings": warnings, "sessions": _reading(mems, answer)}


def _text(said: session_view.Said | None) -> str | None:
    return said.text if said is not None else None


def parse_range(text: str | None) -> slice:
    if not text:
        return slice(None)
    parts = text.split(":")
    try:
        if len(parts) == 1:
            i = int(parts[0])
            return slice(i, i + 1 if i != -1 else None)
        if len(parts) == 2:
            return slice(int(parts[0]) if parts[0] else None, int(parts[1]) if parts[1] else None)
    except ValueError:
        pass
    raise UsageError(f"--range takes A:B (Python slice, e.g. 0:20 or -10:), not {text!r}")


def _holder(mems: list[Memory], prefix: str, skip: list[set[int]]):
    """(the memory, the session) a full id or a unique prefix names, among `mems`: one_session
    in one; among several, the one session an exact id names first (a copy another project
    holds too, a VS Code empty window's, is the same session: shown from the memory a search
    shows it from, not one of those `skip` leaves it to), else the one the prefix starts."""
    if len(mems) == 1:
        return mems[0], one_session(mems[0], prefix)
    every = [(m, r, r.id in left) for m, left in zip(mems, skip)
             for r in m.store().find_sessions(prefix)]
    found = [(m, r) for m, r, left in every if not left] or [(m, r) for m, r, _ in every]
    found = [(m, r) for m, r in found if r.started_at is not None] or found
    exact = [(m, r) for m, r in found if r.session_id == prefix]
    if exact:
        return exact[0]
    if len({(r.source, r.session_id) for _m, r in found}) == 1:
        return found[0]
    if not found:
        latest = sorted((r for m in mems for r in m.store().recent_sessions(CANDIDATES)),
                        key=lambda r: -(r.ended_at or 0))[:CANDIDATES]
        raise Failure(f"no session of any project matches {prefix!r}"
                      + (f"; the latest are: {_candidates(latest)}" if latest else ""))
    rows = sorted((r for _m, r in found), key=lambda r: -(r.ended_at or 0))
    raise Failure(f"{prefix!r} matches {len(rows)} sessions; give more of the id: "
                  f"{_candidates(rows[:CANDIDATES])}"
                  + (f" and {len(rows) - CANDIDATES} more" if len(rows) > CANDIDATES else ""))


def one_session(mem: Memory, prefix: str):
    """The session a full id or a unique prefix names."""
    rows = mem.store().find_sessions(prefix)
    rows = [r for r in rows if r.started_at is not None] or rows
    if not rows:
        latest = mem.store().recent_sessions(CANDIDATES)
        raise Failure(f"no session matches {prefix!r}"
                      + (f"; the latest are: {_candidates(latest)}" if latest else ""))
    exact = [r for r in rows if r.session_id == prefix]
    if exact:
        return exact[0]
    if len(rows) > 1:
        rows.sort(key=lambda r: -(r.ended_at or 0))
        raise Failure(f"{prefix!r} matches {len(rows)} sessions; give more of the id: "
                      f"{_candidates(rows[:CANDIDATES])}"
                      + (f" and {len(rows) - CANDIDATES} more" if len(rows) > CANDIDATES else ""))
    return rows[0]


CANDIDATES = 5


def _candidates(rows) -> str:
    return "; ".join(f"{r.session_id} ({_excerpt(r.title, 60)}, {local(r.started_at, '%Y-%m-%d')})"
                     for r in rows)


DETAILS = ("summary", "turns", "full")


def show(scope, session_id: str, range: str | None = None, detail: str = "full",
         tools: bool = True, outputs: bool = False, *, ready: Ready | None = None) -> dict:
    """One session at a depth: `summary` (its facts, changed files with Claude's reasons,
    decisions, first and last request, where it stopped: see session_view), `turns` (and the main
    thread's messages) or `full` (and the subagents' too). `range` slices the messages.
    `tools`: the tool calls too, each in brief with the agent's turn that made it
    (session_view.turns; a summary: how many of each tool); `outputs`: and what each printed
    and changed, while its transcript holds it (`_outputs`). `mem` an AllProjects: the session
    is found in any project. Only reads."""
    if detail not in DETAILS:
        raise UsageError(f"detail must be one of {', '.join(DETAILS)}, not {detail!r}")
    sl = parse_range(range)
    warnings, mems, skip = _read(scope, ready)
    session = _reading(mems, lambda: _shown(scope.wide, mems, skip, session_id, sl, detail,
                                            tools, outputs))
    return {"warnings": warnings, "detail": detail, "session": session}


def _shown(every: bool, mems: list[Memory], skip: list[set[int]], session_id: str, sl: slice,
           detail: str, tools: bool, outputs: bool) -> dict:
    from . import session_view  # (the views of sessions: not a search's)
    mem, row = _holder(mems, session_id, skip)
    store = mem.store()
    summary = detail == "summary"
    view = session_view.build(store, row, requests=summary, changes=True)
    d = session_json(row, mem.ws, store.origins([row.id]).get(row.id), every)
    d.update(files_changed=[{"path": c.path, "relative": short_path(c.path, mem.ws, row.cwd),
                             "tool": c.tool, "explanation": c.explanation,
                             "at": iso_utc(c.at)} for c in view.changes],
             decisions=row.decisions.splitlines() if row.decisions else [])
    if summary:
        d.update(first_request=_text(view.first_request),
                 last_request=_text(view.last_request),
                 stopped_at=_text(view.stopped), unanswered=view.unanswered)
        if tools:
            d["tools_used"] = store.tool_counts(row.id)
    else:
        turns = session_view.turns(store, row.id, tools=tools)
        msgs = list(enumerate(turns))
        if detail == "turns":
            msgs = [(i, t) for i, t in msgs if not t.sidechain]
        details = _outputs(store, row, d) if tools and outputs else {}
        # (a turn of tool calls alone is numbered either way, shown only with its calls)
        # ("calls_only": the agent's turn of tool calls alone, no message of the transcript's:
        # message_count does not count it)
        d["messages"] = [{"index": i, "role": t.role, "at": iso_utc(t.at),
                          "sidechain": t.sidechain, "text": t.text,
                          **({"calls_only": True} if not t.text else {}),
                          **({"tool_calls": [_call(c, mem.ws, row.cwd, details)
                                             for c in t.tools]} if tools else {})}
                         for i, t in msgs[sl] if t.text or t.tools]
    return d


def _call(c: session_view.ToolUse, ws: str, cwd: str | None, details: dict) -> dict:
    out: dict = {"tool": c.tool, "target": short_path(c.target, ws, cwd) if c.kind == "path"
                 else c.target, "kind": c.kind, "line": c.line, "at": iso_utc(c.at)}
    got = details.get(c.call) if c.call else None
    if got is not None:
        if got.diff:
            out["diff"] = {"text": got.diff, "cut": got.diff_cut}
        if got.output is not None and (not got.diff or got.error):  # (an edit's: its diff)
            out["output"] = {"text": got.output, "chars": got.output_chars,
                             "cut": got.output_cut, "error": got.error}
    return out


def _outputs(store, row, d: dict) -> dict:
    """Call id -> what it printed and changed (sources/outputs.Detail), read again from the
    session's transcripts; `d["outputs"]` says what the reader gets: whether there are any,
    and how much of each."""
    from .sources import outputs  # (an export's: transcripts read again, difflib)
    if row.source != CLAUDE_CODE.name:
        d["outputs"] = {"shown": False, "why": "this source's tool outputs are not read"}
        return {}
    paths = [p for p in store.files(row.source, session_id=row.session_id)
             if os.path.isfile(p)]
    if not paths:
        d["outputs"] = {"shown": False, "why": "its transcript is no longer on disk"}
        return {}
    from .redact import scrub  # (its rules compiled: 10 ms a listing never pays)
    got, unread = outputs.read(paths, scrub)
    d["outputs"] = {"shown": True, "max_chars": outputs.OUTPUT_MAX, "unread_lines": unread}
    return got


def export(scope, session_id: str, *, tools: bool = True, outputs: bool = True,
           ready: Ready | None = None) -> dict:
    """A session whole, as `prima-memory export` writes it: show's `full` detail, its tool
    calls in the agent's turns (`tools`) with what each printed and changed (`outputs`)."""
    return show(scope, session_id, detail="full", tools=tools, outputs=outputs, ready=ready)


def workspace_path(ws: str, path: str) -> str:
    """`path` relative to the workspace (absolute, or relative to it), by its text alone: the
    file system is never asked. A path outside the workspace is a UsageError."""
    _given(path)
    full = _nfc(os.path.normpath(path if os.path.isabs(path) else os.path.join(ws, path)))
    for root in map(_nfc, path_variants(ws)):  # either spelling of a linked one
        if full == root or full.startswith(root.rstrip(os.sep) + os.sep):
            return os.path.relpath(full, root).replace(os.sep, "/")
    raise UsageError(f"{path!r} is outside the workspace {ws}: give a path inside it, "
                     "absolute or relative to it")


def _nfc(path):
    """A path as one text: Unicode NFC. "café" has two spellings (macOS hands back names read
    from the disk in NFD, e and a combining accent), and a change recorded in either is one
    file's. ASCII as it is."""
    if path is None or path.isascii():
        return path
    import unicodedata  # (a path beyond ASCII only)
    return unicodedata.normalize("NFC", path)


def _given(path: str) -> None:
    if not path.strip():
        raise UsageError("the path is empty")
    if "\0" in path:
        raise UsageError("the path holds a NUL character")


def files(scope, path: str | None = None, skip: int = 0,
          limit: int | None = None, *, ready: Ready | None = None) -> dict:
    """Which sessions changed a file (or the files under a folder), newest first: one entry per
    session, and in it one per file with its edits counted, their first and last time, the
    tools, and the best reason the session holds for the change (reasons.best: Claude's words
    by the edit, else its reply before, else the user's request; "why_from" says whose).
    `path` is taken relative to the workspace; it names a file, a folder, or the end of a path
    ("upload.py" finds src/upload.py); when nothing has such a path, the paths containing it (in
    any case) are shown, with a warning. `skip` leaves out the newest that many sessions and
    `limit` keeps that many of the rest; "more" counts the sessions after those kept. `mem` an
    AllProjects: every project's changes, `path` taken in each (an absolute one: in the project
    holding it). Only reads."""
    if skip < 0:
        raise UsageError(f"skip must be 0 or more, not {skip}")
    if limit is not None and limit < 1:
        raise UsageError(f"limit must be 1 or more, not {limit}")
    if path is not None:
        _given(path)
    warnings, mems, skipped = _read(scope, ready)
    return _reading(mems, lambda: _files(scope, mems, skipped, warnings, path, skip, limit))


def before_edit(mem: Memory, path: str, session_id: str | None = None, limit: int = 3,
                until: float | None = None) -> dict:
    """What the memory holds of a file about to be changed (issue #42): the last `limit`
    sessions but `session_id` (the one editing) that changed exactly this file (the workspace's
    path, never one merely ending like it: another project's), newest first, each with its
    title, when, and its reason (as `files` gives them); and up to DECISIONS decisions marked
    (tagging.decision_lines) that name the file. None for a file outside the workspace or with
    no history. `until` (a time, for a replay): only what was there before it. Reads."""
    try:
        rel = workspace_path(mem.ws, path)
    except UsageError:
        return {"path": path, "sessions": [], "decisions": []}  # (another folder's file)
    store = mem.store()
    own = store.session_by_session_id(session_id, CLAUDE_CODE.name) if session_id else None

    def keep(r: tuple) -> bool:  # (shown path, path, tool, why, ts, session, key)
        return r[0] == rel and (own is None or r[5] != own.id) \
            and (until is None or (r[4] or 0) < until)

    def decided() -> list[dict]:
        out: list[dict] = []
        name = os.path.basename(rel)
        for sid, lines in store.decisions_naming(name) if len(name) >= MIN_NAMED else ():
            row = store.session(sid)
            if row is None or (own is not None and sid == own.id) \
                    or (until is not None and (row.ended_at or 0) >= until):
                continue
            out += [{"session_id": row.session_id, "title": row.title,
                     "at": iso_utc(row.ended_at) if row.ended_at else None, "line": line}
                    for line in lines.splitlines() if _names(line, rel)]
            if len(out) >= DECISIONS:
                break
        return out[:DECISIONS]

    def read() -> dict:
        got = _files(mem, [mem], [set()], [], rel, 0, limit, keep=keep)
        return {"path": rel, "sessions": got["sessions"], "decisions": decided()}
    return _reading([mem], read)


def error_fixes(mem: Memory, error: str, session_id: str | None = None, limit: int = 3,
                until: float | None = None, *, ready: Ready | None = None) -> dict:
    """What fixed an error before (issue #42): the earlier sessions of this memory where a
    command failed with the same error (the key of the line naming it: failures.py) and went on
    to a fix, a file changed after the error's last time there; the latest first, each with its
    title, when the error came, the command, and the fix: the first change after it (its file
    and the first line of Claude's reason). `session_id` (the one failing now) is left out;
    `until` (a time, for a replay): only what came before it. Reads."""
    from .redact import redact, redact_enabled  # (its rules compile: only where an error is read)
    if limit < 1:
        raise UsageError(f"limit must be 1 or more, not {limit}")
    warnings = list(ready.warnings) if ready is not None else []
    got = failures.read(error, redact if redact_enabled() else str)
    if got is None:
        return {"error": None, "warnings": warnings, "sessions": []}
    sig, key = got
    store = mem.store()
    own = store.session_by_session_id(session_id, CLAUDE_CODE.name) if session_id else None

    def read() -> dict:
        last: dict[int, FailedCall] = {}  # session -> its last failure of this error
        for f in store.failed_calls(key):  # (the latest first)
            if (own is None or f.session != own.id) and (until is None or (f.ts or 0) < until):
                last.setdefault(f.session, f)
        out: list[dict] = []
        for sid, f in last.items():
            fix = next((c for c in store.file_changes(sid)
                        if c.ts is not None and f.ts is not None and c.ts > f.ts), None)
            row = store.session(sid) if fix is not None else None
            if fix is None or row is None:
                continue  # (met there, never fixed there)
            out.append({"session_id": row.session_id, "title": row.title,
                        "at": iso_utc(f.ts) if f.ts else None, "command": f.target,
                        "error": f.error,
                        "fix": {"path": short_path(fix.path, mem.ws, row.cwd),
                                "at": iso_utc(fix.ts) if fix.ts else None,
                                "why": cut(next((ln.strip() for ln in (fix.explanation or "")
                                                 .splitlines() if ln.strip()), ""), 200)}})
            if len(out) >= limit:
                break
        return {"error": sig, "warnings": warnings, "sessions": out}
    return _reading([mem], read)


PROMPT_WORDS = 3  # content words a prompt needs before it is matched with a session
# The best session's word score over the second's, at least, and its least share of what the
# prompt's words weigh (ranking.word_scores): chosen on bench/eval's second set, dev split (the
# best recall at precision >= 0.9: bench/point_of_action.py, docs/benchmarks.md)
PROMPT_MARGIN = 1.5
PROMPT_FLOOR = 0.7


def prompt_match(mem: Memory, prompt: str, session_id: str | None = None,
                 until: float | None = None, *, margin: float = PROMPT_MARGIN,
                 floor: float = PROMPT_FLOOR) -> dict | None:
    """The one earlier session a typed prompt is plainly about (issue #42), or None: of the
    sessions holding its words (BM25 by rarity, ranking.word_scores: no model), the best must
    score `margin` times the second and hold at least `floor` of the words' weight. A margin
    over the rest of the history, not a score alone: a prompt whose words many sessions share
    names none. `session_id` (the one typing) is left out; `until`: only sessions started
    before it (a replay). Reads."""
    from . import ranking  # (not on the other hooks' paths)
    from . import search as searchmod
    words = searchmod.normalize_query(query_of(prompt))[1]
    if len(words) < PROMPT_WORDS:
        return None
    store = mem.store()
    own = store.session_by_session_id(session_id, CLAUDE_CODE.name) if session_id else None

    def read() -> dict | None:
        skip = {own.id} if own is not None else set()
        if until is not None:
            skip |= {f[0] for f in searchmod.Part(store).facts if f[1] is None or f[1] >= until}
        part = searchmod.Part(store, None, False, skip)
        said = ranking.word_scores([part.word_counts(words)], [part.lengths()], turns=False)
        best = sorted(((v, sid) for (_i, sid), v in said.items()), reverse=True)[:2]
        if not best or best[0][0] < floor or (len(best) > 1 and best[0][0] < margin * best[1][0]):
            return None
        row = store.session(best[0][1])
        if row is None:
            return None
        return {**session_json(row, mem.ws), "score": round(best[0][0], 3),
                "second": round(best[1][0], 3) if len(best) > 1 else 0.0}
    return _reading([mem], read)


DECISIONS = 2  # decisions naming a file, in a note before its edit
MIN_NAMED = 4  # characters a file's name needs to be looked for in prose ("a.c" is a word)


def _names(line: str, rel: str) -> bool:
    """Whether a line of text names the workspace file `rel`: its name, or a path ending in
    it, as a word of its own (quotes and punctuation around it apart)."""
    name = "/" + os.path.basename(rel)
    for word in line.split():
        word = "/" + word.strip("`'\"()[]{}<>,;:!?").rstrip(".").removeprefix("./")
        if word.endswith(name) and ("/" + rel).endswith(word):
            return True
    return False


def _files(scope, mems: list[Memory], skipped: list[set[int]], warnings: list[str],
           path: str | None, skip: int, limit: int | None, keep=None) -> dict:
    # (keep: the changes kept, by their row; never then the paths merely containing `path`)
    every = scope.wide
    rel = workspace_path(mems[0].ws, path) if path is not None and not every else None
    exact: list[tuple] = []
    loose: list[tuple] = []  # the paths merely containing it: shown only if none is it
    for i, m in enumerate(mems):
        if every and path is not None:
            try:
                rel = workspace_path(m.ws, path)
            except UsageError:  # (an absolute path of another project)
                continue
        got, fuzzy = _changes(m, rel, skipped[i])
        (loose if fuzzy else exact).extend((i, r) for r in got)
    rows = exact or (loose if keep is None else [])
    if keep is not None:
        rows = [(i, r) for i, r in rows if keep(r)]
    if not exact and rows:
        warnings.append(f"no changed path is or ends in {rel if not every else path!r}: "
                        "showing the paths that contain it")
    # (memory, session) -> path -> its changes, oldest first (rows come newest first)
    grouped: dict[tuple[int, int], dict[str, list[tuple]]] = {}
    for i, r in reversed(rows):
        grouped.setdefault((i, r[5]), {}).setdefault(r[1], []).append(r)
    newest = sorted(grouped, key=lambda k: (-max(c[4] or 0 for cs in grouped[k].values()
                                                 for c in cs), k))
    end = len(newest) if limit is None else skip + limit
    sessions = []
    for i, sid in newest[skip:end]:
        store = mems[i].store()
        row = store.session(sid)
        if row is None:
            continue  # (dropped since the paths were read)
        its = sorted((_file_entry(store, sid, cs) for cs in grouped[i, sid].values()),
                     key=lambda f: (f["last_at"] or "", f["relative"]), reverse=True)
        entry: dict = {"session_id": row.session_id, "title": row.title,
                       "first_at": min((f["first_at"] for f in its if f["first_at"]), default=None),
                       "last_at": max((f["last_at"] for f in its if f["last_at"]), default=None)}
        if every:
            entry["workspace"] = mems[i].ws
        entry["files"] = its
        sessions.append(entry)
    return {**scope.describe(mems), "path": path if every else rel, "warnings": warnings,
            "total_sessions": len(newest), "total_changes": len(rows), "skipped": skip,
            "more": max(0, len(newest) - end), "sessions": sessions}


def _file_entry(store, sid: int, changes: list[tuple]) -> dict:
    """One file's changes in one session (rows as _changes gives them, oldest first), with the
    best reason the session holds for them."""
    from . import reasons  # (only files reads reasons: not on the hooks' path)
    why, whose = reasons.best([(c[3], c[6]) for c in changes],
                              lambda key: store.before_change(sid, key, reasons.CAP))
    times = [c[4] for c in changes if c[4] is not None]
    return {"path": changes[0][1], "relative": changes[0][0], "edits": len(changes),
            "tools": list(dict.fromkeys(c[2] for c in changes if c[2])),
            "first_at": iso_utc(min(times)) if times else None,
            "last_at": iso_utc(max(times)) if times else None, "why": why, "why_from": whose}


def _changes(mem: Memory, rel: str | None, skip: set[int]) -> tuple[list[tuple], bool]:
    """(shown path, path, tool, why, ts, session, message key) of one memory's changes of `rel`
    (a path relative to its workspace, as files() takes it), and whether they are the paths
    merely containing it."""
    ws = _nfc(mem.ws)
    rows = []
    for p, tool, why, ts, sid, cwd, key in mem.store().file_history(
            None if rel in (None, ".") else os.path.basename(rel)):
        if sid not in skip:
            p = _nfc(p)  # (its two spellings shown as one path)
            rows.append((short_path(p, ws, _nfc(cwd)), p, tool, why, ts, sid, key))
    if rel in (None, "."):
        return rows, False
    exact = [r for r in rows if r[0] == rel or r[0].startswith(rel + "/")
             or r[0].endswith("/" + rel)]
    if exact:
        return exact, False
    low = rel.lower()
    return [r for r in rows if low in r[0].lower()], True

def index(mem: Memory, *, rebuild: bool = False, background: bool = False, prune: bool = False,
          worker: bool = False, progress=None, embed_progress=None) -> dict:
    """Bring the index up to date; `rebuild` reads every file again and embeds (in a detached
    process with `background`, returning at once with its state)."""
    if background and not rebuild:
        raise UsageError("--background goes with --rebuild")
    if background:
        state = bg.rebuild_state(mem)
        if state:
            raise Failure(str(bg.RebuildRunning(state)))
        store = mem.store()
        if store.readonly:  # (a rebuild started would die at once: say so instead)
            raise Failure("cannot start a rebuild: " + (
                f"{mem.db_path} cannot be written ({store.readonly_why})" if store.readonly_why
                else f"{mem.db_path} is read-only"))
        pid = bg.spawned_rebuild()
        if pid is not None:  # started a moment ago, its state not recorded yet
            raise Failure(f"a rebuild is already running (pid {pid}, starting)")
        pid = bg.spawn_rebuild(mem.ws)
        return {"workspace": mem.ws, "rebuild": {"running": True, "pid": pid,
                                                 "started": True}}
    embedded = pending = None
    try:
        if rebuild:
            def run():
                return bg.rebuild(mem, progress=progress, lock_timeout=LOCK_SECONDS,
                                  embed_progress=embed_progress)
            if worker:
                bg.lower_priority()
                rep, embedded, pending = logged(mem, "rebuild", run)
            else:
                rep, embedded, pending = run()
        else:
            rep = mem.update(sources=ALL, lock_timeout=LOCK_SECONDS, prune=prune,
                             progress=progress)
            if prune:
                bg.drop_unused_vectors(mem)
    except IndexBusy as e:
        raise Failure(f"{e}; try again in a moment") from None
    return {"workspace": mem.ws, "files_seen": rep.files_seen, "files_read": rep.files_read,
            "bytes_read": rep.bytes_read, "sessions_updated": len(rep.sessions_touched),
            "archived": rep.archived, "pruned": rep.pruned, "extracts_written": rep.extracts,
            "embedded": embedded, "embed_pending": pending, "warnings": mem.log.warnings,
            "log": mem.log.path}


def index_all(every: AllProjects, *, worker: bool = False, lock_fd: int | None = None,
              progress=None) -> dict:
    """Every project's memory brought up to date now (`index --all-projects`); `worker`: as the
    background run a search within a budget starts, which embeds and links them too."""
    warnings: list[str] = []
    embedded = pending = None
    if worker:
        got = logged(every, "run over all projects",
                     lambda: bg.run_all(every, lock_fd))
        if got is None:
            raise Failure("another process is bringing every project up to date")
        opened, embedded, pending = got
        warnings = every.warnings
    else:
        opened = every.update_projects(every.scan(), progress=progress, warnings=warnings)
    return {"scope": "all", "projects": len(opened), "user_store": wsmod.user_store(),
            "warnings": warnings, "embedded": embedded, "embed_pending": pending}


def projects_json(every: AllProjects) -> dict:
    """Every project a search of all covers, with where its memory lives (its own, or the
    user-level store's) and what that holds, without updating any (`status --all-projects`)."""
    out = []
    for p in every.scan():
        path = wsmod.index_path(p.folder) if p.own else os.path.join(p.home or "", "index.db")
        d: dict = {"folder": p.folder, "exists": os.path.isdir(p.folder), "own": p.own,
                   "memory": path, "sessions": None, "archived": None}
        if os.path.isfile(path):
            try:
                mem = every.memory(p)
                counts = mem.store().source_counts()
                d.update(own=not mem.detached, memory=mem.db_path,
                         sessions=sum(c["sessions"] for c in counts.values()),
                         archived=sum(c["archived"] for c in counts.values()))
            except (Failure, OSError) as e:
                d["problem"] = error_line(e)
        out.append(d)
    return {"scope": "all", "user_store": wsmod.user_store(), "projects": out,
            "warnings": [w.split(" ", 3)[-1] for w in every.log.tail(10)]}


def recover_from(mem: Memory, path: str) -> dict:
    """The sessions whose files are gone, copied from an index the user says is theirs (one set
    aside as unstamped, from before stamps)."""
    if not os.path.isfile(path):
        raise UsageError(f"{path} is not a file")
    try:
        n = mem.recover_from(path, lock_timeout=LOCK_SECONDS)
    except IndexBusy as e:
        raise Failure(f"{e}; try again in a moment") from None
    except StoreError as e:
        raise Failure(f"nothing recovered: {error_line(e)}") from None
    return {"workspace": mem.ws, "from": path, "recovered": n}


# -- forgetting ----------------------------------------------------------------------------------

FORGET_SHOWN = 200  # sessions a --before or --match choice may name at once, unless capped=False


class TooMany(UsageError):
    """A --before or --match choice of over FORGET_SHOWN sessions, where a cap was asked: more
    is rarely what was meant (`--before now`), and a list that long is not read before a yes.
    Worded for /prima-memory:forget, which shows it and has no way past it (the user confirms
    there by typing every id); the CLI says --all instead."""

    def __init__(self) -> None:
        super().__init__(f"that chooses over {FORGET_SHOWN} sessions: choose fewer at a time "
                         f"(`{hints.cli()} forget` with --all, in a terminal, forgets every one "
                         "of them)")


def forget_choice(mem: Memory, ids: list[str], *, before: str | None = None,
                  match: str | None = None, capped: bool = True,
                  ready: Ready | None = None) -> dict:
    """The sessions `forget` would remove: those the ids (or unique prefixes) name, those that
    ended before `before`, those a keyword search for `match` finds (as `search` chooses them).
    `capped`: TooMany when `before` or `match` choose over FORGET_SHOWN. Nothing is removed."""
    _named(ids)
    warnings = list(ready.warnings) if ready is not None else []
    store = mem.store()
    rows = {r.id: r for r in (one_session(mem, i) for i in ids)}
    most = FORGET_SHOWN + 1 if capped else 1 << 31  # (no index holds that many)
    if before:
        until = _when(before)
        rows.update((r.id, r) for r in store.sessions_ended_before(until, most))
    if match:
        found = search(mem, match, mode="keyword", limit=most)
        warnings += found.get("warnings", [])
        for hit in found["results"]:
            row = store.session_by_session_id(hit["session_id"], hit["source"])
            if row is not None:
                rows[row.id] = row
    if capped and (before or match) and len(rows) > FORGET_SHOWN:
        raise TooMany()
    chosen = sorted(rows.values(), key=lambda r: -(r.ended_at or r.started_at or 0))
    return {"workspace": mem.ws, "sessions": [session_json(r, mem.ws) for r in chosen],
            "warnings": warnings}


def _named(ids) -> None:
    """An empty id is a prefix of every id: `forget "$ID" --yes` with $ID unset would forget
    the one session a project has (or the one forgotten, for --undo)."""
    if any(not i.strip() for i in ids):
        raise Failure("an empty session id names no session")


def forget(mem: Memory, sessions: list[dict], *, why: str = "forget",
           tell_team: bool = True) -> dict:
    """Forget these sessions (forget_choice's) for good: see Memory.forget. `tell_team`: the
    team's server, if the project joined one, told now (else by the next publish, as a hook
    leaves it: a server away must not hold the user's prompt)."""
    store = mem.store()
    rows = [r for r in (store.session_by_session_id(s["session_id"], s["source"])
                        for s in sessions) if r is not None]
    done = mem.forget(rows, why=why, lock_timeout=LOCK_SECONDS)
    from . import team  # (a forget is rare: its team's server told at once, if it has one)
    told = team.forget_now(mem) if tell_team and rows and team.joined(mem.ws) is not None \
        else False
    # pending: forgotten (tombstoned) now, its words removed by the process that holds the index
    return {"workspace": mem.ws,
            **({"team": {"error": told}} if told is not False else {}),
            "forgotten": [{"session_id": r.session_id, "source": r.source, "title": r.title}
                          for r in rows],
            "files_removed": done["files"], "log_emptied": done["log_emptied"],
            "pending": done.get("pending", False)}


def forgotten_list(mem: Memory) -> dict:
    """The tombstones: each session forgotten (or kept out), when and why; never its text."""
    mem.store()  # (opening it finishes a forget killed halfway: see Memory._settle_forgets)
    tombs = mem.tombstones()
    return {"workspace": mem.ws, "forgotten": [
        {"session_id": e["id"], "source": e["source"], "at": iso_utc(e.get("at")),
         "why": e.get("why", "forget")} for e in sorted(
            tombs.entries, key=lambda e: -(e.get("at") or 0))]}


def undo_forget(mem: Memory, ids: list[str]) -> dict:
    """Take sessions out of the tombstones (a full id, or a unique prefix of a tombstone's) and
    read their transcripts again, while they exist."""
    _named(ids)
    tombs = mem.tombstones()
    pairs = []
    for given in ids:
        found = [(e["source"], e["id"]) for e in tombs.entries if e["id"] == given] or \
                [(e["source"], e["id"]) for e in tombs.entries if e["id"].startswith(given)]
        if not found:
            raise Failure(f"no forgotten session matches {given!r} (prima-memory forget --list)")
        if len({sid for _s, sid in found}) > 1:
            raise Failure(f"{given!r} matches {len(found)} forgotten sessions; give more of the id")
        pairs += found
    try:
        mem.remember_again(pairs, lock_timeout=LOCK_SECONDS)
    except IndexBusy as e:  # (nothing changed: still forgotten, and the undo can be run again)
        raise Failure(f"{e}; nothing was changed: try again in a moment") from None
    warnings: list[str] = []
    try:
        files_read = mem.update(sources=ALL, lock_timeout=LOCK_SECONDS).files_read
    except IndexBusy as e:  # (undone all the same: the next run reads their transcripts)
        warnings.append(f"{e}: their transcripts are read again by the next index or search")
        files_read = 0
    store = mem.store()
    back = [sid for src, sid in pairs if store.session_by_session_id(sid, src) is not None]
    return {"workspace": mem.ws, "remembered": [sid for _s, sid in pairs], "back": back,
            "files_read": files_read, "pending": bool(warnings), "warnings": warnings}


def logged(mem, what: str, fn):
    """A detached process's work: its output goes nowhere, so a failure goes to the log."""
    try:
        return fn()
    except Exception as e:
        mem.log.error(f"background {what} failed: {type(e).__name__}: {error_line(e)}")
        raise


def embed(mem: Memory, *, worker: bool = False, lock_fd: int | None = None,
          progress=None) -> dict:
    """What the background embedder does, now (`worker`: as it, holding the embedder lock
    `lock_fd` its starter handed down): the index brought up to date, pending exchanges
    embedded, their SIMILAR_TO edges computed."""
    warnings: list[str] = []
    if worker:
        got = logged(mem, "embedder", lambda: bg.run_embedder(mem, lock_fd))
    else:
        if bg.rebuild_state(mem):
            raise Failure("a rebuild is running: it embeds everything itself")
        mem.bring_up(warnings)
        try:
            mem.embedder()
        except Exception as e:  # noqa: BLE001
            raise Failure(f"the embedding model cannot load: {error_line(e)}") from None
        got = mem.embed(None, wait=LOCK_SECONDS, progress=progress)
        if got is None or mem.link(None, wait=LOCK_SECONDS) is None:
            raise Failure("another process is embedding this index; try again in a moment")
    done, left = got or (0, 0)
    return {"workspace": mem.ws, "warnings": warnings, "embedded": done, "pending": left}


def status(mem: Memory) -> dict:
    """Sources, counts, what is pending (files, exchanges), background work, recent warnings."""
    store = mem.store()
    counts = store.counts()
    files_pending, size = mem.pending()
    by_source = store.source_counts()
    rebuild = bg.rebuild_state(mem)
    size_on_disk = sum(os.path.getsize(mem.db_path + s) for s in ("", "-wal")
                       if os.path.exists(mem.db_path + s))
    none = {"sessions": 0, "archived": 0}
    sources = []
    for src in SOURCES:
        where = src.locations(mem.ws)
        files = store.files(src.name)
        sources.append({"source": src.name, "label": src.label, "locations": where,
                        # (a folder, or a file: a database, a project's history)
                        "found": any(os.path.exists(w) for w in where),
                        "absent": [w for w in where if not os.path.exists(w)],
                        "files": len(files),
                        # out of scope: another folder's sessions, never indexed here
                        "skipped": sum(r.status == "foreign" for r in files.values()),
                        **by_source.get(src.name, none),
                        "warnings": jsontext.loads(store.get_meta(f"warnings:{src.name}") or "[]"),
                        "unknown_record_types": unknown_types(store, src)})
    sources += fallback_status(mem.ws)  # only when no conversation matched
    return {
        "workspace": mem.ws,
        "index": {"path": mem.db_path, "bytes": size_on_disk,
                  "schema_version": store.schema_version},
        "sources": sources,
        "counts": counts,
        "pending": {"files": files_pending, "bytes": size},
        "semantic": semantic_status(mem),
        "rebuild": {"running": True, **rebuild_json(rebuild)} if rebuild else {"running": False},
        "forgotten": _forgotten_count(mem),
        "team": team_brief(mem),
        "warnings": [w.split(" ", 3)[-1] for w in mem.log.tail(10)],
    }


def team_brief(mem: Memory) -> dict | None:
    from . import team  # (its config read: the status of a team's project only)
    return team.brief(mem)


def _forgotten_count(mem: Memory) -> int | str:
    try:
        return len(mem.tombstones())
    except Failure as e:  # (a damaged file: status says so, and nothing is indexed until fixed)
        return str(e)


UNKNOWN_SHOWN = 20  # unknown record types listed per source, the most widespread first


def unknown_types(store, src) -> list[dict]:
    """The record types this version does not read, found in a source's files: [{"type",
    "files"}], most files first. Skipped, not warned about: the user can do nothing about them
    (a newer Claude Code or Codex writes them), an update of prima-memory can."""
    counts = {kind: n for kind, n in store.unknown_record_types(src.name).items()
              if not src.knows(kind)}  # (noted by an older version that did not know it)
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:UNKNOWN_SHOWN]
    return [{"type": kind, "files": n} for kind, n in top]


def semantic_status(mem: Memory) -> dict:
    """Embedded and pending exchanges, and the background embedder, without loading the model:
    "available" says whether it would load, from the files and packages a load needs (and the
    ONNX build's checksum), not merely that its folder is there."""
    from . import embed as embedmod  # (the model's boundary: numpy, once a build loads)
    from .semantic import vector_key
    store = mem.store()
    where, model, build, why = None, embedmod.MODEL, None, None
    try:
        where = embedmod.model_dir()
        model = embedmod.model_name(where)
        model, build = embedmod.check()
    except embedmod.ModelUnavailable as e:
        why = error_line(e)
    if build is None:  # which vectors the counts are of: those the model would make
        try:
            build = embedmod.expected_build()
        except embedmod.ModelUnavailable:
            build = embedmod.VARIANT_ST
    key = vector_key(model, None, build)
    return {"available": why is None, "model": model, "model_path": where, "build": build,
            "problem": why,
            "embedded": store.count_embedded(key), "pending": store.count_pending(key),
            "similar_edges": store.count_edges(key),
            "edges_pending": len(store.unlinked_exchanges(key)),
            "embedder_running": bg.held(mem, "embed")}


LINK_BUDGET = 5.0  # seconds find_similar spends on pending SIMILAR_TO edges before answering
LINKED_SHOWN = 5  # linked exchanges shown per result
EXCERPT = 300


def _excerpt(text: str | None, n: int = EXCERPT) -> str | None:
    if not text:
        return text
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n].rstrip() + "…"


def similar(scope, query: str, *, limit: int = 10, ready: Ready | None = None) -> dict:
    """find_similar: past exchanges most like the query, one per session, each with the
    exchanges of other sessions its SIMILAR_TO edges join it to (cosine >= 0.85; within one
    project's memory). The sessions are those the default search ranks first (search.rank:
    rarity of words, meaning, dates), each shown by the exchange where the query's words are
    said, or else its most similar. `PRIMA_SEED_EXACT=1` keeps the continuity seed's ranking of
    exchanges: 0.7 similarity + 0.2 recency (linear, zero at 365 days) + 0.1 min(1, session
    turns / 50). `ready`: bring_up's with mode "similar" (the model loaded, new exchanges
    embedded and linked); without it, the model is loaded here. Only reads."""
    # not on the hooks' paths, which import this module
    from . import semantic
    from . import search as searchmod
    query = query_of(query)
    warnings, mems, skip = _read(scope, ready)
    embedder, why_not = _meaning(scope, ready, "similar")
    if embedder is None:
        raise Failure(f"find_similar needs the embedding model, which cannot load ({why_not}); "
                      "search_sessions with mode keyword still works")
    settings = semantic.Settings()
    model = semantic.key_of(embedder, settings)
    parts = [searchmod.Part(m.store(), exclude=x) for m, x in zip(mems, skip)]

    def answer() -> list[dict]:
        found = _seed_similar(parts, embedder, query, limit, settings) \
            if searchmod.seed_exact() else _ranked_similar(parts, embedder, query, limit)
        results = []
        for i, ex, scores in found:
            store = mems[i].store()
            rows = store.sessions_by_id([session_of(ex)])
            if not rows:
                continue  # (pruned meanwhile)
            d = session_json(rows[0], mems[i].ws, every=scope.wide)
            d.update(_exchange(store, ex), **scores, linked=_linked(store, model, ex))
            results.append(d)
        return results
    return {"query": query, "warnings": warnings, "results": _reading(mems, answer),
            **scope.describe(mems)}


def _ranked_similar(parts, embedder, query: str, limit: int) -> list[tuple[int, int, dict]]:
    """(part, exchange, its scores) of the sessions the default search ranks first."""
    from . import ranking  # late: as in similar()
    from . import search as searchmod
    got = searchmod.rank(parts, embedder, query, limit=limit)
    out = []
    for score, (i, sid) in got.top:
        match = got.best.get((i, sid)) or (
            got.scoreds[i].best({sid}).get(sid) if got.scoreds and (i, sid) not in got.where
            else None)  # (past the candidates the meaning was looked up for)
        exchange, similarity = got.where.get((i, sid)) or (
            (match.exchange, match.similarity) if match else (None, 0.0))
        if exchange is not None:  # (a session with no exchange embedded has none to show)
            relevance = ranking.relevance(score)
            out.append((i, exchange, {"match": searchmod.match_of(relevance, "relevance"),
                                      "score": relevance, "score_kind": "relevance",
                                      "similarity": round(similarity, 4)}))
    return out


def _seed_similar(parts, embedder, query: str, limit: int,
                  settings) -> list[tuple[int, int, dict]]:
    """(part, exchange, its scores) by the continuity seed's formula (similar())."""
    from . import semantic  # late: as in similar()
    from . import search as searchmod
    words = searchmod.normalize_query(query)[1]
    admits = [{r[0] for r in p.facts}.__contains__ for p in parts]
    gate = searchmod.gate_of([p.counts(words) for p in parts], sum(p.sessions() for p in parts))
    found = semantic.similar_many([p.store for p in parts], embedder,
                                  searchmod.meaning_query(query), limit=limit, admits=admits,
                                  floor=settings.floor, settings=settings, gate=gate)
    return [(i, ex.exchange, {"match": searchmod.match_of(100 * ex.score, "hybrid"),
                              "score": round(ex.score, 4), "score_kind": "hybrid",
                              "similarity": round(ex.similarity, 4),
                              "recency": round(ex.recency, 4), "turns": ex.turns})
            for i, ex in found]


def _exchange(store, exchange: int) -> dict:
    prompt, reply = store.exchange_texts([exchange]).get(exchange, (None, None))
    ts = store.message_times([exchange]).get(exchange)
    return {"exchange_id": exchange, "at": iso_utc(ts), "prompt": _excerpt(prompt),
            "reply": _excerpt(reply)}


def _linked(store, model: str, exchange: int) -> list[dict]:
    """The exchanges its SIMILAR_TO edges join it to: the most similar of each other session."""
    best: dict[int, tuple[int, float]] = {}
    for other, cosine in store.edges(model, exchange):  # most similar first
        best.setdefault(session_of(other), (other, cosine))
        if len(best) >= LINKED_SHOWN:
            break
    rows = {r.id: r for r in store.sessions_by_id(best)}
    out = []
    for sid, (other, cosine) in best.items():
        if sid in rows:
            ex = _exchange(store, other)
            out.append({"session_id": rows[sid].session_id, "title": rows[sid].title,
                        "cosine": round(cosine, 4), "exchange_id": other, "at": ex["at"],
                        "text": _excerpt(ex["prompt"] or ex["reply"], 160)})
    return out


def rebuild_background(mem: Memory) -> dict:
    """Start a rebuild in the background and return at once with its state; the one already
    running, if any, is reported instead of a second started."""
    state, pid = bg.rebuild_state(mem), bg.spawned_rebuild()
    if state is None and pid is None:
        return index(mem, rebuild=True, background=True)
    state = state or {"pid": pid, "phase": "starting"}  # its state is not recorded yet
    return {"workspace": mem.ws, "rebuild": {"running": True, "started": False,
                                             **rebuild_json(state)}}


def rebuild_json(state: dict) -> dict:
    return {"pid": state.get("pid"), "phase": state.get("phase"), "done": state.get("done", 0),
            "total": state.get("total", 0), "started_at": iso_utc(state.get("started"))}


DIGEST_SESSIONS = 200  # a digest names at most this many sessions (the newest), and says so
DIGEST_FILES = 10


def digest(mem: Memory, since: str | None = None, until: str | None = None, *,
           ready: Ready | None = None) -> dict:
    """A period's digest from the index alone, no model: its sessions by (local) day with their
    titles, tags and branch, the files changed most, the decisions marked (DECIDED, SAVE ...)
    and where each session stopped. Default: the last seven days. Only reads."""
    f = filters(since or "7d", until)
    warnings, mems, _skip = _read(mem, ready)
    return _reading(mems, lambda: _digest(mem, f, warnings))


def _digest(mem: Memory, f: Filters, warnings: list[str]) -> dict:
    from . import session_view  # (the views of sessions: not a search's)
    store = mem.store()
    facts = sorted(store.session_facts(f.since, f.until), key=lambda r: -(r.ended_at or r.started_at or 0))
    if len(facts) > DIGEST_SESSIONS:
        warnings.append(f"{len(facts)} sessions in the period: the newest {DIGEST_SESSIONS} shown")
    rows = {r.id: r for r in store.sessions_by_id([sid for sid, *_ in facts[:DIGEST_SESSIONS]])}
    days: dict[str, list[dict]] = {}
    changed: dict[str, set] = {}
    decisions = []
    for sid, *_ in facts[:DIGEST_SESSIONS]:
        row = rows.get(sid)
        if row is None:
            continue
        view = session_view.build(store, row, paths=True)
        for path in view.changed_paths:
            changed.setdefault(path, set()).add(row.session_id)
        d = {"session_id": row.session_id, "title": row.title, "source": row.source,
             "label": row.label,
             "started_at": iso_utc(row.started_at), "ended_at": iso_utc(row.ended_at),
             "branch": row.branch or None, "tags": row.tag_list, "author": row.author,
             "stopped_at": _text(view.stopped), "last_request": _text(view.last_request),
             "unanswered": view.unanswered}
        days.setdefault(local(row.started_at, "%Y-%m-%d"), []).append(d)
        decisions += [{"session_id": row.session_id, "title": row.title, "line": line}
                      for line in row.decisions.splitlines() if line.strip()]
    files_most = sorted(changed.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:DIGEST_FILES]
    cwds = {r.session_id: r.cwd for r in rows.values()}
    return {"since": iso_utc(f.since), "until": iso_utc(f.until), "warnings": warnings,
            "sessions": sum(len(v) for v in days.values()),
            "days": [{"day": day, "sessions": days[day]} for day in sorted(days, reverse=True)],
            "files_most_changed": [{"path": p, "relative": short_path(p, mem.ws, cwds.get(min(s))),
                                    "sessions": len(s)} for p, s in files_most],
            "decisions": decisions}
