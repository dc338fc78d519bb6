r"""LoCoMo, session level: does the search put the session that holds a question's answer first?

    .venv/bin/python bench/locomo.py [--data FILE] [--out bench/out/locomo]
        [--variants production,seed-exact] [--modes combined,keyword,semantic] [--sample N]
        [--fresh]

LoCoMo (Maharana et al., 2024; github.com/snap-research/locomo) is 10 long conversations between
two people, 272 sessions in all, with 1,986 questions whose answers are tied to the turns that
hold them (`evidence`: "D3:1" is session 3's first turn). It is fetched at bench time (the zip at
a pinned commit, its sha256 checked) into ~/.cache/prima-memory-bench, or read from --data (that
zip, or its locomo10_v2 folder); nothing of it is committed and no test needs it.

Each session is written as a Claude Code transcript (the first speaker's turns as the user's
prompts, the other's as Claude's replies, each turn "Name: text", a shared photo's caption after
it in brackets, the session's own date and time as the timestamps), each conversation in its own
workspace, and indexed and embedded by the real CLI. Each question is searched in its
conversation's workspace through the data API the CLI uses (`api.search`, in one process per
variant: the CLI's start would be most of a query's time), top 10. A question's rank is the first
result that is one of its evidence sessions; hit@k counts ranks up to k, MRR is over the top 10.

Splits: the first five conversations (by sample id) are the development split, the other five
the held-out test split; ranking is chosen on dev, reported on both. In the same run, beside the
variants: "bm25", bench/bm25.py over the same turn texts (one document per session), and the
seed's arithmetic (variant seed-exact: PRIMA_SEED_EXACT=1, its own index). Full results go to
OUT/results.json, the tables (markdown) to stdout.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import io
import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]
sys.path.insert(0, str(REPO))

from bench.bm25 import BM25  # noqa: E402
from bench.eval import cli, variant_env  # noqa: E402  (it puts bench/eval on the path)
from corpus import _ts, encode  # noqa: E402  (bench/eval/corpus.py)

COMMIT = "92286325a40764bee61f77824ddb95233b11c4d6"  # (the newest, 2024-08-07)
URL = f"https://github.com/snap-research/locomo/raw/{COMMIT}/data/locomo10.zip"
SHA256 = "5c342973da4b45c12583c9fc7594d6410880f5aba2c491a0db09db262c906fb5"
VARIANTS = {"production": {}, "seed-exact": {"PRIMA_SEED_EXACT": "1"}}
DEV = 5  # the first five conversations
LIMIT = 10


# --- the data ---------------------------------------------------------------------------------

def load(data: str | None) -> dict[str, dict]:
    """sample id -> conversation (its speakers, sessions and questions)."""
    if data and Path(data).is_dir():
        return {p.stem: json.loads(p.read_text(encoding="utf-8"))
                for p in sorted(Path(data).glob("*.json"))}
    raw = Path(data).read_bytes() if data else _fetched()
    if hashlib.sha256(raw).hexdigest() != SHA256:
        sys.exit("locomo: the data's sha256 is not the pinned one: another version of LoCoMo")
    z = zipfile.ZipFile(io.BytesIO(raw))
    return {Path(n).stem: json.loads(z.read(n)) for n in sorted(z.namelist())
            if n.endswith(".json")}


def _fetched() -> bytes:
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / \
        "prima-memory-bench" / "locomo10.zip"
    if not cache.exists():
        try:
            with urllib.request.urlopen(URL, timeout=60) as r:
                body = r.read()
        except OSError as e:
            sys.exit(f"locomo: cannot fetch {URL} ({e}); give --data with the zip")
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_bytes(body)
    return cache.read_bytes()


def sessions(conv: dict) -> dict[int, tuple[float, list[dict]]]:
    """session number -> (its start, its turns), those with turns."""
    out = {}
    for k, turns in conv.items():
        m = re.fullmatch(r"session_(\d+)", k)
        if m and turns:
            when = datetime.datetime.strptime(conv[k + "_date_time"], "%I:%M %p on %d %B, %Y")
            out[int(m.group(1))] = (when.replace(tzinfo=datetime.timezone.utc).timestamp(), turns)
    return out


def turn_text(t: dict) -> str:
    photo = f" [shares {t['blip_caption']}]" if t.get("blip_caption") else ""
    return f"{t['speaker']}: {t['text']}{photo}"


def session_id(sample: str, n: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"locomo/{sample}/{n}"))


def questions(convs: dict[str, dict]) -> list[dict]:
    """Every question with evidence: its conversation, split, category and target sessions."""
    out = []
    for i, (sample, conv) in enumerate(sorted(convs.items())):
        held = sessions(conv)
        for q in conv["qa"]:
            targets = sorted({int(m.group(1)) for e in q.get("evidence", [])
                              for m in [re.match(r"D(\d+):", e)] if m} & held.keys())
            if targets:
                out.append({"sample": sample, "split": "dev" if i < DEV else "test",
                            "category": q.get("category"), "query": q["question"],
                            "targets": targets})
    return out


# --- the history ------------------------------------------------------------------------------

def transcript(sample: str, n: int, start: float, turns: list[dict], speaker_a: str,
               cwd: str) -> str:
    sid, lines, parent = session_id(sample, n), [], None
    for k, t in enumerate(turns):
        u = f"{sid[:8]}-{k:05d}"
        d = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd,
             "sessionId": sid, "version": "2.1.100", "gitBranch": "main", "uuid": u,
             "timestamp": _ts(start + 30 * k)}
        if t["speaker"] == speaker_a:
            d.update(type="user", message={"role": "user", "content": turn_text(t)})
        else:
            d.update(type="assistant", requestId=f"req_{u}", message={
                "model": "claude-sonnet-4-5", "id": f"msg_{u}", "type": "message",
                "role": "assistant", "content": [{"type": "text", "text": turn_text(t)}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 2}})
        lines.append(json.dumps(d, ensure_ascii=False))
        parent = u
    return "\n".join(lines) + "\n"


def write(root: Path, convs: dict[str, dict]) -> dict[str, str]:
    """Every conversation's sessions as transcripts under root/claude; sample -> workspace."""
    out = {}
    for sample, conv in sorted(convs.items()):
        ws = root / f"conv-{sample}"
        ws.mkdir(parents=True, exist_ok=True)
        proj = root / "claude" / "projects" / encode(str(ws))
        proj.mkdir(parents=True, exist_ok=True)
        for n, (start, turns) in sessions(conv).items():
            (proj / f"{session_id(sample, n)}.jsonl").write_text(
                transcript(sample, n, start, turns, conv["speaker_a"], str(ws)), encoding="utf-8")
        out[sample] = str(ws)
    return out


