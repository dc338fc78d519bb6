"""Writers of the other agents' sessions for bench/agents.py: Gemini CLI, Cursor (the IDE's
state.vscdb and cursor-agent's transcripts), OpenCode (opencode.db, 1.2+), Aider, Cline / Roo
Code / Kilo Code, and the Copilot CLI, each in the shape its module in prima_memory/sources/ reads
(and its tests and the public files in ../shared/fixtures show), deterministic from a seed.

One session is first planned agent-neutrally (`talk`: turns of a prompt, the agent's steps, its
last words, from bench/synthetic.py's vocabulary and text pools), then written by the agent's
writer. A writer returns a `Made`: the sessions it wrote of the workspace (what `status` must
count), every file it wrote (what the bare read reads), and one session of the workspace to grow
(`grow`, for the incremental measure).
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
import time
import urllib.parse
import uuid
from pathlib import Path

import orjson

from bench.synthetic import (_B62, _BASH_COMMANDS, _CODE, _ELSEWHERE, _FINALS, _INTROS, _LANG_FENCE,
                             _OPENERS, _PROMPTS, _THINKING, _TITLES, _TRANSITIONS, _assign, _iso,
                             _size, _starts, _topic)

# -- a session, agent-neutral ---------------------------------------------------------------------


class Turn:
    """A prompt, the agent's steps (("say", text), ("read", rel, output), ("shell", command,
    output), ("edit", rel, old, new), ("write", rel, text)) and its last words; `ms`: when asked."""
    __slots__ = ("prompt", "steps", "final", "ms")

    def __init__(self, prompt, steps, final, ms):
        self.prompt, self.steps, self.final, self.ms = prompt, steps, final, ms


def talk(c, r: random.Random, ws: str, idx: int, tag: str, start: int, tiny: bool = False):
    """(title, turns) of one session: 10-40 exchanges of prose and code, edits with what was said
    before them, shell commands with their output; `tiny`: one short exchange. Turn `marker`
    carries the rare word zq<tag><idx>."""
    v = c.v
    _module, ff, over = _topic(r, c, ws)

    def fill(t):
        return v.fill(t, r, over)
    if tiny:
        return f"{tag} {idx}", [Turn(f"{fill(r.choice(_OPENERS))} (zq{tag}{idx})", [],
                                     fill(r.choice(_INTROS)), start)]
    n = 10 + int(30 * r.random() ** 1.6)
    marker = r.randrange(n)
    turns, ms = [], start
    for k in range(n):
        prompt = fill(r.choice(_PROMPTS if k else _OPENERS))
        if k == marker:
            prompt += f" (zq{tag}{idx})"
        steps = []
        for _ in range(r.choices((0, 1, 2, 3, 4, 6), (22, 25, 20, 15, 11, 7))[0]):
            if r.random() < 0.5:
                steps.append(("say", fill(r.choice(_INTROS + _TRANSITIONS))))
            f = r.choice(ff)
            kind = r.choices(("read", "shell", "edit", "write"), (35, 35, 24, 6))[0]
            if kind == "read":
                a = r.randrange(f.nlines)
                b = min(f.nlines, a + max(5, _size(r, 2500, 40_000) // 40))
                steps.append(("read", f.rel, f.raw[f.raw_off[a]:f.raw_off[b]]))
            elif kind == "shell":
                pool = r.choices(list(_BASH_COMMANDS), (22, 10, 6, 6, 12, 12, 14, 10, 8))[0]
                steps.append(("shell", fill(r.choice(_BASH_COMMANDS[pool])),
                              c.pools[pool].slice(r, _size(r, 1500, 60_000))))
            elif kind == "edit":
                a = r.randrange(f.nlines)
                old = f.raw[f.raw_off[a]:f.raw_off[min(f.nlines, a + r.randint(1, 6))]].rstrip("\n")
                new = "\n".join(v.fill(r.choice(_CODE[f.lang]), r) for _ in range(r.randint(1, 8)))
                steps.append(("edit", f.rel, old, new))
            else:
                rel = os.path.join(os.path.dirname(f.rel), f"{v.noun(r)}_{r.choice(('util', 'types', 'helpers'))}"
                                   + os.path.splitext(f.rel)[1])
                steps.append(("write", rel, c.code_text(r, f.lang, _size(r, 1200, 20_000))))
        final = fill(r.choice(_FINALS))
        if r.random() < 0.3:
            f = r.choice(ff)
            final += f"\n\n```{_LANG_FENCE.get(f.lang, '')}\n{c.code_text(r, f.lang, _size(r, 600, 6000))}```"
        turns.append(Turn(prompt, steps, final, ms))
        ms += int(r.uniform(30_000, 600_000))
    return fill(r.choice(_TITLES)), turns


class Made:
    """What a writer wrote: sessions of the workspace per source, files (source, kind, path),
    one session of the workspace per source to grow, sessions in all."""

    def __init__(self):
        self.expected: dict[str, int] = {}
        self.prompts: dict[str, int] = {}  # the person's messages in the workspace's sessions
        self.steps: dict[str, list[int]] = {}  # [edits, distinct (turn, file) edits, commands] there
        self.files: list[tuple[str, str, str]] = []
        self.grow: dict[str, dict] = {}
        self.written = 0

    def session(self, source: str, here: bool, grow: dict | None = None, prompts: int = 0,
                turns=()) -> None:
        self.written += 1
        if here and turns:
            got = self.steps.setdefault(source, [0, 0, 0])
            for t in turns:
                edits = [s[1] for s in t.steps if s[0] in ("edit", "write")]
                got[0] += len(edits)
                got[1] += len(set(edits))
                got[2] += sum(s[0] == "shell" for s in t.steps)
        if here:
            self.expected[source] = self.expected.get(source, 0) + 1
            if prompts:  # (known for this module's writers only)
                self.prompts[source] = self.prompts.get(source, 0) + prompts
            if grow is not None and source not in self.grow:
                self.grow[source] = grow

    def file(self, source: str, kind: str, path) -> None:
        self.files.append((source, kind, str(path)))

    def add(self, other: Made) -> Made:
        for k, n in other.expected.items():
            self.expected[k] = self.expected.get(k, 0) + n
        for k, n in other.prompts.items():
            self.prompts[k] = self.prompts.get(k, 0) + n
        for k, n in other.steps.items():
            self.steps[k] = [a + b for a, b in zip(self.steps.get(k, [0, 0, 0]), n)]
        self.files += other.files
        for k, g in other.grow.items():
            self.grow.setdefault(k, g)
        self.written += other.written
        return self


def places(r, ws: str, n: int):
    """Where each of n sessions ran: the workspace (most), a folder inside it, elsewhere."""
    return [(ws, True) if w == "ws" else (f"{ws}/web", True) if w == "sub" else
            (r.choice(_ELSEWHERE), False) for w in _assign(r, n, {"sub": 0.08, "elsewhere": 0.08}, "ws")]


def _hex(r, n):
    return "%0*x" % (n, r.getrandbits(4 * n))


def _uuid(r) -> str:
    return str(uuid.UUID(int=r.getrandbits(128), version=4))


def _at(path, ms) -> None:
    os.utime(path, (ms / 1000, ms / 1000))


def _jsonl(path: Path, lines, ms) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    _at(path, ms)


def _ab(cwd, rel):
    return f"{cwd}/{rel}"


def _steps_ms(turn: Turn, i: int) -> int:
    return turn.ms + 4000 + 9000 * i


# -- Gemini CLI -------------------------------------------------------------------------------------

_GEMINI_TOOLS = {"read": "read_file", "shell": "run_shell_command", "edit": "replace", "write": "write_file"}


def write_gemini(home: Path, c, ws, n, seed, now_ms, tiny=False) -> Made:
    """<GEMINI_CLI_HOME>/.gemini/tmp/<slug>/chats/session-*.jsonl (a header, messages upserted
    by id, `$set`s), each project folder's .project_root and ~/.gemini/projects.json."""
    made, r = Made(), random.Random(f"gemini-{seed}")
    gem = home / ".gemini"
    slugs: dict[str, str] = {}
    for i, (start, (cwd, here)) in enumerate(zip(_starts(r, n, now_ms), places(r, ws, n))):
        rs = random.Random(r.getrandbits(64))
        if cwd not in slugs:  # (Gemini CLI's slug of the folder's name, made unique)
            base = slug = _cursor_key(os.path.basename(cwd).lower())
            while slug in slugs.values():
                slug = f"{base}-{len(slugs)}"
            slugs[cwd] = slug
            (gem / "tmp" / slug / "chats").mkdir(parents=True, exist_ok=True)
            (gem / "tmp" / slug / ".project_root").write_text(cwd)
            made.file("gemini-cli", "raw", gem / "tmp" / slug / ".project_root")
        title, turns = talk(c, rs, ws, i, "gemini", start, tiny)
        sid = _uuid(rs)
        lines = [{"sessionId": sid, "projectHash": hashlib.sha256(cwd.encode()).hexdigest(),
                  "startTime": _iso(start), "lastUpdated": _iso(start), "kind": "main"}]
        ms = start
        for t in turns:
            lines.append({"id": _uuid(rs), "timestamp": _iso(t.ms), "type": "user", "content": [{"text": t.prompt}]})
            lines.append({"$set": {"lastUpdated": _iso(t.ms)}})
            said = ""
            for k, step in enumerate(t.steps):
                ms = _steps_ms(t, k)
                if step[0] == "say":
                    said = step[1]
                    continue
                mid = _uuid(rs)
                msg = {"id": mid, "timestamp": _iso(ms), "type": "gemini", "content": said,
                       "thoughts": [{"subject": "Planning", "description": c.v.fill(rs.choice(_THINKING), rs),
                                     "timestamp": _iso(ms - 900)}] if rs.random() < 0.4 else [],
                       "tokens": {"input": rs.randint(9000, 90_000), "output": rs.randint(20, 900), "cached": 0,
                                  "thoughts": 0, "tool": 0, "total": 0}, "model": "gemini-2.5-pro"}
                lines.append(msg)  # written as the model answers, then again with its call done
                lines.append(dict(msg, toolCalls=[_gemini_call(step, cwd, ms, rs)]))
                said = ""
            ms = _steps_ms(t, len(t.steps))
            lines.append({"id": _uuid(rs), "timestamp": _iso(ms), "type": "gemini", "content": t.final,
                          "thoughts": [], "tokens": {"input": 1, "output": 1, "cached": 0, "thoughts": 0,
                                                     "tool": 0, "total": 2}, "model": "gemini-2.5-pro"})
        lines.append({"$set": {"summary": title, "lastUpdated": _iso(ms)}} if rs.random() < 0.7
                     else {"$set": {"lastUpdated": _iso(ms)}})
        path = gem / "tmp" / slugs[cwd] / "chats" / \
            f"session-{time.strftime('%Y-%m-%dT%H-%M', time.gmtime(start / 1000))}-{sid[:8]}.jsonl"
        _jsonl(path, lines, ms)
        made.file("gemini-cli", "jsonl", path)
        made.session("gemini-cli", here, {"path": str(path)}, len(turns), turns)
    gem.joinpath("projects.json").write_text(json.dumps({"projects": {f: s for f, s in slugs.items()}}))
    made.file("gemini-cli", "json", gem / "projects.json")
    return made


