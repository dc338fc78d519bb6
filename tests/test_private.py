"""`<private>…</private>` in what a person writes is never stored: the span goes before anything
reads the text, a `[private]` marker in its place. In-process: strip_private itself (nesting,
several spans, an unclosed one, the tag's spellings, linear time), then every source's user text
at the records seam (Claude Code, Codex in its eras, Copilot, the shared log, the session-history
summaries, extracts edited by hand), then the embedder's texts. Through the CLI: index, search,
show, export, the PreCompact checkpoint, the SessionStart briefing, the MCP server, and the raw
bytes of every file under .prima-memory/."""
from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

import pytest
from test_hooks import payload, run_hook
from test_semantic import Fake

from prima_memory import semantic
from prima_memory.memory import Memory
from prima_memory.records import FileChange, Message, ToolCall
from prima_memory.sources import claude_code, codex, copilot, extract_reader, history, shared_log
from prima_memory.sources.text import MAX_TEXT, PRIVATE_MARK, strip_private

SECRET = "zqxprivatehost"
MARK = "[private]"
DAY = 86400
OLD = time.time() - 10 * DAY


# -- strip_private ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text, want", [
    ("ssh to <private>zqx.internal</private> now", "ssh to [private] now"),
    ("<private>a <private>b</private> c</private> d", "[private] d"),  # nested: the outer one
    ("a <private>b <private>c</private> d", "a [private]"),  # nested, the outer unclosed
    ("one\n<private>two\nthree\n</private>\nfour", "one\n[private]\nfour"),  # multi-line
    ("x <private>1</private> y <private>2</private> z", "x [private] y [private] z"),
    ("<private>1</private><private>2</private>", "[private][private]"),  # adjacent: one each
    ("a<private></private>b", "a[private]b"),  # empty
    ("keep this <private>and hide\nthe rest", "keep this [private]"),  # unclosed
    ("<private>", "[private]"),
    ("<PRIVATE>s</Private> <PrIvAtE>t</pRiVaTe>", "[private] [private]"),
    ("< private >s</ private > <\tprivate\n>t< /private>", "[private] [private]"),
    ("a </private> b <private>c</private> d", "a </private> b [private] d"),  # stray close kept
    ("a <private>b</private> c</private> d", "a [private] c</private> d"),  # one close too many
    ("<privately> <private-notes> <private/> <private x> <priv ate> private>",
     "<privately> <private-notes> <private/> <private x> <priv ate> private>"),  # no tags
    ("<<private>x</private>>", "<[private]>"),
    ("<prıvate>dotless i</prıvate>", "<prıvate>dotless i</prıvate>"),  # ASCII letters only
    ("no tag at all", "no tag at all"),
    ("", ""),
])
def test_strip_private(text, want):
    assert strip_private(text) == want
    assert strip_private(want) == want, "idempotent: what it leaves holds no span"


def test_a_text_without_a_tag_comes_back_as_it_is():
    text = "a < b and c > d, <div>html</div> " * 100
    assert strip_private(text) is text
    assert PRIVATE_MARK == MARK


def test_lone_surrogates_and_our_own_frame_in_the_text():
    text = "bad \ud800 <private>\udc80 zqx</private> </prima-memory> <prima-memory>\udfff"
    assert strip_private(text) == "bad \ud800 [private] </prima-memory> <prima-memory>\udfff"
    assert strip_private("</prima-memory><private></prima-memory>") == "</prima-memory>[private]"


def _pieces(rng: random.Random, depth: int = 0) -> list[tuple[str, str, list[str]]]:
    """(text, what strip_private makes of it, the words it must hide) of each piece of a text:
    public words and private spans, nested, in the tag's spellings, made together so that the
    answer is known."""
    tags_open = ["<private>", "<PRIVATE>", "< private >", "<Private\n>"]
    tags_close = ["</private>", "</PRIVATE >", "< / private>", "</ Private>"]
    out = []
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.5 or depth > 3:
            w = rng.choice(["pub", "a < b", "x>y", "</b>", "\n", " ", "<", "private", "/"])
            out.append((w, w, []))
        else:
            inner = _pieces(rng, depth + 1)
            secret = f"sec{rng.randrange(10**6)}"
            text = "".join(t for t, _w, _h in inner)
            out.append((rng.choice(tags_open) + secret + text + rng.choice(tags_close), MARK,
                        [secret, *(h for _t, _w, hs in inner for h in hs)]))
    return out