def prepared(root: Path, convs: dict, env: dict, fresh: bool) -> dict[str, str]:
    """The variant's workspaces, written, indexed and embedded once (again with --fresh)."""
    done = root / "ready.json"
    if done.exists() and not fresh:
        return json.loads(done.read_text())
    if root.exists():
        import shutil
        shutil.rmtree(root)
    root.mkdir(parents=True)
    wss = write(root, convs)
    for ws in wss.values():
        for step in (["index"], ["embed"]):
            p = subprocess.run(cli() + ["--workspace", ws, *step], env=env, cwd=ws,
                               capture_output=True, text=True, timeout=3600)
            if p.returncode:
                sys.exit(f"locomo: {' '.join(step)} in {ws} failed: {p.stderr.strip()[-500:]}")
    done.write_text(json.dumps(wss))
    return wss


# --- searching --------------------------------------------------------------------------------

def worker() -> None:
    """In the variant's environment: each job line {"ws", "query", "mode"} -> a result line
    {"ids": [session ids, best first], "ms", "warnings"}."""
    from prima_memory import api
    mems: dict = {}
    for line in sys.stdin:
        job = json.loads(line)
        mem = mems.get(job["ws"]) or mems.setdefault(job["ws"], api.open_memory(job["ws"],
                                                                               lasting=True))
        t = time.perf_counter()
        got = api.search(mem, job["query"], mode=job["mode"], limit=LIMIT)
        ms = (time.perf_counter() - t) * 1000
        print(json.dumps({"ids": [r["session_id"] for r in got["results"]], "ms": ms,
                          "warnings": got["warnings"]}), flush=True)