def _gemini_call(step, cwd, ms, r) -> dict:
    name = _GEMINI_TOOLS[step[0]]
    if step[0] == "read":
        args, out = {"absolute_path": _ab(cwd, step[1])}, step[2]
    elif step[0] == "shell":
        args, out = {"command": step[1], "description": "Runs the command to check the result."}, step[2]
    elif step[0] == "edit":
        args, out = {"file_path": _ab(cwd, step[1]), "old_string": step[2], "new_string": step[3],
                     "instruction": "Apply the fix described above."}, f"Successfully modified file: {_ab(cwd, step[1])}"
    else:
        args, out = {"file_path": _ab(cwd, step[1]), "content": step[2]}, f"Successfully created {step[1]}"
    cid = f"{name}-{ms}-{_hex(r, 12)}"
    return {"id": cid, "name": name, "args": args, "status": "success", "timestamp": _iso(ms),
            "result": [{"functionResponse": {"id": cid, "name": name, "response": {"output": out}}}],
            "resultDisplay": out if step[0] == "shell" else "", "displayName": name.title().replace("_", ""),
            "description": "", "renderOutputAsMarkdown": step[0] != "shell"}


# -- Cursor: the IDE's state.vscdb, cursor-agent's transcripts ------------------------------------

# the fields a real bubble holds besides what it says (git-ai's cursor_test.vscdb), mostly empty
_BUBBLE = {k: [] for k in (
    "approximateLintErrors lints codebaseContextChunks commits pullRequests attachedCodeChunks "
    "assistantSuggestedDiffs gitDiffs interpreterResults images attachedFolders attachedFoldersNew "
    "userResponsesToSuggestedCodeBlocks suggestedCodeBlocks diffsForCompressingFiles relevantFiles "
    "toolResults notepads capabilities multiFileLinterErrors diffHistories recentLocationsHistory "
    "recentlyViewedFiles fileDiffTrajectories docsReferences webReferences aiWebSearchResults "
    "attachedFoldersListDirResults humanChanges summarizedComposers cursorRules contextPieces "
    "editTrailContexts allThinkingBlocks diffsSinceLastApply deletedFiles supportedTools "
    "attachedFileCodeChunksMetadataOnly consoleLogs uiElementPicked knowledgeItems "
    "documentationSelections externalLinks projectLayouts capabilityContexts todos codeBlocks").split()}
