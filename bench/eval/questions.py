"""The second evaluation set: /recall questions over a big history with long sessions and forks.

The first set (corpus.py) asks for one module among 100 short sessions. Real histories are not
like that, and three things that set cannot show go wrong in them:

1. Questions typed as sentences ("when did we fix the login redirect"): keyword search wants
   every word, filler included, and a long session full of everyday words has them all, so it
   matches on "when", "did", "we" and "the" and, rescaled to 100 points, outranks the session
   the question means.
2. Queries that match nothing ("zxqv nonsense"): whatever clears the similarity floor comes back.
3. Forks and resumes: `--fork-session` (and some resumes) write a new transcript whose first
   lines copy the earlier session's (the same uuids and assistant message ids under a new
   sessionId); the copies fill the top 10.

So this corpus has, in one workspace's Claude Code project folder:

- 38 target sessions, one per sentence question of questions.json: a problem told in a few
  short prompts written here ("after signing in, the login redirect sends people straight back
  to the sign-in page"), answered with the docstrings of the standard library code the
  problem is about (urllib.request's redirect handler and http.cookiejar for that one);
- 120 long sessions (20 to 28 exchanges, over 20,000 characters each) and a few hundred short
  ones whose prompts are everyday chat ("ok, when did we last look at this? can you fix the
  thing we did before") and whose replies are prose people wrote: the comments of CPython's
  standard library and test suite, IDLE's NEWS and README files, the README files and newest
  Debian changelog entries under /usr/share/doc, and, when the folder is there, the prompts and
  replies of the real transcripts in ../shared/fixtures/claude-code;
- a session per other stdlib module with enough docstrings (built like the first set's) and
  one per section of the Python reference manual (pydoc_data.topics);
- forks: 1 to 3 copies of every third target and of 8 long sessions: a new sessionId whose
  first lines are the origin's lines (same uuid, parentUuid, timestamps and message.id; only
  sessionId differs), some or all of its exchanges, then one or two exchanges of its own.

No session other than a target reads a target's source files or their tests, so each question
has one right answer: its target (a fork of it counts as a copy, not as the answer). Nothing is
copied into the repository: the text is read at run time from the running CPython (its stdlib
folder and pydoc_data), /usr/share/doc and the fixtures; the digest changes when any of them
does (another CPython, other packages installed, no fixtures), and the checks run again. Sessions start between
75 and 15 days before the fixed NOW (forks up to 4 days after their origin), so keyword search's
recency points never apply.

Each target's last exchange edits or writes a project file or two (TARGET_FILES), as Claude Code
records it: a tool_use line (Edit or Write, with the absolute file_path) in the reply's turn and a
user line with its tool_result; one in two chat sessions edits one of a few common files.

questions.json holds the questions with their targets, each of a kind, and 20 queries that
should find nothing. check_set() fails the set (and bench/eval.py stops) when a rule breaks:
at least 100 questions and 20 of each kind; no two of one kind name one target; and per kind

- "sentence": typed as people type into /recall ("when did we fix the login redirect");
- "identifier": a name or an error string as written (`TimeoutExpired`, `TypeError: Object of
  type datetime is not JSON serializable`, `-X importtime`), found in the target's text and in
  no other session's (forks aside);
- "paraphrase": shares no content word (corpus.py's rule: no stopword, no form of one another)
  with any text of its target, file paths included: only meaning can find it;
- "file": names a file ("when did we touch config.py", "the csv importer module": its name or
  every word of its name), which the target records as edited or written and no other session
  touches a file of that name;

all but identifiers in lower case; and no content word of a nothing-query (or a form of it: the
first set's prefix rule) occurs in any session. split() gives each query "dev" or "test" by a
hash of its text.

    .venv/bin/python bench/eval/questions.py [OUT]  # print stats; with OUT, write the history there
"""
from __future__ import annotations

import datetime
import gzip
import hashlib
import json
import random
import re
import sys
import uuid
from pathlib import Path

import corpus  # bench/eval/corpus.py (bench/eval.py puts this folder on sys.path)
from corpus import NOW, content_words, encode, shared_words, stdlib_dir

CORPUS_VERSION = 3  # bump when the sources, the layout or the line shapes change
NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/prima-memory/bench/eval/questions")
FIRST_DAY, LAST_DAY = 75, 15  # as in corpus.py
REPLY_TARGET = 1500  # replies are grouped up to about this many characters
LONG_SESSIONS = 120
LONG_EXCHANGES = (20, 28)  # a long session has this many exchanges (inclusive)
LONG_MIN_CHARS = 20_000  # and at least this many characters
SHORT_EXCHANGES = (3, 6)
FORKED_LONG = 8  # long sessions that get one fork each
FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "claude-code"
QUESTIONS = Path(__file__).resolve().parent / "questions.json"

