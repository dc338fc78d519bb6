"""Issue #21's rough edges, each as a user meets it: titles cut after a whole word and left as
written, honest `index` counts, dates as people say them, help on every option, paths relative
to the workspace everywhere, `files --limit`, one way to show a session's time, and extract hits
dated by their session."""
from __future__ import annotations

import json
import os
import re
import time

import apsw
import pytest

from conftest import Env, raw_index
from prima_memory import cli, mcp_server, titles, timeparse, wording
from prima_memory.sources import extract_reader
from test_hooks import payload, run_hook


def local(y: int, mo: int, d: int, h: int = 0, mi: int = 0) -> float:
    return time.mktime((y, mo, d, h, mi, 0, 0, 0, -1))


def sid(n: int) -> str:
    return f"{n:08x}-2121-4000-8000-{n:012x}"


def session(env: Env, n: int, start: float, prompt: str, reply: str = "Done.", **kw):
    """A session whose first prompt is stamped at `start` exactly (the builder adds its step)."""
    t = env.transcript(sid(n), start=start - 30, **kw)
    t.exchange(prompt, reply)
    return t


# -- titles ---------------------------------------------------------------------------------------

LONG = ("please make the retry limits of the payment webhook handler configurable per merchant "
        "account and per environment")


def test_a_long_first_prompt_is_cut_after_a_whole_word_with_an_ellipsis(env):
    session(env, 1, local(2026, 3, 2, 9), LONG)
    title = env.json("recent")["sessions"][0]["title"]
    said = "M" + LONG.removeprefix("please m")
    assert title.endswith("…") and len(title) <= titles.MAX_TITLE, title
    kept = title[:-1]
    assert said.startswith(kept) and said[len(kept)] == " ", f"cut inside a word: {title!r}"
    assert len(kept) > titles.MAX_TITLE // 2


@pytest.mark.parametrize("prompt", ["test_payment_webhook fails on retries",
                                    "npm run build breaks after the upgrade",
                                    "src/app.py crashes on start",
                                    "parseConfig ignores the env override",
                                    "v2 of the api drops fields",
                                    "make --dry-run prints nothing"])
def test_an_identifier_or_a_command_first_is_left_as_written(prompt):
    assert titles.clean_first_prompt(prompt) == prompt
    assert titles.clean_first_prompt("can you " + prompt) == prompt


def test_a_plain_first_word_is_capitalised_as_a_titles_is():
    assert titles.clean_first_prompt("please fix the login bug") == "Fix the login bug"
    assert titles.clean_first_prompt("don't drop the cache") == "Don't drop the cache"


def test_a_cut_keeps_whole_words_and_cuts_one_endless_word_inside():
    assert wording.cut("short enough", 80) == "short enough"
    assert wording.cut("alpha beta gamma", 12) == "alpha beta…"
    assert wording.cut("alpha beta, gamma", 13) == "alpha beta…"  # no dangling comma
    url = "https://example.com/" + "a" * 200
    assert wording.cut(url, 80) == url[:79] + "…"
    assert wording.one_line("a  b\n c " * 40, 20).endswith("…")
    assert len(titles.normalize("word " * 100)) <= titles.MAX_STORED


def test_titles_an_older_version_stored_are_made_again(env):
    """An index made before #21 holds "Test_payment_webhook fails on retries of the payment
    provider when the merch" (capitalised, cut mid-word): the next command titles it anew."""
    prompt = ("test_payment_webhook fails on retries of the payment provider when the merchant "
              "account is suspended")
    session(env, 1, local(2026, 3, 2, 9), prompt)
    env.json("index")
    old = prompt[0].upper() + prompt[1:80]
    db = raw_index(env.data / "index.db")
    with db:
        db.execute("UPDATE sessions SET title_first = ?", (old,))
        db.execute("DELETE FROM meta WHERE key = 'rules'")
    db.close()
    title = env.json("recent")["sessions"][0]["title"]
    assert title == titles.clean_first_prompt(prompt) and title.startswith("test_payment_webhook")
    assert title.endswith("…") and prompt.startswith(title[:-1]), title


