"""Thinking / reasoning as one setting, mapped to each provider (issue 23, item 3).

Bodies are checked against the SDKs' request types as in test_sdk_request_types.py; the tool loop
shows an Anthropic thinking block and its signature going back to the API on the next call.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import httpx
import pytest
from anthropic import types as anthropic_types
from model_wire import SECRET, WEATHER_TOOL, Wire, simple_request
from sdk_types import check_anthropic, check_gemini, check_openai

from adk_core import InMemoryRunner, LlmAgent
from adk_core.errors import ConfigurationError
from adk_core.models import GenerateContentConfig, LlmRequest, ThinkingConfig
from adk_core.models import rules as rules_module
from adk_core.models.anthropic import AnthropicModel
from adk_core.models.gemini import GeminiModel
from adk_core.models.openai import OpenAIModel
from adk_core.types import Content


@pytest.fixture(autouse=True)
def _fresh_rules() -> Iterator[None]:
    rules_module.reset_for_tests()
    yield
    rules_module.reset_for_tests()


def _request(thinking: ThinkingConfig, **config: object) -> LlmRequest:
    return LlmRequest(
        contents=simple_request().contents, config=GenerateContentConfig(thinking=thinking, **config)
    )


def test_adaptive_claude_gets_adaptive_thinking_and_an_effort() -> None:
    body = AnthropicModel("claude-opus-4-7", api_key=SECRET).build_request(
        _request(ThinkingConfig(effort="high"))
    )
    # Opus 4.7 omits the thinking text unless display asks for it; include_thoughts (the default) does.
    assert body["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert body["output_config"] == {"effort": "high"}
    hidden = AnthropicModel("claude-opus-4-7", api_key=SECRET).build_request(
        _request(ThinkingConfig(effort="high", include_thoughts=False))
    )
    assert hidden["thinking"] == {"type": "adaptive", "display": "omitted"}
    for sent in (body, hidden):
        check_anthropic(sent, "claude-opus-4-7", stream=False)


def test_budget_claude_gets_a_budget_below_max_tokens_and_no_temperature(
    caplog: pytest.LogCaptureFixture,
) -> None:
    request = _request(ThinkingConfig(budget_tokens=2000), temperature=0.2, max_output_tokens=500)
    with caplog.at_level(logging.WARNING, logger="adk_core.models"):
        body = AnthropicModel("claude-sonnet-4-5", api_key=SECRET).build_request(request)

    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    assert body["max_tokens"] == 2500, "the budget is inside max_tokens; the answer keeps its 500"
    assert "temperature" not in body
    assert any("'temperature'" in r.getMessage() and "thinking" in r.getMessage() for r in caplog.records)
    check_anthropic(body, "claude-sonnet-4-5", stream=False)


def test_thinking_off_and_hidden_thoughts_on_claude() -> None:
    off = AnthropicModel("claude-opus-4-7", api_key=SECRET).build_request(
        _request(ThinkingConfig(effort="none"))
    )
    assert off["thinking"] == {"type": "disabled"} and "output_config" not in off
    hidden = AnthropicModel("claude-sonnet-4-5", api_key=SECRET).build_request(
        _request(ThinkingConfig(effort="low", include_thoughts=False))
    )
    assert hidden["thinking"] == {"type": "enabled", "budget_tokens": 2048, "display": "omitted"}
    for body, model in ((off, "claude-opus-4-7"), (hidden, "claude-sonnet-4-5")):
        check_anthropic(body, model, stream=False)


def test_forced_tool_choice_is_left_out_while_claude_thinks() -> None:
    request = _request(ThinkingConfig(effort="low"), tools=[WEATHER_TOOL], tool_choice="required")
    body = AnthropicModel("claude-sonnet-4-5", api_key=SECRET).build_request(request)
    assert "tool_choice" not in body
    check_anthropic(body, "claude-sonnet-4-5", stream=False)


def test_openai_reasoning_effort_from_an_effort_or_a_budget() -> None:
    effort = OpenAIModel("gpt-5", api_key=SECRET).build_request(_request(ThinkingConfig(effort="low")))
    budget = OpenAIModel("o4-mini", api_key=SECRET).build_request(
        _request(ThinkingConfig(budget_tokens=10000))
    )
    assert effort["reasoning_effort"] == "low" and budget["reasoning_effort"] == "high"
    check_openai(effort, "gpt-5", stream=False)
    check_openai(budget, "o4-mini", stream=False)


@pytest.mark.parametrize(
    ("model", "effort", "sent"),
    [
        ("gpt-5", "none", "minimal"),
        ("gpt-5.1", "none", "none"),
        ("o3", "max", "high"),
        ("gpt-5.2", "max", "xhigh"),
    ],
)
def test_an_effort_a_family_does_not_name_becomes_its_nearest(model: str, effort: str, sent: str) -> None:
    body = OpenAIModel(model, api_key=SECRET).build_request(_request(ThinkingConfig(effort=effort)))  # type: ignore[arg-type]
    assert body["reasoning_effort"] == sent


def test_gemini_3_pro_gets_only_the_levels_it_takes() -> None:
    body = GeminiModel("gemini-3-pro-preview", api_key=SECRET).build_request(
        _request(ThinkingConfig(effort="medium"))
    )
    assert body["generationConfig"]["thinkingConfig"]["thinkingLevel"] == "LOW"
    flash = GeminiModel("gemini-3-flash", api_key=SECRET).build_request(
        _request(ThinkingConfig(effort="none"))
    )
    assert flash["generationConfig"]["thinkingConfig"]["thinkingLevel"] == "MINIMAL"


def test_a_model_that_does_not_reason_gets_no_thinking(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="adk_core.models"):
        body = OpenAIModel("gpt-4o", api_key=SECRET).build_request(_request(ThinkingConfig(effort="high")))
    assert "reasoning_effort" not in body
    assert any("'thinking'" in r.getMessage() for r in caplog.records)


def test_gemini_budget_and_gemini_3_level() -> None:
    flash = GeminiModel("gemini-2.5-flash", api_key=SECRET).build_request(
        _request(ThinkingConfig(effort="medium"))
    )
    pro = GeminiModel("gemini-3-pro-preview", api_key=SECRET).build_request(
        _request(ThinkingConfig(effort="high"))
    )
    assert flash["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingBudget": 8192}
    assert pro["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingLevel": "HIGH"}
    check_gemini(flash, "gemini-2.5-flash", stream=False)
    check_gemini(pro, "gemini-3-pro-preview", stream=False)


@pytest.mark.parametrize(
    ("model", "thinking", "sent"),
    [
        # Each 2.5 model takes budgets in a range of its own; outside it the API answers 400.
        ("gemini-2.5-flash", ThinkingConfig(effort="max"), 24576),  # max is 32,768 elsewhere
        ("gemini-2.5-flash", ThinkingConfig(budget_tokens=100), 100),
        ("gemini-2.5-flash", ThinkingConfig(effort="none"), 0),  # off
        ("gemini-2.5-flash-lite", ThinkingConfig(budget_tokens=100), 512),
        ("gemini-2.5-flash-lite-preview-09-2025", ThinkingConfig(effort="max"), 24576),
        ("gemini-2.5-flash-lite", ThinkingConfig(effort="none"), 0),
        ("gemini-2.5-pro", ThinkingConfig(budget_tokens=64), 128),
        ("gemini-2.5-pro", ThinkingConfig(effort="max"), 32768),
    ],
    ids=["flash-max", "flash-low", "flash-off", "lite-low", "lite-max", "lite-off", "pro-low", "pro-max"],
)
def test_gemini_2_5_budgets_stay_in_each_models_range(
    model: str, thinking: ThinkingConfig, sent: int
) -> None:
    body = GeminiModel(model, api_key=SECRET).build_request(_request(thinking))
    assert body["generationConfig"]["thinkingConfig"]["thinkingBudget"] == sent
    check_gemini(body, model, stream=False)


def test_gemini_2_5_pro_cannot_turn_thinking_off(caplog: pytest.LogCaptureFixture) -> None:
    # A budget of 0 is a 400 "This model only works in thinking mode": it thinks the least it can.
    model = GeminiModel("gemini-2.5-pro", api_key=SECRET)
    with caplog.at_level(logging.WARNING, logger="adk_core.models"):
        body = model.build_request(_request(ThinkingConfig(effort="none", include_thoughts=False)))
        model.build_request(_request(ThinkingConfig(budget_tokens=0)))

    assert body["generationConfig"]["thinkingConfig"] == {"includeThoughts": False, "thinkingBudget": 128}
    [warning] = [r.getMessage() for r in caplog.records]
    assert "'gemini-2.5-pro' does not accept 'thinking' as set" in warning and "128 tokens" in warning
    # A strict App refuses it when the agent is loaded, as any setting the model does not take.
    off = GenerateContentConfig(thinking=ThinkingConfig(effort="none"))
    assert [r.setting for r in model.refused_settings(off)] == ["thinking"]
    check_gemini(body, "gemini-2.5-pro", stream=False)


def test_strict_app_refuses_thinking_on_a_model_that_does_not_reason() -> None:
    from adk_core import App

    agent = LlmAgent(
        name="a",
        model="gpt-4o",
        generate_content_config=GenerateContentConfig(thinking=ThinkingConfig(effort="low")),
    )
    with pytest.raises(ConfigurationError, match="thinking"):
        App(name="strict", root_agent=agent, strict_model_parameters=True)


def _sdk_reply(message: anthropic_types.Message) -> httpx.Response:
    return httpx.Response(200, json=message.model_dump(mode="json"))


def _reply_tool_loop(wire: Wire, thinking: anthropic_types.ContentBlock) -> None:
    """Two answers: ``thinking`` and a get_weather call, then the final text."""
    t = anthropic_types
    usage = t.Usage(input_tokens=10, output_tokens=10)
    wire.reply_raw(
        _sdk_reply(
            t.Message(
                id="m1",
                type="message",
                role="assistant",
                model="claude-opus-4-7",
                stop_reason="tool_use",
                usage=usage,
                content=[
                    thinking,
                    t.ToolUseBlock(
                        type="tool_use", id="toolu_1", name="get_weather", input={"city": "Paris"}
                    ),
                ],
            )
        )
    )
    wire.reply_raw(
        _sdk_reply(
            t.Message(
                id="m2",
                type="message",
                role="assistant",
                model="claude-opus-4-7",
                stop_reason="end_turn",
                usage=usage,
                content=[t.TextBlock(type="text", text="18 C and cloudy.")],
            )
        )
    )


def get_weather(city: str) -> dict[str, object]:
    """Current weather for a city."""
    return {"temp_c": 18, "conditions": "cloudy"}


def _thinking_agent(wire: Wire, thinking: ThinkingConfig) -> LlmAgent:
    return LlmAgent(
        name="w",
        model=AnthropicModel("claude-opus-4-7", api_key=SECRET, http_client=wire.client),
        tools=[get_weather],
        generate_content_config=GenerateContentConfig(thinking=thinking),
    )


async def test_a_thinking_tool_loop_sends_the_thinking_block_back_with_its_signature(wire: Wire) -> None:
    # Anthropic requires the thinking block, signature intact, before the tool_use it led to.
    _reply_tool_loop(
        wire,
        anthropic_types.ThinkingBlock(type="thinking", thinking="Need the weather.", signature="c2lnLTE="),
    )
    agent = _thinking_agent(wire, ThinkingConfig(effort="medium"))
    events = await InMemoryRunner(agent, app_name="thinking").run("Weather in Paris?")

    assert events[-1].content == Content.model("18 C and cloudy.")
    second = json.loads(wire.requests[1].content)
    assistant = next(m for m in second["messages"] if m["role"] == "assistant")
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "Need the weather.",
        "signature": "c2lnLTE=",
    }
    assert assistant["content"][1]["type"] == "tool_use"
    check_anthropic(second, "claude-opus-4-7", stream=False)


@pytest.mark.parametrize(
    ("block", "include_thoughts", "sent_back"),
    [
        # display "omitted": asked for by include_thoughts=False, and Opus 4.7's default otherwise.
        (
            anthropic_types.ThinkingBlock(type="thinking", thinking="", signature="RW5jcnlwdGVk"),
            False,
            {"type": "thinking", "thinking": "", "signature": "RW5jcnlwdGVk"},
        ),
        (
            anthropic_types.ThinkingBlock(type="thinking", thinking="", signature="RW5jcnlwdGVk"),
            True,
            {"type": "thinking", "thinking": "", "signature": "RW5jcnlwdGVk"},
        ),
        # Thinking the safety systems flagged comes encrypted, and must go back as it came.
        (
            anthropic_types.RedactedThinkingBlock(type="redacted_thinking", data="RW5jcnlwdGVk"),
            True,
            {"type": "redacted_thinking", "data": "RW5jcnlwdGVk"},
        ),
    ],
    ids=["omitted-asked", "omitted-by-default", "redacted"],
)
async def test_thinking_without_text_goes_back_too(
    wire: Wire, block: anthropic_types.ContentBlock, include_thoughts: bool, sent_back: dict[str, str]
) -> None:
    # Dropping it leaves an assistant message that starts with tool_use: the API answers 400
    # "a final assistant message must start with a thinking block".
    _reply_tool_loop(wire, block)
    agent = _thinking_agent(wire, ThinkingConfig(effort="medium", include_thoughts=include_thoughts))
    events = await InMemoryRunner(agent, app_name="thinking").run("Weather in Paris?")

    second = json.loads(wire.requests[1].content)
    assistant = next(m for m in second["messages"] if m["role"] == "assistant")
    assert assistant["content"][0] == sent_back
    assert assistant["content"][1]["type"] == "tool_use"
    check_anthropic(second, "claude-opus-4-7", stream=False)

    # Durable runs build the request from events stored as JSON: the block survives that too.
    [turn] = [e.content for e in events if e.content is not None and e.content.function_calls()]
    stored = Content.model_validate_json(turn.model_dump_json())
    assert stored == turn
    rebuilt = AnthropicModel("claude-opus-4-7", api_key=SECRET).build_request(LlmRequest(contents=[stored]))
    assert rebuilt["messages"][0]["content"][0] == sent_back
