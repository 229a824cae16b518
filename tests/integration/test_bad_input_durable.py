"""Bad input under the durable runtime fails clearly instead of wedging a workflow task."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from adk_core import App, LlmAgent, LlmRequest, ScriptedModel, ToolContext
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration


async def test_a_non_json_state_value_is_refused_before_it_reaches_a_tool_activity(durable_stack: DurableStack) -> None:
    def lookup(tool_context: ToolContext) -> dict:
        """Look something up."""
        return {"ok": True}

    def stash_object(tool, args, tool_context):  # a callback keeping a Python object in temp: state
        tool_context.state["temp:client"] = object()

    def script(request: LlmRequest) -> Any:
        done = tool_responses_this_turn(request)
        return text_response(f"model saw: {done[0]['error']}") if done else function_call_response("lookup")

    agent = LlmAgent(name="a", model=ScriptedModel(script), tools=[lookup], before_tool_callback=stash_object)
    app = durable_stack.register(App(name=f"badstate_{uuid.uuid4().hex[:6]}", root_agent=agent))
    result = await durable_stack.client.send(app.name, "u1", "s1", "go")
    assert "temp:client" in result.final_text and "ToolExecution(mode='inline')" in result.final_text
