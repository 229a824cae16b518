"""deploy/grafana and deploy/prometheus: well-formed, reading only metrics a worker exports, and the
alert rules firing on the series they are for (promtool, Debian's prometheus package)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import yaml

from tests.deploy_queries import (
    DASHBOARD,
    RULES,
    RULES_TESTS,
    TEMPORAL_SDK_METRICS,
    adk_exported_names,
    dashboard_queries,
    metric_names,
    recorded_names,
    referenced_names,
    rule_queries,
    rules,
)

ALERTS = {
    "AdkTurnsFailing", "AdkModelErrors", "AdkQuestionsWaitingTooLong", "AdkWorkflowTaskFailures",
    "AdkWorkerSlotsExhausted", "AdkEvalPassRateDropping",
}  # fmt: skip


def _promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("no promtool: apt-get install --no-install-recommends prometheus (.ci/run does)")
    return path


def test_the_name_finder_skips_functions_labels_keywords_and_numbers() -> None:
    expr = (
        'sum by (app) (rate(adk_a_total{app=~"x|y"}[5m])) / ignoring (error_type) group_left '
        "min without (le) (b offset 7d) * 1e3 > bool on (app) c_total unless label_values(d, app)"
    )
    assert metric_names(expr) == {"adk_a_total", "b", "c_total", "d"}


def test_every_metric_the_dashboard_and_rules_read_is_exported() -> None:
    referenced = referenced_names()
    unknown = referenced - adk_exported_names() - TEMPORAL_SDK_METRICS
    assert not unknown, f"deploy/ reads metrics no worker exports: {sorted(unknown)} (adk_temporal/metrics.py lists ours)"
    # Each query reads something, and the Temporal names listed are all used (none stale).
    assert all(metric_names(expr) for _, expr in [*dashboard_queries(), *rule_queries()])
    assert TEMPORAL_SDK_METRICS <= referenced
    # What the issue asks to watch is on the dashboard.
    on_dashboard = {name for _, expr in dashboard_queries() for name in metric_names(expr)}
    for wanted in ("adk_turns_failed_total", "adk_model_call_errors_total", "adk_human_waits_started_total",
                   "adk_eval_trials_total", "adk_model_call_cost_usd_sum", "adk_model_tokens_total",
                   "temporal_workflow_task_execution_failed_total", "temporal_worker_task_slots_available"):  # fmt: skip
        assert wanted in on_dashboard, wanted


def test_the_dashboard_is_grafana_json_on_a_chosen_prometheus() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"] and dashboard["schemaVersion"] >= 36
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)), "panel ids repeat"
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"] and all(t["refId"] for t in panel["targets"]), panel["title"]
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]


def test_the_rules_alert_on_what_the_issue_names() -> None:
    loaded = rules()
    assert {r["alert"] for r in loaded if "alert" in r} == ALERTS
    for rule in loaded:
        if "alert" in rule:
            assert rule["labels"]["severity"] in ("page", "warn") and rule["annotations"]["summary"], rule["alert"]
    assert recorded_names() == {"adk:turn_failure_ratio:rate10m", "adk:model_error_ratio:rate10m", "adk:eval_pass_ratio:increase1d"}
    assert all(yaml.safe_load(path.read_text())["rule_files"] == [RULES.name] for path in RULES_TESTS)


def test_promtool_checks_the_rules_and_each_alert_fires_when_it_should() -> None:
    promtool = _promtool()
    checked = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # adk-alerts.test.yml and adk-evals.test.yml: synthetic series for each alert, firing and quiet.
    tested = subprocess.run([promtool, "test", "rules", *(p.name for p in RULES_TESTS)], cwd=RULES.parent,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert tested.returncode == 0, tested.stdout + tested.stderr
    groups = [group for path in RULES_TESTS for group in yaml.safe_load(path.read_text())["tests"]]
    covered = {t["alertname"] for group in groups for t in group["alert_rule_test"]}
    assert covered == ALERTS