_BUBBLE.update(isAgentic=True, existedSubsequentTerminalCommand=False, existedPreviousTerminalCommand=False,
               attachedHumanChanges=False, isRefunded=False, useWeb=False, isQuickSearchQuery=False)
_CURSOR_TOOLS = {"read": (5, "read_file"), "shell": (15, "run_terminal_cmd"), "edit": (7, "edit_file"),
                 "write": (7, "edit_file")}


def _kv(db: Path) -> sqlite3.Connection:
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")  # (Cursor's, as VS Code's)
    for t in ("ItemTable", "cursorDiskKV"):
        con.execute(f"CREATE TABLE IF NOT EXISTS {t} (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    return con


def _where(folder: str) -> dict:
    return {"id": hashlib.md5(folder.encode()).hexdigest(),
            "uri": {"$mid": 1, "fsPath": folder, "external": "file://" + urllib.parse.quote(folder),
                    "path": folder, "scheme": "file"}}


def write_cursor(user: Path, agent_home: Path, c, ws, n, seed, now_ms, tiny=False) -> Made:
    """Half the chats the IDE's (the global database's rows, each chat's folder in Cursor 3's
    composer.composerHeaders or in its workspace's own database), half cursor-agent's transcripts."""
    made, r = Made(), random.Random(f"cursor-{seed}")
    db = user / "globalStorage" / "state.vscdb"
    con = _kv(db)
    heads, spaces = [], {}
    starts, where = _starts(r, n, now_ms), places(r, ws, n)
    for i in range(n):
        rs = random.Random(r.getrandbits(64))
        (cwd, here), start = where[i], starts[i]
        title, turns = talk(c, rs, ws, i, "cursor", start, tiny)
        if i % 2:  # cursor-agent's
            sid = _uuid(rs)
            path = agent_home / "projects" / _cursor_key(cwd) / "agent-transcripts" / sid / f"{sid}.jsonl"
            _jsonl(path, _cursor_transcript(turns, cwd, rs), _steps_ms(turns[-1], len(turns[-1].steps)))
            made.file("cursor-agent", "jsonl", path)
            made.session("cursor-agent", here, {"path": str(path)}, len(turns), turns)
            continue
        cid = _uuid(rs)
        rows, order, last = _cursor_chat(cid, turns, cwd, rs)
        rec = {"_v": 10, "composerId": cid, "name": title if rs.random() < 0.8 else "", "status": "completed",
               "createdAt": start, "lastUpdatedAt": last, "text": "", "richText": "", "hasLoaded": True,
               "conversationMap": {}, "fullConversationHeadersOnly": order, "codeBlockData": {},
               "originalFileStates": {}, "newlyCreatedFiles": [], "context": {"fileSelections": [], "folderSelections": []},
               "unifiedMode": "agent", "forceMode": "edit", "isAgentic": True,
               "modelConfig": {"modelName": "claude-4.5-sonnet", "maxMode": False}}
        rows[f"composerData:{cid}"] = rec
        con.executemany("INSERT INTO cursorDiskKV VALUES (?, ?)", [(k, orjson.dumps(v)) for k, v in rows.items()])
        head = {"type": "head", "composerId": cid, "name": rec["name"], "createdAt": start,
                "lastUpdatedAt": last, "unifiedMode": "agent"}
        if i % 4 == 0:  # Cursor 3: the global headers name the folder
            heads.append(dict(head, workspaceIdentifier=_where(cwd)))
        else:  # before: the workspace's own database lists its chats
            spaces.setdefault(cwd, []).append(head)
        made.session("cursor", here, {"db": str(db), "cid": cid, "cwd": cwd}, len(turns), turns)
    con.execute("INSERT INTO ItemTable VALUES ('composer.composerHeaders', ?)", (orjson.dumps({"allComposers": heads}),))
    con.commit()
    con.close()
    _at(db, now_ms)
    made.file("cursor", "sqlite:cursor", db)
    for folder, chats in sorted(spaces.items()):
        sd = user / "workspaceStorage" / hashlib.md5(folder.encode()).hexdigest()
        sd.mkdir(parents=True, exist_ok=True)
        (sd / "workspace.json").write_text(json.dumps({"folder": "file://" + urllib.parse.quote(folder)}))
        wcon = _kv(sd / "state.vscdb")
        wcon.execute("INSERT INTO ItemTable VALUES ('composer.composerData', ?)", (orjson.dumps(
            {"allComposers": chats, "selectedComposerIds": [chats[-1]["composerId"]]}),))
        wcon.commit()
        wcon.close()
        made.file("cursor", "raw", sd / "workspace.json")
        made.file("cursor", "sqlite:cursor", sd / "state.vscdb")
    return made


def _cursor_key(folder: str) -> str:
    return "-".join(filter(None, "".join(ch if ch.isalnum() else "-" for ch in folder).split("-")))


def _cursor_chat(cid, turns, cwd, r):
    """A chat's bubble rows and its headers: a person's bubble, then the agent's (its words, each
    tool call a bubble of its own with toolFormerData), as the real database holds them."""
    rows, order = {}, []

    def bubble(kind, ms, text="", **extra):
        bid = _uuid(r)
        rows[f"bubbleId:{cid}:{bid}"] = {"_v": 3, "type": kind, "bubbleId": bid, **_BUBBLE, "text": text,
                                         "createdAt": _iso(ms), "requestId": _uuid(r),
                                         "tokenCount": {"inputTokens": 0, "outputTokens": 0}, **extra}
        order.append({"bubbleId": bid, "type": kind})
    ms = turns[0].ms
    for t in turns:
        bubble(1, t.ms, t.prompt, richText=json.dumps({"root": {"children": [{"children": [
            {"text": t.prompt, "type": "text", "version": 1}], "type": "paragraph"}], "type": "root"}}))
        for k, step in enumerate(t.steps):
            ms = _steps_ms(t, k)
            if step[0] == "say":
                bubble(2, ms, step[1], modelInfo={"modelName": "claude-4.5-sonnet"})
                continue
            tool, name = _CURSOR_TOOLS[step[0]]
            if step[0] == "read":
                args, result = {"target_file": step[1], "should_read_entire_file": False}, {"contents": step[2]}
            elif step[0] == "shell":
                args, result = {"command": step[1], "is_background": False,
                                "explanation": "Run it to see the result"}, {"output": step[2], "exitCodeV2": 0}
            else:
                new = step[3] if step[0] == "edit" else step[2]
                args = {"target_file": step[1], "instructions": "Apply the change described above.",
                        "code_edit": new}
                result = {"diff": {"chunks": [{"diffString": new, "oldStart": 1, "newStart": 1}]}}
            bubble(2, ms, "", toolFormerData={
                "tool": tool, "toolIndex": k, "modelCallId": _uuid(r), "toolCallId": f"toolu_{_hex(r, 24)}",
                "status": "completed", "rawArgs": json.dumps(args), "name": name, "params": json.dumps(args),
                "result": json.dumps(result), "additionalData": {}})
        ms = _steps_ms(t, len(t.steps))
        bubble(2, ms, t.final, modelInfo={"modelName": "claude-4.5-sonnet"})
    return rows, order, ms


_AGENT_TOOLS = {"read": "Read", "shell": "Shell", "edit": "StrReplace", "write": "Write"}


def _cursor_transcript(turns, cwd, r) -> list:
    """cursor-agent's lines ({role, message: {content: [...]}}): no times, no tool results."""
    lines = []
    for t in turns:
        lines.append({"role": "user", "message": {"content": [{"type": "text", "text": f"<user_query>\n{t.prompt}\n</user_query>"}]}})
        said = None
        for step in t.steps:
            if step[0] == "say":
                said = step[1]
                continue
            if step[0] == "read":
                inp = {"path": _ab(cwd, step[1]), "limit": 200}
            elif step[0] == "shell":
                inp = {"command": step[1], "description": "Run the check"}
            elif step[0] == "edit":
                inp = {"path": _ab(cwd, step[1]), "old_string": step[2], "new_string": step[3]}
            else:
                inp = {"path": _ab(cwd, step[1]), "contents": step[2]}
            lines.append({"role": "assistant", "message": {"content": [
                {"type": "text", "text": said or "[REDACTED]"},
                {"type": "tool_use", "name": _AGENT_TOOLS[step[0]], "input": inp}]}})
            said = None
        lines.append({"role": "assistant", "message": {"content": [{"type": "text", "text": t.final}]}})
    return lines


# -- OpenCode (opencode.db, 1.2 and later) ------------------------------------------------------

def write_opencode(data_home: Path, c, ws, n, seed, now_ms, tiny=False) -> Made:
    """<XDG_DATA_HOME>/opencode/opencode.db: a session's row, its messages (one per step of the
    model) and their parts; a few sessions started a subagent (a child session, its parent_id)."""
    from prima_memory.sources.opencode import SCHEMA  # (opencode's tables as its migrations make them)
    made, r = Made(), random.Random(f"opencode-{seed}")
    db = data_home / "opencode" / "opencode.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode = WAL")
    con.executescript(SCHEMA)
    projects = {}
    w = _OpenCode(con, r)
    for i, (start, (cwd, here)) in enumerate(zip(_starts(r, n, now_ms), places(r, ws, n))):
        rs = random.Random(r.getrandbits(64))
        w.r = rs
        pid = projects.get(cwd)
        if pid is None:
            pid = projects[cwd] = hashlib.sha1(cwd.encode()).hexdigest()
            con.execute("INSERT INTO project VALUES (?, ?, 'git', NULL, ?, ?, '[]')", (pid, cwd, start, start))
        title, turns = talk(c, rs, ws, i, "opencode", start, tiny)
        sid = w.id("ses", start)
        end = w.session(sid, pid, None, cwd, title, turns)
        done = list(turns)
        if not tiny and rs.random() < 0.15:  # a subagent the task tool started: a child session
            t = turns[rs.randrange(len(turns))]
            child = w.id("ses", t.ms + 1)
            _title, sub = talk(c, rs, ws, i, "opencodesub", t.ms + 1000)
            w.session(child, pid, sid, cwd, "Explore the code (@general subagent)", sub[:3])
            done += sub[:3]  # (its steps are its parent's session's, as a side thread)
        con.execute("UPDATE session SET time_updated = ? WHERE id = ?", (end, sid))
        made.session("opencode", here, {"db": str(db), "sid": sid, "cwd": cwd}, len(turns), done)
    con.commit()
    con.close()
    made.file("opencode", "sqlite:opencode", db)
    return made


