"""install.sh's torch step (scripts/cpu_torch.py): a CPU build of torch from PyTorch's CPU index,
else from the default index only when a dry run shows no CUDA package would come, else a clear
refusal that installs nothing; and the check after everything is installed.

Offline and quick: tiny fake wheels (a `torch` 2.13.0+cpu; a `torch` 2.13.0 that requires
`nvidia-cublas-cu12`, as PyPI's Linux x86_64 build does) served as file:// simple indexes, the
machine's pip settings ignored, into a copy of one throwaway venv per test."""
from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

SCRIPT = REPO / "scripts" / "cpu_torch.py"
UNREACHABLE = "http://127.0.0.1:9/simple"  # the discard port: refused at once, offline


def _wheel(folder: Path, name: str, version: str, files: dict[str, str],
           requires: tuple[str, ...] = ()) -> Path:
    """A minimal valid wheel (PEP 427): the files, METADATA, WHEEL and RECORD."""
    dist = f"{name.replace('-', '_')}-{version}"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires)
    files = {**files, f"{dist}.dist-info/METADATA": meta,
             f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\n"
                                        "Root-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{dist}.dist-info/RECORD,,")
    files[f"{dist}.dist-info/RECORD"] = "\n".join(record) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    whl = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
    return whl


def _torch(folder: Path, version: str, cuda: str | None) -> Path:
    return _wheel(folder, "torch", version,
                  {"torch/__init__.py": "from . import version\n",
                   "torch/version.py": f"__version__ = {version!r}\ncuda = {cuda!r}\n"},
                  requires=("nvidia-cublas-cu12==12.4.5.8",) if cuda else ())


def _index(root: Path, wheels: list[Path]) -> str:
    """A PEP 503 simple index of these wheels, as a file:// URL."""
    for whl in wheels:
        project = whl.name.split("-")[0].replace("_", "-").lower()
        page = root / "simple" / project
        page.mkdir(parents=True, exist_ok=True)
        with open(page / "index.html", "a") as f:
            f.write(f'<a href="{whl.as_uri()}">{whl.name}</a>\n')
    return (root / "simple").as_uri()


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("wheels")
    return {"cpu": _torch(d / "cpu", "2.13.0+cpu", None),
            "cuda": _torch(d / "cuda", "2.13.0", "12.4"),
            "plain cpu": _torch(d / "plain", "2.13.0", None),  # macOS, or a CPU mirror
            "nvidia": _wheel(d / "nvidia", "nvidia-cublas-cu12", "12.4.5.8",
                             {"nvidia/cublas/__init__.py": ""})}


@pytest.fixture(scope="module")
def template_venv(tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300,
                   env=_env(tmp_path_factory.mktemp("pip")))
    return venv


@pytest.fixture
def venv(template_venv, tmp_path) -> Path:
    """A copy of the throwaway venv: a new one each test, for the price of a copy."""
    v = tmp_path / "venv"
    shutil.copytree(template_venv, v, symlinks=True)
    return v


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    """No pip setting of this machine (its wheel folder and local indexes would answer)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PRIMA_"))}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "PIP_CACHE_DIR": str(tmp / "pip-cache"),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", **extra}


def _run(venv: Path, tmp: Path, *args: str, cpu_index: str, default_index: str):
    """The script, run by the venv's Python as install.sh runs it; the default index is
    `default_index` (standing in for PyPI)."""
    return subprocess.run([str(venv / "bin" / "python"), str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=300, cwd=str(tmp),
                          env=_env(tmp, PRIMA_TORCH_INDEX=cpu_index, PIP_INDEX_URL=default_index))


def _installed(venv: Path) -> dict[str, str]:
    # run from the venv: from the checkout, `python -c` would see its prima_memory.egg-info
    code = ("from importlib import metadata as m\n"
            "for d in m.distributions(): print(d.metadata['Name'].lower(), d.version)")
    p = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True,
                       text=True, check=True, env=_env(venv), cwd=str(venv))
    return dict(ln.split(" ", 1) for ln in p.stdout.splitlines()
                if not ln.startswith(("pip ", "setuptools ")))


def _cuda(venv: Path) -> str:
    p = subprocess.run([str(venv / "bin" / "python"), "-c",
                        "import torch; print(torch.version.cuda)"],
                       capture_output=True, text=True, env=_env(venv), cwd=str(venv))
    return p.stdout.strip() if p.returncode == 0 else "no torch"


def test_the_cpu_index_first(venv, tmp_path, wheels):
    """PyTorch's CPU index answers: its +cpu build, though PyPI offers the CUDA one."""
    p = _run(venv, tmp_path, "install", "torch==2.13.0",
             cpu_index=_index(tmp_path / "cpu", [wheels["cpu"]]),
             default_index=_index(tmp_path / "pypi", [wheels["cuda"], wheels["nvidia"]]))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "installing torch 2.13.0+cpu (CPU build)" in p.stdout, p.stdout
    assert _installed(venv) == {"torch": "2.13.0+cpu"}
    assert _cuda(venv) == "None"


