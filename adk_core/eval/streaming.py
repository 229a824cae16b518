"""Streaming metrics: measurements that watch a trial's events as they happen (seed 002's "streaming metrics").

A ``Metric`` scores the finished trace; a ``StreamingMetric`` watches the run: ``drive_case`` tells
each of its watchers when a system turn starts and hands it every event the moment the host's
runner yields it, with the runtime's clock (``workflow.now()`` in a durable trial, so the times are
those of the workflow tasks the events arrived in, and replay gives the same numbers). Events carry
their own timestamp from the same clock, taken when the engine made them; the built-in watchers
prefer it. What a
watcher measures is a value, not a verdict: it goes to ``EvalResult.measurements[name]`` and never
decides whether a trial passed, so a case is still checked only by its metrics.

Built in (every case measures these unless it names its own ``streaming_metrics``):

    time_to_first_response_ms   from the start of the first system turn to the first text the system sent
    tool_latency_ms             per tool: calls, mean_ms, max_ms (from the call to its response)
    tokens                      input, output and model_calls of the system's model calls
    cost_usd                    what those calls cost: the cost the durable model activity recorded on
                                each event, else adk_core.models.pricing's table (None: no price known)

A case's measurements are the mean over its trials (``combine_measurements``), a summary's the
mean over its cases; ``adk_core.eval.store.compare_runs`` compares them between runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ..models.base import UsageMetadata
from ..models.pricing import COST_KEY, PriceTable
from ..types import Event

__all__ = [
    "DEFAULT_STREAMING_METRICS",
    "EventWatcher",
    "StreamingMetric",
    "Watchers",
    "combine_measurements",
    "cost_usd",
    "flatten_measurements",
    "time_to_first_response",
    "tokens",
    "tool_latency",
]


class EventWatcher:
    """One trial's watcher. Override what you need; ``value`` must return JSON."""

    def on_turn_start(self, at: float) -> None:
        """A system turn starts (``at``: the runtime's clock, seconds)."""

    def on_event(self, event: Event, at: float) -> None:
        """The system's runner yielded ``event`` (partial ones too, when the model streams)."""

    def value(self) -> Any:
        raise NotImplementedError


@runtime_checkable
class StreamingMetric(Protocol):
    """``name`` keys the value in ``EvalResult.measurements``; ``watch()`` gives a fresh watcher per trial."""

    name: str

    def watch(self) -> EventWatcher: ...


class _Metric:
    def __init__(self, name: str, factory: Callable[[], EventWatcher]) -> None:
        self.name = name
        self._factory = factory

    def watch(self) -> EventWatcher:
        return self._factory()

    def __repr__(self) -> str:
        return f"StreamingMetric({self.name!r})"


def _when(event: Event, seen: float) -> float:
    """When the event happened: its own timestamp (the runtime's clock when the engine made it), else
    when the watcher saw it. The engine may start a call's tools before it hands out the call's
    event, so the time seen would cut a tool's latency short."""
    return event.timestamp or seen


def _from_system(event: Event) -> bool:
    return event.author != "user"


class _FirstResponse(EventWatcher):
    def __init__(self) -> None:
        self.started: float | None = None
        self.first: float | None = None

    def on_turn_start(self, at: float) -> None:
        if self.started is None:
            self.started = at

    def on_event(self, event: Event, at: float) -> None:
        if self.first is None and self.started is not None and _from_system(event) and event.text.strip():
            self.first = _when(event, at)

    def value(self) -> float | None:
        if self.started is None or self.first is None:
            return None
        return round((self.first - self.started) * 1000.0, 3)


class _ToolLatency(EventWatcher):
    def __init__(self) -> None:
        self.called: dict[str, tuple[str, float]] = {}
        self.latencies: dict[str, list[float]] = {}

    def on_event(self, event: Event, at: float) -> None:
        if event.partial:
            return
        for call in event.function_calls():
            self.called[call.id or call.name] = (call.name, _when(event, at))
        for response in event.function_responses():
            found = self.called.pop(response.id or response.name, None)
            if found is not None:
                self.latencies.setdefault(found[0], []).append((_when(event, at) - found[1]) * 1000.0)

    def value(self) -> dict[str, dict[str, float]]:
        return {
            name: {"calls": len(ms), "mean_ms": round(sum(ms) / len(ms), 3), "max_ms": round(max(ms), 3)}
            for name, ms in sorted(self.latencies.items())
        }


def _model_events(event: Event) -> bool:
    return bool(event.usage_metadata) and not event.partial and _from_system(event)


