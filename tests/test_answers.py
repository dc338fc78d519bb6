"""Answers a user can trust (#20): a question typed as a sentence finds the session it means,
and a query about nothing in the history finds nothing. Through the real CLI and model."""
from __future__ import annotations

import importlib
import time

import pytest

from conftest import Env

DAY = 86400
OLD = time.time() - 40 * DAY
TARGET = "7a7a7a7a-0000-4000-8000-000000000001"
CHATTY = "c0c0c0c0-0000-4000-8000-000000000002"

# Everyday chat, as a long session is full of: every filler word of the question below, and
# its subject words in passing, never its subject.
CHAT = [
    ("ok, when did we last look at this? did we fix the thing we did before?",
     "We did look at it last week, when we went through the build. I think the thing you mean "
     "is the flaky step, and we did fix it then; the rest was fine."),
    ("can you redirect the output of the build to a file so we keep it",
     "Sure: the build now writes its output to build.log, and the terminal shows a summary."),
    ("when we log in to the vpn it is slow, did we ever fix that?",
     "We did not fix it: the login to the VPN is slow because of the identity provider, which "
     "is outside this repository."),
    ("what did we decide about the changelog format",
     "We decided to keep one line per change, newest first, with the issue number at the end."),
]


def _history(env, chat=CHAT):
    t = env.transcript(TARGET, start=OLD)
    t.exchange("After signing in, the browser bounces straight back to the sign-in page",
               "Fixed. The session cookie was SameSite=Strict, so the browser dropped it on "
               "the identity provider's redirect and the app saw an anonymous visitor on the "
               "callback; the login page sent it round again. The cookie is SameSite=Lax now, "
               "and the login redirect lands on the dashboard.")
    c = env.transcript(CHATTY, start=OLD + DAY)
    for i in range(6):
        for prompt, reply in chat:
            c.exchange(f"{prompt} ({i})", reply)


def _ids(results) -> list[str]:
    return [r["session_id"] for r in results]


def test_a_question_is_matched_on_its_subject_not_its_filler(env):
    """Keyword search wanted every word of "when did we fix the login redirect?", "when",
    "did" and "redirect?" included: the session that fixed it has none of those."""
    _history(env, [CHAT[0], CHAT[3]])  # (filler, and not the question's subject)
    got = env.search("when did we fix the login redirect?")
    assert _ids(got)[:1] == [TARGET], got


def test_a_question_ranks_the_session_it_means_above_one_full_of_its_words(env):
    """The chatty session holds every word of the question, filler included; rescaled to 100
    points, that keyword-only match outranked the session found by meaning."""
    _history(env)
    for mode in ("combined", "semantic"):
        got = env.json("search", "when did we fix the login redirect", "--mode", mode)
        assert got["warnings"] == [] and _ids(got["results"])[:1] == [TARGET], (mode, got)
        assert got["results"][0]["score_kind"] in ("relevance", "similarity")
        assert 0 < got["results"][0]["score"] <= 100
    text = env.run("search", "when did we fix the login redirect").stdout
    assert "match " in text and "%]" in text, text  # a score a person can read


def _documented_history(env, n: int = 40) -> None:
    """Sessions whose replies are text people wrote: the standard library's docstrings."""
    names = ["argparse", "base64", "bisect", "calendar", "collections", "configparser", "csv",
             "dataclasses", "datetime", "decimal", "difflib", "email", "fnmatch", "fractions",
             "functools", "getopt", "gzip", "hashlib", "heapq", "hmac", "html", "http",
             "inspect", "ipaddress", "json", "logging", "mimetypes", "operator", "os", "pathlib",
             "pickle", "queue", "random", "shlex", "shutil", "sqlite3", "statistics", "string",
             "tarfile", "textwrap", "threading", "timeit", "uuid", "zipfile"][:n]
    for i, name in enumerate(names):
        doc = (importlib.import_module(name).__doc__ or "").strip()
        t = env.transcript(f"d0c{i:05d}-0000-4000-8000-{i:012d}", start=OLD + i * 3600)
        t.exchange(f"What does the {name} module do?", doc[:3000] or f"{name} has no docstring.")


@pytest.fixture(scope="module")
def documented(tmp_path_factory) -> Env:
    """One documented history for the tests that only search it: indexed and embedded once."""
    env = Env(tmp_path_factory.mktemp("documented"))
    _documented_history(env)
    return env


@pytest.mark.parametrize("query", ["zxqv blorft", "guacamole hummus avocado",
                                   "ukulele chords for the wedding"])
def test_a_query_about_nothing_in_the_history_finds_nothing(documented, query):
    """Noise scores 0.2-0.3 against some window of any history: one absolute floor let it
    through. A match must stand out from the query's own background."""
    env = documented
    for mode in ("combined", "semantic", "keyword"):
        got = env.json("search", query, "--mode", mode)
        assert got["results"] == [], (mode, got["results"][:2])
    p = env.run("search", query)
    assert p.returncode == 0 and f'No session matches "{query}".' in p.stdout, p.stdout
    assert env.json("similar", query)["results"] == []


def test_a_question_about_the_history_is_still_answered_beside_nothing(documented):
    env = documented
    got = env.json("search", "how did we read and write comma separated files")["results"]
    assert got and got[0]["title"] == "What does the csv module do?", got[:2]


@pytest.mark.parametrize("query", ["???", "the", "when did we", "— ? —", "’s"])
def test_a_query_of_filler_or_punctuation_alone_is_taken_as_typed(env, query):
    """Filler is dropped only when something else is left: a query of nothing else still means
    its words (the seed's rule), and punctuation alone is searched literally."""
    _history(env, [CHAT[0]])
    for mode in ("keyword", "combined"):
        p = env.run("search", query, "--mode", mode, "--json")
        assert p.returncode == 0, p.stderr
    got = env.search("when did we")
    assert _ids(got) == [CHATTY]  # every word is filler: all of them must match, as typed