# name -> (sources, prompts). A source is a stdlib file read with ast ("path"), only its
# members whose label contains one of the given words ("path::Word1,Word2"), a module built in
# C ("c:module") or a section of the reference manual ("topic:key"). The prompts tell the
# problem; each gets the next reply of about REPLY_TARGET characters of the sources' docstrings.
# Replies left over are what the forks of a target add.
TARGETS: dict[str, tuple[list[str], list[str]]] = {
    "login-redirect": (
        ["urllib/request.py::Redirect,Cookie,build_opener,urlopen,OpenerDirector",
         "http/cookiejar.py"],
        ["after signing in, the login redirect sends people straight back to the sign-in page. "
         "can you look at how the redirect is followed?",
         "the session cookie is set on the login response but it is gone after the 302",
         "so the opener that follows the redirect never sees the cookie jar. let's share it",
         "ok, and make sure the cookie policy accepts the cookie from the login host"]),
    "memory-leak": (
        ["c:gc", "tracemalloc.py"],
        ["the worker process keeps growing in memory overnight, i think we have a leak",
         "can we find out which objects are piling up? the garbage collector should free them",
         "let's take two tracemalloc snapshots an hour apart and compare them"]),
    "flaky-timezone-test": (
        ["datetime.py::tzinfo,timezone,utcoffset,astimezone,fromtimestamp,now", "c:zoneinfo",
         "c:time::tzset,localtime,gmtime,mktime", "calendar.py::timegm"],
        ["the timezone test fails every now and then, only on the build machine",
         "it depends on the machine's local zone and on daylight saving time",
         "let's pin the zone in the test instead of using local time"]),
    "websocket-reconnect": (
        ["asyncio/streams.py", "socket.py::create_connection,timeout"],
        ["the websocket client drops the connection after a while and never reconnects",
         "we need to notice that the stream is closed and open a new connection",
         "ok, wait a bit longer before each reconnect attempt and give up after ten"]),
    "log-rotation": (
        ["logging/handlers.py::Rotating,rollover,Rollover,WatchedFileHandler"],
        ["the app log file is forty gigabytes, nothing ever rotates it",
         "rotate the log every night and keep a week of backups",
         "the other process still writes to the old file after the rotation"]),
    "export-deadlock": (
        ["threading.py::RLock,Condition,Lock,acquire,release,Event"],
        ["the export hangs forever, two worker threads are waiting on each other",
         "one thread takes the cache lock then the database lock, the other the other way round",
         "let's use one reentrant lock and a condition to hand the rows over"]),
    "unicode-customer-file": (
        ["codecs.py::open,EncodedFile,StreamReader,decode,BOM,lookup"],
        ["reading the customer file blows up on some names: UnicodeDecodeError: 'utf-8' codec "
         "can't decode byte 0xe9 in position 14: invalid continuation byte",
         "the file is latin-1, not utf-8, and some exports start with a byte order mark",
         "open it with the right encoding and replace what cannot be decoded"]),
    "zip-upload": (
        ["zipfile.py"],
        ["the zip archives people upload come out broken, some entries are missing",
         "big uploads over four gigabytes fail too, does that need zip64?",
         "ok, let's test each archive before we accept it"]),
    "config-defaults": (
        ["configparser.py"],
        ["the settings file ignores the values in the defaults section",
         "and the paths that refer to other options are not expanded",
         "let's read the user's file over the packaged defaults"]),
    "csv-semicolons": (
        ["csv.py", "c:_csv"],
        ["the spreadsheet import breaks on quoted commas and on files that use semicolons",
         "can we guess the delimiter from the first lines of the file?",
         "write the cleaned rows back out with the same dialect"]),
    "dry-run-flag": (
        ["argparse.py"],
        ["let's add command line flags to the export script: --since and a --dry-run switch",
         "and subcommands for export and import, each with its own help",
         "the dry run flag should be mutually exclusive with --force"]),
    "email-attachments": (
        ["email/message.py"],
        ["the report emails arrive without their pdf attachments",
         "the message is built as plain text, not as a multipart message",
         "add the pdf as an attachment part with a filename"]),
    "mail-server-auth": (
        ["smtplib.py"],
        ["sending mail through the office server fails at authentication with "
         "SMTPNotSupportedError: SMTP AUTH extension not supported by server",
         "the server wants starttls before it accepts the login",
         "ok, and close the connection properly when the send fails"]),
    "json-dates": (
        ["json/encoder.py", "json/__init__.py::dump,dumps,loads", "json/decoder.py"],
        ["the api response fails with: TypeError: Object of type datetime is not JSON serializable",
         "let's teach the encoder to write dates as iso strings",
         "and read them back into dates when we load the response"]),
    "temp-files": (
        ["tempfile.py"],
        ["the scratch folder is full of temporary files we never delete",
         "use a temporary directory that cleans itself up when the job ends"]),
    "git-output-hang": (
        ["subprocess.py::run,Popen,communicate,check_output,wait,TimeoutExpired"],
        ["i need the output of the git log command in the script, and it hangs when the output "
         "is big",
         "the pipe fills up because we wait before reading it",
         "let's read everything with communicate and add a timeout"]),
    "certificate-verify": (
        ["ssl.py"],
        ["calls to the internal server fail with CERTIFICATE_VERIFY_FAILED",
         "the server uses our own certificate authority, not a public one",
         "load our ca bundle into the context instead of turning verification off"]),
    "invoice-rounding": (
        ["_pydecimal.py::quantize,ROUND,Context,class Decimal,to_integral"],
        ["the invoice totals are off by a cent, we add the prices up as floats",
         "switch the money amounts to Decimal and round half up to two places"]),
    "slow-startup": (
        ["cProfile.py", "pstats.py", "profile.py"],
        ["the command line tool takes four seconds to start, let's profile it with -X importtime "
         "first",
         "sort the profile by cumulative time and show the top twenty",
         "most of it is imports we don't need at start-up"]),
    "pickle-rename": (
        ["pickle.py", "c:copyreg", "pickletools.py"],
        ["the saved jobs from last month fail to load since we renamed the class: AttributeError: "
         "Can't get attribute 'ExportJob' on <module 'app.jobs'>",
         "the old pickles still name the old module path",
         "let's map the old name to the new class when unpickling"]),
    "feed-namespaces": (
        ["xml/etree/ElementTree.py"],
        ["the rss feed parser finds no items, the elements have a namespace",
         "find the entries with the namespace map instead of the bare tag names"]),
    "mock-network": (
        ["unittest/mock.py"],
        ["the tests call the real shipping api over the network, we need to mock it",
         "patch the client where it is used, not where it is defined",
         "check that the mock was called with the right arguments"]),
    "windows-paths": (
        ["pathlib.py", "ntpath.py"],
        ["the backup script breaks on windows, backslashes and drive letters everywhere",
         "let's build the paths with pathlib instead of joining strings"]),
    "truncated-gzip": (
        ["gzip.py", "c:zlib"],
        ["the compressed exports come out truncated, reading them ends early",
         "we never close the gzip file, so the last block is never flushed"]),
    "nightly-cleanup": (
        ["sched.py", "c:time::sleep,monotonic,time,localtime,mktime,strftime"],
        ["run the cleanup every night at two without cron",
         "schedule the next run after each one finishes"]),
    "dev-server-keepalive": (
        ["http/server.py", "http/client.py::HTTPResponse,HTTPConnection,close,begin"],
        ["the local dev server hangs when the browser keeps the connection open",
         "it serves one request at a time and keep-alive blocks the next one",
         "use the threading server so each connection gets its own thread"]),
    "repeatable-simulation": (
        ["random.py"],
        ["the simulation gives different numbers on every run, we want it repeatable",
         "seed one generator of our own instead of the global one"]),
    "search-link-encoding": (
        ["urllib/parse.py"],
        ["the search links break when the query has spaces or an ampersand in it",
         "quote the query parameters before building the url"]),
    "contract-diff": (
        ["difflib.py"],
        ["show what changed between the two versions of the contract text",
         "a side by side html table would be easier for the lawyers to read"]),
    "tree-copy-recursion": (
        ["copy.py", "c:sys::recursionlimit"],
        ["copying the settings tree fails with RecursionError: maximum recursion depth exceeded",
         "the nodes point back at their parents, so copy has to remember what it copied"]),
    "tarball-extraction": (
        ["tarfile.py"],
        ["extracting the release tarball can write files outside the target folder",
         "check each member's name before extracting, and skip links"]),
    "bank-date-format": (
        ["_strptime.py", "c:time::strptime,strftime,struct_time"],
        ["dates from the bank statement are read as month/day instead of day/month, and some fail "
         "with ValueError: time data '13/02/2024' does not match format '%m/%d/%Y'",
         "parse them with an explicit format string instead of guessing"]),
    "password-hashing": (
        ["hashlib.py", "hmac.py", "secrets.py", "c:_hashlib::pbkdf2,scrypt,compare"],
        ["we still store the passwords as plain md5, let's switch to a salted slow hash",
         "and compare the hashes in constant time"]),
    "swallowed-exception": (
        ["traceback.py"],
        ["the worker dies silently, the exception is swallowed and the log only says failed",
         "log the whole traceback, with the chained causes"]),
    "stuck-download-task": (
        ["asyncio/tasks.py", "asyncio/queues.py"],
        ["the download task never finishes and the app waits forever at shutdown, then logs "
         "ERROR:asyncio:Task was destroyed but it is pending!",
         "cancel the pending tasks with a timeout and wait for them to end"]),
    "report-line-wrapping": (
        ["textwrap.py"],
        ["the long lines in the plain text report run off the page",
         "wrap them at seventy columns and indent the continuation lines"]),
    "slow-regex": (
        ["re/__init__.py"],
        ["the regex that searches the logs takes minutes on long lines",
         "catastrophic backtracking from the nested repeats, let's rewrite the pattern"]),
    "stale-price-cache": (
        ["functools.py"],
        ["the price lookups return stale values after an update, the cache never clears",
         "clear the lru cache when prices change, and cap its size"]),
}

