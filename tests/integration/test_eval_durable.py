"""EvalSuiteWorkflow / EvalCaseWorkflow on the real dev server and Postgres: the chest-pain example
gives the in-process result, trials do not share app: state, a suite starts from the temporal CLI
with plain JSON, and a suite that cannot be imported fails with the reason."""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError

from adk_core.eval import run_eval, run_eval_suite
from adk_core.eval.store import EvalResultStore
from adk_core.types import Event
from adk_temporal.replay import replayer
from adk_temporal.workflows.eval import (
    EvalCaseInput,
    EvalCaseWorkflow,
    EvalSuiteInput,
    EvalSuiteRunResult,
    EvalSuiteWorkflow,
)
from adkt.embedded import TemporalDevServer
from adkt.embedded.temporal import temporal_binary
from examples.eval_chest_pain import chest_pain_case
from tests.integration.conftest import DurableStack
from tests.integration.eval_apps import imported, refused

pytestmark = pytest.mark.integration


async def _run_suite(stack: DurableStack, **fields: Any) -> EvalSuiteRunResult:
    run_id = fields.setdefault("run_id", f"t-{uuid.uuid4().hex[:8]}")
    return await stack.client.client.execute_workflow(
        EvalSuiteWorkflow.run, EvalSuiteInput(**fields), id=f"adk-eval/{run_id}", task_queue=stack.task_queue,
        result_type=EvalSuiteRunResult,
    )


def _shape(events: list[Event]) -> list[tuple]:
    """What a trace says, without ids and times."""
    return [
        (e.author, e.text, [(c.name, c.args) for c in e.function_calls()],
         [(r.name, r.response) for r in e.function_responses()], e.actions.state_delta)
        for e in events
    ]


async def test_the_chest_pain_case_passes_durably_as_in_process(durable_stack: DurableStack) -> None:
    local = await run_eval(chest_pain_case)
    suite = await _run_suite(durable_stack, suite="examples.eval_chest_pain:chest_pain_case")
    (durable,) = suite.results
    assert durable.status == local.status == "passed"
    assert (durable.turns, durable.termination_reason, durable.token_usage) == (local.turns, local.termination_reason,
                                                                                 local.token_usage)  # fmt: skip
    assert {k: m.model_dump() for k, m in durable.metrics.items()} == {k: m.model_dump() for k, m in local.metrics.items()}
    assert durable.events == []  # the trace stays in the session store, out of workflow history

    ref = durable.session
    assert ref is not None and ref.app_name == f"eval:chest-pain-escalation@{suite.run_id}/0"
    stored = await durable_stack.sessions.get_session(app_name=ref.app_name, user_id=ref.user_id, session_id=ref.session_id)
    assert stored is not None
    assert _shape(stored.events) == _shape(list(local.events))
    assert stored.state["escalation"]["urgency_level"] == "emergency_999"
    assert stored.state["patient:revealed_conditions"] == {"radiating_pain": True}
    users = await durable_stack.sessions.get_session(
        app_name=f"eval:chest-pain-escalation:users@{suite.run_id}/0", user_id=ref.user_id,
        session_id=f"{suite.run_id}/0/users",
    )
    assert users is not None and {e.author for e in users.events} >= {"patient_answer"}

    store = EvalResultStore(durable_stack.database_url)
    try:
        detail = await store.get_run(suite.run_id)
    finally:
        await store.close()
    assert detail is not None and detail.run.status == "passed" and detail.run.suite == "examples.eval_chest_pain:chest_pain_case"
    (trial,) = detail.trials
    assert (trial.status, trial.turns, trial.termination_reason, trial.session) == ("passed", 3, "state_matches", ref)
    assert trial.metrics == durable.metrics
    assert [(c.case_name, c.status, c.trials, c.pass_hat_k) for c in detail.cases] == [("chest-pain-escalation", "passed", 1, 1.0)]

    # The mocked tool ran as a local activity (a marker, no server task); the passed-through ones as activities.
    history = await durable_stack.client.client.get_workflow_handle(
        f"adk-eval/{suite.run_id}/case/chest-pain-escalation/0").fetch_history()
    activity_tools, local_tools = _tools_run(history)
    assert "read" not in activity_tools and activity_tools, activity_tools
    assert local_tools, "the mocked read ran as a local activity"
    model_activities, model_locals = model_calls_in(history)
    assert model_activities == 0 and model_locals >= 3, "a suite's model calls are local activities by default"
    replayed = await replayer([]).replay_workflow(history, raise_on_replay_failure=True)
    assert replayed.replay_failure is None


