#!/usr/bin/env bash
# Every test, offline, as CI runs them: the tests' own packages (pytest, pytest-xdist, the mcp
# SDK's client, pyte, onnx) go into .venv the first time, so install.sh keeps the venv to what
# prima-memory needs; then pytest on every core (pytest-xdist). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
[ -x .venv/bin/python ] || { echo "test.sh: run ./install.sh first (no .venv here)" >&2; exit 1; }
if ! .venv/bin/python -c 'import pytest, xdist, mcp, pyte, onnx' 2>/dev/null; then
  echo "test.sh: installing the tests' packages into .venv (once)"
  .venv/bin/pip install --disable-pip-version-check -q -e '.[test]' \
    --config-settings editable_mode=compat
  .venv/bin/python scripts/launcher.py .venv/bin/prima-memory  # (pip wrote its own again)
fi
exec .venv/bin/python -m pytest -q "$@"  # on every core: addopts in pyproject.toml
