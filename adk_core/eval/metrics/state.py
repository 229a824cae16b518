"""state_metric: check one value of the final state."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..scopes import scope_prefix
from ..trace import Trace
from .base import MetricContext, MetricResult


@dataclass(frozen=True)
class StateMetric:
    name: str
    key: str
    assertion: Callable[[Any], bool]
    scope: str = "session"

    async def evaluate(self, trace: Trace, ctx: MetricContext) -> MetricResult:
        full_key = scope_prefix(self.scope) + self.key
        value = trace.state.get(full_key)
        passed = bool(self.assertion(value))
        shown = "missing" if full_key not in trace.state else repr(value)
        return MetricResult(passed=passed, value=value, evidence=[f"state {full_key!r} is {shown}"])


def state_metric(*, name: str, key: str, assertion: Callable[[Any], bool], scope: str = "session") -> StateMetric:
    """Pass when ``assertion(value)`` holds for a key of the final state.

    Args:
        name: the metric's name.
        key: the key within ``scope`` (``"escalation"``; dotted paths are not expanded).
        assertion: a function of the value (None when the key is missing) returning truthy to pass.
        scope: ``session`` (default), ``user``, ``app`` or your own (``patient`` reads ``patient:key``).
    """
    scope_prefix(scope)  # refuse a bad scope name now, not at scoring time
    return StateMetric(name=name, key=key, assertion=assertion, scope=scope)