def model_calls_in(history: Any) -> tuple[int, int]:
    """A case history's model calls: as activities, and as local activities (markers)."""
    activities = markers = 0
    for e in history.events:
        if e.HasField("activity_task_scheduled_event_attributes"):
            activities += e.activity_task_scheduled_event_attributes.activity_type.name == "adk.generate_content"
        elif e.marker_recorded_event_attributes.marker_name == "core_local_activity":
            marker = json.loads(e.marker_recorded_event_attributes.details["data"].payloads[0].data)
            markers += marker["activity_type"] == "adk.generate_content"
    return activities, markers


def _tools_run(history: Any) -> tuple[list[str], int]:
    """The tools a case workflow's history ran as activities (by name), and its local tool calls."""
    activity_tools, local_tools = [], 0
    for e in history.events:
        if e.HasField("activity_task_scheduled_event_attributes"):
            attrs = e.activity_task_scheduled_event_attributes
            if attrs.activity_type.name == "adk.run_tool":
                activity_tools.append(json.loads(attrs.input.payloads[0].data)["tool_name"])
        elif e.marker_recorded_event_attributes.marker_name == "core_local_activity":
            marker = json.loads(e.marker_recorded_event_attributes.details["data"].payloads[0].data)
            local_tools += marker["activity_type"] == "adk.run_tool"
    return activity_tools, local_tools


async def test_a_case_workflow_started_on_its_own_runs_mocks_locally_too(durable_stack: DurableStack) -> None:
    run_id = f"t-{uuid.uuid4().hex[:8]}"
    handle = await durable_stack.client.client.start_workflow(
        EvalCaseWorkflow.run,
        EvalCaseInput(suite="examples.eval_chest_pain:chest_pain_case", case_name="chest-pain-escalation",
                      run_id=run_id, record=False),  # no mocks_local: a workflow patch decides
        id=f"adk-eval/{run_id}/case/chest-pain-escalation/0", task_queue=durable_stack.task_queue,
    )  # fmt: skip
    assert (await handle.result()).status == "passed"
    history = await handle.fetch_history()
    activity_tools, local_tools = _tools_run(history)
    assert "read" not in activity_tools and local_tools
    model_activities, model_locals = model_calls_in(history)
    assert model_activities >= 3 and model_locals == 0, "without a suite saying otherwise, model calls are activities"


async def test_a_suite_with_model_calls_as_activities_runs_each_as_one(durable_stack: DurableStack) -> None:
    suite = await _run_suite(durable_stack, suite="examples.eval_chest_pain:chest_pain_case", model_calls="activity")
    assert [r.status for r in suite.results] == ["passed"]
    history = await durable_stack.client.client.get_workflow_handle(
        f"adk-eval/{suite.run_id}/case/chest-pain-escalation/0").fetch_history()
    model_activities, model_locals = model_calls_in(history)
    assert model_activities >= 3 and model_locals == 0
    replayed = await replayer([]).replay_workflow(history, raise_on_replay_failure=True)
    assert replayed.replay_failure is None


async def test_trials_run_in_their_own_sessions_and_app_state(durable_stack: DurableStack) -> None:
    suite = await _run_suite(durable_stack, suite="tests.integration.eval_apps:app_state_case", trials=3)
    (result,) = suite.results
    # Each trial's tool saw app:count start at 0: app state is per trial, not per case.
    assert [t.status for t in result.trials] == ["passed"] * 3, [t.metrics for t in result.trials]
    assert len({t.session.app_name for t in result.trials if t.session}) == 3
    assert suite.summary.pass_hat_k == 1.0 and suite.summary.k == 3


