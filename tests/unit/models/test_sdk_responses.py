"""Responses and stream events in the formats the official SDKs define (issue 23, item 1).

Two directions: every recorded payload the provider tests replay is an instance of the SDK's
response type with no field the SDK does not know (so the fixtures are not our invention), and
responses built with the SDKs' own classes, serialized as the API sends them, parse into the
content, usage and finish reason we expect (thinking blocks and signatures included).
"""

from __future__ import annotations

import json
from typing import Any

import anthropic.types as anthropic_types
import httpx
import openai.types.chat as openai_types
import pytest
from google.genai import types as genai
from model_wire import SECRET, Wire, collect, payload, weather_history
from pydantic import BaseModel, TypeAdapter

from adk_core.models.anthropic import AnthropicModel
from adk_core.models.gemini import GeminiModel
from adk_core.models.openai import OpenAIModel
from adk_core.types import Content, FunctionCall, Part


def _no_extras(value: Any, path: str = "") -> None:
    """Fail on any field an SDK model kept as an extra (anthropic and openai models allow them)."""
    if isinstance(value, BaseModel):
        assert not value.model_extra, (
            f"{path or type(value).__name__}: fields the SDK does not define: {value.model_extra}"
        )
        for name in type(value).model_fields:
            _no_extras(getattr(value, name), f"{path}.{name}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _no_extras(item, f"{path}[{index}]")


def _sse_data(fixture: str) -> list[Any]:
    lines = payload(fixture).splitlines()
    return [
        json.loads(line[6:]) for line in lines if line.startswith("data: ") and line[6:].strip() != "[DONE]"
    ]


@pytest.mark.parametrize("fixture", ["anthropic_text.json", "anthropic_tool_use.json"])
def test_anthropic_payloads_are_sdk_messages(fixture: str) -> None:
    _no_extras(anthropic_types.Message.model_validate_json(payload(fixture)))


@pytest.mark.parametrize("fixture", ["anthropic_stream.sse", "anthropic_stream_overloaded.sse"])
def test_anthropic_stream_events_are_sdk_events(fixture: str) -> None:
    events = TypeAdapter(anthropic_types.RawMessageStreamEvent)
    errors = TypeAdapter(anthropic_types.ErrorResponse)
    for data in _sse_data(fixture):
        if data["type"] == "ping":
            continue
        _no_extras(errors.validate_python(data) if data["type"] == "error" else events.validate_python(data))


@pytest.mark.parametrize(
    "fixture",
    [
        "openai_text.json",
        "openai_tool_calls.json",
        "openai_malformed_tool_call.json",
        "openai_reasoning.json",
    ],
)
def test_openai_payloads_are_sdk_completions(fixture: str) -> None:
    _no_extras(openai_types.ChatCompletion.model_validate_json(payload(fixture)))


def test_openai_stream_chunks_are_sdk_chunks() -> None:
    for data in _sse_data("openai_stream.sse"):
        _no_extras(openai_types.ChatCompletionChunk.model_validate(data))


@pytest.mark.parametrize("fixture", ["gemini_text.json", "gemini_function_call.json", "gemini_blocked.json"])
def test_gemini_payloads_are_sdk_responses(fixture: str) -> None:
    # google-genai's models forbid unknown fields themselves.
    genai.GenerateContentResponse.model_validate_json(payload(fixture))


def test_gemini_stream_chunks_are_sdk_responses() -> None:
    for data in _sse_data("gemini_stream.sse"):
        genai.GenerateContentResponse.model_validate(data)


def _json_reply(wire: Wire, model: BaseModel, **dump: Any) -> None:
    wire.reply_raw(httpx.Response(200, json=model.model_dump(mode="json", **dump)))


def _sse_reply(wire: Wire, events: list[tuple[str | None, dict[str, Any]]]) -> None:
    text = "".join(
        (f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n" for name, data in events
    )
    wire.reply_raw(httpx.Response(200, headers={"content-type": "text/event-stream"}, content=text.encode()))


EXPECTED_TURN = Content(
    role="model",
    parts=[
        Part(text="Paris, so get_weather.", thought=True, thought_signature=b"EqQBCkgIARABGAIiQL"),
        Part(text="Checking."),
        Part(function_call=FunctionCall(name="get_weather", args={"city": "Paris"}, id="toolu_1")),
    ],
)


def _anthropic_message() -> anthropic_types.Message:
    return anthropic_types.Message(
        id="msg_1",
        type="message",
        role="assistant",
        model="claude-opus-4-7",
        content=[
            anthropic_types.ThinkingBlock(
                type="thinking", thinking="Paris, so get_weather.", signature="EqQBCkgIARABGAIiQL"
            ),
            anthropic_types.TextBlock(type="text", text="Checking."),
            anthropic_types.ToolUseBlock(
                type="tool_use", id="toolu_1", name="get_weather", input={"city": "Paris"}
            ),
        ],
        stop_reason="tool_use",
        usage=anthropic_types.Usage(input_tokens=40, output_tokens=25, cache_read_input_tokens=100),
    )


async def test_an_anthropic_sdk_message_parses(wire: Wire) -> None:
    _json_reply(wire, _anthropic_message())

    [response] = await collect(
        AnthropicModel("claude-opus-4-7", api_key=SECRET, http_client=wire.client), weather_history()
    )

    assert response.content == EXPECTED_TURN
    assert response.finish_reason == "STOP"
    assert response.usage_metadata is not None
    assert (
        response.usage_metadata.prompt_token_count,
        response.usage_metadata.cached_content_token_count,
    ) == (140, 100)


async def test_an_anthropic_sdk_event_stream_parses(wire: Wire) -> None:
    start = _anthropic_message().model_copy(update={"content": [], "stop_reason": None})
    t = anthropic_types
    events: list[BaseModel] = [
        t.RawMessageStartEvent(type="message_start", message=start),
        t.RawContentBlockStartEvent(
            type="content_block_start",
            index=0,
            content_block=t.ThinkingBlock(type="thinking", thinking="", signature=""),
        ),
        t.RawContentBlockDeltaEvent(
            type="content_block_delta",
            index=0,
            delta=t.ThinkingDelta(type="thinking_delta", thinking="Paris, so get_weather."),
        ),
        t.RawContentBlockDeltaEvent(
            type="content_block_delta",
            index=0,
            delta=t.SignatureDelta(type="signature_delta", signature="EqQBCkgIARABGAIiQL"),
        ),
        t.RawContentBlockStopEvent(type="content_block_stop", index=0),
        t.RawContentBlockStartEvent(
            type="content_block_start", index=1, content_block=t.TextBlock(type="text", text="")
        ),
        t.RawContentBlockDeltaEvent(
            type="content_block_delta", index=1, delta=t.TextDelta(type="text_delta", text="Checking.")
        ),
        t.RawContentBlockStopEvent(type="content_block_stop", index=1),
        t.RawContentBlockStartEvent(
            type="content_block_start",
            index=2,
            content_block=t.ToolUseBlock(type="tool_use", id="toolu_1", name="get_weather", input={}),
        ),
        t.RawContentBlockDeltaEvent(
            type="content_block_delta",
            index=2,
            delta=t.InputJSONDelta(type="input_json_delta", partial_json='{"city": '),
        ),
        t.RawContentBlockDeltaEvent(
            type="content_block_delta",
            index=2,
            delta=t.InputJSONDelta(type="input_json_delta", partial_json='"Paris"}'),
        ),
        t.RawContentBlockStopEvent(type="content_block_stop", index=2),
        t.RawMessageDeltaEvent(
            type="message_delta",
            delta={"stop_reason": "tool_use"},
            usage=t.MessageDeltaUsage(output_tokens=25),
        ),  # type: ignore[arg-type]
        t.RawMessageStopEvent(type="message_stop"),
    ]
    _sse_reply(wire, [(e.type, e.model_dump(mode="json")) for e in events])  # type: ignore[attr-defined]

    responses = await collect(
        AnthropicModel("claude-opus-4-7", api_key=SECRET, http_client=wire.client),
        weather_history(),
        stream=True,
    )

    assert [r.content.parts[0].text for r in responses if r.partial and r.content] == [
        "Paris, so get_weather.",
        "Checking.",
    ]
    assert responses[-1].content == EXPECTED_TURN


async def test_an_anthropic_sdk_stream_keeps_omitted_and_redacted_thinking(wire: Wire) -> None:
    # An omitted thinking block streams a signature and no text; a redacted one arrives whole in
    # content_block_start. Both must reach the turn, to go back with the tool result.
    start = _anthropic_message().model_copy(update={"content": [], "stop_reason": None})
    t = anthropic_types
    events: list[BaseModel] = [
        t.RawMessageStartEvent(type="message_start", message=start),
        t.RawContentBlockStartEvent(
            type="content_block_start",
            index=0,
            content_block=t.ThinkingBlock(type="thinking", thinking="", signature=""),
        ),
        t.RawContentBlockDeltaEvent(
            type="content_block_delta",
            index=0,
            delta=t.SignatureDelta(type="signature_delta", signature="EqQBCkgIARABGAIiQL"),
        ),
        t.RawContentBlockStopEvent(type="content_block_stop", index=0),
        t.RawContentBlockStartEvent(
            type="content_block_start",
            index=1,
            content_block=t.RedactedThinkingBlock(type="redacted_thinking", data="RW5jcnlwdGVk"),
        ),
        t.RawContentBlockStopEvent(type="content_block_stop", index=1),
        t.RawContentBlockStartEvent(
            type="content_block_start",
            index=2,
            content_block=t.ToolUseBlock(type="tool_use", id="toolu_1", name="get_weather", input={}),
        ),
        t.RawContentBlockDeltaEvent(
            type="content_block_delta",
            index=2,
            delta=t.InputJSONDelta(type="input_json_delta", partial_json='{"city": "Paris"}'),
        ),
        t.RawContentBlockStopEvent(type="content_block_stop", index=2),
        t.RawMessageDeltaEvent(
            type="message_delta",
            delta={"stop_reason": "tool_use"},
            usage=t.MessageDeltaUsage(output_tokens=25),
        ),
        t.RawMessageStopEvent(type="message_stop"),
    ]
    _sse_reply(wire, [(e.type, e.model_dump(mode="json")) for e in events])  # type: ignore[attr-defined]

    responses = await collect(
        AnthropicModel("claude-opus-4-7", api_key=SECRET, http_client=wire.client),
        weather_history(),
        stream=True,
    )

    assert responses[-1].content == Content(
        role="model",
        parts=[
            Part(text="", thought=True, thought_signature=b"EqQBCkgIARABGAIiQL"),
            Part(thought=True, thought_signature=b"RW5jcnlwdGVk"),
            Part(function_call=FunctionCall(name="get_weather", args={"city": "Paris"}, id="toolu_1")),
        ],
    )


def _openai_completion() -> openai_types.ChatCompletion:
    tool_call = openai_types.ChatCompletionMessageFunctionToolCall(
        id="call_1",
        type="function",
        function={"name": "get_weather", "arguments": '{"city": "Paris"}'},  # type: ignore[arg-type]
    )
    message = openai_types.ChatCompletionMessage(
        role="assistant", content="Checking.", tool_calls=[tool_call]
    )
    return openai_types.ChatCompletion(
        id="chatcmpl-1",
        object="chat.completion",
        created=1,
        model="gpt-5",
        choices=[openai_types.chat_completion.Choice(index=0, message=message, finish_reason="tool_calls")],
        usage={
            "prompt_tokens": 30,
            "completion_tokens": 20,
            "total_tokens": 50,
            "completion_tokens_details": {"reasoning_tokens": 12},
        },  # type: ignore[arg-type]
    )


async def test_an_openai_sdk_completion_parses(wire: Wire) -> None:
    _json_reply(wire, _openai_completion())

    [response] = await collect(
        OpenAIModel("gpt-5", api_key=SECRET, http_client=wire.client), weather_history()
    )

    assert response.content == Content(
        role="model",
        parts=[
            Part(text="Checking."),
            Part(function_call=FunctionCall(name="get_weather", args={"city": "Paris"}, id="call_1")),
        ],
    )
    assert response.usage_metadata is not None and response.usage_metadata.thoughts_token_count == 12


async def test_an_openai_sdk_chunk_stream_parses(wire: Wire) -> None:
    chunk = openai_types.ChatCompletionChunk
    deltas: list[dict[str, Any]] = [
        {"role": "assistant", "content": "Check"},
        {"content": "ing."},
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city"'},
                }
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": ': "Paris"}'}}]},
    ]
    chunks = [
        chunk.model_validate(
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "gpt-5",
                "choices": [{"index": 0, "delta": d, "finish_reason": None}],
            }
        )
        for d in deltas
    ]
    chunks.append(
        chunk.model_validate(
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "gpt-5",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
            }
        )
    )
    chunks.append(
        chunk.model_validate(
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "gpt-5",
                "choices": [],
                "usage": {"prompt_tokens": 30, "completion_tokens": 20, "total_tokens": 50},
            }
        )
    )
    _sse_reply(wire, [(None, c.model_dump(mode="json", exclude_unset=True)) for c in chunks])

    responses = await collect(
        OpenAIModel("gpt-5", api_key=SECRET, http_client=wire.client), weather_history(), stream=True
    )

    final = responses[-1]
    assert final.content == Content(
        role="model",
        parts=[
            Part(text="Checking."),
            Part(function_call=FunctionCall(name="get_weather", args={"city": "Paris"}, id="call_1")),
        ],
    )
    assert final.usage_metadata is not None and final.usage_metadata.total_token_count == 50


