"""The shared project log as records: `<workspace>/.claude/state/sessions/<PROJECT-ID>/*.md`, one
markdown entry per file (names starting with `_` skipped), colleagues' entries included in a
synced workspace. Each entry is one searchable item and one exchange, labelled with its author.

Headers (docs/design.md § Shared log): YAML front matter (`project:`, `author:`, `time:` or
`date:`) or `**Project:**` / `**Author:**` / `**Time:**` (`**Date:**`) lines near the top; else
the folder name, "unknown" and the file's modification time. Nothing outside the workspace is read.

Indexed through sources/registry.py (SharedLog: snapshot mode).
"""
from __future__ import annotations

import os
import re

from .. import titles
from ..records import Message, SessionDelta
from ..workspace import read_plain, stays_inside
from .listing import shared_log_folder, unlisted, utf8_name, watch
from .text import line_cut, parse_ts, scrubber, strip_private, valid_ts

SOURCE = "shared-log"
MAX_BYTES = 1 << 20  # an entry is short; a bigger file is read to here
HEAD_LINES = 15  # how far down bold header lines are looked for

_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_YAML = re.compile(r"^([A-Za-z]+)\s*:\s*(.*?)\s*$", re.M)
_BOLD = re.compile(r"^\s*[-*]?\s*\*\*([A-Za-z]+):?\*\*:?\s*(.*?)\s*$")


folder = shared_log_folder


def discover(ws: str, folders: list | None = None) -> list[tuple[str, str]]:
    """(project id, path) of every entry: regular files only (a link could point anywhere).
    `folders`: see registry.Source.discover."""
    root = folder(ws)
    watch(folders, root)
    if not stays_inside(root, ws):
        return []
    out = []
    try:
        projects = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as e:
        unlisted(folders, root, e)
        return []  # no log in this workspace: nothing is looked for elsewhere
    for p in projects:
        if not p.is_dir(follow_symlinks=False) or not utf8_name(p.name):
            continue
        watch(folders, p.path)
        try:
            entries = sorted(os.scandir(p.path), key=lambda e: e.name)
        except OSError as e:
            unlisted(folders, p.path, e)
            continue
        out += [(p.name, e.path) for e in entries
                if e.name.endswith(".md") and not e.name.startswith("_") and utf8_name(e.name)
                and e.is_file(follow_symlinks=False)]
    return out


def label(author: str) -> str:
    return f"[shared log · {author}]"


def read(path: str, project_id: str) -> tuple[SessionDelta | None, list[str]]:
    """The entry as a session of one exchange (its whole text, titled by its first heading)."""
    problems: list[str] = []
    got = read_plain(path, MAX_BYTES + 1)  # (an OSError is the indexer's: the entry it holds stays)
    if got is None:
        return None, ["not a regular file"]
    raw, st = got
    if len(raw) > MAX_BYTES:
        problems.append(f"longer than {MAX_BYTES >> 20} MB: its start read")
        raw = line_cut(raw, MAX_BYTES)  # at a line break: a secret cut in half escapes
    text = raw.decode("utf-8-sig", "replace")  # (a byte-order mark would hide the front matter)
    # A person wrote it: their <private> spans out of all of it (its header, title and body),
    # the entry being one message, before anything reads it. (After the cut: a span it ends is
    # unclosed, so hidden all the same.)
    text = strip_private(text)
    head = header(text)
    body = _FRONT.sub("", text, count=1).strip()
    if not body:
        return None, problems
    scrub = scrubber(problems)
    author = titles.normalize(scrub(head.get("author") or "")) or "unknown"
    ts = parse_ts(head.get("time")) or parse_ts(head.get("date")) or valid_ts(st.st_mtime)
    d = SessionDelta(f"{project_id}/{os.path.basename(path)}", SOURCE, label(author))
    d.author = author
    d.seen(ts)
    title = next((ln.lstrip("# ").strip() for ln in body.splitlines() if ln.startswith("#")),
                 None)
    if title:
        d.custom_title = titles.normalize(scrub(title))
    d.first_prompt = titles.clean_first_prompt(scrub(title or body.splitlines()[0]))
    # one exchange: the entry is the reply, so it is embedded and found as one
    d.messages.append(Message("entry", "assistant", scrub(body), ts))  # (decisions: tagging)
    return d, problems


def header(text: str) -> dict[str, str]:
    """project, author, time/date from front matter or bold lines near the top."""
    out: dict[str, str] = {}
    m = _FRONT.match(text)
    if m:
        for k, v in _YAML.findall(m.group(1)):
            out.setdefault(k.lower(), v.strip("\"'"))
    else:
        for line in text.splitlines()[:HEAD_LINES]:
            b = _BOLD.match(line)
            if b:
                out.setdefault(b.group(1).lower(), b.group(2))
    return {k: v for k, v in out.items() if k in ("project", "author", "time", "date") and v}
