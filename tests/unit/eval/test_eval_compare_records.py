"""adk_core.eval.store without a database: records from results, and comparing two runs."""

from __future__ import annotations

from adk_core.eval import EvalResult, MetricResult, SessionRef, TokenUsage, combine_trials
from adk_core.eval.store import CaseRecord, RunDetail, RunRecord, TrialRecord, case_status, compare_runs


def _trial(case: str, trial: int = 0, **metrics: bool) -> TrialRecord:
    status = "passed" if all(metrics.values()) else "failed"
    return TrialRecord(case_name=case, trial=trial, status=status,
                       metrics={k: MetricResult(v, score=1.0 if v else 0.0) for k, v in metrics.items()})


def _run(run_id: str, *trials: TrialRecord, cases: list[CaseRecord] | None = None) -> RunDetail:
    return RunDetail(run=RunRecord(run_id=run_id, suite="s", mode="in_process"), cases=cases or [], trials=list(trials))


def test_records_from_a_result_with_trials() -> None:
    trials = [
        EvalResult(name="c", status="passed", trial=0, duration_ms=5, token_usage=TokenUsage(input=3, output=1),
                   session=SessionRef(app_name="a", user_id="u", session_id="s0")),
        EvalResult(name="c", status="failed", trial=1, duration_ms=7, metrics={"m": MetricResult(False)}),
    ]
    result = combine_trials(trials)
    case = CaseRecord.from_result(result)
    assert (case.status, case.trials, case.passed_trials, case.pass_hat_k, case.duration_ms) == ("failed", 2, 1, 0.0, 12)
    assert case.token_usage == TokenUsage(input=3, output=1)
    first = TrialRecord.from_result(trials[0])
    assert first.session == SessionRef(app_name="a", user_id="u", session_id="s0") and first.trial == 0


def test_compare_finds_regressions_fixes_and_changes_per_metric() -> None:
    before = _run("a", _trial("both", ok=True, fast=True), _trial("worse", ok=True), _trial("better", ok=False),
                  _trial("gone", ok=True))
    after = _run("b", _trial("both", ok=True, fast=False), _trial("worse", ok=False), _trial("better", ok=True),
                 _trial("new", ok=True))
    changes = {c.case_name: c for c in compare_runs(before, after)}
    assert list(changes) == ["better", "both", "gone", "new", "worse"]
    assert (changes["worse"].change, changes["better"].change) == ("regression", "fix")
    assert (changes["gone"].change, changes["new"].change) == ("removed", "added")
    both = changes["both"]
    assert both.change == "regression" and (both.before, both.after) == ("passed", "failed")
    assert [(m.metric, m.change, m.score_before, m.score_after) for m in both.metrics] == [
        ("fast", "regression", 1.0, 0.0), ("ok", "same", 1.0, 1.0)]


def test_a_metric_passes_only_when_every_trial_passed_it() -> None:
    before = _run("a", _trial("c", 0, m=True), _trial("c", 1, m=True))
    after = _run("b", _trial("c", 0, m=True), _trial("c", 1, m=False),
                 cases=[CaseRecord(case_name="c", status="failed", trials=2, passed_trials=1)])
    (change,) = compare_runs(before, after)
    assert change.change == "regression" and change.metrics[0].change == "regression"
    assert change.metrics[0].score_after == 0.5
    assert case_status(before, "c") == "passed" and case_status(after, "c") == "failed"
    assert case_status(after, "other") is None
