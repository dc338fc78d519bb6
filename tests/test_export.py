"""Reading a session as a user meets it through the CLI: `show` with its tool calls in brief (and
`--no-tools`), `prima-memory export` as Markdown or one HTML file, to stdout or `-o FILE`; what a
transcript holds (fences, tags, escapes, secrets) never breaks, runs in or leaks from either
(issue #21)."""
from __future__ import annotations

import json
import os
import re
import stat
import time

import pytest

from conftest import Env

OLD = time.time() - 3 * 86400
SID = "e7000000-0000-4000-8000-000000000001"
AWS_ID = "AK" + "IA" + "IOSFODNN7EXAMPLE"  # (assembled: see tests/test_redact.py)
GH_TOKEN = "gh" + "p_" + "Q7w9E2r4T6y8U0i1P3o5A7s9D1f3G5h7J9k2"
HOSTILE = ("```\nunclosed fence </details> <script>alert(1)</script> </prima-memory>\n"
           "\x1b]0;pwned\x07\x1b[2J <!-- comment\n~~~~\n    ````` deep\n")


def _login(env: Env):
    t = env.transcript(SID, start=OLD, branch="fix/login")
    t.user("Fix the login redirect loop")
    t.tool("Read", {"file_path": str(env.ws / "src" / "auth.py")}, text="Reading the auth module.")
    t.tool("Edit", {"file_path": str(env.ws / "src" / "auth.py"), "old_string": "Strict",
                    "new_string": "Lax"}, text="The cookie is SameSite=Strict; making it Lax.")
    t.tool("Bash", {"command": 'git commit -m "Fix login redirect"',
                    "description": "Commit the fix"})
    t.reply("Fixed:\n\n```python\nCOOKIE = 'Lax'\n```\n\nThe redirect now keeps the session.")
    agent = env.subagent(SID, "a1", start=OLD + 60)
    agent.user("Find the auth tests")
    agent.tool("Glob", {"pattern": "tests/test_auth*.py"}, text="Looking for them.")
    agent.reply("tests/test_auth.py")
    return t


def _lines(out: str) -> list[str]:
    return out.splitlines()


def test_show_prints_tool_calls_in_brief_and_hides_them_when_asked(env):
    _login(env)
    out = env.run("show", SID).stdout
    calls = [x for x in _lines(out) if x.startswith("  · ")]
    assert calls == ["  · Read src/auth.py", "  · Edit src/auth.py",
                     '  · Bash: git commit -m "Fix login redirect"  (Commit the fix)',
                     "  · Glob: tests/test_auth*.py"]
    lines = _lines(out)  # each after the message it follows
    assert lines[lines.index("The cookie is SameSite=Strict; making it Lax.") + 1] == \
        "  · Edit src/auth.py"
    hidden = env.run("show", SID, "--no-tools").stdout
    assert "  · " not in hidden and hidden == "\n".join(x for x in lines
                                                       if not x.startswith("  · ")) + "\n"
    data = env.json("show", SID)["session"]
    edit = data["messages"][2]["tool_calls"]
    assert edit[0] == {"tool": "Edit", "target": "src/auth.py", "kind": "path", "line": "",
                       "at": edit[0]["at"]}
    assert [c["tool"] for m in data["messages"] for c in m["tool_calls"]] == [
        "Read", "Edit", "Bash", "Glob"]
    assert "tool_calls" not in env.json("show", SID, "--no-tools")["session"]["messages"][2]


def test_show_keeps_tool_calls_to_the_detail_and_range_asked(env):
    _login(env)
    turns = env.json("show", SID, "--detail", "turns")["session"]
    assert [c["tool"] for m in turns["messages"] for c in m["tool_calls"]] == [
        "Read", "Edit", "Bash"], "the main thread's"
    ranged = env.json("show", SID, "--range", "2:3")["session"]["messages"]
    assert [(m["index"], [c["tool"] for c in m["tool_calls"]]) for m in ranged] == [
        (2, ["Edit", "Bash"])]
    summary = env.json("show", SID, "--detail", "summary")["session"]
    assert summary["tools_used"] == {"Bash": 1, "Edit": 1, "Glob": 1, "Read": 1}
    assert "messages" not in summary
    assert "tools used: Bash 1, Edit 1, Glob 1, Read 1" in env.run(
        "show", SID, "--detail", "summary").stdout


