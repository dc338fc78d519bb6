"""The retrieval evaluation corpus: Claude Code sessions whose replies are text people wrote.

Each session is one topic of the Python standard library (a module, or a few files of one
package). Its replies are the docstrings of that topic, read from the running interpreter's own
stdlib source files (with `ast`, nothing imported) or, for the modules written in C, from the
imported module's __doc__ strings. Nothing is copied into the repository: the corpus is rebuilt
at run time, and it is byte-identical run to run on the same CPython version (the version is in
the manifest, a different 3.11.x may change a few docstrings).

The prompts are short and mechanical ("what does the json module do?", "what do dump and
dumps do in json?"): the words people wrote are the replies, the queries are judged against
them.

Also here: the content-word check that proves a "no-shared" query shares no word with its
target session (used by bench/eval.py, which fails if it does not hold).

    .venv/bin/python bench/eval/corpus.py [OUT]  # print stats; with OUT, write the history there
"""
from __future__ import annotations

import ast
import datetime
import hashlib
import importlib
import inspect
import json
import re
import sys
import sysconfig
import uuid
from pathlib import Path

CORPUS_VERSION = 1  # bump when the topics, the layout or the line shapes change
NOW = 1_795_000_000  # fixed "now" (2026-11-18) as in bench/run.py: the history never moves
# Sessions start between 75 and 15 days before NOW: older than a week before any real clock
# from NOW on, so keyword search's recency points (only within 7 days) never apply.
FIRST_DAY, LAST_DAY = 75, 15
MAX_EXCHANGES = 8  # the first prompt plus at most seven follow-ups, as in a short session
REPLY_TARGET = 2500  # member docstrings are grouped into replies of about this many characters
MIN_TOPIC_CHARS = 1500  # a topic with less docstring text than this is too thin to find
NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/prima-memory/bench/eval")

# Session name -> its sources: stdlib files (relative to the stdlib folder) read with ast, or
# "c:<module>" for a module built in C, whose docstrings are read from the imported module.
# Near twins are left out (optparse and getopt beside argparse, aifc and sunau beside wave,
# py_compile beside compileall, binascii beside base64, select beside selectors, pipes beside
# subprocess, cgi beside http.server), so that each query has one right session.
TOPICS: dict[str, list[str]] = {
    "argparse": ["argparse.py"],
    "ast": ["ast.py"],
    "asyncio": ["asyncio/tasks.py", "asyncio/locks.py", "asyncio/queues.py", "asyncio/streams.py"],
    "base64": ["base64.py"],
    "bz2": ["bz2.py"],
    "calendar": ["calendar.py"],
    "cmd": ["cmd.py"],
    "code": ["code.py"],
    "codecs": ["codecs.py"],
    "collections": ["collections/__init__.py"],
    "compileall": ["compileall.py"],
    "concurrent.futures": ["concurrent/futures/_base.py", "concurrent/futures/thread.py",
                           "concurrent/futures/process.py"],
    "configparser": ["configparser.py"],
    "contextlib": ["contextlib.py"],
    "copy": ["copy.py"],
    "cProfile": ["cProfile.py", "pstats.py"],
    "csv": ["csv.py", "c:_csv"],
    "dataclasses": ["dataclasses.py"],
    "datetime": ["datetime.py"],
    "decimal": ["_pydecimal.py"],
    "difflib": ["difflib.py"],
    "dis": ["dis.py"],
    "doctest": ["doctest.py"],
    "email.message": ["email/message.py"],
    "enum": ["enum.py"],
    "filecmp": ["filecmp.py"],
    "fileinput": ["fileinput.py"],
    "ftplib": ["ftplib.py"],
    "functools": ["functools.py"],
    "gc": ["c:gc"],
    "graphlib": ["graphlib.py"],
    "gzip": ["gzip.py"],
    "heapq": ["heapq.py"],
    "hmac": ["hmac.py"],
    "http.client": ["http/client.py"],
    "http.cookiejar": ["http/cookiejar.py"],
    "http.server": ["http/server.py"],
    "imaplib": ["imaplib.py"],
    "importlib.metadata": ["importlib/metadata/__init__.py"],
    "inspect": ["inspect.py"],
    "io": ["io.py", "c:_io"],
    "ipaddress": ["ipaddress.py"],
    "itertools": ["c:itertools"],
    "json": ["json/__init__.py", "json/decoder.py", "json/encoder.py"],
    "locale": ["locale.py"],
    "logging": ["logging/__init__.py"],
    "lzma": ["lzma.py"],
    "mailbox": ["mailbox.py"],
    "math": ["c:math"],
    "mimetypes": ["mimetypes.py"],
    "multiprocessing": ["multiprocessing/pool.py", "multiprocessing/managers.py"],
    "nntplib": ["nntplib.py"],
    "operator": ["operator.py"],
    "pathlib": ["pathlib.py"],
    "pdb": ["pdb.py"],
    "pickle": ["pickle.py"],
    "pkgutil": ["pkgutil.py"],
    "platform": ["platform.py"],
    "plistlib": ["plistlib.py"],
    "poplib": ["poplib.py"],
    "queue": ["queue.py"],
    "random": ["random.py"],
    "re": ["re/__init__.py"],
    "sched": ["sched.py"],
    "selectors": ["selectors.py"],
    "shelve": ["shelve.py"],
    "shutil": ["shutil.py"],
    "smtplib": ["smtplib.py"],
    "socket": ["socket.py"],
    "socketserver": ["socketserver.py"],
    "sqlite3": ["c:_sqlite3"],
    "ssl": ["ssl.py"],
    "statistics": ["statistics.py"],
    "struct": ["c:_struct"],
    "subprocess": ["subprocess.py"],
    "sysconfig": ["sysconfig.py"],
    "tarfile": ["tarfile.py"],
    "telnetlib": ["telnetlib.py"],
    "tempfile": ["tempfile.py"],
    "textwrap": ["textwrap.py"],
    "threading": ["threading.py"],
    "time": ["c:time"],
    "timeit": ["timeit.py"],
    "tokenize": ["tokenize.py"],
    "trace": ["trace.py"],
    "traceback": ["traceback.py"],
    "typing": ["typing.py"],
    "unicodedata": ["c:unicodedata"],
    "unittest.mock": ["unittest/mock.py"],
    "urllib.parse": ["urllib/parse.py"],
    "urllib.request": ["urllib/request.py"],
    "uuid": ["uuid.py"],
    "venv": ["venv/__init__.py"],
    "warnings": ["warnings.py"],
    "wave": ["wave.py"],
    "weakref": ["weakref.py"],
    "xml.etree.ElementTree": ["xml/etree/ElementTree.py"],
    "xmlrpc": ["xmlrpc/client.py", "xmlrpc/server.py"],
    "zipfile": ["zipfile.py"],
    "zlib": ["c:zlib"],
}


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