def test_random_nestings_against_a_known_answer():
    rng = random.Random(7)
    for _ in range(3000):
        pieces = _pieces(rng)
        if rng.random() < 0.3:  # unclosed, between two pieces: the rest of the text goes
            i = rng.randrange(len(pieces) + 1)
            pieces[i:] = [("<private>zzsecret" + "".join(t for t, _w, _h in pieces[i:]), MARK,
                           ["zzsecret", *(h for _t, _w, hs in pieces[i:] for h in hs)])]
        text = "".join(t for t, _w, _h in pieces)
        got = strip_private(text)
        assert got == "".join(w for _t, w, _h in pieces), text
        assert not any(h in got for _t, _w, hs in pieces for h in hs)


def test_twenty_megabytes_of_tags_in_one_pass():
    # correctness only: a quadratic pass would not end in the test's time
    unit = "pub <private>zqx\n</private> < / PRIVATE > <private><private>y</private></private>"
    n = (20 << 20) // len(unit)
    assert strip_private(unit * n) == "pub [private] < / PRIVATE > [private]" * n
    assert strip_private(unit * n + "<private>end") == "pub [private] < / PRIVATE > [private]" \
        * n + MARK
    for hostile in ("<" + " " * (20 << 20), "< " * (10 << 20), "</ " * (7 << 20),
                    "<" + " /" * (10 << 20) + "private", "<private " * (2 << 20)):
        assert strip_private(hostile) == hostile
    assert strip_private("<private>" * (2 << 20) + "x") == MARK


# -- every source, at the records seam -------------------------------------------------------------

def _fields(obj):
    if isinstance(obj, (Message, FileChange, ToolCall)):
        return obj.__reduce__()[1]
    if isinstance(obj, set):
        return sorted(obj)
    raise TypeError(type(obj))


def _all_text(d) -> str:
    """Every field of a delta, as one text."""
    return json.dumps(vars(d), default=_fields, ensure_ascii=False)


def _user_texts(d) -> list[str]:
    return [m.text for m in d.messages if m.role == "user"]


def test_claude_code_prompts(env):
    t = env.transcript("c1c1c1c1-0000-4000-8000-000000000001", start=OLD)
    t.user(f"deploy to <private>{SECRET}</private> please", step=0)
    t.reply("Deploying to the host you gave.")
    t.user([{"type": "text", "text": f"blocks: <PRIVATE>\n{SECRET}-a\n</PRIVATE>"},
            {"type": "text", "text": f"second block <private>{SECRET}-b"}])  # unclosed
    t.reply("Done.")
    # a slash command's arguments and a ! command are the user's words too
    t.user(f"<command-message>review</command-message>\n<command-name>/review</command-name>\n"
           f"<command-args>the <private>{SECRET}-c</private> branch</command-args>")
    t.user(f"<bash-input>ssh <private>{SECRET}-d</private></bash-input>")
    t.raw({"type": "custom-title", "customTitle": f"Deploy <private>{SECRET}-e</private>",
           "sessionId": t.session_id})
    sf = claude_code.SourceFile(str(t.path), t.session_id, False)
    d, _end, _state, problems = claude_code.read(sf, 0, None, mtime=0)
    assert problems == []
    assert SECRET not in _all_text(d)
    assert _user_texts(d) == ["deploy to [private] please", "blocks: [private]\nsecond block "
                              "[private]", "/review the [private] branch", "! ssh [private]"]
    assert d.first_prompt == "Deploy to [private] please" and d.custom_title == "Deploy [private]"
    assert [m.text for m in d.messages if m.role == "assistant"] == [
        "Deploying to the host you gave.", "Done."]


def test_claude_code_strips_what_the_user_wrote_not_claude_codes_blocks(env):
    """A reminder or an IDE selection quoting a file that holds "<private>" is Claude Code's,
    dropped before: it hides nothing of the prompt after it. Claude's replies are its own."""
    t = env.transcript("c1c1c1c1-0000-4000-8000-000000000002", start=OLD)
    t.user("<system-reminder>file notes.md: wrap it in <private> and</system-reminder>"
           "<ide_selection>x = '<private>'</ide_selection>"
           f"Keep the prompt words <private>{SECRET}</private> and these", step=0)
    t.reply("Quoting the tag: <private>kept as Claude wrote it</private>.")
    sf = claude_code.SourceFile(str(t.path), t.session_id, False)
    d, *_ = claude_code.read(sf, 0, None, mtime=0)
    assert _user_texts(d) == ["Keep the prompt words [private] and these"]
    assert d.messages[1].text == "Quoting the tag: <private>kept as Claude wrote it</private>."


