"""adk_core.eval.store on Postgres: every write is an upsert (activities retry), reads give back what
was written, and a trial recorded before its run still lands."""

from __future__ import annotations

import uuid

import pytest

from adk_core.eval import EvalError, EvalSummary, MetricResult, SessionRef, TokenUsage
from adk_core.eval.store import CaseRecord, EvalResultStore, RunRecord, TrialRecord
from adk_core.sql import migrate

pytestmark = pytest.mark.integration


async def test_runs_trials_and_cases_round_trip_and_rewrites_are_harmless(database_url: str) -> None:
    await migrate(database_url)
    store = EvalResultStore(database_url)
    run_id, early = f"r-{uuid.uuid4().hex[:6]}", f"r-{uuid.uuid4().hex[:6]}"
    trial = TrialRecord(
        case_name="c", trial=1, status="error", turns=2, duration_ms=12.5, termination_reason="max_turns",
        metrics={"m": MetricResult(False, score=0.25, value={"odd": object()}, evidence=["why"])},
        error=EvalError(phase="user_agent", message="no answer", error_type="EvalUserAgentError"),
        token_usage=TokenUsage(input=10, output=4), session=SessionRef(app_name="a", user_id="u", session_id="s"),
    )
    try:
        await store.start_run(RunRecord(run_id=run_id, suite="m:cases", mode="durable", config={"trials": 2}, start_time=100.0))
        for _ in range(2):  # a retried activity writes the same row again
            await store.record_trial(run_id, trial)
        summary = EvalSummary(total=1, errors=1, pass_hat_k=0.0, k=2)
        case = CaseRecord(case_name="c", status="error", trials=2, passed_trials=1, pass_hat_k=0.0, duration_ms=20.0)
        for _ in range(2):
            await store.finish_run(run_id, status="failed", summary=summary, cases=[case], end_time=105.0)
        await store.record_trial(early, trial)  # no start_run: a bare run row
        await store.start_run(RunRecord(run_id=early, suite="m:other", mode="in_process", start_time=200.0))

        detail = await store.get_run(run_id)
        assert detail is not None
        assert (detail.run.status, detail.run.summary, detail.run.end_time, detail.run.config) == ("failed", summary, 105.0, {"trials": 2})
        assert detail.cases == [case]
        (stored,) = detail.trials
        assert stored.model_dump(exclude={"metrics"}) == trial.model_dump(exclude={"metrics"})
        assert stored.metrics["m"].value["odd"].startswith("<object object")  # not JSON: kept as its repr
        assert (await store.get_run(early)).run.suite == "m:other"  # type: ignore[union-attr]
        assert await store.get_run("nope") is None
        listed = [r.run_id for r in await store.list_runs(limit=100)]
        assert listed.index(early) < listed.index(run_id)  # newest first
    finally:
        await store.close()


async def test_finishing_a_run_stores_each_case_as_given_and_a_second_finish_replaces_them(database_url: str) -> None:
    await migrate(database_url)
    store = EvalResultStore(database_url)
    run_id = f"r-{uuid.uuid4().hex[:6]}"
    cases = [
        CaseRecord(case_name=f"c{i}", status="passed" if i % 2 else "failed", trials=i + 1, passed_trials=i,
                   pass_hat_k=None if i == 0 else i / 10, duration_ms=float(i),
                   token_usage=TokenUsage(input=i, output=2 * i) if i % 3 else None)
        for i in range(25)
    ]  # fmt: skip
    try:
        await store.start_run(RunRecord(run_id=run_id, suite="m:cases", mode="durable", start_time=1.0))
        summary = EvalSummary(total=25, passed=12, failed=13)
        await store.finish_run(run_id, status="failed", summary=summary, cases=cases[:20], end_time=2.0)
        changed = [c.model_copy(update={"status": "error", "duration_ms": 99.0}) for c in cases[10:]]
        await store.finish_run(run_id, status="failed", summary=summary, cases=changed, end_time=3.0)
        detail = await store.get_run(run_id)
        assert detail is not None
        assert sorted(detail.cases, key=lambda c: int(c.case_name[1:])) == cases[:10] + changed
        assert detail.run.end_time == 3.0
        await store.finish_run(run_id, status="failed", summary=summary, cases=[], end_time=4.0)  # no cases: the run only
        assert (await store.get_run(run_id)).run.end_time == 4.0  # type: ignore[union-attr]
    finally:
        await store.close()
