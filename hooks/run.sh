#!/usr/bin/env bash
# Launcher for prima-memory's hooks, MCP server and slash commands. Claude Code copies the plugin
# to a cache folder that changes with every update, so the Python environment is found by a
# stable record, not relative to this file: PRIMA_PYTHON, then the one install.sh recorded, then
# a .venv beside this checkout, then python3 / python / py -3. With none, it exits 0 at once: a
# hook must never break a session.

# UserPromptSubmit comes with every prompt the user types; only /prima-memory:recall and
# /prima-memory:forget need Python.
# So the hook's JSON is read here, and Python starts (and decides exactly) only when its "prompt"
# may start with the command; any other prompt costs this shell alone. (A NUL byte, which Claude
# Code's JSON never holds, is dropped.) It is read up to a byte past the 16 MB Python reads
# (hooks.MAX_INPUT), which then refuses it: a longer input, or one that never ends, is not held.
# And for 2 seconds at most (as Python's own read), by `timeout` or else perl's alarm where either
# exists: an input whose end never comes is not waited for, and Python, told so, logs it and
# exits 0 (what head had read by then is lost with it).
if [ "${1:-}" = hook ] && [ "${2:-}" = user-prompt-submit ]; then
  if command -v timeout >/dev/null 2>&1; then
    { input="$(timeout 2 head -c 16777217)"; } 2>/dev/null
  elif command -v perl >/dev/null 2>&1; then
    { input="$(perl -e 'alarm shift; exec @ARGV' 2 head -c 16777217)"; } 2>/dev/null
  else
    { input="$(head -c 16777217)"; } 2>/dev/null
  fi
  case $? in
    124|142) export PRIMA_HOOK_INPUT_LATE=2 ;;  # (timeout's status; SIGALRM's)
    *)
      ours='"prompt"[[:space:]]*:[[:space:]]*"(\\)?/prima-memory:(recall|forget)'
      [[ $input =~ $ours ]] || exit 0 ;;
  esac
  exec <<<"$input"  # Python reads the JSON from here
fi

# (builtins only from here: each program started, dirname or head, costs every hook and the
# MCP server's start a few milliseconds)
here="${BASH_SOURCE[0]}"
[[ $here == */* ]] || here="./$here"
root="$(cd "${here%/*}/.." 2>/dev/null && pwd)"
recorded="${XDG_CONFIG_HOME:-$HOME/.config}/prima-memory/python"

run() { exec "$@" "$root/hooks/entry.py" "${args[@]}"; }
args=("$@")

if [ -n "${PRIMA_PYTHON:-}" ] && command -v "$PRIMA_PYTHON" >/dev/null 2>&1; then run "$PRIMA_PYTHON"; fi
if [ -r "$recorded" ]; then
  IFS= read -r py < "$recorded"
  [ -n "$py" ] && [ -x "$py" ] && run "$py"
fi
[ -x "$root/.venv/bin/python" ] && run "$root/.venv/bin/python"
for py in python3 python; do
  command -v "$py" >/dev/null 2>&1 && run "$py"
done
command -v py >/dev/null 2>&1 && run py -3
echo "prima-memory: no Python found (run install.sh from the prima-memory folder, or set PRIMA_PYTHON)" >&2
exit 0
