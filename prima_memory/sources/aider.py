"""Aider's chat history as records: `.aider.chat.history.md`, one markdown file in the project's
git root (else the folder aider ran in) that every launch of aider appends to (Aider-AI/aider
aider/io.py, aider/args.py), unchanged in shape since May 2023:

- `# aider chat started at YYYY-MM-DD HH:MM:SS` (local time) starts each launch: one session;
- `#### ` starts each line of what the person typed (`user_input`), `> ` each of aider's own
  lines (`tool_output`, questions and their answers; a line of a multi-line output after the
  first has no prefix);
- the model's replies are plain markdown (`ai_output`), with the edits it proposes
  (SEARCH/REPLACE blocks), confirmed by `> Applied edit to <path>` and `> Commit <hash> <msg>`.

There are no session ids and no times but each launch's: a session is named by its start (with
the file's name when it is not the default), each message by its offset in the file, and every
message takes its session's start. Read from a byte offset, with the parser's state carried from
one read to the next (a reply can continue across reads).

Where it looks: the workspace's file; its git root's file when the workspace is a folder inside a
repository (then only the sessions aider records as run inside the workspace, `Cur working dir`);
and a file that AIDER_CHAT_HISTORY_FILE or a `.aider.conf.yml` (the workspace's, its git root's,
the home folder's) names, when it lies inside the workspace. A file elsewhere (one shared by every
project) names no project and is not read; nor is any link: a cloned repository can hold one to
anything.
"""
from __future__ import annotations

import os

from . import names
from .base import Source, sample_file
from .listing import regular, watch
from ..records import FileChange, Message, SessionDelta
from ..workspace import blake2b, is_within, read_plain, stays_inside

HISTORY = ".aider.chat.history.md"
CONFIG = ".aider.conf.yml"
ENV = "AIDER_CHAT_HISTORY_FILE"
MAX_TEXT = 1_000_000 + (1 << 16)  # characters of a prompt held (text.MAX_TEXT, and a margin)
STEP_READ = 4 << 20  # bytes read at a time
MAX_LINE = 16 << 20  # a longer line (no line break in 16 MB) is no chat: skipped
PROSE = 20_000  # characters of a reply before an edit that its explanation is taken from
WHY = 500
# Kinds of line this version does not read, as the file's state notes them (status counts them):
# a launch header whose time is not aider's "%Y-%m-%d %H:%M:%S".
KNOWN_KINDS: frozenset[str] = frozenset()

# aider/commands.py's commands (cmd_*), and those after which the model never answers: what
# follows them unquoted is their output, not a reply.
COMMANDS = ("add", "architect", "ask", "chat-mode", "clear", "code", "commit", "context", "copy",
            "copy-context", "diff", "drop", "edit", "editor", "editor-model", "exit", "git",
            "help", "lint", "load", "ls", "map", "map-refresh", "model", "models",
            "multiline-mode", "ok", "paste", "quit", "read-only", "reasoning-effort", "report",
            "reset", "run", "save", "settings", "test", "think-tokens", "tokens", "undo",
            "voice", "weak-model", "web")
NO_REPLY = frozenset(("add", "chat-mode", "clear", "commit", "copy", "copy-context", "diff",
                      "drop", "editor-model", "exit", "git", "ls", "map", "map-refresh", "model",
                      "models", "multiline-mode", "quit", "read-only", "reasoning-effort",
                      "report", "reset", "run", "save", "settings", "think-tokens", "tokens",
                      "undo", "weak-model"))
ASKING = frozenset(("ask", "code", "architect", "context", "help"))  # `/ask <question>`
PATHS = frozenset(("add", "drop", "read-only"))
# commands that only show something (or leave): no call of note
SILENT = frozenset(("copy", "diff", "exit", "ls", "map", "map-refresh", "multiline-mode",
                    "quit", "report", "settings", "tokens"))
COMMANDS_RUN = frozenset(("run", "test", "lint"))


