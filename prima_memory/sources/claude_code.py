"""Claude Code transcripts: ~/.claude/projects/<encoded workspace>/<session>.jsonl (+ subagents)."""
from __future__ import annotations

import os

from .. import failures, workspace
from ..records import CallError, FileChange, Message, SessionDelta
from ..host import PREFIX_LEN, encode_project_dir, project_dirs
from ..host import claude_config_dir as claude_config_dir  # for registry.py
from ..host import claude_config_dirs as claude_config_dirs  # for registry.py
from ..host import names as _names
from ..paths import path_variants

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms for the hooks)
if TYPE_CHECKING:  # what _load_parsing binds, for the type checker
    import re

    from .. import titles
    from ..records import FileChange, Message, SessionDelta
    from . import tool_calls
    from .jsonl import JsonlReader
    from .text import parse_ts, scrubber, strip_private, tail
    _DROP_BLOCKS: re.Pattern[str]
    _COMMAND: re.Pattern[str]
    _COMMAND_ARGS: re.Pattern[str]
    _COMMAND_TAGS: re.Pattern[str]
    _BASH_INPUT: re.Pattern[str]
    _INTERRUPTED: re.Pattern[str]
    _PLUGIN_COMMAND: re.Pattern[str]


def _load_parsing() -> None:
    """Parsing needs records, titles, the JSONL reader and its patterns: imported and compiled
    on first read, so that a look for changed files (discover: the hooks, every search) starts
    fast. Redaction loads on the first text."""
    global FileChange, Message, SessionDelta, titles, tool_calls, JsonlReader
    global parse_ts, scrubber, strip_private, tail
    global _DROP_BLOCKS, _COMMAND, _COMMAND_ARGS, _COMMAND_TAGS, _BASH_INPUT, _INTERRUPTED
    global _PLUGIN_COMMAND
    if "_PLUGIN_COMMAND" in globals():
        return
    # late on purpose (re alone: 4 ms): bound as module globals, the names parsing uses
    import re
    from .. import titles
    from . import tool_calls
    from .jsonl import JsonlReader
    from .text import parse_ts, scrubber, strip_private, tail
    _DROP_BLOCKS = re.compile(
        r"<(system-reminder|local-command-[\w-]+|task-notification|ide_[\w-]+|user-memory-input|"
        r"prima-memory|bash-stdout|bash-stderr)\b[^>]*>.*?</\1\s*>", re.S)
    _COMMAND = re.compile(r"<command-name>\s*(.*?)\s*</command-name>", re.S)
    _COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
    _COMMAND_TAGS = re.compile(
        r"<(command-message|command-args|command-name|command-contents)>.*?</\1>", re.S)
    _BASH_INPUT = re.compile(r"<bash-input>(.*?)</bash-input>", re.S)
    _INTERRUPTED = re.compile(r"\[Request interrupted by user[^\]]*\]")
    _PLUGIN_COMMAND = re.compile(r"<command-name>\s*/" + PLUGIN + r":")


SOURCE = "claude-code"
LABEL = "[transcript]"

FILE_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
              "NotebookEdit": "notebook_path"}
# Record types that carry nothing to index. Any other type is unknown: noted once per file in
# its parser state ("unk"), which `status` counts; never a warning, since no user can act on it.
# The api-request ones (2.1.332) copy what the requests sent, the blobs whole messages: bulky.
QUIET_TYPES = {"system", "file-history-snapshot", "queue-operation", "attachment", "progress",
               "last-prompt", "mode", "agent-setting", "pr-link", "attribution-snapshot",
               "permission-mode", "tag", "agent-name", "worktree-state", "content-replacement",
               "api-request", "api-request-blob", "api-request-shape", "atis-latch", "tools-used",
               "cost-state"}
KNOWN_TYPES = QUIET_TYPES | {"user", "assistant", "summary", "ai-title", "custom-title"}
UNKNOWN_KEPT = 50  # unknown types noted per file, each cut to 40 characters
_NOISE_START = ("<local-command-", "<bash-stdout", "<bash-stderr")
# (the patterns that clean a prompt: _load_parsing)
# prima-memory's own slash commands: their runs (the command, its injected output, Claude's answer)
# are memory being read, not work done, and indexing them would make memories feed on themselves.
PLUGIN = "prima-memory"
# What Claude Code records as the branch outside a git repository (and on a detached HEAD).
_NO_BRANCH = ("", "HEAD")
_EXPLANATION_MAX = 1000


