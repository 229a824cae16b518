from __future__ import annotations

import json
import logging

import pytest
from model_wire import (
    SECRET,
    WEATHER_SCHEMA,
    WEATHER_TOOL,
    Wire,
    collect,
    error_cases,
    expect_model_error,
    simple_request,
    weather_history,
)

from adk_core.errors import ModelError
from adk_core.models import GenerateContentConfig, LlmRequest, PromptCacheConfig, ThinkingConfig
from adk_core.models.anthropic import AnthropicModel
from adk_core.types import Content, Part

URL = "https://api.anthropic.com/v1/messages"
EPHEMERAL = {"type": "ephemeral"}


def claude(wire: Wire) -> AnthropicModel:
    return AnthropicModel("claude-sonnet-4-5", api_key=SECRET, http_client=wire.client)


async def test_text_response(wire: Wire) -> None:
    wire.reply("anthropic_text.json")

    [response] = await collect(claude(wire), simple_request())

    assert str(wire.request.url) == URL
    assert wire.request.headers["x-api-key"] == SECRET
    assert wire.request.headers["anthropic-version"] == "2023-06-01"
    # Prompt caching is on by default: the tail is marked, so the next call can read it back.
    question = {"type": "text", "text": "What is the capital of France?", "cache_control": EPHEMERAL}
    assert wire.body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": [question]}],
    }
    assert response.content == Content.model("The capital of France is Paris.")
    assert response.finish_reason == "STOP" and response.turn_complete
    assert response.model_version == "claude-sonnet-4-5-20250929"
    assert response.usage_metadata is not None
    assert response.usage_metadata.model_dump(exclude_none=True) == {
        "prompt_token_count": 14,
        "candidates_token_count": 10,
        "total_token_count": 24,
    }


async def test_tool_use_response(wire: Wire) -> None:
    wire.reply("anthropic_tool_use.json")

    [response] = await collect(claude(wire), weather_history())

    assert response.content is not None
    text, call = response.content.parts
    assert text.text == "I'll check the current weather in Paris for you."
    assert call.function_call is not None
    assert call.function_call.model_dump() == {
        "name": "get_weather",
        "args": {"city": "Paris"},
        "id": "toolu_01A09q90qw90lq917835lq9",
    }
    assert response.usage_metadata is not None
    assert response.usage_metadata.prompt_token_count == 412 + 2048
    assert response.usage_metadata.cached_content_token_count == 2048


async def test_request_serializes_history_system_instruction_and_tools(wire: Wire) -> None:
    wire.reply("anthropic_text.json")

    await collect(claude(wire), weather_history())

    # Four cache breakpoints: the tools, the system instruction, the previous call's tail and this one's.
    assert wire.body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 256,
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "What's the weather in Paris?", "cache_control": EPHEMERAL}],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_1",
                        "content": '{"temp_c": 18, "conditions": "cloudy"}',
                        "cache_control": EPHEMERAL,
                    }
                ],
            },
        ],
        "system": [{"type": "text", "text": "You are a weather assistant.", "cache_control": EPHEMERAL}],
        "tools": [
            {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "input_schema": WEATHER_SCHEMA,
                "cache_control": EPHEMERAL,
            }
        ],
        "tool_choice": {"type": "auto"},
        "temperature": 0.2,
    }


