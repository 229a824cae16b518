"""The ADK's Prometheus metrics, exported beside Temporal's own SDK metrics by the SDK's runtime.

A process that sets ``--metrics-port`` (ADK_METRICS_PORT) gets a Temporal ``Runtime`` whose
``PrometheusConfig`` serves ``/metrics`` on that port (``metrics_config``). Temporal's SDK metrics
(``temporal_*``: workflow and activity task latencies, slots, polls, requests) are the runtime's
own; ours are instruments made on the same runtime's meter, so one scrape shows both.

Where each is counted (docs/observability.md lists every series):

- turns, turn latency, turn cost, human waits: workflow code, on ``workflow.metric_meter()``,
  which Temporal makes replay-safe (nothing is recorded while a workflow replays), so a replay
  after a cache eviction or on another worker counts nothing twice;
- model calls, tokens, cost per call, tool calls, compactions, eval trials: in the activities,
  once per attempt (a retried model call is two calls, the first one failed);
- open streams and HTTP requests: the web app, on the runtime's meter.

Without a metrics port the runtime's meter is a no-op and every record costs one call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from temporalio import activity
from temporalio.common import MetricMeter

from adk_core.errors import ConfigurationError

# Seconds, the Prometheus base unit. Temporal's core applies its own default buckets (meant for
# milliseconds) to a histogram it does not know, so each of ours names its buckets here.
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
_TURN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)
_WAIT_BUCKETS = (1.0, 10.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0, 24 * 3600.0, 7 * 24 * 3600.0)
_QUEUE_BUCKETS = (0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 1000.0)
_COST_BUCKETS = (0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0)

TURNS_STARTED = "adk_turns_started_total"
TURNS_COMPLETED = "adk_turns_completed_total"
TURNS_FAILED = "adk_turns_failed_total"
TURN_DURATION = "adk_turn_duration_seconds"
TURN_COST = "adk_turn_cost_usd"
QUEUED_MESSAGES = "adk_conversation_queued_messages"
MODEL_CALLS = "adk_model_calls_total"
MODEL_CALL_ERRORS = "adk_model_call_errors_total"
MODEL_CALL_DURATION = "adk_model_call_duration_seconds"
MODEL_TOKENS = "adk_model_tokens_total"
MODEL_CALL_COST = "adk_model_call_cost_usd"
TOOL_CALLS = "adk_tool_calls_total"
TOOL_CALL_ERRORS = "adk_tool_call_errors_total"
TOOL_CALL_DURATION = "adk_tool_call_duration_seconds"
HUMAN_WAITS_STARTED = "adk_human_waits_started_total"
HUMAN_WAITS_ANSWERED = "adk_human_waits_answered_total"
HUMAN_WAIT_DURATION = "adk_human_wait_duration_seconds"
COMPACTIONS = "adk_compactions_total"
EVAL_TRIALS = "adk_eval_trials_total"
STREAMS_OPEN = "adk_streams_open"
HTTP_REQUESTS = "adk_http_requests_total"
HTTP_REQUEST_DURATION = "adk_http_request_duration_seconds"

HISTOGRAM_BUCKETS: Mapping[str, tuple[float, ...]] = {
    TURN_DURATION: _TURN_BUCKETS,
    TURN_COST: _COST_BUCKETS,
    QUEUED_MESSAGES: _QUEUE_BUCKETS,
    MODEL_CALL_DURATION: _LATENCY_BUCKETS,
    MODEL_CALL_COST: _COST_BUCKETS,
    TOOL_CALL_DURATION: _LATENCY_BUCKETS,
    HUMAN_WAIT_DURATION: _WAIT_BUCKETS,
    HTTP_REQUEST_DURATION: _LATENCY_BUCKETS,
}


def metrics_config(port: int, host: str = "0.0.0.0") -> Any:
    """The SDK's ``PrometheusConfig`` serving ``/metrics`` on ``host:port``, with our histograms'
    buckets. Temporal's own metric names and units are left as the SDK makes them (its Grafana
    dashboards expect them)."""
    from temporalio.runtime import PrometheusConfig

    return PrometheusConfig(
        bind_address=f"{host}:{port}",
        histogram_bucket_overrides={name: list(buckets) for name, buckets in HISTOGRAM_BUCKETS.items()},
    )


def runtime_with_metrics(telemetry: Any, port: int | None, host: str = "0.0.0.0") -> Any:
    """A Temporal ``Runtime`` with ``telemetry`` (a ``TelemetryConfig``: its logging is kept) that
    also serves Prometheus metrics on ``port`` (None: no metrics, as before)."""
    from temporalio.runtime import Runtime

    if port is None:
        return Runtime(telemetry=telemetry)
    try:
        return Runtime(telemetry=dataclasses.replace(telemetry, metrics=metrics_config(port, host)))
    except ValueError as e:  # the core could not start its exporter, e.g. the port is taken
        raise ConfigurationError(
            f"the metrics endpoint cannot listen on {host}:{port} ({e}); pick another --metrics-port (ADK_METRICS_PORT)"
        ) from None


@dataclass(frozen=True)
class TurnMetrics:
    """Workflow-side instruments; make them from ``workflow.metric_meter()`` (replay-safe)."""

    started: Any
    completed: Any
    failed: Any
    duration: Any
    cost: Any
    waits_started: Any
    waits_answered: Any
    wait_duration: Any
    queued: Any

    @classmethod
    def on(cls, meter: MetricMeter) -> TurnMetrics:
        return cls(
            started=meter.create_counter(TURNS_STARTED, "Turns (invocations) started", "{turn}"),
            completed=meter.create_counter(TURNS_COMPLETED, "Turns that ended with a result", "{turn}"),
            failed=meter.create_counter(TURNS_FAILED, "Turns that failed, by error type", "{turn}"),
            duration=meter.create_histogram_float(TURN_DURATION, "Turn latency, message to result", "s"),
            cost=meter.create_histogram_float(TURN_COST, "Model cost of a finished turn (price table)", "USD"),
            waits_started=meter.create_counter(
                HUMAN_WAITS_STARTED, "Questions to a person (tool confirmations, long-running tools) asked", "{wait}"
            ),
            waits_answered=meter.create_counter(HUMAN_WAITS_ANSWERED, "Questions to a person answered", "{wait}"),
            wait_duration=meter.create_histogram_float(
                HUMAN_WAIT_DURATION, "How long a question waited for its answer", "s"
            ),
            queued=meter.create_histogram(
                QUEUED_MESSAGES, "Messages ahead of a new one in its conversation when it was queued", "{message}"
            ),
        )


@dataclass(frozen=True)
class ActivityMetrics:
    """Activity-side instruments, made once per worker from its runtime's meter."""

    model_calls: Any
    model_errors: Any
    model_duration: Any
    model_tokens: Any
    model_cost: Any
    tool_calls: Any
    tool_errors: Any
    tool_duration: Any
    compactions: Any
    eval_trials: Any

    @classmethod
    def on(cls, meter: MetricMeter) -> ActivityMetrics:
        return cls(
            model_calls=meter.create_counter(MODEL_CALLS, "Model calls (each attempt)", "{call}"),
            model_errors=meter.create_counter(MODEL_CALL_ERRORS, "Model calls that failed, by error type", "{call}"),
            model_duration=meter.create_histogram_float(MODEL_CALL_DURATION, "Model call latency", "s"),
            model_tokens=meter.create_counter(
                MODEL_TOKENS, "Tokens by type (input, output; cached_input and cache_write_input are parts of input)", "{token}"
            ),
            model_cost=meter.create_histogram_float(MODEL_CALL_COST, "Model call cost (price table)", "USD"),
            tool_calls=meter.create_counter(TOOL_CALLS, "Tool calls run as activities (each attempt)", "{call}"),
            tool_errors=meter.create_counter(TOOL_CALL_ERRORS, "Tool calls that raised, by error type", "{call}"),
            tool_duration=meter.create_histogram_float(TOOL_CALL_DURATION, "Tool call latency", "s"),
            compactions=meter.create_counter(COMPACTIONS, "Compactions (summaries of older events) written", "{compaction}"),
            eval_trials=meter.create_counter(EVAL_TRIALS, "Eval trials by result (passed, failed)", "{trial}"),
        )