def test_export_markdown_is_the_whole_session_to_read(env):
    _login(env)
    md = env.run("export", SID).stdout
    assert md.startswith("# Fix the login redirect loop\n")
    for part in (f"- Session: `{SID}`", "- Branch: `fix/login`", f"- Project: `{env.ws}`",
                 f"- Resume: `cd '{env.ws}' && claude --resume {SID}`",
                 "## Files changed", "- `src/auth.py` (Edit, ",
                 "The cookie is SameSite=Strict; making it Lax.",
                 "### User · ", "### Claude · ", "<summary>2 tool calls</summary>",
                 '- `Bash` `git commit -m "Fix login redirect"` — Commit the fix',
                 "```python\nCOOKIE = 'Lax'\n```", "## Subagents",
                 "### User (subagent) · ", "- `Glob` `tests/test_auth*.py`"):
        assert part in md, part
    assert md.index("## Conversation") < md.index("## Subagents"), "the main thread first"
    html = _render_markdown(md)
    # 3 turns' calls, the subagents, and each call's output or diff (4 calls)
    assert html.count("<details>") == html.count("</details>") == 8
    assert '<code class="language-python">' in html
    brief = _render_markdown(env.run("export", SID, "--no-outputs").stdout)
    assert brief.count("<details>") == brief.count("</details>") == 4


def _render_markdown(md: str) -> str:
    """The Markdown as a CommonMark viewer with raw HTML allowed shows it (GitHub's, VS Code's)."""
    markdown_it = pytest.importorskip("markdown_it")
    return markdown_it.MarkdownIt("commonmark", {"html": True}).render(md)


def test_export_html_is_one_self_contained_page_without_script(env):
    _login(env)
    page = env.run("export", SID, "--format", "html").stdout
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r"<(script|link|img|iframe)\b", page) and "src=" not in page
    assert "<title>Fix the login redirect loop</title>" in page
    assert "<code>git commit -m &quot;Fix login redirect&quot;</code>" in page
    assert '<summary>2 tool calls</summary>' in page
    assert page.count("<details") == page.count("</details>") == 8  # (and 4 outputs or diffs)
    assert page.index("<h2>Conversation</h2>") < page.index("<h2>Subagents</h2>")
    if _has_markdown_it():  # replies rendered from their Markdown
        assert '<pre><code class="language-python">COOKIE = &#x27;Lax&#x27;' in page \
            or "<pre><code class=\"language-python\">COOKIE = 'Lax'" in page


def _has_markdown_it() -> bool:
    try:
        import markdown_it  # noqa: F401
        return True
    except ImportError:
        return False


def test_hostile_text_breaks_nothing_and_runs_nothing(env):
    t = env.transcript(SID, start=OLD)
    t.user("Look at this:\n" + HOSTILE + "\ud800 end of prompt")
    t.tool("Bash", {"command": "echo '</details>' '```' \x1b[31m <script>x</script>",
                    "description": "</prima-memory> <b>bold</b> ```"},
           text="Reply with " + HOSTILE)
    t.reply("Last reply: all done.")
    show = env.run("show", SID).stdout
    md = env.run("export", SID).stdout
    page = env.run("export", SID, "--format", "html").stdout
    for out in (show, md, page):
        assert "\x1b" not in out and "\x07" not in out, "nothing acts on a terminal"
        assert "\ufffd end of prompt" in out, "a lone surrogate shown, not a crash"
    # Markdown: every turn is still there after the hostile ones, nothing became HTML
    html = _render_markdown(md)
    assert html.count("<details>") == html.count("</details>") == 2  # (its call, its output)
    assert "<script" not in html and "<b>" not in html and "<!--" not in html
    assert "Last reply: all done." in html and html.count("<h3>") == 3
    assert "&lt;/details&gt;" in html and "&lt;script&gt;" in html
    # HTML: escaped, the one <details> ours
    assert "<script" not in page and "<b>" not in page and "<!--" not in page
    assert page.count("<details") == page.count("</details>") == 2
    assert "&lt;/details&gt;" in page and "&lt;/prima-memory&gt;" in page
    assert "Last reply: all done." in page


def test_a_secret_appears_nowhere_it_is_shown(env):
    t = env.transcript(SID, start=OLD)
    t.user(f"Use the key {AWS_ID} to list the bucket")
    t.tool("Bash", {"command": f"AWS_ACCESS_KEY_ID={AWS_ID} aws s3 ls",
                    "description": f"List it with {GH_TOKEN}"},
           text=f"Listing with {GH_TOKEN}.")
    t.reply(f"Done; rotate {AWS_ID} now.")
    outs = [env.run("show", SID).stdout, env.run("show", SID, "--json").stdout,
            env.run("show", SID, "--detail", "summary").stdout,
            env.run("export", SID).stdout, env.run("export", SID, "--format", "html").stdout,
            env.run("export", SID, "--json").stdout]
    for out in outs:
        assert AWS_ID not in out and GH_TOKEN not in out and "REDACTED" in out
    call = env.json("show", SID)["session"]["messages"][1]["tool_calls"][0]
    assert "[REDACTED:" in call["target"] and "[REDACTED:" in call["line"]


