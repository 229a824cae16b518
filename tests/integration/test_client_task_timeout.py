"""A conversation whose workflow task keeps timing out (an overloaded worker) is reported as busy,
not as a workflow that cannot make progress (issue 21: a burst of new conversations)."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import timedelta

import pytest
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionRequest, PollWorkflowTaskQueueRequest

from adk_temporal.workflows import SessionWorkflow, SessionWorkflowInput, session_workflow_id
from adkt.client import AdkClient, WorkersBusyError, WorkflowTaskFailedError
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration

POLL_SECONDS = 20.0
"""Bound on each wait for the stalled poller's next task, and for the next attempt to be scheduled."""


async def _stall_workflow_tasks(stack: DurableStack, task_queue: str, workflow_id: str, attempts: int) -> None:
    """Take the workflow's first ``attempts`` workflow tasks as a worker that never answers, and
    wait until Temporal schedules the next attempt (retries after a timeout are not in the history;
    the pending task's attempt number says where it is)."""
    temporal = stack.client.client
    request = PollWorkflowTaskQueueRequest(
        namespace=temporal.namespace, task_queue=TaskQueue(name=task_queue), identity="stalled-worker"
    )
    for attempt in range(1, attempts + 1):
        task = await asyncio.wait_for(temporal.workflow_service.poll_workflow_task_queue(request), POLL_SECONDS)
        assert (task.workflow_execution.workflow_id, task.attempt) == (workflow_id, attempt)
    describe = DescribeWorkflowExecutionRequest(
        namespace=temporal.namespace, execution=WorkflowExecution(workflow_id=workflow_id)
    )
    deadline = time.monotonic() + POLL_SECONDS
    while time.monotonic() < deadline:
        pending = (await temporal.workflow_service.describe_workflow_execution(describe)).pending_workflow_task
        if pending.attempt > attempts:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"workflow task attempt {attempts + 1} was not scheduled within {POLL_SECONDS} s")


async def test_a_workflow_task_that_keeps_timing_out_is_reported_as_busy_workers(durable_stack: DurableStack) -> None:
    # A queue no real worker polls: this test plays a worker too busy to finish its tasks in time.
    queue = f"stalled-{uuid.uuid4().hex[:8]}"
    app, user, session = "busy_app", "u1", f"s-{uuid.uuid4().hex[:6]}"
    workflow_id = session_workflow_id(app, user, session)
    temporal = durable_stack.client.client
    await temporal.start_workflow(
        SessionWorkflow.run, SessionWorkflowInput(app_name=app, user_id=user, session_id=session),
        id=workflow_id, task_queue=queue, task_timeout=timedelta(seconds=1),
    )
    try:
        # Temporal refuses updates ("Workflow Task in failed state") from the third attempt on.
        await _stall_workflow_tasks(durable_stack, queue, workflow_id, attempts=2)
        client = AdkClient(temporal, task_queue=queue, retry_seconds=1.0, search_attributes=False)
        with pytest.raises(WorkersBusyError, match="kept timing out") as raised:
            await asyncio.wait_for(client.send(app, user, session, "hello"), 30)
        assert not isinstance(raised.value, WorkflowTaskFailedError)
        assert "cannot make progress" not in str(raised.value)
    finally:
        await temporal.get_workflow_handle(workflow_id).terminate("test done")