# The project files each target's last exchange edits (Edit) or creates (Write), recorded as
# Claude Code records them: an assistant tool_use line whose input has the absolute file_path,
# then the user line carrying its tool_result. "file" questions ask about these; no other
# session touches a file of the same name.
TARGET_FILES: dict[str, list[tuple[str, str]]] = {
    "login-redirect": [("Edit", "app/auth/login.py"), ("Edit", "app/http/opener.py")],
    "memory-leak": [("Edit", "app/jobs/runner.py")],
    "flaky-timezone-test": [("Edit", "tests/test_timezones.py")],
    "websocket-reconnect": [("Edit", "app/realtime/ws_client.py")],
    "log-rotation": [("Edit", "config/logging.ini"), ("Edit", "app/logging_setup.py")],
    "export-deadlock": [("Edit", "app/export/exporter.py")],
    "unicode-customer-file": [("Edit", "app/importers/customer_reader.py")],
    "zip-upload": [("Write", "app/uploads/zip_check.py"), ("Edit", "app/uploads/handlers.py")],
    "config-defaults": [("Edit", "app/config.py"), ("Write", "config/defaults.ini")],
    "csv-semicolons": [("Edit", "app/importers/csv_importer.py")],
    "dry-run-flag": [("Edit", "scripts/export_cli.py")],
    "email-attachments": [("Edit", "app/reports/mailer.py")],
    "mail-server-auth": [("Edit", "app/notify/smtp_client.py")],
    "json-dates": [("Edit", "app/api/serializers.py")],
    "temp-files": [("Edit", "app/jobs/scratch.py")],
    "git-output-hang": [("Edit", "tools/git_history.py")],
    "certificate-verify": [("Edit", "app/clients/internal_api.py"),
                           ("Write", "certs/ca-bundle.pem")],
    "invoice-rounding": [("Edit", "app/billing/invoice.py")],
    "slow-startup": [("Edit", "app/cli.py")],
    "pickle-rename": [("Edit", "app/jobs/store.py")],
    "feed-namespaces": [("Edit", "app/feeds/rss_parser.py")],
    "mock-network": [("Edit", "tests/test_shipping.py")],
    "windows-paths": [("Edit", "scripts/backup.py")],
    "truncated-gzip": [("Edit", "app/export/gzip_writer.py")],
    "nightly-cleanup": [("Write", "app/cleanup/scheduler.py")],
    "dev-server-keepalive": [("Edit", "tools/devserver.py")],
    "repeatable-simulation": [("Edit", "sim/simulate.py")],
    "search-link-encoding": [("Edit", "app/web/search_links.py")],
    "contract-diff": [("Write", "tools/contract_diff.py")],
    "tree-copy-recursion": [("Edit", "app/settings_tree.py")],
    "tarball-extraction": [("Edit", "deploy/unpack_release.py")],
    "bank-date-format": [("Edit", "app/importers/bank_statement.py")],
    "password-hashing": [("Edit", "app/auth/passwords.py")],
    "swallowed-exception": [("Edit", "app/worker.py")],
    "stuck-download-task": [("Edit", "app/downloader.py")],
    "report-line-wrapping": [("Edit", "app/reports/plain_text.py")],
    "slow-regex": [("Edit", "app/logs/log_scanner.py")],
    "stale-price-cache": [("Edit", "app/pricing/lookup.py")],
}
# Files the long and short sessions touch (one in two of them, in one exchange), so that a
# recorded edit alone does not point at a target.
CHAT_FILES = ["README.md", "app/main.py", "app/utils.py", "app/models.py", "tests/conftest.py",
              "setup.cfg", "Makefile", "docs/notes.md", "app/views.py", "pyproject.toml",
              ".github/workflows/ci.yml", "app/__init__.py"]

