"""Metrics: decoupled from execution, they read only the final trace (events + state)."""

from .base import (
    FunctionMetric,
    Metric,
    MetricContext,
    MetricResult,
    UnsupportedMetric,
    evaluate_metrics,
    metric,
    unsupported_metric,
)
from .events import event_count_metric
from .judge import llm_judge, parse_verdict
from .response import response_match, rouge1
from .state import state_metric
from .trajectory import tool_trajectory

__all__ = [
    "FunctionMetric",
    "Metric",
    "MetricContext",
    "MetricResult",
    "evaluate_metrics",
    "event_count_metric",
    "llm_judge",
    "metric",
    "parse_verdict",
    "response_match",
    "rouge1",
    "state_metric",
    "tool_trajectory",
    "UnsupportedMetric",
    "unsupported_metric",
]
