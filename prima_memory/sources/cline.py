"""Cline, Roo Code and Kilo Code tasks as records (issue #41): one task, one session, its id the
task's. Roo Code is a fork of Cline, and Kilo Code of Roo Code: the three keep a task the same way,
each in its own extension folder, so one reader serves them (the classes at the end).

Where: each VS Code-family user folder's `globalStorage/<extension id>/` (VS Code, Insiders,
VSCodium, their remote servers, Cursor, Windsurf), a custom storage path the user set
(`roo-cline.customStoragePath`, `kilo-code.customStoragePath`), Cline's standalone data folder
(`$CLINE_DIR/data`, ~/.cline/data: the CLI 1.x and JetBrains) and Roo's CLI
(~/.vscode-mock/global-storage). What is there:
- `tasks/<id>/ui_messages.json`: ClineMessage[], what the person saw, each with its time (ts, ms)
  and its kind (type "say"/"ask", say/ask: "task", "text", "user_feedback", "tool" with a JSON
  text, "command", "command_output", "completion_result", "api_req_started"...). Named
  claude_messages.json in Claude Dev (before Cline 2.0). Read when present: dialogue and times.
- `tasks/<id>/api_conversation_history.json`: what the model saw (Anthropic MessageParam[]), read
  only for a task without the other (and its head for the task's folder, see below).
- the task's folder: its history item (Cline's `state/taskHistory.json` cwdOnTaskInitialization,
  Roo's `tasks/<id>/history_item.json` or `tasks/_index.json` workspace), else the environment
  details the extension sent with the first request ("# Current Working Directory (...) Files").
- Cline 4's SDK sessions (the CLI 2, and the SDK-based extension): `$CLINE_SESSION_DATA_DIR`,
  ~/.cline/data/sessions/<id>/<id>.messages.json ({version: 1, messages: MessageWithMetadata[]})
  beside its manifest <id>.json (cwd, prompt, metadata.title).
Each file is rewritten whole (snapshot mode): read whole, its session replaced.

Scope: a task belongs to the workspace its folder is in (or a folder inside it). A task whose
folder nothing records is nobody's: these extensions keep every project's tasks in one place,
and taking it as every workspace's would show one project's work in all the others.
"""
from __future__ import annotations

import os
import sys

from . import names
from .base import RowStat, Source, sample_file
from .listing import app_config_base, regular, subdirs, vscode_user_dirs, watch
from ..records import FileChange, Message, SessionDelta
from ..workspace import is_within, read_plain

TASK_FILES = ("ui_messages.json", "claude_messages.json", "api_conversation_history.json")
SDK_SUFFIX = ".messages.json"
INDEX_MAX = 64 << 20  # a history index read whole (text.MAX_DOCUMENT)
SMALL_MAX = 1 << 20  # a history item, a manifest, a settings file: small, read whole
HEAD_MAX = 8 << 20  # of a task's file, what is looked at for its folder (images come first)

# What each kind of record is, for the unknown ones to be noted (status counts them). Cline's
# ClineSay/ClineAsk (cline/cline apps/vscode/src/shared/ExtensionMessage.ts), Roo Code's
# (RooCodeInc/Roo-Code packages/types/src/message.ts), with the names older versions used.
KNOWN_SAYS = frozenset("""task error error_retry api_req_started api_req_finished api_req_retried
    api_req_retry_delayed api_req_rate_limit_wait api_req_deleted text image reasoning
    completion_result plan_completion_result user_feedback user_feedback_diff command
    command_output tool shell_integration_warning shell_integration_warning_with_suggestion
    browser_action_launch browser_action browser_action_result mcp_server_request_started
    mcp_server_response mcp_notification use_mcp_server diff_error deleted_api_reqs
    clineignore_error rooignore_error command_permission_denied checkpoint_created
    checkpoint_saved load_mcp_documentation info task_progress hook_status hook_output_stream
    hook hook_output subagent use_subagents subagent_usage subagent_status
    conditional_rules_applied compaction subtask_result condense_context
    condense_context_error sliding_window_truncation codebase_search_result user_edit_todos
    too_many_tools_warning generate_explanation""".split())
KNOWN_ASKS = frozenset("""followup plan_mode_respond act_mode_respond command command_output
    completion_result tool api_req_failed resume_task resume_completed_task
    mistake_limit_reached browser_action_launch use_mcp_server new_task condense summarize_task
    report_bug use_subagents auto_approval_max_req_reached""".split())
# ClineSayTool.tool values, and which of them change a file
EDITS = frozenset("""editedExistingFile newFileCreated fileDeleted appliedDiff insertContent
    searchAndReplace""".split())
KNOWN_TOOLS = EDITS | frozenset("""readFile listFilesTopLevel listFilesRecursive
    listCodeDefinitionNames searchFiles webFetch webSearch summarizeTask useSkill codebaseSearch
    readCommandOutput switchMode newTask finishTask generateImage imageGenerated runSlashCommand
    updateTodoList skill fetchInstructions""".split())
# The model's content blocks (Anthropic's, and the Cline SDK's: cline/cline
# sdk/packages/shared/src/llms/messages.ts)
KNOWN_BLOCKS = frozenset("""text image tool_use tool_result thinking redacted_thinking file media
    document""".split())


def _known(kind: str) -> bool:
    group, _, name = kind.partition(":")
    return name in {"say": KNOWN_SAYS, "ask": KNOWN_ASKS, "tool": KNOWN_TOOLS,
                    "block": KNOWN_BLOCKS}.get(group, ())


