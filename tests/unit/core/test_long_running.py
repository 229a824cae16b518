"""LongRunningFunctionTool: the call is marked long-running, the turn ends, and the result arriving
later as a FunctionResponse message goes to the agent that made the call."""

from __future__ import annotations

from typing import Any

from adk_core import Content, InMemoryRunner, LlmAgent, LlmRequest, LongRunningFunctionTool, ScriptedModel
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_core.types import Part

requested: list[int] = []


def ask_for_approval(amount: int) -> None:
    """Ask a manager to approve a refund."""
    requested.append(amount)  # the answer arrives later, from the manager


def _refunds_script(request: LlmRequest) -> Any:
    done = tool_responses_this_turn(request)
    if done:
        return text_response(f"refund decision: {done[-1]}")
    return function_call_response("ask_for_approval", {"amount": 50})


def _app() -> tuple[LlmAgent, LlmAgent]:
    refunds = LlmAgent(
        name="refunds",
        description="Handles refunds.",
        model=ScriptedModel(_refunds_script),
        tools=[LongRunningFunctionTool(ask_for_approval)],
        # Without the call id, the next message would go back to the root: this agent may not be
        # talked to directly across the tree.
        disallow_transfer_to_parent=True,
    )
    front = LlmAgent(
        name="front",
        model=ScriptedModel(lambda r: function_call_response("transfer_to_agent", {"agent_name": "refunds"})),
        sub_agents=[refunds],
    )
    return front, refunds


async def test_long_running_call_ends_the_turn_and_the_later_result_continues_it() -> None:
    requested.clear()
    front, refunds = _app()
    runner = InMemoryRunner(front)
    first = await runner.run("I want a refund", session_id="s")
    call_event = first[-1]
    call = call_event.function_calls()[0]
    assert (call_event.author, call.name, call.args) == ("refunds", "ask_for_approval", {"amount": 50})
    assert call.id and call_event.long_running_tool_ids == [call.id]
    assert call_event.is_final_response()
    assert requested == [50]
    assert not any(e.function_responses() for e in first if e.author == "refunds"), "no result yet"
    assert "long-running operation" in refunds.model.requests[0].config.tools[0].description  # type: ignore[union-attr]

    answer = Content(role="user", parts=[Part.from_function_response("ask_for_approval", {"approved": True}, id=call.id)])
    second = await runner.run(answer, session_id="s")
    assert [(e.author, e.text) for e in second] == [("refunds", "refund decision: {'approved': True}")]
    assert len(front.model.requests) == 1  # type: ignore[union-attr]
    last_request = refunds.model.requests[-1]  # type: ignore[union-attr]
    assert last_request.contents[-1].function_responses()[0].id == call.id


async def test_without_the_call_id_the_message_goes_to_the_root() -> None:
    front, _ = _app()
    runner = InMemoryRunner(front)
    await runner.run("I want a refund", session_id="s")
    events = await runner.run("hello?", session_id="s")
    assert events[0].author == "front"
