"""A local stand-in for the Anthropic Messages API, for running the real Claude Code CLI offline.

It listens on 127.0.0.1 only, answers `POST /v1/messages` with the streaming (SSE) events Claude
Code reads (message_start, content_block_start/delta/stop, message_delta, message_stop), or with
one JSON message when a request does not ask to stream, and records every request body so a test
can assert what reached the model. A reply is chosen by the test's rules (see `MockApi.rule`); a
tool_use reply makes Claude Code run a real tool, so the transcript gets a real file change. The
server stops itself after `lifetime` seconds even if a test never stops it.

Run alone for experiments: python tests/mock_messages_api.py [PORT]  (logs requests to stdout).
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULT_REPLY = "Done."


def _text_of(content) -> str:
    if isinstance(content, str):
        return content
    out = []
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict):
            if isinstance(block.get("text"), str):
                out.append(block["text"])
            elif block.get("type") == "tool_result":
                out.append(_text_of(block.get("content")))
    return "\n".join(out)


class Request:
    """One recorded request to /v1/messages."""

    def __init__(self, body: dict):
        self.body = body
        self.messages = body.get("messages") or []

    @property
    def text(self) -> str:
        """Everything the model was sent: system prompt and every message, as one string."""
        system = self.body.get("system")
        parts = [_text_of(system) if not isinstance(system, str) else system]
        parts += [_text_of(m.get("content")) for m in self.messages if isinstance(m, dict)]
        return "\n".join(p for p in parts if p)

    @property
    def last_user(self) -> str:
        for m in reversed(self.messages):
            if isinstance(m, dict) and m.get("role") == "user":
                return _text_of(m.get("content"))
        return ""

    @property
    def turn(self) -> tuple[str, int]:
        """(the user's last prompt, how many tool results have come since it)."""
        results = 0
        for m in reversed(self.messages):
            if not isinstance(m, dict) or m.get("role") != "user":
                continue
            content = m.get("content")
            if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") ==
                                                 "tool_result" for b in content):
                results += 1
                continue
            return _text_of(content), results
        return "", results

    @property
    def last_turn(self) -> dict | None:
        """The last message that is not Claude Code's own: 2.1.332 puts role-`system` messages
        (hook context) after the user's turn."""
        for m in reversed(self.messages):
            if isinstance(m, dict) and m.get("role") != "system":
                return m
        return None

    @property
    def ends_with_tool_result(self) -> bool:
        last = self.last_turn
        content = last.get("content") if isinstance(last, dict) else None
        return isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content)

    def tool_names(self) -> list[str]:
        return [t.get("name") for t in self.body.get("tools") or [] if isinstance(t, dict)]

    def deferred_tool_names(self) -> list[str]:
        """Tools offered by name only, their schemas loaded through ToolSearch (2.1.332: "The
        following deferred tools are now available via ToolSearch. ...:" then one a line)."""
        text = self.text
        at = text.find("deferred tools are now available")
        if at < 0:
            return []
        lines = text[at:].split("\n")[1:]
        out = []
        for line in lines:
            if not line.strip() or " " in line.strip():
                break
            out.append(line.strip())
        return out

    def tool_results(self) -> list[dict]:
        """The tool_result blocks of the last turn: {"tool_use_id", "is_error", "text"}."""
        last = self.last_turn
        content = last.get("content") if isinstance(last, dict) else None
        if not isinstance(content, list):
            return []
        return [{"tool_use_id": b.get("tool_use_id"), "is_error": bool(b.get("is_error")),
                 "text": _text_of(b.get("content"))}
                for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


class MockApi:
    def __init__(self, lifetime: float = 900.0):
        self.requests: list[Request] = []
        self.other: list[tuple[str, str]] = []  # (method, path) of anything but /v1/messages
        self._rules: list[tuple[str, object]] = []
        self.on_request = None  # called with each Request before it is answered
        self._lock = threading.Lock()
        self._ids = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._timer = threading.Timer(lifetime, self.stop)  # never outlives a forgotten test
        self._timer.daemon = True

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self) -> None:
        self._thread.start()
        self._timer.start()

    def stop(self) -> None:
        self._timer.cancel()
        self.server.shutdown()
        self.server.server_close()

    def rule(self, trigger: str, reply) -> None:
        """When the last user message contains `trigger` (and is not a tool result), answer with
        `reply`: a string, or a dict {"tool": name, "input": {...}} for one tool_use block; or a
        list of those, one step after each tool result of the turn (a Read, then the Edit)."""
        self._rules.append((trigger, reply))

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()
            self.other.clear()

    def _choose(self, req: Request):
        prompt, step = req.turn
        for trigger, reply in self._rules:
            if trigger in prompt:
                if isinstance(reply, list):
                    return reply[step] if step < len(reply) else "The tool ran; that is done."
                return reply if not step else "The tool ran; that is done."
        return DEFAULT_REPLY if not step else "The tool ran; that is done."

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            self._ids += 1
            return f"{prefix}_mock{self._ids:06d}"

    def _handler(self):
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _empty(self, code: int = 200) -> None:
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_HEAD(self):
                with api._lock:
                    api.other.append(("HEAD", self.path))
                self._empty()

            def do_GET(self):
                with api._lock:
                    api.other.append(("GET", self.path))
                self._empty(404)

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                path = self.path.split("?", 1)[0]
                if path.endswith("/count_tokens"):
                    return self._json({"input_tokens": 100})
                if path != "/v1/messages":
                    with api._lock:
                        api.other.append(("POST", self.path))
                    return self._empty(404)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    return self._empty(400)
                req = Request(body)
                with api._lock:
                    api.requests.append(req)
                if api.on_request is not None:
                    api.on_request(req)
                reply = api._choose(req)
                model = body.get("model") or "claude-mock"
                if isinstance(reply, dict):
                    block = {"type": "tool_use", "id": api._next_id("toolu"),
                             "name": reply["tool"], "input": reply["input"]}
                    stop = "tool_use"
                else:
                    block = {"type": "text", "text": str(reply)}
                    stop = "end_turn"
                if body.get("stream"):
                    self._stream(model, block, stop)
                else:
                    self._json({"id": api._next_id("msg"), "type": "message", "role": "assistant",
                                "model": model, "content": [block], "stop_reason": stop,
                                "stop_sequence": None,
                                "usage": {"input_tokens": 100, "output_tokens": 20}})

            def _json(self, obj) -> None:
                data = json.dumps(obj).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, model: str, block: dict, stop: str) -> None:
                usage = {"input_tokens": 100, "output_tokens": 1, "cache_creation_input_tokens": 0,
                         "cache_read_input_tokens": 0}
                events = [("message_start", {"type": "message_start", "message": {
                    "id": api._next_id("msg"), "type": "message", "role": "assistant",
                    "model": model, "content": [], "stop_reason": None, "stop_sequence": None,
                    "usage": usage}})]
                if block["type"] == "text":
                    start = {"type": "text", "text": ""}
                    delta = {"type": "text_delta", "text": block["text"]}
                else:
                    start = dict(block, input={})
                    delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                events += [
                    ("content_block_start", {"type": "content_block_start", "index": 0,
                                             "content_block": start}),
                    ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                             "delta": delta}),
                    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    ("message_delta", {"type": "message_delta",
                                       "delta": {"stop_reason": stop, "stop_sequence": None},
                                       "usage": {"output_tokens": 20}}),
                    ("message_stop", {"type": "message_stop"}),
                ]
                data = b"".join(f"event: {name}\ndata: {json.dumps(obj)}\n\n".encode()
                                for name, obj in events)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


if __name__ == "__main__":
    import sys
    import time

    api = MockApi(lifetime=3600)
    if len(sys.argv) > 1:  # a fixed port for experiments
        api.server.server_close()
        api.server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), api._handler())
        api.url = f"http://127.0.0.1:{sys.argv[1]}"
        api._thread = threading.Thread(target=api.server.serve_forever, daemon=True)
    api.start()
    print(api.url, flush=True)
    seen = 0
    while True:
        time.sleep(0.5)
        for r in api.requests[seen:]:
            print(json.dumps(r.body)[:100000], flush=True)
        seen = len(api.requests)