def test_claude_code_a_huge_prompt_is_stripped_before_it_is_cut(env):
    t = env.transcript("c1c1c1c1-0000-4000-8000-000000000003", start=OLD)
    # the span opens before the size limit and closes past it: cut first, the cut would leave
    # an unclosed span (hidden all the same); a span past the limit is gone with the cut
    t.user("z " * (MAX_TEXT // 2 - 10) + f"<private>{SECRET}" + " pad" * 10 + "</private> end",
           step=0)
    t.user(f"<private>{SECRET}</private> " + "y" * (MAX_TEXT + 10))
    sf = claude_code.SourceFile(str(t.path), t.session_id, False)
    d, _end, _state, problems = claude_code.read(sf, 0, None, mtime=0)
    assert SECRET not in _all_text(d)
    assert d.messages[0].text.endswith("z [private] end")
    assert d.messages[1].text.startswith("[private] yyy") and problems


def _w(ts: str, kind: str, payload: dict) -> dict:
    return {"timestamp": f"2026-03-01T10:00:{ts}Z", "type": kind, "payload": payload}


def _msg(role: str, text: str) -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def test_codex_wrapped_lines_and_events(tmp_path):
    lines = [_w("00", "session_meta", {"id": "s-p", "timestamp": "2026-03-01T10:00:00Z",
                                       "cwd": "/p"}),
             _w("01", "event_msg", {"type": "user_message",
                                    "message": f"use <private>{SECRET}</private> as host"}),
             _w("01", "response_item", _msg("user", f"use <private>{SECRET}</private> as host")),
             _w("02", "response_item", _msg("assistant", "Using the host.")),
             _w("03", "response_item", _msg("user", f"and <private>\n{SECRET}-2"))]
    p = tmp_path / "rollout-a.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    [d], *_ = codex.read(str(p), 0, None, mtime=0)
    assert _user_texts(d) == ["use [private] as host", "and [private]"]
    assert d.first_prompt == "Use [private] as host" and SECRET not in _all_text(d)
    events = tmp_path / "rollout-events.jsonl"  # a file of events only keeps them
    events.write_text("".join(json.dumps(x) + "\n" for x in lines[:2]))
    [e], *_ = codex.read(str(events), 0, None, mtime=0)
    assert _user_texts(e) == ["use [private] as host"] and SECRET not in _all_text(e)


def test_codex_era2_bare_lines(tmp_path):
    lines = [{"id": "s-era2", "timestamp": "2025-08-01T09:00:00Z"},
             _msg("user", f"Create a README for <private>{SECRET}</private>"),
             _msg("assistant", "Writing it now.")]
    p = tmp_path / "rollout-b.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    [d], *_ = codex.read(str(p), 0, None, mtime=0)
    assert _user_texts(d) == ["Create a README for [private]"] and SECRET not in _all_text(d)


def test_codex_era1_one_document(tmp_path):
    doc = {"session": {"id": "s-era1", "timestamp": "2025-04-01T08:00:00Z"},
           "items": [_msg("user", f"<private>{SECRET}</private> Add a health check"),
                     _msg("assistant", "Added /healthz.")]}
    p = tmp_path / "rollout-2025-04-01-x.json"
    p.write_text(json.dumps(doc))
    [d], *_ = codex.read(str(p), 0, None, mtime=0)
    assert _user_texts(d) == ["[private] Add a health check"]
    assert d.first_prompt == "[private] Add a health check" and SECRET not in _all_text(d)


def _chat_doc(text: str, title: str | None = None) -> dict:
    doc = {"version": 3, "sessionId": "chat-p", "responderUsername": "GitHub Copilot",
           "creationDate": 1_764_000_000_000,
           "requests": [{"requestId": "r1", "timestamp": 1_764_000_000_000,
                         "message": {"text": text, "parts": []},
                         "response": [{"value": "Answered."}]}]}
    if title:
        doc["customTitle"] = title
    return doc


def test_copilot_chat_json_and_its_title(tmp_path):
    p = tmp_path / "chat.json"
    p.write_text(json.dumps(_chat_doc(f"Add a toggle <private>{SECRET}</private> here",
                                      f"Toggle <private>{SECRET}-t</private>")))
    [d], problems = copilot.read(str(p))
    assert problems == [] and SECRET not in _all_text(d)
    assert _user_texts(d) == ["Add a toggle [private] here"]
    assert (d.custom_title, d.first_prompt) == ("Toggle [private]", "Add a toggle [private] here")


def test_copilot_mutation_log(tmp_path):
    p = tmp_path / "chat.jsonl"
    doc = _chat_doc("first")
    doc["requests"] = []
    push = {"kind": 2, "k": ["requests"], "v": [_chat_doc(f"log <private>{SECRET}")["requests"][0]]}
    p.write_text(json.dumps({"kind": 0, "v": doc}) + "\n" + json.dumps(push) + "\n")
    [d], _problems = copilot.read(str(p))
    assert _user_texts(d) == ["log [private]"] and SECRET not in _all_text(d)


def test_shared_log_entry_body_title_and_header(tmp_path):
    p = tmp_path / "ws" / ".claude" / "state" / "sessions" / "P001" / "entry.md"
    p.parent.mkdir(parents=True)
    p.write_text(f"---\nauthor: Alice <private>{SECRET}-a</private>\n---\n"
                 f"# Chose the <private>{SECRET}-t</private> store\n"
                 f"We picked it.\n<private>\n{SECRET}-b\n</private>\nFor its replication.\n"
                 f"<private>{SECRET}-c unclosed, to the end\nof the entry")
    d, problems = shared_log.read(str(p), "P001")
    assert problems == [] and SECRET not in _all_text(d)
    assert (d.author, d.custom_title) == ("Alice [private]", "Chose the [private] store")
    assert d.messages[0].text == ("# Chose the [private] store\nWe picked it.\n[private]\n"
                                  "For its replication.\n[private]")


def test_session_history_summaries(tmp_path):
    state = tmp_path / ".claude" / "state"
    state.mkdir(parents=True)
    (state / "state.json").write_text(json.dumps({"sessionHistory": [
        {"date": time.strftime("%Y-%m-%d"), "summary": f"Moved the db to <private>{SECRET}"
                                                       "</private> tapirhost"}]}))
    found, problems = history.search(str(tmp_path), ["tapirhost"])
    assert problems == [] and [e["summary"] for e in found] == ["Moved the db to [private] tapirhost"]
    assert history.search(str(tmp_path), [SECRET])[0] == [], "the span is no way to find it"


def test_an_extract_edited_by_hand(tmp_path):
    folder = tmp_path / ".prima-memory" / "extracts" / "p"
    folder.mkdir(parents=True)
    path = folder / "2026-03-01-notes.md"
    # a span holding a heading is one span: the section after the heading is inside it too
    path.write_text(f"## Notes on <private>{SECRET}-t</private>\n\nKept text.\n<private>\n"
                    f"### {SECRET}-h\n\n{SECRET}-b\n</private>\n\n## After\n\nVisible.\n")
    d = extract_reader.read(str(tmp_path), str(path))
    assert d is not None and SECRET not in _all_text(d)
    assert d.custom_title == "Notes on [private]"
    assert [m.text for m in d.messages] == ["## Notes on [private]\n\nKept text.\n[private]",
                                            "## After\n\nVisible."]


# -- what the embedder is given --------------------------------------------------------------------

def test_the_embedder_never_sees_a_span(env):
    t = env.transcript("e1e1e1e1-0000-4000-8000-000000000001", start=OLD)
    t.exchange(f"Connect to <private>{SECRET}</private> with the usual port", "Connected.")
    t.exchange(f"then <private>{SECRET}-2", "And then?")
    mem = Memory(str(env.ws))
    try:
        mem.update()
        e = Fake()
        semantic.Embedding(mem.store(), e).run()
    finally:
        mem.close()
    assert len(e.encoded) == 2 and not any(SECRET in x for x in e.encoded)
    assert all(MARK in x for x in e.encoded)


# -- through the CLI, the hooks and the MCP server ---------------------------------------------------

SID = "aaaa0000-0000-4000-8000-00000000abcd"
WORDS = {"closed": "zqxclosedword", "nested": "zqxnestedword", "inner": "zqxinnerword",
         "unclosed": "zqxunclosedword", "title": "zqxtitleword", "block": "zqxblockword"}


def _substantial_session(env) -> None:
    """A session of 40 minutes (so it gets an extract) whose prompts hold every kind of span."""
    w = WORDS
    t = env.transcript(SID, start=OLD)
    t.user(f"Set up the tunnel to <private>{w['closed']}</private> via the bastion capybara",
           step=0)
    t.reply("Tunnel set up through the bastion; the remote end answers on port 22. " * 4)
    t.tool("Write", {"file_path": str(env.ws / "tunnel.sh"), "content": "ssh -N"},
           text="Write the tunnel script the user asked for.")
    t.user(f"Nested: <private>outer {w['nested']} <private>{w['inner']}</private> tail"
           "</private> done capybara", step=20 * 60)
    t.reply("Noted, the nested part stays out. " * 8)
    t.user([{"type": "text", "text": "DECIDED: keep the tunnel capybara "
                                     f"<private>{w['block']}</private>"},
            {"type": "text", "text": f"and an unclosed one <private>{w['unclosed']}\nmore"}],
           step=20 * 60)
    t.reply("Decision recorded; the tunnel stays. " * 8)
    t.raw({"type": "custom-title", "customTitle": f"Tunnel <private>{w['title']}</private>",
           "sessionId": SID})


def _leaked(text: str) -> list[str]:
    return [w for w in WORDS.values() if w in text]


def _files_leaking(root: Path) -> list[str]:
    out = []
    for p in sorted(root.rglob("*")):
        if p.is_file():
            raw = p.read_bytes()
            out += [f"{p.name}: {w}" for w in WORDS.values()
                    if w.encode() in raw or w.encode("utf-16-le") in raw]
    return out


def test_no_span_reaches_any_file_or_answer(env):
    _substantial_session(env)
    outputs = {}
    outputs["index"] = env.run("index").stdout
    outputs["search"] = env.run("search", "capybara", "--mode", "keyword").stdout
    found = env.json("search", "capybara", "--mode", "keyword")
    assert [r["session_id"] for r in found["results"]] == [SID]
    outputs["search json"] = json.dumps(found)
    outputs["show"] = env.run("show", SID).stdout
    outputs["show json"] = json.dumps(env.json("show", SID))
    outputs["show summary"] = env.run("show", SID, "--detail", "summary").stdout
    outputs["export"] = env.run("export", SID).stdout
    outputs["export html"] = env.run("export", SID, "--format", "html").stdout
    outputs["recent"] = env.run("recent").stdout
    outputs["digest"] = env.run("digest", "--since", "30d").stdout
    outputs["recall"] = env.run("recall", "capybara").stdout
    outputs["similar"] = env.run("similar", "tunnel", "bastion").stdout  # the real model
    assert (env.data / "extracts").is_dir() and list((env.data / "extracts").rglob("*.md"))
    r = run_hook(env, "pre-compact", payload(env, "pre-compact", SID))
    assert r.rc == 0, r
    [checkpoint] = (env.data / "extracts").rglob("*-checkpoint*.md")
    r = run_hook(env, "session-start", payload(env, "session-start", SID, source="compact"))
    assert r.rc == 0 and "Tunnel [private]" in r.out, r
    outputs["session-start compact"] = r.out
    other = "bbbb0000-0000-4000-8000-00000000abcd"
    r = run_hook(env, "session-start", payload(env, "session-start", other))
    assert r.rc == 0 and "Tunnel [private]" in r.out, r  # the briefing names the session
    outputs["session-start"] = r.out
    for word in WORDS.values():
        assert env.search(word) == [], word
        assert env.json("search", word)["results"] == [], word  # by meaning too
    for name, out in outputs.items():
        assert _leaked(out) == [], name
    assert _files_leaking(env.data) == []
    # the marker is stored: the text still reads, and the words around a span are found
    shown = env.json("show", SID)["session"]
    prompts = [m["text"] for m in shown["messages"] if m["role"] == "user"]
    assert prompts == ["Set up the tunnel to [private] via the bastion capybara",
                       "Nested: [private] done capybara",
                       "DECIDED: keep the tunnel capybara [private]\nand an unclosed one [private]"]
    assert shown["title"] == "Tunnel [private]"
    assert shown["decisions"] == ["DECIDED: keep the tunnel capybara [private]"]
    assert MARK in checkpoint.read_text(encoding="utf-8")
    assert [r["session_id"] for r in env.search("private")] == [SID]
    _mcp_answers(env)


def _mcp_answers(env) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "prima_memory", "--workspace", str(env.ws), "mcp"],
                                   env=env.env, cwd=str(env.root))

    async def main():
        answers = []
        with open(env.root / "mcp-stderr.log", "a") as errlog:
            async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                for tool, args in [("search_sessions", {"query": "capybara tunnel"}),
                                   ("recall_session", {"session_id": SID}),
                                   ("recall_session", {"session_id": SID, "detail": "full"}),
                                   ("recent_sessions", {}),
                                   ("find_similar", {"query": "tunnel through the bastion"}),
                                   ("get_file_history", {"path": "tunnel.sh"}),
                                   ("summarize_period", {"since": "30d"})]:
                    got = await s.call_tool(tool, args)
                    assert not got.is_error, (tool, got.content[0].text)
                    answers.append((tool, got.content[0].text))
        return answers
    answers = anyio.run(main)
    assert any(MARK in text for _tool, text in answers)
    for tool, text in answers:
        assert _leaked(text) == [], tool
