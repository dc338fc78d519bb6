"""Tool calls as records, from any source: the tool, what it acts on (`target`: a file, a
command, a URL, a pattern) and one short line about it (a command's description, the lines
read). Each text is redacted before it is cut (a secret cut first escapes the patterns: a
command can hold a token), then made one printable line: a transcript can hold anything."""
from __future__ import annotations

import re

from ..records import ToolCall
from .text import head, line_cut, strip_private

TARGET_MAX = 300
LINE_MAX = 200
_WINDOW = 4096  # of a long text (a heredoc, a plan), what is redacted: the cut keeps far less
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # what collapsing white space leaves of them
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Delete|Update) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$",
                         re.M)


def patched_paths(patch) -> list[str]:
    """The files an apply_patch text names (Add, Update, Delete File; Move to), each once, as
    written (Codex, the Copilot CLI and Cline send the same format)."""
    if not isinstance(patch, str):
        return []
    return list(dict.fromkeys(a or b for a, b in _PATCH_FILE.findall(patch)))


def brief(text, n: int, scrub) -> str:
    """`text` redacted, without its <private> spans (Claude can pass on the user's, tags and
    all, into a command), on one line, its control characters and lone surrogates shown as
    U+FFFD, cut to n characters (never inside a [REDACTED:kind] tag)."""
    if not isinstance(text, str) or not text:
        return ""
    text = scrub(line_cut(strip_private(text), _WINDOW, _WINDOW))
    if not text.isascii():  # (isascii costs nothing: a str knows it)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # (a lone surrogate: SQLite cannot store one)
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    text = " ".join(text.split())
    if not text.isprintable():  # (a control character is not: most texts need no regex)
        text = _CONTROL.sub("\ufffd", text)
    return head(text, n)


def make(tool, target, line, scrub, *, kind: str = "", ts=None, key=None, sidechain=False,
         call=None, names: dict | None = None) -> ToolCall:
    """A call's record. `names`: the tools' names as stored, kept by the caller for one file
    (whose calls name a few tools thousands of times)."""
    tool = tool if isinstance(tool, str) else ""
    shown = names.get(tool) if names is not None else None
    if shown is None:
        shown = brief(tool, 80, scrub) or "tool"
        if names is not None:
            names[tool] = shown
    return ToolCall(shown, brief(target, TARGET_MAX, scrub), brief(line, LINE_MAX, scrub), ts,
                    key, sidechain, call if isinstance(call, str) and call else None,
                    kind if isinstance(target, str) and target else "")


# -- Claude Code -------------------------------------------------------------------------------

# The input field each of Claude Code's tools acts on, and what that is.
_CLAUDE_TARGETS = {
    "Bash": ("command", "command"), "Read": ("file_path", "path"),
    "Write": ("file_path", "path"), "Edit": ("file_path", "path"),
    "MultiEdit": ("file_path", "path"), "NotebookEdit": ("notebook_path", "path"),
    "NotebookRead": ("notebook_path", "path"), "LS": ("path", "path"),
    "Glob": ("pattern", ""), "Grep": ("pattern", ""), "WebFetch": ("url", "url"),
    "WebSearch": ("query", ""), "Task": ("description", ""), "Agent": ("description", ""),
    "Skill": ("skill", ""), "SlashCommand": ("command", ""), "BashOutput": ("bash_id", ""),
    "KillShell": ("shell_id", ""), "KillBash": ("shell_id", ""),
    # acting on nothing: their line says it all
    "TodoWrite": ("", ""), "ExitPlanMode": ("", ""), "AskUserQuestion": ("", "")}
# Any other tool (an MCP server's, a newer one): the first of these it has, else its first text.
_USUAL = (("file_path", "path"), ("notebook_path", "path"), ("path", "path"), ("url", "url"),
          ("command", "command"), ("cmd", "command"), ("pattern", ""), ("query", ""),
          ("description", ""), ("prompt", ""), ("name", ""))


def claude_code(name: str, inp, scrub, ts, key, sidechain, call,
                names: dict | None = None) -> ToolCall:
    """A Claude Code `tool_use` block's call (`names`: see make)."""
    inp = inp if isinstance(inp, dict) else {}
    field, kind = _CLAUDE_TARGETS.get(name, (None, ""))
    target = inp.get(field) if field else None
    if field is None:
        target, kind = _usual(inp)
    return make(name, target, _claude_line(name, inp), scrub, kind=kind, ts=ts, key=key,
                sidechain=sidechain, call=call, names=names)


