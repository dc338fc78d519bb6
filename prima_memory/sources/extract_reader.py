"""prima-memory's own markdown: the extracts and checkpoints under .prima-memory/extracts, read
back as records so that a deep search finds them by words and by meaning like any session.

Each file is one session (source "extract", its id the file's path inside the extracts folder);
each `##`/`###` section is one message, so one exchange. A file is read whole and replaces what was
read of it before: extracts are written once, checkpoints are new files, and a file edited by
hand is simply read again. It is dated by the session it was made from, as its header gives it
(extract_writer.session_header), a section headed by a time by that time; by the file's time only
when its header names none (one written by hand).
"""
from __future__ import annotations

import os
import re
import time

from ..records import Message, SessionDelta
from ..workspace import data_dir, is_real_dir, read_plain
from .listing import unlisted, utf8_name, watch
from .text import head, scrubber, strip_private

SOURCE = "extract"
MAX_BYTES = 4 << 20  # an extract is a few kB: a larger file there is not one of ours
MAX_SECTIONS = 200  # nor is one of thousands of sections (each would be embedded)

_MINUTE = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}"
# "- Date: 2026-11-30 14:02 – 15:10" (or "– 2026-12-01 00:20"), or a start alone (an older
# version's, with "- Duration: 1h 08m" after it)
_DATE = re.compile(rf"^- Date: ({_MINUTE})(?: – (\d{{4}}-\d{{2}}-\d{{2}} )?(\d{{2}}:\d{{2}}))?\s*$",
                   re.M)
_DURATION = re.compile(r"^- Duration: (?:(\d{1,6})h )?(\d{1,6})m\s*$", re.M)
_HEADING = re.compile(rf"^###? ({_MINUTE})\s*$")


def root(ws: str) -> str:
    return os.path.join(data_dir(ws), "extracts")


def discover(ws: str, folders: list | None = None) -> list[str]:
    """The markdown files under the extracts folder, never through a linked folder.
    `folders`: see registry.Source.discover."""
    top = root(ws)
    watch(folders, top)
    if not is_real_dir(top):
        return []
    out = []
    for folder, dirs, names in os.walk(top, onerror=lambda e: unlisted(folders, e.filename, e)):
        dirs[:] = sorted(d for d in dirs if utf8_name(d) and is_real_dir(os.path.join(folder, d)))
        for d in dirs:  # noted before os.walk lists it
            watch(folders, os.path.join(folder, d))
        out += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".md") and utf8_name(n)]
    return out


def read(ws: str, path: str) -> SessionDelta | None:
    """The file as one session, or None when it cannot be read (a link, not a plain file, too
    big). Opened without following a link or waiting on a pipe, and checked to be a file."""
    try:
        got = read_plain(path, MAX_BYTES + 1)
    except OSError:
        return None
    if got is None or len(got[0]) > MAX_BYTES:
        return None
    data, mtime = got[0], got[1].st_mtime
    # One edited by hand may hold a person's <private> spans: out of the whole file (a span
    # may hold a heading), an unclosed one hiding the rest of it, before anything reads it. A
    # tag Claude quoted in a reply hides the same: more hidden, never less.
    text = strip_private(data.decode("utf-8", "replace"))
    name = os.path.relpath(path, root(ws))
    checkpoint = name.endswith("-checkpoint.md") or "-checkpoint-" in os.path.basename(name)
    d = SessionDelta(f"{SOURCE}:{name}", SOURCE, "[checkpoint]" if checkpoint else "[extract]")
    sections = [s.strip() for s in re.split(r"\n(?=###? )", "\n" + text)]
    first = text.split("\n", 1)[0]
    headings = [s.splitlines()[0].lstrip("#").strip() for s in sections if s.startswith("## ")]
    # a checkpoint names its session on its first line; an extract in its first section
    title = first[2:].strip() if first.startswith("# Checkpoint") else next(iter(headings), "")
    scrub = scrubber([])  # ours are redacted already; one edited by hand may not be
    d.custom_title = head(scrub(title or os.path.basename(name)[:-3]), 200)  # (cut once redacted)
    start, end = session_times(sections[0])
    for i, section in enumerate([s for s in sections if s][:MAX_SECTIONS]):
        at = _heading_time(section) or start or mtime
        d.messages.append(Message(f"s{i}", "assistant", scrub(section), at))
        d.seen(at)
    d.seen(start or mtime)
    d.seen(end)
    return d


def session_times(header: str) -> tuple[float | None, float | None]:
    """(start, end) of the session an extract's or checkpoint's header names, in local time as
    written; None for what it does not name (or names beyond a calendar)."""
    m = _DATE.search(header)
    if not m:
        return None, None
    start = _local(m.group(1))
    if m.group(3):
        end = _local(f"{(m.group(2) or m.group(1)[:11]).strip()} {m.group(3)}")
    else:
        took = _DURATION.search(header)
        end = None if start is None or not took else \
            start + 3600 * int(took.group(1) or 0) + 60 * int(took.group(2))
    return start, end if end is None or start is None or end >= start else None


def _heading_time(section: str) -> float | None:
    m = _HEADING.match(section.split("\n", 1)[0])
    return _local(m.group(1)) if m else None


def _local(text: str) -> float | None:
    try:
        return time.mktime(time.strptime(text, "%Y-%m-%d %H:%M"))
    except (ValueError, OverflowError):
        return None