# -- where ---------------------------------------------------------------------------------------

def editor_user_dirs() -> list[str]:
    """The user folders of every VS Code-family editor: VS Code's (listing.vscode_user_dirs, and
    the list PRIMA_VSCODE_USER_DIRS gives is the whole list), Cursor's and Windsurf's."""
    if os.environ.get("PRIMA_VSCODE_USER_DIRS") is not None:
        return vscode_user_dirs()
    home, base = os.path.expanduser("~"), app_config_base()
    return vscode_user_dirs() + [os.path.join(base, app, "User") for app in ("Cursor", "Windsurf")] \
        + [os.path.join(home, f".{app}-server", "data", "User") for app in ("cursor", "windsurf")]


def cline_dir() -> str:
    return os.environ.get("CLINE_DIR", "").strip() or os.path.join(os.path.expanduser("~"), ".cline")


def cline_data_dir() -> str:
    """Cline's own data folder (cline/cline sdk/packages/shared/src/storage/paths.ts
    resolveClineDataDir)."""
    return os.environ.get("CLINE_DATA_DIR", "").strip() or os.path.join(cline_dir(), "data")


def cline_sessions_dir() -> str:
    """Where Cline's SDK keeps its sessions (paths.ts resolveSessionDataDir)."""
    return os.environ.get("CLINE_SESSION_DATA_DIR", "").strip() \
        or os.path.join(cline_data_dir(), "sessions")


def _custom_storage(setting: str, settings_files: list[str]) -> list[str]:
    """The folders a `<setting>.customStoragePath` names in these settings files (JSON with
    comments: the key is looked for on a line of its own, not commented out)."""
    name = f"{setting}.customStoragePath"
    texts = []
    for path in settings_files:
        try:
            got = read_plain(path, SMALL_MAX)
        except OSError:
            continue
        if got and name.encode() in got[0]:  # (most hold none: every search looks here)
            texts.append(got[0].decode("utf-8", "replace"))
    if not texts:
        return []
    import json  # (only where a settings file names the setting)
    import re
    key = re.compile(r'^\s*"' + re.escape(name) + r'"\s*:\s*"((?:[^"\\\n]|\\.)*)"', re.M)
    out = []
    for text in texts:
        for m in key.finditer(text):
            try:
                folder = json.loads(f'"{m.group(1)}"')
            except ValueError:
                continue
            if folder.strip() and os.path.isabs(folder.strip()):
                out.append(folder.strip())
    return out


def _task_file(task_dir: str) -> str | None:
    """The one file read of a task: its messages as the person saw them, else the model's."""
    return next((p for p in (os.path.join(task_dir, n) for n in TASK_FILES) if regular(p)), None)


def _is_sdk(path: str) -> bool:
    return os.path.basename(path).endswith(SDK_SUFFIX)


def _folder(value) -> str | None:
    """A recorded working folder, as this machine's paths compare (None: not a folder)."""
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        return None
    value = value.strip()
    win = len(value) > 2 and value[1] == ":" and value[2] in "/\\"
    if not (value.startswith(("/", "\\\\")) or win):
        return None
    if sys.platform == "win32":
        value = os.path.normpath(value)
        return value[0].upper() + value[1:] if win else value
    if win:  # (a Windows machine's, read here: one spelling, as its folder's)
        import ntpath  # (only for such a path)
        return ntpath.normpath(value).replace("\\", "/")
    return os.path.normpath(value)


def _in(cwd: str | None, ws: str) -> bool:
    return bool(cwd) and is_within(cwd, ws)


# -- the history indexes: a task's folder without reading its messages --------------------------

_INDEXES: dict[str, tuple[tuple, dict]] = {}  # index file -> (its stat, task id -> history item)


def _history(path: str) -> dict:
    """Task id -> history item of a history index (a list of items, or Roo's {entries}), read
    once while it does not change (a folder of many tasks is listed, and each read, with it)."""
    try:
        st = os.lstat(path)
    except OSError:
        return {}
    mark = (st.st_mtime_ns, st.st_size, st.st_ino)
    got = _INDEXES.get(path)
    if got is not None and got[0] == mark:
        return got[1]
    from . import text  # only once these files are read, never by a hook
    items: dict = {}
    try:
        raw, _st = text.read_document(path, "a task history")
        doc = text.load_json(raw)
    except (OSError, ValueError):
        doc = None
    if isinstance(doc, dict):
        doc = doc.get("entries")
    for item in doc if isinstance(doc, list) else ():
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            items[item["id"]] = {k: item.get(k) for k in ("ts", "cwdOnTaskInitialization",
                                                          "workspace", "shadowGitConfigWorkTree")}
    if len(_INDEXES) > 16:
        _INDEXES.clear()
    _INDEXES[path] = (mark, items)
    return items


def _index_files(storage: str) -> list[str]:
    """The history indexes of a storage folder: Cline's, Roo's, Kilo's (task_history.json)."""
    return [os.path.join(storage, "state", "taskHistory.json"),
            os.path.join(storage, "tasks", "_index.json"),
            os.path.join(storage, "task_history.json")]


