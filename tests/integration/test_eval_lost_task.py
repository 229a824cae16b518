"""A trial with local model calls (the default) whose workflow task is lost after it stored events:
Temporal runs the task again, the model answers otherwise, and the trial starts over in sessions of
its own, so the stored trace is the one the trial was scored on (workflows/_eval_host.py)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.worker import (
    ExecuteWorkflowInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from adk_core.eval.store import EvalResultStore
from adk_temporal.replay import replayer
from adk_temporal.worker import build_worker
from adk_temporal.workflows.eval import EvalSuiteInput, EvalSuiteRunResult, EvalSuiteWorkflow
from tests.integration.conftest import EVAL_SUITES, DurableStack
from tests.integration.test_eval_durable import model_calls_in

pytestmark = pytest.mark.integration

SUITE = "tests.integration.eval_lost_task_app"
LOST: set[str] = set()
"""Case workflows whose first workflow task this process has already lost."""


class _LoseFirstTrialTask(Interceptor):
    """Fails the first workflow task of each eval trial once its work is done (stored, recorded):
    what a worker dying just before Temporal records the task looks like to the next attempt."""

    def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput) -> type[WorkflowInboundInterceptor]:
        return _LoseFirstTask


class _LoseFirstTask(WorkflowInboundInterceptor):
    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        result = await super().execute_workflow(input)
        info = workflow.info()
        if info.workflow_type == "EvalCaseWorkflow" and info.workflow_id not in LOST:
            LOST.add(info.workflow_id)
            raise RuntimeError("the worker died before Temporal recorded this task")  # the task fails, runs again
        return result


@pytest.mark.parametrize(
    ("case_name", "authors", "model_calls"),
    [
        # One task: run again, it finds the lost run's events when it loads the session, before any model call.
        ("changing-answers", ["user", "oracle"], 1),
        # The task after the tool is lost: run again, the model answers otherwise and storing that answer
        # meets the lost run's (StoredByLostTask from the commit); the trial then starts over.
        ("changing-answers-after-a-tool", ["user", "oracle", "oracle", "oracle"], 1 + 1 + 2),
    ],
)
async def test_a_trial_whose_task_was_lost_after_storing_starts_over_in_new_sessions(
    durable_stack: DurableStack, case_name: str, authors: list[str], model_calls: int,
) -> None:
    queue = f"lost-{uuid.uuid4().hex[:8]}"
    client = durable_stack.client.client
    worker = build_worker(
        client, [], task_queue=queue, eval_suites=EVAL_SUITES, serve_eval_suites=False,
        session_service=durable_stack.sessions, memory_service=durable_stack.memory,
        interceptors=[_LoseFirstTrialTask()],
    )
    run = asyncio.create_task(worker.run())
    try:
        run_id = f"t-{uuid.uuid4().hex[:8]}"
        result = await asyncio.wait_for(client.execute_workflow(
            EvalSuiteWorkflow.run, EvalSuiteInput(suite=SUITE, run_id=run_id, cases=[case_name]), id=f"adk-eval/{run_id}",
            task_queue=queue, result_type=EvalSuiteRunResult,
        ), timeout=60)  # fmt: skip
    finally:
        await asyncio.wait_for(worker.shutdown(), timeout=60)
        await asyncio.wait_for(asyncio.gather(run, return_exceptions=True), timeout=10)

    ((trial,),) = [case.all_trials() for case in result.results]
    assert trial.status == "passed", trial.error
    ref = trial.session
    assert ref is not None and ref.session_id == f"{run_id}/0r1/main", ref  # started over, in sessions of its own
    app = f"eval:{case_name}"
    lost = await durable_stack.sessions.get_session(app_name=f"{app}@{run_id}/0", user_id=ref.user_id,
                                                    session_id=f"{run_id}/0/main")  # fmt: skip
    kept = await durable_stack.sessions.get_session(app_name=ref.app_name, user_id=ref.user_id, session_id=ref.session_id)
    assert lost is not None and kept is not None
    lost_answer, kept_answer = lost.events[-1].text, kept.events[-1].text
    assert [e.author for e in kept.events] == authors
    # The lost run's answer stays where it was stored; the trial was scored on the answer kept.
    assert lost_answer and kept_answer and lost_answer != kept_answer
    assert int(kept_answer.split()[1]) > int(lost_answer.split()[1])

    store = EvalResultStore(durable_stack.database_url)
    try:
        detail = await store.get_run(run_id)
    finally:
        await store.close()
    assert detail is not None
    (recorded,) = detail.trials
    assert (recorded.status, recorded.session) == ("passed", ref)  # the record names the sessions kept

    history = await client.get_workflow_handle(f"adk-eval/{run_id}/case/{case_name}/0").fetch_history()
    failed = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED]
    assert len(failed) == 1
    activities, local = model_calls_in(history)
    assert (activities, local) == (0, model_calls)
    replayed = await replayer([]).replay_workflow(history, raise_on_replay_failure=True)
    assert replayed.replay_failure is None