class SourceFile:
    __slots__ = ("path", "session_id", "sidechain")

    def __init__(self, path: str, session_id: str | None, sidechain: bool):
        self.path = path
        self.session_id = session_id  # None: a flat agent file names its parent session inside
        self.sidechain = sidechain


def collides(cwd: str, ws: str) -> bool:
    """True if cwd is a different folder whose Claude Code folder name equals the workspace's."""
    if workspace.is_within(cwd, ws):
        return False
    mine = {encode_project_dir(p)[:PREFIX_LEN] for p in path_variants(ws)}
    return encode_project_dir(cwd)[:PREFIX_LEN] in mine


# A transcript whose lines record no cwd says nothing of where it ran, so its folder decides.
# A folder named exactly as this workspace is is this workspace's (a colliding name, my_project
# and my-project, is Claude Code's own ambiguity). Past 200 characters a name is matched by its
# prefix alone (the hash after it cannot be computed here), so another long workspace's folder
# is matched too: there the folder's other transcripts decide. Claude Code hashes the whole
# path, so a hashed folder holds one workspace's sessions and any cwd they record names it; its
# older names, the bare prefix, are shared by every such workspace. Either way a cwd-less
# transcript is claimed only when the cwds recorded beside it are all this workspace's (judged
# as in_scope judges a transcript's own): claiming wrongly shows another project's conversation
# here, while holding back loses a file that records nothing of where it ran, and only until
# its lines say (the indexer reads it again when it grows).
_OWNER_FILES = 20  # transcripts looked at, by name: a hashed folder's first cwd is enough
_OWNER_HEAD = 64 << 10  # of each, the bytes searched for its first cwd
_CWD_KEY = rb'"cwd"\s*:\s*"((?:[^"\\\n]|\\.)*)"'  # bare quotes: only a real key


def claims_cwdless(path: str, ws: str, cache: dict | None = None) -> bool:
    """Whether a transcript at `path` whose lines record no cwd is this workspace's (above)."""
    folder = os.path.dirname(path)
    if os.path.basename(folder) == "subagents":  # <project>/<session>/subagents/agent-x.jsonl
        folder = os.path.dirname(os.path.dirname(folder))
    if os.path.basename(folder) in [n for n in _names(ws) if len(n) <= PREFIX_LEN]:
        return True
    if cache is not None and folder in cache:
        return cache[folder]
    cwds = recorded_cwds(folder)
    ours = bool(cwds) and not any(collides(c, ws) for c in cwds)
    if cache is not None:
        cache[folder] = ours
    return ours


def recorded_cwds(folder: str) -> list[str]:
    """The first cwd each of a folder's first _OWNER_FILES transcripts records."""
    try:
        names = sorted(e.name for e in os.scandir(folder)
                       if e.name.endswith(".jsonl") and e.is_file(follow_symlinks=False))
    except OSError:
        return []
    # (a folder whose transcripts record no cwd, or a search of all projects)
    import json
    import re
    out = []
    for name in names[:_OWNER_FILES]:
        try:
            with open(os.path.join(folder, name), "rb") as f:
                m = re.search(_CWD_KEY, f.read(_OWNER_HEAD))
            cwd = json.loads(b'"' + m.group(1) + b'"') if m else None
        except (OSError, ValueError):
            continue
        if isinstance(cwd, str) and cwd:
            out.append(cwd)
    return out


def session_files(ws: str, session_id: str) -> list[SourceFile]:
    """One session's files (what its Stop hook indexes): its transcript and its subagents'."""
    out = []
    for pdir in project_dirs(ws):
        main = os.path.join(pdir, f"{session_id}.jsonl")
        if os.path.isfile(main):
            out.append(SourceFile(main, session_id, False))
        try:
            agents = sorted(os.scandir(os.path.join(pdir, session_id, "subagents")),
                            key=lambda a: a.name)
        except OSError:
            continue
        out.extend(SourceFile(a.path, session_id, True) for a in agents
                   if a.name.endswith(".jsonl") and a.is_file())
    return out


def source_file(path: str) -> SourceFile | None:
    """The SourceFile for a path discover() would have found there (by where it lies)."""
    folder, name = os.path.split(path)
    if not name.endswith(".jsonl"):
        return None
    if os.path.basename(folder) == "subagents":
        return SourceFile(path, os.path.basename(os.path.dirname(folder)), True)
    if name.startswith("agent-"):
        return SourceFile(path, None, True)
    return SourceFile(path, name[:-6], False)