def _item_of(task_dir: str) -> dict | None:
    """A task's history item: Roo's own file in its folder, else its storage's indexes."""
    from . import text  # only once these files are read, never by a hook
    try:
        got = read_plain(os.path.join(task_dir, "history_item.json"), SMALL_MAX)
        item = text.load_json(got[0]) if got else None
    except (OSError, ValueError):
        item = None
    if isinstance(item, dict):
        return item
    storage = os.path.dirname(os.path.dirname(task_dir))
    tid = os.path.basename(task_dir)
    return next((h[tid] for h in map(_history, _index_files(storage)) if tid in h), None)


def _item_folder(item) -> str | None:
    if not isinstance(item, dict):
        return None
    return next((f for f in map(_folder, (item.get(k) for k in (
        "cwdOnTaskInitialization", "workspace", "shadowGitConfigWorkTree"))) if f), None)


def _indexed_folder(task_dir: str, indexes: list[dict]) -> str | None:
    """A task's folder as its storage's indexes say, without reading the task (None: unsaid)."""
    tid = os.path.basename(task_dir)
    return next((f for f in (_item_folder(h.get(tid)) for h in indexes) if f), None)


def _manifest(session_dir: str) -> dict:
    """An SDK session's manifest, <id>/<id>.json ({} when it is not there or not one)."""
    from . import text  # only once these files are read, never by a hook
    path = os.path.join(session_dir, os.path.basename(session_dir) + ".json")
    try:
        got = read_plain(path, SMALL_MAX)
        doc = text.load_json(got[0]) if got else None
    except (OSError, ValueError):
        doc = None
    return doc if isinstance(doc, dict) else {}


def _manifest_folder(doc: dict) -> str | None:
    return _folder(doc.get("cwd")) or _folder(doc.get("workspace_root"))


# -- the sources ---------------------------------------------------------------------------------

class _Tasks(Source):
    """One extension's tasks (the classes below say which)."""
    mode = "snapshot"
    ext_id = ""  # its folder in globalStorage
    setting = ""  # its settings' prefix, for a custom storage path ("" for none)

    def more_storage(self) -> list[str]:
        """Storage folders of its own besides the editors' (a CLI's)."""
        return []

    def sessions_dirs(self) -> list[str]:
        """Folders of SDK sessions (Cline's alone)."""
        return []

    def storages(self, ws: str) -> list[str]:
        users = editor_user_dirs()
        out = [os.path.join(u, "globalStorage", self.ext_id) for u in users]
        if self.setting:
            files = [os.path.join(u, "settings.json") for u in users]
            if ws:
                files.append(os.path.join(ws, ".vscode", "settings.json"))
            out += _custom_storage(self.setting, files)
        out += self.more_storage()
        return list(dict.fromkeys(out))

    def locations(self, ws: str) -> list[str]:
        return self.storages(ws) + self.sessions_dirs()

    def knows(self, kind: str) -> bool:
        return _known(kind)

    def _listed(self, ws: str, folders: list | None) -> list[tuple[str, str | None]]:
        """(path, the folder its index says it ran in, or None) of every task: one file each."""
        out: list[tuple[str, str | None]] = []
        for storage in self.storages(ws):
            dirs = subdirs(os.path.join(storage, "tasks"), folders)
            if not dirs:
                continue
            for index in _index_files(storage):  # (a new task's item changes these folders)
                watch(folders, os.path.dirname(index))
            indexes = [_history(p) for p in _index_files(storage)]
            for d in dirs:
                watch(folders, d)  # (a file made or replaced in it: which one is read may change)
                path = _task_file(d)
                if path:
                    out.append((path, _indexed_folder(d, indexes)))
        for root in self.sessions_dirs():
            for d in subdirs(root, folders):
                watch(folders, d)
                path = os.path.join(d, os.path.basename(d) + SDK_SUFFIX)
                if regular(path):
                    out.append((path, _manifest_folder(_manifest(d))))
        return out

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        """Every task of this workspace, and every task whose folder its index does not say
        (read, then in_scope decides): one whose index names another folder is not listed, so
        one indexed before is dropped as gone."""
        return [(p, None) for p, cwd in self._listed(ws, folders) if cwd is None or _in(cwd, ws)]

    def read(self, path, extra, offset, state):
        return read(path, self.name, self.label, state)

    def stat(self, path: str):
        """The task's file, as new as the file read beside it that names its folder or title
        (Roo's history item, an SDK session's manifest), which can be written after it: a
        change there reads the task again. (Cline's taskHistory.json, shared by every task,
        is not one: each change would read them all.)"""
        st = os.lstat(path)
        folder = os.path.dirname(path)
        beside = os.path.join(folder, os.path.basename(folder) + ".json") \
            if path.endswith(SDK_SUFFIX) else os.path.join(folder, "history_item.json")
        try:
            other = os.lstat(beside).st_mtime_ns
        except OSError:
            return st
        return RowStat(st.st_size, other) if other > st.st_mtime_ns else st

    def in_scope(self, delta, ws: str) -> bool:
        """A task of this workspace or a folder inside it; one whose folder nothing records is
        nobody's (see the module's docstring)."""
        return _in(_folder(delta.cwd), ws)

    def holds(self, ws: str) -> bool:
        return any(_in(cwd, ws) for _p, cwd in self._everyone({}))

    def everywhere(self, known: dict) -> list[tuple[str, tuple[str, ...]]]:
        """Every task, with the folder it ran in: found once (a task's folder never changes),
        else looked for again whenever its file changes. A task that records none is left out:
        nobody's, as in_scope takes it."""
        return [(p, (cwd,)) for p, cwd in self._everyone(known) if cwd]

    def _everyone(self, known: dict) -> list[tuple[str, str | None]]:
        out = []
        for path, cwd in self._listed("", None):
            got = known.get(path)
            if cwd is None and isinstance(got, str):
                cwd = got
            elif cwd is None:
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                mark = [st.st_size, st.st_mtime_ns]
                if not (isinstance(got, list) and got[:2] == mark):
                    cwd = folder_of(path)
                    if cwd:
                        known[path] = cwd
                    else:
                        known[path] = mark
            out.append((path, cwd))
        return out

    def sample(self, ws: str, text: str) -> str:
        tid = "1767225600000"
        storage = self.storages(ws)[0]
        sample_file(os.path.join(storage, "state", "taskHistory.json"), [[
            {"id": tid, "ts": 1767225600000, "task": text, "cwdOnTaskInitialization": ws,
             "workspace": ws}]], whole=True)
        return sample_file(os.path.join(storage, "tasks", tid, "ui_messages.json"), [[
            {"ts": 1767225600000, "type": "say", "say": "task", "text": text},
            {"ts": 1767225605000, "type": "say", "say": "text", "text": "Done."}]], whole=True)


