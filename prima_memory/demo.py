"""`prima-memory quickstart`: index this folder, or a small packaged demo history, and show it."""
from __future__ import annotations

import calendar
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
import zipfile
from pathlib import Path

import orjson

from . import api
from .background import start_embedder
from .errors import Failure
from .hints import cli
from .memory import Memory
from .sources.claude_code import encode_project_dir, project_dirs

# 12 sessions made once by the benchmarks' generator (bench/demo_sample.py makes it again)
SAMPLE = Path(__file__).with_name("sample") / "demo-history.zip"
# a time the generator wrote as a JSON string of its own; not one quoted inside a text (\"...\"),
# as in a log line in a tool's output, which the generator takes from a fixed pool
_ISO = re.compile(rb'(?<!\\)"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{3})Z"')


def _demo_paths() -> tuple[str, str]:
    root = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
                        "prima-memory", "demo")
    try:
        os.makedirs(root, exist_ok=True)
    except OSError as e:
        try:
            root = _private_temp()
        except OSError as again:
            raise Failure(f"no folder for the demo history: {root}: {e.strerror or e}, and "
                          f"the temporary folder: {again.strerror or again}") from None
    return os.path.join(root, "claude"), os.path.join(root, "Demo Project")


def _private_temp() -> str:
    """The demo's folder in the temporary folder, where anyone can make a name first: this
    user's own, never a link, and nobody else's to write into (else a link or folder planted
    there would take the demo's files, or hand theirs to it); one made fresh when the usual
    name is taken by anything else."""
    path = os.path.join(tempfile.gettempdir(), f"prima-memory-demo-{os.getuid()}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022:
        return path
    return tempfile.mkdtemp(prefix="prima-memory-demo-")


def quickstart(mem, *, demo: bool = False) -> dict:
    """Index the workspace (or, where it has no Claude Code history, the packaged demo one), and
    return what a new user should see: the index report, the status and a sample search."""

    note = None
    if demo or not project_dirs(mem.ws):
        config, ws = _demo_paths()
        os.makedirs(ws, exist_ok=True)
        os.environ["CLAUDE_CONFIG_DIR"] = config  # this process only: the demo's own history
        os.environ.pop("PRIMA_EXPECTED_HOST", None)
        if not project_dirs(ws):
            copy_sample(config, ws)
        note = (f"No Claude Code history for {mem.ws}: showing a demo history in {ws}. (Run "
                f"`{cli()} --workspace <your project> quickstart`, or install.sh from inside "
                "a project, to index your own.)")
        mem = Memory(ws)
    try:
        index = api.index(mem)
        start_embedder(mem)  # so searches by meaning are ready soon, without waiting
        query = _sample_query(mem)
        return {"note": note, "index": index, "status": api.status(mem),
                "search": api.search(mem, query, limit=3)}
    finally:
        if note:
            mem.close()


def _sample_query(mem) -> str:
    """A question as a person types it, from the newest session's title's plain words (never a
    path or an identifier), so the sample search, in the default mode, finds something."""
    rows = mem.store().recent_sessions(1)
    words = [w.strip(".,:;!?()'\"").lower() for w in rows[0].title.split()] if rows else []
    words = [w for w in words if w.isalpha()][:6]
    return f"when did we {' '.join(words)}" if len(words) >= 2 else "what did we work on"


def copy_sample(config: str, ws: str, *, now: float | None = None) -> str:
    """Write the packaged sample history under `<config>/projects/` as the history of `ws`, as
    the generator would have made it at `now` (default: this moment): the placeholder workspace
    path becomes `ws` and every timestamp and file time moves by the same amount, so the newest
    sessions read as hours to days old. Whole or absent: written beside, then renamed into place.
    Returns the project folder."""
    now_ms = int(round((time.time() if now is None else float(now)) * 1000))
    with zipfile.ZipFile(SAMPLE) as z:
        manifest = json.loads(z.read("manifest.json"))
        shift = now_ms - int(manifest["now"]) * 1000
        old_ws, new_ws = manifest["workspace"].encode(), orjson.dumps(ws)[1:-1]  # as in JSON

        def moved(m: re.Match[bytes]) -> bytes:
            ms = calendar.timegm(time.strptime(m[1].decode(), "%Y-%m-%dT%H:%M:%S")) * 1000
            s, r = divmod(ms + int(m[2]) + shift, 1000)
            return b'"%s.%03dZ"' % (time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)).encode(), r)

        name = encode_project_dir(ws)
        if len(name) > 200:  # Claude Code's own hash is not reproducible; the reader matches the prefix
            name = name[:200] + "-" + hashlib.sha1(ws.encode("utf-8")).hexdigest()[:8]
        final = Path(config) / "projects" / name
        part = final.with_name(f"{name}.partial-{os.getpid()}")
        shutil.rmtree(part, ignore_errors=True)
        for rel, mtime_ms in manifest["mtime_ms"].items():
            path = part / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(_ISO.sub(moved, z.read(rel).replace(old_ws, new_ws)))
            t = (mtime_ms + shift) / 1000
            os.utime(path, (t, t))
    os.rename(part, final)
    return str(final)
