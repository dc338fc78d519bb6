"""Runs each command of the command line: `cmd_<name>(mem, args)` asks the data API (api.py) and
renders its answer as human text, or prints it as the one JSON document `--json` asks for. Also
the text of /prima-memory:recall (`recall`), which the UserPromptSubmit hook prints for Claude.
Nothing here imports the store, the indexer or the search: it asks api. cli.py parses the
arguments and calls `run`."""
from __future__ import annotations

import os
import sys

from . import api, jsontext, terminal
from . import workspace as wsmod
from .errors import Failure, UsageError
from .hints import cli, quote
from .progress import Progress
from .recall_text import back, count, recall, score_text, session_line
from .sources.names import agents
from .sources.registry import other_agent, speaker
from .timeparse import iso_utc, local_iso, span
from .wording import one_line


def run(args) -> int:
    for k, v in vars(args).items():  # command-line bytes that are not UTF-8 arrive as surrogates
        if k in ("workspace", "output"):
            continue  # a file or folder name is whatever bytes it is
        if isinstance(v, str):
            setattr(args, k, api.clean_text(v))
        elif isinstance(v, list):
            setattr(args, k, [api.clean_text(x) if isinstance(x, str) else x for x in v])
    handler = HANDLERS[args.command]
    if getattr(args, "team", False):  # the team's server: read there, nothing written here
        if getattr(args, "all_projects", False):
            raise UsageError("--team and --all-projects are two scopes: give one")
        team = api.team(wsmod.locate(getattr(args, "workspace", None)).folder)
        try:
            return team.guarded(lambda: handler(team, args))
        finally:
            team.close()
    if args.command == "team" and args.what not in ("status", "publish"):
        return handler(None, args)  # the server and team.json alone: no memory opened or made
    if getattr(args, "all_projects", False):  # every project's memory: no workspace's own
        every = api.all_projects()
        try:
            return every.guarded(lambda: handler(every, args))
        finally:
            every.close()
    found = wsmod.locate(getattr(args, "workspace", None), empty=api.holds_nothing)
    ws = found.folder

    def before_start() -> None:
        # a command that only reads makes no memory where there is no history: it says so
        if args.command not in MAKES_MEMORY and not api.other_history(ws):
            raise Failure(found.nothing_here())
    return api.call(ws, lambda mem: handler(mem, args),
                    before_start=None if found.has_memory else before_start,
                    home=api.memory_home(ws) if args.command not in MAKES_MEMORY else None)


# The commands that may start a memory where there is none: the rest only read one.
MAKES_MEMORY = frozenset({"index", "quickstart"})


def emit(args, data: dict, text: str) -> None:
    """A command's answer on stdout: its text, or its data as one JSON document, through the one
    neutraliser (a transcript's escape sequences must not act on the terminal)."""
    if args.json:
        text = _json(data)
    terminal.write(text, end="" if text.endswith("\n") or not text else "\n")


def _json(data: dict) -> str:
    """--json's document: the strings exact, every control character in them escaped."""
    return terminal.neutral(jsontext.dumps(data, indent=2, ensure_ascii=False), json=True)


def _progress(args, **kw):
    """A progress bar on a terminal (not with --json), else one line on stderr when the wait
    passes a second (progress.py); never in a detached worker."""
    if getattr(args, "worker", False):
        return None
    bar = Progress.for_terminal(**kw)
    return Progress(bar.stream, bar=False, **kw) if args.json and bar and bar.bar else bar


def _one(text: str) -> str:
    """A field that must stay on its line (a query, a branch, a path): a line end in it shown
    as its escape, as terminal.neutral shows every control character."""
    return terminal.neutral(text, multiline=False)


# -- search and /recall ----------------------------------------------------------------------------

