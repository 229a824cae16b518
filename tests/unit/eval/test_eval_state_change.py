"""Scopes mapped to prefixed keys, and with_state_change: wrapping, collecting, the deep-merge rule."""

from __future__ import annotations

import json

import pytest

from adk_core.errors import ConfigurationError
from adk_core.eval import with_state_change
from adk_core.eval.scopes import ScopedState, flatten_scoped, scope_view, scoped_from_flat
from adk_core.eval.state_change import changes_in, deep_merge, merge_changes, state_delta_for, unwrap
from adk_core.types import Content, Event, Part


def test_scopes_map_to_prefixed_state_keys() -> None:
    flat = flatten_scoped({"session": {"mode": "triage"}, "user": {"name": "Ann"}, "app": {"region": "uk"},
                           "patient": {"age": 55}, "practice": {"id": "p1"}})
    assert flat == {"mode": "triage", "user:name": "Ann", "app:region": "uk", "patient:age": 55, "practice:id": "p1"}
    assert scope_view(flat, "patient") == {"age": 55}
    assert scope_view(flat, "session") == {"mode": "triage", "patient:age": 55, "practice:id": "p1"}
    assert scoped_from_flat({"user:a": 1, "b": 2, "patient:c": 3}) == {"user": {"a": 1}, "session": {"b": 2, "patient:c": 3}}
    with pytest.raises(ConfigurationError, match="maps scope names to dicts"):
        flatten_scoped({"mode": "triage"})  # type: ignore[dict-item]
    with pytest.raises(ConfigurationError, match="not a valid name"):
        flatten_scoped({"bad scope": {}})


def test_scoped_state_reads_and_writes_through_prefixes() -> None:
    state: dict = {"patient:age": 55, "k": 1}
    scoped = ScopedState(state)
    assert scoped.patient.get("age") == 55 and scoped.session["k"] == 1 and scoped.user.get("x", "d") == "d"
    scoped.practice.set("region", "london")
    scoped.user["name"] = "Ann"
    assert state["practice:region"] == "london" and state["user:name"] == "Ann"
    assert "age" in scoped.patient and "nope" not in scoped.patient
    assert scoped.to_dict()["practice"] == {"region": "london"}


def test_with_state_change_is_plain_json_and_unwraps_to_the_original() -> None:
    wrapped = with_state_change({"revealed": "x"}, {"patient": {"revealed_conditions": {"x": True}}})
    assert json.loads(json.dumps(wrapped)) == wrapped
    assert unwrap(wrapped) == ({"revealed": "x"}, {"patient": {"revealed_conditions": {"x": True}}})
    text = with_state_change("Yes, my left arm", {"session": {"said": True}})
    assert unwrap(text) == ("Yes, my left arm", {"session": {"said": True}})
    assert unwrap({"plain": 1}) == ({"plain": 1}, None)
    with pytest.raises(ConfigurationError):
        with_state_change({}, {"patient": ["not", "a", "dict"]})  # type: ignore[dict-item]


def test_changes_are_collected_from_function_responses_in_event_order() -> None:
    first = with_state_change({"a": 1}, {"patient": {"seen": {"a": True}}})
    second = with_state_change("text", {"patient": {"seen": {"b": True}}})
    events = [
        Event(author="u", content=Content(role="user", parts=[Part.from_function_response("t", first)])),
        Event(author="u", content=Content(role="user", parts=[Part.from_function_response("t", {"result": second})])),
        Event(author="u", content=Content.model("no responses here")),
    ]
    assert changes_in(events) == [{"patient": {"seen": {"a": True}}}, {"patient": {"seen": {"b": True}}}]


def test_deep_merge_rule() -> None:
    # Dicts merge key by key, recursively; lists and scalars replace.
    assert deep_merge({"a": {"x": 1, "y": 1}, "l": [1]}, {"a": {"y": 2, "z": 3}, "l": [2]}) == {
        "a": {"x": 1, "y": 2, "z": 3}, "l": [2]}
    merged = merge_changes([
        {"session": {"beliefs": {"acs": 0.6, "gerd": 0.2}}, "patient": {"revealed": {"hypertension": True}}},
        {"session": {"beliefs": {"acs": 0.9}}, "patient": {"revealed": {"cholesterol": True}}},
    ])
    assert merged == {"beliefs": {"acs": 0.9, "gerd": 0.2}, "patient:revealed": {"hypertension": True, "cholesterol": True}}
    current = {"beliefs": {"acs": 0.1, "pe": 0.3}, "patient:revealed": ["old"]}
    assert state_delta_for(current, merged) == {
        "beliefs": {"acs": 0.9, "gerd": 0.2, "pe": 0.3},  # onto the main session's value, deeply
        "patient:revealed": {"hypertension": True, "cholesterol": True},  # a list there is replaced
    }
    with pytest.raises(ConfigurationError, match="temp:"):
        state_delta_for({}, merge_changes([{"temp": {"x": 1}}]))
