"""GitHub Copilot CLI sessions (the `copilot` command, npm @github/copilot) as records.

Where they are, by the CLI's own code (@github/copilot on npm, 0.0.340 to 1.0.102): its home is
$COPILOT_HOME, else ~/.copilot, on every system (1.0's resolveCopilotHome; %USERPROFILE% on
Windows); 0.0.x builds kept their state in $XDG_STATE_HOME/.copilot when that was set (1.0 moves
it home and leaves links behind, never followed here). Three layouts, read through one parser:
- session-state/<id>/events.jsonl, beside a workspace.yaml naming its folder and its name
  (0.0.400 on);
- session-state/<id>.jsonl, the same events in one flat file (0.0.34x to 0.0.39x);
- history-session-state/session_<id>_<ms>.json, one document rewritten whole (up to 0.0.34x);
  a later build migrates it into session-state as a `session.import_legacy` event.

An event is {type, data, id, timestamp, parentId, agentId?}: `user.message` (content),
`assistant.message` (content, toolRequests with their intentionSummary), `tool.execution_start`,
a subagent's events carry agentId (or data.parentToolCallId). The log is appended to; a rewind
rewrites it shorter (the indexer reads a shrunk file again from the start).

Indexed through sources/registry.py (CopilotCli: append mode, scoped to the session's folder).
"""
from __future__ import annotations

import os
import stat

from . import names
from .base import Source, by_heads, sample_file
from .listing import entries, watch
from ..records import FileChange, Message, SessionDelta, ToolCall
from ..workspace import blake2b, is_within, read_plain

SOURCE, LABEL, _agent = names.COPILOT_CLI
HEAD_BYTES = 256 << 10  # a log's first events, which name its folder (the system prompt: 30 kB)
_RECENT_CALLS = 256  # call ids kept in a file's state: a request's execution is not a second call

# Every event type the CLI has written or declared (its session-events schema, 1.0.63 and
# 1.0.102, and the zod schemas of 0.0.340 to 0.0.423): those holding nothing to index are known,
# so that only a new one is noted (state["unk"], counted by status).
KNOWN_TYPES = frozenset("""abort agent.interrupted assistant.fusion_phase_activity
assistant.fusion_phase_completed assistant.fusion_phase_failed assistant.fusion_phase_started
assistant.idle assistant.intent assistant.message assistant.message_delta assistant.message_start
assistant.reasoning assistant.reasoning_delta assistant.server_tool_progress
assistant.streaming_delta assistant.tool_call_delta assistant.turn_end assistant.turn_retry
assistant.turn_start assistant.usage auto_mode_switch.completed auto_mode_switch.requested
capabilities.changed command.completed command.execute command.queued commands.changed
custom_agent.completed custom_agent.failed custom_agent.selected custom_agent.started
elicitation.completed elicitation.requested exit_plan_mode.completed exit_plan_mode.requested
external_tool.completed external_tool.requested hook.end hook.progress hook.start
human_response.recorded mcp.headers_refresh_completed mcp.headers_refresh_required
mcp.oauth_completed mcp.oauth_recovery_completed mcp.oauth_required mcp.prompts.list_changed
mcp.resources.list_changed mcp.tools.list_changed mcp_app.tool_call_complete model.call_failure
model.call_final_result model.call_finished model.call_start pending_messages.modified
permission.completed permission.requested prompt_cache_break sampling.completed
sampling.requested sandbox.decision session.auto_mode_resolved session.auto_tier_recommendation
session.auto_tier_switch_failed session.autopilot_objective_changed session.autopilot_stopped
session.background_tasks_changed session.binary_asset session.canvas.closed
session.canvas.opened session.canvas.recorded session.canvas.registry_changed
session.canvas.removed session.canvas.unavailable session.compaction_complete
session.compaction_start session.completion_receipt session.context_changed
session.context_cleared session.custom_agents_updated session.custom_notification session.error
session.extensions.attachments_pushed session.extensions_loaded session.fusion_change_checkpoint
session.fusion_commit_started session.fusion_completed session.fusion_handoff
session.fusion_resolved session.fusion_route_failed session.fusion_route_started session.handoff
session.idle session.import_legacy session.indexed_search session.info
session.managed_plugin_progress session.managed_settings_enforced
session.managed_settings_resolved session.mcp_server_needs_reconnect session.mcp_server_removed
session.mcp_server_status_changed session.mcp_server_tools_loaded session.mcp_servers_loaded
session.memory_changed session.mode_changed session.mode_notice_delivered session.model_change
session.model_deselected session.permission_recovery session.permissions_changed
session.plan_changed session.quota_observation session.remote_steerable_changed
session.request_body_compression_disabled session.resume session.schedule_cancelled
session.schedule_created session.schedule_rearmed session.session_limits_changed
session.shutdown session.skills_loaded session.snapshot_rewind session.start
session.task_complete session.title_changed session.todos_changed session.tools_updated
session.truncation session.usage_checkpoint session.usage_info session.usage_record
session.warning session.workspace_file_changed session_limits_exhausted.completed
session_limits_exhausted.requested skill.context_delivered skill.context_delivered_ref
skill.invoked skill.invoked_ref subagent.completed subagent.configured subagent.deselected
subagent.failed subagent.selected subagent.started system.message system.notification
tool.execution_complete tool.execution_partial_result tool.execution_progress
tool.execution_start tool.shell_output tool.user_requested tool_search.activated
ui.ephemeral_query user.message user_input.completed user_input.requested workflow.run_settled
workflow.run_started workflow.run_updated""".split()) | {"session.start v1"}  # (its version)