# -- index counts --------------------------------------------------------------------------------

def test_index_counts_the_files_it_left_unchanged(env):
    ts = [session(env, n, local(2026, 3, n, 9), f"question {n}") for n in (1, 2, 3)]
    first = env.run("index").stdout
    assert first.startswith("read 3 of 3 files"), first
    again = env.json("index")
    assert (again["files_seen"], again["files_read"], again["sessions_updated"]) == (3, 0, 0)
    assert env.run("index").stdout.strip() == "3 files, none changed"
    ts[0].exchange("one more question", "One more answer.")
    assert re.match(r"read 1 of 3 files \(0\.0 MB\), 1 session updated$",
                    env.run("index").stdout.strip())


# -- dates ---------------------------------------------------------------------------------------

NOW = local(2026, 11, 25, 15, 30)  # a Wednesday


@pytest.mark.parametrize("text, expected", [
    ("last week", local(2026, 11, 18, 15, 30)),
    ("since last week", local(2026, 11, 18, 15, 30)),
    ("last month", local(2026, 10, 25, 15, 30)),
    ("3 days ago", local(2026, 11, 22, 15, 30)),
    ("2 weeks ago", local(2026, 11, 11, 15, 30)),
    ("an hour ago", local(2026, 11, 25, 14, 30)),
    ("past 2 hours", local(2026, 11, 25, 13, 30)),
    ("yesterday", local(2026, 11, 24)),
    ("today", local(2026, 11, 25)),
    ("monday", local(2026, 11, 23)),
    ("since Monday", local(2026, 11, 23)),
    ("last monday", local(2026, 11, 23)),
    ("wednesday", local(2026, 11, 25)),
    ("last wednesday", local(2026, 11, 18)),
    ("this week", local(2026, 11, 23)),
    ("this month", local(2026, 11, 1)),
    ("2026-01-02", local(2026, 1, 2)),
    ("since 2026-01-02T10:00", local(2026, 1, 2, 10)),
    ("1w", local(2026, 11, 18, 15, 30)),
    ("3d", local(2026, 11, 22, 15, 30)),
])
def test_since_takes_what_people_say(text, expected):
    assert timeparse.parse_when(text, now=NOW) == pytest.approx(expected)


def test_a_day_given_as_until_runs_to_its_end():
    assert timeparse.parse_when("yesterday", now=NOW, end_of_day=True) == pytest.approx(
        local(2026, 11, 25) - 0.001)
    assert timeparse.parse_when("monday", now=NOW, end_of_day=True) == pytest.approx(
        local(2026, 11, 24) - 0.001)


def test_a_month_ago_from_the_31st_is_the_months_last_day():
    assert timeparse.parse_when("last month", now=local(2026, 3, 31, 10)) == local(2026, 2, 28, 10)


@pytest.mark.parametrize("text", ["week", "a day", "next week", "blursday", "since", "last"])
def test_words_it_does_not_know_are_refused_saying_what_it_takes(text):
    with pytest.raises(ValueError, match="not a date.*3 days ago"):
        timeparse.parse_when(text, now=NOW)


def test_search_and_digest_take_natural_dates(env):
    now = time.time()
    session(env, 1, now - 3 * 86400, "the walrus cache warms slowly")
    session(env, 2, now - 10 * 86400, "the walrus cache warms too fast")
    assert [r["session_id"] for r in env.search("walrus", "--since", "last week")] == [sid(1)]
    assert [r["session_id"] for r in env.search("walrus", "--until", "a week ago")] == [sid(2)]
    assert env.json("digest", "--since", "2 weeks ago")["sessions"] == 2
    p = env.run("search", "walrus", "--since", "next blursday", check=False)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    assert "not a date" in p.stderr and "3 days ago" in p.stderr and "last week" in p.stderr


