r"""Retrieval evaluation: how often each search mode puts the right past session first.

    .venv/bin/python bench/eval.py [--set first|questions|all] [--out bench/out/eval]
                                   [--modes keyword,semantic,combined]
                                   [--variants production,reference] [--jobs 2] [--fresh]
    .venv/bin/python bench/eval.py --check      # only validate both sets' labels (no model)

Two sets. The first (the default, --set first) is described below. The second (--set
questions; --set all runs both) is described after it.

The history and the indexes under OUT are reused while the corpus is the same (the CLI brings an
index up to date); --fresh writes them anew. A run of 74 queries in one mode takes about 10 s.

What it measures. A corpus of 100 Claude Code sessions is written at run time from text people
wrote: the docstrings of CPython's standard library, one session per module or topic, the
replies being the docstrings (bench/eval/corpus.py; nothing is copied into the repository).
bench/eval/queries.json holds the queries, each naming its target session and labelled
"shared" (it shares words with its target) or "no-shared" (it shares no content word with any
text of its target: only a search by meaning can find it). Words are \w+ runs in lower case
less a stopword list; two words are shared when equal or when one, of 4 letters or more, starts
the other (plurals, -ing, -ed). The check is automatic: the run stops if a label is wrong, a
target is not in the corpus or fewer than a third of the queries are no-shared.

Each query is run through the real CLI, as a user would:
    prima-memory --workspace WS search QUERY --json --mode MODE --limit 10
with HOME, CLAUDE_CONFIG_DIR, CODEX_HOME and PRIMA_VSCODE_USER_DIRS pointing inside OUT (the
real ~/.claude is never read). Model caches (XDG_CACHE_HOME, HF_HOME) keep their real places so
that a model already downloaded is found. The rank is the target's 1-based position among the
results; a target not in the top 10 counts 0 in the reciprocal rank. Reported per mode and per
variant: Recall@1, Recall@5 and MRR, overall and for shared and no-shared queries apart, the
searches' median time, the warnings they returned (a mode not yet built falls back to keyword
results and says so), the misses, and for each no-shared query whether keyword search, which
matches inside words, finds its target at all (at any rank).

Variants are environments compared side by side, each with its own copy of the history, its own
workspace and so its own index (embeddings live in WS/.prima-memory/index.db):
    production  the default environment
    reference   PRIMA_EMBEDDER=sentence-transformers (the reference embedder)
    seed-exact  PRIMA_SEED_EXACT=1 (the seed's exact semantic behaviour)
    NAME:K=V[,K=V...]  any other
The full results go to OUT/eval-results.json; the report (markdown) to stdout.

The second set: /recall questions over a big history (bench/eval/questions.py, questions.json).
Over 500 sessions in one workspace, built at run time from text people wrote, as the first set
is: 38 target sessions (a problem told in a few short prompts written here, answered with the
docstrings of the stdlib code it is about, the last reply editing a project file or two as
Claude Code records it: a tool_use Edit or Write with its file_path), 120 long sessions (20 to
28 exchanges, over 20,000 characters) and about 150 short ones of everyday chat prompts ("ok,
when did we last look at this? can you fix the thing we did before") answered with prose (the
comments of CPython's standard library and tests, IDLE's NEWS, the READMEs and Debian
changelogs under /usr/share/doc, the fixtures' real transcripts), a session per other stdlib
module and per section of the reference manual; and forks: 1 to 3 copies of 13 targets and of
8 long sessions, each a new sessionId whose first lines are the origin's (the same uuid and
message.id), then lines of its own. questions.json holds at least 100 questions, each naming
its target, of four kinds (at least 20 each): "sentence", typed as people type into /recall
("when did we fix the login redirect"); "identifier", a name or an error string as written
(`TimeoutExpired`, `TypeError: Object of type datetime is not JSON serializable`), found in the
target and in no other session; "paraphrase", sharing no content word with any text of its
target; "file", naming a file the target edited ("when did we touch config.py"); and 20
nothing-queries, none of whose content words occurs anywhere in the corpus, even inside a word.
The run stops when a rule breaks (questions.py's check_set says which), and if there are fewer
than 500 sessions, 100 long ones or 10 forked targets. Each query has a split, "dev" or "test"
(a hash of its text): tune on dev, judge on test.

Each query runs through the CLI as above, in its own history and index under
OUT/questions/VARIANT; the variants default to production and seed-exact (the seed's search, the
reference through the CLI). Beside them, in the same run, "bm25": bench/bm25.py in-process over
the first variant's written history, one document per session or fork (its user and assistant
text, read back from the transcripts), scored by the same rules. Reported for dev and for test
apart: per kind, variant and mode, hit@1, hit@5, hit@10 (the target within the first k; a fork
of the target is not the target) and MRR over the top 10; how many nothing-queries return an
empty result list; the median time per query. Then, over both: forks in the top 10 (results that
are a fork of a conversation already listed above them) and the MRR with forks folded into their
origin; the questions not first in combined mode with BM25's rank beside them, and for each the
long sessions that hold every word of it (what keyword search wants today, filler included).
Full results: OUT/questions/eval-results.json.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HERE = REPO / "bench" / "eval"
sys.path.insert(0, str(HERE))
import corpus  # noqa: E402  (bench/eval/corpus.py)
import questions as second  # noqa: E402  (bench/eval/questions.py: the second set)

QUERIES = HERE / "queries.json"
LIMIT = 10
VARIANTS = {
    "production": {},
    "reference": {"PRIMA_EMBEDDER": "sentence-transformers"},
    "seed-exact": {"PRIMA_SEED_EXACT": "1"},
}


def cli() -> list[str]:
    exe = REPO / ".venv" / "bin" / "prima-memory"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("prima-memory")
    return [found] if found else [sys.executable, "-m", "prima_memory"]


def parse_variants(spec: str) -> dict[str, dict[str, str]]:
    """"production,reference;big:PRIMA_X=1,PRIMA_Y=2": known names split on commas, a custom
    NAME:K=V,... in its own ';'-separated part."""
    out = {}
    for part in filter(None, (s.strip() for s in spec.split(";"))):
        if ":" in part:
            name, _, pairs = part.partition(":")
            out[name.strip()] = dict(p.strip().split("=", 1) for p in pairs.split(",") if p.strip())
            continue
        for item in filter(None, (s.strip() for s in part.split(","))):
            if item not in VARIANTS:
                sys.exit(f"unknown variant {item!r}: one of {', '.join(VARIANTS)} or NAME:K=V,...")
            out[item] = VARIANTS[item]
    return out


def load_queries(sessions) -> list[dict]:
    queries = json.loads(QUERIES.read_text(encoding="utf-8"))
    errors = corpus.check_queries(queries, sessions)
    if errors:
        sys.exit("bench/eval/queries.json breaks the set's rules:\n  " + "\n  ".join(errors))
    return queries


# --- the corpus, one copy per variant ---------------------------------------------------------

def prepare(root: Path, sessions, digest: str, fresh: bool = False, mod=corpus) -> dict:
    """The variant's history and workspace: reused when written by the same corpus version and
    text at the same place (its index is then brought up to date by the CLI), written afresh
    otherwise or when asked (--fresh: a new index too, with no embeddings left from an older
    build). `mod`: the set's corpus module (corpus, or questions for the second set, whose
    `sessions` is its (sessions, forks))."""
    root = root.resolve()
    manifest_path = root / "corpus.json"
    if manifest_path.exists() and not fresh:
        try:
            m = json.loads(manifest_path.read_text(encoding="utf-8"))
            if (m.get("version"), m.get("digest"), m.get("workspace")) == (
                    mod.CORPUS_VERSION, digest, str(root / "ws")):
                return m
        except ValueError:
            pass
    for sub in ("claude", "ws", "home", "codex", "none", "corpus.json"):
        p = root / sub
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
    return mod.write_history(root, sessions)


def variant_env(root: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "PRIMA_", "CODEX"))}
    real_home = Path(os.environ.get("HOME", str(Path.home())))
    # HOME moves into OUT; model caches stay where they are so that no model is fetched again
    env.setdefault("XDG_CACHE_HOME", str(real_home / ".cache"))
    env.setdefault("HF_HOME", str(Path(env["XDG_CACHE_HOME"]) / "huggingface"))
    env.update(HOME=str(root / "home"), CLAUDE_CONFIG_DIR=str(root / "claude"),
               CODEX_HOME=str(root / "codex"), PRIMA_VSCODE_USER_DIRS=str(root / "none"),
               XDG_CONFIG_HOME=str(root / "home" / ".config"))
    env.update(extra)
    (root / "home").mkdir(parents=True, exist_ok=True)
    return env


# --- running the CLI --------------------------------------------------------------------------

def run_index(ws: str, env: dict) -> dict:
    t = time.perf_counter()
    p = subprocess.run(cli() + ["--workspace", ws, "index"], env=env, cwd=ws,
                       capture_output=True, text=True, timeout=3600)
    return {"seconds": round(time.perf_counter() - t, 2), "exit": p.returncode,
            "output": (p.stdout + p.stderr).strip()[-2000:]}


def run_embed(ws: str, env: dict) -> dict:
    """Embed every exchange before the searches (what the background embedder does after each
    session), so no search pays for the lazy update and the figures are the search's own."""
    t = time.perf_counter()
    p = subprocess.run(cli() + ["--workspace", ws, "embed", "--json"], env=env, cwd=ws,
                       capture_output=True, text=True, timeout=7200)
    return {"seconds": round(time.perf_counter() - t, 2), "exit": p.returncode,
            "output": (p.stdout + p.stderr).strip()[-2000:]}