class Cline(_Tasks):
    (name, label, product), agent = names.CLINE, "Cline"
    ext_id = "saoudrizwan.claude-dev"  # cline/cline apps/vscode/package.json publisher.name

    def more_storage(self) -> list[str]:
        # the standalone core's globalStorage (the CLI 1.x, JetBrains): $CLINE_DIR/data
        # (src/standalone/vscode-context.ts before apps/), which the SDK's may move
        return [os.path.join(cline_dir(), "data"), cline_data_dir()]

    def sessions_dirs(self) -> list[str]:
        return [cline_sessions_dir()]


class RooCode(_Tasks):
    (name, label, product), agent = names.ROO_CODE, "Roo"
    ext_id, setting = "rooveterinaryinc.roo-cline", "roo-cline"  # src/package.json

    def more_storage(self) -> list[str]:
        # its CLI's (RooCodeInc/Roo-Code apps/cli/src/lib/task-history/index.ts)
        return [os.path.join(os.path.expanduser("~"), ".vscode-mock", "global-storage")]


class KiloCode(_Tasks):
    (name, label, product), agent = names.KILO_CODE, "Kilo"
    ext_id, setting = "kilocode.kilo-code", "kilo-code"  # Kilo-Org/kilocode src/package.json


# -- reading -------------------------------------------------------------------------------------

def folder_of(path: str) -> str | None:
    """The folder a task (or SDK session) file's task ran in, read as little as may be: its
    history item, else the environment details of its first request."""
    d = os.path.dirname(path)
    if _is_sdk(path):
        return _manifest_folder(_manifest(d))
    return _item_folder(_item_of(d)) or _request_folder_in(os.path.join(d, TASK_FILES[0])) \
        or _request_folder_in(os.path.join(d, TASK_FILES[2]))


def _request_folder_in(path: str) -> str | None:
    """The working folder the environment details name in a file's head (the first request's,
    as the UI or the model's history holds it), JSON-escaped there."""
    try:
        got = read_plain(path, HEAD_MAX)
    except OSError:
        return None
    if not got:
        return None
    import json  # (only when a task's folder is looked for in its first request)
    import re
    for m in re.finditer(rb"# Current (?:Working|Workspace) Directory \((.{1,4096}?)\) Files",
                         got[0]):
        raw = m.group(1)
        for _ in range(2):  # escaped once in the history, twice inside a UI message's JSON text
            try:
                raw = json.loads(b'"' + raw + b'"').encode("utf-8", "surrogatepass")
            except ValueError:
                break
        folder = _folder(raw.decode("utf-8", "replace"))
        if folder:
            return folder
    return None


def read(path: str, source: str, label: str, state: dict | None):
    """(deltas, end, state, problems) of one task file or SDK session file, read whole. Raises
    OSError, or ValueError for a file that is not JSON or not a list of messages (its writer was
    cut short): what the index holds of it then stays."""
    from . import text  # only once this source is read, never by a hook
    problems: list[str] = []
    doc, st = text.read_json(path, "a task's messages")
    r = _Task(source, label, problems)
    d = r.read(path, doc)
    new = dict(state or {})
    unknown = sorted(r.unknown)
    before = set(new.get("unk") or ())
    fresh = [k for k in unknown if k not in before]
    if fresh:  # (once: a file read again after it changes says it no more)
        problems.append(f"record kinds this version does not read, skipped: {', '.join(fresh)}")
    if unknown:
        new["unk"] = unknown[:50]
    else:
        new.pop("unk", None)
    new["cwd"] = d.cwd
    if not (d.messages or d.file_changes or d.tool_calls):
        return [], st.st_size, new, problems  # (a task begun and left: nothing of its own)
    text.dated_by_file(d, st.st_mtime)
    return [d], st.st_size, new, problems


