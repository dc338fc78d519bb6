"""The command line (docs/design.md § Command line): parses it and hands the command to
commands.py, which asks the data API and renders its answer (`hook EVENT` and `mcp` never come
here: main.py hands them to hooks.py and mcp_server.py first). Errors become one line and an
exit status: 2 for a wrong request, 1 for anything else."""
from __future__ import annotations

import os
import sys

from . import __version__
from .errors import PrimaError, UsageError
from .sources.names import agents

EXIT_ERROR, EXIT_USAGE = 1, 2


class _Skipped:
    """A command not given this time: its options are not built (argparse takes some 1 ms a
    command to build them)."""

    def add_argument(self, *args, **kw) -> None:
        pass

    def add_subparsers(self, *args, **kw) -> _Skipped:
        return self

    def add_parser(self, *args, **kw) -> _Skipped:
        return self


def _columns() -> int:
    """The terminal's width as shutil.get_terminal_size gives it, without shutil's import."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


_SUPPRESS = "==SUPPRESS=="  # argparse.SUPPRESS: no default, the attribute set only when given

# Before or after the command alike: a subcommand's own default must not undo the option given
# before it (argparse lets it), hence SUPPRESS, and False set after parsing (the parents'
# actions are shared: a default set on one parser is every parser's).
_COMMON = (
    ("--json", {"action": "store_true", "default": _SUPPRESS, "help": "print one JSON document"}),
    ("--workspace", {"metavar": "DIR", "default": _SUPPRESS, "help": "the workspace to serve "
                     "(default: CLAUDE_PROJECT_DIR or the current folder)"}))
_EVERY = (("--all-projects", {"action": "store_true", "help": (
    f"every project on this machine ({agents()} sessions of any folder), "
    "not just this workspace")}),)


def _search_options() -> tuple:
    """The search command's own arguments, as argparse takes them (and _plain_search reads)."""
    from .timeparse import ACCEPTED as WHEN  # (only when a command is parsed)
    return (
        ("query", {"nargs": "+", "help": "words to find (taken literally)"}),
        ("--mode", {"choices": ["combined", "keyword", "semantic"], "default": "combined",
                    "help": "combined (default): by the words and by meaning, merged; keyword: "
                            "by the words alone; semantic: by meaning alone (needs the embedding "
                            "model)"}),
        ("--deep", {"action": "store_true", "help": "also search extracts and checkpoints"}),
        ("--limit", {"type": _positive, "default": 10, "metavar": "N",
                     "help": "at most N sessions (default 10)"}),
        ("--since", {"metavar": "WHEN", "help": f"only sessions from WHEN on: {WHEN}"}),
        ("--until", {"metavar": "WHEN", "help": "only sessions up to WHEN, as --since takes it "
                                                "(a day: to its end)"}),
        ("--branch", {"help": "only sessions on this git branch"}),
        ("--tag", {"help": "only sessions with this tag (python, bugfix, decision, ...)"}),
        ("--source", {"help": "only this source (claude-code, ...)"}),
        ("--context", {"type": _whole(0, MAX_CONTEXT), "default": 0, "metavar": "N",
                       "help": "show the turn that matched and N turns each side of it"}),
        _TEAM)


_ADMIN_DSN = "a DSN of a role that may create roles, schemas and extensions"
_TEAM = ("--team", {"action": "store_true", "help": "the team's memory on its server (team "
                    "join), not this machine's"})


