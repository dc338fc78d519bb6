"""The reading half's fast paths, each against the slower way it must agree with: what a
transcript line becomes must not depend on which path read it."""
from __future__ import annotations

import json

import orjson
import pytest

from prima_memory.sources import jsonl
from prima_memory.sources.jsonl import JsonlReader, loads_mended, mend_surrogates

# Lines of JSON escapes around lone surrogates, as Claude Code writes them when it cuts a string
# mid-emoji, with the spellings that must be left alone beside them.
SURROGATE_LINES = [
    b'{"t":"a \\ud83d"}',  # a lone high surrogate
    b'{"t":"\\udc00 b"}',  # a lone low one
    b'{"t":"\\uD83D\\uDE00 pair, \\ud83d\\ude00 pair"}',  # valid pairs, either case
    b'{"t":"\\ud83d\\ud83d\\ude00"}',  # a high one before a pair
    b'{"t":"\\ude00\\ud83d"}',  # a pair the wrong way round
    b'{"t":"\\\\ud83d is text"}',  # an escaped backslash: no escape at all
    b'{"t":"\\\\\\ud83d"}',  # an escaped backslash, then a lone escape
    b'{"\\ud800key":"v"}',  # in a key
    b'{"t":"caf\xc3\xa9 \\udbff"}',  # beside UTF-8 text
]


@pytest.mark.parametrize("line", SURROGATE_LINES)
def test_orjson_first_reads_what_mending_first_reads(line):
    """orjson is given the line as it is and the line mended only if it refuses it: the same
    object as mending first, and as the standard library's parser reads the mended line."""
    expected = json.loads(mend_surrogates(line))
    assert loads_mended(orjson.loads, line) == expected
    assert loads_mended(json.loads, line) == expected
    assert orjson.loads(mend_surrogates(line)) == expected


def test_a_line_orjson_refuses_for_a_lone_surrogate_is_mended_and_parsed_again():
    line = b'{"t":"cut mid-emoji \\ud83d"}'
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(line)
    assert loads_mended(orjson.loads, line) == {"t": "cut mid-emoji \ufffd"}


def test_a_line_still_refused_once_mended_raises_the_mended_lines_error():
    line = b'{"t":"\\ud83d" nonsense}'
    with pytest.raises(orjson.JSONDecodeError) as got:
        loads_mended(orjson.loads, line)
    with pytest.raises(orjson.JSONDecodeError) as mended:
        orjson.loads(mend_surrogates(line))
    assert str(got.value) == str(mended.value)


def test_both_readers_read_the_same_objects(tmp_path):
    """A file of every awkward line, read in bulk (orjson first) and not (mended first, the
    standard library's parser): the same objects, the same lines refused."""
    lines = SURROGATE_LINES + [
        b'{"t":"\xff\xfe not UTF-8 \\ud800"}',  # replaced, then mended
        b'{"t":' + b"[" * 3000 + b"]" * 3000 + b"}",  # nested too deeply for either
        b"not JSON \\ud800",
        b"[1, 2]",  # not an object
        b'{"t":"last"}',
    ]
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"\n".join(lines) + b"\n")
    fast = JsonlReader(str(p), bulk=True)
    slow = JsonlReader(str(p), bulk=False)
    assert list(fast) == list(slow)
    assert (fast.bad_lines, fast.end) == (slow.bad_lines, slow.end) == (4, p.stat().st_size)
    assert [x.split(":")[0] for x in fast.problems] == [x.split(":")[0] for x in slow.problems]


def test_a_big_line_is_parsed_by_orjson_and_mended_too(tmp_path, monkeypatch):
    """A line over _CHEAP goes to orjson even outside bulk reads: mended only once refused,
    it reads as the standard library reads it mended."""
    monkeypatch.setattr(jsonl, "_CHEAP", 16)
    line = b'{"t":"' + b"x" * 64 + b' \\ud83d"}'
    p = tmp_path / "t.jsonl"
    p.write_bytes(line + b"\n")
    assert list(JsonlReader(str(p), bulk=False)) == [json.loads(mend_surrogates(line))]


# -- lines skipped where they lie ------------------------------------------------------------------

CLAUDE_LINES = [
    b'{"type":"user","message":{"content":[{"tool_use_id":"t1","type":"tool_result"}]}}',
    b'{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"x"}]}}',
    b'{"type":"assistant","message":{"content":[{"type":"thinking"},{"type":"text","text":"y"}]}}',
    b'{"type":"assistant","message":{"content":[{"type":"thinking"},{"type":"tool_use"}]}}',
    b'{"type":"assistant","message":{"content":[{"type":"text","text":"\\"tool_use_id\\":"}]}}',
    b'{"type":"progress","data":{}}',
    b'{"tool_use_id":"t2","type":"assistant"}',
    b'{"type":"user","message":{"content":"hi"}}',
]


@pytest.mark.parametrize("line", CLAUDE_LINES)
def test_a_line_judged_in_its_buffer_as_copied_out(line):
    """JsonlReader hands skip the chunk and the line's bounds: the keys of the lines around it,
    just outside them, must not count."""
    from prima_memory.sources import claude_code, codex
    claude_code._load_parsing()
    around = b'"type":"user" "tool_use_id": "type":"thinking" "type":"text" "type":"message"'
    for before, after in ((b"", b""), (around, around), (b'{"type":"progress"}\n', around)):
        buf = before + line + after
        start, end = len(before), len(before) + len(line)
        assert claude_code._needless(buf, start, end) == claude_code._needless(line)
        assert codex._needless(buf, start, end) == codex._needless(line)