def test_cpu_index_unreachable_and_pypi_offers_cuda_is_refused_installing_nothing(
        venv, tmp_path, wheels):
    p = _run(venv, tmp_path, "install", "torch==2.13.0", cpu_index=UNREACHABLE,
             default_index=_index(tmp_path / "pypi", [wheels["cuda"], wheels["nvidia"]]))
    assert p.returncode == 1, p.stdout + p.stderr
    out = p.stdout
    assert "error: no CPU build of torch==2.13.0 found" in out and "nothing was installed" in out
    assert f"PyTorch's CPU index ({UNREACHABLE}): " in out, out
    assert ("the default index (PyPI and your pip settings) offers only a CUDA build: torch "
            "2.13.0 with 1 CUDA packages (nvidia-cublas-cu12...)") in out, out
    assert "--index-url https://download.pytorch.org/whl/cpu" in out  # what to do
    assert "PRIMA_TORCH_SPEC=" in out
    assert _installed(venv) == {}
    assert _cuda(venv) == "no torch"


def test_cpu_index_unreachable_and_a_cpu_build_at_the_default_index(venv, tmp_path, wheels):
    """macOS, a mirror with CPU builds, a local wheel: the dry run shows no CUDA package."""
    p = _run(venv, tmp_path, "install", "torch==2.13.0", cpu_index=UNREACHABLE,
             default_index=_index(tmp_path / "pypi", [wheels["plain cpu"]]))
    assert p.returncode == 0, p.stdout + p.stderr
    assert _installed(venv) == {"torch": "2.13.0"} and _cuda(venv) == "None"


def test_a_cpu_wheel_file_as_the_spec(venv, tmp_path, wheels):
    """The way out the refusal names: PRIMA_TORCH_SPEC set to a CPU wheel downloaded by hand."""
    p = _run(venv, tmp_path, "install", str(wheels["cpu"]), cpu_index=UNREACHABLE,
             default_index=_index(tmp_path / "pypi", [wheels["cuda"], wheels["nvidia"]]))
    assert p.returncode == 0, p.stdout + p.stderr
    assert _installed(venv) == {"torch": "2.13.0+cpu"}


def _cuda_install(venv: Path, tmp: Path, wheels) -> None:
    """What the old install.sh left on a Linux x86_64 machine: PyPI's CUDA build."""
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index",
                    "--find-links", str(wheels["cuda"].parent), "--find-links",
                    str(wheels["nvidia"].parent), "torch==2.13.0"],
                   check=True, env=_env(tmp), timeout=300)
    assert _installed(venv) == {"torch": "2.13.0", "nvidia-cublas-cu12": "12.4.5.8"}


def test_a_cuda_build_already_here_is_replaced_once_a_cpu_build_is_at_hand(venv, tmp_path, wheels):
    _cuda_install(venv, tmp_path, wheels)
    pypi = _index(tmp_path / "pypi", [wheels["cuda"], wheels["nvidia"]])
    # no CPU build anywhere: refused, and the CUDA build stays (nothing lost)
    p = _run(venv, tmp_path, "check", cpu_index=UNREACHABLE, default_index=pypi)
    assert p.returncode == 1 and "torch is a CUDA build (CUDA 12.4)" in p.stdout, p.stdout
    assert "nvidia-cublas-cu12" in p.stdout
    p = _run(venv, tmp_path, "install", "torch==2.13.0", cpu_index=UNREACHABLE,
             default_index=pypi)
    assert p.returncode == 1 and "nothing was installed" in p.stdout, p.stdout
    assert _installed(venv) == {"torch": "2.13.0", "nvidia-cublas-cu12": "12.4.5.8"}
    # the CPU index answers: the CUDA build and its packages go, the CPU build comes
    p = _run(venv, tmp_path, "install", "torch==2.13.0",
             cpu_index=_index(tmp_path / "cpu", [wheels["cpu"]]), default_index=pypi)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "removing the CUDA build's packages (torch, nvidia-cublas-cu12)" in p.stdout
    assert _installed(venv) == {"torch": "2.13.0+cpu"} and _cuda(venv) == "None"
    p = _run(venv, tmp_path, "check", cpu_index=UNREACHABLE, default_index=pypi)
    assert p.returncode == 0 and p.stdout == "", p.stdout


def test_a_cpu_build_here_is_kept_and_cuda_packages_beside_it_go(venv, tmp_path, wheels):
    idx = _index(tmp_path / "cpu", [wheels["cpu"]])
    assert _run(venv, tmp_path, "install", "torch==2.13.0", cpu_index=idx,
                default_index=UNREACHABLE).returncode == 0
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index",
                    str(wheels["nvidia"])], check=True, env=_env(tmp_path), timeout=300)
    p = _run(venv, tmp_path, "check", cpu_index=idx, default_index=UNREACHABLE)
    assert p.returncode == 1, p.stdout
    assert "torch is a CPU build, and CUDA packages are installed: nvidia-cublas-cu12" in p.stdout
    # both indexes unreachable: nothing to download, so the CPU build here is kept
    p = _run(venv, tmp_path, "install", "torch==2.13.0", cpu_index=UNREACHABLE,
             default_index=UNREACHABLE)
    assert p.returncode == 0, p.stdout + p.stderr
    assert _installed(venv) == {"torch": "2.13.0+cpu"}


def test_this_venv_holds_a_cpu_torch_and_no_cuda_package():
    """The installed .venv itself, as install.sh left it."""
    python = REPO / ".venv" / "bin" / "python"
    if not python.is_file() or subprocess.run([str(python), "-c", "import torch"],
                                              capture_output=True).returncode:
        pytest.skip("no .venv with torch here (install.sh has not been run)")
    p = subprocess.run([str(python), str(SCRIPT), "check"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0 and p.stdout == "", p.stdout + p.stderr