def _plain_search(argv: list[str]):
    """The arguments of a search as argparse reads them, for a command line in the plain form
    (`search WORDS`, options spelled whole, each valid, the words in one run), read here: argparse
    imports re and gettext and builds its parser, some 8 ms of a keyword search that otherwise
    takes 20. None for any other command line (help, an error, an abbreviation): argparse
    reads it. (tests/test_cli_fast.py holds the two to the same answers.)"""
    from types import SimpleNamespace  # (the plain one of argparse.Namespace)
    before = {flag: kw for flag, kw in _COMMON}
    after = dict(before, **{flag: kw for flag, kw in _EVERY + _search_options()
                            if flag.startswith("-")})
    given: dict = {}
    words: list[str] = []
    command, apart, i = None, False, 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-"):
            if command is None:
                if arg != "search":
                    return None
                command = arg
            elif words and apart:  # a second run of words: argparse's error
                return None
            else:
                words.append(arg)
            i += 1
            continue
        flag, eq, text = arg.partition("=")
        kw: dict | None = (after if command else before).get(flag)
        if kw is None:  # (-h, --, -x, an abbreviation, an option of no command here)
            return None
        value: object = True
        if kw.get("action") == "store_true":
            if eq:
                return None
        else:
            if not eq:
                i += 1
                if i == len(argv) or argv[i].startswith("-"):
                    return None
                text = argv[i]
            if text not in kw.get("choices", (text,)):
                return None
            try:
                value = kw.get("type", str)(text)
            except Exception:  # noqa: BLE001 - argparse says what is wrong with it
                return None
        given[flag[2:].replace("-", "_")] = value
        apart = bool(words)
        i += 1
    if command is None or not words:
        return None
    args = {flag[2:].replace("-", "_"): kw.get("default", False if kw.get("action") else None)
            for flag, kw in _EVERY + _search_options() if flag.startswith("-")}
    args.update(given, command=command, query=words)
    return SimpleNamespace(**args)


