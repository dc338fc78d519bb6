"""The one parser of on/off switches in the environment."""
from __future__ import annotations

import pytest

from prima_memory.settings import flag


@pytest.mark.parametrize("value", ["0", "off", "OFF", " false ", "No"])
def test_off_values_turn_a_switch_off(monkeypatch, value):
    monkeypatch.setenv("PRIMA_TEST_FLAG", value)
    assert flag("PRIMA_TEST_FLAG") is False
    assert flag("PRIMA_TEST_FLAG", default=False) is False


@pytest.mark.parametrize("value", ["1", "on", "yes", "true", "anything"])
def test_other_values_turn_it_on(monkeypatch, value):
    monkeypatch.setenv("PRIMA_TEST_FLAG", value)
    assert flag("PRIMA_TEST_FLAG", default=False) is True


@pytest.mark.parametrize("value", [None, "", "  "])
def test_unset_or_blank_is_the_default(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("PRIMA_TEST_FLAG", raising=False)
    else:
        monkeypatch.setenv("PRIMA_TEST_FLAG", value)
    assert flag("PRIMA_TEST_FLAG") is True
    assert flag("PRIMA_TEST_FLAG", default=False) is False