def cmd_search(mem, args) -> int:
    query = api.query_of(" ".join(args.query))  # (empty: said before anything is brought up)
    filters = api.filters(args.since, args.until, args.branch, args.tag, args.source)
    ready = api.bring_up(mem, mode=args.mode, deep=args.deep, progress=_progress(args))
    data = api.search(mem, query, mode=args.mode, limit=args.limit,
                      filters=filters, deep=args.deep, context=args.context, ready=ready)
    lines = [f"warning: {w}" for w in data["warnings"]]
    if data.get("history"):
        lines.append("Session History Summaries")
        lines += [f"- {e['date']}{' ' + e['time'] if e['time'] else ''}  {_one(e['summary'])}  "
                  f"({_one(e['file'])})" for e in data["history"]]
    elif not data["results"]:
        lines.append(f"No session matches \"{_one(data['query'])}\".")
        if data["mode"] == "keyword" and len(data["query"].split()) > 1:
            lines.append("(keyword mode wants every word as written: the default search, "
                         "without --mode, finds a sentence by its rarer words and its meaning)")
    if data.get("scope") == "team":
        lines.append(f"(searched the team's server {_one(data['server'])})")
    if data.get("scope") == "all" and data["results"]:
        gone = f", {data['gone']} of them in folders now gone" if data["gone"] else ""
        lines.append(f"(searched {count(data['projects'], 'project')}{gone})")
    elif data.get("scope") == "project" and (data["home"] or not data["results"]):
        where = "started in your home folder" if data["home"] else "of this project"
        lines.append(f"(searched the {count(data['sessions'], 'session')} {where}; --all-projects "
                     "searches every project)")
    for i, r in enumerate(data["results"], 1):
        branch = f"  ({_one(r['branch'])})" if r["branch"] else ""
        lines.append(f"{i}. {r['label']} {r['title']}  [{score_text(r)}]")
        lines.append(f"   {span(r['started_at'], r['ended_at'])}{branch}  session {r['session_id']}")
        if "workspace" in r:
            lines.append(f"   project {_one(r['workspace'])}")
        elif r.get("team"):
            lines.append(f"   {_one(r['member'] or '?')} · project {_one(r['project'] or '?')}")
        lines.append(f"   {back(r)}")
        for m in r["matches"] or ([r["snippet"]] if r["snippet"] else []):
            lines.append(f"   > {m}")
        for t in r.get("context", ()):
            mark = ">>" if t["matched"] else "  "
            lines.append(f"   {mark} [{t['role']}] {one_line(t['text'], 300)}")
    emit(args, data, "\n".join(lines))
    return 0


def cmd_similar(mem, args) -> int:
    query = api.query_of(" ".join(args.query))  # (empty: said before anything is brought up)
    data = api.similar(mem, query, limit=args.limit, ready=api.bring_up(mem, mode="similar"))
    lines = [f"warning: {w}" for w in data["warnings"]]
    if not data["results"]:
        lines.append(f"No past exchange is like \"{_one(data['query'])}\".")
    for i, r in enumerate(data["results"], 1):
        how = f"{score_text(r)}: similarity {r['similarity']:.2f}" + (
            f", recency {r['recency']:.2f}, {r['turns']} turns" if r["score_kind"] == "hybrid"
            else "")
        lines.append(f"{i}. {r['label']} {r['title']}  [{how}]")
        lines.append(f"   {span(r['started_at'], r['ended_at'])}  session {r['session_id']}"
                     + (f"  project {_one(r['workspace'])}" if "workspace" in r else ""))
        lines.append(f"   {back(r)}")
        if r["prompt"]:
            lines.append(f"   asked: {one_line(r['prompt'], 200)}")
        if r["reply"]:
            lines.append(f"   reply: {one_line(r['reply'], 200)}")
        for e in r["linked"]:
            lines.append(f"   ~ {e['cosine']:.2f} {one_line(e['title'], 80)} (session "
                         f"{e['session_id']}, {local_iso(e['at'])}): {one_line(e['text'] or '', 100)}")
    emit(args, data, "\n".join(lines))
    return 0


def cmd_recall(mem, args) -> int:
    query = " ".join(args.query) if args.query else sys.stdin.read()
    data, text = recall(mem, query, limit=args.limit)
    emit(args, data, text)
    return 0


# -- recent, show, files ----------------------------------------------------------------------------

