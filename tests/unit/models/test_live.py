"""One real call per provider. Run with ``pytest -m live``; each test skips unless its key is set.

Override the model with ADK_LIVE_GEMINI_MODEL / ADK_LIVE_ANTHROPIC_MODEL / ADK_LIVE_OPENAI_MODEL.
"""

from __future__ import annotations

import os

import pytest
from cache_sim import INSTRUCTION
from model_wire import WEATHER_TOOL, collect

from adk_core.models import GenerateContentConfig, LlmRequest
from adk_core.models.anthropic import AnthropicModel
from adk_core.models.gemini import GeminiModel
from adk_core.models.openai import OpenAIModel
from adk_core.types import Content

PROVIDERS = [
    pytest.param(
        GeminiModel,
        ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
        "ADK_LIVE_GEMINI_MODEL",
        "gemini-2.5-flash",
        id="gemini",
    ),
    pytest.param(
        AnthropicModel, ("ANTHROPIC_API_KEY",), "ADK_LIVE_ANTHROPIC_MODEL", "claude-haiku-4-5", id="anthropic"
    ),
    pytest.param(OpenAIModel, ("OPENAI_API_KEY",), "ADK_LIVE_OPENAI_MODEL", "gpt-4o-mini", id="openai"),
]


@pytest.mark.live
@pytest.mark.parametrize(("cls", "key_vars", "model_var", "default_model"), PROVIDERS)
async def test_live_tool_call_then_streamed_text(
    cls: type, key_vars: tuple[str, ...], model_var: str, default_model: str
) -> None:
    if not any(os.environ.get(name) for name in key_vars):
        pytest.skip(f"set {' or '.join(key_vars)} to run this live test")
    model = cls(os.environ.get(model_var, default_model))
    forced_call = LlmRequest(
        contents=[Content.user("What's the weather in Paris?")],
        config=GenerateContentConfig(tools=[WEATHER_TOOL], tool_choice="get_weather", max_output_tokens=1024),
    )

    [response] = await collect(model, forced_call)

    assert response.content is not None, response.error_message
    [call] = response.content.function_calls()
    assert call.name == "get_weather" and "city" in call.args

    chat = LlmRequest(
        contents=[Content.user("Reply with exactly the word: pong")],
        config=GenerateContentConfig(max_output_tokens=1024),
    )
    *partials, final = await collect(model, chat, stream=True)

    assert all(r.partial for r in partials) and not final.partial
    assert final.content is not None and "pong" in final.content.text.lower()
    assert final.usage_metadata is not None and final.usage_metadata.total_token_count


@pytest.mark.live
async def test_live_claude_reads_back_the_prefix_it_marked() -> None:
    if not os.environ.get("ANTHROPIC_API_KEY"):
        pytest.skip("set ANTHROPIC_API_KEY to run this live test")
    model = AnthropicModel(os.environ.get("ADK_LIVE_ANTHROPIC_MODEL", "claude-haiku-4-5"))
    # Above every Claude model's minimum cacheable prompt (4,096 tokens for Haiku 4.5 and Opus 4.5+).
    instruction = "\n".join([INSTRUCTION] * 4)
    first = LlmRequest(contents=[Content.user("Say hi.")],
                       config=GenerateContentConfig(system_instruction=instruction, max_output_tokens=64))  # fmt: skip
    second = first.model_copy(deep=True)
    second.contents += [Content.model("Hi!"), Content.user("Say bye.")]

    [written] = await collect(model, first)
    [read] = await collect(model, second)

    assert written.usage_metadata is not None and read.usage_metadata is not None
    assert (written.usage_metadata.cache_creation_token_count or 0) + (
        written.usage_metadata.cached_content_token_count or 0
    ) > 4096
    assert (read.usage_metadata.cached_content_token_count or 0) > 4096
