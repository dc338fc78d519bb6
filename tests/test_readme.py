"""The README a newcomer reads: short, the two commands first, every command it shows accepted as
written, its links alive, and CI running exactly its test command."""
from __future__ import annotations

import re
import shlex

from conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _blocks() -> list[str]:
    return re.findall(r"```[a-z]*\n(.*?)```", README, re.S)


def test_short_with_the_two_commands_first():
    assert len(README.splitlines()) <= 150
    first = [ln.split("#")[0].strip() for ln in _blocks()[0].splitlines()]
    assert first == ["./install.sh", _test_command()]
    assert README.index("```") < README.index("## ")  # before any section


def _test_command() -> str:
    return next(ln.split("#")[0].strip() for ln in _blocks()[0].splitlines()
                if "test" in ln)


def test_ci_runs_exactly_the_readme_test_command():
    steps = [ln.strip() for ln in (REPO / ".ci" / "run").read_text().splitlines()
             if ln.strip() and not ln.lstrip().startswith("#")]
    assert steps[-1] == _test_command()


def test_every_link_to_a_file_exists():
    links = re.findall(r"\]\(([^)#]+)\)", README)
    assert links
    for link in links:
        if "://" not in link:
            assert (REPO / link).exists(), link


def test_every_command_shown_is_accepted_as_written():
    from prima_memory import cli
    from prima_memory.timeparse import parse_when
    shown = [ln.split("#")[0].strip() for ln in README.splitlines()
             if ln.startswith("$ prima-memory ")]
    # placeholders (<id>, <an error>) stand for one word
    shown += [re.sub(r"<[^>]*>", "x", m) for m in re.findall(r"`(prima-memory [^`]+)`", README)
              if "COMMAND" not in m]
    assert len(shown) >= 6
    parser = cli._parser()
    for line in shown:
        argv = shlex.split(line.removeprefix("$ "))[1:]
        args = parser.parse_args(cli._attach_slices(argv))
        for opt in ("since", "until"):
            if getattr(args, opt, None):
                parse_when(getattr(args, opt))


def _shape(text: str) -> str:
    """A printed line with what differs from one history to another made alike: ids, digits,
    the folder a `cd` goes to."""
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "ID", text)
    text = re.sub(r"cd \S.* && claude", "cd DIR && claude", text)
    return re.sub(r"\d+", "9", text)


def test_the_search_example_is_what_the_tool_prints(env):
    """(a bug: the README's search example left out the label every hit starts with, and its
    demo printed points where the README showed "match %")"""
    import datetime
    block = next(b for b in _blocks() if b.startswith("$ prima-memory search"))
    command, *shown = block.rstrip("\n").splitlines()
    # (10 o'clock local, 8 days ago: an hour's session never crosses midnight, whatever the hour
    # the tests run; at 23:10 its span printed both dates)
    morning = datetime.datetime.combine(datetime.date.today() - datetime.timedelta(days=8),
                                        datetime.time(10, 0))
    t = env.transcript("1a2b3c4d-5e6f-4a1b-9c2d-3e4f5a6b7c8d", start=morning.timestamp(),
                       branch="fix/oauth-cookie")
    t.exchange("Fix login redirect loop after OAuth callback",
               "The session cookie was set with SameSite=Strict, so the browser dropped it on "
               "the callback.")
    t.t += 3600  # (a session of an hour: its span shows both ends, as the example's does)
    t.exchange("thanks", "Glad it works.")
    printed = env.run(*shlex.split(command)[2:]).stdout.splitlines()  # (less "$ prima-memory")
    assert [_shape(x) for x in printed[:len(shown)]] == [_shape(x) for x in shown], printed
