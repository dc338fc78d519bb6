"""Secret redaction for transcript text.

Every piece of text that prima-memory stores, writes to a markdown extract or
injects as context goes through :func:`scrub` first.  Secrets are replaced by
``[REDACTED:<kind>]``; everything else is returned unchanged, character for
character.

Kinds: ``aws-key``, ``aws-secret``, ``github-token``, ``anthropic-key``,
``openai-key``, ``slack-token``, ``google-api-key``, ``stripe-key``, ``jwt``,
``bearer-token``, ``basic-auth``, ``token``, ``private-key``, ``password``,
``secret``, ``api-key``.

Design
------
* Speed.  This runs over every message of a multi-hundred-MB history.  On
  CPython every linear scan of the text (``in``, ``str.lower``, a regex that
  starts with a literal) costs about the same, roughly 0.5-1 ns per
  character, so the number of scans is what counts.  Text with none of the
  trigger substrings costs about a dozen scans and runs no rule regex: the
  provider regexes start with a literal and are their own gate (a hit
  resumes ``finditer`` from it), single rare characters are checked first
  with a memchr-speed ``in`` ("A", "J", "@"), and the key-words are found on
  one ``str.lower`` copy, all k-words (sk-, k_live_, token, api key,
  private key) with one regex anchored on "k".  Only rules whose trigger is
  present run.  Case-insensitive matching uses the lowercased copy (same
  offsets), never ``re.IGNORECASE``, which is an order of magnitude slower.
* Three stages: PEM blocks, then provider token formats, then the context
  rules (URL passwords, Authorization/Bearer, assignments), each run on the
  output of the stage before.  Within a stage rules report ``(start, end,
  replacement)`` spans; the leftmost span wins an overlap (on a tie, the
  rule that ran first) and the text is spliced once.  Later stages thus see
  exactly what a second call would see, and ``[REDACTED:...]`` never
  matches a rule, so ``redact(redact(x)) == redact(x)``.
* False positives.  Provider tokens need their exact prefix and length, no
  word character right before them and, where the prefix is weak (``sk-``,
  bare ``Bearer``), a random-looking body.  Assignments (``password = ...``)
  only redact literal values: quoted strings that are not placeholders,
  names or descriptions, or unquoted values of 6+ characters that are not a
  call, subscript, attribute access, ``None``/``True``/``False``, a type
  annotation, a variable reference or a template placeholder.  In prose and
  inline code (the key neither starts its line nor is a quoted key, a
  ``--flag=`` or a query parameter) an unquoted value must also look like a
  credential (digit, symbol or inner capital).  A value on the line under
  its key (``password:`` ending its line, up to two blank lines between) is
  judged as on the key's line, and taken only when that line is the value
  alone: not a sentence, not the next key (``DEBUG=true``, ``name: x``).  A
  YAML block scalar's lines (``password: |``) are its value whole.
"""

from __future__ import annotations

import re

from .settings import flag

__all__ = ["redact", "redact_enabled", "scrub"]

_PREFIX = "[REDACTED:"


def _tag(kind: str) -> str:
    return _PREFIX + kind + "]"


# --------------------------------------------------------------------------
# Provider token formats (case-sensitive, matched on the original text).
# Each pattern starts with a literal so ``re`` scans for it at str.find speed.
# --------------------------------------------------------------------------

# AWS access key id (AKIA/ASIA + 16) and Google API key (AIza + 35): one scan.
_A_RE = re.compile(r"A(?:[KS]IA[A-Z0-9]{16}(?![A-Za-z0-9])|Iza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-]))")
_GH_RE = re.compile(r"g(?:h[pousr]_[A-Za-z0-9]{30,255}|ithub_pat_[A-Za-z0-9_]{30,255})")
_SLACK_RE = re.compile(r"xox[abeprs]-(?=[A-Za-z-]*[0-9])[A-Za-z0-9-]{10,}")
# JWT: header.payload.signature, both JSON parts base64url of '{"' = "eyJ".
# Anchored on the rare "J" (then a look-behind) because that scans faster.
_JWT_RE = re.compile(r"J(?<=eyJ)[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*")
_SK_RE = re.compile(r"sk-[A-Za-z0-9_-]{20,}")  # OpenAI sk-/sk-proj-, Anthropic sk-ant-
_ALNUM12_RE = re.compile(r"[A-Za-z0-9]{12,}")
_STRIPE_RE = re.compile(r"[sr]k_(?:live|test)_[A-Za-z0-9]{10,}")