def _claude_line(name: str, inp: dict):
    if name == "Bash":
        return inp.get("description")
    if name == "Read" and isinstance(inp.get("offset"), int) and isinstance(inp.get("limit"), int):
        return f"lines {inp['offset']}-{inp['offset'] + inp['limit'] - 1}"
    if name == "MultiEdit" and isinstance(inp.get("edits"), list):
        return f"{len(inp['edits'])} edits"
    if name in ("Glob", "Grep") and isinstance(inp.get("path"), str):
        return f"in {inp['path']}"
    if name == "WebFetch":
        return inp.get("prompt")
    if name in ("Task", "Agent"):
        return inp.get("subagent_type")
    if name == "TodoWrite" and isinstance(inp.get("todos"), list):
        todos = [t for t in inp["todos"] if isinstance(t, dict)]
        doing = [t.get("content") for t in todos if t.get("status") == "in_progress"]
        return doing[0] if doing and isinstance(doing[0], str) else f"{len(todos)} todos"
    if name == "ExitPlanMode":
        return inp.get("plan")
    if name == "AskUserQuestion" and isinstance(inp.get("questions"), list) and inp["questions"]:
        first = inp["questions"][0]
        return first.get("question") if isinstance(first, dict) else None
    return None


def _usual(args) -> tuple[str | None, str]:
    """(target, kind) of a tool's arguments that no rule here knows."""
    if not isinstance(args, dict):
        return (args, "") if isinstance(args, str) else (None, "")
    for field, kind in _USUAL:
        if isinstance(args.get(field), str) and args[field]:
            return args[field], kind
    for value in args.values():
        if isinstance(value, str) and value:
            return value, ""
    return None, ""


# -- Codex -------------------------------------------------------------------------------------

def command_text(command) -> str | None:
    """A shell call's command as one text: the script of `bash -lc SCRIPT`, else its words."""
    if isinstance(command, str):
        return command
    if not isinstance(command, list) or not all(isinstance(c, str) for c in command):
        return None
    if len(command) >= 3 and command[1] in ("-lc", "-c"):
        return command[2]
    return " ".join(command)


def codex(name, args, scrub, ts, key, call) -> ToolCall:
    """A Codex function call's (or custom tool call's) call, `args` parsed where it was JSON."""
    if name == "update_plan" and isinstance(args, dict):
        plan = args.get("plan")
        line = args.get("explanation") or (
            f"{len(plan)} step{'' if len(plan) == 1 else 's'}" if isinstance(plan, list) else None)
        return make(name, None, line, scrub, ts=ts, key=key, call=call)
    target, kind = _usual(args)
    return make(name, target, None, scrub, kind=kind, ts=ts, key=key, call=call)


def patch(paths: list[str], scrub, ts, key, call) -> ToolCall:
    """An apply_patch call: the first file it changes, and the others on its line."""
    more = f"and {', '.join(paths[1:6])}" + (" ..." if len(paths) > 6 else "") \
        if len(paths) > 1 else None
    return make("apply_patch", paths[0] if paths else None, more, scrub, kind="path", ts=ts,
                key=key, call=call)


# -- VS Code Copilot Chat ----------------------------------------------------------------------

_LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]*)\)")  # [label](uri), as its messages name files


def copilot(part: dict, scrub, ts, key, path_of) -> ToolCall:
    """A `toolInvocationSerialized` response part's call. `path_of`: a VS Code URI's path."""
    data = part.get("toolSpecificData")
    target, kind = None, ""
    if isinstance(data, dict) and data.get("kind") == "terminal":
        cmd = data.get("commandLine")
        target = (cmd.get("toolEdited") or cmd.get("original")) if isinstance(cmd, dict) \
            else data.get("command")
        kind = "command"
    said = [_value(part.get(k)) for k in ("pastTenseMessage", "invocationMessage")]
    line = next((s for s in said if s), None)
    if target is None:
        for k in ("invocationMessage", "pastTenseMessage"):
            message = part.get(k)
            uris = message.get("uris") if isinstance(message, dict) else None
            for uri, value in (uris.items() if isinstance(uris, dict) else ()):
                target = path_of(value) or path_of(uri)
                if target:
                    kind = "path"
                    break
            if target:
                break
    if line:  # "Read [](file:///a/b.py#1-20)": the link as the path it names
        line = _LINK.sub(lambda m: m.group(1) or path_of(m.group(2).split("#")[0]) or "", line)
    return make(part.get("toolId"), target, line, scrub, kind=kind, ts=ts, key=key,
                call=part.get("toolCallId"))


def _value(message) -> str | None:
    """A VS Code message: a string, or a markdown string {value}."""
    if isinstance(message, dict):
        message = message.get("value")
    return message if isinstance(message, str) and message.strip() else None