class Aider(Source):
    (name, label, product), mode, agent = names.AIDER, "append", "Aider"
    in_project = True  # (everywhere: see below)
    # No resume: aider has no session id, and --restore-chat-history restores every session of
    # the history file at once (aider/utils.py split_chat_history_markdown skips the launch
    # headers), not the one a hit names.
    resume = ""

    def locations(self, ws: str) -> list[str]:
        return list(dict.fromkeys(os.path.dirname(p) for p, _f, _w in _candidates(ws)))

    def looks_at(self, ws: str) -> list:
        # a config or AIDER_CHAT_HISTORY_FILE naming another file lists again
        return [p for p, _f, _w in _candidates(ws)]

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        """The history files there are (regular files: a link is never followed), each with the
        folder its sessions ran in and the folder they must lie within (None: all of them)."""
        out: list[tuple[str, object]] = []
        for path, folder, within in _candidates(ws):
            # (the file itself, not its folder: the workspace's root changes all day, and a
            # file come, gone or grown changes its own time)
            watch(folders, path)
            if regular(path):
                out.append((path, (folder, within)))
        return out

    def read(self, path, extra, offset, state):
        return next(self._steps(path, extra, offset, state, 1 << 62))

    def read_chunks(self, path, extra, offset, state, max_bytes, *, mtime=None, size=None,
                    bulk=False):
        return self._steps(path, getattr(extra, "extra", extra), offset, state, max_bytes)

    def _steps(self, path: str, extra, offset: int, state, max_bytes: int):
        folder, within = extra if isinstance(extra, tuple) and len(extra) == 2 \
            else (os.path.dirname(os.path.abspath(path)), None)
        return _read(path, folder, within, offset, state, max(1, max_bytes))

    def knows(self, kind: str) -> bool:
        return kind in KNOWN_KINDS

    def in_scope(self, delta, ws: str) -> bool:
        return not delta.cwd or is_within(os.path.normpath(delta.cwd), ws)

    def everywhere(self, known: dict) -> list[tuple[str, tuple[str, ...]]]:
        """None: aider keeps its files inside each project, and nothing on this machine lists the
        projects; a search of all projects reads them in each project it finds (in_project)."""
        return []

    def sample(self, ws: str, text: str) -> str:
        return sample_file(os.path.join(ws, HISTORY), [
            "\n# aider chat started at 2026-01-02 10:00:00\n\n> Aider v0.86.1  \n\n"
            f"#### {text}  \n\nIt is done.\n\n> Tokens: 1.0k sent, 10 received.  \n"])


# -- where the files are ----------------------------------------------------------------------

def _candidates(ws: str) -> list[tuple[str, str, str | None]]:
    """(history file, the folder its sessions ran in, the folder they must lie within) of every
    place aider may have written this workspace's chats."""
    ws = os.path.abspath(ws)
    out: list[tuple[str, str, str | None]] = [(os.path.join(ws, HISTORY), ws, None)]
    root = _git_root(ws)
    if root is not None and root != ws:  # aider writes to the git root from any folder in it
        out.append((os.path.join(root, HISTORY), root, ws))
    named = [os.environ.get(ENV) or ""] + [
        _config_value(os.path.join(d, CONFIG))
        for d in dict.fromkeys((ws, root or ws, os.path.expanduser("~")))]
    for value in named:
        if not value or "\x00" in value:
            continue
        # (relative to the folder aider ran in: taken as the workspace)
        path = os.path.normpath(os.path.join(ws, value))
        if is_within(path, ws) and path not in {p for p, _f, _w in out} \
                and stays_inside(os.path.dirname(path), ws):
            out.append((path, ws, None))
    return out


def _git_root(ws: str) -> str | None:
    """The nearest folder from ws up that holds .git (a folder, or a worktree's file)."""
    d = ws
    for _ in range(64):
        if os.path.lexists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent
    return None


def _config_value(path: str) -> str:
    """The `chat-history-file:` a .aider.conf.yml sets ("" for none; a link is not read)."""
    try:
        got = read_plain(path, 65536)
    except OSError:
        return ""
    if got is None:
        return ""
    for line in got[0].decode("utf-8", "replace").splitlines():
        key, colon, value = line.partition(":")
        if not colon or key.strip() != "chat-history-file" or line[:1] in (" ", "\t"):
            continue
        value = value.strip()
        if value[:1] in ("'", '"'):  # (quoted, a comment after it)
            return value[1:].partition(value[0])[0]
        return value.split(" #", 1)[0].strip()
    return ""