# Everyday prompts for the long and short sessions: filler words everywhere, no target's topic.
CHAT_PROMPTS = [
    "ok, when did we last look at this? can you fix the thing we did before",
    "how did I set this up the first time? I don't remember what we changed",
    "what was the problem with this again, was it the same thing as last week?",
    "can you go through this part once more, I want to be sure we got it right",
    "that looks better. what else do we need to change before I try it again?",
    "hmm, I think we did something like this before. what did we do then?",
    "so what was the fix in the end? I want to write it down",
    "ok let's keep going. what does this bit do and why was it done this way?",
    "wait, did that change anything? it still looks the same to me",
    "can you explain it in plain words, I was not here when we did this",
    "right. and how did we handle this the last time it came up?",
    "I tried it and it did not work. what was I supposed to do first?",
    "good, that makes sense. can you check the rest of it the same way?",
    "what would you do here? I don't want to break what we fixed yesterday",
    "let's read the next part. is there anything here we should fix now?",
    "ok, thanks. did we ever finish the other thing we started on monday?",
    "one more question: when was this written and what was it for?",
    "how did this end up here? it was fine when I looked at it last time",
    "sorry, I lost track. where were we and what was left to do?",
    "that was the part I was worried about. is it safe to change it now?",
    "why did we do it like that? was there a reason or was it just quick?",
    "can you tell me what you found and what you think we should do next",
    "fine. now what about the notes further down, did we cover those?",
    "I want to get this done today. what is the smallest fix that works?",
]
FORK_PROMPTS = [
    "picking this up again from where we left off: does the fix still hold?",
    "let's try the other approach from here instead",
    "back to this one. what else did we not cover?",
]

# Words of the sources that would tie a long session to no particular topic but make its text
# unreadable: the encodings' character tables are left out.
_SKIP_DIRS = {"site-packages", "__pycache__", "encodings"}


class Session:
    def __init__(self, name: str, kind: str, exchanges: list[tuple[str, str]],
                 ops: dict[int, list[tuple[str, str]]] | None = None):
        self.name = name
        self.kind = kind  # target, long, short, doc, manual
        self.session_id = str(uuid.uuid5(NAMESPACE, name))
        self.exchanges = exchanges
        self.ops = ops or {}  # exchange index -> [(tool, path relative to the workspace)]

    def text(self, upto: int | None = None) -> str:
        """The prompts, replies and file operations (as "Edit app/config.py": what a search of
        the paths can match) of the first `upto` exchanges (all by default)."""
        return "\n".join(p + "\n" + r + "".join(f"\n{t} {f}" for t, f in self.ops.get(i, ()))
                         for i, (p, r) in enumerate(self.exchanges[:upto]))

    def files(self) -> set[str]:
        return {f for ops in self.ops.values() for _t, f in ops}

    def chars(self) -> int:
        return sum(len(p) + len(r) for p, r in self.exchanges)


class Fork:
    """A copy: the origin's first `copied` exchanges (its lines as written, sessionId aside),
    then exchanges of its own."""

    def __init__(self, name: str, origin: Session, copied: int, own: list[tuple[str, str]],
                 delay: float):
        self.name = name
        self.origin = origin
        self.copied = copied
        self.own = own
        self.delay = delay  # seconds after the origin's start
        self.session_id = str(uuid.uuid5(NAMESPACE, name))

    def text(self) -> str:
        return "\n".join([self.origin.text(self.copied)] + [p + "\n" + r for p, r in self.own])


# --- the sources -----------------------------------------------------------------------------

def _file_of(src: str) -> str | None:
    if src.startswith(("c:", "topic:")):
        return None
    return src.split("::")[0]


def target_files() -> set[str]:
    return {f for srcs, _ in TARGETS.values() for f in map(_file_of, srcs) if f}


def _target_tests() -> re.Pattern:
    """The test suite's files for the targets' modules (test_zipfile.py, test_asyncio/,
    datetimetester.py...): their comments talk about the same code, so they are left out too.
    A name matches a target module's name (or its package's) with "test_" before it and, for
    names of four letters or more, anything after it."""
    names = set()
    for f in target_files():
        parts = Path(f).with_suffix("").parts
        names.add(parts[-2] if parts[-1] == "__init__" else parts[-1].lstrip("_"))
        if len(parts) > 1:
            names.add(parts[0])
    alts = [rf"{re.escape(n)}\w*" if len(n) >= 4 else rf"{re.escape(n)}(_\w+|\d+)?"
            for n in sorted(names)]
    return re.compile(rf"^(test_)?({'|'.join(alts)})$", re.IGNORECASE)


def _source_docs(src: str) -> list[tuple[str, str]]:
    """(label, text) pieces of one source, in order; the module docstring first."""
    spec, _, words = src.partition("::")
    keep = [w.strip() for w in words.split(",") if w.strip()]
    if spec.startswith("topic:"):
        from pydoc_data.topics import topics
        return [("", p.strip()) for p in re.split(r"\n\s*\n", topics[spec[6:]]) if p.strip()]
    head, members = (corpus._docs_from_c(spec[2:]) if spec.startswith("c:")
                     else corpus._docs_from_source(stdlib_dir() / spec))
    if keep:
        members = [(lb, d) for lb, d in members if any(w in lb for w in keep)]
    out = [(spec, head.strip())] if head.strip() and not keep else []
    return out + [(lb, d.strip()) for lb, d in members if d.strip()]