def cmd_recent(mem, args) -> int:
    data = api.recent(mem, args.n, ready=api.bring_up(mem))
    lines = [f"warning: {w}" for w in data["warnings"]]
    for d in data["sessions"]:
        lines.append(f"{span(d['started_at'], d['ended_at'])}  {other_agent(d['source'], d['label'])}"
                     f"{d['title']}" + (f"  ({_one(d['branch'])})" if d["branch"] else "")
                     + f"\n   session {d['session_id']}, {count(d['message_count'], 'message')}, "
                       f"{count(len(d['files_changed']), 'file')} changed"
                     + (f"\n   project {_one(d['workspace'])}" if "workspace" in d else "")
                     + (f"\n   {_one(d['member'] or '?')} · project {_one(d['project'] or '?')}"
                        if d.get("team") else "")
                     + f"\n   {back(d)}")
        if d["last_user_message"]:
            lines.append(f"   last asked: {one_line(d['last_user_message'], 140)}")
    if not data["sessions"]:
        lines.append("No sessions indexed for this workspace yet." if data.get("scope") != "all"
                     else "No sessions indexed in any project yet.")
    emit(args, data, "\n".join(lines))
    return 0


def cmd_show(mem, args) -> int:
    api.parse_range(args.range)  # (a wrong range: said before anything is brought up)
    data = api.show(mem, args.session_id, args.range, args.detail, tools=not args.no_tools,
                    ready=api.bring_up(mem))
    d = data["session"]
    lines = [f"{d['title']}", f"session {d['session_id']}  {d['label']}  "
             f"{span(d['started_at'], d['ended_at'])}  branch {_one(d['branch'] or '—')}",
             f"project {_one(d['project'] or '—')}"
             + (f"  published by {_one(d['member'] or '?')}" if d.get("team") else "")]
    if d.get("resume"):
        lines.append(f"resume  {d['resume']}")
    if d["origin"]:
        lines.append(f"forked from {d['origin']['session_id']} ({one_line(d['origin']['title'], 80)}),"
                     " which holds the messages copied from it")
    lines.append("")
    if data["detail"] == "summary":
        for key, label in (("first_request", "first asked"), ("last_request", "last asked")):
            if d[key]:
                lines.append(f"{label}: {one_line(d[key], 300)}"
                             + (" (no reply after it)" if key == "last_request"
                                and d["unanswered"] else ""))
        if d["stopped_at"]:
            from .session_view import stopped_line  # (a session's view: not a search's)
            lines.append(f"stopped at: {stopped_line(d['stopped_at'], 300)}")
        for c in d["files_changed"]:
            lines.append(f"changed {_one(c['relative'])} ({c['tool']})"
                         + (f": {one_line(c['explanation'], 160)}" if c["explanation"] else ""))
        lines += [f"decision: {x}" for x in d["decisions"]]
        if d.get("tools_used"):
            lines.append("tools used: " + ", ".join(f"{t} {n}" for t, n in d["tools_used"].items()))
    agent = speaker(d["source"])
    for m in d.get("messages", []):
        who = "user" if m["role"] == "user" else agent
        lines.append(f"[{m['index']}] {who}{' (subagent)' if m['sidechain'] else ''} "
                     f"{local_iso(m['at'])}")
        if m["text"]:  # (none in a turn of tool calls alone)
            lines.append(m["text"])
        lines += [_call_line(c) for c in m.get("tool_calls", ())]
        lines.append("")
    emit(args, data, "\n".join(lines))
    return 0


def _call_line(c: dict) -> str:
    """A tool call in brief: `  · Edit src/auth.py`, `  · Bash: git status  (Show the tree)`."""
    target = one_line(c["target"], 160)
    text = c["tool"] + ((" " if c["kind"] == "path" else ": ") + target if target else "")
    return f"  · {text}" + (f"  ({one_line(c['line'], 100)})" if c["line"] else "")


def cmd_export(mem, args) -> int:
    # only export renders documents and writes files
    from . import export
    data = api.export(mem, args.session_id, tools=not args.no_tools,
                      outputs=not args.no_outputs, ready=api.bring_up(mem))
    for w in data["warnings"]:  # (not in the document)
        terminal.write(f"prima-memory: warning: {w}", sys.stderr, multiline=False)
    text = _json(data) + "\n" if args.json else export.render(data, args.format)
    if args.output in (None, "-"):
        terminal.write(text, end="")
        return 0
    n = export.write(args.output, text)
    terminal.write(f"wrote {args.output} ({'JSON' if args.json else args.format}, {n:,} bytes)",
                   multiline=False)
    return 0