class _Task:
    """One read of one task: its records, built a turn at a time (a person's message opens a
    turn; what the agent says in it is one reply, its edits and commands made in that reply)."""

    def __init__(self, source: str, label: str, problems: list[str]):
        from . import text  # only once this source is read, never by a hook
        self.source, self.label, self.problems = source, label, problems
        self.scrub = text.scrubber(problems)  # redacted and cut, as every source's text is
        self.unknown: set[str] = set()
        self.d = SessionDelta("", source, label)
        self.cwd: str | None = None
        self.keys: set[str] = set()
        self.names: dict = {}  # (tool_calls.make's, for one file)
        self.user_key: str | None = None
        self._reset()

    def _reset(self) -> None:
        self.said: list[str] = []
        self.reply_key: str | None = None
        self.reply_ts: float | None = None
        self.why: str | None = None  # what was said so far in the reply, redacted, its tail
        self.changes: list[FileChange] = []
        self.calls: list = []

    def note(self, kind: str) -> None:
        if len(self.unknown) < 50:
            self.unknown.add(kind[:60])

    # -- a file --------------------------------------------------------------------------------

    def read(self, path: str, doc) -> SessionDelta:
        task_dir = os.path.dirname(path)
        if _is_sdk(path):
            self.d.session_id = os.path.basename(path)[:-len(SDK_SUFFIX)]
            self._sdk(task_dir, doc)
        else:
            if not isinstance(doc, list):
                raise ValueError("not a list of messages")
            self.d.session_id = os.path.basename(task_dir)
            item = _item_of(task_dir)
            if isinstance(item, dict):
                self.d.seen(_ms(item.get("ts")))
            self.cwd = _item_folder(item)
            if os.path.basename(path) == TASK_FILES[2]:
                self.cwd = self.cwd or _request_folder_in(path)
                self._model(doc)
            else:
                self.cwd = self.cwd or _ui_folder(doc) \
                    or _request_folder_in(os.path.join(task_dir, TASK_FILES[2]))
                self._ui(doc)
        self.end()
        self.d.cwd = self.cwd
        return self.d

    def _sdk(self, session_dir: str, doc) -> None:
        """A Cline SDK session: {version: 1, messages: [...]} and its manifest beside it
        (cline/cline sdk/packages/core/src/services/session-data.ts buildMessagesFilePayload,
        session/models/session-manifest.ts). Its title is the manifest's, when it is not the
        first line of the prompt (deriveTitleFromPrompt): one the person gave."""
        from .. import titles  # only once this source is read, never by a hook
        from .text import parse_ts, strip_private
        if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
            raise ValueError("not a session's messages")
        if doc.get("version") != 1:
            self.note(f"version:{str(doc.get('version'))[:20]}")
        meta = _manifest(session_dir)
        self.cwd = _manifest_folder(meta)
        for k in ("started_at", "ended_at"):
            self.d.seen(parse_ts(meta.get(k)))
        self._model(doc["messages"])
        info = meta.get("metadata")
        title = _str(info.get("title")) if isinstance(info, dict) else None
        if title:
            title = titles.normalize(self.scrub(strip_private(title)))
            first = next((m.text for m in self.d.messages if m.role == "user"), "")
            if title and title != titles.normalize(first.strip().split("\n")[0][:120]):
                self.d.custom_title = title

    # -- the UI's messages ---------------------------------------------------------------------

    def _ui(self, msgs: list) -> None:
        """ClineMessage[] (cline/cline apps/vscode/src/shared/ExtensionMessage.ts ClineMessage;
        RooCodeInc/Roo-Code packages/types/src/message.ts clineMessageSchema)."""
        asked: list = []  # edits and commands asked for since the last request: maybe denied
        command = None  # the last command's call, its output to come
        output: list[str] = []
        requested = False
        for n, m in enumerate(msgs):
            if not isinstance(m, dict):
                continue
            ts = _ms(m.get("ts"))
            self.d.seen(ts)
            key = str(m["ts"])[:40] if isinstance(m.get("ts"), int) \
                and not isinstance(m.get("ts"), bool) else f"m{n}"
            group = m.get("type")
            if group not in ("say", "ask"):
                self.note(f"type:{str(group)[:20]}")
                continue
            kind = m.get(group)
            if not isinstance(kind, str):
                self.note(f"{group}:{str(kind)[:20]}")
                continue
            body: str = m["text"] if isinstance(m.get("text"), str) else ""
            partial = m.get("partial") is True
            if kind == "command_output":
                output.append(body)
                continue
            if command is not None:
                _ended(command, output, self.scrub)
                command, output = None, []
            if kind not in (KNOWN_SAYS if group == "say" else KNOWN_ASKS):
                self.note(f"{group}:{kind}")
            elif kind == "api_req_started":
                requested = True
                if asked and "The user denied this operation" in _request(body):
                    self._denied(asked)
                asked = []
            elif kind == "task" or (kind == "text" and not requested and self.user_key is None):
                self.user(body, ts, key)  # (the task is said as "text" by Roo, and Cline 3.8-3.x)
            elif kind == "user_feedback":
                self.user(body, ts, key)
            elif kind in ("text", "completion_result", "plan_completion_result"):
                self.agent(body.removesuffix("HAS_CHANGES"), ts, key)  # (Cline's flag, no word)
            elif kind in ("followup", "plan_mode_respond", "act_mode_respond"):
                self.agent(_said(body), ts, key)
            elif partial:
                continue  # (an edit or command shown before it was complete)
            elif kind == "tool":
                changed = self._tool(_json(body), ts, key)
                asked += changed if group == "ask" else []
            elif kind == "command" and body.strip():
                command = self.call("execute_command", body.removesuffix("REQ_APP"), None,
                                    "command", ts, key)
                asked += [command] if group == "ask" else []
            elif kind == "use_mcp_server" and group == "ask":
                info = _json(body)
                self.call(f"mcp:{_str(info.get('serverName')) or 'server'}",
                          _str(info.get("toolName")) or _str(info.get("uri")), None, "", ts, key)
            elif kind == "browser_action_launch":
                self.call("browser_action", body, "launch", "url", ts, key)
        if command is not None:
            _ended(command, output, self.scrub)

    def _denied(self, asked: list) -> None:
        """What the person refused, as the request after it says ("The user denied this
        operation"): an edit never made, a command never run. (These extensions ask for one tool
        at a time, and a refusal skips the others.)"""
        for x in asked:
            if isinstance(x, FileChange):
                for where in (self.changes, self.d.file_changes):
                    if x in where:
                        where.remove(x)
            else:
                x.line = "denied by the user"

    def _tool(self, info: dict, ts, key) -> list[FileChange]:
        """A "tool" message (ClineSayTool): its call, and the files an edit changed."""
        tool = _str(info.get("tool"))
        if not tool:
            return []
        if tool not in KNOWN_TOOLS:
            self.note(f"tool:{tool}")
        named = [_str(info.get("path"))] + [_str(b.get("path")) for k in ("batchDiffs", "batchFiles")
                                            for b in _list(info.get(k)) if isinstance(b, dict)]
        paths = list(dict.fromkeys(p for p in (self._absolute(p) for p in named if p) if p))
        out = [self.change(p, tool, ts) for p in paths] if tool in EDITS else []
        if tool == "searchFiles":
            target, line, kind = _str(info.get("regex")), paths[0] if paths else None, ""
        elif tool in ("webFetch", "webSearch", "codebaseSearch"):
            target = _str(info.get("url")) or _str(info.get("query")) or _str(info.get("path"))
            line, kind = None, "url" if (target or "").startswith(("http:", "https:")) else ""
        else:
            target, kind = (paths[0], "path") if paths else (None, "")
            line = f"and {len(paths) - 1} more" if len(paths) > 1 else None
        self.call(tool, target, line, kind, ts, key)
        return out

    # -- the model's messages (the model's history, an SDK session) ------------------------------

    def _model(self, msgs: list) -> None:
        """Anthropic MessageParam[] (api_conversation_history.json) or the Cline SDK's
        MessageWithMetadata[]: content a text or blocks (text, tool_use, tool_result...). A
        person's message is one whose text, without what the extension adds, says something;
        one of tool results only is no turn of theirs."""
        for n, m in enumerate(msgs):
            if not isinstance(m, dict):
                continue
            ts = _ms(m.get("ts"))
            self.d.seen(ts)
            key = (_str(m.get("id")) or (str(m["ts"]) if isinstance(m.get("ts"), int)
                                         else f"m{n}"))[:80]
            content = m.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else [
                b for b in _list(content) if isinstance(b, dict)]
            role = m.get("role")
            if role not in ("user", "assistant"):
                self.note(f"role:{str(role)[:20]}")
                continue
            words = []
            result = False  # (in a tool's result: "[tool for 'x'] Result:", then its text)
            for b in blocks:
                kind = b.get("type")
                if kind not in KNOWN_BLOCKS:
                    self.note(f"block:{str(kind)[:30]}")
                elif kind == "text" and isinstance(b.get("text"), str):
                    if role == "user":
                        said, result = _user_words(b["text"], result)
                        words.append(said)
                    else:
                        self._agent_text(b["text"], ts, key)
                elif kind == "tool_use" and role == "assistant":
                    self._tool_use(b, ts, key)
            if role == "user":
                self.user("\n\n".join(w for w in words if w), ts, key)

    def _agent_text(self, said: str, ts, key) -> None:
        """An assistant's text, the tools it calls in XML (Cline's and Roo's before native tool
        calls) taken out as calls, the words they carry (a result, a question) kept."""
        said = _drop_elements(said, "thinking")
        calls = [(i, tool, body) for tool in XML_TOOLS for i, body in _located(said, tool)]
        kept = said[:min(i for i, _t, _b in calls)] if calls else said
        for _i, tool, body in sorted(calls, key=lambda c: c[0]):
            words = [w for p in ("result", "question", "response") for w in _elements(body, p)]
            if tool in ("attempt_completion", "ask_followup_question", "plan_mode_respond"):
                kept += "".join(f"\n\n{w}" for w in words)
        self.agent(kept, ts, key)
        for _i, tool, body in sorted(calls, key=lambda c: c[0]):
            if tool not in ("attempt_completion", "ask_followup_question", "plan_mode_respond"):
                params = {p: v for p in XML_PARAMS for v in _elements(body, p)}
                self._tool_use({"name": tool, "input": params}, ts, key)

    def _tool_use(self, b: dict, ts, key) -> None:
        """A tool call (native, or XML made into one): commands, files changed, or another."""
        name = _str(b.get("name")) or "tool"
        args = b.get("input")
        call = _str(b.get("id"))
        if name == "apply_patch":  # (its input is the patch, or {input: patch})
            from . import tool_calls  # only once this source is read, never by a hook
            body = args.get("input") if isinstance(args, dict) else args
            args, paths = {}, tool_calls.patched_paths(body)
        else:
            args = args if isinstance(args, dict) else {"input": args}
            paths = [p for p in (_str(args.get(k)) for k in ("absolutePath", "path", "file_path"))
                     if p][:1]
        if name in ("execute_command", "run_commands"):
            for c in _commands(args):
                self.call(name, c, None, "command", ts, key, call)
            return
        if name in ("attempt_completion", "ask_followup_question", "plan_mode_respond"):
            self.agent(_str(args.get("result")) or _str(args.get("question"))
                       or _str(args.get("response")) or "", ts, key)
            return
        paths = list(dict.fromkeys(p for p in (self._absolute(p) for p in paths) if p))
        if name in MODEL_EDITS:
            for p in paths:
                self.change(p, name, ts)
        target, kind = (paths[0], "path") if paths else _target(args)
        line = f"and {len(paths) - 1} more" if len(paths) > 1 else None
        if _str(args.get("regex")):  # (a search: its pattern, in its folder)
            target, line, kind = args["regex"], paths[0] if paths else None, ""
        self.call(name, target, line, kind, ts, key, call)

    # -- the turns -----------------------------------------------------------------------------

    def key(self, base: str) -> str:
        k, n = base, 1
        while k in self.keys:
            n += 1
            k = f"{base}-{n}"
        self.keys.add(k)
        return k

    def user(self, said: str, ts, key: str) -> None:
        from .. import titles  # only once this source is read, never by a hook
        from .text import strip_private
        said = said.strip()
        if not said:
            return
        self.end()
        k = self.key(f"u{key}")
        self.d.messages.append(Message(k, "user", self.scrub(strip_private(said)), ts))
        if self.d.first_prompt is None:
            self.d.first_prompt = titles.clean_first_prompt(self.d.messages[-1].text)
        self.user_key = k

    def agent(self, said: str, ts, key: str) -> None:
        said = said.strip()
        if not said or (self.said and self.said[-1] == said):  # (a result said, then asked)
            return
        if self.reply_key is None:
            self.reply_key, self.reply_ts = self.key(f"a{key}"), ts
        self.said.append(said)
        self.why = None

    def reason(self) -> str:
        """What the agent said before an edit in this reply: its last 500 characters."""
        from .text import strip_private, tail  # only once this source is read, never by a hook
        if self.why is None:  # (redacted whole, then cut: a secret cut first escapes)
            self.why = tail(self.scrub(strip_private(" ".join(self.said))), 500)
        return self.why

    def change(self, path: str, tool: str, ts) -> FileChange:
        from .text import strip_private  # only once this source is read, never by a hook
        c = FileChange(self.scrub(strip_private(path)), tool, self.reason(), ts)
        self.changes.append(c)
        return c

    def call(self, tool, target, line, kind, ts, key, call=None):
        from . import tool_calls  # only once this source is read, never by a hook
        c = tool_calls.make(tool, target, line, self.scrub, kind=kind, ts=ts, call=call,
                            names=self.names)
        self.calls.append(c)
        return c

    def end(self) -> None:
        """The turn's end: its reply, and what was done in it keyed to it (or to the person's
        message, in a turn the agent said nothing in)."""
        from .text import strip_private  # only once this source is read, never by a hook
        if self.said:
            self.d.messages.append(Message(
                self.reply_key or "a", "assistant",
                self.scrub(strip_private("\n\n".join(self.said))), self.reply_ts,
                pairs_with=self.user_key))
        key = self.reply_key if self.said else self.user_key
        for x in self.changes + self.calls:
            x.message_key = key
        seen = {(c.path, c.message_key) for c in self.d.file_changes}
        for c in self.changes:  # (the first of each file in a reply, as Copilot's)
            if (c.path, c.message_key) not in seen:
                seen.add((c.path, c.message_key))
                self.d.file_changes.append(c)
        self.d.tool_calls += self.calls
        self._reset()

    def _absolute(self, path: str) -> str | None:
        """A path as the extension shows it (relative to the task's folder, or absolute) made
        absolute; None for one that cannot be (no folder known)."""
        path = path.strip()
        if not path or "\x00" in path:
            return None
        if _folder(path):
            return _folder(path)
        if not self.cwd:
            return None
        import ntpath  # (a task of a Windows machine, read here or there)
        import posixpath
        if len(self.cwd) > 1 and self.cwd[1] == ":":
            return _folder(ntpath.join(self.cwd, path))
        return _folder(posixpath.join(self.cwd, path.replace("\\", "/")))