def _group(pieces: list[tuple[str, str]], target: int = REPLY_TARGET) -> list[str]:
    """Pieces joined into replies of about `target` characters, in order, duplicates dropped."""
    out, cur, size, seen = [], [], 0, set()
    for label, text in pieces:
        if text in seen:
            continue
        seen.add(text)
        cur.append(f"`{label}`\n\n{text}" if label else text)
        size += len(text)
        if size >= target:
            out.append("\n\n".join(cur))
            cur, size = [], 0
    if cur:
        out.append("\n\n".join(cur))
    return out


def build_target(name: str) -> tuple[Session, list[str]]:
    """The target session and the replies left over for its forks."""
    sources, prompts = TARGETS[name]
    replies = _group([p for s in sources for p in _source_docs(s)])
    if len(replies) < len(prompts):
        raise SystemExit(f"target {name}: {len(replies)} replies for {len(prompts)} prompts")
    ops = {len(prompts) - 1: TARGET_FILES[name]}  # the fix lands in the last exchange
    return (Session(f"target:{name}", "target", list(zip(prompts, replies)), ops),
            replies[len(prompts):])


def comment_blocks(path: Path) -> list[str]:
    """Runs of whole-line comments (the #s stripped, joined) of eight words or more."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (UnicodeDecodeError, OSError):
        return []
    blocks, cur = [], []
    for line in lines + [""]:
        s = line.strip()
        if s.startswith("#"):
            s = s.lstrip("#!").strip()
            if s:
                cur.append(s)
            continue
        if cur:
            blocks.append(" ".join(cur))
            cur = []
    return [b for b in blocks if len(re.findall(r"[A-Za-z]{2,}", b)) >= 8]


def _debian_entries(path: Path, n: int = 30) -> list[str]:
    """The newest n entries of a Debian changelog, each as its lines joined."""
    out, cur = [], []
    try:
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(" -- "):
                    if cur:
                        out.append(" ".join(cur))
                    cur = []
                    if len(out) >= n:
                        break
                elif line.strip() and not line[0].isalnum():
                    cur.append(line.strip())
    except (OSError, EOFError):
        pass
    return [e for e in out if len(e.split()) >= 8]


def doc_texts() -> list[list[str]]:
    """From /usr/share/doc: each package's README files (their first 20,000 characters, as
    paragraphs) and the newest thirty entries of its Debian changelog; files with the same text
    once."""
    root = Path("/usr/share/doc")
    out, seen = [], set()
    if not root.is_dir():
        return out
    for pkg in sorted(p for p in root.iterdir() if p.is_dir()):
        for f in sorted(pkg.glob("README*")):
            try:
                raw = gzip.open(f).read() if f.suffix == ".gz" else f.read_bytes()
                text = raw[:20_000].decode("utf-8")
            except (OSError, UnicodeDecodeError, EOFError):
                continue
            if text in seen:
                continue
            seen.add(text)
            out.append(_paragraphs(text))
        f = pkg / "changelog.Debian.gz"
        if f.exists():
            entries = _debian_entries(f)
            key = "\n".join(entries)
            if entries and key not in seen:
                seen.add(key)
                out.append(entries)
    return out


def _paragraphs(text: str) -> list[str]:
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if len(p.split()) >= 6]


def _fixture_texts() -> tuple[list[str], list[str]]:
    """(user prompts of up to 300 characters, assistant texts) of the real transcripts."""
    prompts, replies = [], []
    if not FIXTURES.is_dir():
        return prompts, replies
    for path in sorted(FIXTURES.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                d = json.loads(line)
            except ValueError:
                continue
            content = (d.get("message") or {}).get("content")
            texts = [content] if isinstance(content, str) else [
                b.get("text", "") for b in content or [] if isinstance(b, dict)
                and b.get("type") == "text"]
            for t in texts:
                t = t.strip()
                if not t or t.startswith("<"):
                    continue
                if d.get("type") == "user" and len(t) <= 300 and len(t.split()) >= 3:
                    prompts.append(" ".join(t.split()))
                elif d.get("type") == "assistant" and len(t) >= 200:
                    replies.append(t)
    return prompts, replies


def prose_chunks() -> tuple[list[str], list[str]]:
    """(reply chunks of prose, real prompts): stdlib comments grouped per file, IDLE's text
    files per paragraph, /usr/share/doc's texts, the fixtures' replies; in a fixed order, then
    shuffled with a fixed seed. Target files and their tests are left out."""
    lib = stdlib_dir()
    skip, tests = target_files(), _target_tests()
    per_source: list[list[str]] = []
    for path in sorted(lib.rglob("*.py")):
        rel = path.relative_to(lib)
        if _SKIP_DIRS & set(rel.parts) or str(rel) in skip:
            continue
        if rel.parts[0] == "test" and len(rel.parts) > 1 and tests.match(
                Path(rel.parts[1]).stem):
            continue
        blocks = comment_blocks(path)
        if blocks:
            per_source.append(blocks)
    for name in ("NEWS.txt", "NEWS2x.txt", "HISTORY.txt", "README.txt", "TODO.txt",
                 "extend.txt", "CREDITS.txt"):
        p = lib / "idlelib" / name
        if p.exists():
            per_source.append(_paragraphs(p.read_text(encoding="utf-8")))
    per_source += doc_texts()
    prompts, replies = _fixture_texts()
    per_source += [[r] for r in replies]
    chunks, seen = [], set()
    for blocks in per_source:
        blocks = [b for b in blocks if not (b in seen or seen.add(b))]
        cur, size = [], 0
        for b in blocks:
            b = b[:2500]
            cur.append(b)
            size += len(b)
            if size >= 900:
                chunks.append("\n\n".join(cur))
                cur, size = [], 0
        if cur and size >= 300:
            chunks.append("\n\n".join(cur))
    random.Random(20).shuffle(chunks)
    return chunks, prompts


def doc_sessions(skip: set[str]) -> list[Session]:
    """A session per other stdlib module with 1,500 characters of docstrings or more, as in
    the first set: "what does the X module do?", then its members' docstrings."""
    lib = stdlib_dir()
    out = []
    for path in sorted(lib.rglob("*.py")):
        rel = path.relative_to(lib)
        if (_SKIP_DIRS | {"test", "tests", "idle_test"}) & set(rel.parts) or str(rel) in skip:
            continue
        try:
            head, members = corpus._docs_from_source(path)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        if len(head) + sum(len(d) for _, d in members) < corpus.MIN_TOPIC_CHARS:
            continue
        mod = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
        replies = _group(([("", head)] if head.strip() else []) + members, 2500)[:8]
        prompts = [f"what does the {mod} module do?"] + [
            f"and what else is in {mod}?" for _ in replies[1:]]
        out.append(Session(f"doc:{mod}", "doc", list(zip(prompts, replies))))
    return out


