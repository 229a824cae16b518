from __future__ import annotations

import base64

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
    simple_request,
    weather_history,
)

from adk_core.errors import ModelError
from adk_core.models import GenerateContentConfig, LlmRequest
from adk_core.models.gemini import GeminiModel
from adk_core.types import Content, Part

BASE = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash"
SIGNATURE = base64.b64decode("CiRzaWctZm9yLWdldF93ZWF0aGVyLWNhbGwtMDAwMQ==")


def gemini(wire: Wire) -> GeminiModel:
    return GeminiModel("gemini-2.5-flash", api_key=SECRET, http_client=wire.client)


async def test_text_response(wire: Wire) -> None:
    wire.reply("gemini_text.json")

    [response] = await collect(gemini(wire), simple_request())

    assert str(wire.request.url) == f"{BASE}:generateContent"
    assert wire.request.headers["x-goog-api-key"] == SECRET
    assert wire.body == {
        "contents": [{"role": "user", "parts": [{"text": "What is the capital of France?"}]}]
    }
    assert response.content == Content.model("The capital of France is Paris.")
    assert response.finish_reason == "STOP"
    assert response.turn_complete and not response.partial
    assert response.model_version == "gemini-2.5-flash"
    usage = response.usage_metadata
    assert usage is not None
    assert (usage.prompt_token_count, usage.candidates_token_count, usage.total_token_count) == (8, 7, 35)
    assert usage.thoughts_token_count == 20


async def test_function_call_response_keeps_thought_signature(wire: Wire) -> None:
    wire.reply("gemini_function_call.json")

    [response] = await collect(gemini(wire), weather_history())

    assert response.content is not None
    [part] = response.content.parts
    assert part.function_call is not None
    assert (part.function_call.name, part.function_call.args) == ("get_weather", {"city": "Paris"})
    assert part.thought_signature == SIGNATURE


async def test_request_serializes_history_system_instruction_and_tools(wire: Wire) -> None:
    wire.reply("gemini_text.json")

    await collect(gemini(wire), weather_history())

    assert wire.body == {
        "contents": [
            {"role": "user", "parts": [{"text": "What's the weather in Paris?"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "Let me check."},
                    {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "get_weather",
                            "response": {"temp_c": 18, "conditions": "cloudy"},
                            "id": "call_1",
                        }
                    }
                ],
            },
        ],
        "systemInstruction": {"parts": [{"text": "You are a weather assistant."}]},
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "Current weather for a city.",
                        "parametersJsonSchema": WEATHER_SCHEMA,
                    }
                ]
            }
        ],
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
        "generationConfig": {"temperature": 0.2, "maxOutputTokens": 256},
    }


async def test_request_maps_generation_config_media_and_extra(wire: Wire) -> None:
    wire.reply("gemini_text.json")
    request = LlmRequest(
        contents=[
            Content(
                role="user",
                parts=[
                    Part.from_bytes(b"\x89PNG", "image/png"),
                    Part(thought=True, text="earlier reasoning", thought_signature=SIGNATURE),
                ],
            )
        ],
        config=GenerateContentConfig(
            tools=[WEATHER_TOOL],
            tool_choice="get_weather",
            top_p=0.9,
            top_k=40,
            stop_sequences=["END"],
            seed=7,
            response_schema=WEATHER_SCHEMA,
            extra={
                "generationConfig": {"thinkingConfig": {"thinkingBudget": 0}},
                "cachedContent": "cachedContents/abc",
            },
        ),
    )

    await collect(gemini(wire), request)

    body = wire.body
    assert body["contents"][0]["parts"] == [
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw=="}},
        {
            "text": "earlier reasoning",
            "thought": True,
            "thoughtSignature": "CiRzaWctZm9yLWdldF93ZWF0aGVyLWNhbGwtMDAwMQ==",
        },
    ]
    assert body["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}
    }
    assert body["generationConfig"] == {
        "topP": 0.9,
        "topK": 40,
        "stopSequences": ["END"],
        "seed": 7,
        "responseMimeType": "application/json",
        "responseJsonSchema": WEATHER_SCHEMA,
        "thinkingConfig": {"thinkingBudget": 0},
    }
    assert body["cachedContent"] == "cachedContents/abc"