# Native tool calls that change a file (Cline's write_to_file, replace_in_file, apply_patch; Roo's
# apply_diff, insert_content, search_and_replace, write_to_file; the SDK's editor, apply_patch)
MODEL_EDITS = frozenset("""write_to_file replace_in_file apply_diff insert_content search_and_replace
    apply_patch editor new_file edit_file""".split())
XML_TOOLS = ("write_to_file", "replace_in_file", "apply_diff", "insert_content",
             "search_and_replace", "execute_command", "read_file", "list_files", "search_files",
             "list_code_definition_names", "browser_action", "use_mcp_tool",
             "access_mcp_resource", "new_task", "attempt_completion", "ask_followup_question",
             "plan_mode_respond")
XML_PARAMS = ("path", "command", "regex", "url", "server_name", "tool_name")


def _ui_folder(msgs: list) -> str | None:
    """The working folder the first requests' environment details name (Cline's and Roo's
    api_req_started text held the request until Roo 3.29)."""
    import re  # (only when no history item names the task's folder)
    for m in msgs[:200]:
        if isinstance(m, dict) and m.get("say") == "api_req_started":
            got = re.search(r"# Current (?:Working|Workspace) Directory \((.{1,4096}?)\) Files",
                            _request(m.get("text")))
            if got and _folder(got.group(1)):
                return _folder(got.group(1))
    return None


