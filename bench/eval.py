r"""Retrieval evaluation: how often each search mode puts the right past session first.

    .venv/bin/python bench/eval.py [--out bench/out/eval] [--modes keyword,semantic,combined]
                                   [--variants production,reference] [--jobs 2] [--fresh]
    .venv/bin/python bench/eval.py --check      # only validate bench/eval/queries.json

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

def prepare(root: Path, sessions, digest: str, fresh: bool = False) -> dict:
    """The variant's history and workspace: reused when written by the same corpus version and
    text at the same place (its index is then brought up to date by the CLI), written afresh
    otherwise or when asked (--fresh: a new index too, with no embeddings left from an older
    build)."""
    root = root.resolve()
    manifest_path = root / "corpus.json"
    if manifest_path.exists() and not fresh:
        try:
            m = json.loads(manifest_path.read_text(encoding="utf-8"))
            if (m.get("version"), m.get("digest"), m.get("workspace")) == (
                    corpus.CORPUS_VERSION, digest, str(root / "ws")):
                return m
        except ValueError:
            pass
    for sub in ("claude", "ws", "home", "codex", "none", "corpus.json"):
        p = root / sub
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
    return corpus.write_history(root, sessions)


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "eval"))
    ap.add_argument("--modes", default="keyword,semantic,combined")
    ap.add_argument("--variants", default="production,reference",
                    help="names (production, reference, seed-exact) or NAME:K=V,K=V; "
                         "separate several custom ones with ';'")
    ap.add_argument("--jobs", type=int, default=2, help="searches run at once")
    ap.add_argument("--fresh", action="store_true",
                    help="rewrite the history and start each index anew")
    ap.add_argument("--check", action="store_true", help="only validate the queries and corpus")
    args = ap.parse_args()

    sessions = corpus.build_sessions()
    queries = load_queries(sessions)
    stats = corpus.stats(sessions)
    stats.update(python=sys.version.split()[0], digest=corpus.digest(sessions))
    n_ns = sum(q["kind"] == "no-shared" for q in queries)
    print(f"corpus: {json.dumps(stats)}", file=sys.stderr)
    print(f"queries: {len(queries)} ({len(queries) - n_ns} shared, {n_ns} no-shared): rules hold",
          file=sys.stderr)
    if args.check:
        return 0

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    variants = parse_variants(args.variants)
    out = Path(args.out).resolve()
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

    (out / "eval-results.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n",
                                           encoding="utf-8")
    print(report(results, stats, queries, modes, list(variants)))
    print(f"\nfull results: {out / 'eval-results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
