"""Every body our adapters build is one the official SDKs' request types describe (issue 23, item 1).

The adapters are hand-written httpx clients; these tests hold them to ``anthropic``'s
MessageCreateParams, ``openai``'s CompletionCreateParams and ``google-genai``'s Content / Tool /
ToolConfig / GenerationConfig, unknown keys refused (sdk_types.py says how). A provider adding or
renaming a field shows up here when the SDKs in the test extra are upgraded.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from anthropic.types.message_create_params import MessageCreateParamsBase, MessageCreateParamsNonStreaming
from model_wire import SECRET, WEATHER_SCHEMA, WEATHER_TOOL, Wire, collect, simple_request, weather_history
from sdk_types import (
    LEGACY_ANTHROPIC_SAMPLING,
    SdkTypeError,
    check_anthropic,
    check_gemini,
    check_gemini_body,
    check_openai,
    check_typed,
)

from adk_core.models import GenerateContentConfig, LlmRequest, PromptCacheConfig, ThinkingConfig
from adk_core.models.anthropic import AnthropicModel
from adk_core.models.gemini import GeminiModel
from adk_core.models.openai import OpenAIModel
from adk_core.types import Content, FileData, Part


def _image_and_pdf() -> LlmRequest:
    return LlmRequest(
        contents=[
            Content(
                role="user",
                parts=[
                    Part(text="Compare these:"),
                    Part.from_bytes(b"\x89PNG\r\n", "image/png"),
                    Part(file_data=FileData(file_uri="https://example.com/cat.jpg", mime_type="image/jpeg")),
                    Part.from_bytes(b"%PDF-1.7", "application/pdf"),
                ],
            )
        ]
    )


def _thinking_tool_loop() -> LlmRequest:
    request = weather_history()
    model_turn = request.contents[1]
    model_turn.parts.insert(0, Part(text="The user wants Paris.", thought=True, thought_signature=b"sig-1"))
    return request


def _every_setting() -> LlmRequest:
    config = GenerateContentConfig(
        system_instruction="Answer in JSON.",
        temperature=0.3,
        top_p=0.9,
        top_k=20,
        seed=7,
        max_output_tokens=300,
        stop_sequences=["END"],
        response_schema=WEATHER_SCHEMA,
        response_mime_type="application/json",
    )
    return LlmRequest(contents=[Content.user("Weather in Paris as JSON")], config=config)


def _prompt_cache() -> LlmRequest:
    request = _thinking_tool_loop()
    request.contents += [Content.model("18°C and cloudy."), Content.user("And tomorrow?")]
    request.config.prompt_cache = PromptCacheConfig(ttl="1h", key="weather-agent")
    return request


def _tool_choice(choice: str) -> Callable[[], LlmRequest]:
    def build() -> LlmRequest:
        config = GenerateContentConfig(tools=[WEATHER_TOOL], tool_choice=choice)
        return LlmRequest(contents=[Content.user("Weather in Paris?")], config=config)

    return build


def _thinking(**settings: Any) -> Callable[[], LlmRequest]:
    def build() -> LlmRequest:
        request = _thinking_tool_loop()
        request.config.thinking = ThinkingConfig(**settings)
        return request

    return build


SCENARIOS: dict[str, Callable[[], LlmRequest]] = {
    "text": simple_request,
    "images-and-pdf": _image_and_pdf,
    "function-calls-and-responses": weather_history,
    "thinking-in-a-tool-loop": _thinking_tool_loop,
    "every-setting": _every_setting,
    "tool-choice-required": _tool_choice("required"),
    "tool-choice-named": _tool_choice("get_weather"),
    "tool-choice-none": _tool_choice("none"),
    "thinking-effort": _thinking(effort="high"),
    "thinking-budget": _thinking(budget_tokens=5000, include_thoughts=False),
    "thinking-off": _thinking(effort="none"),
    "prompt-cache": _prompt_cache,
}


def _anthropic(name: str) -> Callable[[Wire], AnthropicModel]:
    return lambda wire: AnthropicModel(name, api_key=SECRET, http_client=wire.client)


def _openai(name: str) -> Callable[[Wire], OpenAIModel]:
    base_url = "http://localhost:11434/v1" if name.startswith("openai/") else None
    return lambda wire: OpenAIModel(name, api_key=SECRET, base_url=base_url, http_client=wire.client)


def _gemini(name: str) -> Callable[[Wire], GeminiModel]:
    return lambda wire: GeminiModel(name, api_key=SECRET, http_client=wire.client)


PROVIDERS: dict[str, tuple[Callable[[Wire], Any], Callable[..., None], str]] = {
    "claude-sonnet-4-5": (_anthropic("claude-sonnet-4-5"), check_anthropic, "anthropic_stream.sse"),
    "claude-opus-4-7": (_anthropic("claude-opus-4-7"), check_anthropic, "anthropic_stream.sse"),
    "gpt-4o": (_openai("gpt-4o"), check_openai, "openai_stream.sse"),
    "gpt-5": (_openai("gpt-5"), check_openai, "openai_stream.sse"),
    "openai/llama3.2": (_openai("openai/llama3.2"), check_openai, "openai_stream.sse"),
    "openai/gpt-oss:20b": (_openai("openai/gpt-oss:20b"), check_openai, "vllm_reasoning_stream.sse"),
    "gemini-2.5-flash": (_gemini("gemini-2.5-flash"), check_gemini, "gemini_stream.sse"),
}


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_request_body_is_an_sdk_request(wire: Wire, provider: str, scenario: str) -> None:
    build, check, _ = PROVIDERS[provider]
    model = build(wire)
    body = json.loads(json.dumps(model.build_request(SCENARIOS[scenario]())))

    check(body, model.name, stream=False)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_streamed_request_body_is_an_sdk_streaming_request(wire: Wire, provider: str) -> None:
    build, check, fixture = PROVIDERS[provider]
    wire.reply(fixture)

    await collect(build(wire), weather_history(), stream=True)

    check(wire.body, provider, stream=True)
    if provider.startswith("claude"):
        assert wire.body["stream"] is True


def test_the_anthropic_sdk_type_has_no_sampling_fields() -> None:
    # Why LEGACY_ANTHROPIC_SAMPLING exists; when the SDK declares them again it can go.
    assert not set(LEGACY_ANTHROPIC_SAMPLING) & set(MessageCreateParamsBase.__annotations__)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"model": "m", "max_tokens": 1, "messages": [], "temprature": 0.2}, "has no key ['temprature']"),
        ({"model": "m", "messages": []}, "requires ['max_tokens']"),
        (
            {
                "model": "m",
                "max_tokens": 1,
                "messages": [{"role": "user", "content": [{"type": "text", "txt": "x"}]}],
            },
            "no member of the union",
        ),
        (
            {"model": "m", "max_tokens": 1, "messages": [{"role": "robot", "content": "x"}]},
            "'robot' is not one of",
        ),
    ],
)
def test_the_check_refuses_what_the_sdk_type_does_not_describe(body: dict[str, Any], problem: str) -> None:
    with pytest.raises(SdkTypeError) as refused:
        check_typed(body, MessageCreateParamsNonStreaming)
    assert problem in str(refused.value)


def test_the_gemini_check_refuses_unknown_keys() -> None:
    with pytest.raises(SdkTypeError, match="generationConfig"):
        check_gemini_body({"contents": [], "generationConfig": {"temprature": 0.2}})
    with pytest.raises(SdkTypeError, match="no field"):
        check_gemini_body({"contents": [], "generation_config": {}})
    with pytest.raises(SdkTypeError, match="contents"):
        check_gemini_body({"contents": [{"role": "user", "parts": [{"txt": "x"}]}]})
