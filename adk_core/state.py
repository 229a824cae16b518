"""Session state: key rules, scope prefixes, and the State view that records changes as deltas.

Prefixes decide where a key lives:
    ``app:``   shared by every user and session of the app
    ``user:``  shared by every session of one user
    ``temp:``  visible during the current invocation only; never stored
    (none)     this session only
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from .errors import InvalidInputError, StateKeyError

APP_PREFIX = "app:"
USER_PREFIX = "user:"
TEMP_PREFIX = "temp:"
MAX_STATE_KEY_LEN = 256


def validate_state_key(key: object) -> str:
    """Return ``key`` if it is a valid state key, else raise StateKeyError saying what is wrong."""
    if not isinstance(key, str):
        raise StateKeyError(f"state key {key!r} is a {type(key).__name__}; state keys must be strings")
    if not key:
        raise StateKeyError("state key is empty; use a non-empty name such as 'user:name' or 'count'")
    if len(key.encode()) > MAX_STATE_KEY_LEN:
        raise StateKeyError(
            f"state key {key[:40]!r}... is {len(key.encode())} bytes; the limit is {MAX_STATE_KEY_LEN} bytes"
        )
    if "/" in key or "\\" in key or ".." in key:
        raise StateKeyError(f"state key {key!r} contains a path separator or '..'; use ':' or '_' instead")
    for ch in key:
        if ord(ch) < 32 or ord(ch) == 127:
            raise StateKeyError(f"state key {key!r} contains a NUL or control character (code {ord(ch)})")
    return key


def validate_state_delta(delta: Mapping[str, Any]) -> None:
    """Check keys and that every value is JSON-serializable, before anything is written."""
    for key, value in delta.items():
        validate_state_key(key)
        if key.startswith(TEMP_PREFIX):
            continue  # never stored, so any Python value may live there for the invocation
        try:
            json.dumps(value)
        except (TypeError, ValueError) as e:
            raise InvalidInputError(
                f"state value for {key!r} is not JSON-serializable ({e}); store plain dicts, lists, "
                "strings, numbers, booleans or None (use model.model_dump(mode='json') for pydantic models), "
                "or use a 'temp:' key for values that need not be stored"
            ) from None


def split_delta(delta: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Split a delta into (app, user, session) parts, prefixes stripped from app/user keys; temp: dropped."""
    app: dict[str, Any] = {}
    user: dict[str, Any] = {}
    session: dict[str, Any] = {}
    for key, value in delta.items():
        if key.startswith(APP_PREFIX):
            app[key[len(APP_PREFIX) :]] = value
        elif key.startswith(USER_PREFIX):
            user[key[len(USER_PREFIX) :]] = value
        elif key.startswith(TEMP_PREFIX):
            continue
        else:
            session[key] = value
    return app, user, session


def merge_state(app: Mapping[str, Any], user: Mapping[str, Any], session: Mapping[str, Any]) -> dict[str, Any]:
    """The state a session sees: its own keys plus app:/user: keys with their prefixes restored."""
    merged = dict(session)
    merged.update({APP_PREFIX + k: v for k, v in app.items()})
    merged.update({USER_PREFIX + k: v for k, v in user.items()})
    return merged


def without_temp(delta: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in delta.items() if not k.startswith(TEMP_PREFIX)}


class State(MutableMapping[str, Any]):
    """A read-through view of session state that records every write in ``delta``.

    Reads see the delta first, then the committed value. Writes validate the key and go to the
    delta only; they reach the session when the event carrying the delta is appended.
    """

    __slots__ = ("_value", "_delta")

    def __init__(self, value: dict[str, Any], delta: dict[str, Any]) -> None:
        self._value = value
        self._delta = delta

    def __getitem__(self, key: str) -> Any:
        if key in self._delta:
            return self._delta[key]
        return self._value[key]

    def __setitem__(self, key: str, value: Any) -> None:
        validate_state_key(key)
        self._delta[key] = value

    def __delitem__(self, key: str) -> None:
        # Deletion is stored as None: a delta cannot express "absent" and stays JSON.
        if key not in self:
            raise KeyError(key)
        self._delta[key] = None

    def __contains__(self, key: object) -> bool:
        return key in self._delta or key in self._value

    def __iter__(self) -> Iterator[str]:
        seen = set(self._value)
        yield from self._value
        for k in self._delta:
            if k not in seen:
                yield k

    def __len__(self) -> int:
        return len(set(self._value) | set(self._delta))

    def has_delta(self) -> bool:
        return bool(self._delta)

    def to_dict(self) -> dict[str, Any]:
        merged = dict(self._value)
        merged.update(self._delta)
        return merged

    def __repr__(self) -> str:
        return f"State({self.to_dict()!r})"