# --- docstrings ------------------------------------------------------------------------------

def _public(name: str) -> bool:
    return not name.startswith("_") or name == "__init__"


def _signature(node) -> str:
    try:
        return f"{node.name}({ast.unparse(node.args)})"
    except Exception:  # noqa: BLE001 - a signature is decoration only
        return f"{node.name}()"


def _docs_from_source(path: Path) -> tuple[str, list[tuple[str, str]]]:
    """(module docstring, [(member, docstring)]) in source order: public functions and classes,
    then each class's public methods (and __init__) right after its class."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    members = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _public(node.name) \
                and node.name != "__init__":
            doc = ast.get_docstring(node)
            if doc:
                members.append((_signature(node), doc))
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            doc = ast.get_docstring(node)
            if doc:
                members.append((f"class {node.name}", doc))
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and _public(sub.name):
                    doc = ast.get_docstring(sub)
                    if doc:
                        members.append((f"{node.name}.{_signature(sub)}", doc))
    return ast.get_docstring(tree) or "", members


def _docs_from_c(modname: str) -> tuple[str, list[tuple[str, str]]]:
    """The same for a module built in C: its objects in alphabetical order (dir), a class's own
    methods in definition order."""
    mod = importlib.import_module(modname)
    members = []
    for name in sorted(dir(mod)):
        if name.startswith("_"):
            continue
        obj = getattr(mod, name)
        if not (inspect.isclass(obj) or callable(obj)):
            continue
        doc = obj.__doc__ if isinstance(getattr(obj, "__doc__", None), str) else None
        label = f"class {name}" if inspect.isclass(obj) else name
        if doc and not (inspect.isclass(obj) and doc == type.__doc__):
            members.append((label, inspect.cleandoc(doc)))
        if inspect.isclass(obj):
            for mname, meth in vars(obj).items():
                mdoc = getattr(meth, "__doc__", None)
                if _public(mname) and isinstance(mdoc, str) and mdoc.strip():
                    members.append((f"{name}.{mname}", inspect.cleandoc(mdoc)))
    return inspect.cleandoc(mod.__doc__ or ""), members


def topic_docs(topic: str) -> tuple[str, list[tuple[str, str]]]:
    """A topic's module docstring(s) and member docstrings, duplicates dropped."""
    head, members, seen = [], [], set()
    for src in TOPICS[topic]:
        doc, mems = (_docs_from_c(src[2:]) if src.startswith("c:")
                     else _docs_from_source(stdlib_dir() / src))
        if doc.strip():
            head.append(doc.strip())
        for label, d in mems:
            d = d.strip()
            if d and d not in seen:
                seen.add(d)
                members.append((label, d))
    return "\n\n".join(head), members