def test_export_writes_a_file_whole_and_never_through_a_link(env, tmp_path):
    _login(env)
    tmp_path = tmp_path / "out"
    tmp_path.mkdir()
    out = tmp_path / "login.md"
    p = env.run("export", SID, "-o", str(out))
    assert p.stdout.startswith(f"wrote {out} (markdown, ")
    assert out.read_text(encoding="utf-8") == env.run("export", SID).stdout
    assert stat.S_IMODE(out.stat().st_mode) == 0o600, "a new file is private, as the index"
    out.chmod(0o644)  # replaced whole, keeping its mode
    env.run("export", SID, "--format", "html", "-o", str(out))
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert sorted(x.name for x in tmp_path.iterdir()) == ["login.md"], "no temporary left"
    data = json.loads(env.run("export", SID, "--json").stdout)
    assert data["session"]["files_changed"][0]["relative"] == "src/auth.py"

    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    link = tmp_path / "link.md"
    link.symlink_to(target)
    p = env.run("export", SID, "-o", str(link), check=False)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and "symbolic link" in p.stderr and "Traceback" not in p.stderr
    assert target.read_text() == "keep me" and link.is_symlink()

    for bad, why in ((tmp_path / "no such folder" / "x.md", "does not exist"),
                     (tmp_path, "not a regular file")):
        p = env.run("export", SID, "-o", str(bad), check=False)
        assert p.returncode == 1 and p.stderr.count("\n") == 1 and why in p.stderr, p.stderr
    assert not (tmp_path / "no such folder").exists()


def test_export_of_an_unknown_session_says_so(env):
    _login(env)
    p = env.run("export", "nosuchsession", check=False)
    assert p.returncode == 1 and p.stdout == "" and p.stderr.count("\n") == 1
    assert "no session matches 'nosuchsession'" in p.stderr
    p = env.run("export", SID, "--format", "pdf", check=False)
    assert p.returncode == 2 and "invalid choice" in p.stderr


def test_the_html_export_reads_without_markdown_it(env, monkeypatch):
    """Replies are shown as plain text when the Markdown renderer is not installed."""
    _login(env)
    import sys

    from prima_memory import api, export
    monkeypatch.setitem(sys.modules, "markdown_it", None)  # (an import of it fails)
    data = api.call(str(env.ws), lambda mem: api.export(mem, SID, outputs=False,
                                                           ready=api.bring_up(mem)))
    page = export.to_html(data)
    assert "<div class=\"plain\">Fixed:\n\n```python\nCOOKIE = &#x27;Lax&#x27;\n```" in page
    assert "<pre>" not in page


def test_the_mcp_session_answer_stays_lean(env):
    """recall_session: a summary counts the tools used; messages come without their calls."""
    _login(env)
    from prima_memory import api
    from prima_memory.mcp_server import lean
    for detail, counted, listed in (("summary", True, False), ("full", False, False)):
        data = api.call(str(env.ws), lambda mem, d=detail: api.show(
            mem, SID, None, d, tools=d == "summary", ready=api.bring_up(mem)))
        text = json.dumps(lean(data, str(env.ws)))
        assert ('"tools_used"' in text) == counted and ('"tool_calls"' in text) == listed


def test_a_path_outside_the_workspace_stays_whole(env):
    t = env.transcript(SID, start=OLD)
    t.user("Read the system config")
    t.tool("Read", {"file_path": "/etc/hosts"}, text="Reading it.")
    t.tool("Bash", {"command": f"cat {env.ws}/notes.txt"})
    calls = [c for m in env.json("show", SID)["session"]["messages"] for c in m["tool_calls"]]
    assert [c["target"] for c in calls] == ["/etc/hosts", f"cat {env.ws}/notes.txt"], \
        "a command is never taken for a path"