# PEM private key block, whole block: base64 body (real or escaped newlines,
# Proc-Type/DEK-Info headers).  If the END line is missing (truncated tool
# output) the BEGIN line and the base64 / header lines after it go.  A lone
# BEGIN marker (code that parses PEM) is not a secret.
_PEM_RE = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[A-Za-z0-9+/=\s\\:,.-]{16,}?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    r"|(?:(?:\r?\n|\\r?\\n)[ \t]*(?:[A-Za-z0-9+/=]{16,}|[A-Za-z-]+:[^\r\n\\]*))+)"
)

# Incoming-webhook URLs are credentials in their path: Slack (services/T…/B…/…, workflows,
# triggers) and Discord (api/webhooks/<id>/<token>).
_WEBHOOK_RE = re.compile(r"(?:hooks\.slack\.com/(?:services|workflows|triggers)/"
                         r"|discord(?:app)?\.com/api/webhooks/)([A-Za-z0-9_/-]{16,})")

# scheme://user:PASSWORD@host -- the scheme is checked in code, the password
# runs to the last '@' of the authority.
_URL_RE = re.compile(r"://([^\s:@/?#\[\]\"'<>]*):([^\s/?#\"'<>]+)@(?=[A-Za-z0-9\[._-])")

# --------------------------------------------------------------------------
# Case-insensitive rules (matched on the lowercased copy, same offsets)
# --------------------------------------------------------------------------

# One scan, anchored on "k", for every trigger containing a k.
_K_GATE_RE = re.compile(
    r"k(?:-(?<=sk-)|_(?:live|test)_|en(?<=token)|ey(?:(?<=apikey)|(?<=api_key)|(?<=api-key)"
    r"|(?<=privatekey)|(?<=private_key)|(?<=private key)))"
)
_PASS_GATE_RE = re.compile(r"pass(?:w|phrase)")

# Passwords told in prose: "my password is hunter2", "the wifi passphrase was: …", "pw: …".
# (1) password/passphrase + is/was, its value on the same line or the next ("the db password
# is" ending a line, as a reply split over lines reads joined), (2) the short keys pw/pwd + : or
# =, (3) passphrase + : or =; then a quoted value (4, 5) or the rest of the line (6).
# (It starts with the literal "p", the word boundary checked just after: twice as fast.)
_PROSE_PW_RE = re.compile(
    r"p(?<![\w-]p)(?:(ass(?:word|wd)|ass ?phrase)[ \t]+(?:is|was|will be)\b(?:[ \t]*:?[ \t]*\r?\n)?"
    r"|(wd?)[ \t]*[:=]|(ass ?phrase)[ \t]*[:=])[ \t]*(?::[ \t]*)?"
    r"""(?:(["'`])([^\n]{1,200}?)\4|([^\s"'`][^\n]{0,199}))""")
# What follows "password is" in prose when no password is told.
_PROSE_STOP = frozenset(
    """a an the not no in on at to of for from by with into under stored saved set kept
    required needed incorrect wrong invalid correct empty missing blank too very still now
    also being used same different changed reset expired hashed encrypted visible shown hidden
    ok okay fine right long short weak strong secure insecure case sensitive least only
    what where which that this it there here see below above given sent""".split())
# A secret assignment whose value starts on the next line: export API_TOKEN=\n  abc…
_NEXT_LINE_RE = re.compile(
    r"(?m)^[ \t]*(?:export[ \t]+|set[ \t]+|declare -x[ \t]+)?"
    r"[a-z_][a-z0-9_]*(?:token|key|secret|password|passwd|pwd|pass)[a-z0-9_]*[ \t]*=[ \t]*\\?"
    r"[ \t]*\r?\n[ \t]*([^\s\"'`]{6,})")

