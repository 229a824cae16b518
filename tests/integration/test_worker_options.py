"""Worker options: the caller's workflow runner choice survives the ADK plugin."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporalio.worker import UnsandboxedWorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from adk_core import App
from adk_temporal.worker import build_worker
from adk_temporal.workflows.plugin import _runner_with_passthrough
from adk_temporal.workflows.sandbox import PASSTHROUGH
from adkt.client import AdkClient
from examples.w1 import USER_MESSAGE, build_agent, check_turn
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration


def test_plugin_adds_passthrough_to_a_sandbox_and_keeps_an_unsandboxed_runner() -> None:
    configure = _runner_with_passthrough(["my_app"])
    sandboxed = configure(SandboxedWorkflowRunner())
    assert isinstance(sandboxed, SandboxedWorkflowRunner)
    assert {"my_app", *PASSTHROUGH} <= sandboxed.restrictions.passthrough_modules
    unsandboxed = UnsandboxedWorkflowRunner()
    assert configure(unsandboxed) is unsandboxed


async def test_unsandboxed_worker_runs_w1(durable_stack: DurableStack) -> None:
    from adkt.client import connect

    client = await connect(durable_stack.address)
    task_queue = f"unsandboxed-{uuid.uuid4().hex[:8]}"
    app = App(name=f"w1_unsandboxed_{uuid.uuid4().hex[:6]}", root_agent=build_agent())
    worker = build_worker(
        client, [app], task_queue=task_queue, session_service=durable_stack.sessions,
        workflow_runner=UnsandboxedWorkflowRunner(),
    )
    run = asyncio.create_task(worker.run())
    try:
        result = await AdkClient(client, task_queue=task_queue).send(app.name, "u1", "s1", USER_MESSAGE)
    finally:
        await worker.shutdown()
        await asyncio.gather(run, return_exceptions=True)
    check_turn(result.events)


async def test_build_worker_bounds_concurrent_workflow_tasks_unless_told_otherwise(durable_stack: DurableStack) -> None:
    from temporalio.worker import WorkerTuner

    from adk_temporal.worker import DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS
    from adkt.client import connect

    client = await connect(durable_stack.address)

    def options(**given: object) -> dict:
        # A queue each: the core allows one worker per queue in a process (none of them polls).
        built = build_worker(client, [], task_queue=f"options-{uuid.uuid4().hex[:8]}", session_service=durable_stack.sessions, **given)
        return dict(built.workers[0].config())

    assert options()["max_concurrent_workflow_tasks"] == DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS < 100
    assert options(max_concurrent_workflow_tasks=3)["max_concurrent_workflow_tasks"] == 3
    tuner = WorkerTuner.create_fixed(workflow_slots=7, activity_slots=7, local_activity_slots=7)
    with_tuner = options(tuner=tuner)  # temporalio refuses a tuner beside slot counts
    assert with_tuner["tuner"] is tuner and with_tuner.get("max_concurrent_workflow_tasks") is None


async def test_build_worker_polls_once_per_workflow_task_slot_unless_told_otherwise(durable_stack: DurableStack) -> None:
    from temporalio.worker import PollerBehaviorSimpleMaximum

    from adk_temporal.worker import DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS
    from adkt.client import connect

    client = await connect(durable_stack.address)

    def options(**given: object) -> dict:
        built = build_worker(client, [], task_queue=f"polls-{uuid.uuid4().hex[:8]}", session_service=durable_stack.sessions, **given)
        return dict(built.workers[0].config())

    # temporalio's default is at most 5 polls, which left a burst of new conversations' workflow tasks
    # waiting on the server (bench/bench_burst.py): ours keep one open per workflow task slot.
    default = options()
    polls = default["workflow_task_poller_behavior"]
    assert isinstance(polls, PollerBehaviorSimpleMaximum) and polls.maximum == DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS > 5
    # One of them on the shared queue, as temporalio's 5 at its 0.2: new conversations spread evenly.
    assert polls.maximum * default["nonsticky_to_sticky_poll_ratio"] == 1
    own = PollerBehaviorSimpleMaximum(maximum=3)
    assert options(workflow_task_poller_behavior=own)["workflow_task_poller_behavior"] is own
    assert options(max_concurrent_workflow_task_polls=4)["max_concurrent_workflow_task_polls"] == 4  # wins in temporalio
    assert options(nonsticky_to_sticky_poll_ratio=0.5)["nonsticky_to_sticky_poll_ratio"] == 0.5


async def test_a_worker_given_few_polls_still_takes_new_conversations(durable_stack: DurableStack) -> None:
    # build_worker's share of polls on the shared queue (0.1) of a worker's own 2 polls is less than
    # one: temporalio still keeps one there, or a new conversation would never reach this worker.
    from adkt.client import connect

    client = await connect(durable_stack.address)
    task_queue = f"few-polls-{uuid.uuid4().hex[:8]}"
    app = App(name=f"w1_few_polls_{uuid.uuid4().hex[:6]}", root_agent=build_agent())
    worker = build_worker(client, [app], task_queue=task_queue, session_service=durable_stack.sessions,
                          max_concurrent_workflow_task_polls=2)  # fmt: skip
    run = asyncio.create_task(worker.run())
    try:
        sends = [AdkClient(client, task_queue=task_queue).send(app.name, "u1", f"s{i}", USER_MESSAGE) for i in range(3)]
        results = await asyncio.wait_for(asyncio.gather(*sends), timeout=60)
    finally:
        await worker.shutdown()
        await asyncio.gather(run, return_exceptions=True)
    for result in results:
        check_turn(result.events)
