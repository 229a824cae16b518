"""Prompt caching (issue 23, item 4): Anthropic's breakpoints, OpenAI's cache key, cached tokens in
usage and cost, and the share of a 20-turn conversation's input served from (simulated) caches."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import httpx
import pytest
from cache_sim import SimulatedAnthropic, SimulatedGemini, SimulatedOpenAI, run_conversation
from model_wire import SECRET, Wire, collect, simple_request, weather_history
from sdk_types import check_anthropic, check_gemini_body, check_openai

from adk_core.models import GenerateContentConfig, LlmRequest, PromptCacheConfig
from adk_core.models._gemini_cache import PREFIX_FIELDS
from adk_core.models.anthropic import AnthropicModel
from adk_core.models.gemini import GeminiModel
from adk_core.models.openai import OpenAIModel
from adk_core.models.pricing import PriceTable
from adk_core.types import Content, Part

SHARE_FLOOR = 0.85
"""Measured 0.948 for Claude (bench/bench_caching.py); the floor leaves room for wording changes."""


def _marked(body: dict[str, Any]) -> list[str]:
    """Where the body's cache_control markers are, as short paths."""
    where = [f"tools[{i}]" for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    if isinstance(body.get("system"), list):
        where += [f"system[{i}]" for i, b in enumerate(body["system"]) if "cache_control" in b]
    for m, message in enumerate(body["messages"]):
        where += [f"messages[{m}].{b['type']}" for b in message["content"] if "cache_control" in b]
    return where


def _claude(**kwargs: Any) -> AnthropicModel:
    return AnthropicModel("claude-sonnet-4-5", api_key=SECRET, **kwargs)


def _two_turns() -> LlmRequest:
    """A second turn: question, tool call, tool result, answer, and a new question."""
    request = weather_history()
    request.contents += [Content.model("It is 18°C and cloudy."), Content.user("And tomorrow?")]
    return request


def test_claude_gets_four_breakpoints_on_the_stable_prefix_and_both_tails() -> None:
    body = _claude().build_request(_two_turns())

    # The tools, the instruction, the previous call's tail (the tool result) and this call's tail.
    assert _marked(body) == ["tools[0]", "system[0]", "messages[2].tool_result", "messages[4].text"]
    check_anthropic(json.loads(json.dumps(body)), "claude-sonnet-4-5", stream=False)


def test_breakpoints_never_exceed_four_nor_land_on_thinking() -> None:
    request = LlmRequest(
        contents=[
            Content.user("Plan my week."),
            Content(role="model", parts=[Part(text="Let me think.", thought=True, thought_signature=b"sig")]),
        ],
        config=GenerateContentConfig(system_instruction="Be brief."),
    )
    body = _claude().build_request(request)

    # The assistant tail holds only a thinking block, which cannot be marked; the question two back can.
    assert _marked(body) == ["system[0]"]
    many = _claude().build_request(_two_turns())
    assert len(_marked(many)) == 4


def test_a_ttl_and_turning_it_off_come_from_the_model_or_the_request() -> None:
    hour = _claude(prompt_cache=PromptCacheConfig(ttl="1h")).build_request(weather_history())
    assert hour["tools"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    check_anthropic(json.loads(json.dumps(hour)), "claude-sonnet-4-5", stream=False)

    request = weather_history()
    request.config.prompt_cache = PromptCacheConfig(enabled=False)
    off = _claude(prompt_cache=PromptCacheConfig(ttl="1h")).build_request(request)
    assert _marked(off) == [] and off["system"] == "You are a weather assistant."


def test_openai_gets_a_prompt_cache_key_only_when_given_and_compatible_servers_never() -> None:
    request = weather_history()
    assert "prompt_cache_key" not in OpenAIModel("gpt-4o", api_key=SECRET).build_request(request)

    request.config.prompt_cache = PromptCacheConfig(key="travel-agent")
    body = OpenAIModel("gpt-4o", api_key=SECRET).build_request(request)
    assert body["prompt_cache_key"] == "travel-agent"
    check_openai(json.loads(json.dumps(body)), "gpt-4o", stream=False)
    compatible = OpenAIModel("openai/llama3.2", base_url="http://localhost:11434/v1").build_request(request)
    assert "prompt_cache_key" not in compatible


async def test_gemini_reports_implicit_cache_hits(wire: Wire) -> None:
    answer = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Paris."}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 4000, "cachedContentTokenCount": 3072, "candidatesTokenCount": 2,
                          "totalTokenCount": 4002},
    }  # fmt: skip
    wire.reply_raw(httpx.Response(200, json=answer))

    [response] = await collect(
        GeminiModel("gemini-2.5-flash", api_key=SECRET, http_client=wire.client), simple_request()
    )

    assert response.usage_metadata is not None
    assert response.usage_metadata.cached_content_token_count == 3072
    price = PriceTable.default().price("gemini-2.5-flash")
    assert price is not None
    assert price.cost(response.usage_metadata) == pytest.approx((928 * 0.30 + 3072 * 0.075 + 2 * 2.50) / 1e6)


