"""A tools-only MCP server over stdio (JSON-RPC 2.0, one message per line), in the standard
library alone.

Why not the `mcp` SDK: Claude Code waits for every MCP server to connect before a session's first
request, and importing the SDK (pydantic, anyio, starlette) takes 0.5-1.7 s of CPU, so every
session paid it. This answers `initialize` and `tools/list` from data in about the time Python
takes to start. What the SDK gave and what stands in for it here:
- the handshake and version negotiation: `initialize` echoes a version it speaks, else offers
  the newest (as the SDK does); `ping`; `tools/list` (one page); `notifications/cancelled`;
- argument validation from type annotations (pydantic): each tool declares a JSON Schema of the
  small subset below, and `check_arguments` enforces it, with one-line reasons;
- running calls off the reading thread: one worker, in order (the memory answers one at a time
  anyway), so the reader keeps answering pings and notices the client leaving;
- the stdio transport: lines in, lines out, writes serialised.
The SDK's own client tests the conformance (tests/test_mcp.py).

The process ends with its client: at the end of stdin, at SIGINT/SIGTERM, or when its parent
dies, whatever a call is doing (SQLite rolls back a transaction that never committed).
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading

from .terminal import neutral  # (standard library only, as this module)

# Versions reachable through the initialize handshake, oldest first.
VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
# A longer request is refused unread. The longest a client sends is a tool call, whose
# arguments the tools bound to some 4,000 characters (24 kB as \u escapes): 1 MB is forty times
# that, and bounds what parsing a line can cost (a line of `{},{},...`: some 30 MB of objects;
# 16 MB of it took 400 MB). Nesting is bounded by the parser: json stops with RecursionError at
# the interpreter's recursion limit, however deep the line goes (a parse error).
MAX_LINE = 1 << 20
PARENT_CHECK = 0.25  # seconds between looks at whether the parent is still there

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602


class ToolError(Exception):
    """A tool's failure as the model should read it: a result with isError, not a crash."""


class Tool:
    __slots__ = ("name", "description", "schema", "annotations", "run")

    def __init__(self, name: str, description: str, schema: dict, run, annotations: dict):
        self.name, self.description, self.schema = name, description, schema
        self.run, self.annotations = run, annotations  # run(arguments) -> str

    def listing(self) -> dict:
        return {"name": self.name, "description": self.description, "inputSchema": self.schema,
                "annotations": self.annotations}


# -- arguments ------------------------------------------------------------------------------------

def schema(properties: dict, required: tuple[str, ...] = ()) -> dict:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False}


def check_arguments(spec: dict, args) -> dict:
    """The arguments as the tool gets them (defaults filled in), or ToolError saying in one line
    which argument is wrong and what it may be. Understands what the tools declare: string
    (minLength, maxLength, enum) and integer (minimum, maximum); null is the same as absent."""
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ToolError(f"the arguments must be an object, not {_json_type(args)}")
    props = spec["properties"]
    unknown = [k for k in args if k not in props]
    if unknown:
        takes = f"takes: {', '.join(props)}" if props else "takes no arguments"
        raise ToolError(f"unknown argument {_show(unknown[0])}: this tool {takes}")
    out = {}
    for name, p in props.items():
        v = args.get(name)
        if v is None:
            if name in spec["required"]:
                raise ToolError(f"{name}: required: give {_allowed(p)}")
            out[name] = p.get("default")
            continue
        if p["type"] == "string":
            if not isinstance(v, str):
                raise _wrong(name, p, f"{_json_type(v)} {_show(v)}")
            if len(v) < p.get("minLength", 0):
                raise _wrong(name, p, "empty" if not v else f"{len(v)} characters")
            if len(v) > p.get("maxLength", len(v)):
                raise _wrong(name, p, f"{len(v)} characters")
        elif p["type"] == "integer":
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            if isinstance(v, bool) or not isinstance(v, int):
                raise _wrong(name, p, f"{_json_type(v)} {_show(v)}")
            lo, hi = p.get("minimum"), p.get("maximum")
            if (lo is not None and v < lo) or (hi is not None and v > hi):
                raise _wrong(name, p, _show(v))
        if "enum" in p and v not in p["enum"]:
            raise _wrong(name, p, _show(v))
        out[name] = v
    return out