_SHELLS = ("bash", "powershell", "shell")  # ("shell" in 1.0.77)
_EDITS = ("create", "edit", "str_replace_editor", "write")  # str_replace_editor: by its command
_CWD_LINE = "* Current working directory: "  # the system prompt's <environment_context>


class CopilotCli(Source):
    (name, label, product), mode, agent = names.COPILOT_CLI, "append", "Copilot"
    # `-r, --resume [value]`: "Resume from a previous session (optionally specify existing session
    # ID ...)" (@github/copilot 1.0.63 app.js; `--resume [sessionId]` since 0.0.340)
    resume = "copilot --resume {id}"

    def locations(self, ws: str) -> list[str]:
        return [os.path.join(h, d) for h in homes()
                for d in ("session-state", "history-session-state")]

    def knows(self, kind: str) -> bool:
        return kind in KNOWN_TYPES

    def whole(self, path: str) -> bool:
        return path.endswith(".json")  # a history session, rewritten whole on every save

    def discover(self, ws: str, folders: list | None = None) -> list[tuple[str, object]]:
        """Every event log and history session; with a workspace, a log whose workspace.yaml
        names another folder is left out (the small file beside it: its log is not read)."""
        out: list[tuple[str, object]] = []
        for root in _roots():
            if os.path.basename(root) == "history-session-state":
                out += [(p, None) for p in _histories(root, folders)]
                continue
            for path in _event_logs(root, folders):
                folder = _yaml(path).get("cwd") if ws else None
                if not folder or is_within(os.path.normpath(folder), ws):
                    out.append((path, None))
        return out

    def read(self, path, extra, offset, state):
        if path.endswith(".json"):
            return read_history(path)
        return read_events(path, offset, state)

    def in_scope(self, delta, ws: str) -> bool:
        """This workspace or a folder inside it (as Codex's), or no folder recorded."""
        return not delta.cwd or is_within(os.path.normpath(delta.cwd), ws)

    def holds(self, ws: str) -> bool:
        return any(folder is not None and (not folder or is_within(folder, ws))
                   for folder in map(folder_of, (p for p, _x in self.discover(ws))))

    def everywhere(self, known: dict) -> list[tuple[str, tuple[str, ...]]]:
        """Every session file with the folder it names (base.by_heads)."""
        return by_heads((p for p, _x in self.discover("")), known, folder_of)

    def sample(self, ws: str, text: str) -> str:
        sid = "0c0c0c0c-0000-4000-8000-00000000c11d"
        folder = os.path.join(self.locations(ws)[0], sid)
        path = sample_file(os.path.join(folder, "events.jsonl"), [
            {"type": "session.start", "id": "e1", "parentId": None,
             "timestamp": "2026-01-02T00:00:00.000Z",
             "data": {"sessionId": sid, "version": 1, "producer": "copilot-agent",
                      "copilotVersion": "1.0.63", "startTime": "2026-01-02T00:00:00.000Z",
                      "context": {"cwd": ws}}},
            {"type": "user.message", "id": "e2", "parentId": "e1",
             "timestamp": "2026-01-02T00:00:01.000Z", "data": {"content": text}}])
        with open(os.path.join(folder, "workspace.yaml"), "w", encoding="utf-8") as f:
            f.write(f"id: {sid}\ncwd: {ws}\n")
        return path


