"""Write the venv's `prima-memory` command, run by the venv's Python (install.sh, and test.sh and
.ci/run after a pip install, which writes pip's own again):

    python launcher.py .venv/bin/prima-memory

The command pip writes for a console script imports re, to tidy sys.argv[0] for Windows' .exe
wrappers: 4 ms of every keyword search, a fifth of it. This one imports the CLI alone, and ends
as the CLI says (at once after a read: cli.exit_with). A #! line holds no space and at most 127
bytes: past that, sh starts the Python, as pip's own scripts do. Standard library only.
"""
from __future__ import annotations

import os
import shlex
import sys

BODY = "from prima_memory.main import exit_with, main\nexit_with(main())\n"


def launcher(python: str) -> str:
    if " " in python or len(python.encode()) > 127:
        head = f"#!/bin/sh\n'''exec' {shlex.quote(python)} \"$0\" \"$@\"\n' '''\n"
    else:
        head = f"#!{python}\n"
    return head + "# prima-memory's command (scripts/launcher.py wrote it)\n" + BODY


def main(path: str) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(launcher(sys.executable))
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)  # whole, never half written


if __name__ == "__main__":
    main(sys.argv[1])