class _OpenCode:
    def __init__(self, con, r):
        self.con, self.r, self.n = con, r, 0

    def id(self, prefix, ms) -> str:  # (opencode's: time first, so they sort by it)
        self.n += 1
        return f"{prefix}_{ms:012x}{self.n:06d}" + "".join(self.r.choices(_B62, k=8))

    def session(self, sid, pid, parent, cwd, title, turns) -> int:
        con, r = self.con, self.r
        start = turns[0].ms
        con.execute("INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created,"
                    " time_updated) VALUES (?, ?, ?, ?, ?, ?, '1.2.10', ?, ?)",
                    (sid, pid, parent, "-".join(r.choice(("brave", "calm", "swift", "quiet", "bold")) for _ in range(2)),
                     cwd, title, start, start))
        ms = start
        for t in turns:
            user = self.message(sid, t.ms, {"role": "user", "time": {"created": t.ms}, "agent": "build",
                                            "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}},
                                [{"type": "text", "text": t.prompt}])
            said = None
            for k, step in enumerate(t.steps):
                ms = _steps_ms(t, k)
                if step[0] == "say":
                    said = step[1]
                    continue
                parts = [{"type": "text", "text": said}] if said else []
                self.message(sid, ms, self.info(user, ms, cwd, "tool-calls"), parts + [self.tool(step, ms, cwd)])
                said = None
            ms = _steps_ms(t, len(t.steps))
            self.message(sid, ms, self.info(user, ms, cwd, "stop"), [{"type": "text", "text": t.final}])
        return ms

    def info(self, parent, ms, cwd, finish) -> dict:
        r = self.r
        return {"role": "assistant", "time": {"created": ms, "completed": ms + 2500}, "parentID": parent,
                "modelID": "claude-sonnet-4-5", "providerID": "anthropic", "mode": "build", "agent": "build",
                "path": {"cwd": cwd, "root": cwd}, "cost": round(r.uniform(0, 0.05), 4), "finish": finish,
                "tokens": {"input": r.randint(10, 900), "output": r.randint(20, 900), "reasoning": 0,
                           "cache": {"read": r.randint(0, 90_000), "write": r.randint(0, 9000)}}}

    def message(self, sid, ms, info, parts) -> str:
        mid = self.id("msg", ms)
        self.con.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, sid, ms, ms, orjson.dumps(info).decode()))
        if info["role"] == "assistant":
            snap = _hex(self.r, 40)
            parts = [{"type": "step-start", "snapshot": snap}] + parts + [
                {"type": "step-finish", "reason": info["finish"], "snapshot": snap, "cost": info["cost"],
                 "tokens": info["tokens"]}]
        for k, p in enumerate(parts):
            if p["type"] == "text":
                p = dict(p, time={"start": ms + k, "end": ms + k + 900})
            self.con.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                             (self.id("prt", ms + k), mid, sid, ms + k, ms + k, orjson.dumps(p).decode()))
        return mid

    def tool(self, step, ms, cwd) -> dict:
        if step[0] == "read":
            name, inp, out, meta = "read", {"filePath": _ab(cwd, step[1])}, f"<file>\n{step[2]}</file>", {"preview": step[2][:400]}
        elif step[0] == "shell":
            name, inp, out = "bash", {"command": step[1], "description": "Runs the check"}, step[2]
            meta = {"output": step[2][:30_000], "exit": 0, "description": "Runs the check"}
        elif step[0] == "edit":
            name, inp, out = "edit", {"filePath": _ab(cwd, step[1]), "oldString": step[2], "newString": step[3]}, ""
            meta = {"diff": f"--- {step[1]}\n+++ {step[1]}\n" + "".join(f"-{x}\n" for x in step[2].split("\n"))
                    + "".join(f"+{x}\n" for x in step[3].split("\n")), "diagnostics": {}}
        else:
            name, inp, out, meta = "write", {"filePath": _ab(cwd, step[1]), "content": step[2]}, "", {"diagnostics": {}}
        return {"type": "tool", "callID": f"toolu_{_hex(self.r, 24)}", "tool": name,
                "state": {"status": "completed", "input": inp, "output": out, "title": step[1][:80],
                          "metadata": meta, "time": {"start": ms, "end": ms + 700}}}


