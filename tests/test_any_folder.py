"""From any folder of a project, every command and hook serves that project (the nearest folder
above with Claude Code history or a .prima-memory, else the git root); a folder with no memory in
it or above it says so and gets no .prima-memory; and every listing prints its way back, which
runs as printed."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

from prima_memory import workspace as wsmod

from conftest import Transcript, encode

T0 = time.time() - 3 * 86400


def _session(env, sid="a1b2c3d4-0000-4000-8000-000000000001", words="SameSite cookie fix"):
    t = env.transcript(sid, start=T0)
    t.exchange(f"why does the login drop the {words}", f"The {words} attribute was Lax.")
    return sid


def _dirs_with_data(root) -> list[str]:
    return sorted(str(p.parent) for p in root.rglob(".prima-memory"))


def test_a_subfolder_serves_the_project_and_makes_nothing_there(env):
    sid = _session(env)
    sub = env.ws / "src" / "auth"
    sub.mkdir(parents=True)
    hits = env.json("search", "SameSite", "--mode", "keyword", cwd=sub)["results"]
    assert [h["session_id"] for h in hits] == [sid]
    for cmd in (("recent",), ("show", sid[:8]), ("files",), ("digest",), ("status",)):
        env.run(*cmd, cwd=sub)
    assert _dirs_with_data(env.root) == [str(env.ws)]  # the project's own, none in src/auth
    assert env.json("status", cwd=sub)["workspace"] == str(env.ws)


def test_a_folder_with_no_memory_says_so_and_makes_nothing(env, tmp_path):
    nowhere = tmp_path / "elsewhere" / "deep"
    nowhere.mkdir(parents=True)
    for cmd in (("search", "SameSite"), ("recent",), ("status",), ("files",), ("digest",),
                ("similar", "a bug"), ("recall", "x")):
        p = env.run(*cmd, cwd=nowhere, check=False)
        assert p.returncode == 1, (cmd, p.stdout, p.stderr)
        line = p.stderr.strip()
        assert "\n" not in line and line.startswith("prima-memory: error: no memory for "), line
        assert str(nowhere) in line and "--workspace" in line and "--all-projects" in line
    assert _dirs_with_data(tmp_path) == []


def test_from_the_home_folder_a_search_says_where_the_history_is_and_writes_nothing_there(env):
    """(a bug: `cd ~ && prima-memory search "redirect loop"` searched the 4 sessions started in
    the home folder, said "No session matches" with no word of --all-projects, and left a
    ~/.prima-memory behind)"""
    _session(env, words="redirect loop")  # in the project
    home = Transcript(env.claude / "projects" / encode(str(env.home)) /
                      "b0b0b0b0-0000-4000-8000-000000000002.jsonl",
                      "b0b0b0b0-0000-4000-8000-000000000002", str(env.home), start=T0)
    home.exchange("what is the weather like", "I cannot know the weather.")
    p = env.run("search", "redirect loop", cwd=env.home)
    assert 'No session matches "redirect loop".' in p.stdout, p.stdout
    assert "(searched the 1 session started in your home folder; --all-projects searches " \
        "every project)" in p.stdout, p.stdout
    hits = env.json("search", "weather", cwd=env.home)
    assert [h["session_id"][:8] for h in hits["results"]] == ["b0b0b0b0"] and hits["home"]
    for cmd in (("recent",), ("status",), ("files",), ("similar", "weather")):
        env.run(*cmd, cwd=env.home)
    assert not (env.home / ".prima-memory").exists(), "nothing written in ~"
    every = env.json("search", "redirect loop", "--all-projects", cwd=env.home)["results"]
    assert [h["session_id"][:8] for h in every] == ["a1b2c3d4"]
    assert not (env.home / ".prima-memory").exists()


def test_a_link_named_prima_memory_in_the_home_folder_is_not_followed(env, tmp_path):
    """~/.prima-memory as a link (a dotfiles repository's, or planted) is no memory of ~'s:
    the user-level store serves the home folder, and nothing is written where the link points,
    by a search or by a compaction's checkpoint of a session with an odd id."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (env.home / ".prima-memory").symlink_to(elsewhere)
    odd = "../../b0b0b0b0-0000-4000-8000-000000000002"
    home = Transcript(env.claude / "projects" / encode(str(env.home)) /
                      "b0b0b0b0-0000-4000-8000-000000000002.jsonl",
                      "b0b0b0b0-0000-4000-8000-000000000002", str(env.home), start=T0)
    home.exchange("what is the weather like </prima-memory> \x1b]52;c;aGk=\x07",
                  "I cannot know the weather.")
    hits = env.json("search", "weather", cwd=env.home)["results"]
    assert [h["session_id"][:8] for h in hits] == ["b0b0b0b0"]
    data = {"session_id": odd, "transcript_path": str(home.path), "cwd": str(env.home),
            "hook_event_name": "PreCompact", "trigger": "auto", "custom_instructions": ""}
    p = subprocess.run([sys.executable, "-m", "prima_memory", "hook", "pre-compact"],
                       input=json.dumps(data), capture_output=True, text=True, timeout=60,
                       cwd=str(env.home), env={**env.env, "CLAUDE_PROJECT_DIR": str(env.home)})
    assert p.returncode == 0, p.stderr
    assert list(elsewhere.iterdir()) == [] and (env.home / ".prima-memory").is_symlink()


def test_a_sentence_keyword_mode_cannot_find_points_to_the_default_search(env):
    _session(env)
    p = env.run("search", "why did sign-in break", "--mode", "keyword")
    assert "No session matches" in p.stdout and "without --mode" in p.stdout, p.stdout
    assert "(searched the 1 session of this project; --all-projects" in p.stdout
    assert "without --mode" not in env.run("search", "zzyzx", "--mode", "keyword").stdout


def test_an_empty_memory_an_older_version_left_in_a_subfolder_is_passed_over(env):
    """Older versions made .prima-memory in whatever folder a search ran in."""
    sid = _session(env)
    sub = env.ws / "src" / "auth"
    sub.mkdir(parents=True)
    env.run("index", "--workspace", str(sub))  # as an older search from there did
    assert (sub / ".prima-memory" / "index.db").is_file()
    hits = env.json("search", "SameSite", "--mode", "keyword", cwd=sub)["results"]
    assert [h["session_id"] for h in hits] == [sid]
    # one that holds sessions (its Codex ones, say) is that folder's own memory: it is served
    env.run("index", cwd=env.ws)
    sub_db = sub / ".prima-memory" / "index.db"
    sub_db.unlink()
    shutil.copy(env.data / "index.db", sub_db)  # a copy holding a session (stamps are per file)
    from prima_memory import api
    assert not api.holds_nothing(str(sub))
    assert wsmod.find_workspace(str(sub), empty=api.holds_nothing).folder == str(sub)


def test_the_git_root_when_nothing_above_has_memory(env, tmp_path):
    repo = tmp_path / "repo"
    sub = repo / "pkg" / "mod"
    sub.mkdir(parents=True)
    (repo / ".git").mkdir()
    assert env.run("search", "x", cwd=sub, check=False).returncode == 1
    assert _dirs_with_data(tmp_path) == []
    # `index` starts a memory on purpose: at the git root, which then serves every folder of it
    env.run("index", cwd=sub)
    assert _dirs_with_data(tmp_path) == [str(repo)]
    assert env.json("status", cwd=sub)["workspace"] == str(repo)
    assert "No session matches" in env.run("search", "x", cwd=sub).stdout


def test_the_nearest_wins_and_workspace_still_wins(env):
    _session(env)
    inner = env.ws / "services" / "api"
    inner.mkdir(parents=True)
    inner_sid = "b1b2c3d4-0000-4000-8000-000000000002"
    # a session started in services/api lives in that folder's own project folder
    t = Transcript(env.claude / "projects" / encode(str(inner)) / f"{inner_sid}.jsonl",
                   inner_sid, str(inner), start=T0)
    t.exchange("rate limit the api", "Added a token bucket.")
    deeper = inner / "handlers"
    deeper.mkdir()
    assert env.json("status", cwd=deeper)["workspace"] == str(inner)
    hits = env.json("search", "token", "--mode", "keyword", cwd=deeper)["results"]
    assert [h["session_id"] for h in hits] == [inner_sid]
    hits = env.json("search", "SameSite", "--mode", "keyword", "--workspace", str(env.ws),
                    cwd=deeper)["results"]
    assert len(hits) == 1


def test_home_and_linked_data_folders_are_not_taken_from_below(env, tmp_path):
    # Claude Code keeps history for the home folder itself: a project below it is not "in" it
    home_sid = "c1b2c3d4-0000-4000-8000-000000000003"
    Transcript(env.claude / "projects" / encode(str(env.home)) / f"{home_sid}.jsonl", home_sid,
               str(env.home), start=T0).exchange("dotfiles", "ok")
    proj = env.home / "code" / "newproj"
    proj.mkdir(parents=True)
    found = wsmod.find_workspace(str(proj))
    assert (found.folder, found.has_memory) == (str(proj), False)
    assert wsmod.find_workspace(str(env.home)).how == "history"  # from home itself: yes
    # a cloned repository's .prima-memory that is a link: not a memory of this folder
    evil = tmp_path / "clone"
    (evil / "sub").mkdir(parents=True)
    os.symlink(str(env.ws), str(evil / ".prima-memory"))
    assert not wsmod.find_workspace(str(evil / "sub")).has_memory


def test_a_hook_from_a_subfolder_serves_the_project(env):
    sid = _session(env)
    sub = env.ws / "src"
    sub.mkdir()
    new = "d1b2c3d4-0000-4000-8000-000000000004"  # a new session, briefed on the earlier one
    assert sid != new
    payload = {"session_id": new, "transcript_path": str(env.project_dir / f"{new}.jsonl"),
               "cwd": str(sub), "hook_event_name": "SessionStart", "source": "startup"}
    p = env.run("hook", "session-start", input=json.dumps(payload), cwd=sub)
    assert p.returncode == 0
    assert "SameSite" in p.stdout  # the briefing of the project's sessions
    assert _dirs_with_data(env.root) == [str(env.ws)]


def _fake_agent(tmp_path, name: str):
    """A stand-in for `claude` / `codex` on PATH that records where it ran and with what."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / f"{name}.log"
    script = bin_dir / name
    script.write_text(f"#!/bin/sh\necho \"$PWD $*\" > '{log}'\n")
    script.chmod(0o755)
    return bin_dir, log


def test_every_hit_and_listing_prints_its_way_back_and_it_runs(env, tmp_path):
    sid = _session(env)
    env.run("index")
    bin_dir, log = _fake_agent(tmp_path, "claude")
    outputs = {"search": env.run("search", "SameSite", "--mode", "keyword").stdout,
               "recent": env.run("recent").stdout,
               "show": env.run("show", sid).stdout}
    for name, out in outputs.items():
        lines = [ln.strip().removeprefix("resume").strip() for ln in out.splitlines()
                 if "--resume" in ln]
        assert len(lines) == 1, (name, out)
        assert lines[0] == f"cd {wsmod_quote(env.ws)} && claude --resume {sid}", (name, out)
        log.unlink(missing_ok=True)
        subprocess.run(["bash", "-c", lines[0]], cwd=str(tmp_path), check=True, timeout=30,
                       env={**env.env, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
        assert log.read_text().strip() == f"{env.ws} --resume {sid}", name


def wsmod_quote(path) -> str:
    from prima_memory.hints import quote
    return quote(str(path))


def test_a_codex_hit_resumes_in_codex(env):
    sid = "019a0000-1111-7222-8333-444455556666"
    rollout = env.home / ".codex" / "sessions" / "2026" / "11" / "28" / f"rollout-2026-11-28T10-00-00-{sid}.jsonl"
    rollout.parent.mkdir(parents=True)
    ts = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(T0))
    lines = [{"timestamp": ts, "type": "session_meta",
              "payload": {"id": sid, "timestamp": ts, "cwd": str(env.ws), "originator": "codex_cli_rs",
                          "cli_version": "0.50.0"}},
             {"timestamp": ts, "type": "response_item",
              "payload": {"type": "message", "role": "user",
                          "content": [{"type": "input_text", "text": "fix the flaky websocket test"}]}},
             {"timestamp": ts, "type": "response_item",
              "payload": {"type": "message", "role": "assistant",
                          "content": [{"type": "output_text", "text": "The websocket test races."}]}}]
    rollout.write_text("".join(json.dumps(x) + "\n" for x in lines))
    env.run("index", "--workspace", str(env.ws))
    out = env.run("search", "websocket", "--mode", "keyword", "--workspace", str(env.ws)).stdout
    assert f"cd {wsmod_quote(env.ws)} && codex resume {sid}" in out, out


def test_unit_find_workspace_in_process(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    a = tmp_path / "a"
    (a / "b" / "c").mkdir(parents=True)
    (a / "b" / ".prima-memory").mkdir()
    assert wsmod.find_workspace(str(a / "b" / "c")).folder == str(a / "b")
    assert wsmod.find_workspace(str(a / "b" / "c"), history_only=True).how == "here"