# -- where ---------------------------------------------------------------------------------------

def homes() -> list[str]:
    """The CLI's home ($COPILOT_HOME, else ~/.copilot), then 0.0.x's $XDG_STATE_HOME/.copilot."""
    home = os.environ.get("COPILOT_HOME") or os.path.join(os.path.expanduser("~"), ".copilot")
    out = [os.path.abspath(os.path.expanduser(home))]
    xdg = os.environ.get("XDG_STATE_HOME")
    if xdg:
        out.append(os.path.abspath(os.path.join(xdg, ".copilot")))
    return list(dict.fromkeys(out))


def _roots() -> list[str]:
    """The folders listed (locations), each once: 1.0 links the old place's session-state to
    the new one, and listed under both names every session would be read twice."""
    seen: set[str] = set()
    out = []
    for root in CopilotCli().locations(""):
        real = os.path.realpath(root)
        if real not in seen:
            seen.add(real)
            out.append(root)
    return out


def _event_logs(root: str, folders: list | None) -> list[str]:
    """<id>/events.jsonl and flat <id>.jsonl files of a session-state folder. Each session's
    folder is watched too: its log may appear after the folder does. A link is never followed,
    and nothing below a session's folder (checkpoints, files) is listed."""
    out = []
    for entry in entries(root, folders):
        if entry.is_dir(follow_symlinks=False):
            watch(folders, entry.path)
            path = os.path.join(entry.path, "events.jsonl")
            try:
                if stat.S_ISREG(os.lstat(path).st_mode):
                    out.append(path)
            except OSError:
                continue
        elif entry.name.endswith(".jsonl") and entry.is_file(follow_symlinks=False):
            out.append(entry.path)
    return out


def _histories(root: str, folders: list | None) -> list[str]:
    """session_<id>_<ms>.json files, the newest of each session's."""
    newest: dict[str, tuple[int, str]] = {}
    for f in entries(root, folders):
        if not (f.name.startswith("session_") and f.name.endswith(".json")
                and f.is_file(follow_symlinks=False)):
            continue
        sid, _, ms = f.name[len("session_"):-len(".json")].rpartition("_")
        at = int(ms) if ms.isdigit() and len(ms) < 20 else 0
        if sid and (sid not in newest or at > newest[sid][0]):
            newest[sid] = (at, f.path)
    return sorted(p for _at, p in newest.values())


def session_id(path: str) -> str:
    """The session a file holds, by its name: the folder of an events.jsonl, a flat log's stem,
    the <id> of session_<id>_<ms>.json (the ids `copilot --resume` takes)."""
    base = os.path.basename(path)
    if base == "events.jsonl":
        return os.path.basename(os.path.dirname(path))
    if base.endswith(".jsonl"):
        return base[:-len(".jsonl")]
    return base[len("session_"):-len(".json")].rpartition("_")[0] or base