def test_the_mcp_tools_describe_the_same_forms():
    assert mcp_server.WHEN_FORMS == timeparse.ACCEPTED


# -- help ----------------------------------------------------------------------------------------

def test_every_option_of_every_command_has_help():
    import argparse

    missing = []

    def walk(parser, where):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helped = {a.dest for a in action._choices_actions if a.help}
                missing.extend(f"{where} {name} (the command)" for name in action.choices
                               if name not in helped)
                for name, sub in action.choices.items():
                    walk(sub, f"{where} {name}")
            elif action.help is None:
                missing.append(f"{where} {'/'.join(action.option_strings) or action.dest}")

    walk(cli._parser(), "prima-memory")
    assert not missing, missing


def test_only_the_command_given_is_built_and_every_command_is_known():
    """The CLI builds the parser of the command given alone (cli._command_in): its list of
    commands must be the parser's, or a command would parse as unknown."""
    import argparse
    from prima_memory import cli
    subs = next(a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert sorted(subs.choices) == sorted(cli.COMMANDS)
    assert cli._command_in(["--json", "--workspace", "search", "recent", "-n", "2"]) == "recent"
    assert cli._command_in(["serch", "x"]) is None and cli._command_in(["-h"]) is None
    only = cli._parser("search")
    assert only.parse_args(["search", "x", "--all-projects"]).all_projects


def test_help_says_what_since_and_mode_take(env):
    text = " ".join(env.run("search", "--help").stdout.split())
    assert "keyword:" in text and "semantic:" in text and "3 days ago" in text, text
    assert "default 50" in " ".join(env.run("files", "--help").stdout.split())


# -- paths relative to the workspace --------------------------------------------------------------

def changed_files(env: Env, n: int, start: float, minutes: float = 0):
    """A session that writes src/app.py and docs/notes.md in the workspace, and a file outside
    it; `minutes` long."""
    t = env.transcript(sid(n), start=start - 30)
    t.user("wire the zeppelin exporter")
    t.tool("Write", {"file_path": str(env.ws / "src" / "app.py"), "content": "x"},
           text="Add the exporter.")
    t.tool("Edit", {"file_path": str(env.ws / "docs" / "notes.md"), "old_string": "a",
                    "new_string": "b"}, text="Note it.")
    t.tool("Write", {"file_path": "/etc/zeppelin.conf", "content": "x"}, text="Configure it.")
    if minutes:
        t.user("and finish it", step=minutes * 60)
    t.reply("Exported.")
    return t


def test_show_summary_and_digest_give_paths_relative_to_the_workspace(env):
    changed_files(env, 1, local(2026, 3, 4, 10))
    shown = env.run("show", sid(1), "--detail", "summary").stdout
    assert "changed src/app.py (Write)" in shown and "changed docs/notes.md (Edit)" in shown
    assert "changed /etc/zeppelin.conf (Write)" in shown  # outside it: as recorded
    assert str(env.ws) + "/src" not in shown
    data = env.json("show", sid(1), "--detail", "summary")["session"]["files_changed"]
    assert data[0]["path"] == str(env.ws / "src" / "app.py")  # the data keeps what was recorded
    assert data[0]["relative"] == "src/app.py"
    digest = env.run("digest", "--since", "2026-03-01", "--until", "2026-03-31").stdout
    assert "- src/app.py (1 session)" in digest and str(env.ws) + "/src" not in digest, digest
    most = env.json("digest", "--since", "2026-03-01")["files_most_changed"]
    assert {f["path"] for f in most} >= {str(env.ws / "src" / "app.py")}


def test_checkpoint_briefing_and_extract_give_paths_relative_to_the_workspace(env):
    changed_files(env, 1, local(2026, 3, 4, 10), minutes=40)  # long enough for an extract
    env.run("index")
    (extract,) = (env.data / "extracts").rglob("*-session-extract.md")
    assert run_hook(env, "pre-compact", payload(env, "pre-compact", sid(1))).rc == 0
    (checkpoint,) = (env.data / "extracts").rglob("*-checkpoint.md")
    for path in (extract, checkpoint):
        text = path.read_text(encoding="utf-8")
        assert "| `src/app.py` | Write |" in text and "| `/etc/zeppelin.conf` |" in text, text
        assert str(env.ws) + "/src" not in text
    brief = run_hook(env, "session-start", payload(env, "session-start", sid(9))).out
    assert "files changed: src/app.py, docs/notes.md, /etc/zeppelin.conf" in brief, brief


# -- files --limit ---------------------------------------------------------------------------------

def test_files_lists_at_most_limit_sessions_and_says_how_many_more(env):
    for i in range(5):
        t = env.transcript(sid(i + 1), start=local(2026, 3, 5, 10 + i))
        t.user(f"write module {i}")
        t.tool("Write", {"file_path": str(env.ws / f"m{i}.py"), "content": "x"}, text=f"M{i}.")
        t.reply("Written.")
    out = env.run("files", ".", "--limit", "2").stdout
    assert [ln.split()[0] for ln in out.splitlines() if ln.startswith("   m")] == \
        ["m4.py", "m3.py"]
    assert out.rstrip().endswith("… 3 more sessions (use --limit or --skip)"), out
    data = env.json("files", "--limit", "2", "--skip", "1")
    assert [f["relative"] for s in data["sessions"] for f in s["files"]] == ["m3.py", "m2.py"]
    assert data["more"] == 2
    whole = env.run("files").stdout
    assert whole.count("m4.py") == 1 and "more (use" not in whole
    assert env.run("files", "--limit", "0", check=False).returncode == 2


def test_files_shows_fifty_by_default(env):
    for i in range(cli.FILES_SHOWN + 3):
        t = env.transcript(sid(i + 1), start=local(2026, 3, 5, 10) + 60 * i)
        t.user(f"write module {i}")
        t.tool("Write", {"file_path": str(env.ws / f"m{i}.py"), "content": "x"})
    data = env.json("files")
    assert len(data["sessions"]) == cli.FILES_SHOWN and data["more"] == 3
    assert data["total_sessions"] == data["total_changes"] == cli.FILES_SHOWN + 3


# -- one way to show a session's time ------------------------------------------------------------

def test_every_listing_shows_a_sessions_start_and_end_alike(env):
    t = session(env, 1, local(2026, 3, 10, 10), "the okapi importer drops rows")
    t.user("and the okapi exporter too", step=90 * 60 - 10)
    t.reply("Both fixed.")
    night = session(env, 2, local(2026, 3, 10, 23, 50), "okapi at midnight")
    night.user("still okapi", step=30 * 60 - 10)
    night.reply("Done.")
    day, cross = "2026-03-10 10:00 – 11:30", "2026-03-10 23:50 – 2026-03-11 00:20"
    for args in (("search", "okapi"), ("recent",), ("recall", "okapi"), ("recall",)):
        out = env.run(*args).stdout
        assert day in out and cross in out, (args, out)
    assert day in env.run("show", sid(1)).stdout
    digest = env.run("digest", "--since", "2026-03-01", "--until", "2026-03-31").stdout
    assert "- 10:00 – 11:30  " in digest and "- 23:50 – 2026-03-11 00:20  " in digest, digest
    got = env.json("recent")["sessions"]
    assert all(d["started_at"] and d["ended_at"] for d in got)


def test_the_briefing_shows_the_span_too(env):
    t = session(env, 1, local(2026, 3, 10, 10), "the okapi importer drops rows")
    t.user("and the exporter", step=90 * 60 - 10)
    t.reply("Both fixed.")
    brief = run_hook(env, "session-start", payload(env, "session-start", sid(9))).out
    assert "- 2026-03-10 10:00 – 11:30 (branch main) " in brief, brief


def test_span_shows_the_end_date_only_when_it_differs():
    a = local(2026, 11, 30, 14, 2)
    assert timeparse.span(a, a + 68 * 60) == "2026-11-30 14:02 – 15:10"
    assert timeparse.span(a, a + 11 * 3600) == "2026-11-30 14:02 – 2026-12-01 01:02"
    assert timeparse.span(a, a + 20) == timeparse.span(a, None) == "2026-11-30 14:02"
    assert timeparse.span(timeparse.iso_utc(a), timeparse.iso_utc(a + 3600)) == \
        "2026-11-30 14:02 – 15:02"
    assert timeparse.span(None, a) == "—"


# -- extract hits dated by their session ----------------------------------------------------------

def deep_hits(env: Env, word: str) -> dict:
    return {r["label"]: r for r in env.json("search", word, "--deep", "--mode", "keyword")["results"]}


def test_an_extract_hit_is_dated_by_its_session_not_by_its_file(env):
    t = session(env, 1, local(2025, 2, 3, 9), "the narwhal ledger is off by one")
    t.user("and the narwhal totals", step=40 * 60 - 10)
    t.reply("Both reconciled.")
    env.run("index")
    assert list((env.data / "extracts").rglob("*-session-extract.md")), "no extract written"
    hits = deep_hits(env, "narwhal")
    kept, extract = hits["[transcript]"], hits["[extract]"]
    shown = timeparse.local_iso
    assert shown(extract["started_at"]) == shown(kept["started_at"]) == "2025-02-03 09:00"
    assert shown(extract["ended_at"]) == shown(kept["ended_at"]) == "2025-02-03 09:40"
    # an index made before #21 dated it by the file: the next deep search dates it anew
    db = apsw.Connection(str(env.data / "index.db"))
    with db:
        db.execute("UPDATE sessions SET started_at = ?, ended_at = ? WHERE source = 'extract'",
                   (time.time(), time.time()))
        db.execute("UPDATE meta SET value = '1' WHERE key = 'rules'")
    db.close()
    assert shown(deep_hits(env, "narwhal")["[extract]"]["started_at"]) == "2025-02-03 09:00"


def test_an_older_extract_header_gives_its_sessions_times_too():
    start, end = extract_reader.session_times("- Session ID: `x`\n- Date: 2025-02-03 09:00\n"
                                              "- Duration: 1h 05m\n- Branch: main")
    assert (start, end) == (local(2025, 2, 3, 9), local(2025, 2, 3, 10, 5))
    assert extract_reader.session_times("- Date: 2025-02-03 23:50 – 2025-02-04 00:20") == (
        local(2025, 2, 3, 23, 50), local(2025, 2, 4, 0, 20))


@pytest.mark.parametrize("header", ["- Date: 9999-99-99 99:99", "- Date: 0000-01-01 00:00",
                                    "- Date: 2025-02-03 09:00 – 08:00",
                                    "- Date: 2025-02-03 09:00\n- Duration: 999999h 99m",
                                    "no header at all"])
def test_a_hand_made_extract_with_odd_dates_is_still_found(env, header):
    folder = env.data / "extracts" / "my-project"
    folder.mkdir(parents=True)
    path = folder / "2025-02-03-0900-session-extract.md"
    path.write_text(f"# Session extract\n\n{header}\n\n## The quokka plan\n\nquokka notes\n",
                    encoding="utf-8")
    os.utime(path, (local(2025, 5, 6, 7), local(2025, 5, 6, 7)))
    session(env, 1, local(2026, 3, 1), "unrelated")
    hit = deep_hits(env, "quokka")["[extract]"]
    assert hit["title"] == "The quokka plan"
    if header == "no header at all":
        assert timeparse.local_iso(hit["started_at"]) == "2025-05-06 07:00"
    json.dumps(hit)