# -- Aider (.aider.chat.history.md in the project) -------------------------------------------------

def _tool_out(text: str) -> str:
    """aider/io.py append_chat_history(text, linebreak=True, blockquote=True)."""
    return "> " + text.strip() + "  \n"


def aider_session(start_ms, cwd, git_root, turns) -> str:
    """One launch of aider as it appends it: the header, its own lines (`> `), each prompt
    (`#### `), the model's reply (its edits as SEARCH/REPLACE blocks), then `Applied edit`, the
    commit and the commands it ran."""
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start_ms / 1000))
    out = [f"\n# aider chat started at {when}\n\n", _tool_out("/home/dev/.local/bin/aider --model sonnet"),
           _tool_out("Aider v0.86.1"), _tool_out("Main model: anthropic/claude-sonnet-4 with diff edit format"),
           _tool_out("Git repo: .git with 214 files"), _tool_out("Repo-map: using 4096 tokens, auto refresh")]
    if cwd != git_root:
        out.append(_tool_out(f"Cur working dir: {cwd}"))
    for t in turns:
        reads = [s for s in t.steps if s[0] == "read"]
        if reads:
            out.append("\n#### /add " + " ".join(s[1] for s in reads) + "  \n")
            out += [_tool_out(f"Added {s[1]} to the chat") for s in reads]
        out.append("\n#### " + "  \n#### ".join(t.prompt.splitlines()) + "  \n")
        reply, edits, shells, said = [], [], [], ""
        for step in t.steps:
            if step[0] == "say":
                said = step[1]
            elif step[0] in ("edit", "write"):
                old, new = (step[2], step[3]) if step[0] == "edit" else ("", step[2])
                reply.append(f"{said}\n\n{step[1]}\n```\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n```\n")
                edits.append(step[1])
                said = ""
            elif step[0] == "shell":
                shells.append(step)
        reply.append(t.final)
        if shells:
            reply.append("```bash\n" + "\n".join(s[1] for s in shells) + "\n```")
        out.append("\n" + "\n\n".join(x.strip() for x in reply if x.strip()) + "\n\n")
        out.append(_tool_out("Tokens: 12k sent, 1.1k received. Cost: $0.05 message, $0.31 session."))
        out += [_tool_out(f"Applied edit to {e}") for e in edits]
        if edits:
            out.append(_tool_out(f"Commit {hashlib.sha1(t.prompt.encode()).hexdigest()[:7]} fix: "
                                f"{t.prompt[:50].strip()}"))
        for s in shells:  # (its output goes to the terminal, not the history: base_coder.py)
            out += [_tool_out(s[1]), _tool_out("Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: y"),
                    _tool_out(f"Running {s[1]}"),
                    _tool_out("Add command output to the chat? (Y)es/(N)o/(D)on't ask again [Yes]: n")]
    return "".join(out)


