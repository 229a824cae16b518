"""AgentTool: a parent calls a child agent like a function; state flows back; skip_summarization."""

from __future__ import annotations

from typing import Any

from adk_core import AgentTool, InMemoryRunner, LlmAgent, LlmRequest, ScriptedModel, ToolContext
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from tests.scenarios import user_said


def note(finding: str, tool_context: ToolContext) -> dict:
    """Write a finding down."""
    tool_context.state["finding"] = finding
    return {"noted": True}


def _child() -> LlmAgent:
    def script(request: LlmRequest) -> Any:
        if tool_responses_this_turn(request):
            return text_response(f"researched: {user_said(request)}")
        return function_call_response("note", {"finding": "X is 42"})

    return LlmAgent(
        name="researcher",
        description="Researches a topic.",
        model=ScriptedModel(script),
        instruction="Research for {user:name?}.",
        tools=[note],
        output_key="research",
    )


def _parent(tool: AgentTool) -> LlmAgent:
    def script(request: LlmRequest) -> Any:
        done = tool_responses_this_turn(request)
        if done:
            return text_response(f"summary of {done[0]['result']}")
        return function_call_response("researcher", {"request": "find X"})

    return LlmAgent(name="planner", model=ScriptedModel(script), tools=[tool])


async def test_parent_calls_child_and_the_childs_state_flows_back() -> None:
    child = _child()
    tool = AgentTool(child)
    parent = _parent(tool)
    runner = InMemoryRunner(parent)
    await runner.session_service.create_session(app_name="app", user_id="u", session_id="s", state={"user:name": "Ada"})
    events = await runner.run("look into X", user_id="u", session_id="s")

    declaration = tool.declaration()
    assert declaration.name == "researcher" and declaration.description == "Researches a topic."
    assert declaration.parameters is not None and declaration.parameters["required"] == ["request"]

    child_request = child.model.requests[0]  # type: ignore[union-attr]
    assert child_request.contents[-1].text == "find X"
    assert "Research for Ada." in child_request.config.system_instruction
    assert [e.author for e in events] == ["planner", "planner", "planner"]
    response_event = events[1]
    assert response_event.function_responses()[0].response == {"result": "researched: find X"}
    assert response_event.actions.state_delta == {"finding": "X is 42", "research": "researched: find X"}
    assert events[-1].text == "summary of researched: find X"

    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert session.state["finding"] == "X is 42" and session.state["research"] == "researched: find X"
    assert all(e.author in ("user", "planner") for e in session.events), "the child's events stay in its own session"


async def test_skip_summarization_ends_the_parents_turn_with_the_tools_answer() -> None:
    parent = _parent(AgentTool(_child(), skip_summarization=True))
    events = await InMemoryRunner(parent).run("look into X")
    assert len(parent.model.requests) == 1  # type: ignore[union-attr]
    last = events[-1]
    assert last.actions.skip_summarization is True and last.is_final_response()
    assert last.function_responses()[0].response == {"result": "researched: find X"}