def discover(ws: str, log=None, only_dirs=None, known=None) -> list[SourceFile]:
    """Every transcript of this workspace: main files, subagents/ files and old flat agent files.
    An entry that cannot be read (a symbolic link loop, permissions) is skipped with a warning,
    once while it stays so; the rest is found. With `known` (paths already indexed), a session
    folder is looked into only for a session whose transcript is not known: the subagents of a
    known session are its Stop hook's to index."""
    def warn(msg: str) -> None:
        if log:
            log.warn(f"claude-code: {msg}", once=True)

    def is_file(entry) -> bool:  # following a link, as reading it will
        try:
            return entry.is_file()
        except OSError as e:
            warn(f"skipped {entry.path}: {e}")
            return False

    out: list[SourceFile] = []
    for pdir in only_dirs if only_dirs is not None else project_dirs(ws):
        try:
            entries = list(os.scandir(pdir))
        except OSError as e:
            warn(f"cannot list {pdir}: {e}")
            continue
        if not entries:
            warn(f"project folder {pdir} is empty")
        for entry in entries:
            name = entry.name
            if name.endswith(".jsonl"):
                if (known is None or entry.path not in known) and is_file(entry):
                    out.append(SourceFile(entry.path, None, True) if name.startswith("agent-")
                               else SourceFile(entry.path, name[:-6], False))  # (source_file's)
                continue
            if known is not None and os.path.join(pdir, f"{name}.jsonl") in known:
                continue
            try:  # one call where isdir + listdir would take three
                agents = sorted(os.scandir(os.path.join(entry.path, "subagents")),
                                key=lambda a: a.name) if entry.is_dir(follow_symlinks=False) else []
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as e:
                warn(f"skipped {entry.path}: {e}")
                continue
            out.extend(SourceFile(a.path, name, True) for a in agents
                       if a.name.endswith(".jsonl") and is_file(a))
    return out


def answering_command(state: dict | None) -> bool:
    """True when a file's parser state says its main thread is inside one of our commands' runs."""
    return bool(state and state.get("main", {}).get("cmd"))


def clean_user_text(raw: str) -> str | None:
    """A real prompt's text, or None for Claude Code's own noise (commands, stdout, reminders)."""
    if "<" not in raw and "[Request" not in raw:
        return raw.strip() or None
    if raw.lstrip().startswith(_NOISE_START):
        return None
    cmd = _COMMAND.search(raw)
    if cmd:
        given = _COMMAND_ARGS.search(raw)
        args = given.group(1).strip() if given else ""
        rest = _COMMAND_TAGS.sub("", raw)
        rest = _DROP_BLOCKS.sub("", rest).strip()
        if not args and not rest:
            return None  # a bare /clear, /compact ...: not something the user said
        return " ".join(x for x in (cmd.group(1), args, rest) if x)
    text = _DROP_BLOCKS.sub("", raw)
    text = _BASH_INPUT.sub(lambda m: "! " + m.group(1).strip(), text)
    text = _INTERRUPTED.sub("", text)
    return text.strip() or None


# Claude Code writes these records' type first: known from their first bytes.
_NEEDLESS_PREFIXES = tuple(b'{"type":"%s"' % t.encode() for t in sorted(QUIET_TYPES))


def _needless(line: bytes | bytearray, start: int = 0, end: int | None = None) -> bool:
    """Lines known from their bytes to hold nothing to index, left unparsed: tool results (most
    of a transcript's bytes) but the errors, thinking-only reply lines, and the quiet records
    that begin with their type (file snapshots, progress, api-request copies...). The line is
    line[start:end], looked at where it lies (JsonlReader's skip): a copy of every line would
    cost more.

    A key such as `"tool_use_id":` can only appear with unescaped quotes where it is a real key,
    so a prompt quoting JSON is never mistaken for one. Compact JSON is assumed (what Claude Code
    writes); anything spelled otherwise is simply parsed."""
    if end is None:
        end = len(line)
    if line.startswith(_NEEDLESS_PREFIXES, start, end):
        return True
    if line.find(b'"tool_use_id":', start, end) >= 0:
        return line.find(b'"type":"user"', start, end) >= 0 \
            and line.find(b'"is_error":true', start, end) < 0
    if line.find(b'"type":"thinking"', start, end) >= 0:
        return line.find(b'"type":"text"', start, end) < 0 \
            and line.find(b'"type":"tool_use"', start, end) < 0
    return False


