"""HTTP 200 answers of the wrong shape: one clear, non-retryable ModelError, whichever the provider.

Without validation these surfaced as KeyError/TypeError (retried by Temporal as if transient) or, for
Gemini, as an empty answer that looked like success.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from model_wire import SECRET, Wire, collect, simple_request

from adk_core.errors import ModelError
from adk_core.models._http import HttpModel
from adk_core.models.anthropic import AnthropicModel
from adk_core.models.gemini import GeminiModel
from adk_core.models.openai import OpenAIModel
from adk_temporal.activities.adk_activities import model_error_to_application_error

_MODELS = {
    "gemini": lambda client: GeminiModel("gemini-2.5-flash", api_key=SECRET, http_client=client),
    "anthropic": lambda client: AnthropicModel("claude-sonnet-4-5", api_key=SECRET, http_client=client),
    "openai": lambda client: OpenAIModel("gpt-4o", api_key=SECRET, http_client=client),
}


def _model(provider: str, wire: Wire) -> HttpModel:
    return _MODELS[provider](wire.client)


def _sse(*events: tuple[str | None, Any]) -> httpx.Response:
    """An event stream of (event name, data) pairs; str data is sent as is, anything else as JSON."""
    lines = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        lines.append(f"{head}data: {data if isinstance(data, str) else json.dumps(data)}\n\n")
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, text="".join(lines))


async def _expect_malformed(model: HttpModel, provider: str, *, stream: bool, says: str) -> ModelError:
    with pytest.raises(ModelError) as caught:
        await collect(model, simple_request(), stream=stream)
    error = caught.value
    assert (error.status, error.retryable, error.provider, error.error_type) == (
        200, False, provider, "MalformedResponse",
    )  # fmt: skip
    text = str(error)
    assert says in text, text
    assert f"may not be {provider}-compatible" in text and "check base_url" in text
    assert SECRET not in text
    return error


@pytest.mark.parametrize(
    ("provider", "body", "says"),
    [
        ("gemini", {}, "no candidates and no promptFeedback"),
        ("gemini", {"candidates": "x"}, "candidates: Input should be a valid list, got str"),
        ("gemini", [], "body: Input should be a valid dictionary"),
        ("gemini", {"candidates": [{"content": {"parts": [{"text": 5}]}}]}, "candidates.0.content.parts.0.text"),
        ("gemini", {"candidates": [{"content": {"parts": [{"functionCall": {"args": {}}}]}}]}, "name: Field required"),
        ("anthropic", {}, "content: Field required"),
        ("anthropic", {"content": 5}, "content: Input should be a valid list, got int"),
        ("anthropic", {"content": [{"type": "tool_use", "name": "get_weather"}]}, "content.0.tool_use.id"),
        ("anthropic", {"content": [{"type": "text"}]}, "content.0.text.text: Field required"),
        ("openai", {}, "choices: Field required"),
        ("openai", {"choices": "x"}, "choices: Input should be a valid list, got str"),
        ("openai", {"choices": []}, "choices: List should have at least 1 item"),
        ("openai", {"choices": [{"message": {"content": ["a"]}}]}, "choices.0.message.content"),
        ("openai", {"choices": [{"message": {"tool_calls": [{"function": {}}]}}]}, "function.name"),
    ],
)  # fmt: skip
async def test_wrong_body_shape_is_a_non_retryable_malformed_response(
    wire: Wire, provider: str, body: Any, says: str
) -> None:
    wire.reply_raw(httpx.Response(200, json=body))
    await _expect_malformed(_model(provider, wire), provider, stream=False, says=says)


_TEXT_START = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
_MESSAGE_START = {"type": "message_start", "message": {"model": "claude-sonnet-4-5", "usage": {}}}


@pytest.mark.parametrize(
    ("provider", "events", "says"),
    [
        ("gemini", [(None, {"candidates": 5})], "streamed chunk has an unexpected shape (candidates"),
        ("gemini", [(None, "{oops")], "a streamed event is not JSON"),
        ("gemini", [(None, {"usageMetadata": {"promptTokenCount": 3}})], "no candidates and no promptFeedback"),
        ("anthropic", [("message_start", {"type": "message_start"})], "message_start event has an unexpected"),
        ("anthropic", [("content_block_start", {**_TEXT_START, "content_block": 5})], "content_block"),
        (
            "anthropic",
            [("message_start", _MESSAGE_START), ("content_block_delta", {
                "type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "x"}
            })],
            "names block 3, which never started",
        ),
        (
            "anthropic",
            [("message_start", _MESSAGE_START), ("content_block_start", _TEXT_START), ("content_block_delta", {
                "type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{"}
            })],
            "input_json_delta arrived for a text block",
        ),
        ("anthropic", [("message_stop", {"type": "message_stop"})], "no message_start event"),
        ("openai", [(None, {"choices": "x"}), (None, "[DONE]")], "streamed chunk has an unexpected shape"),
        ("openai", [(None, {"choices": [{"delta": {"content": 5}}]})], "choices.0.delta.content"),
        ("openai", [(None, "[DONE]")], "the event stream had no choices"),
    ],
)  # fmt: skip
async def test_wrong_stream_chunk_is_a_non_retryable_malformed_response(
    wire: Wire, provider: str, events: list[tuple[str | None, Any]], says: str
) -> None:
    wire.reply_raw(_sse(*events))
    await _expect_malformed(_model(provider, wire), provider, stream=True, says=says)


async def test_the_activity_layer_does_not_retry_a_malformed_response(wire: Wire) -> None:
    wire.reply_raw(httpx.Response(200, json={"choices": "x"}))
    error = await _expect_malformed(_model("openai", wire), "openai", stream=False, says="choices")

    assert model_error_to_application_error(error).non_retryable


async def test_unknown_fields_and_block_types_are_ignored(wire: Wire) -> None:
    wire.reply_raw(
        httpx.Response(
            200,
            json={
                "content": [
                    {"type": "redacted_thinking", "data": "opaque"},
                    {"type": "text", "text": "Paris.", "citations": [{"cited_text": "..."}]},
                ],
                "stop_reason": "end_turn",
                "brand_new_field": {"nested": True},
            },
        )
    )
    [response] = await collect(_model("anthropic", wire), simple_request())
    assert response.content is not None and response.content.text == "Paris."

    wire.reply_raw(
        _sse(
            ("message_start", _MESSAGE_START),
            ("content_block_start", _TEXT_START),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "citations_delta", "citation": {}}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "text_delta", "text": "Paris."}}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
        )
    )  # fmt: skip
    *_, final = await collect(_model("anthropic", wire), simple_request(), stream=True)
    assert final.content is not None and final.content.text == "Paris."


async def test_gemini_blocked_prompt_stays_an_error_event_when_streamed(wire: Wire) -> None:
    wire.reply_raw(_sse((None, {"promptFeedback": {"blockReason": "SAFETY"}})))

    [response] = await collect(_model("gemini", wire), simple_request(), stream=True)

    assert response.content is None and response.error_code == "SAFETY"
    assert response.error_message == "Gemini blocked the prompt (SAFETY)"