# --- sessions --------------------------------------------------------------------------------

class Session:
    def __init__(self, topic: str, exchanges: list[tuple[str, str]]):
        self.topic = topic
        self.session_id = str(uuid.uuid5(NAMESPACE, topic))
        self.exchanges = exchanges

    def text(self) -> str:
        return "\n".join(p + "\n" + r for p, r in self.exchanges)


def _names(labels: list[str]) -> str:
    names = [lb.split("(")[0].replace("class ", "") for lb in labels]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def build_session(topic: str) -> Session | None:
    """A few exchanges: the module docstring first, then the member docstrings grouped into
    replies of about REPLY_TARGET characters, in source order, until MAX_EXCHANGES."""
    head, members = topic_docs(topic)
    total = len(head) + sum(len(d) for _, d in members)
    if total < MIN_TOPIC_CHARS:
        return None
    exchanges = []
    if head:
        exchanges.append((f"what does the {topic} module do?", head))
    group: list[tuple[str, str]] = []

    def flush():
        if group:
            verb = "does" if len(group) == 1 else "do"
            prompt = f"what {verb} {_names([g[0] for g in group])} do in {topic}?"
            reply = "\n\n".join(f"`{label}`\n\n{doc}" for label, doc in group)
            exchanges.append((prompt, reply))
            group.clear()

    size = 0
    for label, doc in members:
        if len(exchanges) >= MAX_EXCHANGES:
            break
        group.append((label, doc))
        size += len(doc)
        if size >= REPLY_TARGET or len(group) >= 6:
            flush()
            size = 0
    if len(exchanges) < MAX_EXCHANGES:
        flush()
    if not exchanges:
        return None
    if not head:  # no module docstring: the first prompt still names the module
        p, r = exchanges[0]
        exchanges[0] = (f"what does the {topic} module do? " + p[0].upper() + p[1:], r)
    return Session(topic, exchanges)


def build_sessions() -> list[Session]:
    return [s for s in (build_session(t) for t in sorted(TOPICS)) if s]


# --- transcript lines (the shapes of tests/conftest.py's Transcript) --------------------------