async def test_same_role_contents_merge_and_missing_ids_are_synthesised(wire: Wire) -> None:
    wire.reply("anthropic_text.json")
    request = LlmRequest(
        contents=[
            Content.user("Weather in Paris and Lyon?"),
            Content(role="user", parts=[Part.from_bytes(b"\xff\xd8", "image/jpeg")]),
            Content(
                role="model",
                parts=[
                    Part.from_function_call("get_weather", {"city": "Paris"}),
                    Part.from_function_call("get_weather", {"city": "Lyon"}),
                ],
            ),
            Content(role="user", parts=[Part.from_function_response("get_weather", {"temp_c": 18})]),
            Content(
                role="user",
                parts=[Part(text="Thanks!"), Part.from_function_response("get_weather", {"temp_c": 21})],
            ),
        ],
    )

    await collect(AnthropicModel("claude-sonnet-4-5", api_key=SECRET, http_client=wire.client,
                                 prompt_cache=PromptCacheConfig(enabled=False)), request)

    assert wire.body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Weather in Paris and Lyon?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9g="}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "call_1_get_weather",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
                {
                    "type": "tool_use",
                    "id": "call_2_get_weather",
                    "name": "get_weather",
                    "input": {"city": "Lyon"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1_get_weather", "content": '{"temp_c": 18}'},
                {"type": "tool_result", "tool_use_id": "call_2_get_weather", "content": '{"temp_c": 21}'},
                {"type": "text", "text": "Thanks!"},
            ],
        },
    ]


@pytest.mark.parametrize(
    ("choice", "wire_choice"),
    [
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        ("get_weather", {"type": "tool", "name": "get_weather"}),
    ],
)
async def test_tool_choice_mapping(wire: Wire, choice: str, wire_choice: dict[str, str]) -> None:
    wire.reply("anthropic_text.json")
    request = LlmRequest(
        contents=[Content.user("hi")], config=GenerateContentConfig(tools=[WEATHER_TOOL], tool_choice=choice)
    )

    await collect(claude(wire), request)

    assert wire.body["tool_choice"] == wire_choice


async def test_unsupported_inline_data_is_refused_before_sending(wire: Wire) -> None:
    request = LlmRequest(contents=[Content(role="user", parts=[Part.from_bytes(b"a,b", "text/csv")])])

    with pytest.raises(ModelError, match="text/csv") as caught:
        await collect(claude(wire), request)
    assert not caught.value.retryable and wire.requests == []


async def test_streaming_yields_partials_then_one_aggregated_response(wire: Wire) -> None:
    wire.reply("anthropic_stream.sse")

    *partials, final = await collect(claude(wire), weather_history(), stream=True)

    assert wire.body["stream"] is True
    assert [
        (r.partial, r.content.parts[0].text, r.content.parts[0].thought) for r in partials if r.content
    ] == [
        (True, "The user wants the weather in Paris;", True),
        (True, " I should call get_weather.", True),
        (True, "Let me check", None),
        (True, " the weather in Paris.", None),
    ]
    assert not final.partial and final.turn_complete and final.content is not None
    thought, text, call = final.content.parts
    assert (
        thought.thought and thought.text == "The user wants the weather in Paris; I should call get_weather."
    )
    assert thought.thought_signature == b"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
    assert text.text == "Let me check the weather in Paris."
    assert call.function_call is not None
    assert call.function_call.model_dump() == {
        "name": "get_weather",
        "args": {"city": "Paris"},
        "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
    }
    assert final.finish_reason == "STOP"
    assert final.usage_metadata is not None
    assert (final.usage_metadata.prompt_token_count, final.usage_metadata.candidates_token_count) == (472, 89)


async def test_stream_error_event_raises_retryable_model_error(wire: Wire) -> None:
    wire.reply("anthropic_stream_overloaded.sse")
    seen = []

    with pytest.raises(ModelError) as caught:
        async for response in claude(wire).generate_content(simple_request(), stream=True):
            seen.append(response)

    assert [r.content.text for r in seen if r.content] == ["The"]
    error = caught.value
    assert (error.status, error.retryable, error.error_type) == (529, True, "overloaded_error")
    assert "Overloaded" in str(error)