def cmd_files(mem, args) -> int:
    data = api.files(mem, args.path, args.skip, args.limit, ready=api.bring_up(mem))
    lines = [f"warning: {w}" for w in data["warnings"]]
    for d in data["sessions"]:
        lines.append(f"{span(d['first_at'], d['last_at'])}  {d['title']}  (session "
                     f"{d['session_id']})"
                     + (f"  project {_one(d['workspace'])}" if "workspace" in d else ""))
        for f in d["files"]:
            lines.append(f"   {_one(f['relative'])}  {count(f['edits'], 'edit')}"
                         + (f" ({', '.join(map(_one, f['tools']))})" if f["tools"] else ""))
            if f["why"]:  # (the user's words said as theirs: Claude did not give them)
                lines.append(f"      {'asked' if f['why_from'] == 'user' else 'why'}: "
                             f"{one_line(f['why'], 160)}")
    if data["more"]:
        lines.append(f"… {count(data['more'], 'more session')} (use --limit or --skip)")
    if not data["sessions"]:
        lines.append("No file changes recorded" + (f" for {data['path']!r}." if data["path"]
                                                    else "."))
    emit(args, data, "\n".join(lines))
    return 0


MAX_ERROR = 16 << 20  # characters of an error `fixes -` reads (failures.signature reads its ends)


def cmd_fixes(mem, args) -> int:
    error = sys.stdin.read(MAX_ERROR) if args.error == ["-"] else " ".join(args.error)
    data = api.error_fixes(mem, error, limit=args.limit, ready=api.bring_up(mem))
    lines = [f"warning: {w}" for w in data["warnings"]]
    if data["error"] is None:
        lines.append("No line of it names an error plainly enough to look for (a line such as "
                     "\"ModuleNotFoundError: No module named 'x'\" does).")
    for d in data["sessions"]:
        lines += [f"{(d['at'] or '')[:16].replace('T', ' ')}  {d['title']}  (session "
                  f"{d['session_id']})", f"   failed: {_one(d['command'])}",
                  f"   error:  {one_line(d['error'], 160)}",
                  f"   fixed:  {_one(d['fix']['path'])}" + (f": {one_line(d['fix']['why'], 160)}"
                                                             if d["fix"]["why"] else "")]
    if data["error"] is not None and not data["sessions"]:
        lines.append(f"No earlier session fixed this error: {one_line(data['error'], 160)}")
    emit(args, data, "\n".join(lines))
    return 0


def cmd_digest(mem, args) -> int:
    from .session_view import stopped_line  # (a session's view: not a search's)
    api.filters(args.since, args.until)  # (a wrong date: said before anything is brought up)
    data = api.digest(mem, args.since, args.until, ready=api.bring_up(mem))
    lines = [f"warning: {w}" for w in data["warnings"]]
    lines.append(f"{data['sessions']} sessions from {local_iso(data['since'])} to "
                 f"{local_iso(data['until']) if data['until'] else 'now'}")
    for day in data["days"]:
        lines += ["", f"## {day['day']}"]
        for d in day["sessions"]:
            lines.append(f"- {span(d['started_at'], d['ended_at'], dated=False)}  "
                         f"{other_agent(d['source'], d['label'])}{d['title']}"
                         + (f"  ({_one(d['branch'])})" if d["branch"] else "")
                         + (f"  [{', '.join(d['tags'])}]" if d["tags"] else "")
                         + f"  session {d['session_id']}")
            if d["stopped_at"]:
                lines.append(f"    stopped at: {stopped_line(d['stopped_at'], 160)}")
            if d["unanswered"] and d["last_request"]:  # after the last reply: shown on its own
                lines.append(f"    last request, no reply after it: "
                             f"{one_line(d['last_request'], 160)}")
    if data["files_most_changed"]:
        lines += ["", "## Files changed most"]
        lines += [f"- {_one(f['relative'])} ({count(f['sessions'], 'session')})"
                  for f in data["files_most_changed"]]
    if data["decisions"]:
        lines += ["", "## Decisions"]
        lines += [f"- {one_line(x['line'], 200)}  ({x['title']})" for x in data["decisions"]]
    emit(args, data, "\n".join(lines))
    return 0