def _is_plugin_command(content) -> bool:
    if isinstance(content, list):
        content = "\n".join(b["text"] for b in content
                            if isinstance(b, dict) and isinstance(b.get("text"), str))
    return isinstance(content, str) and "<command-name>" in content \
        and _PLUGIN_COMMAND.search(content) is not None


def _user_text(content) -> str | None:
    if isinstance(content, str):
        return clean_user_text(content)
    if not isinstance(content, list):
        return None
    parts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "tool_result":
            return None  # a tool_result carrier, not a prompt
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return clean_user_text("\n".join(parts)) if parts else None


def _take_errors(content: list, d, ts, scrub) -> None:
    """The failed calls among a user message's tool results, each by the line naming its error
    (failures.signature: one a failure, never its whole output; redacted, private spans out)."""
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "tool_result" \
                or block.get("is_error") is not True or not isinstance(block.get("tool_use_id"),
                                                                        str):
            continue
        out = block.get("content")
        if isinstance(out, list):
            out = "\n".join(b["text"] for b in out if isinstance(b, dict)
                            and isinstance(b.get("text"), str))
        got = failures.read(strip_private(out), scrub) if isinstance(out, str) else None
        if got is not None:
            d.call_errors.append(CallError(block["tool_use_id"], *got, ts))


def read(sf: SourceFile, offset: int, state: dict | None, mtime: float | None = None,
         max_bytes: int | None = None, bulk: bool = False):
    """Parse the lines after `offset` (stopping once past `max_bytes`, at a line end).

    Returns (delta or None, end offset, new state, problems)."""
    _load_parsing()

    state = dict(state or {})
    cut: list[str] = []
    scrub = scrubber(cut)
    # (a transcript linked into the project folder is read through: registry's follows_links)
    reader = JsonlReader(sf.path, offset, mtime=mtime, skip=_needless, bulk=bulk, follow=True)
    session_id = sf.session_id or state.get("sid")
    delta = None
    unknown: set[str] = set()
    branches: dict[str, str] = {}  # branch as recorded -> as stored (redacted once per read)
    names: dict[str, str] = {}  # a tool's name, the same way (tool_calls.make)
    # unknown types this file showed before (less any this version has learnt since)
    noted = set(state.get("unk", ())) - KNOWN_TYPES

    def get_delta(obj):
        nonlocal delta, session_id
        if delta is None:
            if session_id is None:
                sid = obj.get("sessionId")
                if not isinstance(sid, str) or not sid:
                    return None
                session_id = sid
            delta = SessionDelta(session_id=session_id, source=SOURCE, label=LABEL)
            delta.shared_keys = True
        return delta

    for obj in reader:
        try:
            _take_record(obj, get_delta, state, sf.sidechain, scrub, noted, unknown, branches,
                         names)
        except (TypeError, ValueError, AttributeError, KeyError) as e:
            # a record of a shape never seen: skip it like a bad line, never lose the batch
            reader.bad(reader.end, f"unreadable record ({type(e).__name__}: {e})")
        if max_bytes is not None and reader.end - offset >= max_bytes:
            break
    problems = list(reader.problems) + cut[:5]
    if reader.bad_lines > len(reader.problems):
        problems.append(f"... {reader.bad_lines} bad lines in all")
    if noted or unknown:  # (the indexer logs the new ones at info level)
        state["unk"] = sorted(noted | unknown)
    else:
        state.pop("unk", None)
    if session_id:
        state["sid"] = session_id
    return delta, reader.end, state, problems


def _take_record(obj, get_delta, state, file_sidechain, scrub, noted, unknown,
                 branches, names) -> None:
    kind = obj.get("type")
    if kind == "user" or kind == "assistant":
        d = get_delta(obj)
        if d is not None:
            _take_message(obj, kind, d, state, file_sidechain, scrub, branches, names)
    elif kind == "summary" or kind == "ai-title" or kind == "custom-title":
        d = get_delta(obj)
        t = obj.get({"summary": "summary", "ai-title": "aiTitle", "custom-title": "customTitle"}[kind])
        t = t if isinstance(t, str) else obj.get("title")
        if d is None or not isinstance(t, str):
            return
        if kind == "custom-title":  # (the user's, by /rename)
            d.custom_title = titles.normalize(scrub(strip_private(t)))
        elif not state.get("priv"):  # (a model wrote it, having read what the user kept private)
            d.summary_title = titles.normalize(scrub(strip_private(t)))
    elif isinstance(kind, str) and kind not in QUIET_TYPES and kind[:40] not in noted \
            and len(noted) + len(unknown) < UNKNOWN_KEPT:
        unknown.add(kind[:40])


