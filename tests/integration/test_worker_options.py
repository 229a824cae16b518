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