# -- reading ------------------------------------------------------------------------------------

def _read(path: str, folder: str, within: str | None, offset: int, state, max_bytes: int):
    """(deltas, end, state, problems) for each step of about max_bytes read from `offset`.
    Raises OSError for a file that cannot be read, ValueError for one that is no regular file
    (a FIFO or link swapped in) or holds binary data."""
    # only once this source is read (never by a hook)
    from . import text
    from .jsonl import TAIL_GRACE_SECONDS
    import time
    f, st = text.open_bounded(path, 1 << 62, "an aider chat history")
    with f:
        state = _State.load(state)
        if offset > st.st_size:  # (shrunk: the pipeline reads it again from the start)
            yield [], offset, state.dump(), []
            return
        f.seek(offset)
        done, eof = offset, False
        while not eof:
            p = _Parser(path, folder, within, state, done == 0)
            p.start = start = done
            pending, skip_from = b"", None  # (the start of a line too long to hold, skipped)
            full = False
            while not full:
                data = f.read(max(1 << 16, min(STEP_READ, max_bytes - (done - start))))
                if not data:
                    eof = True
                    break
                if b"\x00" in data:
                    raise ValueError("binary data: not an aider chat history")
                lines = (pending + data).split(b"\n")
                pending = lines.pop()
                for raw in lines:
                    if skip_from is None and len(raw) > MAX_LINE:
                        p.problems.append(f"byte {done}: a line of more than "
                                          f"{MAX_LINE >> 20} MB: skipped")
                    elif skip_from is None:
                        p.line(raw, done)
                    skip_from = None
                    done += len(raw) + 1
                    # a step ends between lines, never inside a prompt (aider writes one at once)
                    if done - start >= max_bytes and state.get("mode") != "u":
                        full = True
                        break
                if not full and len(pending) > MAX_LINE:  # (skipped to its end, never held)
                    if skip_from is None:
                        skip_from = done
                        p.problems.append(f"byte {done}: a line of more than "
                                          f"{MAX_LINE >> 20} MB: skipped")
                    done += len(pending)
                    pending = b""
            end, settled = done, eof
            if skip_from is not None:  # (its end is still to come: looked for from its start)
                end, settled = skip_from, False
            elif eof and pending:  # a last line with no line break: aider ends every write
                # with one, so this is a write under way (read again once it is done), unless
                # the file has not changed for a while (an edit by hand)
                if time.time() - st.st_mtime >= TAIL_GRACE_SECONDS:
                    p.line(pending, done)
                    end = done + len(pending)
                else:
                    settled = False
            end = p.stop(end, settled)
            yield p.finish(eof, st.st_mtime), end, p.state.dump(), p.problems
            if not eof:  # (the next step starts where this one stopped: a prompt is whole)
                f.seek(end)
                done = end


class _State:
    """What one read leaves the next: the session being read, and where its lines stand. Taken
    from the index as stored (anything of the wrong type is dropped: a file's state is data)."""

    FIELDS = {"sid": str, "base": str, "dup": int, "ts": float, "cwd": str, "mode": str,
              "key": str, "prompt": str, "reply": str, "at": str, "fence": str,
              "sr": bool, "think": bool, "fresh": bool, "handoff": bool, "titled": bool,
              "tb": bool, "echo": str,
              "why0": str, "why_last": str, "why": dict, "unk": list}

    def __init__(self, values: dict):
        self.v = values

    @classmethod
    def load(cls, state) -> _State:
        out: dict = {}
        for k, kind in cls.FIELDS.items():
            value = state.get(k) if isinstance(state, dict) else None
            if kind is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
                out[k] = value
        out["why"] = {k: v for k, v in out.get("why", {}).items()
                      if isinstance(k, str) and isinstance(v, str)}
        out["unk"] = [k for k in out.get("unk", []) if isinstance(k, str)]
        if out.get("mode") not in ("a", "t", "c") or (out["mode"] == "a" and "key" not in out):
            out.pop("mode", None)  # (a prompt is never left open between reads)
        return cls(out)

    def get(self, key: str, default=None):
        return self.v.get(key, default)

    def dump(self) -> dict:
        """A copy (the next step goes on changing this one)."""
        return {k: (dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v)
                for k, v in self.v.items() if v not in (None, "", False, {}, [])}


