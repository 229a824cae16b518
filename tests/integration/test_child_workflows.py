"""Agent trees as workflow trees: ParallelAgent branches and AgentTool agents as child workflows."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from adk_core import AgentExecution, App, InMemoryRunner, LlmAgent, LlmRequest, ParallelAgent, ScriptedModel
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_core.tools import AgentTool
from adk_temporal.workflows import session_workflow_id
from adkt.client import TurnFailedError
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


def _broken_callback(callback_context: Any, llm_request: LlmRequest) -> None:
    raise RuntimeError("a callback of the agent broke")


async def _outcome(durable_stack: DurableStack, app: App) -> str:
    """What the sender gets, within a bound: the turn's answer, or why it failed."""
    durable_stack.register(app)
    try:
        result = await asyncio.wait_for(durable_stack.client.send(app.name, "u1", "s1", "go"), timeout=45)
    except TurnFailedError as e:
        return f"failed: {e.error_type}: {e.reason}"
    return f"answered: {result.final_text}"


@pytest.mark.parametrize("child", [False, True], ids=["inline", "child-workflow"])
async def test_a_branch_whose_code_raises_fails_the_turn_as_inline(durable_stack: DurableStack, child: bool) -> None:
    """A plain exception (not an AdkError) in a branch's own code: a child workflow used to fail its
    workflow task, which Temporal retries without end, and the turn waited for good."""
    execution = AgentExecution(child_workflow=child)
    fan = ParallelAgent(name="fan", sub_agents=[
        LlmAgent(name="left", model=ScriptedModel(_seen("left")), before_model_callback=_broken_callback,
                 execution=execution),
        LlmAgent(name="right", model=ScriptedModel(_seen("right")), execution=execution),
    ])  # fmt: skip
    outcome = await _outcome(durable_stack, App(name=f"fanfail_{uuid.uuid4().hex[:6]}", root_agent=fan))
    assert outcome == "failed: RuntimeError: a callback of the agent broke", outcome


@pytest.mark.parametrize("child", [False, True], ids=["inline", "child-workflow"])
async def test_an_agent_tool_whose_code_raises_answers_as_inline(durable_stack: DurableStack, child: bool) -> None:
    """The same in an AgentTool run as a child workflow: its error reaches the calling model as a tool
    error, as inline, and the turn answers."""
    helper = LlmAgent(name="helper", description="Helps.", model=ScriptedModel(lambda r: text_response("helped")),
                      before_model_callback=_broken_callback, execution=AgentExecution(child_workflow=child))

    def caller(request: LlmRequest) -> Any:
        done = tool_responses_this_turn(request)
        return text_response(f"the helper said {done[-1]}") if done else function_call_response("helper", {"request": "x"})

    root = LlmAgent(name="root", model=ScriptedModel(caller), tools=[AgentTool(helper)])
    outcome = await _outcome(durable_stack, App(name=f"toolfail_{uuid.uuid4().hex[:6]}", root_agent=root))
    assert outcome.startswith("answered: the helper said") and "a callback of the agent broke" in outcome, outcome