async def test_streaming_yields_partials_then_one_aggregated_response(wire: Wire) -> None:
    wire.reply("gemini_stream.sse")

    responses = await collect(gemini(wire), weather_history(), stream=True)

    assert str(wire.request.url) == f"{BASE}:streamGenerateContent?alt=sse"
    *partials, final = responses
    assert [
        (r.partial, r.content.parts[0].text, r.content.parts[0].thought) for r in partials if r.content
    ] == [
        (True, "**Checking the forecast**\n\nThe user wants current conditions in Paris.", True),
        (True, "Let me check", None),
        (True, " the weather in Paris.", None),
    ]
    assert not final.partial and final.turn_complete
    assert final.content is not None
    thought, text, call = final.content.parts
    assert thought.thought and text.text == "Let me check the weather in Paris."
    assert call.function_call is not None and call.function_call.args == {"city": "Paris"}
    assert call.thought_signature == SIGNATURE
    assert final.finish_reason == "STOP"
    assert final.usage_metadata is not None and final.usage_metadata.candidates_token_count == 24


async def test_blocked_prompt_becomes_error_code(wire: Wire) -> None:
    wire.reply("gemini_blocked.json")

    [response] = await collect(gemini(wire), simple_request())

    assert response.content is None
    assert response.error_code == "PROHIBITED_CONTENT"
    assert response.error_message


@error_cases(
    "gemini",
    [
        ("gemini_error_400.json", 400, {}, False, None, "contents is not specified"),
        ("gemini_error_429.json", 429, {"Retry-After": "20"}, True, 20.0, "You exceeded your current quota"),
        ("gemini_error_429.json", 429, {}, True, 37.0, "RESOURCE_EXHAUSTED"),
        ("gemini_error_500.json", 500, {}, True, None, "An internal error has occurred"),
    ],
)
@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
async def test_http_errors_map_to_model_error(
    wire: Wire, fixture: str, status: int, headers: dict[str, str], retryable: bool,
    retry_after: float | None, message: str, stream: bool,
) -> None:  # fmt: skip
    case = (fixture, status, headers, retryable, retry_after, message)
    await expect_model_error(gemini(wire), wire, case, stream=stream, provider="gemini")


async def test_api_key_travels_in_a_header_and_never_in_url_errors_or_repr(wire: Wire) -> None:
    model = gemini(wire)
    wire.reply("gemini_error_api_key.json", 400)
    with pytest.raises(ModelError) as caught:
        await collect(model, simple_request())
    assert "key=" not in str(wire.request.url) and SECRET not in str(wire.request.url)
    assert wire.request.headers["x-goog-api-key"] == SECRET
    assert "API key not valid" in str(caught.value) and SECRET not in str(caught.value)
    assert SECRET not in repr(model)

    # Even a proxy that echoes the key back does not get it into our error.
    wire.reply_raw(httpx.Response(502, text=f"upstream rejected key {SECRET}"))
    with pytest.raises(ModelError) as caught:
        await collect(model, simple_request())
    assert SECRET not in str(caught.value) and caught.value.retryable


async def test_missing_key_names_the_env_vars(wire: Wire, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModelError) as caught:
        await collect(GeminiModel("gemini-2.5-flash", http_client=wire.client), simple_request())
    assert "GOOGLE_API_KEY" in str(caught.value) and not caught.value.retryable
    assert wire.requests == []

    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    wire.reply("gemini_text.json")
    await collect(GeminiModel("gemini-2.5-flash", http_client=wire.client), simple_request())
    assert wire.request.headers["x-goog-api-key"] == SECRET
