"""``with_state_change``: how a user agent changes the main session's state, through the bridge.

A user agent's tool wraps its result: ``return with_state_change({"revealed": c}, {"patient":
{"revealed_conditions": {c: True}}})``. The wrapper is plain JSON (the result plus one reserved key),
so it travels through tool activities and session stores unchanged, and the driver finds it in the
user agent's stored events. After the user agent completes, every change it made is merged, in
event order, and applied to the main session with the next message (its event's state delta).

Merge rule: **deep merge**. Dicts merge key by key, recursively; any other value (lists included)
replaces what was there. The same rule applies between the changes of one answer and onto the main
session's current values. Why deep: state values are usually records (``beliefs``, ``patient``
facts) that separate tools update piecewise; a shallow merge would let one tool's partial update
erase fields another tool (or the system) set. Why lists replace: an appended list would grow twice
when a call is repeated (a retried activity, a model repeating itself) and list items have no
identity to merge by. To accumulate, key items by identity:
``{"revealed_conditions": {"hypertension": True}}`` deep-merges; ``["hypertension"]`` replaces.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ConfigurationError
from ..types import Event
from .scopes import flatten_scoped

STATE_CHANGE_KEY = "_eval_state_change"
"""The reserved key a wrapped result carries its changes under (the user agent's model sees it too)."""
_WRAPPED = "wrapped"


def with_state_change(result: Any, state_changes: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Wrap a user-agent tool result with changes to apply to the main session.

    Args:
        result: what the tool returns (its user agent sees it as usual).
        state_changes: ``{scope: {key: value}}`` with scopes ``session``, ``user``, ``app`` or your
            own (``patient``, ``practice``: stored as ``patient:key``; see adk_core.eval.scopes).

    Returns:
        A JSON dict: ``result`` itself (when a dict) or ``{"result": result}``, plus the changes.
    """
    flatten_scoped(state_changes, what="with_state_change(...) state_changes")  # fail early on a bad shape
    changes = {scope: dict(values) for scope, values in state_changes.items()}
    if isinstance(result, Mapping):
        return {**result, STATE_CHANGE_KEY: {"changes": changes}}
    return {"result": result, STATE_CHANGE_KEY: {"changes": changes, _WRAPPED: True}}


def unwrap(value: Any) -> tuple[Any, dict[str, dict[str, Any]] | None]:
    """``(the original result, its changes)`` of a wrapped value; ``(value, None)`` for anything else."""
    if not isinstance(value, Mapping) or not isinstance(value.get(STATE_CHANGE_KEY), Mapping):
        return value, None
    marker = value[STATE_CHANGE_KEY]
    changes = marker.get("changes") or {}
    if marker.get(_WRAPPED):
        return value.get("result"), dict(changes)
    return {k: v for k, v in value.items() if k != STATE_CHANGE_KEY}, dict(changes)


def changes_in(events: Iterable[Event]) -> list[dict[str, dict[str, Any]]]:
    """Every change wrapped in the function responses of ``events``, in event order."""
    found = []
    for event in events:
        for response in event.function_responses():
            _, changes = unwrap(response.response)
            if changes is None:
                _, changes = unwrap(response.response.get("result"))
            if changes:
                found.append(changes)
    return found


def deep_merge(base: Any, update: Any) -> Any:
    """``update`` merged into a copy of ``base``: dicts recursively, anything else replaced."""
    if isinstance(base, Mapping) and isinstance(update, Mapping):
        merged = {k: copy.deepcopy(v) for k, v in base.items()}
        for key, value in update.items():
            merged[key] = deep_merge(merged[key], value) if key in merged else copy.deepcopy(value)
        return merged
    return copy.deepcopy(update)


def merge_changes(changes: Iterable[Mapping[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """Many scoped changes -> one flat ``{prefixed_key: value}``, later ones deep-merged over earlier."""
    flat: dict[str, Any] = {}
    for change in changes:
        for key, value in flatten_scoped(change, what="state change").items():
            flat[key] = deep_merge(flat[key], value) if key in flat else copy.deepcopy(value)
    return flat


def state_delta_for(current: Mapping[str, Any], flat_changes: Mapping[str, Any]) -> dict[str, Any]:
    """The delta that applies ``flat_changes`` to a session whose state is ``current`` (deep merge)."""
    delta = {}
    for key, value in flat_changes.items():
        if key.startswith("temp:"):
            raise ConfigurationError(
                f"with_state_change cannot set {key!r}: temp: state lives for one invocation of the main "
                "session and never reaches it from a user agent; use the session scope"
            )
        delta[key] = deep_merge(current[key], value) if key in current else value
    return delta