async def test_claude_serves_most_of_a_20_turn_conversation_from_its_cache() -> None:
    on, off = SimulatedAnthropic(), SimulatedAnthropic()

    cached = await run_conversation(_claude(http_client=on.client()))
    uncached = await run_conversation(
        _claude(http_client=off.client(), prompt_cache=PromptCacheConfig(enabled=False))
    )

    # The usage the (simulated) API reported reaches the events: reads and writes, as parts of the prompt.
    assert cached.model_calls == uncached.model_calls > 20
    assert cached.cached_tokens == sum(u["cache_read_input_tokens"] for u in on.usages)
    assert cached.cache_write_tokens == sum(u["cache_creation_input_tokens"] for u in on.usages)
    assert cached.cached_share > SHARE_FLOOR
    assert uncached.cached_tokens == uncached.cache_write_tokens == 0
    assert all(len(_marked(body)) == 4 for body in on.bodies[1:])


async def test_openai_reports_its_automatic_caching_over_20_turns() -> None:
    provider = SimulatedOpenAI()

    usage = await run_conversation(OpenAIModel("gpt-4o", api_key=SECRET, http_client=provider.client()))

    assert usage.cached_tokens == sum(u["prompt_tokens_details"]["cached_tokens"] for u in provider.usages)
    assert usage.cached_share > SHARE_FLOOR


def _gemini(provider: SimulatedGemini, *, cache: bool = True) -> GeminiModel:
    return GeminiModel("gemini-2.5-flash", api_key=SECRET, http_client=provider.client(), context_cache=cache)


async def test_gemini_caches_the_shared_prefix_explicitly_once_it_is_reused() -> None:
    provider = SimulatedGemini(now=time.time())

    usage = await run_conversation(_gemini(provider), turns=3)

    # The first call sees the instruction and tools once: sent whole. The second finds no entry,
    # creates one; every later call names it and leaves the prefix out, as the API requires.
    [create] = provider.creates
    assert provider.lists == 1 and create["ttl"] == "300s" and create["displayName"].startswith("adk-")
    check_gemini_body({"contents": [], **{k: v for k, v in create.items() if k in PREFIX_FIELDS}})
    first, *later = provider.bodies
    assert "systemInstruction" in first and "cachedContent" not in first
    assert all(b["cachedContent"] == "cachedContents/sim0" and "systemInstruction" not in b for b in later)
    for body in later:
        check_gemini_body(body)
    assert usage.cached_tokens == sum(u["cachedContentTokenCount"] for u in provider.usages) > 0


async def test_another_worker_reuses_the_entry_instead_of_creating_a_second() -> None:
    provider = SimulatedGemini(now=time.time())
    await run_conversation(_gemini(provider), turns=2)

    # A fresh model (another worker, or this one after a restart) finds the entry by its name.
    await run_conversation(_gemini(provider), turns=2)

    assert len(provider.creates) == 1 and provider.lists == 2
    assert provider.bodies[-1]["cachedContent"] == "cachedContents/sim0"