def test_lines_carried_across_chunks_are_skipped_alike(tmp_path, monkeypatch):
    from prima_memory.sources import claude_code
    claude_code._load_parsing()
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"\n".join(CLAUDE_LINES * 20) + b"\n")
    whole = JsonlReader(str(p), skip=claude_code._needless, bulk=True)
    expected = list(whole)
    assert len(expected) == 20 * sum(not claude_code._needless(x) for x in CLAUDE_LINES)
    for chunk in (7, 64, 100):  # every line spans chunks, or some do
        monkeypatch.setattr(jsonl, "CHUNK", chunk)
        r = JsonlReader(str(p), skip=claude_code._needless, bulk=True)
        assert list(r) == expected and r.end == whole.end


# -- times --------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [
    "2025-10-01T12:34:56.789Z", "2025-10-01T12:34:56Z", "2025-10-01T12:34:56.123456+02:00",
    "2025-10-01", "2025-10-01T12:34:56.789z", "1969-12-31T23:59:59Z", "9999-12-31T23:59:59Z",
    "0001-01-01T00:00:00Z", "2025-02-30T00:00:00Z", "bad", "", None, 5, "Z"])
def test_a_time_reads_as_either_spelling_of_its_zone_reads(value):
    """parse_ts tries the text as it is, then with "Z" spelled "+00:00", and takes a time only
    in [1970, 9999-12-30): what it always did, with the second text made only when needed."""
    from datetime import datetime
    from prima_memory.sources.text import LAST_TS, parse_ts
    expected = None
    if isinstance(value, str) and value:
        for text in (value, value.replace("Z", "+00:00")):
            try:
                ts = datetime.fromisoformat(text).timestamp()
            except ValueError:
                continue
            expected = ts if 0 < ts < LAST_TS else None
            break
    assert parse_ts(value) == expected


# -- tool calls ---------------------------------------------------------------------------------

BRIEF_TEXTS = ["ls -la", "a\tb\nc", "nul\x00 and bel\x07 and del\x7f and c1\x85\x9f", "zero\u200bwidth",
               "nbsp\u00a0here", "lone \ud83d surrogate", "emoji \U0001F600", "caf\u00e9",
               "line\u2028sep", "token=ghp_" + "a" * 36 + " and more", "x" * 5000, " ", ""]


@pytest.mark.parametrize("text", BRIEF_TEXTS)
def test_brief_as_it_always_read(text):
    """brief skips the UTF-8 check of an ASCII text and the control-character regex of a
    printable one: what it returns is what the full treatment returns."""
    from prima_memory.redact import redact
    from prima_memory.sources import tool_calls
    from prima_memory.sources.text import head, line_cut
    expected = ""
    if text:
        t = redact(line_cut(text, tool_calls._WINDOW, tool_calls._WINDOW))
        try:
            t.encode("utf-8")
        except UnicodeEncodeError:
            t = t.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        expected = head(tool_calls._CONTROL.sub("\ufffd", " ".join(t.split())), 200)
    assert tool_calls.brief(text, 200, redact) == expected


def test_a_tool_name_kept_for_a_file_is_stored_as_if_cleaned_each_time():
    from prima_memory.redact import redact
    from prima_memory.sources import tool_calls

    def fields(c):
        return [getattr(c, s) for s in type(c).__slots__]
    names: dict = {}
    for name in ["Bash", "Bash", "ghp_" + "b" * 36, "ghp_" + "b" * 36, "", "a\x00b", "WebSearch"]:
        for _ in range(2):
            kept = tool_calls.claude_code(name, {"command": "ls"}, redact, 1.0, "k", False, "c",
                                          names)
            fresh = tool_calls.claude_code(name, {"command": "ls"}, redact, 1.0, "k", False, "c")
            assert fields(kept) == fields(fresh)
    assert names["ghp_" + "b" * 36] == "[REDACTED:github-token]"


# -- records, pickled to the writer -------------------------------------------------------------

def test_records_pickle_as_their_fields():
    import pickle

    from prima_memory.records import FileChange, Message, SessionDelta, ToolCall
    d = SessionDelta("s", "claude-code", "[transcript]")
    d.messages.append(Message("k", "assistant", "t\ud83d", 1.5, True, "u"))
    d.messages.append(Message("k2", "user", "", None))
    d.file_changes.append(FileChange("/a", "Edit", "why", 2.0, "k"))
    d.tool_calls.append(ToolCall("Bash", "ls", "list", 3.0, "k", True, "c1", "command"))
    d.tool_calls.append(ToolCall("tool", "", ""))
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(d, protocol=protocol))
        for mine, theirs in ((d.messages, back.messages), (d.file_changes, back.file_changes),
                             (d.tool_calls, back.tool_calls)):
            assert [[getattr(x, s) for s in type(x).__slots__] for x in mine] == \
                [[getattr(y, s) for s in type(y).__slots__] for y in theirs]
            assert all(type(x) is type(y) for x, y in zip(mine, theirs))