# -- index, embed, status ---------------------------------------------------------------------------

def cmd_index(mem, args) -> int:
    if args.all_projects:
        if args.rebuild or args.prune or args.background or args.recover_from:
            raise UsageError("index --all-projects brings every project up to date: --rebuild, "
                             "--prune, --background and --recover-from are one workspace's "
                             "(give it with --workspace)")
        data = api.index_all(mem, worker=args.worker, lock_fd=getattr(args, "lock_fd", None),
                             progress=_progress(args))
        text = (f"{count(data['projects'], 'project')} up to date (memories of the projects "
                f"without their own: {data['user_store']})")
        text += "".join(f"\nwarning: {w}" for w in data["warnings"])
        emit(args, data, text)
        return 0
    if args.recover_from:
        data = api.recover_from(mem, args.recover_from)
        emit(args, data, f"recovered {data['recovered']} sessions whose files are gone "
                         f"from {data['from']}")
        return 0
    embed_bar = _progress(args, label="embedding", unit="exchanges") if args.rebuild else None
    data = api.index(mem, rebuild=args.rebuild, background=args.background, prune=args.prune,
                     worker=args.worker, progress=_progress(args),
                     embed_progress=embed_bar.update if embed_bar else None)
    if embed_bar:
        embed_bar.finish()
    emit(args, data, render_index(data, rebuild=args.rebuild))
    return 0


def render_index(data: dict, *, rebuild: bool = False) -> str:
    if "rebuild" in data:
        return (f"rebuild started in the background (pid {data['rebuild']['pid']}); "
                f"`{cli()} status` shows its progress")
    seen, read = data["files_seen"], data["files_read"]
    if read:
        text = (f"read {read} of {count(seen, 'file')} ({data['bytes_read'] / 1e6:.1f} MB), "
                f"{count(data['sessions_updated'], 'session')} updated")
    else:
        text = f"{count(seen, 'file')}, none changed" if seen else "no session files found"
    if data["archived"]:
        text += f", {data['archived']} archived (files gone)"
    if data["pruned"]:
        text += f", {data['pruned']} pruned"
    if data["extracts_written"]:
        text += f", {len(data['extracts_written'])} extracts written"
    if rebuild:
        pending = data["embed_pending"]
        text += (f"\nsemantic index not rebuilt: the model could not load (see {data['log']})"
                 if pending is None else f"\nembedded {data['embedded']} exchanges"
                 + (f", {pending} left for later" if pending else ""))
    if data["warnings"]:
        text += f"\n{len(data['warnings'])} warnings (see {data['log']})"
    return text


def cmd_embed(mem, args) -> int:
    """Embed what is pending now: what the background embedder does, in the foreground."""
    bar = _progress(args, label="embedding", unit="exchanges")
    data = api.embed(mem, worker=args.worker, lock_fd=args.lock_fd,
                     progress=bar.update if bar else None)
    if bar:
        bar.finish()
    emit(args, data, f"embedded {data['embedded']} exchanges"
         + (f", {data['pending']} still pending" if data["pending"] else ""))
    if args.worker:
        # The background embedder holds its lock until it is gone: a Stop meanwhile starts no
        # other. So it ends now, not after the interpreter's teardown (60-80 ms with the model
        # loaded), in which that Stop's exchanges would wait for the next one.
        sys.stderr.flush()
        mem.close()
        os._exit(0)
    return 0


def cmd_status(mem, args) -> int:
    if args.all_projects:
        d = api.projects_json(mem)
        emit(args, d, render_projects(d))
        return 0
    d = api.status(mem)
    emit(args, d, render_status(d))
    return 0