def encode(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def _ts(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.") + f"{int(t * 1000) % 1000:03d}Z"


def _start(topic: str) -> float:
    """A start time from the topic's hash, so that time order is not alphabetical order."""
    h = int(hashlib.sha256(topic.encode()).hexdigest()[:8], 16)
    span = (FIRST_DAY - LAST_DAY) * 86400
    return NOW - FIRST_DAY * 86400 + h % span


def transcript_lines(s: Session, cwd: str) -> list[str]:
    t = _start(s.topic)
    parent, n, lines = None, 0, []

    def base(kind: str, step: float) -> dict:
        nonlocal parent, n, t
        n += 1
        t += step
        u = f"{s.session_id[:8]}-main-{n:06d}"
        d = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd,
             "sessionId": s.session_id, "version": "2.1.100", "gitBranch": "main",
             "type": kind, "uuid": u, "timestamp": _ts(t)}
        parent = u
        return d

    for prompt, reply in s.exchanges:
        d = base("user", 90.0)
        d["message"] = {"role": "user", "content": prompt}
        lines.append(json.dumps(d, ensure_ascii=False))
        msg_id = f"msg_{s.session_id[:6]}{n:05d}"
        d = base("assistant", 5.0 + len(reply) / 200)  # a long reply takes longer to write
        d["requestId"] = "req_" + msg_id[4:]
        d["message"] = {"model": "claude-sonnet-4-5", "id": msg_id, "type": "message",
                        "role": "assistant", "content": [{"type": "text", "text": reply}],
                        "stop_reason": None, "usage": {"input_tokens": 3, "output_tokens": 2}}
        lines.append(json.dumps(d, ensure_ascii=False))
    return lines


def digest(sessions: list[Session]) -> str:
    """A fingerprint of the corpus text (not of the paths it is written under)."""
    h = hashlib.sha256(f"{CORPUS_VERSION}".encode())
    for s in sessions:
        h.update(json.dumps([s.topic, s.session_id, _start(s.topic), s.exchanges]).encode())
    return h.hexdigest()[:16]


def write_history(out: Path, sessions: list[Session] | None = None) -> dict:
    """Write OUT/claude/projects/<encoded OUT/ws>/<uuid>.jsonl (and mkdir OUT/ws); returns the
    manifest (also written to OUT/corpus.json): version, digest, topic -> session id."""
    sessions = sessions if sessions is not None else build_sessions()
    out = out.resolve()
    ws = out / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    proj = out / "claude" / "projects" / encode(str(ws))
    proj.mkdir(parents=True, exist_ok=True)
    for s in sessions:
        body = "\n".join(transcript_lines(s, str(ws))) + "\n"
        (proj / f"{s.session_id}.jsonl").write_text(body, encoding="utf-8")
    manifest = {"version": CORPUS_VERSION, "python": sys.version.split()[0],
                "digest": digest(sessions), "workspace": str(ws),
                "sessions": {s.topic: s.session_id for s in sessions}}
    (out / "corpus.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def stats(sessions: list[Session]) -> dict:
    replies = [r for s in sessions for _, r in s.exchanges]
    chars = sum(len(p) + len(r) for s in sessions for p, r in s.exchanges)
    per = sorted(len(s.text()) for s in sessions)
    return {"sessions": len(sessions), "exchanges": len(replies), "characters": chars,
            "session_chars_min_median_max": (per[0], per[len(per) // 2], per[-1]),
            "exchanges_over_2000": sum(len(r) > 2000 for r in replies),
            "share_over_2000": round(sum(len(r) > 2000 for r in replies) / len(replies), 3)}


# --- content words ---------------------------------------------------------------------------

# Function words and words too generic to count as sharing content with a session.
STOPWORDS = set("""
a s t d ll re ve don doesn isn wasn won can
about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing done down during each either else
ever every few for from further get gets got had has have having he her here hers him his how
i if in into is it its itself just let like made make many may me might more most much must my
need no nor not now of off on once one only or other our ours out over own per same she should
so some something such than that the their them then there these they this those through thus
to too under until up upon us very via want was way we were what when where whether which while
who whom why will with within without would yet you your
use used uses using look looked session sessions
file files python module modules function functions code library stdlib
""".split())
_WORD = re.compile(r"\w+")


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


def shared_words(query: str, target_words: set[str]) -> list[str]:
    """Query words the target shares: equal, or one a prefix of the other with the shorter at
    least 4 characters long (plurals, -ing and -ed forms)."""
    out = []
    for q in sorted(content_words(query)):
        if q in target_words:
            out.append(q)
            continue
        for w in target_words:
            short, long_ = (q, w) if len(q) <= len(w) else (w, q)
            if len(short) >= 4 and long_.startswith(short):
                out.append(f"{q}~{w}")
                break
    return out


def check_queries(queries: list[dict], sessions: list[Session]) -> list[str]:
    """The set's rules, as a list of what breaks them (empty when all hold): every target is a
    session, every kind is shared or no-shared, a "no-shared" query shares no content word with
    any text of its target, and at least a third of the queries are no-shared."""
    by_topic = {s.topic: s for s in sessions}
    errors, seen = [], set()
    for i, q in enumerate(queries, 1):
        text, target, kind = q.get("query", ""), q.get("target"), q.get("kind")
        where = f"query {i} {text!r}"
        if not content_words(text):
            errors.append(f"{where}: no content word")
        if text.lower() in seen:
            errors.append(f"{where}: duplicate")
        seen.add(text.lower())
        if target not in by_topic:
            errors.append(f"{where}: target {target!r} is not a session of the corpus")
            continue
        if kind not in ("shared", "no-shared"):
            errors.append(f"{where}: kind {kind!r} is neither shared nor no-shared")
        elif kind == "no-shared":
            shared = shared_words(text, content_words(by_topic[target].text()))
            if shared:
                errors.append(f"{where}: labelled no-shared but shares {', '.join(shared)} "
                              f"with {target}")
    if 3 * sum(q.get("kind") == "no-shared" for q in queries) < len(queries):
        errors.append("fewer than a third of the queries are no-shared")
    return errors


if __name__ == "__main__":
    sess = build_sessions()
    skipped = sorted(set(TOPICS) - {s.topic for s in sess})
    if len(sys.argv) > 1:
        m = write_history(Path(sys.argv[1]), sess)
        print(f"wrote {len(sess)} sessions under {sys.argv[1]} (digest {m['digest']})")
    print(json.dumps(stats(sess)))
    if skipped:
        print("too thin, left out:", ", ".join(skipped))
