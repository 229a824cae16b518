"""Adding a durable run's session to memory stores the run's queued events first, so memory gets
the conversation up to that moment, not only what earlier activities happened to store."""

from __future__ import annotations

import uuid
from typing import Any

from adk_core import App, LlmAgent, LlmRequest, ScriptedModel
from adk_core.agents.context import CallbackContext
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from tests.integration.conftest import DurableStack


async def lookup_colour(person: str) -> dict:
    """Look up a person's favourite colour."""
    return {"colour": "turquoise"}


def script(request: LlmRequest) -> Any:
    if not tool_responses_this_turn(request):
        return function_call_response("lookup_colour", {"person": "alice"})
    return text_response("Alice likes turquoise")


async def remember(callback_context: CallbackContext) -> None:
    ic = callback_context.invocation_context
    assert ic.memory_service is not None
    await ic.memory_service.add_session_to_memory(ic.session)


async def test_the_whole_turn_reaches_memory_from_an_after_agent_callback(durable_stack: DurableStack) -> None:
    agent = LlmAgent(name="a", model=ScriptedModel(script), tools=[lookup_colour], after_agent_callback=remember)
    app = durable_stack.register(App(name=f"memory_{uuid.uuid4().hex[:6]}", root_agent=agent))
    result = await durable_stack.client.send(app.name, "u1", "s1", "What colour does Alice like?")
    assert result.final_text == "Alice likes turquoise"

    found = await durable_stack.memory.search_memory(app_name=app.name, user_id="u1", query="turquoise")
    texts = sorted(m.content.text for m in found.memories if m.content and m.content.text)
    # The final answer was made in the workflow just before the callback, and no activity had stored
    # it yet. (The tool's call and result carry no text, so memory keeps nothing of them.)
    assert texts == ["Alice likes turquoise"]
