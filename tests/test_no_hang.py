"""A first search never hangs (#36): the reader process is never a fork of a process whose
threads may hold a lock (an import's), and every wait on another thread ends by a deadline, after
which the command goes on without it and says so.

(The reader process's own faults, a reader that stops answering among them: test_parallel_reader.)
"""
from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from bench.synthetic import generate_history
from conftest import within

RUNS = 200

# A first search's process, as #36 met it: the model loads on another thread, importing module
# after module, while the index is brought up to date by a reader process that imports orjson,
# which imports dataclasses. Here the thread imports dataclasses again and again, slowly (as a
# model's libraries load), and a fresh throwaway module each time, so that dataclasses' import
# lock is held nearly all the time; the reader is started RUNS times meanwhile. A fork of this
# process copies that lock, held, into a child where no thread will ever release it: its import
# of orjson then waits for ever (the fork-based reader hung on the first run, every time).
_FORK_WHILE_IMPORTING = r"""
import hashlib, os, signal, sys, tempfile, threading, time
from prima_memory import indexer, records
from prima_memory.sources import claude_code, registry

ws, runs, deadline = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
assert "orjson" not in sys.modules and "dataclasses" not in sys.modules  # (as in a first search)
jobs = [indexer.Job(registry.CLAUDE_CODE, sf.path, sf, 0, None, os.stat(sf.path).st_mtime,
                    os.stat(sf.path).st_size) for sf in claude_code.discover(ws)]
assert len(jobs) >= 8


def flat(x):
    if isinstance(x, (list, tuple)):
        return [flat(v) for v in x]
    if isinstance(x, dict):
        return {k: flat(v) for k, v in x.items()}
    if isinstance(x, (set, frozenset)):
        return sorted(flat(v) for v in x)
    if isinstance(x, records.SessionDelta):
        return flat(vars(x))
    if isinstance(x, (records.Message, records.FileChange, records.ToolCall, records.CallError)):
        return [type(x).__name__] + flat(list(x.__reduce__()[1]))
    return x


def digest(per_file):
    return hashlib.sha256(repr(flat(per_file)).encode()).hexdigest()


stop, imported = threading.Event(), [0]
folder = tempfile.mkdtemp()
sys.path.append(folder)


class Slow:
    # an import that takes its time, as a model's does (its libraries load without the GIL):
    # the finder waits a moment, holding the module's import lock all the while
    def find_spec(self, name, path=None, target=None):
        if name == "dataclasses" and threading.current_thread() is thread:
            time.sleep(0.02)
        return None


def importer():
    n = 0
    while not stop.is_set():
        sys.modules.pop("dataclasses", None)
        import dataclasses  # noqa: F401
        n += 1
        with open(os.path.join(folder, f"throwaway_{n}.py"), "w") as f:
            f.write(f"VALUE = {n}\n")
        __import__(f"throwaway_{n}")
        imported[0] = n


class Hung(Exception):
    pass


def hung(_signum, _frame):
    raise Hung


signal.signal(signal.SIGALRM, hung)
thread = threading.Thread(target=importer, daemon=True)
sys.meta_path.insert(0, Slow())
thread.start()
seen = set()
for run in range(runs):
    signal.alarm(deadline)
    feed = None
    try:
        feed = indexer._ReaderProcess(jobs, True, None)
        per_file = []
        for i in range(len(jobs)):
            per_file.append(list(feed.chunks(i)))
            feed.skip(i)
        fell_back = feed.failed
        feed.stop()
        signal.alarm(0)
    except Hung:
        print(f"run {run}: no answer from the reader after {deadline}s", flush=True)
        if feed is not None:
            os.kill(feed.proc.pid, signal.SIGKILL)
        os._exit(1)
    if fell_back:
        print(f"run {run}: the reader failed and this process read the files", flush=True)
        os._exit(1)
    seen.add(digest(per_file))
stop.set()
thread.join(30)
expected = digest([list(indexer.read_chunks(job, True)) for job in jobs])
print(f"runs {runs}; imports meanwhile {imported[0]}; same records {seen == {expected}}",
      flush=True)
"""