# Its gate, one scan for the four spellings of a line that ends with `=`: "=\n", "= \n", "=\\\n",
# "=\r\n" (four `in` scans took four times as long).
_NEXT_LINE_GATE = re.compile(r"=[ \\\r]?\n")

_AUTH_RE = re.compile(
    r"authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
    r"(?:(bearer|basic|token|bot)[ \t]+)?([a-z0-9._~+/=:-]{8,})"
)
_BEARER_RE = re.compile(r"bearer[ \t]+([a-z0-9._~+/-]{20,}=*)")

# Assignments.  A key name ends with a key-word (client_secret, DB_PASSWORD,
# githubToken, x-api-key, --password) followed by a separator and a value.
_ANNOT = r"[a-z_][\w.]*(?:\[[^\]\n]{0,80}\])?"
_ASSIGN_TAIL = (
    r"(?![\w-])(\\?[\"'])?"  # 1: closing quote of a quoted key
    r"([ \t]*:[ \t]*" + _ANNOT + r"(?:[ \t]*\|[ \t]*" + _ANNOT + r")*[ \t]*=(?!=)[ \t]*"
    r"|[ \t]*(?:=>|:=|=(?!=)|:(?!:)(?:[ \t]*[|>][-+1-9]{0,2}(?=[ \t]*\r?\n))?)[ \t]*"
    r"(?:\\?(?:\r?\n[ \t]*){1,3})?"  # (the value on a next line, after up to two blank ones)
    r"|[ \t]+)"  # 2: separator (typed default, = : := => or a YAML block's `: |`, or a space
    # after a --flag)
    r"(?:(\\?[\"'`])(.{0,4096}?)\3|([^\s\"'`]+))"  # 3: quote, 4: quoted value, 5: bare value
)
# A separator that opens a YAML block scalar (`key: |`, `key: >-`), whose value is its lines.
_BLOCK_SEP = re.compile(r"[ \t]*:[ \t]*[|>]")
# A line under a key that is itself a key (DEBUG=true, name: x): not the key's value.
_KEYLIKE_RE = re.compile(r"[A-Za-z_][\w.-]*(?:=[^=]|:)")
_PASSWORD_RE = re.compile(r"pass(?:w(?:or)?d|phrase)" + _ASSIGN_TAIL)
_SECRET_RE = re.compile(r"secret(?:[_-]?(?:access[_-]?)?key)?" + _ASSIGN_TAIL)
_TOKEN_RE = re.compile(r"token" + _ASSIGN_TAIL)
_APIKEY_RE = re.compile(r"api[_-]?key" + _ASSIGN_TAIL)
_PRIVKEY_RE = re.compile(r"private[_-]?key" + _ASSIGN_TAIL)

_KEY_FAMILY = ("pass", "pwd", "secret", "token", "key", "auth", "cred")

_STOP = frozenset(
    """none null nil true false undefined unknown required optional default
    string str bytes int integer float number bool boolean any object dict
    list tuple array void never char text varchar blob secretstr secretbytes
    return raise yield await async lambda function import from pass continue
    break typeof instanceof new delete self this cls env environ getenv
    redacted hidden masked changeme placeholder example
    password passwd pass pwd secret token apikey api_key api-key""".split()
)