def _yaml(events: str) -> dict[str, str]:
    """The top-level fields of the workspace.yaml beside an events.jsonl ({} for none): a small
    file the CLI writes with the `yaml` package (plain, quoted, folded and block scalars). A
    link, a FIFO or a huge file there is none."""
    if os.path.basename(events) != "events.jsonl":
        return {}
    try:
        got = read_plain(os.path.join(os.path.dirname(events), "workspace.yaml"), 64 << 10)
    except OSError:
        return {}
    if not got:
        return {}
    fields: dict[str, str] = {}
    key, style, lines = None, "", []

    def flush() -> None:
        if key is None:
            return
        if style == "|":
            fields[key] = "\n".join(lines).strip()
        else:  # plain, quoted and folded scalars: their lines join with spaces
            fields[key] = _unquote(" ".join(x for x in lines if x))

    for line in got[0].decode("utf-8", "replace").splitlines():
        if line[:1].isspace() or not line.strip():
            if key is not None:
                lines.append(line.strip())
            continue
        flush()
        name, colon, value = line.partition(":")
        key = name.strip() if colon and not line.startswith(("#", "-")) else None
        value = value.strip()
        style = value[:1] if value[:1] in ("|", ">") else ""
        lines = [] if style else [value]
    flush()
    return fields


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    if len(value) >= 2 and value[0] == value[-1] == '"':
        from .text import load_json  # (a double-quoted YAML scalar's escapes are JSON's)
        try:
            got = load_json(value.encode("utf-8", "surrogatepass"))
            return got if isinstance(got, str) else value[1:-1]
        except ValueError:
            return value[1:-1]
    return value


def folder_of(path: str) -> str | None:
    """The folder a session file names ("": none), None when it cannot be read or holds no
    event yet: its workspace.yaml's, else the first its head names."""
    folder = _yaml(path).get("cwd")
    if folder:
        return os.path.normpath(folder)
    try:
        if path.endswith(".json"):
            deltas, _end, state, _problems = read_history(path)
        else:
            deltas, _end, state, _problems = read_events(path, head=True)
    except (OSError, ValueError):
        return None
    cwd = next((d.cwd for d in deltas if d.cwd), None) or state.get("cwd")
    if isinstance(cwd, str) and cwd:
        return os.path.normpath(cwd)
    return "" if state.get("ok") else None


# -- reading ---------------------------------------------------------------------------------------

def read_events(path: str, offset: int = 0, state: dict | None = None, mtime=None,
                head: bool = False):
    """An event log from `offset`: (deltas, end offset, new state, problems); one session, so
    at most one delta. `head`: stop once the log names its folder (or past HEAD_BYTES)."""
    from . import text  # only once this source is read (never by a hook)
    from .jsonl import JsonlReader  # (the same)
    r = _Reader(session_id(path), dict(state or {}))
    reader = JsonlReader(path, offset, mtime=mtime)
    events = reader.__iter__()  # (a generator: closed below, and its file with it)
    try:
        for obj in events:
            try:
                r.take(obj)
            except (TypeError, ValueError, AttributeError, KeyError) as e:
                reader.bad(reader.end, f"unreadable event ({type(e).__name__})")
            if head and (r.state.get("cwd") or reader.end > HEAD_BYTES):
                break
    finally:
        events.close()
    deltas = r.finish(_yaml(path))
    if reader.end > offset and not r.state.get("ok"):
        deltas = []
        r.problems.append("not a Copilot CLI event log (no event of its shape)")
    for d in deltas:
        text.dated_by_file(d, os.stat(path).st_mtime)
    return deltas, reader.end, r.state, reader.problems + r.problems


def read_history(path: str):
    """A history session (0.0.34x and before), read whole: (deltas, size, state, problems). Raises
    ValueError for a file that is not JSON (being written) or past text.MAX_DOCUMENT."""
    from . import text  # only once this source is read (never by a hook)
    doc, st = text.read_json(path, "a Copilot CLI session")
    if not (isinstance(doc, dict) and (isinstance(doc.get("chatMessages"), list)
                                       or isinstance(doc.get("timeline"), list))):
        return [], st.st_size, {}, ["not a Copilot CLI history session"]
    r = _Reader(session_id(path), {"ok": True})
    r.legacy(doc, "h")
    deltas = r.finish({})
    for d in deltas:
        d.seen(text.parse_ts(doc.get("startTime")))
        text.dated_by_file(d, st.st_mtime)
    return deltas, st.st_size, r.state, r.problems