def searched(env: dict, jobs: list[dict]) -> list[dict]:
    p = subprocess.Popen([sys.executable, __file__, "--worker"], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, cwd=str(REPO))
    out, _ = p.communicate("".join(json.dumps(j) + "\n" for j in jobs), timeout=7200)
    if p.returncode:
        sys.exit(f"locomo: the search worker failed (exit {p.returncode})")
    return [json.loads(line) for line in out.splitlines()]


def rank(ids: list[str], targets: set[str]) -> int:
    """1-based place of the first target among the results; 0 when none is listed."""
    return next((i for i, x in enumerate(ids[:LIMIT], 1) if x in targets), 0)


def figures(ranks: list[int]) -> dict:
    n = max(1, len(ranks))
    return {"n": len(ranks), **{f"hit@{k}": round(sum(0 < r <= k for r in ranks) / n, 3)
                                for k in (1, 5, 10)},
            "mrr": round(sum(1 / r for r in ranks if r) / n, 3)}


def bm25_ranks(convs: dict, qs: list[dict]) -> list[list[str]]:
    engines = {sample: BM25({session_id(sample, n): "\n".join(turn_text(t) for t in turns)
                             for n, (_s, turns) in sessions(conv).items()})
               for sample, conv in convs.items()}
    return [[name for _s, name in engines[q["sample"]].rank(q["query"], LIMIT)] for q in qs]


def main() -> int:
    if "--worker" in sys.argv:
        worker()
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", help="the LoCoMo zip (or its folder of conversations)")
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "locomo"))
    ap.add_argument("--variants", default="production,seed-exact")
    ap.add_argument("--modes", default="combined")
    ap.add_argument("--sample", type=int, default=0,
                    help="every Nth question only (a quick look; 0: all)")
    ap.add_argument("--fresh", action="store_true", help="write, index and embed anew")
    args = ap.parse_args()
    convs = load(args.data)
    qs = questions(convs)
    if args.sample:
        qs = qs[::args.sample]
    out = Path(args.out).resolve()
    rows: dict[str, list[list[str]]] = {"bm25": bm25_ranks(convs, qs)}
    times: dict[str, list[float]] = {}
    for variant in args.variants.split(","):
        root = out / variant
        env = variant_env(root, VARIANTS[variant])
        wss = prepared(root, convs, env, args.fresh)
        for mode in args.modes.split(","):
            got = searched(env, [{"ws": wss[q["sample"]], "query": q["query"], "mode": mode}
                                 for q in qs])
            rows[f"{variant} {mode}"] = [g["ids"] for g in got]
            times[f"{variant} {mode}"] = [g["ms"] for g in got]
            warned = sum(bool(g["warnings"]) for g in got)
            if warned:
                print(f"({variant} {mode}: {warned} searches warned, e.g. "
                      f"{next(g['warnings'] for g in got if g['warnings'])})", file=sys.stderr)
    results = {}
    for name, lists in rows.items():
        ranks = [rank(ids, {session_id(q["sample"], n) for n in q["targets"]})
                 for ids, q in zip(lists, qs)]
        results[name] = {"ranks": ranks, **{split: figures([r for r, q in zip(ranks, qs)
                                                            if q["split"] == split])
                                            for split in ("dev", "test")},
                         "all": figures(ranks)}
        if name in times:
            results[name]["ms_p50"] = round(statistics.median(times[name]), 1)
    (out / "results.json").write_text(json.dumps({"questions": qs, "results": results}))
    print(f"LoCoMo, session level: {len(qs)} questions, {len(convs)} conversations "
          f"({sum(len(sessions(c)) for c in convs.values())} sessions)\n")
    print("| system | split | n | hit@1 | hit@5 | hit@10 | MRR | p50 ms |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        for split in ("dev", "test", "all"):
            f = r[split]
            print(f"| {name} | {split} | {f['n']} | {f['hit@1']:.3f} | {f['hit@5']:.3f} | "
                  f"{f['hit@10']:.3f} | {f['mrr']:.3f} | {r.get('ms_p50', '')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
