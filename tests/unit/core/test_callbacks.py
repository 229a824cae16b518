"""Agent, model and tool callbacks: short-circuits, replacements, error recovery, sync/async, lists."""

from __future__ import annotations

from typing import Any

import pytest

from adk_core import (
    CallbackContext,
    Content,
    InMemoryRunner,
    LlmAgent,
    LlmRequest,
    LlmResponse,
    ScriptedModel,
)
from adk_core.errors import ConfigurationError, ModelError
from adk_core.models import function_call_response, text_response, tool_responses_this_turn

ran: list[str] = []


def double(x: int) -> dict:
    """Double a number."""
    ran.append(f"double({x})")
    return {"value": 2 * x}


def explode(x: int) -> dict:
    """Always fails."""
    raise RuntimeError(f"boom {x}")


def _tool_model(tool: str) -> ScriptedModel:
    def script(request: LlmRequest) -> Any:
        done = tool_responses_this_turn(request)
        return text_response(f"got {done[0]}") if done else function_call_response(tool, {"x": 21})

    return ScriptedModel(script)


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


# --- agent callbacks -----------------------------------------------------------------------------
async def test_before_agent_content_skips_the_agent_and_after_agent() -> None:
    model = ScriptedModel(lambda r: text_response("model"))
    agent = LlmAgent(
        name="gated",
        model=model,
        before_agent_callback=lambda callback_context: Content.model("closed today"),
        after_agent_callback=lambda callback_context: ran.append("after") or None,
    )
    events = await InMemoryRunner(agent).run("hi")
    assert [(e.author, e.text) for e in events] == [("gated", "closed today")]
    assert model.requests == [] and ran == []


async def test_before_agent_state_write_is_stored_and_the_agent_runs() -> None:
    def stamp(callback_context: CallbackContext) -> None:
        callback_context.state["visited"] = True

    agent = LlmAgent(name="a", model=ScriptedModel(lambda r: text_response("ran")), before_agent_callback=stamp)
    runner = InMemoryRunner(agent)
    events = await runner.run("hi", session_id="s")
    assert [e.text for e in events] == ["", "ran"]
    assert events[0].actions.state_delta == {"visited": True}
    session = await runner.session_service.get_session(app_name="app", user_id="user", session_id="s")
    assert session is not None and session.state["visited"] is True


async def test_after_agent_content_is_the_last_word() -> None:
    async def sign(callback_context: CallbackContext) -> Content:
        return Content.model(f"-- {callback_context.agent_name}")

    agent = LlmAgent(name="a", model=ScriptedModel(lambda r: text_response("answer")), after_agent_callback=sign)
    events = await InMemoryRunner(agent).run("hi")
    assert [e.text for e in events] == ["answer", "-- a"]


async def test_an_agent_callback_returning_the_wrong_type_says_what_to_return() -> None:
    agent = LlmAgent(name="a", model=ScriptedModel(["x"]), before_agent_callback=lambda callback_context: "text")
    with pytest.raises(ConfigurationError, match=r"returned str; return a Content \(e.g. Content.model"):
        await InMemoryRunner(agent).run("hi")


# --- model callbacks -----------------------------------------------------------------------------
async def test_before_model_response_skips_the_model() -> None:
    async def cached(callback_context: CallbackContext, llm_request: LlmRequest) -> LlmResponse:
        return text_response(f"cached for {callback_context.agent_name}")

    model = ScriptedModel(lambda r: text_response("model"))
    events = await InMemoryRunner(LlmAgent(name="a", model=model, before_model_callback=cached)).run("hi")
    assert events[-1].text == "cached for a" and model.requests == []