def run_search(ws: str, env: dict, query: str, mode: str, limit: int = LIMIT) -> dict:
    t = time.perf_counter()
    p = subprocess.run(cli() + ["--workspace", ws, "search", query, "--json", "--mode", mode,
                                "--limit", str(limit)],
                       env=env, cwd=ws, capture_output=True, text=True, timeout=600)
    ms = (time.perf_counter() - t) * 1000
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        return {"ms": ms, "error": f"exit {p.returncode}: {(p.stderr or p.stdout).strip()[-500:]}",
                "results": [], "warnings": []}
    return {"ms": ms, "error": None if p.returncode == 0 else f"exit {p.returncode}",
            "results": doc.get("results", []), "warnings": doc.get("warnings", [])}


def absent_words(query: str, text: str) -> list[str]:
    """The query's words (split on spaces, as keyword search does) found nowhere in the text,
    not even inside a longer word: why keyword search, which wants every word, missed."""
    low = text.lower()
    return [w for w in dict.fromkeys(query.lower().split()) if w not in low]


def score(q: dict, out: dict, topic_of: dict[str, str], texts: dict[str, str]) -> dict:
    found = [topic_of.get(r.get("session_id"), f"?{r.get('session_id')}") for r in out["results"]]
    rank = found.index(q["target"]) + 1 if q["target"] in found else None
    return {"query": q["query"], "target": q["target"], "kind": q["kind"], "rank": rank,
            "absent_from_target": absent_words(q["query"], texts[q["target"]]),
            "top": [{"topic": t, "title": r.get("title"), "score": r.get("score")}
                    for t, r in zip(found, out["results"])],
            "warnings": out["warnings"], "error": out["error"], "ms": round(out["ms"], 1)}


