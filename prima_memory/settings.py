"""Settings read from the environment, parsed one way everywhere.

Standard library only and cheap: the hooks read these before anything else is imported.
"""
from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Mapping

OFF = frozenset({"0", "off", "false", "no"})


def flag(name: str, default: bool = True, environ: Mapping[str, str] = os.environ) -> bool:
    """An on/off switch: `name` set to 0, off, false or no (any case, spaces ignored) is off;
    any other value is on; unset or blank is `default`."""
    value = environ.get(name, "").strip().lower()
    if not value:
        return default
    return value not in OFF
