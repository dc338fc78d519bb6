"""Dates on the command line: 2025-09-19, an ISO time, 'today', 'yesterday', or 3d / 12h / 2w ago."""
from __future__ import annotations

import re
import time
from datetime import datetime, timezone

_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*(m|min|h|d|w)$", re.I)
_UNITS = {"m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_when(text: str, *, end_of_day: bool = False, now: float | None = None) -> float:
    """Epoch seconds. A bare date is local midnight (or the day's last second with end_of_day)."""
    now = time.time() if now is None else now
    s = text.strip().lower()
    m = _RELATIVE.match(s)
    if m:
        return now - float(m.group(1)) * _UNITS[m.group(2).lower()]
    if s in ("today", "yesterday"):
        day = time.localtime(now - (86400 if s == "yesterday" else 0))
        s = time.strftime("%Y-%m-%d", day)
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", s):
        t = time.mktime(time.strptime(s, "%Y-%m-%d"))
        return t + 86399.999 if end_of_day else t
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not a date: {text!r} (use YYYY-MM-DD, an ISO time, today, "
                         f"yesterday, or 3d / 12h / 2w)") from None
    if dt.tzinfo is None:
        return time.mktime(dt.timetuple()) + dt.microsecond / 1e6
    return dt.timestamp()


def iso_utc(ts: float | None) -> str | None:
    if ts is None:
        return None
    try:  # (a time read from a file may be beyond what the platform can show)
        dt = datetime.fromtimestamp(ts, timezone.utc)
    except (ValueError, OverflowError, OSError):
        return None
    return f"{dt.year:04d}" + dt.strftime("-%m-%dT%H:%M:%SZ")  # %Y gives year 1 as "1"


def local(ts: float | None, fmt: str = "%Y-%m-%d %H:%M") -> str:
    try:
        return time.strftime(fmt, time.localtime(ts)) if ts else "—"
    except (ValueError, OverflowError, OSError):
        return "—"


def local_iso(iso: str | None, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """An iso_utc() time shown as local time (what the data API returns, as the CLI shows it)."""
    if not iso:
        return "—"
    return local(datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=timezone.utc).timestamp(), fmt)
