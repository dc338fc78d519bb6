"""Writes prima-memory's markdown: the extract of each substantial session, written once and
never updated (the seed's rules: docs/design.md § Extracts), and the file-writing rules
checkpoints share. (The files are read back for a deep search by sources/extract_reader.py.)"""
from __future__ import annotations

import os
import re
import time

from . import wording
from .paths import path_variants
from .session_view import Change, SessionView, build, stopped_line
from .sources.registry import other_agent, source_named
from .timeparse import local, span
from .workspace import create_whole, data_dir, is_real_dir

MIN_MESSAGES = 50
MIN_FILES = 10
MIN_SECONDS = 30 * 60
_PUNCT = re.compile(r"[^\w-]|_")


def project_id(cwd: str | None) -> str:
    """Last folder name of the working folder: lower case, spaces to hyphens, punctuation gone."""
    name = os.path.basename((cwd or "").rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1])
    name = _PUNCT.sub("", "-".join(name.lower().split()))
    return name or "unknown"


def extracts_dir(ws: str, cwd: str | None, base: str | None = None) -> str:
    """`base`: the memory's folder when not the workspace's .prima-memory (Memory.dir)."""
    return os.path.join(base or data_dir(ws), "extracts", project_id(cwd))


def is_substantial(row) -> bool:
    duration = (row.ended_at or 0) - (row.started_at or 0)
    return row.message_count >= MIN_MESSAGES or row.files_count >= MIN_FILES or duration >= MIN_SECONDS


def _day_taken(folder: str, day: str, session_id: str, listed: dict | None = None) -> bool:
    """Whether the folder holds an extract of that day, or any file naming the session.
    `listed`: folder -> its names, for a run that writes many (one listing per folder, not one
    per session: the folder grows by a file a day)."""
    names = listed.get(folder) if listed is not None else None
    if names is None:
        try:
            names = set(os.listdir(folder))
        except FileNotFoundError:
            names = set()
        if listed is not None:
            listed[folder] = names
    return any((n.startswith(day) and n.endswith((".md",))) or session_id in n for n in names)


def write_new(path: str, text: str) -> bool:
    """Create an extract or checkpoint, never overwritten; False if something is there already.
    Written whole, then linked to its name (workspace.create_whole): a run killed or stopped by
    its alarm halfway leaves no part under that name (a part would block the day's extract for
    ever). Never through a symbolic link: the folder must be a real one."""
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    if not (is_real_dir(folder) and is_real_dir(os.path.dirname(folder))):
        raise OSError(f"{folder} is not a folder of its own (a symbolic link?): not written")
    return create_whole(path, text)


def maybe_write(store, session: int, ws: str, listed: dict | None = None) -> str | None:
    """Write the session's extract if it is substantial and its folder has none for that day.
    `listed`: as _day_taken's."""
    row = store.session(session)
    if row is None or row.extract_path or row.started_at is None or not is_substantial(row):
        return None
    start = time.localtime(row.started_at)
    folder = extracts_dir(ws, row.cwd)
    day = time.strftime("%Y-%m-%d", start)
    if _day_taken(folder, day, row.session_id, listed):
        return None
    path = os.path.join(folder, time.strftime("%Y-%m-%d-%H%M", start) + "-session-extract.md")
    view = build(store, row, changes=True, excerpts=EXCERPTS, exchanges=EXCHANGES)
    written = write_new(path, render(view, ws))
    if listed is not None:
        listed.setdefault(folder, set()).add(os.path.basename(path))  # (or another's, there)
    if not written:
        return None
    store.set_extract(session, path)  # in the caller's transaction
    return path


def files_table(changes: list[Change], ws: str | None, cwd: str | None) -> list[str]:
    """The changes as a table, each file as the workspace sees it (wording.short_path)."""
    lines = ["| File | Tool | Explanation |", "|---|---|---|"]
    variants = path_variants(ws) if ws else []  # (once: each is a realpath)
    for c in changes:
        cell = wording.one_line(c.explanation, 300).replace("|", "\\|") or "—"
        lines.append(f"| `{wording.short_path(c.path, ws, cwd, variants)}` | {c.tool} | {cell} |")
    return lines


def session_header(row) -> list[str]:
    duration = (row.ended_at or 0) - (row.started_at or 0)
    return [
        f"- Session ID: `{row.session_id}`",
        f"- Date: {span(row.started_at, row.ended_at)}",
        f"- Duration: {wording.duration(duration)}",
        f"- Project folder: {row.cwd or 'unknown'}",
        f"- Branch: {row.branch or '—'}",
        f"- Messages: {row.message_count}",
        f"- Files changed: {row.files_count}",
        f"- Tags: {', '.join(row.tag_list) or '—'}",
    ]


EXCERPTS = 5  # the last substantial replies an extract quotes
EXCHANGES = 10  # and its last exchanges


def render(view: SessionView, ws: str | None = None) -> str:
    """The extract of a view built with its changes, EXCERPTS excerpts and EXCHANGES exchanges;
    its files relative to the workspace `ws`."""
    row = view.row
    src = source_named(row.source)
    agent = src.agent if src is not None else "Agent"
    title = f"{other_agent(row.source, row.label)}{row.title}"  # "[Codex] …" for another agent
    out = ["# Session extract", "", *session_header(row), "", f"## {title}", "",
           "## Files changed", ""]
    out += files_table(view.changes, ws, row.cwd) if view.changes else ["No files changed."]
    # (beyond the seed's parts: where the session stopped, as the briefing says it)
    out += ["", "## Where it stopped", "",
            stopped_line(view.stopped.text, 1200) if view.stopped else "No reply yet."]
    out += ["", f"## {agent}'s last substantial replies (most recent first)", ""]
    for said in view.excerpts[:EXCERPTS]:  # (newest first)
        out += [f"### {local(said.at)}", "", said.text.strip(), ""]
    if not view.excerpts:
        out += ["None.", ""]
    out += ["## Last ten exchanges", ""]
    for e in view.exchanges[-EXCHANGES:]:
        out += [f"### {local(e.at)}", ""]
        if e.prompt:
            out += ["**User:**", "", e.prompt.strip(), ""]
        out += [f"**{agent}:**", "", (e.reply or "").strip() or "(tool use only)", ""]
    return "\n".join(out).rstrip() + "\n"


def write_unfinished(store, ws: str, log) -> list[str]:
    """Extracts for the sessions changed since they were last considered (by this run, or by one
    killed before it), whatever source they came from; returns the paths written."""
    written: list[str] = []
    if not store.unfinished_sessions():
        return written  # no write transaction, which would wait for any other writer
    listed: dict = {}
    with store.write():  # one commit for a backfill's many extracts
        for sid in store.unfinished_sessions():
            try:
                path = maybe_write(store, sid, ws, listed)
            except OSError as e:
                log.warn(f"could not write an extract: {e}")
                continue
            store.mark_finished(sid)
            if path:
                written.append(path)
    return written
