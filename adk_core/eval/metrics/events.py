"""event_count_metric: count events (or tool calls, tool results) and check the count."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ...errors import ConfigurationError
from ..trace import Trace
from .base import MetricContext, MetricResult

EventType = Literal["tool_call", "tool_result", "user", "agent", "any"]
_TYPES = ("tool_call", "tool_result", "user", "agent", "any")


def _items(trace: Trace, event_type: EventType) -> list[Any]:
    if event_type == "tool_call":
        return trace.tool_calls(ignore=())
    if event_type == "tool_result":
        return trace.tool_results()
    if event_type == "user":
        return [e for e in trace.events if e.author == "user"]
    if event_type == "agent":
        return [e for e in trace.events if e.author != "user"]
    return list(trace.events)


@dataclass(frozen=True)
class EventCountMetric:
    name: str
    event_type: EventType
    assertion: Callable[[int], bool]
    filter: Callable[[Any], bool] | None = None

    async def evaluate(self, trace: Trace, ctx: MetricContext) -> MetricResult:
        items = _items(trace, self.event_type)
        if self.filter is not None:
            items = [item for item in items if self.filter(item)]
        count = len(items)
        return MetricResult(
            passed=bool(self.assertion(count)), value=count, evidence=[f"{count} {self.event_type} item(s) matched"]
        )


def event_count_metric(
    *,
    name: str,
    assertion: Callable[[int], bool],
    event_type: EventType = "any",
    filter: Callable[[Any], bool] | None = None,
) -> EventCountMetric:
    """Pass when ``assertion(count)`` holds.

    Args:
        name: the metric's name.
        assertion: a function of the count.
        event_type: what is counted: ``tool_call`` (FunctionCall items: ``.name``, ``.args``),
            ``tool_result`` (FunctionResponse items), ``user`` / ``agent`` / ``any`` (Event items).
        filter: keep only items for which it returns truthy (``lambda c: c.name == "ask"``).
    """
    if event_type not in _TYPES:
        raise ConfigurationError(f"event_count_metric {name!r}: event_type must be one of {_TYPES}, not {event_type!r}")
    return EventCountMetric(name=name, event_type=event_type, assertion=assertion, filter=filter)