def render_projects(d: dict) -> str:
    lines = [f"user-level store  {d['user_store']} (the memories of projects without their own)"]
    for p in d["projects"]:
        held = (f"{count(p['sessions'], 'session')} ({p['archived']} archived)"
                if p["sessions"] is not None else "not indexed yet")
        gone = "" if p["exists"] else " (folder gone)"
        where = "own" if p["own"] else "user-level"
        lines.append(f"{_one(p['folder'])}{gone}\n   {held}, {where} memory {p['memory']}"
                     + (f"\n   problem: {p['problem']}" if p.get("problem") else ""))
    if not d["projects"]:
        lines.append(f"no project found: no {agents('or')} history on this machine")
    lines += [f"warning    {w}" for w in d["warnings"]]
    return "\n".join(lines)


def render_status(d: dict) -> str:
    c = d["counts"]
    lines = [f"workspace  {d['workspace']}",
             f"index      {d['index']['path']} ({d['index']['bytes'] / 1e6:.1f} MB)"]
    gone = [s for s in d["sources"] if not s["found"] and not s.get("sessions")]
    for s in d["sources"]:
        if s in gone:
            continue  # (one line for them all, below: where each was looked for is in --json)
        absent = set(s.get("absent", ())) if s["found"] else set()  # all absent: said once
        where = ", ".join(w + (" (absent)" if w in absent else "") for w in s["locations"]) or "—"
        state = "found" if s["found"] else "absent"
        what = (f"{count(s['sessions'], 'session')} ({s['archived']} archived), "
                f"{count(s['files'], 'file')}" + (f", {s['skipped']} of other folders skipped"
                                             if s["skipped"] else "")
                if "sessions" in s else s.get("read", ""))
        lines.append(f"source     {s['label']} ({state}) {where}: {what}")
        lines += [f"             warning: {w}" for w in s.get("warnings", ())[:5]]
        if s.get("unknown_record_types"):  # counted, never a warning: nothing for the user to do
            lines.append("             skipped, unknown to this version: record types " + ", ".join(
                f"{u['type']} ({count(u['files'], 'file')})" for u in s["unknown_record_types"]))
    if gone:
        lines.append("absent     " + ", ".join(s["label"].strip("[]") for s in gone)
                     + " (not on this machine; status --json says where each was looked for)")
    if d.get("team"):
        t = d["team"]
        lines.append(f"team       {t['server']}: {count(t['published'], 'session')} published"
                     + (f"; last error: {one_line(t['last_error'], 200)} (tried again from "
                        f"{local_iso(iso_utc(t['retry_at']))})" if t["last_error"] else ""))
    lines.append(f"indexed    {c['messages']} messages, {c['exchanges']} exchanges, "
                 f"{c['file_changes']} file changes")
    lines.append(f"pending    {d['pending']['files']} files changed since the last index "
                 f"({d['pending']['bytes'] / 1e6:.1f} MB)")
    sem = d["semantic"]
    state = (f"model {sem['model']}, {sem['build']} ({sem['model_path']})" if sem["available"]
             else f"unavailable: {sem['problem']}")
    lines.append(f"semantic   {sem['embedded']} exchanges embedded, {sem['pending']} pending; "
                 f"{state}" + ("; the background embedder is running" if sem["embedder_running"]
                               else ""))
    lines.append(f"similar    {sem['similar_edges']} SIMILAR_TO edges"
                 + (f", {sem['edges_pending']} exchanges not linked yet" if sem["edges_pending"]
                    else ""))
    if d.get("forgotten"):
        f = d["forgotten"]
        lines.append(f"forgotten  {count(f, 'session')} (prima-memory forget --list)"
                     if isinstance(f, int) else f"forgotten  {f}")
    rb = d["rebuild"]
    if rb["running"]:
        lines.append(f"rebuild    running (pid {rb['pid']}, started {rb['started_at']}): "
                     f"{rb['phase']}, {rb['done']}/{rb['total']}")
    for w in d["warnings"]:
        lines.append(f"warning    {w}")
    return "\n".join(lines)