class _Parser:
    """One step's lines: each is a launch header, a person's line (####), one of aider's (>),
    a blank, or the model's text. Messages are built from runs of lines and made records when
    a run ends (a reply still open at the step's end goes as a part, under its key)."""

    def __init__(self, path: str, folder: str, within: str | None, state: _State, head: bool):
        from . import text  # only once this source is read (never by a hook)
        self.text = text
        self.path, self.folder, self.within, self.state = path, folder, within, state
        self.problems: list[str] = []
        self.scrub = text.scrubber(self.problems)
        self.deltas: dict[str, SessionDelta] = {}
        self.lines: list[str] = []  # the run being read (a prompt's lines, a reply's)
        self.held = 0  # characters of the prompt being read
        self.run_at: int | None = None  # where the run of a prompt started
        self.prose: list[str] = []  # the reply's text outside code, for the edits' reasons
        self.suffix = "" if os.path.basename(path) == HISTORY else \
            "-" + blake2b(os.path.basename(path).encode("utf-8", "replace"),
                                  digest_size=3).hexdigest()
        self.head = head  # the file's first line is read here
        self.start = 0  # where the step starts
        self.names: dict = {}

    # -- lines --------------------------------------------------------------------------------

    def line(self, raw: bytes, at: int) -> None:
        line = raw.decode("utf-8", "replace").rstrip("\r")
        s = self.state.v
        if self.head and line.strip():
            self.head = False
            if not _is_header(line):
                self.problems.append("does not start with '# aider chat started at': its "
                                     "first lines are one session with no time")
        mode = s.get("mode")
        # Inside a reply, a line of aider's ends with the two spaces of a markdown line break
        # (append_chat_history); a reply's own heading or quote in its code does not.
        ours = mode != "a" or line.endswith("  ")
        if _is_header(line):
            self._end_run()
            self._start(line[len("# aider chat started at "):].strip())
        elif (line.startswith("#### ") or line.rstrip() == "####") and ours:
            if mode != "u":  # (any other line ends a prompt's run)
                self._end_run()
                s["mode"], s["key"], self.run_at = "u", f"u{at}", at
            if self.held <= MAX_TEXT:  # (past it, the scrub cuts it: not held)
                self.lines.append(line[5:].rstrip())
                self.held += len(line)
        elif (line.startswith("> ") or line.rstrip() == ">") and (
                ours or not (s.get("fence") or s.get("sr")) or line.startswith("> Tokens: ")):
            # ("Tokens: ..." is aider's first line after every reply: one whose code block
            # is left open ends there)
            self._end_run()
            self._tool(line[2:].strip(), at)
            # Aider prefixes only the first line of an output, and ends its last with the line
            # break: what comes before that is the output. (A reply's own quote, taken for one,
            # ends at a blank line: the rest of the reply is still read.) After a command's
            # output the model may answer (aider before 0.50 sent /run's output on request).
            s["mode"] = "" if line.endswith("  ") else "t"
            s["tb"] = mode == "a"
        elif mode == "t":
            if (line.endswith("  ") and line.strip()) or (not line.strip() and s.get("tb")):
                s["mode"] = ""
                s.pop("tb", None)
        elif not line.strip():
            if mode == "u":
                self._end_run()
            elif mode == "a":
                self._reply_line(line)
        else:
            if mode == "c":
                return  # what follows a command the model does not answer, aider's line aside
            if mode != "a":
                self._end_run()
                s["mode"], s["key"] = "a", f"a{at}"
                for k in ("fence", "sr", "think", "why_last"):
                    s.pop(k, None)
                s["why"], s["why0"] = {}, ""
                self.prose = []
            self._reply_line(line)

    def _reply_line(self, line: str) -> None:
        s = self.state.v
        stripped = line.strip()
        if stripped.startswith("<thinking-content-"):  # aider's reasoning tags: not the reply
            s["think"] = True
            return
        if stripped.startswith("</thinking-content-"):
            s.pop("think", None)
            return
        if s.get("think"):
            return
        self.lines.append(line)
        fresh = s.pop("fresh", False)  # (the first line inside a code block)
        fence = s.get("fence")
        if stripped.startswith("<<<<<<< SEARCH"):
            if not fence and not s.get("sr"):
                self._edit_block()  # (a block with no code fence around it)
            s["sr"] = True
        elif stripped.startswith(">>>>>>> REPLACE"):
            s.pop("sr", None)
        elif s.get("sr"):
            return
        elif fence and (stripped == fence if fence[0] == "<" else
                        not stripped.strip(fence[0]) and len(stripped) >= len(fence)):
            s.pop("fence", None)
        elif not fence and _closing(stripped):
            s["fence"], s["fresh"] = _closing(stripped), True
            self._edit_block()
        elif fence:
            if fresh and _looks_like_file(stripped):  # (diff-fenced: the file's name first)
                self._reason(stripped, s.get("why_last", ""))
        else:
            self.prose.append(line)

    def _edit_block(self) -> None:
        """A code block opens: the text before it is the reason of an edit of the file named
        on the line just before it (or first inside it)."""
        s = self.state.v
        prose = self.prose
        named = prose.pop().strip() if prose and _looks_like_file(prose[-1].strip()) else ""
        why = self._said(prose)  # (without the name: neither this one nor the next's)
        s["why_last"] = why
        if not s.get("why0"):
            s["why0"] = why  # (the first block's: the reply's own account of what it does)
        if named:
            self._reason(named, why)

    def _reason(self, name: str, why: str) -> None:
        reasons = self.state.v.setdefault("why", {})
        if len(reasons) < 50:
            reasons.setdefault(_file_name(name), why)

    def _end_run(self) -> None:
        """The run being read ends: a prompt or a reply, made a record."""
        s = self.state.v
        mode = s.get("mode")
        if mode == "u":
            self._prompt("\n".join(self.lines))
            s["mode"] = s.pop("then", "")  # ("c" after a command the model never answers)
        elif mode == "a":
            self._reply()
            s["mode"] = ""
            for k in ("fence", "sr", "think", "fresh", "why_last"):
                s.pop(k, None)
        self.lines, self.run_at, self.held = [], None, 0

    # -- sessions -----------------------------------------------------------------------------

    def _start(self, when: str) -> None:
        from datetime import datetime  # only once this source is read (never by a hook)
        s = self.state.v
        try:
            t = datetime.strptime(when, "%Y-%m-%d %H:%M:%S")
            base, ts = f"aider-{t:%Y%m%d-%H%M%S}{self.suffix}", self.text.valid_ts(t.timestamp())
        except (ValueError, OverflowError, OSError):
            base = "aider-" + blake2b(when.encode("utf-8", "replace"),
                                              digest_size=6).hexdigest() + self.suffix
            ts = None
            self._unknown("header")
        # two launches in one second: told apart by their order
        dup = s.get("dup", 1) + 1 if base == s.get("base") else 1
        for k in _State.FIELDS.keys() - {"sid", "base", "dup", "unk"}:  # (a launch's own)
            s.pop(k, None)
        s.update(sid=base if dup == 1 else f"{base}-{dup}", base=base, dup=dup)
        if ts is not None:
            s["ts"] = ts
        self._d()

    def _d(self) -> SessionDelta:
        s = self.state.v
        if not s.get("sid"):  # lines before any header (a file cut, or written by hand)
            s["sid"] = s["base"] = "aider-start" + self.suffix
        sid = s["sid"]
        d = self.deltas.get(sid)
        if d is None:
            d = self.deltas[sid] = SessionDelta(sid, Aider.name, Aider.label)
            d.seen(s.get("ts"))
            d.cwd = s.get("cwd") or self.folder
        return d

    def _unknown(self, kind: str) -> None:
        unk = self.state.v.setdefault("unk", [])
        if kind not in unk and len(unk) < 50:
            unk.append(kind)
            self.problems.append(f"a line this version does not read ({kind}): see status")

    # -- records ------------------------------------------------------------------------------

    def _prompt(self, said: str) -> None:
        s = self.state.v
        echo = s.pop("echo", "")
        if s.pop("handoff", False):
            return  # the architect's reply, handed to the editor model as its prompt: said
        said = said.strip()
        if echo and echo in (_digest(said), _digest(
                said.partition("\n\n# Relevant docs:")[0].removeprefix("# Question:"))):
            return  # `/ask why?` logged again as the prompt it is ("# Question: why?" for /help)
        if not said or said == "<blank>" or _is_answer(said):
            return  # an empty input, or the answer to a question of aider's
        if said.startswith(("/", "!")):
            said = self._command(said)
            if not said:
                return
        key = s["key"]
        text = self.scrub(self.text.strip_private(said))
        d = self._d()
        d.messages.append(Message(key, "user", text, s.get("ts")))
        s["prompt"] = s["at"] = key
        if not s.get("titled"):
            from .. import titles  # only once this source is read (never by a hook)
            d.first_prompt = titles.clean_first_prompt(text)
            s["titled"] = True

    def _command(self, said: str) -> str:
        """A command typed (`/add x`, `!make`): its call, and the prompt it holds, if any (`/ask
        why?` asks). What follows a command the model never answers is its output."""
        s = self.state.v
        body = said[1:]
        word = "run" if said[0] == "!" else \
            (body.split(None, 1)[0] if body and not body[0].isspace() else "")
        args = body if said[0] == "!" else body[len(word):]
        args, word = args.strip(), word.lower()
        # aider takes a command's unique prefix for it ("/tok": /tokens)
        known = [c for c in COMMANDS if c == word] or [c for c in COMMANDS if c.startswith(word)]
        if known and all(c in NO_REPLY for c in known):
            s["then"] = "c"
        command = known[0] if len(known) == 1 else word
        if command in ASKING and args:
            s["echo"] = _digest(args)  # (aider logs it again as it asks: kept once)
            return args
        at = s["key"][1:]
        if command in SILENT:
            pass
        elif command in PATHS:
            for n, p in enumerate(_words(args)[:20]):
                self._call(f"/{command}", p, "path", f"{at}.{n}")
        elif command in COMMANDS_RUN:
            self._call(f"/{command}", args or command, "command", at)
        elif command == "git":
            self._call("/git", f"git {args}", "command", at)
        elif command == "web":
            self._call("/web", args, "url", at)
        else:
            self._call(f"/{command}", args, "", at)
        return ""

    def _reply(self) -> None:
        s = self.state.v
        said = "\n".join(self.lines).strip()
        if not said:
            return
        key = s["key"]
        d = self._d()
        d.messages.append(Message(key, "assistant",
                                  self.scrub(self.text.strip_private(said)), s.get("ts"),
                                  pairs_with=s.get("prompt")))
        s["reply"] = s["at"] = key
        if not s.get("why0") and self.prose:
            s["why0"] = self._said(self.prose)

    def _said(self, prose: list[str]) -> str:
        """The end of a reply's text, as an edit's reason: redacted, then cut."""
        said = "\n".join(prose).strip()
        if len(said) > PROSE:  # (cut at a line's start: a secret is cut in half by none)
            said = said[said.find("\n", len(said) - PROSE) + 1:]
        return self.text.tail(self.scrub(self.text.strip_private(said)), WHY) if said else ""

    def _tool(self, said: str, at: int) -> None:
        """One of aider's lines: an edit applied, a commit, a command run; the rest is its UI."""
        s = self.state.v
        if said.startswith("Applied edit to "):
            name = said[len("Applied edit to "):].strip()
            why = s.get("why", {}).get(_file_name(name)) or s.get("why0", "")
            path = os.path.normpath(os.path.join(self.folder, name))
            d = self._d()
            d.file_changes.append(FileChange(path, "edit", why, s.get("ts"), s.get("reply")))
            self._call("edit", path, "path", str(at))
        elif said.startswith("Commit ") and len(said.split(" ", 2)) == 3 \
                and _is_hash(said.split(" ", 2)[1]):
            _c, sha, message = said.split(" ", 2)
            self._call("commit", sha, "", str(at), message)
        elif said.startswith("Running "):
            self._call("shell", said[len("Running "):], "command", str(at))
        elif said.startswith("Cur working dir: "):
            cwd = os.path.normpath(said[len("Cur working dir: "):].strip())
            if is_within(cwd, self.folder):  # (a path another machine recorded: not here)
                s["cwd"] = self._d().cwd = cwd
        elif said.startswith("Edit the files?"):
            answer = said.rpartition(":")[2].strip().lower()
            # yes (or the default, Yes): the editor model gets the reply as its prompt
            s["handoff"] = answer[:1] in ("y", "a") or (not answer and "[Yes]" in said)

    def _call(self, tool: str, target, kind: str, at: str, line=None) -> None:
        from . import tool_calls  # only once this source is read (never by a hook)
        s = self.state.v
        self._d().tool_calls.append(tool_calls.make(
            tool, target, line, self.scrub, kind=kind, ts=s.get("ts"), key=s.get("at"),
            call=f"o{at}", names=self.names))

    # -- the step's end -----------------------------------------------------------------------

    def stop(self, end: int, settled: bool) -> int:
        """Where the next read starts: a prompt whose last line is still being written is read
        again whole by it, unless this read holds nothing else."""
        s = self.state.v
        if s.get("mode") == "u" and not settled and self.run_at is not None \
                and self.run_at > self.start:
            end = self.run_at
            self.lines, self.run_at, self.held = [], None, 0
            s["mode"] = ""
            s.pop("key", None)
        return end

    def finish(self, eof: bool, mtime: float) -> list[SessionDelta]:
        """This step's sessions: those of this workspace, with what they said."""
        s = self.state.v
        if s.get("mode") == "u":
            self._end_run()  # (a prompt is written at once: whole)
        elif s.get("mode") == "a" and self.lines:
            self._reply()  # a part: the rest (if any) comes under the same key
            self.lines = []
        out = []
        for sid, d in self.deltas.items():
            if self.within is not None and not is_within(d.cwd, self.within):
                continue  # a session of the git root's file run outside this workspace
            if eof and sid == s.get("sid") and d.first_ts is not None and mtime > d.first_ts:
                d.seen(self.text.valid_ts(mtime))  # (the last session: written to until then)
            self.text.dated_by_file(d, mtime)
            if d.messages or d.file_changes or d.tool_calls:
                out.append(d)
        return out