def figures(rows: list[dict]) -> dict:
    n = len(rows)
    if not n:
        return {"n": 0, "r1": 0.0, "r5": 0.0, "mrr": 0.0}
    ranks = [r["rank"] for r in rows]
    return {"n": n,
            "r1": sum(r == 1 for r in ranks) / n,
            "r5": sum(r is not None and r <= 5 for r in ranks) / n,
            "mrr": sum(1 / r for r in ranks if r and r <= LIMIT) / n}


# --- the report -------------------------------------------------------------------------------

def agreement(results: dict, modes, variants) -> list[str]:
    """Whether production answers as the reference does: the same top ten, per query."""
    if not {"production", "reference"} <= set(variants):
        return []
    out = ["", "## Production against the reference: the same top 10?", "",
           "| mode | same sessions in the same order | same sessions | mean overlap of the top 10 (Jaccard) "
           "| same first result |", "|---|---:|---:|---:|---:|"]
    for m in modes:
        if m == "keyword":
            continue
        pairs = list(zip(results["variants"]["production"]["modes"][m],
                         results["variants"]["reference"]["modes"][m]))
        tops = [([t["topic"] for t in p["top"]], [t["topic"] for t in r["top"]]) for p, r in pairs]
        n = len(tops)
        same_order = sum(a == b for a, b in tops)
        same_set = sum(set(a) == set(b) for a, b in tops)
        overlap = sum(len(set(a) & set(b)) / max(1, len(set(a) | set(b))) for a, b in tops) / n
        first = sum(a[:1] == b[:1] for a, b in tops)
        out.append(f"| {m} | {same_order} of {n} | {same_set} of {n} | {overlap:.3f} | "
                   f"{first} of {n} |")
    return out


