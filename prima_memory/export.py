"""A session as a document to read, from the data api.export returns: Markdown or one HTML file
(`prima-memory export`). Its title, times, branch, folder and the way back to it, the files it
changed with Claude's reasons, then every turn of its main thread with the tool calls after it
folded, and its subagents' turns folded at the end (parallel agents interleave: read apart).

A transcript can hold anything, so nothing in one can break the document or run: in Markdown a
message is written as literal text (every character that could start a construct escaped) with
its fenced code blocks fenced again by a fence longer than any backtick run inside; in HTML
every text is escaped, replies are rendered from Markdown with raw HTML off (markdown-it-py,
when installed; as plain text otherwise), and a Content-Security-Policy allows no script and no
request. Control characters (a terminal escape, a bidirectional override) are shown as their
escapes in both (`\\x1b`, `\\u202e`: terminal.neutral), written to a file or printed.
"""
from __future__ import annotations

import html
import os
import re
import stat

from . import terminal
from .errors import Failure
from .sources.registry import source_named
from .timeparse import local_iso

FORMATS = ("markdown", "html")


def printable(text: str | None) -> str:
    """The document's text as a terminal or a reader may show it: its control characters (a
    terminal escape, a bidirectional override) as their escapes, its lone surrogates as U+FFFD
    (terminal.neutral: the rule every text the command line prints follows)."""
    return terminal.neutral(text or "")


def _agent(d: dict) -> str:
    src = source_named(d.get("source") or "")
    return src.agent if src is not None else "Assistant"


def _calls(n: int) -> str:
    return f"{n} tool call{'' if n == 1 else 's'}"


def _main_and_side(d: dict) -> tuple[list[dict], list[dict]]:
    msgs = d.get("messages", [])
    return [m for m in msgs if not m["sidechain"]], [m for m in msgs if m["sidechain"]]


# -- Markdown ----------------------------------------------------------------------------------

_ESCAPE = re.compile(r"([\\`*_\[\]<>&|~#!])")  # what can start or end a construct in a line
_LINE_START = re.compile(r"^(\u00a0*)([-+=.)]|\d+[.)])")  # a bullet, a setext line, a number.
_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_TICKS = re.compile(r"`+")


def literal(text: str) -> str:
    """Text that Markdown shows as written: every character that could begin a construct
    escaped, its indentation kept (as no-break spaces, never taken for code), its line breaks
    hard breaks, its blank lines paragraph breaks."""
    out: list[str] = []
    for line in text.split("\n"):
        line = line.rstrip()
        if not line:
            if out and out[-1] != "":
                out.append("")
            continue
        body = line.lstrip(" \t")
        indent = "\u00a0" * (len(line) - len(body) + 3 * line[:len(line) - len(body)].count("\t"))
        body = _LINE_START.sub(lambda m: m.group(1) + re.sub(r"([-+=.)])", r"\\\1", m.group(2)),
                               indent + _ESCAPE.sub(r"\\\1", body))
        if out and out[-1] != "":
            out[-1] += "\\"  # (a backslash at a line's end: a hard line break)
        out.append(body)
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out)


def _segments(text: str) -> list[tuple[str, str, str]]:
    """(kind, info, body) of a message: its fenced code blocks ("code"; one left open runs to
    the end, as Markdown reads it) and the text between them ("text")."""
    out: list[tuple[str, str, str]] = []
    buf: list[str] = []
    fence, indent, info = "", 0, ""
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if not fence:
            if m and not (m.group(2)[0] == "`" and "`" in m.group(3)):
                if buf:
                    out.append(("text", "", "\n".join(buf)))
                buf, fence, indent, info = [], m.group(2), len(m.group(1)), m.group(3).strip()
            else:
                buf.append(line)
        elif m and m.group(2)[0] == fence[0] and len(m.group(2)) >= len(fence) \
                and not m.group(3).strip():
            out.append(("code", info, "\n".join(buf)))
            buf, fence = [], ""
        else:
            cut = len(line) - len(line.lstrip(" "))
            buf.append(line[min(cut, indent):])
    if fence or buf:
        out.append(("code" if fence else "text", info, "\n".join(buf)))
    return out


