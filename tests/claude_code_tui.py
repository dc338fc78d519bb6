"""Claude Code's interactive TUI in a pseudo-terminal, for the end-to-end test: start `claude`
without -p, wait for its prompt, type and paste (bracketed paste, as a terminal sends a multi-line
paste), and leave with /exit.

The screen is what a terminal would show: pyte, a terminal emulator, applies the TUI's output.
(Reading the raw output with its escapes stripped is not enough: the TUI redraws only the cells
that change, so a reply "Done." drawn where a "o" already stood reads "Dne.".) It is read as text
with all white space removed, and what a test waits for is matched the same way.

`prepare_home` writes what a first start would ask for into the fake HOME's global config: the
onboarding done, the API key approved, the workspace trusted.
"""
from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path

import pyte

PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"


def squeeze(text: str) -> str:
    return "".join(text.split())


def prepare_home(config_dir: Path, workspace: Path, api_key: str, version: str) -> None:
    path = config_dir / ".claude.json"
    cfg = json.loads(path.read_text()) if path.exists() else {}
    cfg.update(hasCompletedOnboarding=True, theme="dark", lastOnboardingVersion=version,
               customApiKeyResponses={"approved": [api_key[-20:]], "rejected": []})
    project = cfg.setdefault("projects", {}).setdefault(str(workspace), {})
    project.update(hasTrustDialogAccepted=True, hasCompletedProjectOnboarding=True)
    path.write_text(json.dumps(cfg, indent=2))


class Tui:
    def __init__(self, argv: list[str], *, env: dict, cwd: Path, rows: int = 40, cols: int = 120):
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                     env=dict(env, TERM="xterm-256color"), cwd=str(cwd),
                                     start_new_session=True)
        os.close(slave)
        self.term = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.term)
        self.raw = b""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def screen(self) -> str:
        """What the terminal shows now, white space removed."""
        return squeeze("\n".join(self.term.display))

    def pump(self, seconds: float) -> None:
        """Read what the TUI writes for this long (it blocks on a full terminal otherwise)."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            if select.select([self.master], [], [], min(left, 0.1))[0]:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # the TUI has exited
                    return
                if not chunk:
                    return
                self.raw += chunk
                self.stream.feed(chunk)

    def wait_for(self, text: str, timeout: float) -> bool:
        """Until `text` (white space ignored) is on the screen."""
        want = squeeze(text)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if want in self.screen:
                return True
            if self.proc.poll() is not None:
                self.pump(0.1)
                return want in self.screen
            self.pump(0.2)
        return False

    def settle(self, quiet: float = 1.0, timeout: float = 15.0) -> None:
        """Until the TUI has written nothing for `quiet` seconds."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            before = len(self.raw)
            self.pump(quiet)
            if len(self.raw) == before:
                return

    def type(self, text: str) -> None:
        for ch in text:
            os.write(self.master, ch.encode())
            self.pump(0.02)

    def paste(self, text: str) -> None:
        os.write(self.master, PASTE_START + text.encode() + PASTE_END)
        self.pump(0.5)

    def erase(self, n: int) -> None:
        os.write(self.master, b"\x7f" * n)
        self.pump(0.2)

    def enter(self) -> None:
        os.write(self.master, b"\r")

    def exit(self, timeout: float = 30.0) -> int | None:
        """/exit, as a user leaves; the exit status, or None if it did not end in time."""
        self.type("/exit")
        self.pump(0.5)
        self.enter()
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.proc.poll() is None:
            self.pump(0.2)
        self.pump(0.2)
        return self.proc.poll()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)
        try:
            os.close(self.master)
        except OSError:
            pass
