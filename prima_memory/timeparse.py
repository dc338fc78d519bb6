"""Dates on the command line (--since, --until, the MCP tools' since/until), and the one way
times are shown: a point in local time, a session's span "2026-11-30 14:02 – 15:10"."""
from __future__ import annotations

import time

TYPE_CHECKING = False  # (typing's own import, for the type checker alone)
if TYPE_CHECKING:
    from datetime import date

# Showing a time needs neither re nor datetime (their imports cost a keyword search 4 ms): they
# are imported to read one given on the command line.
_RELATIVE = r"^(\d+(?:\.\d+)?)\s*(m|min|h|d|w)$"
_UNITS = {"m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
# "3 days ago", "an hour ago", "last week", "past 2 hours", "the last 3 days", "3 days"
_SPOKEN = (r"^(?:(?:the )?(last|past) )?(a|an|one|two|three|four|five|six|\d+(?:\.\d+)?)? ?"
           r"(min|minute|hour|hr|day|week|month|year)s?( ago)?$")
_SECONDS = {"min": 60, "minute": 60, "hour": 3600, "hr": 3600, "day": 86400, "week": 7 * 86400}
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
ACCEPTED = ("a date (2026-11-30), an ISO time, now, today, yesterday, a weekday (monday, "
            "last friday), this week, last week, last month, 3 days ago, or 12h / 3d / 2w")


def parse_when(text: str, *, end_of_day: bool = False, now: float | None = None) -> float:
    """Epoch seconds. A day (a date, today, yesterday, a weekday) is its local midnight, or its
    last second with end_of_day; "3 days ago", "last week" (seven days ago), "last month" (a
    calendar month ago) are that moment; "since monday" is "monday". A word it does not know is
    a ValueError that says what it accepts."""
    import re  # (see above)
    from datetime import datetime
    now = time.time() if now is None else now
    raw = " ".join(text.split())
    raw = raw[6:] if raw.lower().startswith("since ") else raw
    s = raw.lower()
    if s == "now":  # (forget --before now: every session so far)
        return now
    m = re.match(_RELATIVE, s, re.I)
    if m:
        return now - float(m.group(1)) * _UNITS[m.group(2).lower()]
    day = _day(s, now)
    if day is not None:
        s = day.isoformat()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", s):
        t = time.mktime(time.strptime(s, "%Y-%m-%d"))
        return t + 86399.999 if end_of_day else t
    spoken = _spoken(s, now)
    if spoken is not None:
        return spoken
    try:
        dt = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not a date: {text[:60]!r} (use {ACCEPTED})") from None
    if dt.tzinfo is None:
        return time.mktime(dt.timetuple()) + dt.microsecond / 1e6
    return dt.timestamp()


def _day(s: str, now: float) -> date | None:
    """The local day a word names: today, yesterday, monday ("last monday": the one before
    today), the first day of this week, month or year; None for any other text."""
    from datetime import date, timedelta  # (see above)
    today = date(*time.localtime(now)[:3])
    if s == "today":
        return today
    if s == "yesterday":
        return today - timedelta(days=1)
    last = s.startswith("last ")
    name = s[5:] if last else s
    if name in _WEEKDAYS:
        back = (today.weekday() - _WEEKDAYS.index(name)) % 7
        return today - timedelta(days=back or (7 if last else 0))
    if s == "this week":
        return today - timedelta(days=today.weekday())
    if s == "this month":
        return today.replace(day=1)
    if s == "this year":
        return today.replace(month=1, day=1)
    return None


def _spoken(s: str, now: float) -> float | None:
    """"3 days ago", "last week", "past 2 hours", "a month ago": that long before now (months and
    years by the calendar, the day of the month kept where it can be); None for other text."""
    import re  # (see above)
    m = re.match(_SPOKEN, s)
    if not m:
        return None
    last, count, unit, ago = m.groups()
    if not (last or ago or (count and count[0].isdigit())):
        return None  # "week" alone, "a day": no time
    n = float(_COUNTS.get(count or "a") or count)
    if unit in _SECONDS:
        return now - n * _SECONDS[unit]
    months = n * (12 if unit == "year" else 1)
    if months != int(months):
        return now - months * 30.44 * 86400
    return _months_before(now, int(months))


def _months_before(now: float, months: int) -> float:
    t = time.localtime(now)
    index = t.tm_year * 12 + t.tm_mon - 1 - months
    year, month = divmod(index, 12)
    if year < 1:
        raise ValueError(f"{months} months ago is before year 1")
    day = min(t.tm_mday, _days_in(year, month + 1))  # a month ago from 31 March: 28/29 February
    return time.mktime((year, month + 1, day, t.tm_hour, t.tm_min, t.tm_sec, 0, 0, -1))


def _days_in(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def iso_utc(ts: float | None) -> str | None:
    """A time as the data API gives it, "2026-11-30T14:02:00Z", as datetime would write it
    (the microseconds rounded half to even first); None for a time no calendar shows."""
    if ts is None:
        return None
    try:  # (a time read from a file may be beyond what the platform can show)
        whole = int(ts // 1)  # (math.floor, without math's import)
        if round((ts - whole) * 1e6) >= 1_000_000:
            whole += 1
        t = time.gmtime(whole)
    except (ValueError, OverflowError, OSError):
        return None
    if not 1 <= t.tm_year <= 9999:
        return None
    return (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:"
            f"{t.tm_sec:02d}Z")


def local(ts: float | None, fmt: str = "%Y-%m-%d %H:%M") -> str:
    try:
        return time.strftime(fmt, time.localtime(ts)) if ts else "—"
    except (ValueError, OverflowError, OSError):
        return "—"


def local_iso(iso: str | None, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """An iso_utc() time shown as local time (what the data API returns, as the CLI shows it)."""
    if not iso:
        return "—"
    return local(_utc_epoch(iso), fmt)


def span(start: float | str | None, end: float | str | None, *, dated: bool = True) -> str:
    """A session's time as every listing shows it, in local time: "2026-11-30 14:02 – 15:10",
    the end's date only when it is another day's, the start alone when the end is the same
    minute or unknown. `dated=False` leaves the start's date out (a digest's day says it).
    Times as epoch seconds or as iso_utc() gives them (the data API's)."""
    a, b = _epoch(start), _epoch(end)
    day, clock = "%Y-%m-%d", "%H:%M"
    first = local(a, f"{day} {clock}" if dated else clock)
    if a is None or b is None or local(a) == local(b) or local(b) == "—":
        return first
    same_day = local(a, day) == local(b, day)
    return f"{first} – {local(b, clock if same_day else f'{day} {clock}')}"


def _utc_epoch(iso: str) -> float:
    """An iso_utc() time as epoch seconds (read by hand: strptime's and datetime's imports
    cost more than the rest of a listing)."""
    parts = (iso[0:4], iso[5:7], iso[8:10], iso[11:13], iso[14:16], iso[17:19])
    if len(iso) != 20 or iso[4::3] != "--T::Z" or not all(
            p.isascii() and p.isdigit() for p in parts):
        raise ValueError(f"not a UTC time: {iso!r}")
    year, month, day, hour, minute, second = map(int, parts)
    if not (1 <= month <= 12 and 1 <= day <= _days_in(year, month) and hour < 24
            and minute < 60 and second < 60 and year >= 1):
        raise ValueError(f"not a UTC time: {iso!r}")
    # days since 1970-01-01 in the proleptic Gregorian calendar (H. Hinnant's days_from_civil)
    y = year - (month <= 2)
    era, yoe = divmod(y, 400)
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468
    return float(days * 86400 + hour * 3600 + minute * 60 + second)


def _epoch(t: float | str | None) -> float | None:
    if isinstance(t, str):
        try:
            return _utc_epoch(t)
        except ValueError:
            return None
    return t


# --- time in a question ----------------------------------------------------------------------
# "when did we fix it in March", "what did Nate do on 25 May, 2022", "last week": the dates a
# question names are read off it, and rank the sessions of that time first (search.py); the
# words that said them are no longer searched for. English dates only, for now.

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")
_MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|" \
         r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
# a season as the northern half of the world has it, by its first month (each lasts three)
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_SEASON = r"(spring|summer|autumn|fall|winter)"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_PREP = r"(?:on|in|during|since|after|before|from|around|of|by|until)\s+(?:the\s+)?"
_ON = rf"(?:{_PREP})?"
# each pattern, most precise first: (regex, what it names); the preposition before it is
# taken too ("before" and "after" open the window on that side)
_QUESTION_DATES = (
    (rf"{_ON}{_YEAR}-(\d\d)-(\d\d)\b", "ymd"),
    (rf"{_ON}{_DAY}(?:\s+of)?\s+{_MONTH}\.?,?\s+{_YEAR}\b", "dmy"),
    (rf"{_ON}{_MONTH}\.?\s+{_DAY},?\s+{_YEAR}\b", "mdy"),
    (rf"{_ON}{_MONTH}\.?,?\s+{_YEAR}\b", "my"),
    # without a year, a preposition first: "may 2 people" names no day
    (rf"{_PREP}{_DAY}(?:\s+of)?\s+{_MONTH}\b", "dm"),
    (rf"{_PREP}{_MONTH}\s+{_DAY}\b", "md"),
    (rf"{_PREP}{_MONTH}\b", "m"),
    (rf"{_ON}{_SEASON}(?:\s+of)?,?\s+{_YEAR}\b", "sy"),
    # "spring" and "fall" alone are words too often (Spring Boot, "in fall-back mode"): only
    # after "the" ("in the spring"), and not as "the spring boot"
    (rf"(?:{_PREP}(summer|winter|autumn)|(?:on|in|during|since|after|before|from|around|by|"
     r"until)\s+the\s+(spring|fall))\b(?![-\w]|\s+(?:boot|framework|cloud|of\s+(?!\d)))", "s"),
    (rf"\b(last|this)\s+{_SEASON}\b", "ls"),
    (r"(?:in|during|since|after|before|from|around|by|until)\s+((?:19|20)\d\d)\b(?!-\d)", "y"),
    (r"\b(?:(?:since|from)\s+)?(yesterday|today|this\s+(?:week|month|year)|"
     r"last\s+(?:week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
     r"(?:a|an|one|two|three|four|five|six|\d+)\s+(?:day|week|month|year)s?\s+ago)\b",
     "spoken"),
)


class Asked:
    """A question read for time: its text without the dates, and the times they name, each a
    window (start, end) in epoch seconds (an end of None: up to now; a start of None: since
    ever); and the events it places itself by ("before the release": ("before", "release")),
    which the search dates by the session that speaks of them (their words stay in the text)."""

    def __init__(self, text: str, windows: list[tuple[float | None, float | None]]):
        self.text, self.windows = text, windows
        self.events = _events(text)


_EVENT_SIDES = ("before", "after")  # ("since" is "because" as often: "since it failed")
_EVENT_SKIP = frozenset("the a an our my your their his her its this that we i you they he she "
                        "it".split())
_EVENT_END = frozenset("and or but when while because so that which who where what how did do "
                       "does was were is are has have had".split())
# small words inside an event's name, kept but not counted: "the move to the new server"
_EVENT_INNER = frozenset("to for with at in on of from into up".split()) | _EVENT_SKIP
EVENTS = 2  # a question places itself by so many events at most
EVENT_WORDS = 3  # an event is named in this many words at most: "the move to postgres"


def _events(text: str) -> list[tuple[str, str]]:
    """("before" | "after", the words naming it) for each "before/after <event>" left in
    a question once its dates are read: up to EVENT_WORDS words (and the small ones between),
    to a comma or a conjunction."""
    words = text.split()
    out = []
    for i, w in enumerate(words):
        side = w.lower()
        if side not in _EVENT_SIDES:
            continue
        named: list[str] = []
        for x in words[i + 1:]:
            low = x.lower().strip("\"'“”‘’()")
            core = low.rstrip("?!.,;:")
            if not named and core in _EVENT_SKIP:
                continue
            if core in _EVENT_END or core in _EVENT_SIDES or not core:
                break
            named.append(core)
            if core != low or sum(n not in _EVENT_INNER for n in named) == EVENT_WORDS:
                break  # (punctuation ends it)
        while named and named[-1] in _EVENT_INNER:
            named.pop()
        if named:
            out.append((side, " ".join(named)))
    return out[:EVENTS]


def question_dates(text: str, now: float | None = None) -> Asked:
    """The dates a question names, read off it (see above); a question naming none comes back
    as it was."""
    if not any(c.isdigit() for c in text) and not _month_or_spoken(text.lower()):
        return Asked(text, [])  # (most questions: re's import spared)
    import re  # (see above)
    now = time.time() if now is None else now
    windows: list[tuple[float | None, float | None]] = []
    for pattern, kind in _QUESTION_DATES:
        def taken(m, kind=kind) -> str:
            got = _window(kind, m, now)
            if not got:
                return m.group(0)
            word = m.group(0).split()[0].lower()
            for start, end in got:
                windows.append((None, start) if word == "before" else (end, None)
                               if word == "after" else (start, None)
                               if word in ("since", "from") else (start, end))
            return " "
        text = re.sub(r"\b" + pattern, taken, text, flags=re.I)
    return Asked(" ".join(text.split()), windows)


def _month_or_spoken(low: str) -> bool:
    return any(m[:3] in low for m in _MONTHS) or any(
        w in low for w in ("yesterday", "today", "this ", "last ", " ago", *_SEASONS))


def _window(kind: str, m, now: float) -> list[tuple[float, float]]:
    """The windows a match names: a day, a month or a year, local time; a day or month named
    without its year, that day or month of each of the last ten years; none when the numbers
    name no date."""
    g = [x for x in m.groups() if x is not None]
    today = time.localtime(now)
    try:
        if kind == "spoken":
            got = _spoken_window(" ".join(g[0].lower().split()), now)
            return [got] if got else []
        if kind == "y":
            return [_span(int(g[0]), 1, 1, (int(g[0]) + 1, 1, 1))]
        if kind in ("sy", "s", "ls"):
            return _seasons(kind, g, today)
        month = _month_number(g[0] if kind in ("md", "my", "m", "mdy") else g[1]) \
            if kind != "ymd" else int(g[1])
        if kind == "ymd":
            year, day = int(g[0]), int(g[2])
        elif kind == "dmy":
            day, year = int(g[0]), int(g[2])
        elif kind == "mdy":
            day, year = int(g[1]), int(g[2])
        elif kind == "my":
            return [_span(int(g[1]), month, 1, _next_month(int(g[1]), month))]
        else:  # no year: the latest ten such days or months, up to today's
            day = int(g[1] if kind == "md" else g[0]) if kind != "m" else 1
            if not 1 <= day <= 31:
                return []
            latest = today.tm_year - ((month, day) > (today.tm_mon, today.tm_mday))
            return [_span(y, month, 1, _next_month(y, month)) if kind == "m" else
                    _span(y, month, day, None) for y in range(latest, latest - 10, -1)
                    if day <= _days_in(y, month)]
        if not 1 <= day <= _days_in(year, month):
            return []
        return [_span(year, month, day, None)]
    except (ValueError, OverflowError):
        return []


def _seasons(kind: str, g: list[str], today) -> list[tuple[float, float]]:
    """A season of a year named ("summer 2023"; winter 2023 from December 2023), the last ten
    begun ("during the summer"), the last ended ("last summer") or this year's ("this winter":
    in January, the one begun in December)."""
    first = _SEASONS[(g[1] if kind == "ls" else g[0]).lower()]
    now = (today.tm_year, today.tm_mon)
    if kind == "sy":
        years = [int(g[1])]
    elif kind == "ls" and g[0].lower() == "this":
        years = [today.tm_year - (first == 12 and today.tm_mon < 3)]
    else:
        begun = [y for y in range(now[0], now[0] - 12, -1) if (y, first) <= now]
        years = begun[:10] if kind == "s" else \
            [next(y for y in begun if _season_end(y, first) <= now)]  # (last: ended)
    return [_span(y, first, 1, (*_season_end(y, first), 1)) for y in years]


def _season_end(year: int, first: int) -> tuple[int, int]:
    """(year, month) of the month after a season begun in `first` of `year`."""
    return (year + 1, first - 9) if first + 3 > 12 else (year, first + 3)


def _month_number(name: str) -> int:
    low = name.lower()
    return next(i for i, m in enumerate(_MONTHS, 1) if m.startswith(low[:3]))


def _next_month(year: int, month: int) -> tuple[int, int, int]:
    return (year + 1, 1, 1) if month == 12 else (year, month + 1, 1)


def _span(year: int, month: int, day: int, end: tuple[int, int, int] | None
          ) -> tuple[float, float]:
    """From that day's local midnight to the next day's, or to `end`'s."""
    start = time.mktime((year, month, day, 0, 0, 0, 0, 0, -1))
    if end is None:
        return start, start + 86400
    return start, time.mktime((*end, 0, 0, 0, 0, 0, -1))


def _spoken_window(s: str, now: float) -> tuple[float, float] | None:
    """The window a spoken time names: a day (today, last friday) whole; "this week" and "last
    month" up to now; "3 days ago" the unit around that moment."""
    day = _day(s, now)
    if day is not None:
        start = time.mktime((day.year, day.month, day.day, 0, 0, 0, 0, 0, -1))
        return (start, now) if s.startswith("this ") else (start, start + 86400)
    t = _spoken(s, now)
    if t is None:
        return None
    if s.startswith("last "):
        return t, now
    unit = s.split()[1].rstrip("s")
    width = _SECONDS.get(unit) or 30 * 86400 * (12 if unit == "year" else 1)
    return t - width / 2, t + width / 2