_IDENT_RE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
# Template references and placeholders: ${X} {{ x }} $(cmd) {name} %(x)s
# <your-key> [UNK] ******** #ff00aa ...
_PLACEHOLDER_RE = re.compile(
    r"\$\{\{.*\}\}|\{\{.*\}\}|\$\{?\w+\}?|\$\(.*\)|\{[\w.\[\]'\"]*\}|"
    r"%\(\w+\)[sd]|%[sd]|%\w+%|<[^<>]*>|\[[^\[\]]*\]|"
    r"[xX•.…]+|\?+|#[0-9a-fA-F]{3,8}|.*\*{3,}.*|.{0,12}(?:\.\.\.|…)"
)
# A name rather than a value: my-secret, X-Access-Token, challengePassword
_NAME_RE = re.compile(r"_*[A-Za-z]+(?:[_-]+[A-Za-z]+)*_*")
_WORDISH_RE = re.compile(r"[A-Za-z]+(?:[-'][A-Za-z]+)*")
_CALL_RE = re.compile(r"[A-Za-z_][\w.]*\(.*\)")
_PROSE_PUNCT_RE = re.compile(r"[.,;:!?`()]|\s[A-Z]")
_YAML_REF_RE = re.compile(r"[!&*]\w+")
# A key-word as an inner camelCase word: accessToken, PrivateKeyTypes
_CAMEL_FAMILY_RE = re.compile(r"(?<=[a-z0-9])(?:Key|Token|Secret|Password|Passwd|Credentials?|Auth)(?=[A-Z_]|$)")
_QUOTE_RE = re.compile(r"(?<![A-Za-z0-9])'|'(?![A-Za-z0-9])")
_LINE_LEAD = frozenset(("", "export", "set", "setx", "-", "env", "arg", "declare -x", "$env:"))
_ASCII_LOWER = {c: c + 32 for c in range(65, 91)}


def _mixed(s: str, need: int = 2) -> bool:
    """True when ``s`` mixes at least ``need`` of: upper, lower, digit."""
    up = lo = dg = 0
    for c in s:
        if c.isdigit():
            dg = 1
        elif c.isupper():
            up = 1
        elif c.islower():
            lo = 1
    return up + lo + dg >= need


def _is_placeholder(v: str) -> bool:
    return _PREFIX in v or _PLACEHOLDER_RE.fullmatch(v) is not None


def _word_before(text: str, i: int) -> bool:
    """A letter, digit or underscore right before ``i`` (task-..., risk_...)."""
    return i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")


def _scan(rx, text: str, pos: int, judge, out: list) -> None:
    """Spans for ``rx`` matches from ``pos`` on.  ``judge(text, m)`` returns
    ``(start, kind)`` or None; a rejected match resumes one character later,
    so it cannot hide a token that starts inside it."""
    while True:
        m = rx.search(text, pos)
        if m is None:
            return
        r = judge(text, m)
        if r is None:
            pos = m.start() + 1
        else:
            out.append((r[0], m.end(), _tag(r[1])))
            pos = m.end()


def _judge_a(text: str, m):
    if _word_before(text, m.start()):
        return None
    return m.start(), ("google-api-key" if m.group()[1] == "I" else "aws-key")


def _judge_gh(text: str, m):
    return None if _word_before(text, m.start()) else (m.start(), "github-token")


def _judge_slack(text: str, m):
    return None if _word_before(text, m.start()) else (m.start(), "slack-token")


def _judge_stripe(text: str, m):
    return None if _word_before(text, m.start()) else (m.start(), "stripe-key")


def _judge_jwt(text: str, m):
    s = m.start() - 2  # the match starts at the J of "eyJ"
    return None if _word_before(text, s) else (s, "jwt")


def _judge_sk(text: str, m):
    s, v = m.start(), m.group()
    if _word_before(text, s):
        return None  # task-..., risk-...
    # A random body: upper, lower and digits, and a long unbroken run
    # (not sk-learn-tutorial-for-beginners-2024, sk-ant-colony-sim).
    if _mixed(v[3:], 3) and _ALNUM12_RE.search(v):
        return s, ("anthropic-key" if v.startswith("sk-ant-") else "openai-key")
    return None


def _find_url_passwords(text: str, out: list) -> None:
    tag = _tag("password")
    for m in _URL_RE.finditer(text):
        s = m.start()
        pw = m.group(2)
        if s and text[s - 1].isalnum() and not _is_placeholder(pw) and pw.lower() not in _STOP:
            out.append((m.start(2), m.end(2), tag))