def fenced(body: str, info: str = "") -> str:
    """A code block no text inside can close: its fence longer than any backtick run in it."""
    longest = max((len(r) for r in _TICKS.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    lang = re.sub(r"[^\w+#.-]", "", info.split()[0])[:30] if info.split() else ""
    return f"{fence}{lang}\n{body}\n{fence}"


def code(text: str) -> str:
    """An inline code span of one line of text, whatever backticks it holds."""
    text = " ".join(text.split())
    if not text:
        return ""
    ticks = "`" * (max((len(r) for r in _TICKS.findall(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


_INLINE = re.compile(r"\\.|`+|<|!\[")  # an escape, a code span's start, a tag's, an image's


def as_written(text: str) -> str:
    """Markdown (a reply's, fenced code apart) kept as it was written, but for what could act
    beyond the text: a `<` outside a code span is escaped (no tag, comment or HTML block: a
    `</details>` closes none of the document's, a `<script>` is text) and so is an image's `[`
    (a viewer would fetch it). A code span is taken on one line only, as narrow as CommonMark
    can read it, so that no `<` is left as written where a viewer would not read code; where a
    viewer reads code over two lines, a `\\<` in it shows its backslash, a cost of text only."""
    lines = text.split("\n")
    while lines and not lines[-1].strip():  # (the blank lines around a fenced block: ours)
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(_line_as_written(line) for line in lines)


def _line_as_written(line: str) -> str:
    if "<" not in line and "![" not in line:
        return line
    out: list[str] = []
    i = kept = 0
    while (m := _INLINE.search(line, i)) is not None:
        tok = m.group()
        i = m.end()
        if tok[0] == "\\":
            continue  # (an escaped character: no construct starts there)
        if tok[0] == "`":  # a code span, to the next run of as many backticks on this line
            close = next((r for r in _TICKS.finditer(line, i) if len(r.group()) == len(tok)),
                         None)
            if close is not None:
                i = close.end()
            continue
        out += [line[kept:m.start()], "\\<" if tok == "<" else "!\\["]
        kept = i
    return "".join(out) + line[kept:]


def _md_message(text: str, written: bool) -> str:
    """A message in Markdown: an agent's as it wrote it (`written`), a person's as literal text
    (they write plain text, where `*` and `#` mean no emphasis or heading); fenced code, in
    either, fenced again so that nothing inside can close it."""
    plain = as_written if written else literal
    return "\n\n".join(plain(body) if kind == "text" else fenced(body, info)
                       for kind, info, body in _segments(text) if body.strip() or kind == "code")


def _md_call(c: dict) -> list[str]:
    out = f"- {code(c['tool'])}"
    if c["target"]:
        out += f" {code(c['target'])}"
    if c["line"]:
        out += f" — {literal(' '.join(c['line'].split()))}"
    lines = [out]
    for key, info in (("diff", "diff"), ("output", "text")):
        if c.get(key):
            lines += ["", "<details>", f"<summary>{_e(_fold(key, c[key]))}</summary>", "",
                      fenced(c[key]["text"], info), "", "</details>"]
    return lines + ([""] if len(lines) > 1 else [])  # (a list of calls in brief stays tight)


def _fold(key: str, part: dict) -> str:
    """What a folded output or diff says of itself: how long, whether cut or an error."""
    lines = part["text"].count("\n") + 1 if part["text"] else 0
    what = ("error output" if part.get("error") else key) + f", {lines} line" \
        + ("" if lines == 1 else "s")
    if part.get("cut"):
        what += (f", the first {len(part['text']):,} of {part['chars']:,} characters"
                 if part.get("chars") else ", cut")
    return what


def _md_tools(calls: list[dict]) -> list[str]:
    if not calls:
        return []
    body = [x for c in calls for x in _md_call(c)]
    return ["<details>", f"<summary>{_calls(len(calls))}</summary>", "", *body,
            *([""] if body[-1] else []), "</details>", ""]


def _outputs_note(d: dict) -> str | None:
    """The export's line on tool outputs: where they are and how much of each, or why none."""
    o = d.get("outputs")
    if o is None:
        return None
    if not o["shown"]:
        return f"none here ({o['why']})"
    unread = o.get("unread_lines")
    return (f"folded under each call, each cut to its first {o['max_chars']:,} "
            "characters; secrets redacted" + (
                f"; {unread:,} line{'' if unread == 1 else 's'} of its transcript could not be "
                "read (too long, or not JSON): the outputs there are missing" if unread else ""))


def _md_turns(msgs: list[dict], agent: str, level: str) -> list[str]:
    out = []
    for m in msgs:
        who = ("User" if m["role"] == "user" else agent) + (" (subagent)" if m["sidechain"]
                                                             else "")
        out += [f"{level} {who} · {local_iso(m['at'])}", ""]
        if m["text"]:  # (none in a turn of tool calls alone)
            out += [_md_message(m["text"], m["role"] != "user"), ""]
        out += _md_tools(m.get("tool_calls", []))
    return out


def markdown(data: dict) -> str:
    d = data["session"]
    agent = _agent(d)
    out = [f"# {literal(' '.join(d['title'].split()))}", ""]
    out += [f"- Session: {code(d['session_id'])} {literal(d['label'])}",
            f"- Time: {local_iso(d['started_at'])} – {local_iso(d['ended_at'])}",
            f"- Branch: {code(d['branch']) if d['branch'] else '—'}",
            f"- Project: {code(d['project']) if d['project'] else '—'}"]
    if d.get("origin"):
        out.append(f"- Forked from: {code(d['origin']['session_id'])} "
                   f"({literal(' '.join(d['origin']['title'].split()))})")
    for key, label in (("resume", "Resume"), ("show", "Print")):
        if d.get(key):
            out.append(f"- {label}: {code(d[key])}")
    if _outputs_note(d):
        out.append(f"- Tool outputs and diffs: {_outputs_note(d)}")
    if d["files_changed"]:
        out += ["", "## Files changed", ""]
        for c in d["files_changed"]:
            why = " ".join((c["explanation"] or "").split())
            out.append(f"- {code(c['relative'])} ({literal(c['tool'] or '')}, "
                       f"{local_iso(c['at'])})" + (f": {as_written(why)}" if why else ""))
    if d["decisions"]:
        out += ["", "## Decisions", ""]
        out += [f"- {literal(' '.join(x.split()))}" for x in d["decisions"]]
    main, side = _main_and_side(d)
    out += ["", "## Conversation", ""]
    out += _md_turns(main, agent, "###")
    if side:
        out += ["## Subagents", "", "<details>",
                f"<summary>{len(side)} messages of its subagents</summary>", ""]
        out += _md_turns(side, agent, "###")
        out += ["</details>", ""]
    return printable("\n".join(out).rstrip("\n") + "\n")


# -- HTML --------------------------------------------------------------------------------------

_CSS = """
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;max-width:52rem;margin:2rem auto;
padding:0 1rem;color:#1f2328;background:#fff}
h1{font-size:1.6rem;margin-bottom:.5rem}h2{margin-top:2rem;border-bottom:1px solid #d0d7de}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:0}
dt{color:#59636e}dd{margin:0;overflow-wrap:anywhere}
code,pre{font:.9em ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f6f8fa;
border-radius:4px}code{padding:.1em .3em;overflow-wrap:anywhere}
pre{padding:.7rem;overflow-x:auto}pre code{padding:0;background:none}
.turn{margin:1rem 0;padding:.6rem .9rem;border:1px solid #d0d7de;border-radius:8px}
.turn.user{background:#f6f8fa}.who{font-weight:600;margin-bottom:.3rem}
.who time{font-weight:400;color:#59636e;margin-left:.5rem}
.plain{white-space:pre-wrap;overflow-wrap:anywhere}
details{margin:.4rem 0}summary{cursor:pointer;color:#59636e}
.tools ul{margin:.3rem 0;padding-left:1.2rem;font-size:.9em}.line{color:#59636e}
.tools pre{max-height:30rem;overflow:auto;white-space:pre}.add{color:#1a7f37}.del{color:#cf222e}
.hunk{color:#59636e}
.files li{margin:.3rem 0}.why{color:#59636e}
table{border-collapse:collapse}td,th{border:1px solid #d0d7de;padding:.2rem .5rem}
@media (prefers-color-scheme:dark){body{color:#e6edf3;background:#0d1117}
code,pre,.turn.user{background:#161b22}.turn,h2,td,th{border-color:#30363d}
dt,.who time,summary,.line,.why{color:#9198a1}a{color:#4493f8}}
"""
# no script, no request of any kind: the page is its own, whatever a transcript held
_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"


def _e(text: str | None) -> str:
    return html.escape(text or "", quote=True)


def _renderer():
    """Markdown to HTML for the replies (they are Markdown): markdown-it-py with raw HTML off,
    so a transcript's tags are shown as text, and images off (none is fetched). None without
    it: the replies are shown as plain text."""
    try:
        # only an HTML export renders Markdown: 15 ms of import nothing else pays
        from markdown_it import MarkdownIt
    except ImportError:
        return None
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    return md.enable(["table", "strikethrough"]).disable("image").render


def _html_call(c: dict) -> str:
    out = f"<code>{_e(c['tool'])}</code>"
    if c["target"]:
        out += f" <code>{_e(c['target'])}</code>"
    if c["line"]:
        out += f' <span class="line">— {_e(c["line"])}</span>'
    for key in ("diff", "output"):
        if c.get(key):
            body = (_html_diff(c[key]["text"]) if key == "diff" else _e(c[key]["text"]))
            out += (f'<details class="{key}"><summary>{_e(_fold(key, c[key]))}</summary>'
                    f"<pre><code>{body}</code></pre></details>")
    return f"<li>{out}</li>"


def _html_diff(text: str) -> str:
    """A unified diff, escaped, its added and removed lines marked."""
    marks = {"+": "add", "-": "del", "@": "hunk"}
    return "\n".join(f'<span class="{marks[x[0]]}">{_e(x)}</span>'
                     if x[:1] in marks and x[:3] not in ("+++", "---") else _e(x)
                     for x in text.split("\n"))


def _html_tools(calls: list[dict]) -> str:
    if not calls:
        return ""
    return (f'<details class="tools"><summary>{_calls(len(calls))}</summary><ul>'
            + "".join(_html_call(c) for c in calls) + "</ul></details>")


def _html_turns(msgs: list[dict], agent: str, render) -> list[str]:
    out = []
    for m in msgs:
        user = m["role"] == "user"
        who = ("User" if user else agent) + (" (subagent)" if m["sidechain"] else "")
        body = ("" if not m["text"] else f'<div class="md">{render(m["text"])}</div>'
                if render and not user else f'<div class="plain">{_e(m["text"])}</div>')
        out.append(f'<article class="turn {"user" if user else "assistant"}">'
                   f'<div class="who">{_e(who)}<time>{_e(local_iso(m["at"]))}</time></div>'
                   f'{body}{_html_tools(m.get("tool_calls", []))}</article>')
    return out


def to_html(data: dict) -> str:
    d = data["session"]
    agent, render = _agent(d), _renderer()
    facts = [("Session", f"<code>{_e(d['session_id'])}</code> {_e(d['label'])}"),
             ("Time", f"{_e(local_iso(d['started_at']))} – {_e(local_iso(d['ended_at']))}"),
             ("Branch", f"<code>{_e(d['branch'])}</code>" if d["branch"] else "—"),
             ("Project", f"<code>{_e(d['project'])}</code>" if d["project"] else "—")]
    if d.get("origin"):
        facts.append(("Forked from", f"<code>{_e(d['origin']['session_id'])}</code> "
                                     f"{_e(d['origin']['title'])}"))
    facts += [(label, f"<code>{_e(d[key])}</code>") for key, label in
              (("resume", "Resume"), ("show", "Print")) if d.get(key)]
    if _outputs_note(d):
        facts.append(("Tool outputs and diffs", _e(_outputs_note(d))))
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           '<meta name="generator" content="prima-memory">',
           f"<title>{_e(d['title'])}</title>", f"<style>{_CSS}</style>", "</head>", "<body>",
           f"<header><h1>{_e(d['title'])}</h1>", '<dl class="facts">',
           *(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts), "</dl></header>"]
    if d["files_changed"]:
        out += ['<section class="files"><h2>Files changed</h2><ul>']
        for c in d["files_changed"]:
            why = f'<div class="why">{_e(c["explanation"])}</div>' if c["explanation"] else ""
            out.append(f"<li><code>{_e(c['relative'])}</code> {_e(c['tool'])}, "
                       f"<time>{_e(local_iso(c['at']))}</time>{why}</li>")
        out.append("</ul></section>")
    if d["decisions"]:
        out += ['<section class="decisions"><h2>Decisions</h2><ul>',
                *(f"<li>{_e(x)}</li>" for x in d["decisions"]), "</ul></section>"]
    main, side = _main_and_side(d)
    out += ["<main><h2>Conversation</h2>"]
    out += _html_turns(main, agent, render)
    out.append("</main>")
    if side:
        out += ['<section class="subagents"><h2>Subagents</h2><details>',
                f"<summary>{len(side)} messages of its subagents</summary>"]
        out += _html_turns(side, agent, render)
        out.append("</details></section>")
    out += ["</body>", "</html>"]
    return printable("\n".join(x for x in out if x) + "\n")


def render(data: dict, fmt: str) -> str:
    return to_html(data) if fmt == "html" else markdown(data)


# -- writing the file --------------------------------------------------------------------------

def write(path: str, text: str) -> int:
    """Write `text` to `path` whole (a temporary file beside it, then renamed over it: a reader
    never sees half, and a failure leaves what was there). An existing file is replaced, as
    other tools' -o do, keeping its mode; a new one is private to the user, as the index is
    (a session's text). Never through a symbolic link: one at `path` is refused, not followed
    (nor replaced: it may be the user's own, and a planted one would point anywhere). Returns
    the bytes written."""
    data = text.encode("utf-8")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.basename(path) or path.endswith(os.sep):
        raise Failure(f"{path} names a folder: give a file name")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise Failure(f"cannot write {path}: {e.strerror}") from None
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise Failure(f"{path} is a symbolic link: not written (name the file itself, or "
                      "remove the link)")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise Failure(f"{path} is not a regular file: not written")
    if not os.path.isdir(folder):
        raise Failure(f"cannot write {path}: the folder {folder} does not exist")
    # only a file written loads it (6 ms)
    import tempfile
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.",
                                   suffix=".tmp")
    except OSError as e:
        raise Failure(f"cannot write {path}: {e.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if st is not None:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise Failure(f"cannot write {path}: {e.strerror or e}") from None
        raise
    return len(data)
