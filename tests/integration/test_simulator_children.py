"""Targeted agents that run as child workflows (an AgentTool's agent, ParallelAgent branches) are
answered too: the request records the child workflow, which takes the `submit_decision` Update."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from adk_core import AgentExecution, App, LlmAgent, LlmRequest, ParallelAgent, ScriptedModel
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_core.simulator import SessionView, SimulatorPlugin, SimulatorService
from adk_core.simulator.sql import SqlSimulatorStore
from adk_core.tools import AgentTool
from adk_temporal.workflows import session_workflow_id
from adkt.web.deliver import temporal_deliver
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration


def _unused(request: LlmRequest) -> Any:
    raise AssertionError("the simulator should have answered")


async def wait_for_request(service: SimulatorService, wanted: Callable[[SessionView], bool],
                           timeout: float = 30.0) -> SessionView:
    """The first session view whose head ``wanted`` accepts; woken by the store's NOTIFYs."""

    async def find() -> SessionView | None:
        for summary in await service.list_sessions():
            if summary.pending_count:
                view = await service.view(summary.session.id)
                if view.head is not None and wanted(view):
                    return view
        return None

    async with service.store.changes() as changes:
        async with asyncio.timeout(timeout):
            while (view := await find()) is None:
                await anext(changes)
    return view


async def test_an_agent_tool_child_workflow_waits_for_a_person(durable_stack: DurableStack) -> None:
    helper = LlmAgent(name="helper", description="Helps.", model=ScriptedModel(_unused),
                     execution=AgentExecution(child_workflow=True))

    def caller_script(request: LlmRequest) -> Any:
        done = tool_responses_this_turn(request)
        return text_response(f"caller got {done[0]['result']}") if done else function_call_response(
            "helper", {"request": "the report"})

    caller = LlmAgent(name="caller", model=ScriptedModel(caller_script), tools=[AgentTool(helper)])
    app = durable_stack.register(App(name=f"simtool_{uuid.uuid4().hex[:6]}", root_agent=caller,
                           plugins=[SimulatorPlugin(["helper"])]))
    parent = session_workflow_id(app.name, "u", "s1")
    store = SqlSimulatorStore(durable_stack.database_url)
    web = SimulatorService(store, deliver=temporal_deliver(durable_stack.client.client))
    try:
        run = asyncio.create_task(durable_stack.client.send(app.name, "u", "s1", "please"))
        view = await wait_for_request(web, lambda v: v.head.reply_to.workflow_id.startswith(f"{parent}/tool/"))
        assert view.head.agent_name == "helper"
        child = durable_stack.client.client.get_workflow_handle(view.head.reply_to.workflow_id)
        assert (await child.describe()).workflow_type == "AgentToolWorkflow"
        await web.submit_decision(view.session.id, view.head.turn_id, {"text": "helped by a person"})
        result = await asyncio.wait_for(run, 30)
        assert result.final_text == "caller got helped by a person"
        answered = await web.view(view.session.id)
        assert answered.head is None and answered.timeline[0].response is not None
    finally:
        await store.close()


async def test_parallel_branch_child_workflows_wait_for_a_person(durable_stack: DurableStack) -> None:
    branches = [LlmAgent(name=name, model=ScriptedModel(_unused), execution=AgentExecution(child_workflow=True))
                for name in ("left", "right")]
    app = durable_stack.register(App(name=f"simfan_{uuid.uuid4().hex[:6]}",
                           root_agent=ParallelAgent(name="fan", sub_agents=branches), plugins=[SimulatorPlugin()]))
    parent = session_workflow_id(app.name, "u", "s1")
    store = SqlSimulatorStore(durable_stack.database_url)
    web = SimulatorService(store, deliver=temporal_deliver(durable_stack.client.client))
    try:
        run = asyncio.create_task(durable_stack.client.send(app.name, "u", "s1", "question"))
        answered: list[str] = []
        for _ in branches:
            view = await wait_for_request(
                web, lambda v: v.session.adk_session_id == "s1" and v.head.reply_to.workflow_id.startswith(f"{parent}/branch/")
                and v.head.agent_name not in answered)
            assert view.head.reply_to.workflow_id.endswith(f"/{view.head.agent_name}")
            await web.submit_decision(view.session.id, view.head.turn_id, {"text": f"{view.head.agent_name} by a person"})
            answered.append(view.head.agent_name)
        result = await asyncio.wait_for(run, 30)
        said = sorted((e.author, e.content.text) for e in result.events if e.content and e.author != "user")
        assert said == [("left", "left by a person"), ("right", "right by a person")]
    finally:
        await store.close()