def _allowed(p: dict) -> str:
    """What an argument may be, as its schema says, in words."""
    if "enum" in p:
        return f"one of {', '.join(p['enum'])}"
    if p["type"] == "integer":
        lo, hi = p.get("minimum"), p.get("maximum")
        bounds = (f" from {lo} to {hi}" if lo is not None and hi is not None
                  else f" from {lo}" if lo is not None else f" up to {hi}" if hi is not None
                  else "")
        return f"a whole number{bounds}"
    lo, hi = p.get("minLength", 0), p.get("maxLength")
    size = (f" of {lo} to {hi} characters" if lo and hi is not None
            else f" of at most {hi} characters" if hi is not None
            else f" of at least {lo} characters" if lo else "")
    what = f" ({p['description']})" if p.get("description") else ""
    return f"a string{size}{what}"


def _wrong(name: str, p: dict, given: str) -> ToolError:
    return ToolError(f"{name}: must be {_allowed(p)}, not {given}")


def _json_type(v) -> str:
    for t, name in ((bool, "a boolean"), (int, "a number"), (float, "a number"), (str, "a string"),
                    (list, "an array"), (dict, "an object")):
        if isinstance(v, t):
            return name
    return "null"


def _show(v) -> str:
    """A value, quoted as JSON, short, on one line (JSON leaves U+2028 and the like as they are,
    and a model's reader may break the line there)."""
    text = json.dumps(v, ensure_ascii=False)
    text = text if len(text) <= 60 else text[:57] + "..."
    return "".join(c if c.isprintable() or c == " " else f"\\u{ord(c):04x}" for c in text)


def sound(node):
    """Lone surrogates (JSON may spell them, `\\ud800`, and Python reads them) made U+FFFD: they
    cannot be encoded, logged or sent back."""
    if isinstance(node, str):
        return node.encode("utf-16", "surrogatepass").decode("utf-16", "replace") \
            if any("\ud800" <= c <= "\udfff" for c in node) else node
    if isinstance(node, list):
        return [sound(x) for x in node]
    if isinstance(node, dict):
        return {sound(k): sound(v) for k, v in node.items()}
    return node


# -- the server -------------------------------------------------------------------------------------