def _find_webhooks(text: str, out: list) -> None:
    tag = _tag("webhook")
    for m in _WEBHOOK_RE.finditer(text):
        out.append((m.start(1), m.end(1), tag))


def _find_prose_passwords(text: str, low: str, out: list) -> None:
    """A password told in a sentence or a short `pw:` note. A passphrase is the rest of its
    line; a password is its first word, unless that word just goes on with the sentence."""
    tag = _tag("password")
    pos = 0
    while (m := _PROSE_PW_RE.search(low, pos)) is not None:
        pos = m.start(6) + 1 if m.group(6) is not None else m.end()  # a value may hold the next
        if m.group(5) is not None:  # quoted
            vs, ve = m.start(5), m.end(5)
            if _is_placeholder(text[vs:ve]) or len(text[vs:ve].strip()) < 4:
                continue
        elif m.group(3) or "phrase" in (m.group(1) or ""):  # a passphrase: its line
            vs = m.start(6)
            ve = vs + len(text[vs:m.end(6)].rstrip(" .;,"))
            first = low[vs:ve].split(" ", 1)[0]
            if _is_placeholder(text[vs:ve]) or (m.group(1) and first in _PROSE_STOP):
                continue
        else:  # a password: its first word
            vs = m.start(6)
            word = text[vs:m.end(6)].split(None, 1)[0].rstrip(".,;:!?)\"'")
            ve = vs + len(word)
            lw = word.lower()
            if (len(word) < 4 or lw in _PROSE_STOP or lw in _STOP or _is_placeholder(word)
                    or word[0] in "{[(<|>$" or "=" in word or ":" in word):
                continue  # structure, a reference, or an assignment the rules above judge
            if m.group(2) and (word[0] in "/~." or not (
                    _mixed(word) or any(not c.isalnum() for c in word))):
                continue  # pw/pwd: only what looks like a credential (pwd: /home/x is a folder)
        out.append((vs, ve, tag))


def _find_next_line_values(text: str, low: str, out: list) -> None:
    for m in _NEXT_LINE_RE.finditer(low):
        v = text[m.start(1):m.end(1)]
        if not _is_placeholder(v) and v.lower() not in _STOP and not _KEYLIKE_RE.match(v):
            out.append((m.start(1), m.end(1), _tag("secret")))


def _find_auth(text: str, low: str, out: list) -> None:
    for m in _AUTH_RE.finditer(low):
        scheme = m.group(1)
        if scheme is None:  # Authorization: <raw credential>
            cred = text[m.start(2):m.end(2)]
            if not (_mixed(cred) and any(c.isdigit() for c in cred)):
                continue  # authorization = request.headers.get(...)
            if _IDENT_RE.fullmatch(cred) and "." in cred:
                continue  # authorization = base64.decodebytes(authorization)
            kind = "token"
        else:
            kind = {"basic": "basic-auth", "bearer": "bearer-token"}.get(scheme, "token")
        out.append((m.start(2), m.end(2), _tag(kind)))


def _find_bearer(text: str, low: str, out: list) -> None:
    tag = _tag("bearer-token")
    for m in _BEARER_RE.finditer(low):
        cred = text[m.start(1):m.end(1)]
        if any(c.isdigit() for c in cred) and any(c.isalpha() for c in cred):
            out.append((m.start(1), m.end(1), tag))


def _key_start(text: str, i: int) -> int:
    """Walk back from key-word start ``i`` over the rest of the key name
    (bounded, so a huge minified line cannot make this quadratic)."""
    stop = max(0, i - 128)
    while i > stop and (text[i - 1].isalnum() or text[i - 1] in "_.-"):
        i -= 1
        if text.startswith("--", i - 1) and i - 1 >= stop:
            return i - 1  # "--" starts a flag: ...garbage--password
    return i