def write_aider(path: Path, elsewhere: Path, c, ws, n, seed, now_ms, tiny=False) -> Made:
    """The workspace's .aider.chat.history.md (every launch in the project, a few from a folder
    inside it); another project's own file for the sessions run elsewhere (never read here)."""
    made, r = Made(), random.Random(f"aider-{seed}")
    mine, theirs = [], []
    for i, (start, (cwd, here)) in enumerate(zip(_starts(r, n, now_ms), places(r, ws, n))):
        rs = random.Random(r.getrandbits(64))
        _title, turns = talk(c, rs, ws, i, "aider", start, tiny)
        (mine if here else theirs).append(aider_session(start, cwd, ws if here else cwd, turns))
        made.session("aider", here, {"path": str(path)}, len(turns), turns)
    for p, parts in ((path, mine), (elsewhere / ".aider.chat.history.md", theirs)):
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(parts), encoding="utf-8")
        _at(p, now_ms - 3_600_000)
    made.file("aider", "md", path)
    return made


# -- Cline, Roo Code, Kilo Code (task folders) ----------------------------------------------------

_CLINE = {"cline": "saoudrizwan.claude-dev", "roo-code": "rooveterinaryinc.roo-cline", "kilo-code": "kilocode.kilo-code"}
_CLINE_TOOLS = {"read": "readFile", "edit": "editedExistingFile", "write": "newFileCreated"}