class _Reader:
    """One read of one session file: the records it adds, and what the next read must know
    (state: "cwd", "prompt" and "at": the keys later records follow, "said": the agent's last
    words, "calls": recent call ids, "titled", "title", "unk", "ok", "n")."""

    def __init__(self, sid: str, state: dict):
        from . import text, tool_calls  # only once this source is read (never by a hook)
        self.text, self.tc = text, tool_calls
        self.sid, self.state = sid, state
        self.problems: list[str] = []
        self.scrub = text.scrubber(self.problems)  # redacted and cut, as every source's text
        self.messages: list[Message] = []
        self.changes: list[FileChange] = []
        self.calls: list[ToolCall] = []
        self.branch: str | None = None
        self.started: float | None = None
        self.tool_names: dict = {}

    # -- events --------------------------------------------------------------------------------

    def take(self, obj: dict) -> None:
        parse_ts = self.text.parse_ts
        kind, data = obj.get("type"), obj.get("data")
        if not isinstance(kind, str) or not isinstance(data, dict):
            return  # not an event (the file as a whole is judged by state["ok"])
        self.state["ok"] = True
        if kind not in KNOWN_TYPES:
            self._unknown(kind)
            return
        ts = parse_ts(obj.get("timestamp"))
        eid = obj.get("id")
        key = eid if isinstance(eid, str) and 0 < len(eid) <= 200 else None
        side = bool(obj.get("agentId")) or isinstance(data.get("parentToolCallId"), str)
        if kind == "session.start":
            version = data.get("version")
            if isinstance(version, int) and not isinstance(version, bool) and version != 1:
                self._unknown(f"session.start v{version}")
            self.started = self.started or parse_ts(data.get("startTime")) or ts
            self._context(data.get("context"))
        elif kind in ("session.resume", "session.context_changed"):
            self._context(data if kind == "session.context_changed" else data.get("context"))
        elif kind == "system.message":
            self._cwd_in(data.get("content"))
        elif kind == "user.message":
            if data.get("isAutopilotContinuation") is True or str(data.get("source", "")) \
                    .startswith("skill"):
                return  # the CLI's own words (autopilot's nudge, a skill's hidden text)
            self.prompt(data.get("content"), self._key(key), ts,
                        side or str(data.get("source", "")).startswith("agent-"))
        elif kind == "assistant.message":
            said = self.reply(data.get("content"), self._key(key), ts, side)
            reqs = data.get("toolRequests")
            for req in reqs if isinstance(reqs, list) else ():
                if isinstance(req, dict):
                    self.call(req.get("name"), req.get("arguments"), req.get("toolCallId"),
                              req.get("intentionSummary"), ts, said, side)
        elif kind in ("tool.execution_start", "tool.user_requested"):
            self.call(data.get("toolName"), data.get("arguments"), data.get("toolCallId"), None,
                      ts, None, side)
        elif kind == "session.import_legacy" and isinstance(data.get("legacySession"), dict):
            self.legacy(data["legacySession"], key or self._key(None))

    def _unknown(self, kind: str) -> None:
        """A type or version this reader does not know: noted once in the file's state (status
        counts it) and said once, by name."""
        kind = kind[:60]
        unk = self.state.setdefault("unk", [])
        if kind not in unk and len(unk) < 50:
            unk.append(kind)
            self.problems.append(f"unknown event {kind!r}: not read (a newer Copilot CLI?)")

    def _key(self, key: str | None) -> str:
        if key:
            return key
        n = self.state.get("n", 0)
        self.state["n"] = n + 1
        return f"n{n}"

    def _context(self, ctx) -> None:
        if isinstance(ctx, dict):
            self._cwd(ctx.get("cwd"))
            if isinstance(ctx.get("branch"), str) and ctx["branch"]:
                # a name is any text: a token too
                self.branch = self.scrub(self.text.strip_private(ctx["branch"]))

    def _cwd(self, cwd) -> None:
        if isinstance(cwd, str) and cwd.strip() and not self.state.get("cwd"):
            self.state["cwd"] = cwd.strip()  # the first folder named is the session's

    def _cwd_in(self, prompt) -> None:
        """The folder a system prompt names, for a log whose start names none (before 0.0.400)."""
        if isinstance(prompt, str) and not self.state.get("cwd"):
            at = prompt.find(_CWD_LINE)
            if at >= 0:
                self._cwd(prompt[at + len(_CWD_LINE):].split("\n", 1)[0])

    # -- records -------------------------------------------------------------------------------

    def prompt(self, text, key: str, ts, side: bool) -> None:
        if not isinstance(text, str) or not text.strip():
            return
        # the user's <private> spans out before anything reads the text
        said = self.scrub(self.text.strip_private(text.strip()))
        self.messages.append(Message(key, "user", said, ts, sidechain=side))
        if not side:
            self.state["prompt"] = self.state["at"] = key

    def reply(self, text, key: str, ts, side: bool) -> str | None:
        """The reply's message, if it says anything; its key, which the calls in it follow."""
        if not isinstance(text, str) or not text.strip():
            return None
        said = self.scrub(text.strip())
        self.messages.append(Message(key, "assistant", said, ts, sidechain=side,
                                     pairs_with=None if side else self.state.get("prompt")))
        if not side:
            self.state["at"] = key
            self.state["said"] = self.text.tail(said, 500)  # the reason of the changes after it
        return key

    def call(self, name, args, call_id, why, ts, key: str | None, side: bool) -> None:
        """A tool call (a request, or an execution no request announced), and the files it
        changes. `why`: the agent's intentionSummary of it."""
        tool_calls = self.tc
        call = call_id if isinstance(call_id, str) and 0 < len(call_id) <= 200 else None
        recent = self.state.setdefault("calls", [])
        if call is not None:
            if call in recent:
                return  # a request's own execution
            recent.append(call)
            del recent[:-_RECENT_CALLS]
        name = name if isinstance(name, str) else ""
        args = _args(args)
        key = key or (None if side else self.state.get("at"))
        why = why if isinstance(why, str) else None
        made: ToolCall
        if name in _SHELLS and isinstance(args, dict):
            line = args.get("description") if isinstance(args.get("description"), str) else why
            made = tool_calls.make(name, tool_calls.command_text(args.get("command")), line,
                                   self.scrub, kind="command", ts=ts, key=key, call=call,
                                   names=self.tool_names)
        elif name == "apply_patch":
            patch = args if isinstance(args, str) else \
                (args.get("input") or args.get("patch")) if isinstance(args, dict) else None
            paths = [self._abs(p) for p in tool_calls.patched_paths(patch)]
            self._changed(paths, name, why, ts, key)
            made = tool_calls.patch(paths, self.scrub, ts, key, call)
        elif name in _EDITS or name == "view":
            path = args.get("path") if isinstance(args, dict) else None
            command = args.get("command") if isinstance(args, dict) else None
            path = self._abs(path) if isinstance(path, str) and path.strip() else None
            if name in _EDITS and (name != "str_replace_editor" or command != "view") and path:
                self._changed([path], name, why, ts, key)
            line = command if name == "str_replace_editor" and isinstance(command, str) else why
            made = tool_calls.make(name, path, line, self.scrub, kind="path", ts=ts, key=key,
                                   call=call, names=self.tool_names)
        elif name == "web_fetch" and isinstance(args, dict):
            made = tool_calls.make(name, args.get("url"), why, self.scrub, kind="url", ts=ts,
                                   key=key, call=call, names=self.tool_names)
        else:  # any other tool (grep, task, an MCP server's): the first usual argument
            made = tool_calls.codex(name, args, self.scrub, ts, key, call)
            if why and not made.line:
                made.line = tool_calls.brief(why, tool_calls.LINE_MAX, self.scrub)
        made.sidechain = side
        self.calls.append(made)

    def _changed(self, paths: list[str], tool: str, why, ts, key) -> None:
        why = self.scrub(self.text.strip_private(why)) if why else ""
        reason = self.state.get("said") or self.text.tail(why, 500)
        for p in dict.fromkeys(paths):
            self.changes.append(FileChange(p, tool, reason, ts, key))


    def _abs(self, path: str) -> str:
        """A path as the tool took it: relative ones are the session folder's."""
        cwd = self.state.get("cwd")
        drive = len(path) > 2 and path[1] == ":" and path[2] in "\\/"  # C:\ on any system
        if os.path.isabs(path) or drive or not cwd:
            return path
        return os.path.normpath(os.path.join(cwd, path))

    def legacy(self, doc: dict, prefix: str) -> None:
        """A history session (its own file, or migrated into a log): its timeline, which has the
        times and the calls, else its chat messages; keys `prefix`/n."""
        parse_ts = self.text.parse_ts
        chat = doc.get("chatMessages")
        chat = [m for m in chat if isinstance(m, dict)] if isinstance(chat, list) else []
        for m in chat:
            if m.get("role") == "system":
                self._cwd_in(m.get("content"))
        timeline = doc.get("timeline")
        timeline = [e for e in timeline if isinstance(e, dict)] if isinstance(timeline, list) \
            else []
        said = None
        if any(e.get("type") in ("user", "copilot") for e in timeline):
            for n, e in enumerate(timeline):
                kind, ts = e.get("type"), parse_ts(e.get("timestamp"))
                if kind == "user":
                    self.prompt(e.get("text"), f"{prefix}/{n}", ts, False)
                elif kind == "copilot":
                    said = self.reply(e.get("text"), f"{prefix}/{n}", ts, False) or said
                elif kind in ("tool_call_requested", "tool_call_completed"):
                    self.call(e.get("name"), e.get("arguments"), e.get("callId"),
                              e.get("intentionSummary"), ts, said, False)
            return
        for n, m in enumerate(chat):
            role, content = m.get("role"), _content(m.get("content"))
            if role == "user":
                at = content.rfind("<reminder>")  # the CLI's note to the model, not the user's
                self.prompt(content[:at] if at >= 0 else content, f"{prefix}/{n}", None, False)
            elif role == "assistant":
                said = self.reply(content, f"{prefix}/{n}", None, False)
                for tc in m.get("tool_calls") if isinstance(m.get("tool_calls"), list) else ():
                    fn = tc.get("function") if isinstance(tc, dict) else None
                    if isinstance(fn, dict):
                        self.call(fn.get("name"), fn.get("arguments"), tc.get("id"), None, None,
                                  said, False)

    # -- the delta -----------------------------------------------------------------------------

    def finish(self, meta: dict) -> list[SessionDelta]:
        from .. import titles  # only where a transcript is read
        d = SessionDelta(self.sid, SOURCE, LABEL)
        d.cwd = meta.get("cwd") or self.state.get("cwd")  # workspace.yaml's: where it resumes
        d.branch = self.branch
        d.seen(self.started)
        title = meta.get("name") or meta.get("summary")
        # (its fingerprint in the state, which is stored: a name is any text, a token too)
        mark = blake2b(title.encode("utf-8", "replace"), digest_size=8).hexdigest() \
            if title else None
        if title and mark != self.state.get("title"):
            self.state["title"] = mark
            named = titles.normalize(self.scrub(self.text.strip_private(title)))
            if meta.get("user_named") == "true":
                d.custom_title = named
            else:  # the name the CLI made of the first prompt
                d.summary_title = named
        d.messages, d.file_changes, d.tool_calls = self.messages, self.changes, self.calls
        for item in self.messages + self.calls:
            d.seen(item.ts)
        for m in self.messages:
            if m.role == "user" and not m.sidechain and not self.state.get("titled"):
                d.first_prompt = titles.clean_first_prompt(m.text)
                self.state["titled"] = True
        if not (d.messages or d.file_changes or d.tool_calls or d.custom_title
                or d.summary_title):
            return []  # a log of metadata alone (the CLI opened, nothing asked) is no session
        return [d]


def _args(args):
    """A call's arguments: an object, or the text of a custom tool (apply_patch's patch); one
    given as JSON text is parsed."""
    if isinstance(args, str) and args[:1] == "{":
        from .text import load_json  # (a few small texts: a call's arguments)
        try:
            got = load_json(args.encode("utf-8", "surrogatepass")) if len(args) < (1 << 20) \
                else None
        except ValueError:
            got = None
        return got if isinstance(got, dict) else args
    return args


def _content(content) -> str:
    """A chat message's content: a text, or parts of which the text ones count."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content
                         if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""
