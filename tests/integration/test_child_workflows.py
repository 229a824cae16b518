"""Agent trees as workflow trees: ParallelAgent branches and AgentTool agents as child workflows."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from adk_core import AgentExecution, App, InMemoryRunner, LlmAgent, LlmRequest, ParallelAgent, ScriptedModel
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_core.tools import AgentTool
from adk_temporal.workflows import session_workflow_id
from tests.integration.conftest import DurableStack
from tests.scenarios import comparable

pytestmark = pytest.mark.integration


def _seen(name: str):
    def script(request: LlmRequest) -> Any:
        texts = [p.text for c in request.contents for p in c.parts if p.text]
        return text_response(f"{name} saw: {' | '.join(texts)}")

    return script


def _fan(child: bool) -> ParallelAgent:
    execution = AgentExecution(child_workflow=child)
    return ParallelAgent(
        name="fan",
        sub_agents=[
            LlmAgent(name="left", model=ScriptedModel(_seen("left")), execution=execution),
            LlmAgent(name="right", model=ScriptedModel(_seen("right")), execution=execution),
        ],
    )


async def test_parallel_branches_as_child_workflows(durable_stack: DurableStack) -> None:
    app = durable_stack.register(App(name=f"fan_{uuid.uuid4().hex[:6]}", root_agent=_fan(child=True)))
    result = await durable_stack.client.send(app.name, "u1", "s1", "question")
    local = await InMemoryRunner(_fan(child=False), app_name="local").run("question")
    by_author = lambda events: sorted(events, key=lambda e: e.author)  # noqa: E731
    assert comparable(by_author(result.events)) == comparable(by_author(local))
    assert {e.branch for e in result.events} == {"fan.left", "fan.right"}

    parent = session_workflow_id(app.name, "u1", "s1")
    client = durable_stack.client.client
    for name in ("left", "right"):
        child = client.get_workflow_handle(f"{parent}/branch/{result.invocation_id}/{name}")
        assert (await child.describe()).workflow_type == "AgentBranchWorkflow"
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u1", session_id="s1")
    assert stored is not None
    ids = [e.id for e in stored.events]
    assert len(ids) == len(set(ids)) == 3, "the user message and one answer per branch, each stored once"


def _caller(child: bool) -> LlmAgent:
    def helper_script(request: LlmRequest) -> Any:
        return text_response(f"helped with {request.contents[-1].parts[0].text}")

    helper = LlmAgent(
        name="helper", description="Helps.", model=ScriptedModel(helper_script),
        execution=AgentExecution(child_workflow=child),
    )

    def caller_script(request: LlmRequest) -> Any:
        done = tool_responses_this_turn(request)
        return text_response(f"caller got {done[0]['result']}") if done else function_call_response(
            "helper", {"request": "the report"}
        )

    return LlmAgent(name="caller", model=ScriptedModel(caller_script), tools=[AgentTool(helper)])


async def test_agent_tool_as_child_workflow(durable_stack: DurableStack) -> None:
    app = durable_stack.register(App(name=f"tool_{uuid.uuid4().hex[:6]}", root_agent=_caller(child=True)))
    result = await durable_stack.client.send(app.name, "u1", "s1", "please")
    local = await InMemoryRunner(_caller(child=False), app_name="local").run("please")
    assert comparable(result.events) == comparable(local)
    assert result.final_text == "caller got helped with the report"
    call_id = result.events[0].function_calls()[0].id
    parent = session_workflow_id(app.name, "u1", "s1")
    child = durable_stack.client.client.get_workflow_handle(f"{parent}/tool/{call_id}")
    assert (await child.describe()).workflow_type == "AgentToolWorkflow"