class _Tokens(EventWatcher):
    def __init__(self) -> None:
        self.input = self.output = self.calls = 0

    def on_event(self, event: Event, at: float) -> None:
        if not _model_events(event):
            return
        usage = event.usage_metadata or {}
        self.calls += 1
        self.input += int(usage.get("prompt_token_count") or 0)
        self.output += int(usage.get("candidates_token_count") or 0) + int(usage.get("thoughts_token_count") or 0)

    def value(self) -> dict[str, int]:
        return {"input": self.input, "output": self.output, "model_calls": self.calls}


class _Cost(EventWatcher):
    def __init__(self, prices: PriceTable) -> None:
        self.prices = prices
        self.total: float | None = None

    def on_event(self, event: Event, at: float) -> None:
        if not _model_events(event):
            return
        recorded = (event.custom_metadata or {}).get(COST_KEY)  # the durable model activity's own figure
        cost = float(recorded) if isinstance(recorded, int | float) else None
        if cost is None and event.model_version:
            cost = self.prices.cost(event.model_version, UsageMetadata.model_validate(event.usage_metadata))
        if cost is not None:
            self.total = (self.total or 0.0) + cost

    def value(self) -> float | None:
        return None if self.total is None else round(self.total, 8)


def time_to_first_response() -> StreamingMetric:
    """Milliseconds from the start of the trial's first system turn to the first text the system sent."""
    return _Metric("time_to_first_response_ms", _FirstResponse)


def tool_latency() -> StreamingMetric:
    """Per tool: ``{"calls", "mean_ms", "max_ms"}`` from each call to its response."""
    return _Metric("tool_latency_ms", _ToolLatency)


def tokens() -> StreamingMetric:
    """``{"input", "output", "model_calls"}`` of the system's model calls."""
    return _Metric("tokens", _Tokens)


def cost_usd(prices: PriceTable | None = None) -> StreamingMetric:
    """USD of the system's model calls (None when no call had a price)."""
    table = prices or PriceTable.default()
    return _Metric("cost_usd", lambda: _Cost(table))


DEFAULT_STREAMING_METRICS: tuple[StreamingMetric, ...] = (time_to_first_response(), tool_latency(), tokens(), cost_usd())


class Watchers:
    """The watchers of one trial; a watcher that raises records its error as its value."""

    def __init__(self, metrics: Sequence[StreamingMetric], clock: Callable[[], float]) -> None:
        self._clock = clock
        self._watchers = {m.name: m.watch() for m in metrics}
        self._errors: dict[str, str] = {}

    def _each(self, call: Callable[[EventWatcher], None]) -> None:
        for name, watcher in self._watchers.items():
            if name in self._errors:
                continue
            try:
                call(watcher)
            except Exception as e:  # noqa: BLE001  (a measurement that broke must not fail the trial)
                self._errors[name] = f"{type(e).__name__}: {e}"

    def turn_start(self) -> None:
        at = self._clock()
        self._each(lambda w: w.on_turn_start(at))

    def see(self, event: Event) -> None:
        at = self._clock()
        self._each(lambda w: w.on_event(event, at))

    def values(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for name, watcher in self._watchers.items():
            if name not in self._errors:
                try:
                    found[name] = watcher.value()
                    continue
                except Exception as e:  # noqa: BLE001
                    self._errors[name] = f"{type(e).__name__}: {e}"
            found[name] = {"error": self._errors[name]}
        return found


def _mean(values: list[Any]) -> Any:
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    if numbers and len(numbers) == len(values):
        return round(sum(numbers) / len(numbers), 8)
    mappings = [v for v in values if isinstance(v, Mapping)]
    if mappings and len(mappings) == len(values) and not any("error" in m for m in mappings):
        keys = list(dict.fromkeys(k for m in mappings for k in m))
        return {k: _mean([m[k] for m in mappings if k in m and m[k] is not None]) for k in keys}
    return values[0] if values else None


def combine_measurements(per_trial: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The mean over trials (or cases) of each measurement, numbers inside mappings too; a value
    some trial lacks is averaged over the trials that have it."""
    names = list(dict.fromkeys(name for m in per_trial for name in m))
    return {name: _mean([m[name] for m in per_trial if m.get(name) is not None]) for name in names}


def flatten_measurements(measurements: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Every number in ``measurements`` by dotted path (``tool_latency_ms.lookup.mean_ms``), for comparing runs."""
    flat: dict[str, float] = {}
    for key, value in measurements.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten_measurements(value, path + "."))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            flat[path] = float(value)
    return flat