def _take_message(obj: dict, kind: str, d, state: dict, file_sidechain: bool, scrub,
                  branches: dict, names: dict) -> None:
    ts = parse_ts(obj.get("timestamp"))
    sidechain = file_sidechain or obj.get("isSidechain") is True
    th = state.setdefault("side" if sidechain else "main", {})
    cwd = obj.get("cwd")
    if d.cwd is None and isinstance(cwd, str) and cwd and "cwd" not in state:
        d.cwd = cwd
        state["cwd"] = cwd
    branch = obj.get("gitBranch")
    if isinstance(branch, str) and branch not in _NO_BRANCH:
        d.branch = branches.get(branch)
        if d.branch is None:  # a name is any text: a token pasted as one is redacted
            d.branch = branches[branch] = scrub(branch)
    msg = obj.get("message")
    if not isinstance(msg, dict):
        return
    if kind == "user":
        if obj.get("isMeta") or obj.get("isCompactSummary") or obj.get("isVisibleInTranscriptOnly"):
            return
        content = msg.get("content")
        if isinstance(content, list):
            _take_errors(content, d, ts, scrub)
        if _is_plugin_command(content):
            th["cmd"] = True  # until the next real prompt, replies answer the command
            th.pop("u", None)
            return
        text = _user_text(content)
        if text is None:
            return
        th.pop("cmd", None)
        d.seen(ts)
        # What the user wrote, once Claude Code's own blocks are out (a reminder quoting a file
        # that holds "<private>" hides nothing), before anything reads it: redaction, the cut,
        # the title.
        kept = strip_private(text)
        if kept is not text and not state.get("priv"):
            # A <private> span: the titles a model writes of this session (ai-title, summary)
            # read it, so none is shown, one already read included ("" clears it).
            state["priv"] = True
            d.summary_title = ""
        text = scrub(kept)
        key = obj.get("uuid")
        if not isinstance(key, str) or not key:  # (a made-up key names nothing elsewhere)
            key = f"~u{ts}"
        d.messages.append(Message(key, "user", text, ts, sidechain))
        th["u"] = key  # the next reply pairs with this prompt
        th["t"] = ""
        if not sidechain and not state.get("first"):
            state["first"] = True
            d.first_prompt = titles.clean_first_prompt(text)
        return
    if msg.get("model") == "<synthetic>":
        return  # Claude Code's own placeholders ("No response requested.")
    if th.get("cmd") or obj.get("attributionPlugin") == PLUGIN:
        return  # Claude's answer to one of our commands: it restates memories
    d.seen(ts)
    key = msg.get("id") or obj.get("uuid")
    if not isinstance(key, str):
        return
    content = msg.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    texts = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text" and isinstance(block.get("text"), str) and block["text"].strip():
            t = scrub(block["text"].strip())
            texts.append(t)
            th["t"], th["tk"] = tail(_said_before(th, key, t, scrub), _EXPLANATION_MAX), key
        elif btype == "tool_use" and isinstance(block.get("name"), str):
            name, inp = block["name"], block.get("input")
            path = inp.get(FILE_TOOLS[name]) if name in FILE_TOOLS and isinstance(inp, dict) \
                else None
            if isinstance(path, str) and path:
                d.file_changes.append(FileChange(path, name, th.get("t", ""), ts, key))
            d.tool_calls.append(tool_calls.claude_code(name, inp, scrub, ts, key, sidechain,
                                                       block.get("id"), names))
    text = "\n".join(texts) if len(texts) < 2 else scrub("\n".join(texts))  # (as for lines)
    pairs = None
    if th.get("r") != key:  # a new reply: the first after a prompt forms an exchange with it
        th["r"] = key
        pairs = th.pop("u", None)
    elif not text:
        return  # a tool-only fragment of a reply already recorded
    d.messages.append(Message(key, "assistant", text, ts, sidechain, pairs))


def _said_before(th: dict, key: str, t: str, scrub) -> str:
    """What a change's explanation takes of text block `t`: redacted joined with the same
    reply's text before it (a secret told across two lines of a reply is only found whole), the
    part from `t` on."""
    prev = th.get("t") if th.get("tk") == key else None
    if not prev:
        return t
    both = scrub(f"{prev}\n{t}")
    return both[len(prev) + 1:] if both.startswith(prev + "\n") else both