async def test_gemini_caches_nothing_explicitly_by_default_or_when_the_api_refuses(
    caplog: pytest.LogCaptureFixture,
) -> None:
    plain = SimulatedGemini(now=time.time())
    await run_conversation(_gemini(plain, cache=False), turns=2)
    assert plain.creates == [] and plain.lists == 0

    refusing = SimulatedGemini(now=time.time(), min_tokens=10**6)
    with caplog.at_level(logging.WARNING, logger="adk_core.models"):
        usage = await run_conversation(_gemini(refusing), turns=3)

    # Refused once, then sent uncached: the turns still run, and the prefix is not offered again.
    assert len(refusing.creates) == 1 and usage.model_calls == len(refusing.bodies)
    assert all("cachedContent" not in b and "systemInstruction" in b for b in refusing.bodies)
    assert "refused to cache" in caplog.text and "Cached content is too small" in caplog.text


async def test_cache_usage_built_with_the_sdks_parses_into_usage(wire: Wire) -> None:
    # The usage each official SDK describes, serialized as its API sends it (issue 23, item 1 for item 4).
    import anthropic.types as anthropic_types
    import openai.types.chat as openai_types
    from google.genai import types as genai

    usage = anthropic_types.Usage(
        input_tokens=12, cache_read_input_tokens=3000, cache_creation_input_tokens=800, output_tokens=5
    )
    text = anthropic_types.TextBlock(type="text", text="Hi.")
    message = anthropic_types.Message(id="m", type="message", role="assistant", model="claude-sonnet-4-5",
                                      content=[text], stop_reason="end_turn", usage=usage)  # fmt: skip
    completion = openai_types.ChatCompletion(
        id="c", object="chat.completion", created=1, model="gpt-4o",
        choices=[openai_types.chat_completion.Choice(
            index=0, finish_reason="stop", message=openai_types.ChatCompletionMessage(role="assistant", content="Hi."))],
        usage={"prompt_tokens": 2000, "completion_tokens": 3, "total_tokens": 2003,
               "prompt_tokens_details": {"cached_tokens": 1920}},  # type: ignore[arg-type]
    )  # fmt: skip
    gemini = genai.GenerateContentResponse(
        candidates=[genai.Candidate(content=genai.Content(role="model", parts=[genai.Part(text="Hi.")]),
                                    finish_reason=genai.FinishReason.STOP)],
        usage_metadata=genai.GenerateContentResponseUsageMetadata(
            prompt_token_count=5000, cached_content_token_count=4096, candidates_token_count=2, total_token_count=5002),
    )  # fmt: skip
    for answer in (message, completion):
        wire.reply_raw(httpx.Response(200, json=answer.model_dump(mode="json", exclude_none=True)))
    wire.reply_raw(httpx.Response(200, json=gemini.model_dump(mode="json", by_alias=True, exclude_none=True)))

    [claude] = await collect(_claude(http_client=wire.client), simple_request())
    [gpt] = await collect(OpenAIModel("gpt-4o", api_key=SECRET, http_client=wire.client), simple_request())
    [flash] = await collect(
        GeminiModel("gemini-2.5-flash", api_key=SECRET, http_client=wire.client), simple_request()
    )

    assert (
        claude.usage_metadata is not None
        and gpt.usage_metadata is not None
        and flash.usage_metadata is not None
    )
    assert (claude.usage_metadata.prompt_token_count, claude.usage_metadata.cached_content_token_count,
            claude.usage_metadata.cache_creation_token_count) == (3812, 3000, 800)  # fmt: skip
    assert (gpt.usage_metadata.prompt_token_count, gpt.usage_metadata.cached_content_token_count) == (
        2000,
        1920,
    )
    assert (flash.usage_metadata.prompt_token_count, flash.usage_metadata.cached_content_token_count) == (
        5000,
        4096,
    )
