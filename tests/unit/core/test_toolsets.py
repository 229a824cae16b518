"""Toolsets: tools resolved before every model call; a broken toolset stops the run with a ToolError."""

from __future__ import annotations

from typing import Any

import pytest

from adk_core import (
    BaseTool,
    FunctionTool,
    InMemoryRunner,
    LlmAgent,
    ReadonlyContext,
    ScriptedModel,
    ToolContext,
)
from adk_core.errors import ConfigurationError, ToolError
from adk_core.models import function_call_response, text_response, tool_responses_this_turn


def unlock(tool_context: ToolContext) -> dict:
    """Unlock the secret tool."""
    tool_context.state["unlocked"] = True
    return {"unlocked": True}


def secret() -> dict:
    """Tell the secret."""
    return {"secret": 42}


def echo(text: str) -> dict:
    """Echo text."""
    return {"echo": text}


class GatedToolset:
    """Offers ``unlock`` until the session state says unlocked, then ``secret``."""

    name = "gated"

    def __init__(self) -> None:
        self.calls = 0
        self._unlock, self._secret = FunctionTool(unlock), FunctionTool(secret)

    async def get_tools(self, readonly_context: ReadonlyContext) -> list[BaseTool]:
        self.calls += 1
        return [self._secret] if readonly_context.state.get("unlocked") else [self._unlock]


class BrokenToolset:
    name = "broken"

    async def get_tools(self, readonly_context: ReadonlyContext) -> list[BaseTool]:
        raise RuntimeError("server unreachable")


def _script(plan: list[Any]) -> ScriptedModel:
    return ScriptedModel(lambda request: plan[len(tool_responses_this_turn(request))])


async def test_toolset_tools_are_resolved_per_model_call() -> None:
    toolset = GatedToolset()
    model = _script([function_call_response("unlock"), function_call_response("secret"), text_response("done")])
    events = await InMemoryRunner(LlmAgent(name="a", model=model, tools=[toolset])).run("go")
    assert [[d.name for d in r.config.tools] for r in model.requests] == [["unlock"], ["secret"], ["secret"]]
    assert toolset.calls == 3
    assert [r.response for e in events for r in e.function_responses()] == [{"unlocked": True}, {"secret": 42}]
    assert events[-1].text == "done"


async def test_a_failing_toolset_fails_loudly_naming_toolset_and_cause() -> None:
    model = _script([function_call_response("echo", {"text": "still here"}), text_response("fine")])
    agent = LlmAgent(name="a", model=model, tools=[BrokenToolset(), echo])
    runner = InMemoryRunner(agent)
    with pytest.raises(ToolError, match="toolset 'broken' of agent 'a' failed") as info:
        await runner.run("go")
    assert "RuntimeError: server unreachable" in str(info.value)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert model.requests == [], "no model call with a partial tool list"
    session = await runner.session_service.get_session(app_name="app", user_id="user", session_id="session")
    assert session is not None and [e.author for e in session.events] == ["user"]


async def test_toolset_is_accepted_as_a_tool_of_an_agent() -> None:
    agent = LlmAgent(name="a", model="gemini-2.5-flash", tools=[GatedToolset(), echo])
    assert isinstance(agent.tools[0], GatedToolset) and isinstance(agent.tools[1], FunctionTool)
    request_tools = await agent.canonical_tools(_Readonly())
    assert [t.name for t in request_tools] == ["unlock", "echo"]


class _Readonly:
    """Just enough of a ReadonlyContext for GatedToolset."""

    state: dict[str, Any] = {}


async def test_duplicate_tool_names_from_a_toolset_are_refused() -> None:
    class Shadow:
        name = "shadow"

        async def get_tools(self, readonly_context: ReadonlyContext) -> list[BaseTool]:
            return [FunctionTool(echo)]

    model = ScriptedModel(lambda r: text_response("x"))
    with pytest.raises(ConfigurationError, match="two tools named 'echo'"):
        await InMemoryRunner(LlmAgent(name="a", model=model, tools=[echo, Shadow()])).run("go")

