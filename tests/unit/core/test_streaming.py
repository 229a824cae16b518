"""Streaming (RunConfig streaming_mode="sse"): partial chunks are yielded as they come, never stored."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from adk_core import Content, InMemoryRunner, LlmAgent, LlmRequest, LlmResponse, RunConfig, ScriptedModel
from adk_core.models import text_response
from adk_core.types import Event


def _chunks(request: LlmRequest) -> list[LlmResponse]:
    return [
        LlmResponse(content=Content.model("Hel"), partial=True),
        LlmResponse(content=Content.model("lo"), partial=True),
        text_response("Hello"),
    ]


class StreamFlagModel:
    """Streams only when asked to, so the test sees the flag reach the model."""

    name = "stream-flag"

    def __init__(self) -> None:
        self.stream_flags: list[bool] = []

    async def generate_content(self, request: LlmRequest, *, stream: bool = False) -> AsyncIterator[LlmResponse]:
        self.stream_flags.append(stream)
        if stream:
            for chunk in _chunks(request):
                yield chunk
        else:
            yield text_response("Hello")


async def _run(agent: LlmAgent, mode: str) -> tuple[InMemoryRunner, list]:
    runner = InMemoryRunner(agent)
    events = [
        e
        async for e in runner.run_async(
            user_id="u", session_id="s", new_message=Content.user("hi"), run_config=RunConfig(streaming_mode=mode)
        )
    ]
    return runner, events


async def test_partial_events_are_yielded_but_not_stored() -> None:
    runner, events = await _run(LlmAgent(name="streamer", model=ScriptedModel(_chunks)), "sse")
    assert [(e.text, e.partial) for e in events] == [("Hel", True), ("lo", True), ("Hello", None)]
    assert all(e.author == "streamer" for e in events)
    assert len({e.id for e in events}) == 3
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert [(e.author, e.text) for e in session.events] == [("user", "hi"), ("streamer", "Hello")]
    assert session.events[-1].id == events[-1].id


async def test_partial_events_do_not_reach_the_next_request() -> None:
    model = ScriptedModel(_chunks)
    runner, _ = await _run(LlmAgent(name="streamer", model=model), "sse")
    await runner.run("again", user_id="u", session_id="s")
    texts = [c.text for c in model.requests[-1].contents]
    assert texts == ["hi", "Hello", "again"]


async def test_streaming_mode_reaches_the_model() -> None:
    model = StreamFlagModel()
    _, streamed = await _run(LlmAgent(name="a", model=model), "sse")
    _, whole = await _run(LlmAgent(name="b", model=model), "none")
    assert model.stream_flags == [True, False]
    assert [e.partial for e in streamed] == [True, True, None]
    assert [e.text for e in whole] == ["Hello"]


def _two_chunks(request: LlmRequest) -> list[LlmResponse]:
    return [LlmResponse(content=Content.model("Hel"), partial=True), text_response("Hello")]


async def _streamed(agent: LlmAgent) -> tuple[list[Event], dict]:
    runner = InMemoryRunner(agent)
    events = [e async for e in runner.run_async(user_id="u", session_id="s", new_message=Content.user("hi"),
                                                run_config=RunConfig(streaming_mode="sse"))]  # fmt: skip
    session = await runner.session_service.get_session(app_name=runner.app_name, user_id="u", session_id="s")
    assert session is not None
    return events, dict(session.state)


async def test_what_model_callbacks_write_while_streaming_is_stored_with_the_final_response() -> None:
    """The callbacks hold one context for the whole call; its writes used to ride on the first chunk,
    which is never stored, and the final event carried none."""

    def before(callback_context: Any, llm_request: LlmRequest) -> None:
        callback_context.state["asked"] = 1

    def after(callback_context: Any, llm_response: LlmResponse) -> None:
        if not llm_response.partial:
            callback_context.state["answered"] = llm_response.content.parts[0].text

    events, state = await _streamed(LlmAgent(name="a", model=ScriptedModel(_two_chunks),
                                             before_model_callback=before, after_model_callback=after))  # fmt: skip
    assert state == {"asked": 1, "answered": "Hello"}
    assert [(e.partial, e.actions.state_delta) for e in events if e.author == "a"] == [
        (True, {}), (None, {"asked": 1, "answered": "Hello"})]  # fmt: skip