def report(results: dict, stats: dict, queries: list[dict], modes, variants) -> str:
    n_ns = sum(q["kind"] == "no-shared" for q in queries)
    lines = ["# Retrieval evaluation (bench/eval.py)", "",
             f"Corpus: {stats['sessions']} sessions, {stats['exchanges']} exchanges, "
             f"{stats['characters']:,} characters, {stats['exchanges_over_2000']} replies "
             f"({stats['share_over_2000']:.0%}) over 2,000 characters; per session min/median/max "
             f"{'/'.join(f'{c:,}' for c in stats['session_chars_min_median_max'])} characters. "
             f"CPython {stats['python']} docstrings, digest {stats['digest']}.",
             f"Queries: {len(queries)} ({len(queries) - n_ns} shared, {n_ns} no-shared); "
             f"limit {LIMIT}; rank not in the top {LIMIT} counts 0.", "",
             "| variant | mode | R@1 | R@5 | MRR | shared R@1 | shared R@5 | shared MRR "
             "| no-shared R@1 | no-shared R@5 | no-shared MRR | median ms | errors | warnings |",
             "|---|---|" + "---:|" * 10 + "---:|---|"]
    for v in variants:
        for m in modes:
            rows = results["variants"][v]["modes"][m]
            a = figures(rows)
            s = figures([r for r in rows if r["kind"] == "shared"])
            ns = figures([r for r in rows if r["kind"] == "no-shared"])
            warns = sorted({w for r in rows for w in r["warnings"]})
            errs = sum(bool(r["error"]) for r in rows)
            med = statistics.median(r["ms"] for r in rows)
            lines.append(f"| {v} | {m} | {a['r1']:.3f} | {a['r5']:.3f} | {a['mrr']:.3f} "
                         f"| {s['r1']:.3f} | {s['r5']:.3f} | {s['mrr']:.3f} "
                         f"| {ns['r1']:.3f} | {ns['r5']:.3f} | {ns['mrr']:.3f} | {med:.0f} "
                         f"| {errs} | {'; '.join(warns)[:160] or '-'} |")
    lines.append("")
    for v in variants:
        idx = results["variants"][v]["index"]
        env = results["variants"][v]["env"]
        lines.append(f"- {v}: env {env or '{}'}; index {idx['seconds']} s, exit {idx['exit']}"
                     + (f": {idx['output'][-300:]!r}" if idx["exit"] else ""))
    # the misses, for combined (the mode users get) or, when it was not run, for each mode run;
    # "absent" lists the query words found nowhere in the target (keyword search wants them all)
    for m in (["combined"] if "combined" in modes else modes):
        shown: dict[str, str] = {}
        for v in variants:
            misses = [r for r in results["variants"][v]["modes"][m] if r["rank"] != 1]
            key = json.dumps([(r["query"], r["rank"], r["top"][:1]) for r in misses])
            title = f"## Misses: {v}, {m} ({len(misses)} of {len(queries)} not first)"
            if key in shown:
                lines += ["", title + f": the same as {shown[key]}"]
                continue
            shown[key] = v
            lines += ["", title, "",
                      "| query | kind | target | rank | first result | absent from target |",
                      "|---|---|---|---|---|---|"]
            for r in misses:
                first = r["top"][0]["topic"] if r["top"] else "(no result)"
                rank = r["rank"] if r["rank"] else f"not in top {LIMIT}"
                err = f" error: {r['error']}" if r["error"] else ""
                lines.append(f"| {r['query']} | {r['kind']} | {r['target']} | {rank} "
                             f"| {first}{err} | {' '.join(r['absent_from_target']) or '-'} |")
    lines += agreement(results, modes, variants)
    kw = results.get("keyword_reach")
    if kw:
        found = [k for k in kw if k["rank"]]
        lines += ["", "## No-shared queries: does keyword search (substrings) find the target?",
                  "", f"{len(found)} of {len(kw)} found at any rank "
                  f"({results['keyword_reach_variant']}, limit {results['keyword_reach_limit']}).",
                  "", "| query | target | keyword rank | keyword results |", "|---|---|---:|---:|"]
        for k in kw:
            lines.append(f"| {k['query']} | {k['target']} | {k['rank'] or '-'} | {k['hits']} |")
    return "\n".join(lines)


# --- the second set: /recall questions, nothing-queries, forks ---------------------------------

def load_second():
    """The second set's sessions, forks and questions, its rules checked (exits if one breaks)."""
    sessions, forks = second.build()
    qset = second.load_set()
    errors = second.check_set(qset, sessions, forks)
    if errors:
        sys.exit("bench/eval/questions.json breaks the set's rules:\n  " + "\n  ".join(errors))
    stats = second.stats(sessions, forks)
    stats.update(python=sys.version.split()[0], digest=second.digest(sessions, forks))
    by_name = {s.name: s for s in sessions}
    for q in qset["questions"]:
        q["split"] = second.split(q["query"])
        q["shares"] = second.shares(q, by_name)
        # the sessions keyword search matches today (every word, filler too, inside words)
        q["every_word"] = [s.name for s in sessions if second.every_word_in(q["query"], s.text())]
    return sessions, forks, qset, stats


def conversations(manifest: dict) -> tuple[dict[str, str], dict[str, str]]:
    """session id -> name (forks included), and name -> its conversation (a fork's origin)."""
    name_of = {sid: name for name, sid in manifest["sessions"].items()}
    conv = {name: name for name in manifest["sessions"]}
    for name, f in manifest["forks"].items():
        name_of[f["session"]] = name
        conv[name] = f["origin"]
    return name_of, conv


def copies(names: list[str], conv: dict[str, str]) -> int:
    """Results beyond the first of their conversation: copies (forks, resumes) of one above."""
    seen, n = set(), 0
    for name in names:
        c = conv.get(name, name)
        n += c in seen
        seen.add(c)
    return n