async def test_a_suite_starts_from_the_temporal_cli_with_plain_json(
    durable_stack: DurableStack, temporal_server: TemporalDevServer
) -> None:
    run_id = f"cli-{uuid.uuid4().hex[:8]}"
    payload = {"suite": "tests.integration.eval_apps:good", "max_concurrency": 1}
    started = await asyncio.to_thread(subprocess.run, [
        temporal_binary(), "workflow", "start", "--address", temporal_server.address,
        "--namespace", temporal_server.namespace, "--task-queue", durable_stack.task_queue,
        "--type", "EvalSuiteWorkflow", "--workflow-id", f"adk-eval/{run_id}", "--input", json.dumps(payload),
    ], capture_output=True, text=True, timeout=30)  # fmt: skip
    assert started.returncode == 0, started.stderr
    handle = durable_stack.client.client.get_workflow_handle(f"adk-eval/{run_id}", result_type=EvalSuiteRunResult)
    result = await handle.result()
    assert result.run_id == run_id  # from the workflow id
    assert [(r.name, r.status) for r in result.results] == [("greets", "passed"), ("sums", "passed")]
    progress = await handle.query(EvalSuiteWorkflow.progress)
    assert (progress.total, progress.done, progress.passed, progress.running) == (2, 2, 2, [])


async def test_a_suite_that_cannot_be_imported_fails_with_the_reason(durable_stack: DurableStack) -> None:
    with pytest.raises(WorkflowFailureError) as failure:
        await _run_suite(durable_stack, suite="tests.integration.no_such_module:cases")
    assert "cannot import eval cases 'tests.integration.no_such_module:cases'" in str(failure.value.cause.cause)


async def test_stop_on_first_failure_skips_the_rest(durable_stack: DurableStack) -> None:
    suite = await _run_suite(durable_stack, suite="tests.integration.eval_apps:stops", max_concurrency=1,
                             stop_on_first_failure=True)  # fmt: skip
    assert [(r.name, r.status) for r in suite.results] == [("stop-greets", "failed")]
    assert suite.summary.skipped == 1 and not suite.passed


async def test_an_imported_google_adk_set_with_judged_criteria_scores_durably_as_in_process(durable_stack: DurableStack) -> None:
    local = await run_eval_suite(imported)
    run_id = f"t-{uuid.uuid4().hex[:8]}"
    handle = await durable_stack.client.client.start_workflow(
        EvalSuiteWorkflow.run, EvalSuiteInput(suite="tests.integration.eval_apps:imported", run_id=run_id),
        id=f"adk-eval/{run_id}", task_queue=durable_stack.task_queue, result_type=EvalSuiteRunResult,
    )
    suite = await handle.result()
    progress = await handle.query(EvalSuiteWorkflow.progress)
    assert (progress.done, progress.passed, progress.not_evaluated) == (3, 2, 1)
    assert [(r.name, r.status) for r in suite.results] == [(r.name, r.status) for r in local.results] == [
        ("weather_set/paris_then_rome", "passed"), ("weather_set/greeting", "passed"),
        ("weather_set/planned_trip", "not_evaluated"),
    ]
    for durable, in_process in zip(suite.results, local.results, strict=True):
        assert {k: m.model_dump() for k, m in durable.metrics.items()} == {k: m.model_dump() for k, m in in_process.metrics.items()}
    assert suite.results[0].metrics["final_response_match_v2"].value == [1.0, 1.0]
    assert suite.summary.not_evaluated == 1 and not suite.passed


@pytest.mark.parametrize("model_calls", ["local_activity", "activity"])
async def test_a_model_error_reaches_on_model_error_as_in_process(durable_stack: DurableStack, model_calls: str) -> None:
    (local,) = (await run_eval_suite(refused)).results
    suite = await _run_suite(durable_stack, suite="tests.integration.eval_apps:refused", model_calls=model_calls)
    (durable,) = suite.results
    assert local.status == durable.status == "passed", durable.error  # the callback saw the ModelError, status 400