def cmd_forget(mem, args) -> int:
    if args.list:
        d = api.forgotten_list(mem)
        emit(args, d, "\n".join(f"{e['at'] or '?'}  {e['session_id']}  [{e['source']}]"
                                + ("  (kept out when it ran)" if e["why"] == "opt-out" else "")
                                for e in d["forgotten"]) or "no session is forgotten here")
        return 0
    if args.undo:
        d = api.undo_forget(mem, args.undo)
        gone = [s for s in d["remembered"] if s not in d["back"]]
        emit(args, d, "\n".join(
            [f"remembered again: {s}" for s in d["back"]]
            + ([f"no longer forgotten: {s}" for s in gone] + [f"note: {w}" for w in d["warnings"]]
               if d["pending"] else
               [f"no longer forgotten, but its transcript is gone: nothing came back for {s}"
                for s in gone])))
        return 0
    if not (args.session_ids or args.before or args.match):
        raise UsageError("name what to forget: session IDs, --before WHEN or --match WORDS "
                         "(or --list, --undo ID)")
    if args.all and not (args.before or args.match):  # (`forget --all --yes`: not everything)
        raise UsageError("--all goes with --before or --match: every session they choose")
    try:
        choice = api.forget_choice(mem, args.session_ids, before=args.before, match=args.match,
                                   capped=not args.all, ready=api.bring_up(mem))
    except api.TooMany:
        raise UsageError(f"that chooses over {api.FORGET_SHOWN} sessions: choose fewer at a "
                         "time, or add --all to forget every one of them") from None
    rows = choice["sessions"]
    if not rows:
        emit(args, {**choice, "forgotten": []}, "nothing to forget: no session matches")
        return 1
    listing = "\n".join(session_line(r) for r in rows)
    if not args.yes:
        if args.json or not (sys.stdin.isatty() and sys.stdout.isatty()):
            emit(args, {**choice, "would_forget": rows}, listing)
            raise UsageError(f"not on a terminal: add --yes to forget {count(len(rows), 'session')} "
                             "for good")
        terminal.write(listing)
        try:
            answer = input(f"Forget {'this session' if len(rows) == 1 else f'these {len(rows)} sessions'}"
                           " for good? Their transcripts will never be read again. [y/N] ")
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            terminal.write("nothing forgotten")
            return 1
    d = api.forget(mem, rows)
    lines = [f"forgotten: {r['session_id']}  {one_line(r['title'] or '', 70)}"
             for r in d["forgotten"]]
    lines += [f"removed {p}" for p in d["files_removed"]]
    if d["pending"]:
        lines.append("note: another process is updating the index; it removes their words "
                     "before it goes on (until then, nothing reads them)")
    elif not d["log_emptied"]:
        lines.append("note: another process was reading the index; its log is emptied by the "
                     "next index or forget")
    lines.append(f"Undo, while the transcripts exist: {cli()} forget --undo ID")
    emit(args, d, "\n".join(lines))
    return 0


def cmd_quickstart(mem, args) -> int:
    # quickstart only: its sample history
    from .demo import quickstart
    data = quickstart(mem, demo=args.demo)
    found = data["search"]
    lines = [data["note"] + "\n"] if data["note"] else []
    lines += ["== index ==", render_index(data["index"]), "", "== status ==",
              render_status(data["status"]), "", f"== search {found['query']!r} =="]
    lines += [f"{i}. {r['title']}  [{score_text(r)}]  session {r['session_id']}"
              for i, r in enumerate(found["results"], 1)]
    lines += ["", "Try:", f"  {cli()} recent", f"  {cli()} search {quote(found['query'])}"]
    if found["results"] and not data["note"]:  # (the demo's sessions are not in this folder)
        lines.append(f"  {found['results'][0]['show']}")
    emit(args, data, "\n".join(lines))
    return 0


# -- team -----------------------------------------------------------------------------------------