def test_the_reader_starts_safely_while_a_thread_imports(env):
    generate_history(env.claude, str(env.ws), 8, seed=5, target_bytes=100_000, images=0)
    p = subprocess.run([sys.executable, "-c", _FORK_WHILE_IMPORTING, str(env.ws), str(RUNS),
                        "30"], env=env.env, capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stdout + p.stderr[-2000:]
    last = p.stdout.strip().splitlines()[-1]
    assert last.startswith(f"runs {RUNS};") and last.endswith("same records True"), last
    assert int(last.split("imports meanwhile ")[1].split(";")[0]) >= RUNS // 4  # (it imported)


# -- the model's load, beside a search -------------------------------------------------------------

@pytest.mark.parametrize("stuck_in", ["load", "files"])
def test_a_model_that_never_loads_leaves_a_keyword_search(env, monkeypatch, stuck_in):
    """The model's load stuck (`load`), or stuck before it even knows the model's files
    (`files`, what the search reads vectors ahead by): a combined search answers by keywords
    within the deadline, and its warnings say why."""
    from prima_memory import api, embed
    s = env.transcript("s1", start=time.time() - 3600)
    s.exchange("how do we rotate the signing keys for the webhook relay?",
               "Rotate them with the relay's keyring command, then restart the relay.")
    for k, v in env.env.items():
        monkeypatch.setenv(k, v)
    never = threading.Event()
    monkeypatch.setattr(embed, "load", lambda **_kw: never.wait() or None)
    if stuck_in == "files":
        monkeypatch.setattr(api, "_wants", lambda: never.wait() or None)
    monkeypatch.setattr(api, "MODEL_WAIT", 1.0)
    mem = api.open_memory(str(env.ws))
    try:
        out = within(60, lambda: mem.guarded(
            lambda: api.search(mem, "rotate the webhook signing keys",
                                              ready=api.bring_up(mem, mode="combined"))))
    finally:
        never.set()  # (the thread ends)
        mem.close()
    assert [r["session_id"] for r in out["results"]] == ["s1"]
    assert ("semantic search is unavailable (the model did not load within 1s): showing "
            "keyword results") in out["warnings"]


def _one_session_and_a_model(env, monkeypatch):
    """A session about the webhook relay's keys, the process in env's world, and the class of a
    model that loads (test_semantic.Fake)."""
    pytest.importorskip("numpy")
    from test_semantic import Fake
    s = env.transcript("s1", start=time.time() - 3600)
    s.exchange("how do we rotate the signing keys for the webhook relay?",
               "Rotate them with the relay's keyring command, then restart the relay.")
    for k, v in env.env.items():
        monkeypatch.setenv(k, v)

    class Loaded(Fake):
        note = None
    return Loaded


def test_a_model_late_once_is_tried_again_by_a_lasting_process(env, monkeypatch):
    """The MCP server's memory lasts: a load that missed one search's deadline is no reason to
    give up meaning for the server's life (a model that cannot load at all is)."""
    from prima_memory import api, embed
    Loaded = _one_session_and_a_model(env, monkeypatch)
    slow = threading.Event()
    monkeypatch.setattr(embed, "load", lambda **_kw: slow.wait() and Loaded())
    monkeypatch.setattr(api, "MODEL_WAIT", 0.5)
    mem = api.open_memory(str(env.ws), lasting=True)
    try:
        first = within(60, lambda: api.search(mem, "rotate the webhook signing keys",
                                              ready=api.bring_up(mem, mode="combined")))
        assert any("did not load within" in w for w in first["warnings"])
        slow.set()
        second = within(60, lambda: api.search(mem, "rotate the webhook signing keys",
                                              ready=api.bring_up(mem, mode="combined")))
    finally:
        slow.set()
        mem.close()
    assert not any("semantic search is unavailable" in w for w in second["warnings"]), second["warnings"]
    assert second["results"] and second["results"][0]["score_kind"] != "points"


@pytest.mark.parametrize("stuck", ["a load step", "numpy's import"])
def test_a_load_step_late_once_is_tried_again_by_a_lasting_process(env, monkeypatch, stuck):
    """embed's own waits (a step of the load on another thread, numpy's import by another
    thread) that end at their deadline are late, as Early's is: the MCP server's memory tries
    the model again at its next search."""
    from prima_memory import api, embed
    Loaded = _one_session_and_a_model(env, monkeypatch)
    embed.numpy()  # (imported before the lock is held: the search reads vectors with it)
    monkeypatch.setattr(embed, "THREAD_WAIT", 0.2)
    never, tries = threading.Event(), []

    def load(**_kw):
        tries.append(1)
        if len(tries) == 1:
            embed._Beside(never.wait).result() if stuck == "a load step" else embed.numpy()
        return Loaded()
    monkeypatch.setattr(embed, "load", load)
    mem = api.open_memory(str(env.ws), lasting=True)
    held = stuck == "numpy's import" and embed._IMPORTING.acquire(timeout=5)
    try:
        first = within(60, lambda: api.search(mem, "rotate the webhook signing keys",
                                              ready=api.bring_up(mem, mode="combined")))
        assert any("did not end within" in w for w in first["warnings"]), first["warnings"]
        if held:
            embed._IMPORTING.release()
            held = False
        second = within(60, lambda: api.search(mem, "rotate the webhook signing keys",
                                              ready=api.bring_up(mem, mode="combined")))
    finally:
        if held:
            embed._IMPORTING.release()
        never.set()
        mem.close()
    assert len(tries) == 2
    assert not any("semantic search is unavailable" in w for w in second["warnings"]), second["warnings"]
    assert second["results"] and second["results"][0]["score_kind"] != "points"


def test_the_mcp_servers_idle_work_tries_a_late_model_again(env, monkeypatch):
    """The idle work gives up the model for the server's life only when it cannot load, not
    when it was late once."""
    from prima_memory import embed, mcp_server
    from prima_memory.memory import Memory
    for k, v in env.env.items():
        monkeypatch.setenv(k, v)
    env.transcript("s1", start=time.time() - 3600).exchange("a question", "an answer")
    env.run("index")
    memory = mcp_server.ServedMemory(str(env.ws))
    monkeypatch.setattr(Memory, "semantic_work", lambda self: True)
    for error, gives_up in ((embed.ModelLate("a step of the model's load did not end"), False),
                            (embed.ModelUnavailable("no local copy of the model"), True)):
        def fail(self, *_a, error=error, **_kw):
            raise error
        monkeypatch.setattr(Memory, "embedder", fail)
        try:
            assert memory.idle_step() is False
        finally:
            memory.mem.close()
        assert memory.no_model is gives_up, error


def test_a_load_step_stuck_on_another_thread_fails_the_load(monkeypatch):
    """embed's own waits on its threads: the ONNX session made beside the tokenizer, numpy
    imported by one thread at a time."""
    from prima_memory import embed
    monkeypatch.setattr(embed, "THREAD_WAIT", 0.2)
    never = threading.Event()
    try:
        with pytest.raises(embed.ModelUnavailable, match="did not end within 0.2s"):
            within(30, embed._Beside(never.wait).result)
        assert embed._IMPORTING.acquire(timeout=5)  # another thread importing numpy, stuck
        try:
            with pytest.raises(embed.ModelUnavailable, match="did not end within 0.2s"):
                within(30, embed.numpy)
        finally:
            embed._IMPORTING.release()
    finally:
        never.set()


def test_an_mcp_request_waits_for_the_idle_work_until_a_deadline(env, monkeypatch):
    """A request waits for the idle work's step (it holds the memory) at most CALL_WAIT
    seconds, then says the server is busy: a step that never ends never takes the server's
    answers with it."""
    from prima_memory import mcp_protocol, mcp_server
    monkeypatch.setattr(mcp_server, "CALL_WAIT", 0.5)
    for k, v in env.env.items():
        monkeypatch.setenv(k, v)
    memory = mcp_server.ServedMemory(str(env.ws))
    assert memory.lock.acquire(timeout=5)  # the idle work, stuck in its step
    try:
        with pytest.raises(mcp_protocol.ToolError, match="held the index for over 0.5s"):
            within(30, lambda: mcp_server.guarded_tool(memory, lambda mem: {}))
        assert memory.waiting == 0  # (the idle work is not kept waiting for it either)
    finally:
        memory.lock.release()
    assert mcp_server.guarded_tool(memory, lambda mem: {"ok": 1}) is not None