def score_question(q: dict, out: dict, name_of: dict, conv: dict) -> dict:
    names = [name_of.get(r.get("session_id"), f"?{r.get('session_id')}") for r in out["results"]]
    rank = names.index(q["target"]) + 1 if q["target"] in names else None
    folded = list(dict.fromkeys(conv.get(n, n) for n in names))  # copies folded into origins
    return {"query": q["query"], "target": q["target"], "kind": q["kind"], "split": q["split"],
            "rank": rank,
            "rank_folded": folded.index(q["target"]) + 1 if q["target"] in folded else None,
            "first_is_copy_of_target": bool(names) and names[0] != q["target"]
            and conv.get(names[0]) == q["target"],
            "copies": copies(names, conv),
            "top": [{"session": n, "score": r.get("score")} for n, r in zip(names, out["results"])],
            "warnings": out["warnings"], "error": out["error"], "ms": round(out["ms"], 1)}


def score_nothing(query: str, out: dict, name_of: dict, conv: dict) -> dict:
    names = [name_of.get(r.get("session_id"), f"?{r.get('session_id')}") for r in out["results"]]
    return {"query": query, "split": second.split(query),
            "empty": not out["results"] and not out["error"],
            "hits": len(names), "copies": copies(names, conv),
            "top": [{"session": n, "score": r.get("score")}
                    for n, r in zip(names[:3], out["results"])],
            "warnings": out["warnings"], "error": out["error"], "ms": round(out["ms"], 1)}


def transcript_texts(root: Path, manifest: dict) -> dict[str, str]:
    """name -> the text of its user and assistant messages, read back from the transcripts as
    written (forks included; tool_use and tool_result blocks left out): BM25's documents."""
    folder = root / "claude" / "projects" / corpus.encode(manifest["workspace"])
    ids = {**manifest["sessions"], **{n: f["session"] for n, f in manifest["forks"].items()}}
    texts = {}
    for name, sid in ids.items():
        parts = []
        for line in (folder / f"{sid}.jsonl").read_text(encoding="utf-8").splitlines():
            d = json.loads(line)
            content = (d.get("message") or {}).get("content") if d.get("type") in (
                "user", "assistant") else None
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts += [b["text"] for b in content if b.get("type") == "text"]
        texts[name] = "\n".join(parts)
    return texts


def run_bm25(root: Path, manifest: dict, questions: list[dict], nothing: list[str]) -> dict:
    """The plain BM25 reference (bench/bm25.py), in-process, over the history a variant wrote:
    each query's top 10 scored as a CLI search's are."""
    from bm25 import BM25  # bench/bm25.py (the script's folder): only this run needs it
    t = time.perf_counter()
    index = BM25(transcript_texts(root, manifest))
    built = round(time.perf_counter() - t, 2)
    name_of, conv = conversations(manifest)
    sid = {n: s for s, n in name_of.items()}

    def search(query: str) -> dict:
        t = time.perf_counter()
        ranked = index.rank(query, LIMIT)
        return {"ms": (time.perf_counter() - t) * 1000, "error": None, "warnings": [],
                "results": [{"session_id": sid[n], "score": round(s, 3)} for s, n in ranked]}

    return {"build_seconds": built,
            "questions": [score_question(q, search(q["query"]), name_of, conv) for q in questions],
            "nothing": [score_nothing(q, search(q), name_of, conv) for q in nothing]}