def _strong_context(text: str, ks: int, ls: int) -> bool:
    """The key name at ``ks`` is clearly a config key: it starts its line (env
    file, YAML, INI, HTTP header), is quoted (JSON, dict) or is a URL query
    parameter."""
    if ks and text[ks - 1] in "?&\"'":
        return True
    return text[ls:ks].strip().lower() in _LINE_LEAD


def _bare_value_ok(v: str, sep: str, strong: bool, nxt: str, eol: bool) -> bool:
    """Whether an unquoted assignment value is a literal secret.  ``nxt`` is
    the character after it, ``eol`` whether only a comment or blanks follow
    on its line."""
    if len(v) < 6 or _is_placeholder(v):
        return False
    c0 = v[0]
    if c0 in "{[(<|>$":
        return False  # structure, placeholder, $VAR / $(cmd), YAML block scalar
    if c0 in "!&*" and _YAML_REF_RE.fullmatch(v):
        return False  # YAML tag / anchor / alias
    m = _IDENT_RE.match(v)
    if m:
        end = m.end()
        after = v[end] if end < len(v) else nxt
        if after and after in "([":
            return False  # call, subscript, generic annotation
        if end == len(v):  # the whole value is an identifier
            lv = v.lower()
            if lv in _STOP or "." in v:
                return False  # None / True / str / ..., attribute access
            if "_" in v and v == lv:
                return False  # snake_case variable: password=user_password
            digits = any(c.isdigit() for c in v)
            family = any(k in lv for k in _KEY_FAMILY)
            if (family and "_" in v) or _CAMEL_FAMILY_RE.search(v):
                return False  # token=ACCESS_TOKEN, key: PKCS7PrivateKeyTypes (not Passw0rd)
            loose = ("=" in sep and sep != sep.strip()) or not strong or (nxt != "" and nxt in ",)")
            if loose and not digits:
                return False  # token = Comment, password = hashed, f(secret=value, ...)
            if ":" in sep and "=" not in sep and v[0].isupper() and not v.isupper() and not digits:
                return False  # annotation: password: SecretStr
    if _WORDISH_RE.fullmatch(v):
        if not strong and not _mixed(v[1:]):
            return False  # prose: "the secret: nothing", "--password option", "token: re-exchanging"
        if ":" in sep and not eol:
            return False  # "Password: please enter it twice" (YAML values end the line)
    return True


def _quotes_before(text: str, q: str, start: int, end: int) -> int:
    """Number of ``q`` quote characters in text[start:end], apostrophes
    inside words (don't, it's) excluded."""
    n = text.count(q, start, end)
    if n and q == "'":
        n = len(_QUOTE_RE.findall(text, start, end))
    return n


def _cut_unbalanced(v: str) -> str:
    """Cut ``v`` at its first unbalanced closing bracket."""
    if ")" not in v and "]" not in v and "}" not in v:
        return v
    depth = 0
    for i, c in enumerate(v):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if not depth:
                return v[:i]
            depth -= 1
    return v


def _quoted_value_ok(v: str) -> bool:
    """Whether a quoted assignment value is a literal secret."""
    if len(v.strip()) < 4 or _is_placeholder(v) or v.lower() in _STOP:
        return False
    if _CALL_RE.fullmatch(v):
        return False  # `get_token()` quoted as code in prose
    if _NAME_RE.fullmatch(v) and any(k in v.lower() for k in _KEY_FAMILY):
        if "_" in v or "-" in v or not v[1:].islower():
            return False  # a name: "my-secret", "X-Xet-Access-Token", "challengePassword"
    if v.count(" ") >= 2 and _PROSE_PUNCT_RE.search(v):
        return False  # a description: "Use a User Access Token. Prefer ..."
    return True