def _is_header(line: str) -> bool:
    # ("Aider" on the first day of the format, 2023-05-17)
    return line[:24].lower() == "# aider chat started at "


def _is_answer(said: str) -> bool:
    """A question of aider's and its answer, logged as typed when a group's answer applies
    (aider/io.py confirm_ask): "Add file to the chat? (Y)es/(N)o/... [Yes]: skip"."""
    return "\n" not in said and "(Y)es/(N)o" in said and "]: " in said + " "


def _digest(said: str) -> str:
    """A prompt's fingerprint, white space aside (what the file's state keeps of one: the state
    is stored, and a prompt may hold a secret)."""
    return blake2b(" ".join(said.split()).encode("utf-8", "replace"),
                           digest_size=8).hexdigest()


def _is_hash(word: str) -> bool:
    return 7 <= len(word) <= 40 and all(c in "0123456789abcdef" for c in word)


def _closing(line: str) -> str:
    """What closes the code block a line opens ("" for none): a fence of backticks or tildes,
    or the tags aider wraps code in for some models (aider/coders/base_coder.py all_fences)."""
    if line.startswith(("```", "~~~")):
        return line[:len(line) - len(line.lstrip(line[0]))]
    for tag in ("source", "code", "pre", "codeblock", "sourcecode"):
        if line.startswith(f"<{tag}>"):
            return f"</{tag}>"
    return ""


def _looks_like_file(line: str) -> bool:
    """Whether a line is a file's name alone, as aider's edit formats put one by a block."""
    name = _file_name(line)
    return 0 < len(name) < 256 and " " not in name and any(c in name for c in "./\\") \
        and not name.startswith(("<", ">", "=", "#", "`", "~"))


def _file_name(name: str) -> str:
    """A file's name as a reply writes it before its block ("**src/app.py**", "`a.py`:")."""
    return name.strip().strip("*`'\":").strip().removeprefix("./")


def _words(args: str) -> list[str]:
    import shlex  # only once this source is read (never by a hook)
    try:
        return shlex.split(args)
    except ValueError:  # (an unclosed quote)
        return args.split()
