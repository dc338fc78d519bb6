"""jsontext writes and reads JSON as json does, without json's import."""
from __future__ import annotations

import json
import math
import random
import subprocess
import sys

import pytest

from prima_memory import jsontext

ODD = ["", "plain", "quote \" back \\ slash", "new\nline\ttab\r\x00\x1f\x7f", "é ü 中文 🦀",
       "\u2028\u2029", "\ud83d lone", "</prima-memory>", "a" * 300]


def _value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.choice(ODD)
    if kind == 1:
        return rng.choice([0, -1, 7, 2**63, -(2**70), True, False, None])
    if kind == 2:
        return rng.choice([0.0, -0.0, 1.5, 1e-7, 1e300, 71.0, 0.1 + 0.2, math.inf, -math.inf])
    if kind in (3, 4, 5):
        return rng.choice(ODD[:4]) + str(rng.random())
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 7:
        return tuple(_value(rng, depth + 1) for _ in range(rng.randrange(3)))
    keys = [rng.choice(ODD), rng.randrange(5), 2.5, True, None, "k"]
    return {rng.choice(keys): _value(rng, depth + 1) for _ in range(rng.randrange(5))}


@pytest.mark.parametrize("seed", range(6))
def test_the_same_text_as_json(seed):
    rng = random.Random(seed)
    for _ in range(300):
        value = _value(rng)
        for ascii_ in (True, False):
            assert jsontext.dumps(value, ensure_ascii=ascii_) == json.dumps(
                value, ensure_ascii=ascii_)
            assert jsontext.dumps(value, indent=2, ensure_ascii=ascii_) == json.dumps(
                value, indent=2, ensure_ascii=ascii_)
            assert jsontext.dumps(value, compact=True, ensure_ascii=ascii_) == json.dumps(
                value, separators=(",", ":"), ensure_ascii=ascii_)


def test_nan_and_what_json_cannot_write():
    assert jsontext.dumps([math.nan], indent=2) == json.dumps([math.nan], indent=2)
    for bad in ({1, 2}, object(), {(1, 2): 3}):
        with pytest.raises(TypeError):
            jsontext.dumps(bad, indent=2)
        with pytest.raises(TypeError):
            jsontext.dumps(bad)


@pytest.mark.parametrize("seed", range(3))
def test_the_same_values_as_json(seed):
    rng = random.Random(seed)
    for _ in range(300):
        text = json.dumps(_value(rng), indent=rng.choice([None, 2]))
        text = rng.choice(["", " ", "\n\t "]) + text + rng.choice(["", " \r\n"])
        assert repr(jsontext.loads(text)) == repr(json.loads(text))


@pytest.mark.parametrize("bad", ["", "   ", "{", "[1,]", "1 2", "nul", '"\\x"', "{'a': 1}",
                                 '{"a" 1}', "[1] x", "\ufeff[]", "Infinity x"])
def test_what_json_refuses_is_refused(bad):
    with pytest.raises(ValueError):
        json.loads(bad)
    with pytest.raises(ValueError):
        jsontext.loads(bad)


def test_it_costs_no_re_import():
    code = ("import sys; from prima_memory import jsontext; jsontext.dumps({'a': [1.5]}, "
            "indent=2); jsontext.loads('{\"a\": [1, 2.5, null]}'); print('re' in sys.modules)")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", f"import sys; sys.path[:0] = "
                          f"{sys.path!r}; {code}"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_malformed_text_is_a_value_error_in_a_fresh_process():
    # Without json.decoder loaded, the C scanner cannot make json's error for a text malformed
    # inside a value: it raised SystemError (a damaged tombstone file read so).
    code = ("from prima_memory import jsontext\n"
            "for bad in ['{\"a\" 1}', '{\"format\":\"x\",\"ver', '[1, 2']:\n"
            "    try:\n        jsontext.loads(bad)\n    except ValueError:\n        continue\n"
            "    raise SystemExit('accepted ' + bad)\nprint('ok')")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", f"import sys; sys.path[:0] = "
                          f"{sys.path!r}\n{code}"], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