def write_cline(user: Path, c, ws, n, seed, now_ms, tiny=False) -> Made:
    """<VS Code user>/globalStorage/<extension>/tasks/<id>/ui_messages.json, with each task's
    history item: Cline's state/taskHistory.json; Roo's and Kilo's tasks/<id>/history_item.json
    and tasks/_index.json."""
    made, r = Made(), random.Random(f"cline-{seed}")
    items: dict[str, list] = {k: [] for k in _CLINE}
    for i, (start, (cwd, here)) in enumerate(zip(_starts(r, n, now_ms), places(r, ws, n))):
        rs = random.Random(r.getrandbits(64))
        source = ("cline", "cline", "roo-code", "kilo-code")[i % 4] if n > 3 else "cline"
        storage = user / "globalStorage" / _CLINE[source]
        _title, turns = talk(c, rs, ws, i, source.replace("-", ""), start, tiny)
        tid = str(start) if source == "cline" else _uuid(rs)
        task = storage / "tasks" / tid
        task.mkdir(parents=True, exist_ok=True)
        msgs, end = _ui_messages(turns, cwd, source == "cline")
        (task / "ui_messages.json").write_bytes(orjson.dumps(msgs))
        _at(task / "ui_messages.json", end)
        item = {"id": tid, "ts": end, "task": turns[0].prompt, "tokensIn": rs.randint(100, 9000),
                "tokensOut": rs.randint(100, 9000), "totalCost": round(rs.uniform(0, 2), 3), "size": 0}
        if source == "cline":
            item.update(cwdOnTaskInitialization=cwd, isFavorited=False)
        else:
            item.update(number=i, workspace=cwd, mode="code", status="completed")
            (task / "history_item.json").write_bytes(orjson.dumps(item))
            made.file(source, "json", task / "history_item.json")
        items[source].append(item)
        made.file(source, "json", task / "ui_messages.json")
        made.session(source, here, {"path": str(task / "ui_messages.json")}, len(turns), turns)
    for source, got in items.items():
        storage = user / "globalStorage" / _CLINE[source]
        if source == "cline":
            index, doc = storage / "state" / "taskHistory.json", got
        else:
            index, doc = storage / "tasks" / "_index.json", {"version": 1, "updatedAt": now_ms, "entries": got}
        index.parent.mkdir(parents=True, exist_ok=True)
        index.write_bytes(orjson.dumps(doc))
        made.file(source, "json", index)
    return made


def _ui_messages(turns, cwd, cline: bool):
    """ClineMessage[]: the task, each request (api_req_started), what the agent said, its tools
    ("tool" with a ClineSayTool JSON text, "command" and its output), the result, the person's
    next message as feedback."""
    out = []

    def say(ms, kind, text=None, group="say", **kw):
        m = {"ts": ms, "type": group, group: kind, **kw}
        if text is not None:
            m["text"] = text
        out.append(m)

    def request(ms, body):
        if cline:  # (Roo 3.29+ and Kilo keep no request text)
            env = f"\n\n<environment_details>\n# Current Working Directory ({cwd}) Files\nsrc/\ntests/\n</environment_details>"
            say(ms, "api_req_started", json.dumps({"request": body + env, "tokensIn": 12, "tokensOut": 300, "cost": 0.01}))
        else:
            say(ms, "api_req_started", json.dumps({"apiProtocol": "anthropic", "tokensIn": 12, "tokensOut": 300}))
    ms = turns[0].ms
    for n, t in enumerate(turns):
        if n == 0:
            say(t.ms, "task" if cline else "text", t.prompt)
            request(t.ms + 10, f"<task>\n{t.prompt}\n</task>")
        else:
            say(t.ms, "user_feedback", t.prompt)
            request(t.ms + 10, f"<feedback>\n{t.prompt}\n</feedback>")
        for k, step in enumerate(t.steps):
            ms = _steps_ms(t, k)
            if step[0] == "say":
                say(ms, "text", step[1], partial=False)
            elif step[0] == "shell":
                say(ms, "command", step[1], group="ask")
                say(ms + 500, "command_output", step[2])
                request(ms + 900, f"[execute_command for '{step[1]}'] Result:\nCommand executed.\nOutput:\n{step[2][:2000]}")
            else:  # (a read's content is the file's path; its text goes to the model)
                info = {"tool": _CLINE_TOOLS[step[0]], "path": step[1], "content":
                        _ab(cwd, step[1]) if step[0] == "read" else step[2] if step[0] == "write"
                        else f"<<<<<<< SEARCH\n{step[2]}\n=======\n{step[3]}\n>>>>>>> REPLACE"}
                say(ms, "tool", json.dumps(info), partial=False)
                tool = {"read": "read_file", "edit": "replace_in_file", "write": "write_to_file"}[step[0]]
                request(ms + 900, f"[{tool} for '{step[1]}'] Result:\n" + (
                    step[2] if step[0] == "read" else "The content was successfully saved."))
        ms = _steps_ms(t, len(t.steps))
        say(ms, "completion_result", t.final)
        say(ms + 1, "completion_result", "", group="ask")
    return out, ms


