"""OpenAI-compatible servers (issue 23, item 5): vLLM, Ollama, OpenRouter and a LiteLLM proxy by base
URL, with the rules table applied by model family.

No pip package runs any of these servers cheaply (vLLM needs torch and weights, Ollama is a binary,
LiteLLM's proxy pulls in a large stack), so the answers are payloads written from each server's
documented response shape (payloads/vllm_*, ollama_*, openrouter_*): vLLM's ``reasoning`` field,
Ollama's empty content beside tool calls, OpenRouter's extra fields and cached-token usage. Every
request body is held to the openai SDK's CompletionCreateParams, as OpenAI's own are.
"""

from __future__ import annotations

import json
import logging

import pytest
from model_wire import SECRET, WEATHER_TOOL, Wire, collect, simple_request, weather_history
from sdk_types import check_openai

from adk_core.errors import ConfigurationError
from adk_core.models import GenerateContentConfig, LlmRequest, ThinkingConfig, register_model, resolve_model
from adk_core.models.openai import OpenAIModel, split_server
from adk_core.models.rules import reset_for_tests
from adk_core.types import Content

VLLM = "http://localhost:8000/v1"
OLLAMA = "http://localhost:11434/v1"
OPENROUTER = "https://openrouter.ai/api/v1"
LITELLM = "http://localhost:4000/v1"


@pytest.fixture(autouse=True)
def _fresh_rules() -> None:
    reset_for_tests()  # so each test sees its warnings


def _checked(wire: Wire, *, stream: bool = False) -> dict:
    body = wire.body
    check_openai(body, body["model"], stream=stream)
    return body


def test_the_server_can_be_part_of_the_model_name() -> None:
    assert split_server("openai/qwen3@http://localhost:8000/v1") == ("openai/qwen3", VLLM)
    assert split_server("openai/team@alias") == ("openai/team@alias", None)
    assert split_server("gpt-4o@https://x") == ("gpt-4o@https://x", None), "only compatible names carry one"

    model = resolve_model(f"openai/llama3.2@{OLLAMA}")

    assert model.name == "openai/llama3.2"
    assert repr(model) == f"OpenAIModel(model='openai/llama3.2', base_url='{OLLAMA}')"
    with pytest.raises(ConfigurationError, match="give one of them"):
        OpenAIModel(f"openai/llama3.2@{OLLAMA}", base_url=VLLM)


async def test_vllm_reasoning_comes_back_as_thoughts(wire: Wire) -> None:
    wire.reply("vllm_reasoning.json")
    model = OpenAIModel(f"openai/Qwen/Qwen3-8B@{VLLM}", http_client=wire.client)

    [response] = await collect(model, simple_request("9.11 and 9.8, which is greater?"))

    assert str(wire.request.url) == f"{VLLM}/chat/completions" and "authorization" not in wire.request.headers
    assert _checked(wire)["model"] == "Qwen/Qwen3-8B"
    assert response.content is not None
    thought, answer = response.content.parts
    assert thought.thought and thought.text == "Compare the decimals: 9.80 against 9.11, so 9.8 is larger."
    assert answer.text == "9.8 is greater than 9.11." and not answer.thought


async def test_vllm_streams_reasoning_then_the_answer(wire: Wire) -> None:
    wire.reply("vllm_reasoning_stream.sse")
    model = OpenAIModel("openai/Qwen/Qwen3-8B", base_url=VLLM, http_client=wire.client)

    *partials, final = await collect(model, simple_request(), stream=True)

    _checked(wire, stream=True)
    assert [(p.content.parts[0].thought, p.content.parts[0].text) for p in partials if p.content] == [
        (True, "Compare the decimals: "),
        (True, "9.80 against 9.11."),
        (None, "9.8 is greater."),
    ]
    assert final.content is not None and final.content.text == "9.8 is greater."
    assert final.usage_metadata is not None and final.usage_metadata.total_token_count == 40


