"""A history of commands that fail (issue #42's replay of "a problem met before"): Claude Code
sessions in which a Bash command fails with an error of one of the families below, as real tools
print them, each run with its own noise (the folders a traceback passes through, line and column
numbers, durations, addresses, test counts); then, in most sessions, a file is changed with
Claude's reason and the command runs again without the error (the fix), and in the rest the
session moves on with nothing changed. An error's "instance" (the module missing, the key, the
TypeScript code and file...) is what it is about: two failures are the same error when their
instances are equal, and a near miss (another module missing, another key) is another error.
Deterministic for a seed. Nothing here is copied from anywhere: the outputs are written from the
tools' documented formats.
"""
from __future__ import annotations

import json
import random
import time
import uuid
from pathlib import Path


def _tb(rng: random.Random, root: str, last: str) -> str:
    frames = "".join(f'  File "{root}/{rng.choice(["app", "lib", "svc"])}/{rng.choice(["main", "db", "api", "jobs"])}.py", '
                     f"line {rng.randint(3, 900)}, in {rng.choice(['run', 'main', 'load', 'handle'])}\n"
                     f"    {rng.choice(['return f(x)', 'import x', 'value = data[k]', 'obj.call()'])}\n"
                     for _ in range(rng.randint(1, 5)))
    return f"Traceback (most recent call last):\n{frames}{last}"


def _pytest(rng: random.Random, test: str, line: str) -> str:
    n = rng.randint(3, 400)
    return (f"============================= test session starts ==============================\n"
            f"platform linux -- Python 3.12.{rng.randint(0, 9)}, pytest-8.{rng.randint(0, 3)}.0\n"
            f"collected {n} items\n\ntests/{test.split('::')[0]} {'.' * rng.randint(0, 9)}F\n\n"
            f"E       {line}\n\nFAILED tests/{test} - {line}\n"
            f"========================= 1 failed, {n - 1} passed in {rng.random() * 9:.2f}s "
            f"=========================")


# family -> (command, instances, output(rng, instance, root), file fixed, reason)
FAMILIES = {
    "module": ("python -m app", ["requests", "yaml", "boto3", "redis", "dateutil", "jwt"],
               lambda r, i, root: _tb(r, root, f"ModuleNotFoundError: No module named '{i}'"),
               "requirements.txt", "Add {i} to requirements.txt: the app imports it."),
    "attr": ("python -m app.worker", ["user", "session", "config", "retry_policy"],
             lambda r, i, root: _tb(r, root, f"AttributeError: 'NoneType' object has no "
                                             f"attribute '{i}'"),
             "app/worker.py", "Guard the missing {i} before the worker uses it."),
    "key": ("python scripts/load.py", ["user_id", "created_at", "api_token", "tenant"],
            lambda r, i, root: _tb(r, root, f"KeyError: '{i}'"),
            "scripts/load.py", "Read {i} with .get(): old rows do not have it."),
    "pytest": ("pytest -q", ["test_auth.py::test_login_redirect", "test_orders.py::test_total",
                             "test_cache.py::test_expiry", "test_api.py::test_pagination"],
               lambda r, i, root: _pytest(r, i, f"AssertionError: assert {r.randint(100, 599)} == "
                                                f"{r.randint(100, 599)}"),
               "app/views.py", "Fix what {i} checks."),
    "tsc": ("npx tsc --noEmit", [("TS2322", "user.ts", "Type 'string' is not assignable to type "
                                  "'number'."),
                                 ("TS2339", "orders.ts", "Property 'total' does not exist on "
                                  "type 'Cart'."),
                                 ("TS2345", "api.ts", "Argument of type 'null' is not "
                                  "assignable to parameter of type 'string'.")],
            lambda r, i, root: f"src/{i[1]}({r.randint(1, 400)},{r.randint(1, 80)}): error "
                               f"{i[0]}: {i[2]}\n\nFound 1 error in src/{i[1]}:{r.randint(1, 400)}",
            "src/types.ts", "Make the type say what {i[1]} passes."),
    "npm": ("npm run {i}", ["build:prod", "lint:fix", "test:e2e"],
            lambda r, i, root: f"npm ERR! Missing script: \"{i}\"\nnpm ERR!\nnpm ERR! To see a "
                               f"list of scripts, run:\nnpm ERR!   npm run\n\nnpm ERR! A complete "
                               f"log of this run can be found in: /home/u/.npm/_logs/"
                               f"{r.randint(10**9, 10**10)}-debug-0.log",
            "package.json", "Add the {i} script to package.json."),
    "rust": ("cargo build", [("E0425", "total_price"), ("E0425", "retry_count"),
                             ("E0308", "mismatched types")],
             lambda r, i, root: (f"error[{i[0]}]: cannot find value `{i[1]}` in this scope"
                                 if i[0] == "E0425" else f"error[{i[0]}]: {i[1]}")
                                + f"\n --> src/{r.choice(['main', 'lib', 'cart'])}.rs:"
                                  f"{r.randint(1, 300)}:{r.randint(1, 60)}\n\nerror: could not "
                                  f"compile `shop` (bin \"shop\") due to 1 previous error",
             "src/cart.rs", "Declare what {i[0]} says is missing."),
    "go": ("go build ./...", [("main", "parseConfig"), ("server", "newRouter"),
                              ("server", "dbPool")],
           lambda r, i, root: f"# example.com/svc\n./{i[0]}.go:{r.randint(1, 300)}:"
                              f"{r.randint(1, 40)}: undefined: {i[1]}",
           "server.go", "Define {i[1]} where the server starts."),
    "perm": ("python -m app.agent", ["docker", "agent", "metrics"],
             lambda r, i, root: _tb(r, root, f"PermissionError: [Errno 13] Permission denied: "
                                             f"'/var/run/{i}.sock'"),
             "deploy/compose.yaml", "Mount {i}.sock with the group that may read it."),
    "push": ("git push", ["origin main"],  # never fixed by a change: no pointer expected
             lambda r, i, root: "To github.com:org/shop.git\n ! [rejected]        main -> main "
                                "(fetch first)\nerror: failed to push some refs to "
                                "'github.com:org/shop.git'",
             None, ""),
}