async def test_before_model_can_edit_the_request() -> None:
    def add_rule(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
        llm_request.append_instructions("Always answer in French.")

    model = ScriptedModel(lambda r: text_response("oui"))
    await InMemoryRunner(LlmAgent(name="a", model=model, before_model_callback=add_rule)).run("hi")
    assert model.requests[0].config.system_instruction.endswith("Always answer in French.")


async def test_after_model_replaces_the_response() -> None:
    def shout(callback_context: CallbackContext, llm_response: LlmResponse) -> LlmResponse:
        return text_response(llm_response.content.text.upper())  # type: ignore[union-attr]

    events = await InMemoryRunner(
        LlmAgent(name="a", model=ScriptedModel(lambda r: text_response("quiet")), after_model_callback=shout)
    ).run("hi")
    assert events[-1].text == "QUIET"


def _failing_model() -> ScriptedModel:
    def script(request: LlmRequest) -> Any:
        raise ModelError("provider overloaded", status=503, retryable=True, provider="test")

    return ScriptedModel(script)


async def test_on_model_error_recovers() -> None:
    seen: list[Exception] = []

    async def fallback(callback_context: CallbackContext, llm_request: LlmRequest, error: Exception) -> LlmResponse:
        seen.append(error)
        return text_response("fallback answer")

    agent = LlmAgent(name="a", model=_failing_model(), on_model_error_callback=fallback)
    events = await InMemoryRunner(agent).run("hi")
    assert events[-1].text == "fallback answer"
    assert isinstance(seen[0], ModelError) and seen[0].status == 503


async def test_without_a_recovery_the_model_error_propagates() -> None:
    agent = LlmAgent(name="a", model=_failing_model(), on_model_error_callback=lambda **kw: None)
    with pytest.raises(ModelError, match="provider overloaded") as info:
        await InMemoryRunner(agent).run("hi")
    assert info.value.retryable and info.value.status == 503


# --- tool callbacks ------------------------------------------------------------------------------
async def test_before_tool_result_skips_the_tool() -> None:
    agent = LlmAgent(
        name="a",
        model=_tool_model("double"),
        tools=[double],
        before_tool_callback=lambda tool, args, tool_context: {"value": f"blocked {tool.name}({args['x']})"},
    )
    events = await InMemoryRunner(agent).run("hi")
    assert ran == []
    assert events[-1].text == "got {'value': 'blocked double(21)'}"


async def test_after_tool_replaces_the_result() -> None:
    async def annotate(tool, args, tool_context, tool_response) -> dict:
        return {**tool_response, "call_id": tool_context.function_call_id is not None}

    agent = LlmAgent(name="a", model=_tool_model("double"), tools=[double], after_tool_callback=annotate)
    events = await InMemoryRunner(agent).run("hi")
    assert ran == ["double(21)"]
    assert events[-1].text == "got {'value': 42, 'call_id': True}"


async def test_on_tool_error_recovers_with_a_result() -> None:
    def recover(tool, args, tool_context, error: Exception) -> dict:
        return {"recovered": str(error)}

    agent = LlmAgent(name="a", model=_tool_model("explode"), tools=[explode], on_tool_error_callback=recover)
    events = await InMemoryRunner(agent).run("hi")
    assert events[-1].text == "got {'recovered': 'boom 21'}"


async def test_a_tool_error_without_recovery_is_reported_to_the_model() -> None:
    agent = LlmAgent(name="a", model=_tool_model("explode"), tools=[explode], on_tool_error_callback=lambda **kw: None)
    events = await InMemoryRunner(agent).run("hi")
    assert events[-1].text == "got {'error': \"Tool 'explode' failed: RuntimeError: boom 21\"}"


# --- lists: first non-None wins, sync and async mixed --------------------------------------------
async def test_callback_lists_stop_at_the_first_non_none_result() -> None:
    def first(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
        ran.append("first")

    async def second(callback_context: CallbackContext, llm_request: LlmRequest) -> LlmResponse:
        ran.append("second")
        return text_response("from second")

    def third(callback_context: CallbackContext, llm_request: LlmRequest) -> LlmResponse:
        ran.append("third")
        return text_response("from third")

    model = ScriptedModel(lambda r: text_response("model"))
    agent = LlmAgent(name="a", model=model, before_model_callback=[first, second, third])
    events = await InMemoryRunner(agent).run("hi")
    assert ran == ["first", "second"] and events[-1].text == "from second" and model.requests == []


async def test_all_none_callbacks_let_the_call_through() -> None:
    agent = LlmAgent(
        name="a",
        model=_tool_model("double"),
        tools=[double],
        before_tool_callback=[lambda **kw: ran.append("b1"), _async_none],
        after_tool_callback=[_async_none, lambda **kw: None],
    )
    events = await InMemoryRunner(agent).run("hi")
    assert ran == ["b1", "double(21)"] and events[-1].text == "got {'value': 42}"


async def _async_none(**kwargs: Any) -> None:
    return None
