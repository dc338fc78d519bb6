"""Make the demo's packaged sample history, prima_memory/sample/demo-history.zip:

    .venv/bin/python bench/demo_sample.py          # write it
    .venv/bin/python bench/demo_sample.py --check  # exit 1 if the packaged one differs

`prima-memory quickstart` shows a demo history where a folder has none of its own. It used to
generate one with the generator in the package; the generator is the benchmarks' now
(bench/synthetic.py), so the demo copies this sample instead (prima_memory/demo.py), moving the
workspace path and every time to the user's. The sample is 12 sessions at the smallest scale
the generator makes (target_bytes=1), from the seed that gives the smallest of them: about
0.9 MB of JSONL, 0.2 MB zipped, with the shapes the demo shows (recent and older sessions,
titles, subagents, tool calls).

The zip holds each file under its path in the project folder, plus manifest.json: the
placeholder workspace, the generator's "now" and each file's mtime in ms. Its bytes are
deterministic (fixed member dates, sorted names), so --check compares them exactly.
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import zipfile
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.synthetic import generate_history  # noqa: E402

OUT = REPO / "prima_memory" / "sample" / "demo-history.zip"
SESSIONS, SEED, TARGET_BYTES = 12, 4, 1
NOW = 1_795_000_000  # the generator's fixed "now"; demo.py moves every time by (its now - NOW)
WORKSPACE = "/prima-memory-sample/Demo Project"  # a placeholder demo.py replaces with the real path


def build() -> bytes:
    """The zip's bytes: the same on every run and machine (same generator, same zlib level)."""
    with tempfile.TemporaryDirectory() as tmp:
        made = generate_history(tmp, WORKSPACE, SESSIONS, seed=SEED, target_bytes=TARGET_BYTES,
                                now=NOW)
        root = Path(made["project_dir"])
        files = sorted(p for p in root.rglob("*") if p.is_file())
        mtimes = {p.relative_to(root).as_posix(): round(p.stat().st_mtime * 1000) for p in files}
        manifest = {"workspace": WORKSPACE, "now": NOW, "sessions": made["sessions"],
                    "made_by": f"bench/demo_sample.py: generate_history(sessions={SESSIONS}, "
                               f"seed={SEED}, target_bytes={TARGET_BYTES}, now={NOW})",
                    "mtime_ms": mtimes}
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            members = [("manifest.json", orjson.dumps(manifest, option=orjson.OPT_INDENT_2))]
            members += [(rel, (root / rel).read_bytes()) for rel in mtimes]
            for name, data in members:
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                z.writestr(info, data, compresslevel=9)
        return buf.getvalue()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the packaged sample")
    args = ap.parse_args()
    data = build()
    if args.check:
        same = OUT.is_file() and OUT.read_bytes() == data
        print(f"{OUT.relative_to(REPO)}: {'up to date' if same else 'differs from the generator'}")
        return 0 if same else 1
    OUT.parent.mkdir(exist_ok=True)
    tmp = OUT.with_suffix(".partial")
    tmp.write_bytes(data)
    os.replace(tmp, OUT)
    print(f"wrote {OUT.relative_to(REPO)}: {len(data):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