def _gemini_response() -> genai.GenerateContentResponse:
    parts = [
        genai.Part(text="Paris, so get_weather.", thought=True),
        genai.Part(
            function_call=genai.FunctionCall(name="get_weather", args={"city": "Paris"}, id="fc_1"),
            thought_signature=b"sig-2",
        ),
    ]
    return genai.GenerateContentResponse(
        candidates=[
            genai.Candidate(
                content=genai.Content(role="model", parts=parts), finish_reason=genai.FinishReason.STOP
            )
        ],
        usage_metadata=genai.GenerateContentResponseUsageMetadata(
            prompt_token_count=30, candidates_token_count=10, thoughts_token_count=8, total_token_count=48
        ),
        model_version="gemini-2.5-flash",
    )


async def test_a_gemini_sdk_response_parses_and_its_signature_goes_back(wire: Wire) -> None:
    _json_reply(wire, _gemini_response(), by_alias=True, exclude_none=True)
    model = GeminiModel("gemini-2.5-flash", api_key=SECRET, http_client=wire.client)

    [response] = await collect(model, weather_history())

    assert response.content is not None
    thought, call = response.content.parts
    assert thought.thought and thought.text == "Paris, so get_weather."
    assert call.function_call is not None and call.function_call.args == {"city": "Paris"}
    assert call.thought_signature == b"sig-2"
    assert response.usage_metadata is not None and response.usage_metadata.thoughts_token_count == 8
    # The next request carries the signature back on the part that had it, as the SDK would send it.
    request = weather_history()
    request.contents[1] = response.content
    sent = model.build_request(request)["contents"][1]["parts"][1]
    assert genai.Part.model_validate_json(json.dumps(sent)).thought_signature == b"sig-2"