@error_cases(
    "anthropic",
    [
        ("anthropic_error_400.json", 400, {}, False, None, "Each `tool_result` block must have"),
        ("anthropic_error_429.json", 429, {"retry-after": "17"}, True, 17.0, "exceed the rate limit"),
        (
            "anthropic_error_429.json", 429,
            {"retry-after": "Tue, 21 Oct 2025 07:28:30 GMT", "date": "Tue, 21 Oct 2025 07:28:00 GMT"},
            True, 30.0, "rate_limit_error",
        ),
        ("anthropic_error_500.json", 500, {}, True, None, "Internal server error"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
async def test_http_errors_map_to_model_error(
    wire: Wire, fixture: str, status: int, headers: dict[str, str], retryable: bool,
    retry_after: float | None, message: str, stream: bool,
) -> None:  # fmt: skip
    case = (fixture, status, headers, retryable, retry_after, message)
    await expect_model_error(claude(wire), wire, case, stream=stream, provider="anthropic")


async def test_api_key_never_in_url_errors_or_repr(wire: Wire, monkeypatch: pytest.MonkeyPatch) -> None:
    model = claude(wire)
    wire.reply("anthropic_error_401.json", 401)

    with pytest.raises(ModelError) as caught:
        await collect(model, simple_request())

    assert SECRET not in str(wire.request.url)
    assert "invalid x-api-key" in str(caught.value) and SECRET not in str(caught.value)
    assert not caught.value.retryable
    assert SECRET not in repr(model)

    with pytest.raises(ModelError, match="ANTHROPIC_API_KEY"):
        await collect(AnthropicModel("claude-sonnet-4-5", http_client=wire.client), simple_request())


def test_a_response_schema_goes_out_as_output_config_in_the_subset_claude_takes() -> None:
    from pydantic import BaseModel, Field
    from sdk_types import check_anthropic

    class Leg(BaseModel):
        city: str = Field(max_length=40, description="Where")
        nights: int = Field(ge=1)

    class Trip(BaseModel):
        legs: list[Leg] = Field(min_length=1)
        mode: str | int

    config = GenerateContentConfig(response_schema=Trip.model_json_schema(), thinking=ThinkingConfig(effort="high"))
    body = AnthropicModel("claude-opus-4-7", api_key=SECRET).build_request(
        LlmRequest(contents=[Content.user("Plan it")], config=config)
    )

    check_anthropic(json.loads(json.dumps(body)), "claude-opus-4-7", stream=False)
    assert body["output_config"]["effort"] == "high"
    schema = body["output_config"]["format"]["schema"]
    assert body["output_config"]["format"]["type"] == "json_schema"
    leg = schema["$defs"]["Leg"]
    assert leg["additionalProperties"] is False and schema["additionalProperties"] is False
    # Bounds the API does not take are moved into the description, not dropped.
    assert leg["properties"]["city"] == {"type": "string", "description": "Where\n\n{maxLength: 40}", "title": "City"}
    assert leg["properties"]["nights"]["description"] == "{minimum: 1}"
    assert schema["properties"]["legs"]["minItems"] == 1
    assert schema["properties"]["mode"]["anyOf"] == [{"type": "string"}, {"type": "integer"}]


def test_older_claude_models_and_json_mode_without_a_schema_are_left_out(caplog: pytest.LogCaptureFixture) -> None:
    from adk_core.models.rules import reset_for_tests

    reset_for_tests()
    schema = GenerateContentConfig(response_schema={"type": "object", "properties": {}})
    json_mode = GenerateContentConfig(response_mime_type="application/json")
    with caplog.at_level(logging.WARNING, logger="adk_core.models"):
        old = AnthropicModel("claude-sonnet-4-20250514", api_key=SECRET).build_request(
            LlmRequest(contents=[Content.user("hi")], config=schema)
        )
        plain = AnthropicModel("claude-sonnet-4-5", api_key=SECRET).build_request(
            LlmRequest(contents=[Content.user("hi")], config=json_mode)
        )

    assert "output_config" not in old and "output_config" not in plain
    assert "structured outputs start at Claude Opus 4.1" in caplog.text
    assert "no JSON mode without a schema; give a response_schema" in caplog.text


def test_a_schema_part_without_a_type_is_a_clear_error() -> None:
    from adk_core.errors import ConfigurationError
    from adk_core.models._anthropic_schema import strict_schema

    with pytest.raises(ConfigurationError, match="no usable type"):
        strict_schema({"type": "object", "properties": {"x": {"description": "anything"}}})