async def test_an_unknown_model_gets_only_what_the_chat_api_takes(
    wire: Wire, caplog: pytest.LogCaptureFixture
) -> None:
    wire.reply("ollama_tool_calls.json")
    config = GenerateContentConfig(
        tools=[WEATHER_TOOL], temperature=0.2, top_k=40, max_output_tokens=200,
        thinking=ThinkingConfig(effort="low"),
    )  # fmt: skip
    model = OpenAIModel(f"openai/llama3.2@{OLLAMA}", http_client=wire.client)

    with caplog.at_level(logging.WARNING, logger="adk_core.models"):
        [response] = await collect(
            model, LlmRequest(contents=[Content.user("Weather in Paris?")], config=config)
        )

    body = _checked(wire)
    # top_k is not a Chat Completions field and llama3.2 has no reasoning setting: both left out, said once.
    assert "top_k" not in body and "reasoning_effort" not in body
    assert body["temperature"] == 0.2 and body["max_tokens"] == 200 and "max_completion_tokens" not in body
    assert {r.getMessage().split("'")[3] for r in caplog.records} == {"thinking", "top_k"}
    assert response.content is not None
    [call] = response.content.function_calls()
    assert (call.name, call.args, call.id) == ("get_weather", {"city": "Paris"}, "call_p0cz7a1d")
    assert not response.content.text, "Ollama's empty content beside tool calls is no text part"


async def test_an_open_weight_reasoning_model_gets_its_reasoning_effort(wire: Wire) -> None:
    wire.reply("vllm_reasoning.json")
    config = GenerateContentConfig(thinking=ThinkingConfig(effort="max"), max_output_tokens=300)
    model = OpenAIModel("openai/openai/gpt-oss-20b", base_url=VLLM, http_client=wire.client)

    await collect(model, LlmRequest(contents=[Content.user("hi")], config=config))

    body = _checked(wire)
    assert body["model"] == "openai/gpt-oss-20b"
    assert body["reasoning_effort"] == "high" and body["max_tokens"] == 300


async def test_openrouter_applies_the_claude_rules_to_its_dotted_names(
    wire: Wire, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", OPENROUTER)
    wire.reply("openrouter_cached.json")
    config = GenerateContentConfig(temperature=0.2, max_output_tokens=100)

    [response] = await collect(
        OpenAIModel("openai/anthropic/claude-opus-4.7", http_client=wire.client),
        LlmRequest(contents=[Content.user("Capital of France?")], config=config),
    )

    assert str(wire.request.url) == f"{OPENROUTER}/chat/completions"
    assert wire.request.headers["authorization"] == f"Bearer {SECRET}"
    body = _checked(wire)
    # claude-opus-4.7 is claude-opus-4-7 in the table: no temperature (a 400 from Anthropic behind it).
    assert body["model"] == "anthropic/claude-opus-4.7" and "temperature" not in body
    assert response.usage_metadata is not None
    assert response.usage_metadata.cached_content_token_count == 2048
    assert response.content is not None and response.content.text == "The capital of France is Paris."


async def test_a_litellm_proxy_alias_takes_the_rules_its_user_registers(wire: Wire) -> None:
    # A LiteLLM proxy serves its config's aliases; an alias the table cannot know gets a row of its own.
    from adk_core.models import ModelRules, register_model_rules

    register_model_rules(ModelRules(r"team-reasoner", accepts=frozenset({"seed"}), thinking="effort",
                                    token_limit_field="max_completion_tokens"))  # fmt: skip
    register_model("team-.*", lambda name: OpenAIModel(f"openai/{name}@{LITELLM}", api_key="sk-litellm",
                                                       http_client=wire.client))  # fmt: skip
    wire.reply("openai_text.json")
    request = weather_history()
    request.config.thinking = ThinkingConfig(effort="medium")

    await collect(resolve_model("team-reasoner"), request)

    body = _checked(wire)
    assert str(wire.request.url) == f"{LITELLM}/chat/completions"
    assert body["model"] == "team-reasoner" and body["reasoning_effort"] == "medium"
    assert "temperature" not in body and body["max_completion_tokens"] == 256
    assert json.loads(wire.request.content)["tools"][0]["function"]["name"] == "get_weather"