class Server:
    def __init__(self, name: str, version: str, instructions: str, tools: list[Tool], *,
                 on_fault=None, stdin=None, stdout=None):
        self.info = {"name": name, "version": version}
        self.instructions = instructions
        self.tools = {t.name: t for t in tools}
        self.on_fault = on_fault  # on_fault(exception) -> the one line the model reads
        self.stdin = stdin if stdin is not None else sys.stdin.buffer
        self.stdout = stdout if stdout is not None else sys.stdout.buffer
        self._out = threading.Lock()
        self._jobs: list = []
        self._have_job = threading.Condition()
        self._cancelled: set = set()
        self._worker: threading.Thread | None = None

    # -- lines in and out ---------------------------------------------------------------------------

    def send(self, msg: dict) -> None:
        data = json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")
        with self._out:
            try:
                self.stdout.write(data + b"\n")
                self.stdout.flush()
            except (OSError, ValueError):  # the client is gone
                quit_now()

    def _error(self, rid, code: int, message: str) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "error": {
            "code": code, "message": neutral(message, multiline=False)}})

    def serve(self) -> None:
        """Read requests until stdin ends; then the process ends, at once."""
        while True:
            try:
                line = self.stdin.readline(MAX_LINE + 1)
            except (OSError, ValueError):
                line = b""
            if not line:
                quit_now()
            if len(line) > MAX_LINE and not line.endswith(b"\n"):
                self._skip_rest_of_line()
                self._error(None, INVALID_REQUEST, f"request longer than {MAX_LINE >> 20} MB")
                continue
            if line.strip():
                self.handle_line(line)

    def _skip_rest_of_line(self) -> None:
        while True:
            chunk = self.stdin.readline(MAX_LINE)
            if not chunk:
                quit_now()
            if chunk.endswith(b"\n"):
                return

    def handle_line(self, line: bytes) -> None:
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):
            return self._error(None, PARSE_ERROR, "Parse error: not JSON")
        if not isinstance(msg, dict):
            return self._error(None, INVALID_REQUEST, "Invalid Request: one JSON object a line")
        method, rid = msg.get("method"), msg.get("id")
        if not isinstance(method, str):
            if "id" in msg and ("result" in msg or "error" in msg):
                return None  # an answer to a request of ours: we send none
            return self._error(rid if _valid_id(rid) else None, INVALID_REQUEST,
                               "Invalid Request: no method")
        params = msg.get("params")
        params = params if isinstance(params, dict) else {}
        if "id" not in msg:
            return self._notification(method, params)
        if not _valid_id(rid):
            return self._error(None, INVALID_REQUEST, "Invalid Request: bad id")
        if method == "initialize":
            asked = params.get("protocolVersion")
            self.send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": asked if asked in VERSIONS else VERSIONS[-1],
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": self.info, "instructions": self.instructions}})
        elif method == "ping":
            self.send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "tools/list":
            self.send({"jsonrpc": "2.0", "id": rid, "result": {
                "tools": [t.listing() for t in self.tools.values()]}})
        elif method == "tools/call":
            self._enqueue(rid, params)
        else:
            self._error(rid, METHOD_NOT_FOUND, f"Method not found: {method[:100]}")
        return None

    def _notification(self, method: str, params: dict) -> None:
        if method == "notifications/cancelled" and _valid_id(params.get("requestId")):
            with self._have_job:
                self._cancelled.add(params["requestId"])
        # notifications/initialized and anything else: nothing to answer

    # -- calls, one at a time off the reading thread ------------------------------------------------

    def _enqueue(self, rid, params: dict) -> None:
        with self._have_job:
            self._cancelled.discard(rid)  # an id used again is a new request
            self._jobs.append((rid, params))
            self._have_job.notify()
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="mcp calls", daemon=True)
                self._worker.start()

    def _work(self) -> None:
        while True:
            with self._have_job:
                while not self._jobs:
                    self._have_job.wait()
                rid, params = self._jobs.pop(0)
                if rid in self._cancelled:
                    self._cancelled.discard(rid)
                    continue
            result = self.call(params.get("name"), params.get("arguments"))
            with self._have_job:
                if rid in self._cancelled:  # the client no longer wants it: no answer
                    self._cancelled.discard(rid)
                    continue
            self.send({"jsonrpc": "2.0", "id": rid, "result": result})

    def call(self, name, arguments) -> dict:
        """One tools/call as its result: the tool's text, or isError with one line. The line
        goes through the terminal's neutraliser, as a result does (mcp_server.dumps): Claude
        Code shows it in its terminal, and it may name a path or quote a title that holds
        control characters."""
        tool = self.tools.get(name) if isinstance(name, str) else None
        try:
            if tool is None:
                raise ToolError(f"Unknown tool: {_show(name)}")
            text, error = tool.run(check_arguments(tool.schema, sound(arguments))), False
        except ToolError as e:
            text, error = str(e), True
        except Exception as e:  # noqa: BLE001 - a fault of ours: said in one line, server goes on
            text, error = (self.on_fault(e) if self.on_fault else f"{type(e).__name__}: {e}"), True
        if error:
            text = neutral(text, multiline=False)
        return {"content": [{"type": "text", "text": text}], "isError": error}


def _valid_id(rid) -> bool:
    return isinstance(rid, (str, int)) and not isinstance(rid, bool)


def quit_now() -> None:
    """End the process at once: a call in flight is abandoned (SQLite rolls back what it had not
    committed), daemon threads and all. Output already sent is flushed."""
    os._exit(0)


def end_with_parent() -> None:
    """A thread that ends the process when its parent dies (the client killed without closing
    our stdin, which a grandchild may hold open)."""
    parent = os.getppid()
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(PARENT_CHECK):
            if os.getppid() != parent:
                quit_now()
    threading.Thread(target=watch, name="mcp parent", daemon=True).start()


def end_on_signals() -> None:
    """SIGINT and SIGTERM end the server at once. Claude Code stops a server with SIGINT, then
    SIGTERM 100 ms later, its stdin still open."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: quit_now())
