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


async def test_a_tool_result_beyond_the_limit_fails_the_call_once_and_the_model_hears_why(
    durable_stack: DurableStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from adk_temporal.workflows import converter

    limit = 512 * 1024  # the check is the converter's, so a small limit stands for 64 MiB here
    monkeypatch.setattr(converter, "MAX_PAYLOAD_BYTES", limit)
    runs = []

    def fetch_dump() -> dict:
        """Fetch the dump."""
        runs.append(1)
        return {"dump": "d" * (2 * limit)}

    def script(request: LlmRequest) -> Any:
        if tool_responses_this_turn(request):
            return text_response(f"the tool said: {request.contents[-1].parts[0].function_response.response}")
        return function_call_response("fetch_dump", {})

    app = durable_stack.register(App(
        name=f"toolhuge_{uuid.uuid4().hex[:6]}",
        root_agent=LlmAgent(name="a", model=ScriptedModel(script), tools=[FunctionTool(fetch_dump)]),
    ))
    answer = await durable_stack.client.send(app.name, "u1", "s1", "dump it")
    # As for any failed tool, the model hears why, and the conversation goes on.
    assert "PayloadTooLarge" in answer.final_text and "store large data as an artifact" in answer.final_text
    assert runs == [1]  # not retried: the same call would make the same value again


async def test_a_call_result_is_encoded_once(durable_stack: DurableStack, monkeypatch: pytest.MonkeyPatch) -> None:
    """The size check is made on the bytes Temporal gets, not on a second encoding of each result."""
    from adk_temporal.activities import adk_activities, contracts
    from adk_temporal.workflows import converter

    encoded: list[str] = []
    to_json = converter.to_json

    def counting_to_json(value: Any, **kwargs: Any) -> bytes:
        if isinstance(value, (contracts.ToolCallResult, contracts.ModelCallResult)):
            encoded.append(type(value).__name__)
        return to_json(value, **kwargs)

    for module in (converter, adk_activities):
        monkeypatch.setattr(module, "to_json", counting_to_json)

    def lookup(key: str) -> dict:
        """Look up a key."""
        return {"value": key.upper()}

    def script(request: LlmRequest) -> Any:
        if tool_responses_this_turn(request):
            return text_response("done")
        return function_call_response("lookup", {"key": "x"})

    app = durable_stack.register(App(
        name=f"once_{uuid.uuid4().hex[:6]}",
        root_agent=LlmAgent(name="a", model=ScriptedModel(script), tools=[FunctionTool(lookup)]),
    ))
    assert (await durable_stack.client.send(app.name, "u1", "s1", "look up x")).final_text == "done"
    # Two model calls and one tool call; the answer is checked once more, before it is stored with the call.
    assert sorted(encoded) == ["ModelCallResult", "ModelCallResult", "ModelCallResult", "ToolCallResult"]
