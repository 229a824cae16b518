"""A case that nothing checked is "not evaluated", never passed: no metrics, or a metric that could not
run (say a google-adk criterion the importer does not support). It counts apart in the summary and
fails the suite."""

from __future__ import annotations

import pytest
from eval_fixtures import agent

from adk_core.eval import (
    EvalCase,
    MetricResult,
    assert_eval_passes,
    metric,
    response_match,
    run_eval,
    run_eval_suite,
    tool_trajectory,
)
from adk_core.eval.metrics import unsupported_metric
from adk_core.eval.results import combine_trials
from adk_core.models import text_response


def _case(name: str, **kwargs: object) -> EvalCase:
    return EvalCase(name, app_or_agent=agent(lambda r: text_response("hello")), first_message="hi", **kwargs)  # type: ignore[arg-type]


async def test_a_case_without_metrics_is_not_evaluated_and_fails_the_suite() -> None:
    result = await run_eval(_case("unchecked"))
    assert result.status == "not_evaluated" and not result.passed
    assert result.not_evaluated_reason == "the case has no metrics: add metrics=[...] to say what it must show"
    suite = await run_eval_suite([_case("unchecked"), _case("checked", metrics=[metric("hello", lambda t: "hello" in t.final_response())])])
    assert not suite.passed
    assert (suite.summary.passed, suite.summary.failed, suite.summary.not_evaluated) == (1, 0, 1)


async def test_a_metric_that_could_not_run_names_itself() -> None:
    skip = unsupported_metric("safety_v1", "google-adk criterion 'safety_v1' is not supported by the importer")
    ok = metric("hello", lambda t: "hello" in t.final_response())
    result = await run_eval(_case("partly", metrics=[ok, skip]))
    assert result.status == "not_evaluated"
    assert not result.metrics["safety_v1"].evaluated and not result.metrics["safety_v1"].passed
    assert result.not_evaluated_reason == "not evaluated: safety_v1 (google-adk criterion 'safety_v1' is not supported by the importer)"
    # A metric that ran and failed decides: the case failed, whatever else could not run.
    failing = await run_eval(_case("failing", metrics=[metric("bye", lambda t: "bye" in t.final_response()), skip]))
    assert failing.status == "failed"


async def test_a_per_turn_metric_with_nothing_to_compare_leaves_the_case_not_evaluated() -> None:
    result = await run_eval(_case("no references", metrics=[response_match(per_turn=[None]), tool_trajectory(per_turn=[])]))
    assert result.status == "not_evaluated" and not result.passed
    assert "response_match (response_match: no turn has a reference" in (result.not_evaluated_reason or "")
    assert "tool_trajectory (tool_trajectory: per_turn lists no turn" in (result.not_evaluated_reason or "")


async def test_trials_of_an_unchecked_case_combine_as_not_evaluated() -> None:
    trials = [await run_eval(_case("unchecked"))] * 2
    combined = combine_trials(trials)
    assert combined.status == "not_evaluated" and combined.pass_hat_k == 0.0


def test_a_result_that_was_not_evaluated_cannot_pass() -> None:
    with pytest.raises(ValueError, match="not evaluated"):
        MetricResult(True, evaluated=False)


async def test_assert_eval_passes_refuses_an_unchecked_case_and_says_why() -> None:
    with pytest.raises(AssertionError, match="not_evaluated after 1 turn") as raised:
        await assert_eval_passes(_case("unchecked"))
    assert "the case has no metrics" in str(raised.value)
    with pytest.raises(AssertionError, match=r"1 not evaluated"):
        await assert_eval_passes([_case("unchecked")])


async def test_an_empty_suite_is_refused_and_never_passes() -> None:
    from adk_core.errors import ConfigurationError
    from adk_core.eval import EvalSuiteResult, EvalSummary

    with pytest.raises(ConfigurationError, match="no cases; pass at least one EvalCase"):
        await run_eval_suite([])
    assert not EvalSuiteResult(summary=EvalSummary()).passed
