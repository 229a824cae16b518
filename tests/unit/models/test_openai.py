from __future__ import annotations

import json

import httpx
import pytest
from model_wire import (
    SECRET,
    WEATHER_SCHEMA,
    WEATHER_TOOL,
    Wire,
    collect,
    error_cases,
    expect_model_error,
    payload,
    simple_request,
    weather_history,
)

from adk_core.errors import ModelError
from adk_core.models import GenerateContentConfig, LlmRequest
from adk_core.models.openai import OpenAIModel
from adk_core.models.pricing import PriceTable
from adk_core.types import Content, Part

URL = "https://api.openai.com/v1/chat/completions"


def gpt(wire: Wire) -> OpenAIModel:
    return OpenAIModel("gpt-4o", api_key=SECRET, http_client=wire.client)


async def test_text_response(wire: Wire) -> None:
    wire.reply("openai_text.json")

    [response] = await collect(gpt(wire), simple_request())

    assert str(wire.request.url) == URL
    assert wire.request.headers["authorization"] == f"Bearer {SECRET}"
    assert wire.body == {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "What is the capital of France?"}],
    }
    assert response.content == Content.model("The capital of France is Paris.")
    assert response.finish_reason == "STOP" and response.turn_complete
    assert response.model_version == "gpt-4o-2024-08-06"
    assert response.usage_metadata is not None
    assert response.usage_metadata.model_dump() == {
        "prompt_token_count": 19,
        "candidates_token_count": 8,
        "total_token_count": 27,
        "thoughts_token_count": 0,
        "cached_content_token_count": 0,
        "cache_creation_token_count": None,
    }


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
async def test_reasoning_tokens_are_counted_once(wire: Wire, stream: bool) -> None:
    # completion_tokens (1000) already includes reasoning_tokens (900). UsageMetadata counts as
    # Gemini does, candidates without thoughts, and pricing and metrics add the two.
    if stream:
        usage = json.loads(payload("openai_reasoning.json"))["usage"]
        chunks = [
            {"choices": [{"index": 0, "delta": {"content": "The capital of France is Paris."}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {"choices": [], "usage": usage},
        ]
        sse = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
        wire.reply_raw(httpx.Response(200, headers={"content-type": "text/event-stream"}, text=sse))
    else:
        wire.reply("openai_reasoning.json")

    *_, response = await collect(
        OpenAIModel("o4-mini", api_key=SECRET, http_client=wire.client), simple_request(), stream=stream
    )

    assert response.usage_metadata is not None
    assert response.usage_metadata.model_dump() == {
        "prompt_token_count": 30,
        "candidates_token_count": 100,
        "total_token_count": 1030,
        "thoughts_token_count": 900,
        "cached_content_token_count": 0,
        "cache_creation_token_count": None,
    }
    # 1000 output tokens billed, not 1900.
    cost = PriceTable.default().cost("o4-mini", response.usage_metadata)
    assert cost == pytest.approx((30 * 1.10 + 1000 * 4.40) / 1e6)


async def test_tool_call_response(wire: Wire) -> None:
    wire.reply("openai_tool_calls.json")

    [response] = await collect(gpt(wire), weather_history())

    assert response.content is not None
    [call] = response.content.function_calls()
    assert call.model_dump() == {
        "name": "get_weather",
        "args": {"city": "Paris"},
        "id": "call_DdmO9pD3xa9XTPNJ32zg2hcA",
    }
    assert response.finish_reason == "STOP"


async def test_request_serializes_history_system_instruction_and_tools(wire: Wire) -> None:
    wire.reply("openai_text.json")

    await collect(gpt(wire), weather_history())

    assert wire.body == {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "You are a weather assistant."},
            {"role": "user", "content": "What's the weather in Paris?"},
            {
                "role": "assistant",
                "content": "Let me check.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 18, "conditions": "cloudy"}'},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "parameters": WEATHER_SCHEMA,
                },
            }
        ],
        "tool_choice": "auto",
        "temperature": 0.2,
        "max_completion_tokens": 256,
    }


async def test_missing_call_ids_are_synthesised_and_paired(wire: Wire) -> None:
    wire.reply("openai_text.json")

    await collect(gpt(wire), weather_history(call_id=None))

    messages = wire.body["messages"]
    assert messages[2]["tool_calls"][0]["id"] == "call_1_get_weather"
    assert messages[3]["tool_call_id"] == "call_1_get_weather"


@pytest.mark.parametrize(
    ("choice", "wire_choice"),
    [
        ("none", "none"),
        ("required", "required"),
        ("get_weather", {"type": "function", "function": {"name": "get_weather"}}),
    ],
)
async def test_tool_choice_mapping(wire: Wire, choice: str, wire_choice: object) -> None:
    wire.reply("openai_text.json")
    request = LlmRequest(
        contents=[Content.user("hi")], config=GenerateContentConfig(tools=[WEATHER_TOOL], tool_choice=choice)
    )

    await collect(gpt(wire), request)

    assert wire.body["tool_choice"] == wire_choice