def _request(body) -> str:
    """The request an api_req_started message's JSON text carries ("" for none)."""
    got = _json(body).get("request")
    return got if isinstance(got, str) else ""


def _said(body: str) -> str:
    """The words of a question or a plan ({question}, {response}: JSON since Cline 3.x; plain
    text before)."""
    info = _json(body)
    if not info:
        return body
    return _str(info.get("question")) or _str(info.get("response")) or ""


def _ended(call, output: list[str], scrub) -> None:
    """A command's call, with the last line it printed (its outcome, most often)."""
    if call.line:
        return
    last = next((ln for part in reversed(output) for ln in reversed(part.splitlines())
                 if ln.strip()), None)
    if last:
        from .tool_calls import LINE_MAX, brief  # only once this source is read
        call.line = brief(last, LINE_MAX, scrub)


def _json(body) -> dict:
    if not isinstance(body, str) or not body.lstrip().startswith("{"):
        return {}
    from .text import load_json  # only once this source is read, never by a hook
    try:
        got = load_json(body.encode("utf-8", "surrogatepass"))
    except ValueError:
        return {}
    return got if isinstance(got, dict) else {}


def _str(value) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _ms(value) -> float | None:
    from .text import valid_ts  # only once this source is read, never by a hook
    try:
        return valid_ts(value / 1000.0) if isinstance(value, (int, float)) \
            and not isinstance(value, bool) else None
    except OverflowError:  # an integer of 400 digits
        return None