def _block(text: str, ls: int, vs: int):
    """(start, end) of a YAML block scalar's text: the lines from `vs` indented deeper than
    the key's line at `ls` (4096 characters at most), if its first line is a value."""
    key_indent = len(text[ls:ls + 256]) - len(text[ls:ls + 256].lstrip(" \t"))
    first = text.rfind("\n", 0, vs) + 1
    if vs - first <= key_indent:
        return None  # an empty block: the next line is the next key
    end = text.find("\n", vs)
    end = len(text) if end < 0 else end
    if not _quoted_value_ok(text[vs:end].strip()):
        return None
    ve = vs + len(text[vs:end].rstrip())
    while end < len(text) and end - vs < 4096:
        nxt = text.find("\n", end + 1)
        nxt = len(text) if nxt < 0 else nxt
        line = text[end + 1:nxt]
        if line.strip():
            if len(line) - len(line.lstrip(" \t")) <= key_indent:
                break
            ve = end + 1 + len(line.rstrip())
        end = nxt
    return vs, ve


def _find_assignments(rx, kind: str, text: str, low: str, out: list) -> None:
    pos = 0
    while True:
        m = rx.search(low, pos)
        if m is None:
            return
        # Resume right after the key-word, so a rejected candidate cannot hide
        # the next one (``password password=abc123``).
        pos = m.start(2)
        sep = m.group(2)
        ks = _key_start(text, m.start())
        flag = text.startswith("-", ks)
        if not sep.strip() and not flag:
            continue  # a whitespace separator is only for --flags
        if text.startswith("::", ks - 2):
            continue  # a type path such as AWS::ApiGateway::ApiKey, not a key
        ls = text.rfind("\n", max(0, ks - 256), ks) + 1
        if not ls and ks > 256:
            ls = ks - 256  # no line start nearby: treat as mid-line
        below = "\n" in sep  # the value on a line of its own, under its key
        span = None
        if below and _BLOCK_SEP.match(sep) and _strong_context(text, ks, ls):
            span = _block(text, ls, m.end(2))  # a YAML block scalar (password: |): its lines
        if span is not None:
            vs, ve = span
        elif m.group(5) is not None:  # unquoted value (a block's dedented line: judged so)
            vs = m.start(5)
            huge = m.end(5) - vs > 1024
            if huge:
                # A huge unbroken run (minified data): judge its head only and
                # do not look for further key-words inside it.
                pos = m.end(5)
                v = text[vs:vs + 1024]
            else:
                v = text[vs:m.end(5)]
            if not sep.strip():
                strong = False  # "--password hunter2" vs "--password requires ..."
            else:
                strong = flag or _strong_context(text, ks, ls)
            if ks and text[ks - 1] in "?&":  # URL query: the value ends at & or #
                v = re.split(r"[&#]", v, maxsplit=1)[0]
            v = _cut_unbalanced(v)  # f(token=abc123), whoami(token=token)["name"]
            while v and v[-1] in ",;.:":
                v = v[:-1]  # trailing punctuation of prose / code
            ve = vs + len(v)
            rest = text[ve:ve + 80].split("\n", 1)[0].strip()
            eol = not rest or rest[0] == "#" or (len(rest) == 1 and rest in "\"',;")
            if not _bare_value_ok(v, sep, strong, text[ve:ve + 1], eol):
                continue
            if below and not (eol or rest == ".") or below and _KEYLIKE_RE.match(v):
                continue  # under a key, only a line that is one value: not prose, not a key
            if huge and len(v) == 1024:
                ve = m.end(5)  # nothing cut from the head: the whole run goes
        else:  # quoted value
            vs, ve = m.start(4), m.end(4)
            v = text[vs:ve]
            if not _quoted_value_ok(v):
                continue
            # key inside a string literal: print("Token: " + tok + " more")
            q = m.group(3)[-1]
            own = 1 if m.group(1) and m.group(1)[-1] == q else 0
            if (_quotes_before(text, q, ls, ks) - own) % 2:
                continue
            if below and text[m.end():m.end() + 80].split("\n", 1)[0].strip()[:1] not in \
                    ("", ",", ";", "#", "/"):
                continue  # a quote opening a sentence under "password:", not a value
        if kind == "secret" and "access" in low[m.start():m.start(2)]:
            out.append((vs, ve, _tag("aws-secret")))
        else:
            out.append((vs, ve, _tag(kind)))


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def _lower(text: str) -> str:
    low = text.lower()
    if len(low) != len(text):  # a few non-ASCII letters change length; keep offsets
        low = text.translate(_ASCII_LOWER)
    return low