def run_second(args, modes: list[str], variants: dict, out: Path) -> str:
    sessions, forks, qset, stats = load_second()
    questions, nothing = qset["questions"], qset["nothing"]
    base = out / "questions"
    results = {"corpus": stats, "questions": questions, "nothing": nothing, "limit": LIMIT,
               "variants": {}}
    for name, extra in variants.items():
        root = base / name
        t0 = time.perf_counter()
        manifest = prepare(root, (sessions, forks), stats["digest"], args.fresh, mod=second)
        written = round(time.perf_counter() - t0, 2)
        if "bm25" not in results:  # every variant writes the same history: one reference
            results["bm25"] = run_bm25(root, manifest, questions, nothing)
            results["bm25"]["history"] = name
        name_of, conv = conversations(manifest)
        ws = manifest["workspace"]
        env = variant_env(root, extra)
        idx = run_index(ws, env)
        print(f"questions {name}: history {written} s, index {idx['seconds']} s "
              f"(exit {idx['exit']})", file=sys.stderr)
        emb = run_embed(ws, env) if set(modes) - {"keyword"} else None
        if emb:
            print(f"questions {name}: embed {emb['seconds']} s (exit {emb['exit']}) "
                  f"{emb['output'][-200:]}", file=sys.stderr)
        var = results["variants"][name] = {"env": extra, "history_seconds": written, "index": idx,
                                           "embed": emb, "modes": {}, "nothing": {}}
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            for mode in modes:
                t = time.perf_counter()
                outs = list(pool.map(lambda q, ws=ws, env=env, mode=mode:
                                     run_search(ws, env, q["query"], mode), questions))
                var["modes"][mode] = [score_question(q, o, name_of, conv)
                                      for q, o in zip(questions, outs)]
                outs = list(pool.map(lambda q, ws=ws, env=env, mode=mode:
                                     run_search(ws, env, q, mode), nothing))
                var["nothing"][mode] = [score_nothing(q, o, name_of, conv)
                                        for q, o in zip(nothing, outs)]
                f = hits(var["modes"][mode])
                empty = sum(r["empty"] for r in var["nothing"][mode])
                print(f"questions {name} {mode}: hit@1 {f['h1']:.3f} hit@10 {f['h10']:.3f} "
                      f"MRR {f['mrr']:.3f}, nothing {empty}/{len(nothing)} "
                      f"({time.perf_counter() - t:.1f} s)", file=sys.stderr)
    base.mkdir(parents=True, exist_ok=True)
    (base / "eval-results.json").write_text(
        json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return report_second(results, stats, qset, modes, list(variants)) + \
        f"\n\nfull results: {base / 'eval-results.json'}"


def hits(rows: list[dict]) -> dict:
    """hit@1, @5, @10 (the target within the first k) and MRR over the top 10."""
    n = len(rows)
    ranks = [r["rank"] for r in rows]
    return {"n": n, "mrr": sum(1 / r for r in ranks if r and r <= LIMIT) / max(1, n),
            **{f"h{k}": sum(r is not None and r <= k for r in ranks) / max(1, n)
               for k in (1, 5, 10)}}


def report_second(results: dict, stats: dict, qset: dict, modes, variants) -> str:
    questions, nothing = qset["questions"], qset["nothing"]
    kinds = second.KINDS
    count = {(k, s): sum(q["kind"] == k and q["split"] == s for q in questions)
             for k in kinds for s in ("dev", "test")}
    # (label, mode, question rows, nothing rows): each variant's modes through the CLI, then
    # the in-process BM25 reference
    runs = [(v, m, results["variants"][v]["modes"][m], results["variants"][v]["nothing"][m])
            for v in variants for m in modes]
    bm = results["bm25"]
    runs.append(("bm25", "-", bm["questions"], bm["nothing"]))
    lines = ["# Retrieval evaluation, second set: /recall questions (bench/eval.py --set questions)",
             "",
             f"Corpus: {stats['sessions']} sessions ({', '.join(f'{v} {k}' for k, v in stats['kinds'].items())}; "
             f"{stats['long']} long), {stats['forks']} forks (of {stats['forked_targets']} targets "
             f"and {stats['forked_long']} long sessions), "
             f"{stats['exchanges']:,} exchanges, {stats['characters']:,} characters; "
             f"CPython {stats['python']}, fixtures {'read' if stats['fixtures'] else 'absent'}, "
             f"digest {stats['digest']}.",
             f"Questions: {len(questions)} ("
             + ", ".join(f"{count[k, 'dev'] + count[k, 'test']} {k} "
                         f"({count[k, 'dev']} dev, {count[k, 'test']} test)" for k in kinds)
             + f"); {sum(q['shares'] for q in questions)} share a content word with their target. "
             f"Nothing-queries: {len(nothing)}. hit@k: the target within the first k; MRR over "
             f"the top {LIMIT}; a fork of the target is not the target. Rows: each variant's "
             "searches through the CLI; bm25: bench/bm25.py in-process over the same written "
             f"history (its time is a ranking in memory, not a CLI run).", ""]
    for sp in ("dev", "test"):
        lines += [f"## {sp}: {sum(count[k, sp] for k in kinds)} questions, "
                  f"{sum(second.split(q) == sp for q in nothing)} nothing-queries", "",
                  "| kind | variant | mode | n | hit@1 | hit@5 | hit@10 | MRR |",
                  "|---|---|---|---:|---:|---:|---:|---:|"]
        for k in (*kinds, "all"):
            for v, m, rows, _n in runs:
                f = hits([r for r in rows if r["split"] == sp and k in ("all", r["kind"])])
                lines.append(f"| {k} | {v} | {m} | {f['n']} | {f['h1']:.3f} | {f['h5']:.3f} "
                             f"| {f['h10']:.3f} | {f['mrr']:.3f} |")
        lines += ["", "| variant | mode | nothing-queries returning nothing | median ms per query "
                  "| errors |", "|---|---|---:|---:|---:|"]
        for v, m, rows, nrows in runs:
            rows = [r for r in rows + nrows if r["split"] == sp]
            nr = [r for r in nrows if r["split"] == sp]
            lines.append(f"| {v} | {m} | {sum(r['empty'] for r in nr)} of {len(nr)} "
                         f"| {statistics.median(r['ms'] for r in rows):.1f} "
                         f"| {sum(bool(r['error']) for r in rows)} |")
        lines.append("")
    lines += ["## Forks, dev and test together", "",
              "| variant | mode | MRR | MRR, forks folded | forks in top 10 below their origin "
              "| questions with one | first result a fork of the target | warnings |",
              "|---|---|---:|---:|---:|---:|---:|---|"]
    for v, m, rows, nrows in runs:
        folded = hits([{"rank": r["rank_folded"]} for r in rows])
        warns = sorted({w for r in rows + nrows for w in r["warnings"]})
        lines.append(f"| {v} | {m} | {hits(rows)['mrr']:.3f} | {folded['mrr']:.3f} "
                     f"| {sum(r['copies'] for r in rows)} | {sum(r['copies'] > 0 for r in rows)} "
                     f"| {sum(r['first_is_copy_of_target'] for r in rows)} "
                     f"| {'; '.join(warns)[:160] or '-'} |")
    lines.append("")
    for v in variants:
        var = results["variants"][v]
        emb = var["embed"]
        lines.append(f"- {v}: env {var['env'] or '{}'}; history written in "
                     f"{var['history_seconds']} s, index {var['index']['seconds']} s, exit "
                     f"{var['index']['exit']}" + (f"; embed {emb['seconds']} s, exit {emb['exit']}"
                                                  if emb else ""))
    lines.append(f"- bm25: over {bm['history']}'s history, built in {bm['build_seconds']} s")
    every = {q["query"]: q["every_word"] for q in questions}
    bm_rank = {r["query"]: r["rank"] for r in bm["questions"]}
    for m in (["combined"] if "combined" in modes else modes):
        for v in variants:
            rows = results["variants"][v]["modes"][m]
            misses = [r for r in rows if r["rank"] != 1]
            lines += ["", f"## Questions not first: {v}, {m} ({len(misses)} of {len(rows)})", "",
                      "| question | kind | split | target | rank | bm25 rank | first result (score) "
                      "| target's score | long sessions with every word |",
                      "|---|---|---|---|---|---:|---|---:|---:|"]
            for r in misses:
                first = (f"{r['top'][0]['session']} ({r['top'][0]['score']})"
                         + (" fork of the target" if r["first_is_copy_of_target"] else "")
                         if r["top"] else "(no result)")
                tscore = next((t["score"] for t in r["top"] if t["session"] == r["target"]), "-")
                longs = sum(n.startswith("long:") for n in every[r["query"]])
                lines.append(f"| {r['query']} | {r['kind']} | {r['split']} | {r['target']} "
                             f"| {r['rank'] or f'not in top {LIMIT}'} "
                             f"| {bm_rank[r['query']] or '-'} | {first} | {tscore} | {longs} |")
    for v, m, _rows, nrows in runs:
        found = [r for r in nrows if not r["empty"]]
        if not found:
            continue
        lines += ["", f"## Nothing-queries that returned something: {v}, {m} "
                  f"({len(found)} of {len(nothing)})", "",
                  "| query | results | first result (score) |", "|---|---:|---|"]
        for r in found:
            first = (f"{r['top'][0]['session']} ({r['top'][0]['score']})" if r["top"]
                     else f"error: {r['error']}")
            lines.append(f"| {r['query']} | {r['hits']} | {first} |")
    return "\n".join(lines)


def run_first(args, modes: list[str], variants: dict, out: Path, sessions, queries,
              stats) -> str:
    results = {"corpus": stats, "queries": queries, "limit": LIMIT, "variants": {}}

    for name, extra in variants.items():
        root = out / name
        manifest = prepare(root, sessions, stats["digest"], args.fresh)
        topic_of = {sid: topic for topic, sid in manifest["sessions"].items()}
        texts = {s.topic: s.text() for s in sessions}
        ws = manifest["workspace"]
        env = variant_env(root, extra)
        idx = run_index(ws, env)
        print(f"{name}: index {idx['seconds']} s (exit {idx['exit']})", file=sys.stderr)
        emb = run_embed(ws, env) if set(modes) - {"keyword"} else None
        if emb:
            print(f"{name}: embed {emb['seconds']} s (exit {emb['exit']}) {emb['output'][-200:]}",
                  file=sys.stderr)
        var = results["variants"][name] = {"env": extra, "index": idx, "embed": emb, "modes": {}}
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            for mode in modes:
                t = time.perf_counter()
                outs = list(pool.map(lambda q, ws=ws, env=env, mode=mode:
                                     run_search(ws, env, q["query"], mode), queries))
                var["modes"][mode] = [score(q, o, topic_of, texts) for q, o in zip(queries, outs)]
                f = figures(var["modes"][mode])
                print(f"{name} {mode}: R@1 {f['r1']:.3f} R@5 {f['r5']:.3f} MRR {f['mrr']:.3f} "
                      f"({time.perf_counter() - t:.1f} s)", file=sys.stderr)
            if "keyword_reach" not in results:
                # whether keyword search reaches a no-shared target at all (it matches inside
                # longer words, so "room" finds "bedroom"): the same search with no real limit
                ns = [q for q in queries if q["kind"] == "no-shared"]
                outs = list(pool.map(lambda q, ws=ws, env=env: run_search(
                    ws, env, q["query"], "keyword", limit=len(sessions)), ns))
                results["keyword_reach_variant"] = name
                results["keyword_reach_limit"] = len(sessions)
                results["keyword_reach"] = [
                    {**score(q, o, topic_of, texts), "hits": len(o["results"])}
                    for q, o in zip(ns, outs)]

    results["bm25"] = first_bm25(sessions, queries)
    out.mkdir(parents=True, exist_ok=True)
    (out / "eval-results.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n",
                                           encoding="utf-8")
    return report(results, stats, queries, modes, list(variants)) + "\n\n" + \
        first_splits(results, modes) + f"\n\nfull results: {out / 'eval-results.json'}"


def first_bm25(sessions, queries: list[dict]) -> list[dict]:
    """The plain BM25 reference (bench/bm25.py) over the first set's session texts, each query
    scored as a search's are."""
    from bm25 import BM25  # bench/bm25.py (the script's folder): only this run needs it
    texts = {s.topic: s.text() for s in sessions}
    index = BM25(texts)
    topic_of = {t: t for t in texts}
    return [score(q, {"results": [{"session_id": t} for _s, t in index.rank(q["query"], LIMIT)],
                      "warnings": [], "error": None, "ms": 0.0}, topic_of, texts)
            for q in queries]


def first_splits(results: dict, modes) -> str:
    """The first set's figures on each split (second.split: a stable hash of the query), each
    variant and mode beside BM25's."""
    rows = [("bm25", "", results["bm25"])] + [
        (name, mode, var["modes"][mode]) for name, var in results["variants"].items()
        for mode in modes if mode in var["modes"]]
    out = ["| variant | mode | split | n | R@1 | R@5 | MRR | no-shared MRR |",
           "|---|---|---|---:|---:|---:|---:|---:|"]
    for name, mode, scored in rows:
        for part in ("dev", "test"):
            got = [r for r in scored if second.split(r["query"]) == part]
            f, ns = figures(got), figures([r for r in got if r["kind"] == "no-shared"])
            out.append(f"| {name} | {mode} | {part} | {f['n']} | {f['r1']:.3f} | {f['r5']:.3f} | "
                       f"{f['mrr']:.3f} | {ns['mrr']:.3f} |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", choices=("first", "questions", "all"), default=None,
                    help="the first set (module queries, the default), the second (/recall "
                         "questions, nothing-queries, forks) or both; --check alone checks both")
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "eval"))
    ap.add_argument("--modes", default="keyword,semantic,combined")
    ap.add_argument("--variants", default=None,
                    help="names (production, reference, seed-exact) or NAME:K=V,K=V; "
                         "separate several custom ones with ';' (default: production,reference "
                         "for the first set, production,seed-exact for the second)")
    ap.add_argument("--jobs", type=int, default=2, help="searches run at once")
    ap.add_argument("--fresh", action="store_true",
                    help="rewrite the history and start each index anew")
    ap.add_argument("--check", action="store_true", help="only validate the queries and corpus")
    args = ap.parse_args()
    which = args.set or ("all" if args.check else "first")

    if which in ("first", "all"):
        sessions = corpus.build_sessions()
        queries = load_queries(sessions)
        stats = corpus.stats(sessions)
        stats.update(python=sys.version.split()[0], digest=corpus.digest(sessions))
        n_ns = sum(q["kind"] == "no-shared" for q in queries)
        print(f"corpus: {json.dumps(stats)}", file=sys.stderr)
        print(f"queries: {len(queries)} ({len(queries) - n_ns} shared, {n_ns} no-shared): "
              "rules hold", file=sys.stderr)
    if which in ("questions", "all") and args.check:
        _s, _f, qset, stats2 = load_second()
        print(f"questions corpus: {json.dumps(stats2)}", file=sys.stderr)
        print(f"questions: {len(qset['questions'])}, nothing-queries: {len(qset['nothing'])}: "
              "rules hold", file=sys.stderr)
    if args.check:
        return 0

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    out = Path(args.out).resolve()
    reports = []
    if which in ("first", "all"):
        variants = parse_variants(args.variants or "production,reference")
        reports.append(run_first(args, modes, variants, out, sessions, queries, stats))
    if which in ("questions", "all"):
        # the seed's exact search beside production: the second set's reference through the CLI
        variants = parse_variants(args.variants or "production,seed-exact")
        reports.append(run_second(args, modes, variants, out))
    print("\n\n".join(reports))
    return 0


if __name__ == "__main__":
    sys.exit(main())
