"""Build the int8 ONNX copy of the embedding model, once, at install time (install.sh runs this).

    python -m prima_memory.embed_build [--out DIR] [--check-only] [--force] [--verbose]

The model folder (embed.model_dir()) is exported with torch to ONNX, its weights quantised to int8
per channel, and the result checked against sentence-transformers on a built-in set of ~100
varied texts. embed.load() uses the build only when that check passed and the manifest names the
very model folder in use. Run again with the build up to date, this is a no-op (no torch import).

Recipe, chosen by measurement on the verification texts: onnxruntime's dynamic int8 quantisation,
per channel, of every MatMul and the embedding tables, except the FFN output projection of the
first two layers and the attention output projection of every layer. The FFN outputs take the
GELU output, whose outliers int8 activations render worst; keeping those two fp32 raised the
cosine vs sentence-transformers from 0.992 mean / 0.973 min to 0.995 / 0.981 for ~8% of the
speed (all six: 0.996 / 0.987 but ~20% slower; per tensor instead of per channel: 0.92-0.95
mean). With transformers 5.24 / sentence-transformers 6.3 the same recipe gave 0.9925 / 0.956
(a Korean prompt of rare tokens: below the bar, so every install fell back to
sentence-transformers); the attention output projections (384 x 384, small) kept fp32 too bring
it to 0.9946 / 0.983 at the same speed and 2 MB more (measured 2026-12-02). Fusing the graph
first with onnxruntime.transformers.optimizer (BERT attention, SkipLayerNorm, BiasGelu) made it
no faster, as onnxruntime fuses at session start anyway, so it is not done; instead the graph
onnxruntime makes at session start (the extended level) is saved once here, and a load has
nothing left to optimise: the vectors are the same (BUILD_FORMAT 3; manifest "vectors_id").

Output: DIR/manifest.json and DIR/<model>-int8-<hash>.onnx, DIR defaulting to
<venv>/share/prima-memory/models (embed.build_dir()): inside the environment, never in the plugin
folder, never downloaded at run time. Exit status: 0 a verified build is in place, 2 a build is in
place but failed verification (sentence-transformers is used), 1 no build (error, or --check-only
found none up to date). The last line on stdout is a one-line summary.
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import inspect
import json
import logging
import os
import random
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from importlib import metadata

from . import embed

MIN_MEAN_COSINE = 0.99  # the bar for "verified": mean cosine vs sentence-transformers fp32
MIN_MIN_COSINE = 0.97   # and no text worse (the worst are 1-3 token texts like "ok": ~0.98)
FP32_FFN_OUT_LAYERS = (0, 1)  # layers whose FFN output MatMul stays fp32 (see the docstring)
FP32_ATTENTION_OUT = "attention/output/dense/MatMul"  # every layer's stays fp32 too


# ---------------------------------------------------------------------------------------------
# The verification texts: what the index embeds (prompts, replies, code, paths, logs), short and
# long (past the 256-token cut), ASCII and not. Deterministic.

_QUERIES = [  # what people type into a search: short, so the hardest case for int8
    "auth token", "database migration", "flaky test", "retry backoff", "cache invalidation",
    "kubernetes", "why did the deploy fail", "websocket reconnect", "dark mode", "timeout",
    "memory leak in worker", "rate limit",
]

_PROMPTS = [
    "fix the failing test in test_auth.py",
    "why is the build so slow?",
    "add a --dry-run flag to the deploy script",
    "rename UserStore to AccountStore everywhere",
    "can you explain what this regex does: ^(?:[a-z0-9!#$%&'*+/=?^_`{|}~-]+)@example\\.com$",
    "the websocket reconnect loop spins at 100% CPU after the server restarts",
    "write a migration that adds a NOT NULL column with a default",
    "ok",
    "yes, go ahead",
    "revert that last change",
    "what did we decide about the cache invalidation strategy last week?",
    "bump the Node version to 22 in CI and fix whatever breaks",
    "Summarise the open issues about flaky integration tests",
    "make the retry backoff exponential with jitter, max 30s",
    "TypeError: Cannot read properties of undefined (reading 'map')",
    "where do we configure the kubernetes liveness probe?",
    "use ripgrep instead of grep in the search helper",
    "split config.go into smaller files, it's over 900 lines",
    "port the bash installer to PowerShell",
    "is this idempotent if it runs twice?",
]

_CODE = [
    "def retry(fn, attempts=5, base=0.5):\n    for i in range(attempts):\n        try:\n"
    "            return fn()\n        except TimeoutError:\n            time.sleep(base * 2 ** i)\n"
    "    raise RuntimeError('gave up')",
    "SELECT s.id, count(m.id) AS n FROM sessions s LEFT JOIN messages m ON m.session = s.id\n"
    "WHERE s.ended_at > ? GROUP BY s.id HAVING n > 10 ORDER BY n DESC LIMIT 20;",
    "export async function fetchUser(id: string): Promise<User> {\n  const res = await "
    "fetch(`/api/users/${id}`);\n  if (!res.ok) throw new Error(`HTTP ${res.status}`);\n"
    "  return res.json() as Promise<User>;\n}",
    "func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {\n\tw.Header().Set("
    "\"Content-Type\", \"application/json\")\n\tjson.NewEncoder(w).Encode(map[string]bool{\"ok\": "
    "true})\n}",
    "#!/usr/bin/env bash\nset -euo pipefail\nfor f in \"$@\"; do\n  gzip -9 -- \"$f\" && echo "
    "\"compressed $f\"\ndone",
    "diff --git a/src/cache.py b/src/cache.py\n@@ -12,7 +12,9 @@ class Cache:\n-    ttl = 60\n"
    "+    ttl = 300\n+    # five minutes: the upstream rate limit resets every 300 s\n",
    "Traceback (most recent call last):\n  File \"/app/worker.py\", line 88, in run\n    job = "
    "queue.get(timeout=5)\n  File \"/usr/lib/python3.11/queue.py\", line 179, in get\n"
    "    raise Empty\n_queue.Empty",
    "{\"name\": \"web\", \"version\": \"2.4.1\", \"scripts\": {\"test\": \"vitest run\", "
    "\"build\": \"vite build\"}, \"dependencies\": {\"react\": \"^19.0.0\"}}",
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\nspec:\n  replicas: 3\n"
    "  template:\n    spec:\n      containers:\n        - name: api\n          image: api:1.9.2",
    "impl Drop for Guard {\n    fn drop(&mut self) {\n        if let Err(e) = self.file.unlock() "
    "{\n            eprintln!(\"unlock failed: {e}\");\n        }\n    }\n}",
    "/home/dev/projects/shop/services/billing/internal/invoice/render_test.go:142: expected "
    "total 1299, got 1300",
    "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\nnpm ERR! peer "
    "react@\"^18\" from react-dom@18.3.1",
]

_NON_ASCII = [
    "Bitte prüfe, warum der Export nach der Umstellung auf UTF-8 fehlschlägt.",
    "Le cache n'est pas invalidé après la mise à jour du schéma ; corrige ça s'il te plaît.",
    "ログインページのテストが失敗しています。原因を調べてください。",
    "把这个函数改成异步的，并加上超时处理。",
    "Почему сборка падает на этапе линковки? Ошибка: undefined reference to `pthread_create`.",
    "إصلاح خطأ الترميز في ملف الإعدادات",
    "로그 파일이 너무 커졌어요. 순환 정책을 추가해 주세요.",
    "Deploy done ✅ — 3 pods healthy, p95 latency 182 ms 🚀",
    "naïve café résumé coöperate Zoë façade — İstanbul ŞİŞLİ ﬁle ½ ²",
    "Ελέγξτε γιατί αποτυγχάνει η μετάβαση της βάσης δεδομένων.",
    "Tiếng Việt: sửa lỗi hiển thị dấu trong tiêu đề trang.",
    "e\u0301 a\u0300 o\u0308 n\u0303: combining marks, and zero\u200bwidth space, and 🇫🇷 flags 👩‍💻",
]

_SENTENCES = [
    "I looked at how the indexer reads the session files before changing anything.",
    "The slow part is not the parsing but the per-row transaction around each insert.",
    "Batching the inserts into one transaction per file brings the cold index down a lot.",
    "There is a subtle issue with the retry loop: it never resets the backoff after a success.",
    "I added a regression test that fails on the old code and passes with the fix.",
    "The migration is written so that running it twice leaves the schema unchanged.",
    "Next I checked the websocket handler, which holds a lock while it awaits the network.",
    "That lock is the reason the reconnect storm pins one core at one hundred per cent.",
    "Moving the await outside the critical section removes the contention entirely.",
    "The configuration loader now reports the file and line of any invalid key.",
    "Old caches are invalidated by version stamp instead of by time, which avoids stale reads.",
    "All forty-two tests pass locally, including the flaky integration suite, five runs in a row.",
    "I could not reproduce the crash on Linux; it seems specific to the macOS file watcher.",
    "The deploy script now refuses to run with uncommitted changes unless --force is given.",
    "Here is a summary of what changed and why, with the files touched in each step.",
    "Performance is about three times better on the large fixture and unchanged on small ones.",
    "The remaining risk is the lack of an index on the timestamp column for range queries.",
    "I left a TODO where the error message should suggest the command that fixes it.",
]


def verification_texts() -> list[str]:
    """About 100 texts: prompts, code and logs, other scripts, and prose past 256 tokens."""
    rnd = random.Random(20260801)
    texts = list(_QUERIES) + list(_PROMPTS) + list(_CODE) + list(_NON_ASCII)
    for i in range(20):  # long replies (400-600 tokens: the model reads the first 256)
        texts.append(" ".join(rnd.sample(_SENTENCES, len(_SENTENCES)))[: 1500 + 25 * i])
    for _ in range(16):  # exchanges: a prompt, then a reply mixing prose, paths and code
        reply = " ".join(rnd.sample(_SENTENCES, rnd.randint(2, 6)))
        texts.append(f"{rnd.choice(_PROMPTS)}\n\n{reply}\n\n{rnd.choice(_CODE)}"[:2000])
    for _ in range(8):  # mixed-language exchanges
        texts.append(f"{rnd.choice(_NON_ASCII)}\n\n{' '.join(rnd.sample(_SENTENCES, 4))}")
    return texts


# ---------------------------------------------------------------------------------------------


def _versions() -> dict:
    """Versions that decide whether a build still holds (onnxruntime runs it) or tell how it was
    made; read from package metadata, without importing anything."""
    out: dict[str, str | None] = {}
    for dist in ("onnxruntime", "onnx", "torch", "transformers", "sentence-transformers",
                 "tokenizers"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def status(out: str, mdir: str) -> tuple[str, dict, str]:
    """('current' | 'stale', manifest, reason) for the build in `out` and the model in `mdir`."""
    manifest, why = embed.build_state(mdir, out)
    if why is None:
        try:  # damaged in place (same size): made again, like a missing one
            embed.read_build(manifest, out)
        except embed.ModelUnavailable as e:
            why = str(e)
    if why is None:
        have = (manifest.get("versions") or {}).get("onnxruntime")
        now = _versions()["onnxruntime"]
        if now is None:
            why = "onnxruntime is not installed"
        elif have != now:
            why = f"built with onnxruntime {have}, now {now}"
    return ("stale" if why else "current"), manifest, why or ""


def _pooling(mdir: str) -> str:
    """The pooling of the model's sentence-transformers pipeline, which the ONNX path redoes in
    numpy; a pipeline with other modules (Dense layers...) is refused."""
    try:
        with open(os.path.join(mdir, "modules.json"), encoding="utf-8") as f:
            modules = json.load(f)
    except (OSError, ValueError):
        return "mean"  # a plain transformers folder: sentence-transformers adds mean pooling
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    if kinds[:2] != ["Transformer", "Pooling"] or any(k != "Normalize" for k in kinds[2:]):
        raise RuntimeError(f"the model's pipeline {kinds} is not Transformer + Pooling "
                           "(+ Normalize); only sentence-transformers can run it")
    with open(os.path.join(mdir, modules[1].get("path", "1_Pooling"), "config.json"),
              encoding="utf-8") as f:
        cfg = json.load(f)
    modes = [k for k, v in cfg.items() if k.startswith("pooling_mode") and v is True]
    if modes == ["pooling_mode_mean_tokens"]:
        return "mean"
    if modes == ["pooling_mode_cls_token"]:
        return "cls"
    raise RuntimeError(f"pooling {modes} is not supported by the ONNX path")


def export_fp32(mdir: str, path: str) -> None:
    """The transformer to ONNX: inputs input_ids and attention_mask (batch and sequence dynamic),
    output the last hidden state; pooling is done in numpy."""

    embed.offline_env()
    # optional, heavy (seconds): the semantic extra, for the export only
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()
    # eager attention: the plain MatMul/Softmax graph that onnxruntime fuses and quantises
    model = AutoModel.from_pretrained(mdir, attn_implementation="eager")
    model.eval()
    takes_types = "token_type_ids" in inspect.signature(model.forward).parameters

    class Wrapper(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            kw = {"input_ids": input_ids, "attention_mask": attention_mask}
            if takes_types:  # one sentence: all zeros, as the tokenizer would give
                kw["token_type_ids"] = torch.zeros_like(input_ids)
            return self.m(**kw).last_hidden_state

    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.long)
    mask = (ids != 0).long()
    axes = {0: "batch", 1: "sequence"}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer warnings about Python booleans: expected here
        torch.onnx.export(Wrapper(model), (ids, mask), path, dynamo=False, opset_version=17,
                          input_names=["input_ids", "attention_mask"],
                          output_names=["last_hidden_state"],
                          dynamic_axes={"input_ids": axes, "attention_mask": axes,
                                        "last_hidden_state": axes})


def quantize_int8(src: str, dst: str) -> list[str]:
    """Dynamic int8, per channel; returns the MatMuls kept fp32."""
    # optional, heavy: what only making a build needs (onnx is installed for this alone)
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    graph = onnx.load(src, load_external_data=False).graph
    keep = [n.name for n in graph.node if n.op_type == "MatMul" and (any(
        f"layer.{k}/output/dense/MatMul" in n.name for k in FP32_FFN_OUT_LAYERS)
        or FP32_ATTENTION_OUT in n.name)]
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # the quantiser logs advice on the root logger at WARNING
    try:
        quantize_dynamic(src, dst, weight_type=QuantType.QInt8, per_channel=True,
                         nodes_to_exclude=keep)
    finally:
        root.setLevel(level)
    return keep


def optimize_graph(src: str, dst: str) -> None:
    """The graph as onnxruntime optimises it on every load (fusions, constant folding), saved:
    a process then loads it with no optimisation to do (a third of the session's making). The
    extended level, not "all": what it saves holds on any CPU."""
    import onnxruntime as ort  # (with the model: the semantic extra)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    opts.optimized_model_filepath = dst
    opts.log_severity_level = 3
    ort.InferenceSession(src, opts, providers=["CPUExecutionProvider"])


def verify(mdir: str, onnx_path: str, pooling: str, optimized: bool = False) -> dict:
    """Cosine between the build's vectors and sentence-transformers' on verification_texts()."""
    texts = verification_texts()
    ref = embed.SentenceTransformerEmbedder(mdir).encode(texts)
    got = embed.OnnxEmbedder(mdir, onnx_path, pooling, optimized=optimized).encode(texts)
    cos = (ref * got).sum(axis=1)
    mean, low = float(cos.mean()), float(cos.min())
    return {"texts": len(texts), "mean_cosine": round(mean, 5), "min_cosine": round(low, 5),
            "worst_text": texts[int(cos.argmin())][:80],
            "threshold_mean": MIN_MEAN_COSINE, "threshold_min": MIN_MIN_COSINE,
            "reference": "sentence-transformers fp32",
            "passed": mean >= MIN_MEAN_COSINE and low >= MIN_MIN_COSINE}


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def build(out: str, mdir: str, log=lambda s: None) -> dict:
    """Export, quantise and verify into `out`; returns the manifest written. Files appear by
    rename only, the manifest last: a reader sees the old build or the new one, whole."""
    started = time.time()
    pooling = _pooling(mdir)
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".build-", dir=out)
    try:
        fp32, int8 = os.path.join(work, "fp32.onnx"), os.path.join(work, "int8.onnx")
        ready = os.path.join(work, "int8-optimized.onnx")
        log("exporting to ONNX")
        export_fp32(mdir, fp32)
        log("quantising to int8")
        kept = quantize_int8(fp32, int8)
        optimize_graph(int8, ready)
        log("checking against sentence-transformers")
        check = verify(mdir, ready, pooling, optimized=True)
        sha = _sha256(ready)
        name = f"{embed.model_name(mdir)}-int8-{sha[:12]}.onnx"
        os.replace(ready, os.path.join(out, name))
        manifest = {
            "format": embed.BUILD_FORMAT,
            "model": embed.model_name(mdir),
            "model_dir": mdir,
            "weights": embed.weights_fingerprint(mdir),
            "variant": embed.VARIANT_ONNX,
            "onnx_file": name,
            "onnx_size": os.path.getsize(os.path.join(out, name)),
            "onnx_sha256": sha,
            # its vectors' identity: the quantised graph's, which its optimised form computes
            # as every load optimised it before (builds of format 2 kept it unoptimised): the
            # vectors of an index stay current across that change
            "vectors_id": _sha256(int8),
            "graph_optimized": "extended",
            "pooling": pooling,
            "max_seq_length": embed._st_config(mdir).get("max_seq_length"),
            "recipe": {"export": "torch.onnx.export dynamo=False opset 17, eager attention",
                       "quantization": "quantize_dynamic QInt8 per_channel",
                       "graph": "onnxruntime ORT_ENABLE_EXTENDED, saved",
                       "fp32_nodes": kept},
            "versions": _versions(),
            "verification": check,
            "verified": bool(check["passed"]),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "build_seconds": round(time.time() - started, 1),
        }
        tmp = os.path.join(work, embed.MANIFEST)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1, ensure_ascii=False)
            f.write("\n")
        os.replace(tmp, os.path.join(out, embed.MANIFEST))
        for old in glob.glob(os.path.join(out, "*.onnx")):  # earlier builds
            if os.path.basename(old) != name:
                os.remove(old)
        return manifest
    finally:
        shutil.rmtree(work, ignore_errors=True)


def summary(manifest: dict, out: str, what: str) -> str:
    v = manifest.get("verification") or {}
    cos = f"cosine vs sentence-transformers mean {v.get('mean_cosine')} / min {v.get('min_cosine')}"
    if manifest.get("verified"):
        return f"{what}: {manifest.get('model')} {manifest.get('variant')} ({cos}) in {out}"
    return (f"{what} but NOT verified ({cos}; needs mean >= {MIN_MEAN_COSINE}, min >= "
            f"{MIN_MIN_COSINE})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m prima_memory.embed_build",
                                 description="Build the int8 ONNX copy of the embedding model.")
    ap.add_argument("--out", help=f"output folder (default {embed.build_dir()})")
    ap.add_argument("--check-only", action="store_true",
                    help="only say whether the build is up to date (exit 0) or not (exit 1)")
    ap.add_argument("--force", action="store_true", help="rebuild even when up to date")
    ap.add_argument("--verbose", action="store_true", help="progress and tracebacks on stderr")
    args = ap.parse_args(argv)
    embed.offline_env()
    out = os.path.abspath(args.out or embed.build_dir())
    try:
        mdir = embed.model_dir()
    except embed.ModelUnavailable as e:
        print(f"ONNX build: no model: {e}")
        return 1
    state, manifest, why = status(out, mdir)
    if state == "current" and not args.force:
        print(summary(manifest, out, "ONNX build up to date"))
        return 0 if manifest.get("verified") else 2
    if args.check_only:
        print(f"ONNX build not up to date: {why}")
        return 1
    from filelock import FileLock  # late: 33 ms an up-to-date check never needs
    os.makedirs(out, exist_ok=True)
    with FileLock(os.path.join(out, ".build.lock")):  # a second install.sh waits, then no-ops
        state, manifest, why = status(out, mdir)
        if state == "current" and not args.force:
            print(summary(manifest, out, "ONNX build up to date"))
            return 0 if manifest.get("verified") else 2
        print(f"prima-memory: building the int8 ONNX model ({why or 'forced'}; 15-30 s, once)",
              file=sys.stderr, flush=True)
        log = (lambda s: print(f"  {s}", file=sys.stderr, flush=True)) if args.verbose else (
            lambda s: None)
        try:
            manifest = build(out, mdir, log)
        except Exception as e:  # noqa: BLE001 - any failure: semantic search falls back, warned
            if args.verbose:
                traceback.print_exc()
            first = str(e).splitlines()[0] if str(e) else ""
            print(f"ONNX build failed: {type(e).__name__}: {first}"[:300])
            return 1
    print(summary(manifest, out, f"ONNX build made in {manifest['build_seconds']} s"))
    return 0 if manifest.get("verified") else 2


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # noqa: BLE001 - install.sh shows one line, whatever went wrong
        print(f"ONNX build failed: {type(e).__name__}: {e}".splitlines()[0][:300])
        sys.exit(1)
