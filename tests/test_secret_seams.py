"""Secrets where text is cut or joined (issue #18, items 4 and 5): every cut falls after
redaction, so a token cut in half never escapes the patterns (a Codex or Copilot change's
explanation, the size limit of a message, an extract's title, a long shared-log entry); the text
no source redacted before is (session-history summaries, a Codex branch); and a reply Claude
Code splits over several lines is redacted as the one message it is stored as.

Fake credentials are assembled at run time so that no scanner flags this file. In-process at
the records seam, and through the CLI where a user meets the text (show, files, search)."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from prima_memory.sources import codex, copilot, extract_reader, history, shared_log
from prima_memory.sources.text import MAX_TEXT, scrubber

BODY = "Q7w9E2r4T6y8U0i1P3o5A7s9D1f3G5h7J9k2"  # 36 characters: a ghp_ token's length
TOKEN = "gh" + "p_" + BODY
DAY = 86400
OLD = time.time() - 10 * DAY


def _leaks(text: str, secret: str = BODY, n: int = 8) -> list[str]:
    """Every n-character piece of `secret` found in `text` (a cut token shows as one)."""
    return sorted({secret[i:i + n] for i in range(len(secret) - n + 1)
                   if secret[i:i + n] in text})


def _all_text(d) -> str:
    return json.dumps([d.branch, d.custom_title, d.summary_title, d.first_prompt, d.author,
                       [m.text for m in d.messages],
                       [(c.path, c.explanation) for c in d.file_changes]])


# --------------------------------------------------------------------------------------------
# Item 4: cut after redacting, everywhere
# --------------------------------------------------------------------------------------------

def _w(ts: str, kind: str, payload: dict) -> dict:
    return {"timestamp": f"2026-03-01T10:00:{ts}Z", "type": kind, "payload": payload}


def _rollout(tmp_path: Path, said: str, git: dict | None = None) -> str:
    meta = {"id": "s-cut", "timestamp": "2026-03-01T10:00:00Z", "cwd": "/home/u/proj"}
    if git is not None:
        meta["git"] = git
    lines = [_w("00", "session_meta", meta),
             _w("01", "response_item", {"type": "message", "role": "user", "content": [
                 {"type": "input_text", "text": "Set up the deploy key"}]}),
             _w("02", "response_item", {"type": "message", "role": "assistant", "content": [
                 {"type": "output_text", "text": said}]}),
             _w("03", "response_item", {"type": "custom_tool_call", "name": "apply_patch",
                                        "call_id": "c1", "input": "*** Begin Patch\n*** Update "
                                        "File: deploy.sh\n@@\n-a\n+b\n*** End Patch"})]
    p = tmp_path / "rollout-2026-03-01T10-00-00-s-cut.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return str(p)


# where the token starts: so that the 500th character falls in it, at its edges, just past it
@pytest.mark.parametrize("start", [480, 490, 496, 470, 499, 500 - len(TOKEN)])
def test_a_codex_change_explanation_keeps_no_piece_of_a_token(tmp_path, start):
    said = "x" * (start - 1) + " " + TOKEN + " and the rest of the plan."
    deltas, _end, _state, _problems = codex.read(_rollout(tmp_path, said), 0, None, mtime=0)
    d = deltas[0]
    assert [c.path for c in d.file_changes] == ["/home/u/proj/deploy.sh"]
    why = d.file_changes[0].explanation
    assert _leaks(why) == [], why[-80:]
    assert len(why) <= 500
    assert _leaks(_all_text(d)) == []


def _chat(tmp_path: Path, parts: list[str]) -> str:
    response = [{"value": p} for p in parts] + [
        {"kind": "textEditGroup", "uri": {"fsPath": "/home/u/proj/deploy.sh"}, "edits": []}]
    doc = {"version": 3, "sessionId": "chat-cut", "responderUsername": "GitHub Copilot",
           "requests": [{"requestId": "r1", "timestamp": 1_772_000_000_000,
                         "message": {"text": "Set up the deploy key"}, "response": response,
                         "editedFileEvents": [{"uri": {"fsPath": "/home/u/proj/other.sh"}}]}]}
    p = tmp_path / "chat-cut.json"
    p.write_text(json.dumps(doc))
    return str(p)


# the tail of 500 starts inside the token, at its first characters, or it ends the text
@pytest.mark.parametrize("after", [480, 470, 490, 464, 0])
def test_a_copilot_change_explanation_keeps_no_piece_of_a_token(tmp_path, after):
    parts = ["Here is the key: " + TOKEN, "y" * after]
    deltas, _problems = copilot.read(_chat(tmp_path, parts))
    d = deltas[0]
    assert {c.path for c in d.file_changes} == {"/home/u/proj/deploy.sh", "/home/u/proj/other.sh"}
    for c in d.file_changes:
        assert _leaks(c.explanation) == [], c.explanation[:80]
        assert len(c.explanation) <= 500
    assert _leaks(_all_text(d)) == []


@pytest.mark.parametrize("before", [20, 4, 30, 1])  # the token's characters kept by the cut
def test_a_message_cut_to_its_size_limit_keeps_no_piece_of_a_token(before):
    problems: list[str] = []
    text = ("z " * (MAX_TEXT // 2))[:MAX_TEXT - before - 5] + " " + TOKEN + " and more after"
    assert text.index(TOKEN) + 4 + before == MAX_TEXT
    kept = scrubber(problems)(text)
    assert len(kept) <= MAX_TEXT
    assert _leaks(kept[-200:]) == [], kept[-80:]
    assert problems and "kept" in problems[0]


def test_a_long_extract_title_keeps_no_piece_of_a_token(tmp_path):
    folder = tmp_path / ".prima-memory" / "extracts"
    folder.mkdir(parents=True)
    title = "Deploy notes " + "w" * (200 - 13 - 20) + " " + TOKEN  # cut at 200: 19 kept
    (folder / "2026-03-01-deploy.md").write_text(f"## {title}\n\nSome body text.\n")
    d = extract_reader.read(str(tmp_path), str(folder / "2026-03-01-deploy.md"))
    assert d is not None and d.custom_title.startswith("Deploy notes")
    assert _leaks(_all_text(d)) == [], d.custom_title[-60:]


def test_a_long_shared_log_entry_keeps_no_piece_of_a_token(tmp_path):
    # two bytes a character: the entry's byte limit falls well inside the message size limit
    p = tmp_path / "entry.md"
    head = "---\nauthor: Alice\n---\n# Deploy\n"
    room = shared_log.MAX_BYTES - len(head) - 21  # the byte limit falls 20 characters in
    body = ("Übergänge für die Büros, " * 50 + "\n") * (room // 1000)
    body = body.encode()[:room].decode("utf-8", "ignore")
    body += "x" * (room - len(body.encode()))
    raw = (head + body + " " + TOKEN + " end\n" + "more\n" * 50).encode()
    assert raw.index(TOKEN.encode()) + 20 == shared_log.MAX_BYTES
    p.write_bytes(raw)
    d, problems = shared_log.read(str(p), "P001")
    assert d is not None and problems
    assert _leaks(_all_text(d)) == [], d.messages[0].text[-80:]


# --------------------------------------------------------------------------------------------
# Item 5: text no source redacted
# --------------------------------------------------------------------------------------------

def _history(ws: Path, summaries: list[str]) -> None:
    state = ws / ".claude" / "state"
    state.mkdir(parents=True, exist_ok=True)
    today = time.strftime("%Y-%m-%d")
    (state / "state.json").write_text(json.dumps({"sessionHistory": [
        {"date": today, "time": "10:00", "summary": s, "projectsWorked": ["P001 " + TOKEN]}
        for s in summaries]}))


def test_history_summaries_are_redacted(tmp_path):
    _history(tmp_path, [f"Rotated the deploy token {TOKEN} for the walrusdeploy job",
                        "walrusdeploy: the db password is hunter2-Secret9 for now"])
    found, problems = history.search(str(tmp_path), "walrusdeploy")
    assert problems == [] and len(found) == 2
    shown = json.dumps(found)
    assert _leaks(shown) == [] and "hunter2" not in shown, shown
    assert "[REDACTED:github-token]" in shown and "[REDACTED:password]" in shown
    # a secret is not a way in: its words are not searched
    assert history.search(str(tmp_path), "hunter2-Secret9")[0] == []


def test_history_summaries_are_redacted_in_search(env):
    _history(env.ws, [f"Rotated the deploy token {TOKEN} for the walrusdeploy job"])
    out = env.json("search", "walrusdeploy", "--mode", "keyword")
    assert out["results"] == [] and len(out["history"]) == 1
    assert _leaks(json.dumps(out)) == []
    text = env.run("search", "walrusdeploy", "--mode", "keyword").stdout
    assert "walrusdeploy" in text and _leaks(text) == [], text


def test_a_token_in_a_codex_branch_is_redacted(tmp_path):
    path = _rollout(tmp_path, "Done.", git={"branch": "fix/" + TOKEN})
    d = codex.read(path, 0, None, mtime=0)[0][0]
    assert d.branch and d.branch.startswith("fix/") and _leaks(d.branch) == [], d.branch


def test_a_token_in_a_branch_is_never_shown(env):
    folder = Path(env.env["CODEX_HOME"]) / "sessions" / "2026" / "03" / "01"
    folder.mkdir(parents=True)
    _rollout(folder, "Rotated it.", git={"branch": "fix/" + TOKEN})
    (folder / "rollout-2026-03-01T10-00-00-s-cut.jsonl").write_text(
        (folder / "rollout-2026-03-01T10-00-00-s-cut.jsonl").read_text().replace(
            "/home/u/proj", str(env.ws)))
    t = env.transcript("cc-branch", start=OLD, branch="wip/" + TOKEN)
    t.exchange("Set up the deploy key", "Done.")
    for args in (["search", "deploy", "--mode", "keyword"], ["show", "s-cut"],
                 ["show", "cc-branch"], ["recent"], ["digest", "--since", "400d"]):
        for fmt in ([], ["--json"]):
            out = env.run(*args, *fmt).stdout
            assert _leaks(out) == [], (args, out)


SPLITS = [  # (first line of the reply, the next): the secret is only whole when joined
    ("The db password is", "hunter2-Secret9 until Friday."),
    ("Set it with:\nexport DEPLOY_TOKEN=", BODY),
    ("Use this key:\n-----BEGIN RSA PRIVATE KEY-----",
     "MIIEowIBAAKCAQEA7Q9w2E4r6T8y0U1i3P5o7A9s1D3f5G7h9J2k4L6z8X0c\n"
     "-----END RSA PRIVATE KEY-----\nDone."),
    # the value on the line under its key (issue #36, point 23)
    ("The settings:\ndb:\n  password:", "    Tr0ub4dor-77\n  user: app"),
    ("In values.yaml:\nsecrets:\n  token: |", "    Walrus-Secret-99\n  region: eu"),
]


@pytest.mark.parametrize("first, second", SPLITS)
def test_a_reply_split_over_lines_is_redacted_whole(env, first, second):
    t = env.transcript("cc-split", start=OLD)
    t.user("Where do I find the db credentials?")
    mid = t.reply(first)
    t.assistant([{"type": "text", "text": second},
                 {"type": "tool_use", "id": "toolu_x", "name": "Write",
                  "input": {"file_path": str(env.ws / "deploy.env"), "content": "x"}}],
                msg_id=mid)
    shown = env.json("show", "cc-split")["session"]
    reply = [m["text"] for m in shown["messages"]
             if m["role"] == "assistant" and not m.get("calls_only")]
    assert len(reply) == 1 and reply[0].startswith(first.split("\n")[0])
    secret = second.split()[0].rstrip(".")
    assert secret not in json.dumps(shown), reply[0]
    assert "[REDACTED:" in reply[0]
    files = env.json("files")
    assert files["sessions"] and secret not in json.dumps(files)
    assert env.search(secret.split("-")[0][:15]) == []


def test_a_reply_split_over_two_reads_is_redacted_whole(env):
    """The second line arrives after the first was indexed (the Stop hook, a search)."""
    t = env.transcript("cc-later", start=OLD)
    t.user("Where do I find the db credentials?")
    mid = t.reply("The db password is")
    env.run("index")
    t.reply("hunter2-Secret9 until Friday. Ask ops for a new one.", msg_id=mid)
    env.run("index")
    shown = json.dumps(env.json("show", "cc-later"))
    assert "hunter2" not in shown and "[REDACTED:password]" in shown
    assert "Ask ops for a new one." in shown
    assert env.search("hunter2") == []
