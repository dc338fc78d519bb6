"""JSON without the json package's import, which brings re with it: some 4 ms that a keyword
search (its --json answer, the index's notes) would otherwise pay for nothing else. The work is
done by CPython's own C half of json (_json), as json itself hands it over: the same text, the
same values. Where _json is missing (another Python), json does it.

Standard library only and cheap: the CLI's keyword search imports it.
"""
from __future__ import annotations

try:
    import _json  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # (not CPython)
    _json = None  # type: ignore[assignment]

_INF = float("inf")
_WHITE = " \t\n\r"  # JSON's white space


def _constant(name: str) -> float:
    return {"NaN": float("nan"), "Infinity": _INF, "-Infinity": -_INF}[name]


class _Decoding:
    """What the C scanner reads off a json.JSONDecoder: its defaults."""
    strict = True
    object_hook = object_pairs_hook = None
    parse_float, parse_int, parse_constant = float, int, staticmethod(_constant)


_scan = None


def loads(text: str):
    """json.loads(text) for a str: a ValueError for anything that is not one JSON value."""
    global _scan
    if _json is None:
        import json  # (not CPython)
        return json.loads(text)
    if _scan is None:
        _scan = _json.make_scanner(_Decoding())  # type: ignore[arg-type]  # (duck-typed)
    start = len(text) - len(text.lstrip(_WHITE))
    try:
        value, end = _scan(text, start)
    except StopIteration:
        raise ValueError(f"no JSON value at {start}") from None
    except (SystemError, ValueError):
        # Malformed inside a value: the C scanner raises json's own error, which it can only
        # make with json.decoder loaded (else a SystemError): json reads it again, and says.
        import json  # (only for a malformed text)
        return json.loads(text)
    if text[end:].strip(_WHITE):
        raise ValueError(f"extra data at {end}")
    return value


def _unknown(value):
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _number(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (_INF, -_INF):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def dumps(value, *, indent: int | None = None, ensure_ascii: bool = True,
          compact: bool = False) -> str:
    """json.dumps(value, indent=indent, ensure_ascii=ensure_ascii), or with its compact
    separators (",", ":"): the same text."""
    if _json is None:
        import json  # (not CPython)
        return json.dumps(value, indent=indent, ensure_ascii=ensure_ascii,
                          separators=(",", ":") if compact else None)
    text = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
    if indent is None:
        items, keys = ((",", ":") if compact else (", ", ": "))
        encode = _json.make_encoder({}, _unknown, text, None, keys, items, False, False, True)
        return "".join(encode(value, 0))
    return "".join(_indented(value, text, " " * indent, "\n"))


def _indented(value, text, step: str, at: str):
    """The pieces of json.dumps(value, indent=len(step)): each item on a line of its own."""
    if isinstance(value, str):
        yield text(value)
    elif value is None:
        yield "null"
    elif value is True:
        yield "true"
    elif value is False:
        yield "false"
    elif isinstance(value, int):
        yield int.__repr__(value)
    elif isinstance(value, float):
        yield _number(value)
    elif isinstance(value, (list, tuple)):
        if not value:
            yield "[]"
            return
        inner = at + step
        yield "["
        for i, item in enumerate(value):
            yield inner if i == 0 else "," + inner
            yield from _indented(item, text, step, inner)
        yield at + "]"
    elif isinstance(value, dict):
        if not value:
            yield "{}"
            return
        inner = at + step
        yield "{"
        for i, (key, item) in enumerate(value.items()):
            yield inner if i == 0 else "," + inner
            yield text(_key(key)) + ": "
            yield from _indented(item, text, step, inner)
        yield at + "}"
    else:
        _unknown(value)


def _key(key) -> str:
    """A dict key as json writes it."""
    if isinstance(key, str):
        return key
    if key is True or key is False or key is None:
        return {True: "true", False: "false", None: "null"}[key]
    if isinstance(key, int):
        return int.__repr__(key)
    if isinstance(key, float):
        return _number(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