def _commands(args) -> list[str]:
    """A command call's commands: {command}, {commands: [text or {command, args}]}."""
    got = args.get("commands", args.get("command", args.get("cmd"))) if isinstance(args, dict) \
        else args
    out = []
    for c in got if isinstance(got, list) else [got]:
        if isinstance(c, dict) and isinstance(c.get("command"), str):
            c = " ".join([c["command"]] + [a for a in _list(c.get("args")) if isinstance(a, str)])
        if isinstance(c, str) and c.strip():
            out.append(c)
    return out


def _target(args: dict) -> tuple[str | None, str]:
    for field, kind in (("url", "url"), ("query", ""), ("regex", ""), ("pattern", ""),
                        ("server_name", ""), ("skill", "")):
        if _str(args.get(field)):
            return args[field], kind
    return None, ""


# The text the extensions put in a person's message that is not theirs: the environment details,
# the files a mention brings, and the notes around a tool's result (cline/cline
# src/core/prompts/responses.ts; the SDK's <user_input> and <mode_notice>).
_NOT_WORDS = ("environment_details", "file_content", "mode_notice", "git_commit", "slash_command")
_WORDS = ("task", "user_message", "feedback", "answer", "user_input", "user_command")
_PREAMBLES = ("The user has provided feedback", "New message to respond to",
              "New instructions for task continuation", "Files attached by the user",
              "# task_progress", "# TODO LIST", "[TASK RESUMPTION]", "[ERROR]",
              "[Response interrupted", "[NOTE]", "(The user did not provide a new message")


def _user_words(said: str, result: bool = False) -> tuple[str, bool]:
    """A person's words in a user message's text block, without what the extension adds to it:
    the ones it wraps (<task>, <feedback>, <answer>...) alone where there are, else the text
    unless it is the extension's own (a tool's result: "[read_file for 'x'] Result:" and the
    blocks after it, a reminder). With whether a tool's result goes on (`result`, before)."""
    for tag in _NOT_WORDS:
        said = _drop_elements(said, tag)
    inner = [w for tag in _WORDS for w in _elements(said, tag)]
    if inner:
        return "\n\n".join(w.strip() for w in inner if w.strip()), result
    said = said.strip()
    first = said.split("\n", 1)[0]
    if first.startswith("[") and "] Result" in first:
        return "", True
    if result or said.startswith(_PREAMBLES):
        return "", result
    return said, False


def _open_at(said: str, tag: str, start: int) -> tuple[int, int]:
    """Where the next <tag> or <tag attrs...> opens at or after `start`, and where its body
    starts ((-1, -1): none)."""
    i = said.find(f"<{tag}", start)
    while i >= 0:
        after = i + len(tag) + 1
        if after < len(said) and said[after] in "> \n\t/":
            close = said.find(">", after)
            return (i, close + 1) if close >= 0 else (-1, -1)
        i = said.find(f"<{tag}", after)
    return -1, -1


def _located(said: str, tag: str) -> list[tuple[int, str]]:
    """(where it opens, its body) of every <tag>...</tag> in a text, in one pass (no regex: a
    text of many unclosed tags stays linear)."""
    out: list[tuple[int, str]] = []
    start, close = 0, f"</{tag}>"
    while True:
        i, body = _open_at(said, tag, start)
        if i < 0:
            return out
        j = said.find(close, body)
        if j < 0:
            return out
        out.append((i, said[body:j]))
        start = j + len(close)


def _elements(said: str, tag: str) -> list[str]:
    return [body for _i, body in _located(said, tag)]


def _drop_elements(said: str, tag: str) -> str:
    """A text without its <tag>...</tag> elements (an unclosed one runs to the end)."""
    out: list[str] = []
    start, close = 0, f"</{tag}>"
    while True:
        i, body = _open_at(said, tag, start)
        if i < 0:
            out.append(said[start:])
            return "".join(out)
        out.append(said[start:i])
        j = said.find(close, body)
        if j < 0:
            return "".join(out)
        start = j + len(close)