async def test_compatible_server_without_key(wire: Wire, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1/")
    wire.reply("openai_text.json")
    request = LlmRequest(
        contents=[
            Content(role="user", parts=[Part(text="Describe:"), Part.from_bytes(b"\x89PNG", "image/png")])
        ],
        config=GenerateContentConfig(
            max_output_tokens=100, response_schema=WEATHER_SCHEMA, extra={"keep_alive": "5m"}
        ),
    )

    await collect(OpenAIModel("openai/llama3.2", http_client=wire.client), request)

    assert str(wire.request.url) == "http://localhost:11434/v1/chat/completions"
    assert "authorization" not in wire.request.headers
    assert wire.body == {
        "model": "llama3.2",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Describe:"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
                ],
            }
        ],
        "max_tokens": 100,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": WEATHER_SCHEMA},
        },
        "keep_alive": "5m",
    }


async def test_openai_itself_needs_a_key(wire: Wire) -> None:
    with pytest.raises(ModelError, match="OPENAI_API_KEY") as caught:
        await collect(OpenAIModel("gpt-4o", http_client=wire.client), simple_request())
    assert not caught.value.retryable and wire.requests == []


async def test_arguments_that_are_not_json_become_malformed_function_call(wire: Wire) -> None:
    wire.reply("openai_malformed_tool_call.json")

    model = OpenAIModel("openai/llama3.2", base_url="http://localhost:11434/v1", http_client=wire.client)
    [response] = await collect(model, weather_history())

    assert response.error_code == "MALFORMED_FUNCTION_CALL"
    assert response.error_message is not None and "get_weather" in response.error_message
    assert response.content is None


async def test_streaming_yields_partials_then_one_aggregated_response(wire: Wire) -> None:
    wire.reply("openai_stream.sse")

    *partials, final = await collect(gpt(wire), weather_history(), stream=True)

    assert wire.body["stream"] is True and wire.body["stream_options"] == {"include_usage": True}
    assert [(r.partial, r.content.text) for r in partials if r.content] == [
        (True, "Let me check"),
        (True, " the weather in Paris."),
    ]
    assert not final.partial and final.turn_complete and final.content is not None
    text, call = final.content.parts
    assert text.text == "Let me check the weather in Paris."
    assert call.function_call is not None
    assert call.function_call.model_dump() == {
        "name": "get_weather",
        "args": {"city": "Paris"},
        "id": "call_8jLpQ2mV5nX7rT1wY3zB6cD9",
    }
    assert final.finish_reason == "STOP"
    assert final.usage_metadata is not None and final.usage_metadata.total_token_count == 106


async def test_streamed_arguments_that_are_not_json_become_malformed_function_call(wire: Wire) -> None:
    chunks = [
        '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_x","type":"function",'
        '"function":{"name":"get_weather","arguments":"{\\"city\\": "}}]}}]}',
        '{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}',
        "[DONE]",
    ]
    sse = "".join(f"data: {chunk}\n\n" for chunk in chunks)
    wire.reply_raw(httpx.Response(200, headers={"content-type": "text/event-stream"}, text=sse))

    [final] = await collect(gpt(wire), simple_request(), stream=True)

    assert final.error_code == "MALFORMED_FUNCTION_CALL" and final.content is None


@error_cases(
    "openai",
    [
        ("openai_error_400.json", 400, {}, False, None, "must be a response to a preceeding message"),
        ("openai_error_429.json", 429, {"retry-after": "2"}, True, 2.0, "Rate limit reached for gpt-4o"),
        ("openai_error_429.json", 429, {"retry-after-ms": "776"}, True, 0.776, "wait 0.776s"),
        ("openai_error_500.json", 500, {}, True, None, "The server had an error"),
    ],
)
@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
async def test_http_errors_map_to_model_error(
    wire: Wire, fixture: str, status: int, headers: dict[str, str], retryable: bool,
    retry_after: float | None, message: str, stream: bool,
) -> None:  # fmt: skip
    case = (fixture, status, headers, retryable, retry_after, message)
    await expect_model_error(gpt(wire), wire, case, stream=stream, provider="openai")


async def test_api_key_never_in_url_errors_or_repr(wire: Wire) -> None:
    model = gpt(wire)
    wire.reply("openai_error_401.json", 401)

    with pytest.raises(ModelError) as caught:
        await collect(model, simple_request())

    assert SECRET not in str(wire.request.url)
    assert "Incorrect API key provided" in str(caught.value) and SECRET not in str(caught.value)
    assert not caught.value.retryable and caught.value.error_type == "invalid_request_error"
    assert SECRET not in repr(model)