@pytest.mark.skipif(os.name != "posix", reason="file modes")
def test_export_into_a_folder_not_writable_says_so(env, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    _login(env)
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        p = env.run("export", SID, "-o", str(folder / "x.md"), check=False)
    finally:
        folder.chmod(0o700)
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "Permission denied" in p.stderr


def _suite(env: Env):
    """Claude runs tools before it says anything: the calls are its turn's, not the request's."""
    t = env.transcript(SID, start=OLD, branch="fix/login")
    t.user("add a test for is_public()")
    t.tool("Edit", {"file_path": str(env.ws / "tests" / "test_acl.py"), "old_string": "",
                    "new_string": "def test_is_public():\n    assert is_public(Doc())\n"},
           text="Adding `test_is_public()` to the ACL tests.")
    t.reply("Added `test_is_public()`; see PR #812 for why `google ->` is public.")
    t.user("nice. run the whole suite and then commit it")
    t.tool("Bash", {"command": "python -m pytest -q -x", "description": "Run the suite"},
           result="212 passed in 9.1s")
    t.tool("Bash", {"command": 'git commit -am "Test is_public"'}, result="[main 1a2b3c4]")
    t.reply("All 212 tests pass; committed as 1a2b3c4.")
    t.user("and push it")
    t.tool("Bash", {"command": "git push"}, result="To origin\n   1a2b3c4..5d6e7f8  main -> main")
    return t


def test_tool_calls_are_shown_under_the_agent_that_made_them(env):
    """#38: `show` printed `[3] user … nice. run the whole suite and then commit it · Bash: …`."""
    _suite(env)
    blocks = env.run("show", SID).stdout.split("\n\n")[1:]
    turns = [(b.splitlines()[0].split()[1], [x for x in b.splitlines() if x.startswith("  · ")])
             for b in blocks if b.startswith("[")]
    assert turns == [
        ("user", []), ("claude", ["  · Edit tests/test_acl.py"]), ("claude", []), ("user", []),
        ("claude", ["  · Bash: python -m pytest -q -x  (Run the suite)",
                    '  · Bash: git commit -am "Test is_public"']),
        ("user", []), ("claude", ["  · Bash: git push"])], turns
    assert "[6] claude" in blocks[-1] and "and push it" not in blocks[-1], \
        "a turn of tool calls alone is the agent's, without text"
    data = env.json("show", SID)["session"]["messages"]
    assert all(not m["tool_calls"] for m in data if m["role"] == "user")
    # its number is the same without the calls, where it is left out
    bare = env.json("show", SID, "--no-tools")["session"]["messages"]
    assert [m["index"] for m in bare] == [0, 1, 2, 3, 4, 5]
    assert [m["index"] for m in env.json("show", SID, "--range", "-1:")["session"]
            ["messages"]] == [6]

    md = env.run("export", SID).stdout
    turns_md = md.split("### ")[1:]
    assert [(x.split(" ·")[0], "tool call" in x) for x in turns_md] == [
        ("User", False), ("Claude", True), ("Claude", False), ("User", False),
        ("Claude", True), ("User", False), ("Claude", True)]
    page = env.run("export", SID, "--format", "html").stdout
    arts = re.findall(r'<article class="turn (\w+)">(.*?)</article>', page, re.S)
    assert [(who, "tool call" in body) for who, body in arts] == [
        ("user", False), ("assistant", True), ("assistant", False), ("user", False),
        ("assistant", True), ("user", False), ("assistant", True)]
    # recall_session's messages (without their calls: see the next test) keep show's numbers
    from prima_memory import api
    from prima_memory.mcp_server import lean
    recall = lean(api.call(str(env.ws), lambda mem: api.show(mem, SID, None, "full",
                                                             tools=False,
                                                             ready=api.bring_up(mem))),
                  str(env.ws))
    assert [(m["index"], m["role"]) for m in recall["session"]["messages"]] == [
        (m["index"], m["role"]) for m in data if m["text"]]


def test_the_markdown_export_keeps_claudes_markdown_as_written(env):
    """#38: `\\`is\\_public()\\``, `PR \\#812`, `google -\\>` rendered with their backslashes."""
    _suite(env)
    md = env.run("export", SID, "--no-outputs").stdout
    assert "Added `test_is_public()`; see PR #812 for why `google ->` is public." in md
    assert "- `tests/test_acl.py` (Edit, " in md and \
        "Adding `test_is_public()` to the ACL tests." in md, "Claude's reason too"
    html = _render_markdown(md)
    assert "<p>Added <code>test_is_public()</code>; see PR #812 for why <code>google -&gt;</code>" \
        " is public.</p>" in html
    assert "\\" not in html.split("<h2>Conversation</h2>")[1]


def test_exports_fold_tool_outputs_and_diffs_and_leave_them_out_when_asked(env):
    t = _suite(env)
    md = env.run("export", SID).stdout
    assert "- Tool outputs and diffs: folded under each call, each cut to its first " \
        "20,000 characters; secrets redacted" in md
    html = _render_markdown(md)
    out = html.split("<code>python -m pytest -q -x</code>")[1]
    assert out.index("<details>") < out.index("<summary>output, 1 line</summary>") \
        < out.index("212 passed in 9.1s") < out.index("</details>")
    assert '<code class="language-diff">--- before\n+++ after\n@@ -0,0 +1,2 @@\n' \
           "+def test_is_public():\n+    assert is_public(Doc())\n</code>" in html
    assert "The file" not in md, "an edit's output is its diff"
    page = env.run("export", SID, "--format", "html").stdout
    assert '<details class="output"><summary>output, 1 line</summary><pre><code>212 passed' \
        in page and '<span class="add">+def test_is_public():</span>' in page
    assert "<dt>Tool outputs and diffs</dt>" in page

    for fmt in ("markdown", "html"):
        brief = env.run("export", SID, "--format", fmt, "--no-outputs").stdout
        assert "python -m pytest -q -x" in brief and "212 passed" not in brief
        assert "test_is_public():\n" not in brief and "Tool outputs" not in brief
        bare = env.run("export", SID, "--format", fmt, "--no-tools").stdout
        assert "tool call" not in bare and "pytest -q" not in bare
        assert "All 212 tests pass" in bare
    assert "--no-outputs" in env.run("export", "--help").stdout

    os.unlink(t.path)  # (Claude Code deletes old transcripts; the index keeps the session)
    gone = env.run("export", SID).stdout
    assert "- Tool outputs and diffs: none here (its transcript is no longer on disk)" in gone
    assert "python -m pytest -q -x" in gone and "212 passed in" not in gone


def test_hostile_tool_outputs_stay_in_their_fold(env):
    t = env.transcript(SID, start=OLD)
    t.user("check it")
    hostile = (HOSTILE + "``````\n</prima-memory>\n\ud800 lone\n" + f"key {AWS_ID}\n")
    t.tool("Bash", {"command": "cat notes.txt"}, result=hostile, text="Reading the notes.")
    t.tool("Edit", {"file_path": str(env.ws / "a.py"), "old_string": f"TOKEN = '{GH_TOKEN}'\n",
                    "new_string": "TOKEN = os.environ['TOKEN']  # </details> <script>\n"})
    t.assistant([{"type": "tool_use", "id": "toolu_big", "name": "Bash",
                  "input": {"command": "cat big.log"}}])
    t.user([{"type": "tool_result", "tool_use_id": "toolu_big",
             "content": ("x" * 99 + "\n") * 524_288}], step=1.0)  # (50 MB, on one line)
    t.reply("Done: `</details>` and <script>alert(1)</script> and </details> and "
            "![x](https://tracker.example/p.png) and ```` ` ````.\n\nLast reply: all done.")
    md = env.run("export", SID).stdout
    page = env.run("export", SID, "--format", "html").stdout
    data = env.run("export", SID, "--json").stdout
    for out in (md, page, data):
        assert AWS_ID not in out and GH_TOKEN not in out and "[REDACTED:" in out
        assert len(out) < 200_000, "a 50 MB output is cut"
    for out in (md, page):
        assert "\x1b" not in out and "\x07" not in out and "\ufffd lone" in out
        assert "first 20,000 of 52,428,800 characters" in out, "the cut is said"
    html = _render_markdown(md)
    assert html.count("<details>") == html.count("</details>") == 4  # calls, 2 outputs, diff
    assert "<script" not in html and "<img" not in html and "<!--" not in html
    assert "Last reply: all done." in html and html.count("<h3>") == 3
    assert "<code>&lt;/details&gt;</code> and &lt;script&gt;alert(1)&lt;/script&gt; and " \
        "&lt;/details&gt; and ![x](https://tracker.example/p.png)" in html
    assert "-TOKEN = &#x27;[REDACTED:" in html or "-TOKEN = '[REDACTED:" in html
    assert "<script" not in page and "<img" not in page
    assert page.count("<details") == page.count("</details>") == 4
    assert "&lt;/prima-memory&gt;" in page and "+TOKEN = os.environ[&#x27;TOKEN&#x27;]  # " \
        "&lt;/details&gt; &lt;script&gt;" in page
