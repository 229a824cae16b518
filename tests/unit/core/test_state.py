"""State key rules, the State view's delta recording, and the app:/user:/session split."""

from __future__ import annotations

import pytest

from adk_core.errors import ConfigurationError, InvalidInputError, StateKeyError
from adk_core.state import (
    MAX_STATE_KEY_LEN,
    State,
    merge_state,
    split_delta,
    validate_state_delta,
    validate_state_key,
    without_temp,
)


@pytest.mark.parametrize(
    "key",
    ["count", "user:name", "app:motd", "temp:scratch", "a.b", "a:b:c", "ünïcode", "x" * MAX_STATE_KEY_LEN],
)
def test_valid_keys_pass_through(key: str) -> None:
    assert validate_state_key(key) == key


@pytest.mark.parametrize(
    ("key", "says"),
    [
        ("", "empty"),
        ("x" * (MAX_STATE_KEY_LEN + 1), "257 bytes; the limit is 256"),
        ("é" * 129, "258 bytes"),  # 129 characters, but 258 bytes in UTF-8
        ("a/b", "path separator"),
        ("a\\b", "path separator"),
        ("a..b", "'..'"),
        ("a\x00b", "code 0"),
        ("line\nbreak", "code 10"),
        ("del\x7f", "code 127"),
        (42, "is a int; state keys must be strings"),
        (None, "NoneType"),
        (b"bytes", "bytes"),
    ],
)
def test_invalid_keys_say_what_is_wrong(key: object, says: str) -> None:
    with pytest.raises(StateKeyError) as info:
        validate_state_key(key)
    assert says in str(info.value)
    assert isinstance(info.value, ConfigurationError) and isinstance(info.value, ValueError)


def test_invalid_key_messages_suggest_a_fix() -> None:
    with pytest.raises(StateKeyError, match="use ':' or '_' instead"):
        validate_state_key("a/b")
    with pytest.raises(StateKeyError, match="non-empty name"):
        validate_state_key("")


def test_delta_values_must_be_json_except_temp() -> None:
    validate_state_delta({"temp:obj": object(), "ok": {"a": [1, None, True, "s", 1.5]}})
    with pytest.raises(InvalidInputError, match=r"'bad'.*model_dump\(mode='json'\).*'temp:'"):
        validate_state_delta({"bad": {1, 2}})
    with pytest.raises(StateKeyError):
        validate_state_delta({"a/b": 1})


def test_state_view_records_writes_in_the_delta_only() -> None:
    committed = {"a": 1, "b": 2}
    delta: dict = {}
    state = State(committed, delta)
    state["b"] = 20
    state["c"] = 3
    del state["a"]
    assert committed == {"a": 1, "b": 2}, "committed state is never written"
    assert delta == {"b": 20, "c": 3, "a": None}
    assert state["b"] == 20 and state["c"] == 3 and state["a"] is None
    assert state.has_delta()
    assert state.to_dict() == {"a": None, "b": 20, "c": 3}
    assert list(state) == ["a", "b", "c"] and len(state) == 3
    assert "c" in state and "zzz" not in state
    assert state.get("zzz", "default") == "default"


def test_state_view_validates_keys_on_write_and_knows_missing_keys() -> None:
    state = State({}, {})
    with pytest.raises(StateKeyError):
        state["bad/key"] = 1
    with pytest.raises(KeyError):
        del state["missing"]
    with pytest.raises(KeyError):
        state["missing"]
    assert not state.has_delta()


def test_split_delta_strips_prefixes_and_drops_temp() -> None:
    app, user, session = split_delta({"app:motd": "hi", "user:lang": "fr", "temp:x": 1, "count": 2, "a:b": 3})
    assert app == {"motd": "hi"}
    assert user == {"lang": "fr"}
    assert session == {"count": 2, "a:b": 3}


def test_merge_state_restores_prefixes_and_is_split_delta_inverse() -> None:
    delta = {"app:motd": "hi", "user:lang": "fr", "count": 2}
    assert merge_state(*split_delta(delta)) == delta
    assert merge_state({"k": 1}, {"k": 2}, {"k": 3}) == {"app:k": 1, "user:k": 2, "k": 3}


def test_without_temp() -> None:
    assert without_temp({"temp:a": 1, "b": 2, "user:temp:c": 3}) == {"b": 2, "user:temp:c": 3}
