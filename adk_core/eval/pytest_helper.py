"""assert_eval_passes: eval cases as tests in your own suite.

    async def test_chest_pain():
        await assert_eval_passes(chest_pain_case)

The assertion message is the report: status, error, termination and every failing metric's evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .case import EvalCase
from .results import EvalResult, EvalSuiteResult
from .runner import run_eval
from .suite import run_eval_suite


async def assert_eval_passes(
    target: EvalCase | Sequence[EvalCase] | EvalResult | EvalSuiteResult, **suite_options: Any
) -> EvalResult | EvalSuiteResult:
    """Run a case (or cases) in-process, or take a result, and raise AssertionError unless it passed.

    Args:
        target: a case, a list of cases (run as a suite), or a result already computed.
        suite_options: passed to run_eval_suite for a list (parallel, max_concurrency, ...).

    Returns:
        The result, for further assertions.
    """
    if isinstance(target, EvalCase):
        result: EvalResult | EvalSuiteResult = await run_eval(target)
    elif isinstance(target, EvalResult | EvalSuiteResult):
        result = target
    else:
        result = await run_eval_suite(list(target), **suite_options)
    if not result.passed:
        raise AssertionError(format_report(result))
    return result


def format_report(result: EvalResult | EvalSuiteResult) -> str:
    """A plain-text report of what did not pass."""
    if isinstance(result, EvalSuiteResult):
        s = result.summary
        head = (f"eval suite: {s.passed}/{s.total} passed ({s.failed} failed, {s.errors} errors, "
                f"{s.terminated} terminated, {s.not_evaluated} not evaluated, {s.skipped} skipped)")
        return "\n\n".join([head, *(format_report(r) for r in result.results if not r.passed)])
    lines = [f"eval case {result.name!r}: {result.status} after {result.turns} turn(s)"]
    runs = result.all_trials()
    if len(runs) > 1:
        lines.append(f"  trials: {sum(r.passed for r in runs)}/{len(runs)} passed (pass^{len(runs)} = {result.pass_hat_k:.2f})")
    if result.termination_reason:
        lines.append(f"  termination: {result.termination_reason}")
    if result.not_evaluated_reason:
        lines.append(f"  {result.not_evaluated_reason}")
    if result.error:
        lines.append(f"  error in {result.error.phase} ({result.error.error_type}):")
        lines.extend("    " + line for line in result.error.message.splitlines())
    for name, metric in result.metrics.items():
        if not metric.passed and metric.evaluated:
            score = f" score={metric.score:.2f}" if metric.score is not None else ""
            lines.append(f"  metric {name!r} failed{score} value={metric.value!r}")
            lines.extend(f"    - {e}" for e in metric.evidence)
    return "\n".join(lines)
