"""install.sh's torch step, run by the venv's Python: a CPU build of torch, or a clear refusal.

    python cpu_torch.py install SPEC   ensure a CPU torch (SPEC: torch==2.13.0, or a wheel file)
    python cpu_torch.py check          exit 1 unless torch is a CPU build and no CUDA package is here

Plain PyPI gives Linux x86_64 the CUDA build of torch, which depends on about 18 nvidia-* packages
and triton: several GB that a machine without an NVIDIA GPU never uses, and prima-memory needs no
GPU. So torch comes from PyTorch's CPU index (PRIMA_TORCH_INDEX to use another), or else from the
default index (PyPI and the user's pip settings) only when a dry run shows that what would come is
free of CUDA packages (macOS, a mirror or a local wheel holding a CPU build). Otherwise nothing is
installed and the message says what to do. Standard library only: it runs before anything else is
installed.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from importlib import metadata

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
HELP = ("install a CPU build of torch into this venv by hand, e.g. `{pip} install torch "
        "--index-url {cpu}` (or download the wheel from {cpu}/torch/ and run install.sh with "
        "PRIMA_TORCH_SPEC=/path/to/that.whl), then run install.sh again")


def say(msg: str) -> None:
    print(f"prima-memory install: {msg}", flush=True)


def is_cuda_package(name: str) -> bool:
    """A distribution only a CUDA build of torch brings: nvidia-* (cuDNN, cuBLAS, NCCL...) and
    triton (also called pytorch-triton on PyTorch's CUDA indexes)."""
    n = re.sub(r"[-_.]+", "-", name).lower()
    return n.startswith("nvidia-") or n in ("triton", "pytorch-triton")


def cuda_packages() -> list[str]:
    return sorted({d.metadata["Name"] for d in metadata.distributions()
                   if d.metadata["Name"] and is_cuda_package(d.metadata["Name"])})


def torch_cuda() -> tuple[bool, str | None]:
    """(torch is installed, its torch.version.cuda), asked in a new process: pip changes the
    environment under this one."""
    p = subprocess.run([sys.executable, "-c", "import torch; print(torch.version.cuda)"],
                       capture_output=True, text=True)
    if p.returncode:
        return False, None
    out = p.stdout.strip().splitlines()
    cuda = out[-1] if out else "None"
    return True, None if cuda == "None" else cuda


def pip(*args: str) -> list[str]:
    return [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]


def plan(spec: str, index_args: list[str], quick: bool) -> tuple[list[dict], str]:
    """What `pip install SPEC` with these index options would install into an empty venv (a dry
    run: nothing is downloaded but metadata), as {name, version, url}; or [] and pip's reason."""
    fd, report = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        # quick: an unreachable index must cost seconds; pip's defaults retry 5 times, 15 s each
        extra = ["--timeout", "10", "--retries", "0"] if quick else []
        p = subprocess.run(pip("install", "--dry-run", "--ignore-installed", "--quiet",
                               "--report", report, *extra, *index_args, spec),
                           capture_output=True, text=True)
        if p.returncode:
            errors = [ln[len("ERROR:"):].strip() for ln in p.stderr.splitlines()
                      if ln.startswith("ERROR:")]
            error = errors[0] if errors else f"pip exited with {p.returncode}"
            if "(from versions: none)" in error:  # pip says no more when it reached nothing
                error += ": unreachable, or it has no such torch"
            return [], error
        with open(report, encoding="utf-8") as f:
            items = json.load(f).get("install", [])
        return [{"name": i["metadata"]["name"], "version": i["metadata"]["version"],
                 "url": i.get("download_info", {}).get("url", "")} for i in items], ""
    finally:
        os.unlink(report)


def find_cpu_build(spec: str) -> tuple[str, list[str], dict] | None:
    """(where, pip's index options, the torch it would install) for the first source whose dry
    run brings no CUDA package; None, having said why, when neither does."""
    cpu = os.environ.get("PRIMA_TORCH_INDEX") or CPU_INDEX
    why = []
    for label, index_args, quick in [
            (f"PyTorch's CPU index ({cpu})", ["--index-url", cpu], True),
            ("the default index (PyPI and your pip settings)", [], False)]:
        items, error = plan(spec, index_args, quick)
        if not items:
            why.append(f"{label}: {error}")
            continue
        gpu = [i["name"] for i in items if is_cuda_package(i["name"])]
        torch = next((i for i in items if i["name"].lower() == "torch"), items[0])
        if not gpu:
            return label, index_args, torch
        why.append(f"{label} offers only a CUDA build: torch {torch['version']} with "
                   f"{len(gpu)} CUDA packages ({', '.join(gpu[:3])}...)")
    say(f"error: no CPU build of {spec} found, and the CUDA build (several GB, of no use without "
        "an NVIDIA GPU) is not wanted: nothing was installed.")
    for line in why:
        say(f"  {line}")
    pip_cmd = os.path.join(os.path.dirname(sys.executable), "pip")
    say("  To go on: " + HELP.format(pip=pip_cmd, cpu=CPU_INDEX))
    return None


def uninstall(names: list[str]) -> bool:
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    say(f"removing the CUDA build's packages ({', '.join(names[:3])}{more})")
    return subprocess.run(pip("uninstall", "-y", "-q", *names)).returncode == 0


def install(spec: str) -> int:
    have, cuda = torch_cuda()
    leftovers = cuda_packages()
    if have and cuda is None:  # a CPU build is here already; CUDA packages beside it are unused
        return 0 if not leftovers or uninstall(leftovers) else 1
    found = find_cpu_build(spec)
    if found is None:
        return 1
    label, index_args, torch = found
    # Only now that a CPU build is at hand does a CUDA one (an older install.sh put it) go.
    if (have or leftovers) and not uninstall((["torch"] if have else []) + leftovers):
        return 1
    say(f"installing torch {torch['version']} (CPU build) from {torch['url'] or label}")
    if subprocess.run(pip("install", "--quiet", *index_args, spec)).returncode:
        say(f"error: could not install {spec} from {label}")
        return 1
    return check()


def check() -> int:
    have, cuda = torch_cuda()
    found = cuda_packages()
    if have and cuda is None and not found:
        return 0
    what = ("torch is not installed" if not have else
            f"torch is a CUDA build (CUDA {cuda})" if cuda else "torch is a CPU build")
    if found:
        what += f", and CUDA packages are installed: {', '.join(found[:3])}"
        what += f" and {len(found) - 3} more" if len(found) > 3 else ""
    say(f"error: {what}; run install.sh again: it puts a CPU build of torch in place of a CUDA "
        "one and removes the CUDA packages")
    return 1


def main(argv: list[str]) -> int:
    if argv[:1] == ["install"] and len(argv) == 2:
        return install(argv[1])
    if argv == ["check"]:
        return check()
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