def _parser(only: str | None = None):
    """The command line's parser; `only`: the command given, the one parser built (none, or an
    unknown one: every command's, for the list of commands and the error naming them)."""
    # argparse is imported here, not above: the hooks and the MCP server never parse arguments
    # with it, and Claude Code waits for both
    import argparse
    from .timeparse import ACCEPTED as WHEN  # (with argparse: only when a command is parsed)

    class _Parser(argparse.ArgumentParser):
        def error(self, message):  # one line, exit 2, no usage dump
            raise UsageError(message)

        def _get_formatter(self):  # argparse asks for one per option; its own imports shutil
            return argparse.HelpFormatter(prog=self.prog, width=_columns() - 2)

        def _print_message(self, message, file=None):  # help, usage, version: as all text
            try:
                if message:
                    _write(message, file or sys.stderr, multiline=True, end="")
            except (AttributeError, OSError):  # (as argparse's own: no stream, or it is gone)
                pass

    def options(parser, given) -> None:
        for flag, kw in given:  # (argparse knows its SUPPRESS by identity)
            parser.add_argument(flag, **dict(kw, default=argparse.SUPPRESS)
                                if kw.get("default") == _SUPPRESS else kw)

    common = _Parser(add_help=False)
    options(common, _COMMON)
    every = _Parser(add_help=False)  # the commands that can read every project's memory
    options(every, _EVERY)
    p = _Parser(prog="prima-memory", parents=[common],
                description="Long-term memory for Claude Code: search your past sessions.")
    p.add_argument("--version", action="version", version=f"prima-memory {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def command(name: str, **kw):
        return sub.add_parser(name, **kw) if only in (None, name) else _Skipped()

    s = command("search", parents=[common, every], help="search past sessions")
    options(s, _search_options())

    si = command("similar", parents=[common, every],
                        help="past exchanges most like QUERY, with the ones linked to them")
    si.add_argument("query", nargs="+", help="words describing it (an error, a question)")
    si.add_argument("--limit", type=_positive, default=10, metavar="N",
                    help="at most N exchanges (default 10)")

    r = command("recent", parents=[common, every], help="the latest sessions")
    r.add_argument(_TEAM[0], **_TEAM[1])
    r.add_argument("-n", type=_positive, default=10, dest="n", metavar="N",
                   help="how many sessions (default 10)")

    sh = command("show", parents=[common, every], help="print one session")
    sh.add_argument(_TEAM[0], **_TEAM[1])
    sh.add_argument("session_id", help="a session id or a unique prefix of one")
    sh.add_argument("--range", metavar="A:B", help="a slice of the messages, Python style (e.g. -10:)")
    sh.add_argument("--detail", choices=["summary", "turns", "full"], default="full",
                    help="summary: facts, files, decisions, where it stopped; turns: and the main "
                         "thread's messages; full (default): and the subagents' too")

    sh.add_argument("--no-tools", action="store_true",
                    help="leave out the tool calls (shown in brief in the turn of the agent that "
                         "made them)")

    ex = command("export", parents=[common, every],
                        help="write one session as a document to read (Markdown or HTML)")
    ex.add_argument("session_id", help="a session id or a unique prefix of one")
    ex.add_argument("--format", choices=["markdown", "html"], default="markdown",
                    help="markdown (default) or html: one self-contained file, no script")
    ex.add_argument("-o", "--output", metavar="FILE",
                    help="write it to FILE (replaced whole; never through a symbolic link) "
                         "instead of printing it (-: print it)")
    ex.add_argument("--no-tools", action="store_true",
                    help="leave out the tool calls (and so their outputs), as show does")
    ex.add_argument("--no-outputs", action="store_true",
                    help="keep the tool calls in brief, without what each printed or changed "
                         "(by default folded under each call, cut short, redacted)")

    f = command("files", parents=[common, every], help="file change history")
    f.add_argument("path", nargs="?", help="a file or folder, relative to the workspace; a "
                   "bare name finds it in any folder")
    f.add_argument("--skip", type=_whole(0, MAX_COUNT), default=0, metavar="N",
                   help="leave out the newest N sessions")
    f.add_argument("--limit", type=_positive, default=FILES_SHOWN, metavar="N",
                   help=f"at most N sessions, newest first (default {FILES_SHOWN})")

    fx = command("fixes", parents=[common], help="what fixed an error before: the sessions where "
                 "a command failed with the same error, then a file changed")
    fx.add_argument("error", nargs="+", help="the error, as a command printed it (- reads it "
                    "from standard input)")
    fx.add_argument("--limit", type=_positive, default=3, metavar="N",
                    help="at most N sessions, the latest first (default 3)")

    dg = command("digest", parents=[common],
                        help="a period's sessions by day, files changed most, decisions, open ends")
    dg.add_argument("--since", metavar="WHEN",
                    help=f"from WHEN (default: 7d, the last seven days): {WHEN}")
    dg.add_argument("--until", metavar="WHEN", help="up to WHEN, as --since takes it (a day: to its "
                    "end; default: now)")

    ix = command("index", parents=[common, every], help="bring the index up to date")
    ix.add_argument("--rebuild", action="store_true", help="read every source file again")
    ix.add_argument("--prune", action="store_true", help="drop sessions whose files are gone")
    ix.add_argument("--background", action="store_true",
                    help="with --rebuild: run it as a detached process and return at once")
    ix.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # that process
    ix.add_argument("--lock-fd", type=int, help=argparse.SUPPRESS)  # its lock, handed down
    ix.add_argument("--recover-from", metavar="FILE",
                    help="bring back, from an index set aside as not stamped by you (one from "
                         "before stamps), the sessions whose files are gone: only if it is yours")

    em = command("embed", parents=[common],
                        help="embed the exchanges not embedded yet (normally done in the background)")
    em.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # the detached one
    em.add_argument("--lock-fd", type=int, help=argparse.SUPPRESS)  # its lock, handed down

    rc = command("recall", parents=[common, every],
                        help="compact search results for Claude (/recall); the query may come on stdin")
    rc.add_argument("query", nargs="*", help="words to find; read from standard input when absent")
    rc.add_argument("--limit", type=_positive, default=8, metavar="N",
                    help="at most N sessions (default 8)")
    rc.add_argument(_TEAM[0], **_TEAM[1])

    fg = command("forget", parents=[common],
                 help="forget sessions for good: removed from the memory, never read again")
    fg.add_argument("session_ids", nargs="*", metavar="ID",
                    help="a session id or a unique prefix of one")
    fg.add_argument("--before", metavar="WHEN", help=f"the sessions that ended before WHEN: {WHEN}")
    fg.add_argument("--match", metavar="WORDS",
                    help="the sessions a keyword search for WORDS finds")
    fg.add_argument("--yes", action="store_true",
                    help="do not ask first (needed when not run on a terminal)")
    fg.add_argument("--all", action="store_true",
                    help="every session --before or --match chooses, even over 200 (refused "
                         "otherwise)")
    fg.add_argument("--list", action="store_true", help="list the sessions forgotten")
    fg.add_argument("--undo", nargs="+", metavar="ID",
                    help="remember these again, read back from their transcripts")

    h = command("hook", parents=[common], help="run a Claude Code hook (JSON on stdin)")
    h.add_argument("event", choices=["session-start", "stop", "pre-compact", "user-prompt-submit",
                                      "pre-tool-use", "post-tool-use-failure"],
                   help="the hook event Claude Code runs it for")

    command("status", parents=[common, every], help="what is indexed, pending, warnings")
    tm = command("team", parents=[common], help="a team's memory on PostgreSQL: join, status, "
                 "leave, publish (and an admin's setup, add, share)")
    tw = tm.add_subparsers(dest="what", metavar="WHAT", parser_class=_Parser, required=True)
    tj = tw.add_parser("join", parents=[common], help="publish this project to a team's server "
                       "and search it (the DSN's password, if any, is kept in your own "
                       "team.json, never in the project)")
    tj.add_argument("dsn", metavar="DSN", help="postgresql://ROLE@HOST/DB (a password from "
                    "~/.pgpass or PGPASSWORD is libpq's; TLS as the DSN's sslmode says)")
    tj.add_argument("--member", metavar="NAME", help="your name as the team reads it (default: "
                    "git's user.name)")
    tj.add_argument("--project", metavar="NAME", help="the project's name for the team "
                    "(default: its git remote origin)")
    tj.add_argument("--all-projects", action="store_true", help="every project on this machine")
    tw.add_parser("status", parents=[common], help="the server, what is published, what "
                  "waits, the last error")
    tl = tw.add_parser("leave", parents=[common], help="stop publishing")
    tl.add_argument("--delete", action="store_true", help="and delete what you published")
    tp = tw.add_parser("publish", parents=[common], help="publish now (the background does it "
                       "after each Stop)")
    tp.add_argument("--seconds", type=float, default=600.0, metavar="S",
                    help="stop after S seconds (default 600); the rest goes next time")
    ts = tw.add_parser("setup", parents=[common], help="(an admin's) make or migrate the "
                       "server's schema")
    ts.add_argument("dsn", metavar="ADMIN_DSN", help=_ADMIN_DSN)
    ta = tw.add_parser("add", parents=[common], help="(an admin's) a member's role in a team")
    ta.add_argument("dsn", metavar="ADMIN_DSN", help=_ADMIN_DSN)
    ta.add_argument("role", metavar="ROLE", help="the member's PostgreSQL login role (made if "
                    "missing)")
    ta.add_argument("team", metavar="TEAM", help="the team's name")
    ta.add_argument("--password-stdin", action="store_true", help="set the role's password "
                    "from the first line of standard input")
    ta.add_argument("--admin", action="store_true", help="and let the role remove any rows")
    tsh = tw.add_parser("share", parents=[common], help="(an admin's) a project shared with a "
                        "team")
    tsh.add_argument("dsn", metavar="ADMIN_DSN", help=_ADMIN_DSN)
    tsh.add_argument("project", metavar="PROJECT", help="the project as the team names it: its "
                     "git remote as host/path (github.com/acme/api)")
    tsh.add_argument("team", metavar="TEAM", help="the team's name")
    command("mcp", parents=[common],
                   help="serve this memory to Claude over MCP (stdio), as the plugin does")
    q = command("quickstart", parents=[common],
                       help="index this folder (or a demo history) and show what it found")
    q.add_argument("--demo", action="store_true", help="use the demo history even if this folder has one")
    return p


MAX_COUNT = 1_000_000  # SQLite's integers end at 2**63; no listing needs more
FILES_SHOWN = 50  # sessions: `files .` in a long history lists thousands
MAX_CONTEXT = 20


def _whole(lo: int, hi: int):
    """An argparse type: a whole number from lo to hi."""
    def parse(text: str) -> int:
        # argparse only when a command is parsed (see _parser)
        from argparse import ArgumentTypeError
        try:
            n = int(text)
        except ValueError:
            raise ArgumentTypeError(f"not a whole number: {text!r}") from None
        if not lo <= n <= hi:
            raise ArgumentTypeError(f"must be from {lo} to {hi:,}: {text[:30]}")
        return n
    return parse


_positive = _whole(1, MAX_COUNT)


def _attach_slices(argv: list[str]) -> list[str]:
    """`--range -10:` would read as an option to argparse: make it `--range=-10:`."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == "--range" and i + 1 < len(argv) and argv[i + 1].startswith("-"):
            out.append(f"--range={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


READS = frozenset({"search", "similar", "recent", "show", "export", "files", "fixes", "digest",
                   "recall", "status"})  # the commands that end once they have answered
COMMANDS = ("search", "similar", "recent", "show", "export", "files", "fixes", "digest", "index",
            "embed", "recall", "forget", "hook", "status", "mcp", "quickstart", "team")


def _command_in(argv: list[str]) -> str | None:
    """The command argv names (its first word that is not an option or --workspace's folder),
    if it is one: then only its parser is built (an unknown one, or help, builds them all)."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            return None
        if a == "--workspace":
            i += 2
            continue
        if not a.startswith("-"):
            return a if a in COMMANDS else None
        i += 1
    return None


def _write(text: str, stream, *, multiline: bool = False, end: str = "\n") -> None:
    """Text to a terminal, as every text the command line prints (terminal.write)."""
    from . import terminal  # (the hooks, which start in this module, print to no terminal)
    terminal.write(text, stream, multiline=multiline, end=end)


def say(text: str) -> None:
    """One line on stderr, "prima-memory: " first: an error quotes a title or a path, which can
    hold anything."""
    _write(f"prima-memory: {text}", sys.stderr)


_answered = False  # a read ran (see READS): nothing is left to tear down at its end


def exit_with(code: int) -> None:
    """End the process with main()'s exit status, as the command does (`prima-memory`, python
    -m prima_memory). After a read, at once: Python's own end (the collector's last walk over
    every module and object, their teardown) would take longer than many a search, and a read
    leaves nothing behind it (its index closed, its output written and flushed here)."""
    if not _answered:
        sys.exit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # (a reader gone: the answer was written as far as it could)
        pass
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    """A command of the command line (`hook` and `mcp` are main.py's to hand over)."""
    argv = _attach_slices(sys.argv[1:] if argv is None else argv)
    try:
        args = _plain_search(argv) or _parser(_command_in(argv)).parse_args(argv)
    except UsageError as e:
        say(f"error: {e}")
        return EXIT_USAGE
    args.json = getattr(args, "json", False)
    if args.command in READS:
        # A read's objects live until it ends (a second at most, a search of meaning aside):
        # the cycle collector would only walk the modules imported, a tenth of a search's time.
        import gc  # (built in)
        gc.disable()
        global _answered
        _answered = True
    if not args.command:
        say("error: a command is required (see prima-memory --help)")
        return EXIT_USAGE
    if args.command in ("hook", "mcp"):  # (main.py hands these over before any parsing)
        say(f"error: {args.command} runs as `prima-memory {args.command} ...`, from "
             "prima_memory.main")
        return EXIT_USAGE
    # the commands' modules: not loaded by --help or a usage error
    from . import commands
    try:
        return commands.run(args)
    except UsageError as e:
        say(f"error: {e}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    except Exception as e:  # the contract: one line, never a traceback
        msg = str(e) if isinstance(e, (PrimaError, OSError)) else f"{type(e).__name__}: {e}"
        say(f"error: {' '.join(msg.split())}")
        from .settings import flag  # (not at the top: the hooks' fast paths never need it)
        if flag("PRIMA_DEBUG", default=False):
            raise
        return EXIT_ERROR
