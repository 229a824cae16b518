"""A durable suite that continued as new (or resumed) returns at most MAX_RESULTS_INLINE case results;
whether it passed still counts every case (the summary, as the stored run's status does)."""

from __future__ import annotations

from adk_core.eval import EvalResult
from adk_core.eval.results import summarize
from adk_temporal.workflows._eval_contracts import MAX_RESULTS_INLINE, EvalSuiteRunResult


def _finished_from_store(statuses: list[str]) -> EvalSuiteRunResult:
    """The result EvalSuiteWorkflow._finish_from_store returns: the summary of every case, the first
    MAX_RESULTS_INLINE results, and how many were left out."""
    results = [EvalResult(name=f"case-{i}", status=status) for i, status in enumerate(statuses)]
    shown = results[:MAX_RESULTS_INLINE]
    return EvalSuiteRunResult(run_id="r1", suite="m:cases", summary=summarize(results), results=shown,
                              results_omitted=len(results) - len(shown))  # fmt: skip


def test_a_failing_case_beyond_the_returned_results_fails_the_suite() -> None:
    result = _finished_from_store(["passed"] * MAX_RESULTS_INLINE + ["failed"])
    assert result.results_omitted == 1 and all(r.passed for r in result.results)
    assert result.summary.failed == 1
    assert not result.passed  # `adkt eval run --durable` / `resume` exit 1, as the stored run says failed


def test_a_case_beyond_the_returned_results_that_was_not_evaluated_fails_the_suite() -> None:
    assert not _finished_from_store(["passed"] * MAX_RESULTS_INLINE + ["not_evaluated"]).passed


def test_a_suite_whose_omitted_cases_all_passed_passes() -> None:
    result = _finished_from_store(["passed"] * (MAX_RESULTS_INLINE + 5))
    assert result.results_omitted == 5 and result.passed