class _Session:
    """One transcript's lines, written as Claude Code writes them (compact JSON)."""

    def __init__(self, rng: random.Random, sid: str, ws: str, t: float):
        self.rng, self.sid, self.ws, self.clock = rng, sid, ws, t
        self.parent: str | None = None
        self.lines: list[dict] = []

    def add(self, kind: str, body: dict, step: float = 20.0) -> float:
        self.clock += self.rng.uniform(0.5, 1.5) * step
        u = str(uuid.UUID(int=self.rng.getrandbits(128)))
        self.lines.append({"parentUuid": self.parent, "isSidechain": False,
                           "userType": "external", "cwd": self.ws, "sessionId": self.sid,
                           "version": "2.1.197", "gitBranch": "main", "type": kind, "uuid": u,
                           "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S",
                                                      time.gmtime(self.clock))
                           + f".{int(self.clock * 1000) % 1000:03d}Z", **body})
        self.parent = u
        return self.clock

    def reply(self, content: list) -> float:
        return self.add("assistant", {"message": {
            "model": "claude-sonnet-4-5", "id": f"msg_{self.rng.getrandbits(80):020x}",
            "type": "message", "role": "assistant", "content": content, "stop_reason": None,
            "usage": {"input_tokens": 3, "output_tokens": 2}}})

    def result(self, call: str, text: str, error: bool = False) -> float:
        block = {"type": "tool_result", "content": text, "tool_use_id": call}
        extra = {"toolUseResult": f"Error: {text}"} if error else {}
        return self.add("user", {"message": {"role": "user", "content": [
            {**block, "is_error": True} if error else block]}, **extra}, step=2.0)

    def call(self, name: str, inp: dict, text: str | None = None) -> str:
        call = f"toolu_{self.rng.getrandbits(96):024x}"
        self.reply(([{"type": "text", "text": text}] if text else [])
                   + [{"type": "tool_use", "id": call, "name": name, "input": inp}])
        return call

    def save(self, folder: Path) -> None:
        (folder / f"{self.sid}.jsonl").write_text(
            "".join(json.dumps(d, separators=(",", ":")) + "\n" for d in self.lines),
            encoding="utf-8")


def write(projects: Path, ws: str, sessions: int = 400, seed: int = 11,
          now: float = 1_795_000_000) -> list[dict]:
    """The history's transcripts in `projects` (Claude Code's folder for `ws`), and what each
    session did: [{"session", "start", "failures": [(time, family, instance, output)], "fixed":
    bool}] in the order they ran."""
    rng = random.Random(seed)
    projects.mkdir(parents=True, exist_ok=True)
    keys = [(f, i) for f, spec in FAMILIES.items() for i in range(len(spec[1]))]
    weights = [1.0 / (1 + n) ** 0.8 for n in range(len(keys))]
    rng.shuffle(weights)
    out = []
    t = now - sessions * 6 * 3600
    for _n in range(sessions):
        t += rng.uniform(2, 10) * 3600
        family, k = rng.choices(keys, weights)[0]
        command, instances, output, fixed_file, why = FAMILIES[family]
        inst = instances[k]
        label = inst if isinstance(inst, str) else " ".join(map(str, inst))
        fixed = fixed_file is not None and rng.random() < 0.7
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        root = rng.choice(["/home/ann/shop", "/Users/bo/src/shop", "/srv/ci/build-"
                           + str(rng.randint(1, 9999))])
        cmd = command.format(i=inst)
        w = _Session(rng, sid, ws, t)
        w.add("user", {"message": {"role": "user",
                                   "content": f"Run {cmd} and see what breaks ({label})"}})
        w.reply([{"type": "text", "text": f"Running {cmd}."}])
        failures = []
        for _attempt in range(rng.choice([1, 1, 2])):
            call = w.call("Bash", {"command": cmd})
            text = f"Exit code {rng.choice([1, 1, 2])}\n" + output(rng, inst, root)
            failures.append((w.result(call, text, error=True), family, label, text))
        if fixed:
            call = w.call("Edit", {"file_path": f"{ws}/{fixed_file}", "old_string": "a",
                                   "new_string": "b"}, why.format(i=inst))
            w.result(call, "The file has been updated.")
            w.result(w.call("Bash", {"command": cmd}), "ok")
        else:
            w.reply([{"type": "text", "text": "Leaving that for now; moving on to the docs."}])
        w.save(projects)
        out.append({"session": sid, "start": t, "failures": failures, "fixed": fixed})
    return out