class WebMetrics:
    """The web app's instruments (adkt/web/api/dispatch.py), on the default runtime's meter: the
    one ``adkt web --metrics-port`` / ``adkt api --metrics-port`` configures."""

    def __init__(self, meter: MetricMeter) -> None:
        self.meter = meter
        self.requests = meter.create_counter(HTTP_REQUESTS, "HTTP API requests by route, method and status", "{request}")
        self.duration = meter.create_histogram_float(
            HTTP_REQUEST_DURATION, "HTTP API request latency (for a stream: until its response starts)", "s"
        )
        self._streams = meter.create_gauge(STREAMS_OPEN, "Server-sent event streams open (turns followed live)", "{stream}")
        self._open: dict[str, int] = {}

    def stream_opened(self, route: str) -> None:
        self._open[route] = self._open.get(route, 0) + 1
        self._streams.set(self._open[route], {"route": route})

    def stream_closed(self, route: str) -> None:
        self._open[route] = max(0, self._open.get(route, 0) - 1)
        self._streams.set(self._open[route], {"route": route})


_web_metrics: WebMetrics | None = None


def web_metrics() -> WebMetrics:
    from temporalio.runtime import Runtime

    global _web_metrics
    meter = Runtime.default().metric_meter
    if _web_metrics is None or _web_metrics.meter is not meter:
        _web_metrics = WebMetrics(meter)
    return _web_metrics


_activity_metrics: tuple[object, MetricMeter, ActivityMetrics] | None = None
"""The last activity's client, its runtime's meter, and the instruments made on that meter."""


def activity_metrics() -> ActivityMetrics:
    """The activity-side instruments on the meter of the runtime the running activity's worker
    uses, made once per meter (call inside an activity). Asked about 7 times a W1 turn: a worker's
    activities share one client, so the answer is kept for it (about 20 us a call otherwise)."""
    global _activity_metrics
    client = activity.client()
    kept = _activity_metrics
    if kept is not None and kept[0] is client:
        return kept[2]
    meter = runtime_meter(client)
    metrics = kept[2] if kept is not None and kept[1] is meter else ActivityMetrics.on(meter)
    _activity_metrics = (client, meter, metrics)
    return metrics


def runtime_meter(client: Any) -> MetricMeter:
    """The meter of the Temporal runtime ``client`` runs on (a no-op without metrics configured)."""
    from temporalio.runtime import Runtime

    runtime = client.service_client.config.runtime or Runtime.default()
    return runtime.metric_meter
