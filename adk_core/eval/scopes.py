"""State scopes: the seed's ``session`` / ``user`` / ``app`` / ``patient`` / ``practice`` ... views of
one flat ADK state dict.

ADK state is one dict whose key prefixes say where a value lives: ``app:`` (app-wide), ``user:``
(per user), ``temp:`` (this invocation only) and no prefix (this session). The eval API speaks in
scopes, as the seed does, and maps them onto that dict:

    session   -> key as is             {"session": {"mode": "triage"}}     -> "mode"
    user      -> "user:" + key         {"user": {"name": "Ann"}}           -> "user:name"
    app       -> "app:" + key          {"app": {"region": "uk"}}           -> "app:region"
    temp      -> "temp:" + key
    any other -> "<scope>:" + key      {"patient": {"age": 55}}            -> "patient:age"

Other scopes (the seed's ``patient`` and ``practice``) are stored as session keys with the scope as
prefix: ADK has no store of its own for them, and a prefix keeps them apart from plain session
keys, readable by agents (``{patient:age}`` in an instruction) and by every session store as is.
The ``session`` view holds every key without an ``app:``, ``user:`` or ``temp:`` prefix, so
prefixed extra-scope keys appear there under their full name too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from ..errors import ConfigurationError
from ..state import APP_PREFIX, TEMP_PREFIX, USER_PREFIX

SESSION = "session"
_BUILTIN_PREFIXES = {SESSION: "", "user": USER_PREFIX, "app": APP_PREFIX, "temp": TEMP_PREFIX}
_RESERVED = (APP_PREFIX, USER_PREFIX, TEMP_PREFIX)


def scope_prefix(scope: str) -> str:
    """The key prefix of ``scope`` ("" for ``session``)."""
    if scope in _BUILTIN_PREFIXES:
        return _BUILTIN_PREFIXES[scope]
    if not isinstance(scope, str) or not scope.isidentifier():
        raise ConfigurationError(
            f"state scope {scope!r} is not a valid name; use an identifier such as 'session', 'user', "
            "'app' or a name of your own like 'patient'"
        )
    return f"{scope}:"


def flatten_scoped(scoped: Mapping[str, Mapping[str, Any]], *, what: str = "initial_state") -> dict[str, Any]:
    """``{"patient": {"age": 55}, "session": {"mode": "x"}}`` -> ``{"patient:age": 55, "mode": "x"}``."""
    flat: dict[str, Any] = {}
    for scope, values in scoped.items():
        if not isinstance(values, Mapping):
            raise ConfigurationError(
                f"{what}[{scope!r}] is a {type(values).__name__}; {what} maps scope names to dicts, e.g. "
                f'{{"session": {{"{scope}": ...}}}} or {{"patient": {{"age": 55}}}}'
            )
        prefix = scope_prefix(scope)
        for key, value in values.items():
            flat[prefix + key] = value
    return flat


def scoped_from_flat(state: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The reverse for ADK's own prefixes only: ``{"user:a": 1, "b": 2}`` -> ``{"user": {"a": 1}, "session": {"b": 2}}``.

    Keys with another prefix stay session keys under their full name (flattening gives them back unchanged).
    """
    scoped: dict[str, dict[str, Any]] = {}
    for key, value in state.items():
        scope, name = _split(key)
        scoped.setdefault(scope, {})[name] = value
    return scoped


def _split(key: str) -> tuple[str, str]:
    for scope, prefix in _BUILTIN_PREFIXES.items():
        if prefix and key.startswith(prefix):
            return scope, key[len(prefix) :]
    return SESSION, key


def scope_view(state: Mapping[str, Any], scope: str) -> dict[str, Any]:
    """The keys of one scope, prefix removed."""
    prefix = scope_prefix(scope)
    if not prefix:
        return {k: v for k, v in state.items() if not k.startswith(_RESERVED)}
    return {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}


class ScopedView(Mapping[str, dict[str, Any]]):
    """Read-only ``{scope: {key: value}}`` over a flat state dict; any scope name may be asked for
    (a scope with no keys is an empty dict). What ``state_matches`` queries and state metrics read."""

    def __init__(self, state: Mapping[str, Any]) -> None:
        self._state = state

    def __getitem__(self, scope: str) -> dict[str, Any]:
        return scope_view(self._state, scope)

    def __iter__(self) -> Iterator[str]:
        scopes = {SESSION}
        for key in self._state:
            scope, _ = _split(key)
            if scope != SESSION:
                scopes.add(scope)
            elif ":" in key:
                scopes.add(key.split(":", 1)[0])
        return iter(sorted(scopes))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, scope: object) -> bool:
        return isinstance(scope, str)


class ScopeAccessor:
    """One scope of a writable state: ``get``/``set`` and item access with the prefix added."""

    __slots__ = ("_state", "_prefix", "scope")

    def __init__(self, state: MutableMapping[str, Any], scope: str) -> None:
        self._state = state
        self._prefix = scope_prefix(scope)
        self.scope = scope

    def get(self, key: str, default: Any = None) -> Any:
        return self._state.get(self._prefix + key, default)

    def set(self, key: str, value: Any) -> None:
        self._state[self._prefix + key] = value

    def __getitem__(self, key: str) -> Any:
        return self._state[self._prefix + key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.set(key, value)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and (self._prefix + key) in self._state

    def to_dict(self) -> dict[str, Any]:
        return scope_view(dict(self._state), self.scope)

    def __repr__(self) -> str:
        return f"ScopeAccessor({self.scope!r}, {self.to_dict()!r})"


class ScopedState:
    """The seed's ``StateAccessorWithScopes``: ``state.session.get("k")``, ``state.patient.set("age", 55)``,
    ``state.scope("practice")``. Writes go to the underlying state (a tool's delta), prefixed."""

    __slots__ = ("_state",)

    def __init__(self, state: MutableMapping[str, Any]) -> None:
        self._state = state

    def scope(self, name: str) -> ScopeAccessor:
        return ScopeAccessor(self._state, name)

    def __getattr__(self, name: str) -> ScopeAccessor:
        if name.startswith("_"):
            raise AttributeError(name)
        return ScopeAccessor(self._state, name)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        view = ScopedView(dict(self._state))
        return {scope: view[scope] for scope in view}
