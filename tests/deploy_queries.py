"""The PromQL in deploy/ (the Grafana dashboard and the Prometheus rules) and the metric names it
reads, for the tests that check those names against what a worker exports.

Names are found without a PromQL parser: label matchers, strings and grouping clauses are cut
out first, then every identifier that is not a function, keyword or recorded rule is a metric.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from adk_temporal import metrics

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "deploy" / "grafana" / "adk-dashboard.json"
RULES = ROOT / "deploy" / "prometheus" / "adk-alerts.yml"
RULES_TESTS = (ROOT / "deploy" / "prometheus" / "adk-alerts.test.yml", ROOT / "deploy" / "prometheus" / "adk-evals.test.yml")

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and", "or", "unless", "inf", "nan"}
# Aggregations may put their grouping before the parenthesis (`sum by (app) (...)`).
AGGREGATIONS = {"sum", "min", "max", "avg", "count", "group", "stddev", "stdvar", "topk", "bottomk", "quantile", "count_values"}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")

# Temporal's SDK metrics the dashboard and rules read, as its Prometheus exporter names them.
# tests/integration/test_metrics.py checks each is on a real worker's endpoint.
TEMPORAL_SDK_METRICS = {
    "temporal_workflow_task_execution_failed_total",
    "temporal_worker_task_slots_available",
    "temporal_activity_schedule_to_start_latency_bucket",
}


def dashboard_queries() -> Iterator[tuple[str, str]]:
    """(panel title, expression) for every query of the dashboard, and its variables' queries."""
    dashboard = json.loads(DASHBOARD.read_text())
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            yield f"variable {variable['name']}", variable["definition"]


def rules() -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]


def rule_queries() -> Iterator[tuple[str, str]]:
    for rule in rules():
        yield rule.get("alert") or rule["record"], rule["expr"]


def recorded_names() -> set[str]:
    return {rule["record"] for rule in rules() if "record" in rule}


def metric_names(expr: str) -> set[str]:
    """The metric names ``expr`` reads (recorded rules' names included)."""
    text = re.sub(r"label_values\(\s*([^,)]+),[^)]*\)", r"\1", expr)  # Grafana's: the metric, then a label
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)  # strings: label values, regexes
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r"\1", text)
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges: [5m], [$__rate_interval]
    text = re.sub(r"\boffset\s+\w+", "", text)
    text = re.sub(r"\$\w+", "", text)  # Grafana variables outside matchers and ranges
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        name, after = match.group(), text[match.end() :].lstrip()
        if name.lower() in KEYWORDS | AGGREGATIONS or after.startswith("("):  # a keyword or a function
            continue
        if re.fullmatch(r"\d", text[match.start() - 1 : match.start()] or " "):  # inside a number: 1e3
            continue
        names.add(name)
    return names


def adk_exported_names() -> set[str]:
    """Every series name adk_temporal.metrics exports, histograms with their three series."""
    names = set()
    for value in vars(metrics).values():
        if isinstance(value, str) and re.fullmatch(r"adk_[a-z_]+", value):
            if value in metrics.HISTOGRAM_BUCKETS:
                names.update(value + suffix for suffix in HISTOGRAM_SUFFIXES)
            else:
                names.add(value)
    return names


def referenced_names() -> set[str]:
    """Every metric the dashboard and the rules read, recorded rules left out."""
    queries = [*dashboard_queries(), *rule_queries()]
    return {name for _, expr in queries for name in metric_names(expr)} - recorded_names()
