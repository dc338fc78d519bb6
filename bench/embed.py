"""Benchmark of the embedding layer: the production path (the int8 ONNX build, as embed.load()
picks it) against sentence-transformers (the reference), on the same texts, in one run.

    .venv/bin/python bench/embed.py [--n 300] [--threads 2] [--rounds 3] [--history DIR]

Texts: exchanges (a prompt and a reply, cut to 2,000 characters, as the index embeds them) read
from the Claude Code history that bench/run.py generates (bench/out/M) when it is there, else
texts of its own; and the same history joined into 2,000-character texts (the longest an exchange
gets). Each is split into windows as production does. For each set: encode rate of both paths
(best of --rounds, taken in turns so a noisy neighbour hits both alike), the ratio, and the
cosine between their vectors. Also the import and load time of each path, each in a fresh
interpreter. Prints a markdown report.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from prima_memory import embed  # noqa: E402  (cheap: nothing heavy at import)

CUT = 2000


def _exchange_text(prompt, reply):
    try:  # the index's own rule, when that module is there
        from prima_memory.semantic import exchange_text
        return exchange_text(prompt, reply)
    except Exception:  # noqa: BLE001 - an older checkout: the benchmark's own rule
        text = f"{prompt}\n\n{reply}" if prompt and reply else (prompt or reply or "")
        return text[:CUT]


def _text_of(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content
                         if isinstance(p, dict) and p.get("type") == "text")
    return ""


def history_exchanges(root: str, n: int) -> list[str]:
    """Up to n exchanges from the transcripts under root, a few from each of many sessions."""
    import orjson
    files = sorted(glob.glob(os.path.join(root, "**", "*.jsonl"), recursive=True))
    files = [f for f in files if "/subagents/" not in f]
    out: list[str] = []
    per_file = max(1, n // max(1, min(len(files), 100)))
    for f in files:
        prompt, got = None, 0
        with open(f, "rb") as fh:
            for line in fh:
                try:
                    d = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                msg = d.get("message") if isinstance(d, dict) else None
                if not isinstance(msg, dict):
                    continue
                text = _text_of(msg.get("content")).strip()
                if d.get("type") == "user" and text:
                    prompt = text
                elif d.get("type") == "assistant" and text:
                    out.append(_exchange_text(prompt, text))
                    got += 1
                    if got >= per_file or len(out) >= n:
                        break
        if len(out) >= n:
            break
    return out


def own_texts(n: int) -> list[str]:
    from prima_memory.embed_build import verification_texts
    base = verification_texts()
    return [base[i % len(base)] for i in range(n)]


def child(backend: str) -> None:
    """In a fresh interpreter: import and load one path, embed one text; print the times."""
    t0 = time.perf_counter()
    if backend == "onnx":
        import numpy  # noqa: F401
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    else:
        embed.offline_env()
        import sentence_transformers  # noqa: F401
    t1 = time.perf_counter()
    e = embed.load(backend)
    t2 = time.perf_counter()
    e.encode(["how did we fix the flaky websocket test?"])
    t3 = time.perf_counter()
    print(json.dumps({"import": t1 - t0, "load": t2 - t1, "first": t3 - t2,
                      "variant": e.variant, "torch": "torch" in sys.modules}))


def startup(backend: str) -> dict:
    r = subprocess.run([sys.executable, __file__, "--child", backend], capture_output=True,
                       text=True, env=os.environ.copy())
    if r.returncode:
        raise SystemExit(f"{backend} child failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300, help="exchanges to take (default 300)")
    ap.add_argument("--threads", type=int, default=2, help="threads for both paths (default 2)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--history", default=os.path.join(REPO, "bench", "out", "M"))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ["PRIMA_EMBED_THREADS"] = str(args.threads)
    if args.child:
        child(args.child)
        return

    manifest = embed.read_manifest() or {}
    try:
        embed.load_onnx(embed.model_dir())
    except embed.ModelUnavailable as e:
        raise SystemExit(f"no usable ONNX build: {e}") from None

    if os.path.isdir(args.history):
        source = f"exchanges from {os.path.relpath(args.history, REPO)}"
        exchanges = history_exchanges(args.history, args.n)
    else:
        source = "built-in texts (no bench history: run bench/run.py to generate one)"
        exchanges = own_texts(args.n)
    joined = "\n\n".join(exchanges)
    long_texts = [joined[i:i + CUT] for i in range(0, len(joined), CUT)][:max(1, args.n // 3)]

    starts = {b: startup(b) for b in ("sentence-transformers", "onnx")}

    st = embed.load("sentence-transformers")
    prod = embed.load()  # what production gets
    sets = {}
    for name, texts in (("exchanges", exchanges), ("2,000-char texts", long_texts)):
        windows = [w for t in texts for w in prod.windows(t)]
        assert windows == [w for t in texts for w in st.windows(t)], "windows differ by backend"
        tokens = sum(min(len(prod._enc_tok.encode(w).ids), prod.max_tokens) for w in windows)
        sets[name] = (texts, windows, tokens)

    rows = []
    for name, (texts, windows, tokens) in sets.items():
        st.encode(windows[:args.batch], args.batch)  # warm both
        prod.encode(windows[:args.batch], args.batch)
        best = {"st": 1e9, "prod": 1e9}
        for _ in range(args.rounds):
            for key, emb in (("st", st), ("prod", prod)):
                t = time.perf_counter()
                vecs = emb.encode(windows, args.batch)
                best[key] = min(best[key], time.perf_counter() - t)
                if key == "st":
                    ref = vecs
                else:
                    got = vecs
        cos = (ref * got).sum(axis=1)
        n = len(windows)
        rows.append((name, len(texts), n, tokens / n, n / best["st"], n / best["prod"],
                     best["st"] / best["prod"], float(cos.mean()), float(cos.min())))

    print(f"# Embedding benchmark ({args.threads} threads, batch {args.batch}, best of "
          f"{args.rounds} rounds)\n")
    print(f"Texts: {source}. Production path: {prod!r}"
          f"{' - ' + prod.note if prod.note else ''}; build recipe: fp32 nodes "
          f"{len((manifest.get('recipe') or {}).get('fp32_nodes', []))}, "
          f"verification at build {manifest.get('verification', {}).get('mean_cosine')} mean / "
          f"{manifest.get('verification', {}).get('min_cosine')} min.\n")
    print("| texts | count | windows | tokens/window | sentence-transformers windows/s "
          "| production (onnx int8) windows/s | ratio | cosine mean | cosine min |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.0f} | {r[4]:.1f} | {r[5]:.1f} | "
              f"**{r[6]:.2f}x** | {r[7]:.4f} | {r[8]:.4f} |")
    print("\n| start-up, fresh interpreter | import | load | first embedding | total | torch imported |")
    print("|---|---|---|---|---|---|")
    for b, s in starts.items():
        print(f"| {b} ({s['variant']}) | {s['import']:.2f} s | {s['load']:.2f} s | "
              f"{s['first']:.2f} s | {s['import'] + s['load'] + s['first']:.2f} s | "
              f"{'yes' if s['torch'] else 'no'} |")


if __name__ == "__main__":
    main()
