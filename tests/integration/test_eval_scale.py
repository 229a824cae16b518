"""Eval suites at scale on the real dev server and Postgres (issue 19, item 7): a suite continues as
new several times and completes with every result (200 cases by default, 1,000 with ``-m scale``); a cancelled suite is recorded
``cancelled`` and a resume runs only the trials the store does not hold."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import CancelledError
from typer.testing import CliRunner, Result

from adk_core.eval.store import EvalResultStore
from adk_temporal.workflows.eval import EvalSuiteInput, EvalSuiteRunResult, EvalSuiteWorkflow
from adkt.main import app as cli
from tests.integration import eval_scale_apps
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration

APPS = "tests.integration.eval_scale_apps"


async def _detail(stack: DurableStack, run_id: str):  # noqa: ANN202
    store = EvalResultStore(stack.database_url)
    try:
        return await store.get_run(run_id)
    finally:
        await store.close()


async def _suite_continues_as_new(stack: DurableStack, cases: int, budget: int, min_hops: int, timeout: float) -> None:
    """The first ``cases`` of the scale suite, 25 at a time, with a history budget of ``budget``
    events per run (about 6 events a trial): it continues as new at least ``min_hops`` times, each
    run stays near its budget, and every result comes back in order and is stored."""
    run_id = f"scale-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    names = [f"n{i:04d}" for i in range(cases)]
    handle = await stack.client.client.start_workflow(
        EvalSuiteWorkflow.run,
        EvalSuiteInput(suite=f"{APPS}:thousand", run_id=run_id, cases=names, max_concurrency=25,
                       max_history_events=budget),  # fmt: skip
        id=f"adk-eval/{run_id}", task_queue=stack.task_queue, result_type=EvalSuiteRunResult,
    )
    result = await asyncio.wait_for(handle.result(), timeout=timeout)
    elapsed = time.monotonic() - started
    print(f"{cases} cases in {elapsed:.1f} s, {result.continued_as_new} continue-as-new hops")

    assert (result.summary.total, result.summary.passed) == (cases, cases)
    assert result.continued_as_new >= min_hops
    assert [r.name for r in result.results] == names
    assert all(r.status == "passed" for r in result.results)
    # Every run of the chain stayed near its budget: the carry holds no results.
    runs = [r async for r in stack.client.client.list_workflows(f"WorkflowId = 'adk-eval/{run_id}'")]
    assert len(runs) == result.continued_as_new + 1
    assert max(r.history_length for r in runs) < budget + 6 * 25 + 50
    first = stack.client.client.get_workflow_handle(f"adk-eval/{run_id}", run_id=runs[-1].run_id)
    history = await first.fetch_history()
    started_event = history.events[0].workflow_execution_started_event_attributes
    assert len(started_event.input.payloads[0].data) < 2_000 + 8 * cases  # the first run's input: no carry
    assert history.events[-1].event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW

    detail = await _detail(stack, run_id)
    assert detail is not None and detail.run.status == "passed"
    assert len(detail.trials) == cases and len(detail.cases) == cases
    assert detail.run.summary is not None and detail.run.summary.passed == cases


async def test_a_suite_continues_as_new_several_times_and_completes(durable_stack: DurableStack) -> None:
    # 200 cases with a 300-event budget: the same chain of runs as 1,000 with 1,500, in a fifth of the time.
    await _suite_continues_as_new(durable_stack, cases=200, budget=300, min_hops=2, timeout=240)


@pytest.mark.scale
async def test_a_thousand_case_suite_continues_as_new_and_completes(durable_stack: DurableStack) -> None:
    # The full size (pytest -m scale): minutes on 2 cores, so out of the default run.
    await _suite_continues_as_new(durable_stack, cases=1000, budget=1500, min_hops=3, timeout=540)


async def _progress_done(handle, at_least: int, timeout: float = 20.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        progress = await handle.query(EvalSuiteWorkflow.progress)
        if progress.done >= at_least:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the suite did not finish {at_least} trials in {timeout} s")


async def test_a_cancelled_suite_resumes_without_rerunning_finished_trials(durable_stack: DurableStack) -> None:
    run_id = f"resume-{uuid.uuid4().hex[:8]}"
    client = durable_stack.client.client
    first_input = EvalSuiteInput(suite=f"{APPS}:slow", run_id=run_id, max_concurrency=1)
    handle = await client.start_workflow(EvalSuiteWorkflow.run, first_input, id=f"adk-eval/{run_id}",
                                         task_queue=durable_stack.task_queue, result_type=EvalSuiteRunResult)  # fmt: skip
    await _progress_done(handle, 1)
    await handle.cancel()
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), timeout=30)
    assert isinstance(failed.value.cause, CancelledError)

    cancelled = await _detail(durable_stack, run_id)
    assert cancelled is not None and cancelled.run.status == "cancelled"
    finished = {(t.case_name, t.trial) for t in cancelled.trials}
    assert 1 <= len(finished) < 4
    assert cancelled.run.summary is not None and cancelled.run.summary.skipped == 4 - len(finished)

    calls_before = len(eval_scale_apps.slow_calls)
    resumed_input = EvalSuiteInput.resume_of(cancelled.run)
    assert (resumed_input.resume, resumed_input.max_concurrency, resumed_input.suite) == (1, 1, first_input.suite)
    resumed = await client.execute_workflow(EvalSuiteWorkflow.run, resumed_input, id=f"adk-eval/{run_id}",
                                            task_queue=durable_stack.task_queue, result_type=EvalSuiteRunResult)  # fmt: skip
    assert len(eval_scale_apps.slow_calls) - calls_before == 4 - len(finished)  # finished trials did not run again
    assert (resumed.summary.total, resumed.summary.passed) == (4, 4)
    detail = await _detail(durable_stack, run_id)
    assert detail is not None and detail.run.status == "passed" and len(detail.trials) == 4
    for trial in detail.trials:
        assert trial.session is not None
        again = (trial.case_name, trial.trial) not in finished
        # A trial run again has sessions of its own: the cancelled attempt's events stay apart.
        assert trial.session.session_id == f"{run_id}/0{'.1' if again else ''}/main"
    assert EvalSuiteInput.resume_of(detail.run).resume == 2


async def test_streaming_metrics_are_measured_in_a_durable_trial_and_stored(durable_stack: DurableStack) -> None:
    run_id = f"timed-{uuid.uuid4().hex[:8]}"
    result = await durable_stack.client.client.execute_workflow(
        EvalSuiteWorkflow.run, EvalSuiteInput(suite=f"{APPS}:timed", run_id=run_id),
        id=f"adk-eval/{run_id}", task_queue=durable_stack.task_queue, result_type=EvalSuiteRunResult,
    )
    (case,) = result.results
    measured = case.measurements
    tool = measured["tool_latency_ms"]["lookup"]
    # Workflow time: the mock's activity took TOOL_S, so the response event came at least that much later.
    assert tool["calls"] == 1 and tool["mean_ms"] >= eval_scale_apps.TOOL_S * 1000
    assert measured["time_to_first_response_ms"] >= tool["mean_ms"]
    assert measured["tokens"] == {"input": 1000, "output": 100, "model_calls": 1}
    assert measured["cost_usd"] == pytest.approx(1000 * 0.30 / 1e6 + 100 * 2.50 / 1e6)
    assert result.summary.measurements["cost_usd"] == measured["cost_usd"]

    detail = await _detail(durable_stack, run_id)
    assert detail is not None
    (trial,) = detail.trials
    assert trial.measurements == measured  # stored with the run, for the page and `adkt eval compare`
    assert detail.run.summary is not None and detail.run.summary.measurements == result.summary.measurements


async def _cli(*args: str, database_url: str) -> Result:
    # On a thread: the command runs its own event loop (asyncio.run), which must not be this one.
    env = {"COLUMNS": "200", "NO_COLOR": "1", "ADK_DATABASE_URL": database_url}
    return await asyncio.to_thread(CliRunner().invoke, cli, list(args), env=env)


async def test_adkt_eval_cancel_and_resume(durable_stack: DurableStack) -> None:
    run_id = f"cli-resume-{uuid.uuid4().hex[:8]}"
    address, db = ("--address", durable_stack.address), durable_stack.database_url
    handle = await durable_stack.client.client.start_workflow(
        EvalSuiteWorkflow.run, EvalSuiteInput(suite=f"{APPS}:slow", run_id=run_id, max_concurrency=1),
        id=f"adk-eval/{run_id}", task_queue=durable_stack.task_queue, result_type=EvalSuiteRunResult,
    )
    await _progress_done(handle, 1)
    early = await _cli("eval", "resume", run_id, *address, database_url=db)
    assert early.exit_code != 0 and "is still running; `adkt eval cancel" in early.output, early.output
    cancelled = await _cli("eval", "cancel", run_id, *address, database_url=db)
    assert cancelled.exit_code == 0 and f"adkt eval resume {run_id}" in cancelled.output, cancelled.output
    again = await _cli("eval", "cancel", run_id, *address, database_url=db)
    assert again.exit_code != 0 and "is not running (its workflow is canceled)" in again.output, again.output

    resumed = await _cli("eval", "resume", run_id, *address, database_url=db)  # on the queue the run used
    assert resumed.exit_code == 0, resumed.output
    assert "4 cases: 4 passed" in resumed.output
    finished = await _cli("eval", "resume", run_id, *address, database_url=db)
    assert finished.exit_code != 0 and "finished (passed); nothing to resume" in finished.output, finished.output
