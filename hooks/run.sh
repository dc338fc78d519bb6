#!/usr/bin/env bash
# Launcher for prima-memory's hooks, MCP server and slash commands. Claude Code copies the plugin
# to a cache folder that changes with every update, so the Python environment is found by a
# stable record, not relative to this file: PRIMA_PYTHON, then the one install.sh recorded, then
# a .venv beside this checkout, then python3 / python / py -3. With none, it exits 0 at once: a
# hook must never break a session.

# Two hooks come often and mostly have nothing to say, so their JSON is read here first and
# Python starts (and decides exactly) only when it may have something to say; anything else
# costs this shell alone.
# - UserPromptSubmit, with every prompt the user types: /prima-memory:recall and
#   /prima-memory:forget need Python, and a prompt of a few words when pointers from prompts
#   are on (PRIMA_PROMPT_NOTES).
# - PreToolUse, before Claude changes a file: only a file whose name an earlier session changed
#   (the memory's list, prima_memory/changed_names.py) can have a note. A path spelled with an
#   escape, no list, or a list or folder that is a link, a FIFO or unreadable: Python decides.
# The input is read up to a byte past the 16 MB Python reads (hooks.MAX_INPUT), which then
# refuses it: a longer input, or one that never ends, is not held. And for 2 seconds at most (as
# Python's own read), by `timeout` or else perl's alarm where either exists: an input whose end
# never comes is not waited for, and Python, told so, logs it and exits 0 (what head had read by
# then is lost with it). (A NUL byte, which Claude Code's JSON never holds, is dropped.)
off() {  # an on/off setting as settings.flag reads it: 0, off, false or no, in any case
  case "${1//[[:space:]]/}" in 0|[oO][fF][fF]|[fF][aA][lL][sS][eE]|[nN][oO]) return 0 ;; esac
  return 1
}
if [ "${1:-}" = hook ] && { [ "${2:-}" = user-prompt-submit ] || [ "${2:-}" = pre-tool-use ]; }; then
  if [ "$2" = pre-tool-use ] && { off "${PRIMA_MEMORY:-}" || off "${PRIMA_EDIT_NOTES:-}"; }; then
    exit 0
  fi
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
      if [ "$2" = user-prompt-submit ]; then
        ours='"prompt"[[:space:]]*:[[:space:]]*"(\\)?/prima-memory:(recall|forget)'
        long='"prompt"[[:space:]]*:[[:space:]]*"([^"\\]|\\.){12}'
        # any other prompt: Python only to point at an earlier session it is plainly about, when
        # that is on (its default is hooks.PROMPT_NOTES's) and the prompt has a few words
        if ! [[ $input =~ $ours ]]; then
          if off "${PRIMA_PROMPT_NOTES:-on}" || off "${PRIMA_MEMORY:-}" || ! [[ $input =~ $long ]]
          then exit 0
          fi
        fi
      else
        named='"(file_path|notebook_path)"[[:space:]]*:[[:space:]]*"([^"\\]*)"'
        list="${CLAUDE_PROJECT_DIR:-}/.prima-memory"
        if [ -n "${CLAUDE_PROJECT_DIR:-}" ] && [[ $input =~ $named ]] && [ ! -L "$list" ] \
            && list="$list/changed-names" && [ -f "$list" ] && [ ! -L "$list" ]; then
          LC_ALL=C grep -Fxq -e "${BASH_REMATCH[2]##*/}" -- "$list" 2>/dev/null
          [ $? = 1 ] && exit 0  # (not there: no history. 2, 127: unreadable, no grep: Python)
        fi
      fi ;;
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
