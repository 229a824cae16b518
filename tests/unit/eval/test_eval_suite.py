"""run_eval_suite (parallel, bounded, stop on first failure, summary, pass^k) and assert_eval_passes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from eval_fixtures import agent

from adk_core import LlmRequest
from adk_core.errors import ConfigurationError
from adk_core.eval import (
    EvalCase,
    TerminateWhen,
    UserAgents,
    assert_eval_passes,
    metric,
    run_eval,
    run_eval_suite,
    scripted_user,
)
from adk_core.models import text_response


class Gauge:
    """Counts how many system turns run at once."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0

    async def script(self, request: LlmRequest) -> Any:
        self.now += 1
        self.peak = max(self.peak, self.now)
        await asyncio.sleep(0.01)
        self.now -= 1
        return text_response("ok")


def _cases(gauge: Gauge, n: int, *, failing: set[int] = frozenset(), trials: int = 1) -> list[EvalCase]:  # type: ignore[assignment]
    return [
        EvalCase(f"case-{i}", app_or_agent=agent(gauge.script), first_message="x", trials=trials,
                 metrics=[metric("ok", lambda t, i=i: i not in failing)])
        for i in range(n)
    ]


async def test_cases_run_concurrently_within_the_bound_and_report_in_order() -> None:
    gauge = Gauge()
    result = await run_eval_suite(_cases(gauge, 6))
    assert gauge.peak == 6 and result.passed
    assert [r.name for r in result.results] == [f"case-{i}" for i in range(6)]
    bounded = Gauge()
    await run_eval_suite(_cases(bounded, 6), max_concurrency=2)
    assert bounded.peak == 2
    sequential = Gauge()
    await run_eval_suite(_cases(sequential, 3), parallel=False)
    assert sequential.peak == 1


async def test_summary_counts_every_status_and_pass_hat_k() -> None:
    gauge = Gauge()
    cases = _cases(gauge, 3, failing={1}, trials=2)
    stuck = EvalCase("stuck", app_or_agent=agent(lambda r: text_response("again?")), first_message="x",
                     user_agents=UserAgents(loop=scripted_user("human", lambda p, t: "more")),
                     terminate_when=TerminateWhen(max_turns=2))
    broken = EvalCase("broken", app_or_agent=agent(lambda r: 1 / 0), first_message="x")
    result = await run_eval_suite([*cases, stuck, broken])
    s = result.summary
    assert (s.total, s.passed, s.failed, s.errors, s.terminated, s.skipped) == (5, 2, 1, 1, 1, 0)
    assert s.k == 1 and s.pass_hat_k == pytest.approx(2 / 5)
    assert result.pass_hat(1) == pytest.approx(2 / 5)
    assert not result.passed


async def test_stop_on_first_failure_starts_no_further_case() -> None:
    gauge = Gauge()
    result = await run_eval_suite(_cases(gauge, 5, failing={1}), parallel=False, stop_on_first_failure=True)
    assert [r.name for r in result.results] == ["case-0", "case-1"]
    assert result.summary.skipped == 3 and result.summary.total == 5 and not result.passed


async def test_suites_refuse_duplicate_names_and_bad_bounds() -> None:
    gauge = Gauge()
    with pytest.raises(ConfigurationError, match="unique"):
        await run_eval_suite([*_cases(gauge, 1), *_cases(gauge, 1)])
    with pytest.raises(ConfigurationError):
        await run_eval_suite(_cases(gauge, 1), max_concurrency=0)


async def test_assert_eval_passes_returns_results_and_reports_failures() -> None:
    gauge = Gauge()
    passing, failing = _cases(gauge, 2, failing={1})
    assert (await assert_eval_passes(passing)).passed  # type: ignore[union-attr]
    with pytest.raises(AssertionError) as info:
        await assert_eval_passes(failing)
    assert "eval case 'case-1': failed after 1 turn(s)" in str(info.value) and "metric 'ok' failed" in str(info.value)
    with pytest.raises(AssertionError) as suite_info:
        await assert_eval_passes([passing, failing], max_concurrency=1)
    assert str(suite_info.value).startswith("eval suite: 1/2 passed")
    already = await run_eval(passing)
    assert await assert_eval_passes(already) is already