def manual_sessions() -> list[Session]:
    """A session per section of the Python reference manual (pydoc_data.topics)."""
    from pydoc_data.topics import topics
    out = []
    for key in sorted(topics):
        replies = _group([("", p) for p in re.split(r"\n\s*\n", topics[key].strip())], 2000)[:8]
        prompts = [f"how does {key} work in python?"] + [
            f"go on about {key}" for _ in replies[1:]]
        out.append(Session(f"manual:{key}", "manual", list(zip(prompts, replies))))
    return out


def _h(*parts) -> int:
    return int(hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:8], 16)


def _chat(chunks: list[str], prompts: list[str], name: str, n: int, pos: int) -> list:
    """n everyday exchanges from chunks[pos:]: a chat prompt (one in five a real one from the
    fixtures, when there are some) and a chunk of prose."""
    out = []
    for i in range(n):
        h = _h(name, i)
        pool = prompts if prompts and h % 5 == 0 else CHAT_PROMPTS
        out.append((pool[h // 5 % len(pool)], chunks[pos + i]))
    return out


def _chat_ops(name: str, n: int) -> dict[int, list[tuple[str, str]]]:
    """One in two chat sessions edits one of CHAT_FILES in one of its exchanges."""
    h = _h(name, "ops")
    return {} if h % 2 else {h // 2 % n: [("Edit", CHAT_FILES[h // 64 % len(CHAT_FILES)])]}


def build() -> tuple[list[Session], list[Fork]]:
    """Every session and every fork, in a fixed order."""
    targets, reserve = [], {}
    for name in TARGETS:
        s, rest = build_target(name)
        targets.append(s)
        reserve[s.name] = rest
    chunks, real_prompts = prose_chunks()
    sessions: list[Session] = list(targets)
    pos, longs = 2 * FORKED_LONG, []  # the first chunks are the long forks' own replies
    for i in range(LONG_SESSIONS):
        name = f"long:{i:03d}"
        lo, hi = LONG_EXCHANGES
        n = lo + _h(name) % (hi - lo + 1)
        ex = _chat(chunks, real_prompts, name, n, pos)
        pos += n
        while sum(len(p) + len(r) for p, r in ex) < LONG_MIN_CHARS:  # top up a thin one
            ex += _chat(chunks, real_prompts, name + "+", 1, pos)
            pos += 1
        longs.append(Session(name, "long", ex, _chat_ops(name, len(ex))))
    sessions += longs
    i = 0
    lo, hi = SHORT_EXCHANGES
    while True:  # the rest of the prose in short sessions
        name = f"short:{i:03d}"
        n = lo + _h(name) % (hi - lo + 1)
        if pos + n > len(chunks):
            break
        sessions.append(Session(name, "short", _chat(chunks, real_prompts, name, n, pos),
                                _chat_ops(name, n)))
        pos += n
        i += 1
    sessions += doc_sessions(target_files())
    sessions += manual_sessions()

    forks = []
    for k, s in enumerate(targets):
        if k % 3:
            continue
        for j in range(1 + _h(s.name, "forks") % 3):
            h = _h(s.name, "fork", j)
            copied = len(s.exchanges) if j == 0 else max(1, len(s.exchanges) - 1 - h % 2)
            extra = reserve[s.name][j:j + 1]
            own = [(FORK_PROMPTS[(h >> 4) % len(FORK_PROMPTS)], extra[0])] if extra else []
            if not own:
                own = [(FORK_PROMPTS[(h >> 4) % len(FORK_PROMPTS)], s.exchanges[-1][1][:600])]
            forks.append(Fork(f"fork:{s.name[7:]}:{j + 1}", s, copied, own,
                              delay=3600 * (2 + j * 20 + h % 12)))
    for k in range(FORKED_LONG):
        s = longs[k * (LONG_SESSIONS // FORKED_LONG)]
        h = _h(s.name, "fork")
        copied = len(s.exchanges) - h % 6
        own = _chat(chunks, real_prompts, s.name + ":fork", 2, 2 * k)
        forks.append(Fork(f"fork:{s.name}:1", s, copied, own, delay=3600 * (5 + h % 48)))
    return sessions, forks


# --- transcript lines (the shapes of corpus.transcript_lines) --------------------------------

def _ts(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.") + f"{int(t * 1000) % 1000:03d}Z"


def start(name: str) -> float:
    span = (FIRST_DAY - LAST_DAY) * 86400
    return NOW - FIRST_DAY * 86400 + _h(name, "start") % span


def _said(msg_id: str, block: dict) -> dict:
    """An assistant line's message: one content block of the turn `msg_id`."""
    return {"model": "claude-sonnet-4-5", "id": msg_id, "type": "message", "role": "assistant",
            "content": [block], "stop_reason": None,
            "usage": {"input_tokens": 3, "output_tokens": 2}}


def _lines(session_id: str, exchanges, cwd: str, t: float, parent: str | None = None,
           n: int = 0, ops: dict | None = None) -> list[list[dict]]:
    """Line dicts for the exchanges, one list per exchange, numbered on from n, the first user
    line's parent `parent`. An exchange with file operations (`ops`: index -> [(tool, path)])
    goes on as Claude Code writes it: the reply's turn continues on a line of its own per
    tool_use (the same message.id and requestId), each answered by a user line carrying the
    tool_result."""
    pre = session_id[:8]
    out = []

    def line(kind: str, message: dict, **extra) -> dict:
        nonlocal n, parent
        n += 1
        u = f"{pre}-main-{n:06d}"
        d = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd,
             "sessionId": session_id, "version": "2.1.100", "gitBranch": "main",
             "type": kind, "message": message, "uuid": u, "timestamp": _ts(t), **extra}
        parent = u
        return d

    for i, (prompt, reply) in enumerate(exchanges):
        t += 90.0
        group = [line("user", {"role": "user", "content": prompt})]
        t += 5.0 + len(reply) / 200
        msg_id = f"msg_{pre[:6]}{n + 1:05d}"
        group.append(line("assistant", _said(msg_id, {"type": "text", "text": reply}),
                          requestId="req_" + msg_id[4:]))
        for tool, rel in (ops or {}).get(i, ()):
            path = f"{cwd}/{rel}"
            call = f"toolu_{pre[:6]}{n + 1:05d}"
            # the inputs' text is not what this set measures: a line each, the same for all
            inp = ({"file_path": path, "old_string": "# before", "new_string": "# after",
                    "replace_all": False} if tool == "Edit"
                   else {"file_path": path, "content": "# written here\n"})
            t += 3.0
            group.append(line("assistant", _said(msg_id, {"type": "tool_use", "id": call,
                                                          "name": tool, "input": inp}),
                              requestId="req_" + msg_id[4:]))
            result = (f"The file {path} has been updated successfully." if tool == "Edit"
                      else f"File created successfully at: {path}")
            group.append(line("user", {"role": "user", "content": [
                {"tool_use_id": call, "type": "tool_result", "content": result}]},
                toolUseResult={"filePath": path}))
        out.append(group)
    return out


def session_lines(s: Session, cwd: str, upto: int | None = None) -> list[dict]:
    """The session's lines, of its first `upto` exchanges (all by default)."""
    groups = _lines(s.session_id, s.exchanges, cwd, start(s.name), ops=s.ops)
    return [d for g in groups[:upto] for d in g]


def fork_lines(f: Fork, cwd: str) -> list[dict]:
    """The origin's first lines as they are, under the fork's sessionId (same uuid, parentUuid,
    timestamp, message.id), then the fork's own exchanges, chained on."""
    copied = [dict(d, sessionId=f.session_id) for d in session_lines(f.origin, cwd, f.copied)]
    own = _lines(f.session_id, f.own, cwd, start(f.origin.name) + f.delay,
                 parent=copied[-1]["uuid"], n=len(copied))
    return copied + [d for g in own for d in g]


def digest(sessions: list[Session], forks: list[Fork]) -> str:
    h = hashlib.sha256(f"questions {CORPUS_VERSION}".encode())
    for s in sessions:
        h.update(json.dumps([s.name, s.session_id, start(s.name), s.exchanges,
                             sorted(s.ops.items())]).encode())
    for f in forks:
        h.update(json.dumps([f.name, f.session_id, f.origin.name, f.copied, f.own,
                             f.delay]).encode())
    return h.hexdigest()[:16]


def write_history(out: Path, built: tuple[list[Session], list[Fork]] | None = None) -> dict:
    """OUT/claude/projects/<encoded OUT/ws>/<sessionId>.jsonl for every session and fork; the
    manifest (also OUT/corpus.json): version, digest, workspace, name -> session id, and each
    fork's origin."""
    sessions, forks = built if built is not None else build()
    out = out.resolve()
    ws = out / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    proj = out / "claude" / "projects" / encode(str(ws))
    proj.mkdir(parents=True, exist_ok=True)

    def write(sid: str, lines: list[dict]) -> None:
        body = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in lines)
        (proj / f"{sid}.jsonl").write_text(body, encoding="utf-8")

    for s in sessions:
        write(s.session_id, session_lines(s, str(ws)))
    for f in forks:
        write(f.session_id, fork_lines(f, str(ws)))
    manifest = {"version": CORPUS_VERSION, "python": sys.version.split()[0],
                "digest": digest(sessions, forks), "workspace": str(ws),
                "sessions": {s.name: s.session_id for s in sessions},
                "kinds": {s.name: s.kind for s in sessions},
                "forks": {f.name: {"session": f.session_id, "origin": f.origin.name,
                                   "copied_exchanges": f.copied, "own_exchanges": len(f.own)}
                          for f in forks}}
    (out / "corpus.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def is_long(s: Session) -> bool:
    return len(s.exchanges) >= LONG_EXCHANGES[0] and s.chars() >= LONG_MIN_CHARS


def stats(sessions: list[Session], forks: list[Fork]) -> dict:
    kinds: dict[str, int] = {}
    for s in sessions:
        kinds[s.kind] = kinds.get(s.kind, 0) + 1
    per = sorted(s.chars() for s in sessions)
    return {"sessions": len(sessions), "kinds": kinds, "long": sum(map(is_long, sessions)),
            "forks": len(forks),
            "forked_targets": len({f.origin.name for f in forks if f.origin.kind == "target"}),
            "forked_long": len({f.origin.name for f in forks if f.origin.kind == "long"}),
            "files": len(sessions) + len(forks),
            "exchanges": sum(len(s.exchanges) for s in sessions)
            + sum(f.copied + len(f.own) for f in forks),
            "characters": sum(per), "session_chars_min_median_max": (per[0], per[len(per) // 2],
                                                                      per[-1]),
            "fixtures": FIXTURES.is_dir()}


# --- the rules -------------------------------------------------------------------------------

def load_set(path: Path = QUESTIONS) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def fold(text: str) -> str:
    return " ".join(text.lower().split())


def every_word_in(query: str, text: str) -> bool:
    """What keyword search wants of a session (today): every space-separated word of the query
    somewhere in its text, inside a longer word too."""
    low = text.lower()
    return all(w in low for w in fold(query).split())


KINDS = ("sentence", "identifier", "paraphrase", "file")
MIN_QUESTIONS, MIN_PER_KIND = 100, 20
# what marks an identifier or an error string: a character no English word has, or capitals
# inside a word (TimeoutExpired, HtmlDiff, JSON)
_IDENT = re.compile(r"[_.:()'/%-]|[a-z][A-Z]|[A-Z]{2}")


def split(query: str) -> str:
    """"dev" or "test", about half each, by a stable hash of the query's text: tune on dev,
    report test."""
    return ("dev", "test")[int(hashlib.sha256(fold(query).encode()).hexdigest()[:8], 16) % 2]


def _names_file(query: str, path: str) -> bool:
    """The query names the file: its name ("config.py"), or every word of the name's stem
    (csv_importer.py: "the csv importer module"; a word may be a form of another: importers)."""
    name = Path(path).name.lower()
    if name in query.lower():
        return True
    words = set(re.split(r"[^a-z0-9]+", query.lower()))
    return all(shared_words(w, words) for w in re.split(r"[^a-z0-9]+", Path(name).stem) if w)


def check_question(q: dict, target: Session, others: list[Session]) -> list[str]:
    """What breaks the rules of the question's kind. `others`: every session but the target
    (its forks are copies of it, so they are not there)."""
    text, kind = q["query"], q.get("kind")
    if kind not in KINDS:
        return [f"kind {kind!r} is not one of {', '.join(KINDS)}"]
    if kind != "identifier" and text != text.lower():  # typed as people type into /recall
        return ["not lower case"]
    if kind == "identifier":
        # typed as it is written, found in the target's text and in no other session's
        low = text.lower()
        if not _IDENT.search(text):
            return ["does not look like an identifier or an error string"]
        if low not in target.text().lower():
            return [f"does not occur in {target.name}"]
        holders = [s.name for s in others if low in s.text().lower()]
        if holders:
            return [f"occurs in {len(holders)} other sessions too ({', '.join(holders[:3])})"]
    if kind == "paraphrase":
        # only meaning can find it: no content word in common with any text of the target
        shared = shared_words(text, content_words(target.text()))
        if shared:
            return [f"a paraphrase shares {', '.join(shared)} with {target.name}"]
    if kind == "file":
        path = q.get("file", "")
        if path not in target.files():
            return [f"{target.name} does not record {path!r} as edited or written"]
        name = Path(path).name
        holders = [s.name for s in others if any(Path(f).name == name for f in s.files())]
        if holders:
            return [f"{name} is touched by other sessions too ({', '.join(holders[:3])})"]
        if not _names_file(text, path):
            return [f"does not name {path}"]
    return []


def check_set(qset: dict, sessions: list[Session], forks: list[Fork]) -> list[str]:
    """What breaks the set's rules (empty when they all hold)."""
    errors = []
    by_name = {s.name: s for s in sessions}
    questions, nothing = qset.get("questions", []), qset.get("nothing", [])
    if len(sessions) < 500:
        errors.append(f"{len(sessions)} sessions, fewer than 500 (forks aside)")
    if sum(map(is_long, sessions)) < 100:
        errors.append(f"{sum(map(is_long, sessions))} long sessions, fewer than 100")
    if len({f.origin.name for f in forks if f.origin.kind == "target"}) < 10:
        errors.append("fewer than 10 targets have forks")
    if len(questions) < MIN_QUESTIONS:
        errors.append(f"{len(questions)} questions, fewer than {MIN_QUESTIONS}")
    for kind in KINDS:
        n = sum(q.get("kind") == kind for q in questions)
        if n < MIN_PER_KIND:
            errors.append(f"{n} {kind} questions, fewer than {MIN_PER_KIND}")
    if len(nothing) != 20:
        errors.append(f"{len(nothing)} nothing-queries, not 20")
    seen, asked = set(), set()
    for i, q in enumerate(questions, 1):
        text, target = q.get("query", ""), q.get("target")
        where = f"question {i} {text!r}"
        if not content_words(text):
            errors.append(f"{where}: no content word")
        if fold(text) in seen:
            errors.append(f"{where}: duplicate")
        seen.add(fold(text))
        if by_name.get(target, None) is None or by_name[target].kind != "target":
            errors.append(f"{where}: target {target!r} is not a target session")
            continue
        if (q.get("kind"), target) in asked:
            errors.append(f"{where}: another {q.get('kind')} question names {target}")
        asked.add((q.get("kind"), target))
        others = [s for s in sessions if s.name != target]
        errors += [f"{where}: {e}" for e in check_question(q, by_name[target], others)]
    vocab: set[str] = set()
    texts = []
    for s in [*sessions, *forks]:
        vocab |= content_words(s.text())
        texts.append(s.text().lower())
    low = "\n".join(texts)
    for i, q in enumerate(nothing, 1):
        if not content_words(q):
            errors.append(f"nothing-query {i} {q!r}: no content word")
        if fold(q) in seen:
            errors.append(f"nothing-query {i} {q!r}: duplicate")
        seen.add(fold(q))
        shared = shared_words(q, vocab)
        if shared:
            errors.append(f"nothing-query {i} {q!r} shares {', '.join(shared)} with the corpus")
        inside = [w for w in sorted(content_words(q)) if w in low]
        if inside:
            errors.append(f"nothing-query {i} {q!r}: {', '.join(inside)} occurs in the corpus "
                          "(inside a word at least)")
    return errors


def shares(q: dict, by_name: dict[str, Session]) -> bool:
    """Whether the question shares a content word with its target (a paraphrase never does)."""
    return bool(shared_words(q["query"], content_words(by_name[q["target"]].text())))


if __name__ == "__main__":
    sess, frk = build()
    if len(sys.argv) > 1:
        m = write_history(Path(sys.argv[1]), (sess, frk))
        print(f"wrote {len(sess)} sessions and {len(frk)} forks under {sys.argv[1]} "
              f"(digest {m['digest']})")
    print(json.dumps(stats(sess, frk)))
    errs = check_set(load_set(), sess, frk) if QUESTIONS.exists() else ["no questions.json"]
    print("\n".join(errs) or "rules hold")