def _splice(text: str, spans: list) -> str:
    """Replace spans; the leftmost wins an overlap, on a tie the one found first."""
    parts = []
    pos = 0
    for i in sorted(range(len(spans)), key=lambda i: (spans[i][0], i)):
        s, e, r = spans[i]
        if s < pos or e <= s:
            continue
        parts.append(text[pos:s])
        parts.append(r)
        pos = e
    parts.append(text[pos:])
    return "".join(parts)


def redact(text: str) -> str:
    """Return ``text`` with secrets replaced by ``[REDACTED:<kind>]``."""
    if len(text) < 8:
        return text
    low = text.lower()
    if len(low) != len(text):  # a few non-ASCII letters change length; keep offsets
        low = text.translate(_ASCII_LOWER)
    k_hit = "k" in low and _K_GATE_RE.search(low) is not None
    # Three stages, each run on the output of the one before -- exactly what a
    # second call would see, which makes redact() idempotent.  Every gate is
    # one linear scan; a regex gate that hits hands its position to the rule.
    #
    # 1. PEM private key blocks (may span lines and contain anything).
    if k_hit and "private key" in low and "-----BEGIN" in text:
        new = _PEM_RE.sub(_tag("private-key"), text)
        if new != text:
            text, low = new, _lower(new)
    # 2. Provider token formats.
    spans: list = []
    m = "A" in text and _A_RE.search(text)  # 1-char ``in`` is a memchr
    if m:
        _scan(_A_RE, text, m.start(), _judge_a, spans)
    m = ("gh" in text or "github_pat_" in text) and _GH_RE.search(text)
    if m:
        _scan(_GH_RE, text, m.start(), _judge_gh, spans)
    if "xox" in text:
        _scan(_SLACK_RE, text, 0, _judge_slack, spans)
    if "hooks.slack.com/" in text or "/api/webhooks/" in text:
        _find_webhooks(text, spans)
    if "J" in text and "eyJ" in text:
        _scan(_JWT_RE, text, 0, _judge_jwt, spans)
    if k_hit:
        if "sk-" in text:
            _scan(_SK_RE, text, 0, _judge_sk, spans)
        if "k_live_" in text or "k_test_" in text:
            _scan(_STRIPE_RE, text, 0, _judge_stripe, spans)
    if spans:
        text = _splice(text, spans)
        low = _lower(text)
        spans = []
    # 3. Context rules: URL passwords, Authorization / Bearer, assignments.
    if "@" in text and "://" in text:
        _find_url_passwords(text, spans)
    if "authorization" in low:
        _find_auth(text, low, spans)
    if "bearer" in low:
        _find_bearer(text, low, spans)
    if k_hit:
        if "token" in low:
            _find_assignments(_TOKEN_RE, "token", text, low, spans)
        if "api" in low:
            _find_assignments(_APIKEY_RE, "api-key", text, low, spans)
        if "private" in low:
            _find_assignments(_PRIVKEY_RE, "private-key", text, low, spans)
    has_pass = "pass" in low
    if has_pass and _PASS_GATE_RE.search(low):
        _find_assignments(_PASSWORD_RE, "password", text, low, spans)
    if has_pass or "pw" in low:
        _find_prose_passwords(text, low, spans)
    if "\n" in text and _NEXT_LINE_GATE.search(text):
        _find_next_line_values(text, low, spans)
    if "secret" in low:
        _find_assignments(_SECRET_RE, "secret", text, low, spans)
    return _splice(text, spans) if spans else text


def redact_enabled() -> bool:
    """False only when PRIMA_REDACT is 0 / false / no / off (any case)."""
    return flag("PRIMA_REDACT")


def scrub(text: str) -> str:
    """Redact ``text`` unless redaction is disabled with PRIMA_REDACT."""
    return redact(text) if redact_enabled() else text