# -- the Copilot CLI (session-state/<id>/events.jsonl) ----------------------------------------------

_COPILOT_TOOLS = {"read": "view", "shell": "bash", "edit": "edit", "write": "create"}


def write_copilot_cli(home: Path, c, ws, n, seed, now_ms, tiny=False, system: str = "") -> Made:
    """<COPILOT_HOME>/session-state/<id>/events.jsonl ({type, data, id, timestamp, parentId}
    events) beside its workspace.yaml."""
    made, r = Made(), random.Random(f"copilot-cli-{seed}")
    for i, (start, (cwd, here)) in enumerate(zip(_starts(r, n, now_ms), places(r, ws, n))):
        rs = random.Random(r.getrandbits(64))
        title, turns = talk(c, rs, ws, i, "copilotcli", start, tiny)
        sid = _uuid(rs)
        ev = _Events()
        ev.add("session.start", start, {"sessionId": sid, "version": 1, "producer": "copilot-agent",
                                        "copilotVersion": "1.0.63", "startTime": _iso(start), "selectedModel": "gpt-5",
                                        "context": {"cwd": cwd, "gitRoot": cwd, "branch": "main", "hostType": "cli"},
                                        "alreadyInUse": False, "remoteSteerable": False})
        ev.add("session.model_change", start + 5, {"newModel": "claude-sonnet-4.5", "reasoningEffort": None})
        if system:
            ev.add("system.message", start + 9, {"role": "system", "content": system.replace("{cwd}", cwd)})
        ms = start
        for k, t in enumerate(turns):
            inter = _hex(rs, 8)
            ev.add("user.message", t.ms, {"content": t.prompt, "transformedContent": f"<current_datetime>{_iso(t.ms)}"
                                          f"</current_datetime>\n\n{t.prompt}", "attachments": [], "interactionId": inter})
            ev.add("assistant.turn_start", t.ms + 1, {"turnId": str(k), "interactionId": inter})
            said = ""
            for j, step in enumerate(t.steps):
                ms = _steps_ms(t, j)
                if step[0] == "say":
                    said = step[1]
                    continue
                call = f"toolu_{_hex(rs, 24)}"
                name = _COPILOT_TOOLS[step[0]]
                args = {"path": _ab(cwd, step[1])} if step[0] == "read" else \
                    {"command": step[1], "description": "Run the check", "mode": "sync"} if step[0] == "shell" else \
                    {"path": _ab(cwd, step[1]), "old_str": step[2], "new_str": step[3]} if step[0] == "edit" else \
                    {"path": _ab(cwd, step[1]), "file_text": step[2]}
                ev.add("assistant.message", ms, {"messageId": _uuid(rs), "content": said, "toolRequests": [
                    {"toolCallId": call, "name": name, "type": "function", "arguments": args,
                     "intentionSummary": f"{name} {step[1][:60]}"}], "interactionId": inter, "turnId": str(k)})
                ev.add("tool.execution_start", ms + 10, {"toolCallId": call, "toolName": name, "arguments": args,
                                                         "turnId": str(k)})
                out = step[2] if step[0] in ("read", "shell") else "File updated."
                ev.add("tool.execution_complete", ms + 700, {"toolCallId": call, "success": True,
                                                             "result": {"content": out, "detailedContent": out}})
                said = ""
            ms = _steps_ms(t, len(t.steps))
            ev.add("assistant.message", ms, {"messageId": _uuid(rs), "content": t.final, "toolRequests": [],
                                             "interactionId": inter, "turnId": str(k)})
            ev.add("assistant.turn_end", ms + 1, {"turnId": str(k)})
        ev.add("session.shutdown", ms + 60_000, {"shutdownType": "routine", "totalPremiumRequests": len(turns)})
        folder = home / "session-state" / sid
        _jsonl(folder / "events.jsonl", ev.lines, ms + 60_000)
        (folder / "workspace.yaml").write_text(
            f"id: {sid}\ncwd: {cwd}\ngit_root: {cwd}\nbranch: main\nsummary: {title}\n"
            f"created_at: {_iso(start)}\nupdated_at: {_iso(ms)}\n")
        made.file("copilot-cli", "jsonl", folder / "events.jsonl")
        made.file("copilot-cli", "raw", folder / "workspace.yaml")
        made.session("copilot-cli", here, {"path": str(folder / "events.jsonl")}, len(turns), turns)
    return made


class _Events:
    def __init__(self):
        self.lines, self.last = [], None

    def add(self, kind, ms, data) -> None:
        eid = str(uuid.UUID(int=(ms << 64) | len(self.lines), version=4))
        self.lines.append({"type": kind, "data": data, "id": eid, "timestamp": _iso(ms), "parentId": self.last})
        self.last = eid
