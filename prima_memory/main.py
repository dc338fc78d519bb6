"""The `prima-memory` command: hands each run to one front end, side by side: the hooks
(`prima-memory hook EVENT`, hooks.py), the MCP server (`prima-memory mcp`, mcp_server.py) or the
command line (everything else, cli.py and commands.py). None of them imports another; this is
the one module that names them all, and it loads only the one that runs: Claude Code waits for
the hooks and the MCP server."""
from __future__ import annotations

import sys


def direct_call(argv: list[str]) -> tuple[list[str], str | None] | None:
    """(the words, workspace) for `hook EVENT` and `mcp`, with --workspace DIR and --json
    anywhere among them, which skip argparse: a hook because argparse's errors exit 2, which
    Claude Code reads as "block"; both because Claude Code waits for them, and argparse costs
    milliseconds. (--json changes nothing there: a hook prints its context block, the server
    JSON-RPC.)"""
    ws = None
    words: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--workspace" and i + 1 < len(argv):
            ws = argv[i + 1]
            i += 2
            continue
        if a.startswith("--workspace="):
            ws = a.split("=", 1)[1]
        elif a != "--json":
            words.append(a)
        i += 1
    if (len(words) >= 2 and words[0] == "hook") or words == ["mcp"]:
        return words, ws
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    direct = direct_call(argv)
    if direct is None:
        # only the front end that runs (above)
        from . import cli
        return cli.main(argv)
    words, ws = direct
    if words == ["mcp"]:
        # only the front end that runs (above)
        from . import mcp_server
        from .workspace import resolve_workspace
        return mcp_server.serve(resolve_workspace(ws))
    # only the front end that runs (above)
    from . import hooks
    if words[1] not in hooks.EVENTS:
        sys.stderr.write(f"prima-memory: unknown hook event {ascii(words[1])}\n")
        return 0
    return hooks.run(words[1], ws)


def exit_with(code: int) -> None:
    """The end of a run: the command line's own (cli.exit_with) when it ran, else as usual."""
    cli = sys.modules.get(f"{__package__}.cli")
    if cli is not None:
        cli.exit_with(code)
    sys.exit(code)
