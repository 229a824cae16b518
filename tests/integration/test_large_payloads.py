"""Values far over Temporal's 2 MB payload limit go out of band; a turn with them completes once,
and the workflow history stays small (hardening issue 2)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from adk_core import App, FunctionTool, LlmAgent, LlmRequest, ScriptedModel
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_core.types import Content, Part
from adk_temporal.workflows import session_workflow_id
from adkt.client import TurnFailedError
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration

MB = 1024 * 1024


async def _history_bytes(stack: DurableStack, app: str) -> int:
    history = await stack.client.client.get_workflow_handle(session_workflow_id(app, "u1", "s1")).fetch_history()
    return len(history.to_json())


async def test_a_large_model_answer_tool_result_and_user_message_complete_once(durable_stack: DurableStack) -> None:
    big_answer = "a" * (3 * MB // 2)
    big_result = "r" * (3 * MB)

    def fetch_report() -> dict:
        """Fetch the report."""
        return {"report": big_result}

    def script(request: LlmRequest) -> Any:
        if tool_responses_this_turn(request):
            return text_response(f"the report has {len(str(request.contents[-1].parts[0].function_response.response))} chars")
        last = request.contents[-1].parts[-1]
        if last.text == "report":
            return function_call_response("fetch_report", {})
        if last.inline_data is not None:
            return text_response(f"got {len(last.inline_data.data)} bytes")
        if last.text and len(last.text) > MB:
            return text_response(f"you wrote {len(last.text)} chars")
        return text_response(big_answer)

    app = durable_stack.register(App(
        name=f"large_{uuid.uuid4().hex[:6]}",
        root_agent=LlmAgent(name="a", model=ScriptedModel(script), tools=[FunctionTool(fetch_report)]),
    ))
    client = durable_stack.client

    answer = await client.send(app.name, "u1", "s1", "talk at length")
    assert answer.final_text == big_answer
    report = await client.send(app.name, "u1", "s1", "report")
    assert report.final_text.startswith("the report has ")
    letter = await client.send(app.name, "u1", "s1", "w" * (3 * MB))
    assert letter.final_text == f"you wrote {3 * MB} chars"
    photo = Content(role="user", parts=[Part.from_bytes(b"\x89PNG" + b"\x00" * (5 * MB), "image/png")])
    seen = await client.send(app.name, "u1", "s1", photo)
    assert seen.final_text == f"got {5 * MB + 4} bytes"

    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u1", session_id="s1")
    assert stored is not None
    assert len(stored.events) == 2 + 4 + 2 + 2  # every turn once
    assert stored.events[1].text == big_answer
    # ~13 MB went through the run; the history holds references to it.
    assert await _history_bytes(durable_stack, app.name) < 512 * 1024


async def test_a_value_beyond_the_limit_fails_the_turn_once_with_a_stored_error(durable_stack: DurableStack) -> None:
    calls = []

    def script(request: LlmRequest) -> Any:
        calls.append(1)
        return text_response("x" * (65 * MB))

    app = durable_stack.register(App(name=f"huge_{uuid.uuid4().hex[:6]}", root_agent=LlmAgent(name="a", model=ScriptedModel(script))))
    with pytest.raises(TurnFailedError, match="PayloadTooLarge.*64 MiB"):
        await durable_stack.client.send(app.name, "u1", "s1", "say everything")
    assert len(calls) == 1  # not retried
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u1", session_id="s1")
    assert stored is not None
    assert stored.events[-1].error_code == "PayloadTooLarge"
    # The conversation goes on.
    calls.clear()