def cmd_team(mem, args) -> int:
    from . import team  # (a team's commands only)
    what = args.what
    if what in ("setup", "add", "share"):  # an admin's, on the server alone
        return _team_admin(team, args)
    ws = mem.ws if mem is not None else wsmod.locate(getattr(args, "workspace", None)).folder
    if what == "join":
        d = team.join(ws, args.dsn, member=args.member, project=args.project,
                      everywhere=args.all_projects)
        lines = [f"joined the team server {d['server']} as {d['member']} (role {d['role']}), "
                 + ("for every project" if d["everywhere"] else f"for {_one(d['project'])}")]
        if d.get("warning"):
            lines.append(f"warning: {d['warning']}")
        lines.append("Sessions are published in the background after each Stop; "
                     f"`{cli()} team publish` publishes now.")
    elif what == "leave":
        d = team.leave(ws, api.memory_home(ws) or wsmod.data_dir(ws), delete=args.delete)
        lines = [f"left the team server {d['server']} ({_one(d['left'])})"
                 + (f"; {count(d['sessions_deleted'], 'session')} of yours deleted there"
                    if d["sessions_deleted"] is not None else "; what you published stays "
                    "(--delete removes it)")]
    elif what == "publish":
        warnings = api.bring_up(mem).warnings  # (what changed, indexed first: it is what goes)
        for w in warnings:
            mem.log.warn(f"team publish: {w}", once=True)
        embedder = None
        try:
            embedder = mem.embedder()
        except Exception as e:  # noqa: BLE001 - published without vectors, said so
            mem.log.warn(f"team publish: no model, no vectors sent: {e}", once=True)
        d = team.publish(mem, embedder=embedder, seconds=args.seconds, force=True)
        if not d.get("joined"):
            raise Failure("this project is not in a team (prima-memory team join DSN)")
        if d.get("skipped"):
            lines = [f"nothing published: {d['skipped']}"]
        else:
            lines = [f"published {count(d.get('sessions', 0), 'session')} to {d.get('server')}"
                     + (f", forgot {d['forgotten']}" if d.get("forgotten") else "")
                     + (f", {d['left']} left for the next run" if d.get("left") else "")]
        if d.get("error"):
            emit(args, d, "\n".join(lines))
            raise Failure(d["error"])
    else:
        d = team.status(mem)
        if not d["joined"]:
            lines = ["not in a team (prima-memory team join DSN)"]
        else:
            on = d.get("on_server")
            lines = [f"server    {d['server']}" + (" (PRIMA_TEAM_DSN)" if d["via"] == "env" else ""),
                     f"member    {_one(d['member'])}",
                     f"project   {_one(d['project'] or '(no git remote: join with --project)')}"
                     + ("  (every project joined)" if d["everywhere"] else ""),
                     f"published {count(d['published'], 'session')} from here"
                     + (f", {count(on['sessions'], 'session')} of yours on the server" if on
                        else "")
                     + f"; {d['waiting']} waiting"]
            if d.get("server_error"):
                lines.append(f"server    unreachable now: {d['server_error']}")
            if d.get("last_error"):
                lines.append(f"last error {d['last_error']}")
    emit(args, d, "\n".join(lines))
    return 0


def _team_admin(team, args) -> int:
    store = team.connect(args.dsn)
    try:
        if args.what == "setup":
            done = store.migrate()
            d = {"server": store.path, "applied": done, "version": store.server_version()}
            text = (f"the team server {store.path} is at schema version {d['version']}"
                    + (f" (applied {', '.join(map(str, done))})" if done else " (nothing to do)"))
        elif args.what == "add":
            password = sys.stdin.readline().rstrip("\n") if args.password_stdin else None
            store.add_member(args.role, args.team, password)
            if args.admin:
                store.grant_admin(args.role)
            d = {"server": store.path, "role": args.role, "team": args.team}
            text = f"{args.role} is a member of {args.team} on {store.path}"
        else:
            store.share(args.project, args.team)
            d = {"server": store.path, "project": args.project, "team": args.team}
            text = f"{args.project} is shared with {args.team} on {store.path}"
    finally:
        store.close()
    emit(args, d, text)
    return 0


# Each command the CLI runs here (cli.py runs `hook` and `mcp` itself), named: a reader finds
# its handler, and a type checker its callers.
HANDLERS = {"search": cmd_search, "similar": cmd_similar, "recall": cmd_recall,
            "recent": cmd_recent, "show": cmd_show, "export": cmd_export, "files": cmd_files,
            "fixes": cmd_fixes, "digest": cmd_digest, "index": cmd_index, "embed": cmd_embed, "status": cmd_status,
            "forget": cmd_forget, "quickstart": cmd_quickstart, "team": cmd_team}
