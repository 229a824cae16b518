"""Per-model parameter rules: what a model refuses never reaches the wire (issue 23, item 2).

The agents here are configured as every ADK sample is (``temperature=0.2``) and run through the
in-process Runner; the durable runtime calls the same adapters inside its model activity
(tests/integration/test_provider_durable.py runs the claude-opus-4-7 case there).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from model_wire import SECRET, WEATHER_TOOL, Wire

from adk_core import App, InMemoryRunner, LlmAgent
from adk_core.errors import ConfigurationError
from adk_core.models import GenerateContentConfig, ModelRules, model_rules, register_model_rules
from adk_core.models import rules as rules_module
from adk_core.models.anthropic import AnthropicModel
from adk_core.models.gemini import GeminiModel
from adk_core.models.openai import OpenAIModel

LOCAL = "http://localhost:11434/v1"
SAMPLE_CONFIG = GenerateContentConfig(temperature=0.2, max_output_tokens=512)


@pytest.fixture(autouse=True)
def _fresh_rules() -> Iterator[None]:
    # Warnings are once per process and user rules are process-wide: each test starts clean.
    rules_module.reset_for_tests()
    yield
    rules_module.reset_for_tests()


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.name == "adk_core.models"
    ]


async def _run(agent: LlmAgent, turns: int = 1) -> None:
    runner = InMemoryRunner(agent, app_name="rules")
    for _ in range(turns):
        await runner.run("What is the capital of France?")


async def test_claude_opus_4_7_agent_sends_no_temperature(
    wire: Wire, caplog: pytest.LogCaptureFixture
) -> None:
    wire.reply("anthropic_text.json")
    wire.reply("anthropic_text.json")
    model = AnthropicModel("claude-opus-4-7", api_key=SECRET, http_client=wire.client)
    agent = LlmAgent(name="a", model=model, generate_content_config=SAMPLE_CONFIG)

    with caplog.at_level(logging.WARNING, logger="adk_core.models"):
        await _run(agent, turns=2)

    for request in wire.requests:
        body = request.read()
        assert b'"temperature"' not in body and b'"top_p"' not in body
    assert wire.body["max_tokens"] == 512
    [warning] = _warnings(caplog)  # once per (model, parameter), not once per call
    assert "claude-opus-4-7" in warning and "temperature" in warning
    assert "register_model_rules" in warning, "the warning says how to change the rule"


async def test_gpt5_agent_sends_no_temperature_and_caps_with_max_completion_tokens(
    wire: Wire, caplog: pytest.LogCaptureFixture
) -> None:
    wire.reply("openai_text.json")
    model = OpenAIModel("gpt-5", api_key=SECRET, http_client=wire.client)
    config = GenerateContentConfig(temperature=0.2, top_p=0.9, max_output_tokens=512, stop_sequences=["END"])
    agent = LlmAgent(name="a", model=model, generate_content_config=config)

    with caplog.at_level(logging.WARNING, logger="adk_core.models"):
        await _run(agent)

    body = wire.body
    assert "temperature" not in body and "top_p" not in body and "stop" not in body
    assert body["max_completion_tokens"] == 512 and "max_tokens" not in body
    assert sorted(w.split("'")[3] for w in _warnings(caplog)) == ["stop_sequences", "temperature", "top_p"]


async def test_gpt5_behind_a_compatible_server_gets_the_same_rules(wire: Wire) -> None:
    wire.reply("openai_text.json")
    model = OpenAIModel("openai/gpt-5", base_url="https://proxy.example/v1", http_client=wire.client)

    await _run(LlmAgent(name="a", model=model, generate_content_config=SAMPLE_CONFIG))

    assert "temperature" not in wire.body
    assert wire.body["max_completion_tokens"] == 512, "reasoning models take only max_completion_tokens"


async def test_models_that_take_the_parameter_still_get_it(
    wire: Wire, caplog: pytest.LogCaptureFixture
) -> None:
    wire.reply("openai_text.json")
    wire.reply("anthropic_text.json")
    wire.reply("gemini_text.json")
    with caplog.at_level(logging.WARNING, logger="adk_core.models"):
        for model in (
            OpenAIModel("gpt-4o", api_key=SECRET, http_client=wire.client),
            AnthropicModel("claude-sonnet-4-5", api_key=SECRET, http_client=wire.client),
            GeminiModel("gemini-2.5-flash", api_key=SECRET, http_client=wire.client),
        ):
            await _run(LlmAgent(name="a", model=model, generate_content_config=SAMPLE_CONFIG))

    gpt4o, sonnet, gemini = (r.read() for r in wire.requests)
    assert b'"temperature":0.2' in gpt4o.replace(b" ", b"")
    assert b'"temperature":0.2' in sonnet.replace(b" ", b"")
    assert b'"temperature":0.2' in gemini.replace(b" ", b"")
    assert _warnings(caplog) == []


async def test_claude_4_5_keeps_temperature_and_leaves_out_top_p(
    wire: Wire, caplog: pytest.LogCaptureFixture
) -> None:
    # Sonnet 4.5 and its generation answer 400 "temperature and top_p cannot both be specified".
    wire.reply("anthropic_text.json")
    model = AnthropicModel("claude-sonnet-4-5", api_key=SECRET, http_client=wire.client)
    config = GenerateContentConfig(temperature=0.2, top_p=0.9)

    with caplog.at_level(logging.WARNING, logger="adk_core.models"):
        await _run(LlmAgent(name="a", model=model, generate_content_config=config))

    assert wire.body["temperature"] == 0.2 and "top_p" not in wire.body
    [warning] = _warnings(caplog)
    assert "top_p" in warning and "temperature" in warning


async def test_a_setting_the_provider_has_no_field_for_is_reported_not_silently_dropped(
    wire: Wire, caplog: pytest.LogCaptureFixture
) -> None:
    wire.reply("anthropic_text.json")
    model = AnthropicModel("claude-sonnet-4-5", api_key=SECRET, http_client=wire.client)

    with caplog.at_level(logging.WARNING, logger="adk_core.models"):
        await _run(LlmAgent(name="a", model=model, generate_content_config=GenerateContentConfig(seed=7)))

    assert "seed" not in wire.body
    [warning] = _warnings(caplog)
    assert "'seed'" in warning


def test_strict_app_refuses_the_agent_at_load_with_how_to_fix() -> None:
    child = LlmAgent(name="writer", generate_content_config=SAMPLE_CONFIG)  # inherits the model
    root = LlmAgent(name="root", model="claude-opus-4-7", sub_agents=[child])

    with pytest.raises(ConfigurationError) as refused:
        App(name="strict", root_agent=root, strict_model_parameters=True)

    message = str(refused.value)
    assert "writer" in message and "claude-opus-4-7" in message and "temperature" in message
    assert "generate_content_config" in message and "register_model_rules" in message


def test_strict_app_accepts_what_the_models_take() -> None:
    agent = LlmAgent(name="a", model="gpt-4o", generate_content_config=SAMPLE_CONFIG)
    assert App(name="ok", root_agent=agent, strict_model_parameters=True).root_agent is agent
    lenient = LlmAgent(name="b", model="claude-opus-4-7", generate_content_config=SAMPLE_CONFIG)
    App(name="lenient", root_agent=lenient)  # not strict: the call leaves it out and warns instead


async def test_users_extend_the_table(wire: Wire) -> None:
    wire.reply("openai_text.json")
    wire.reply("openai_text.json")
    register_model_rules(
        ModelRules(
            r"my-reasoner-.*",
            accepts=frozenset({"seed"}),
            token_limit_field="max_completion_tokens",
            reason="my-reasoner samples at a fixed temperature",
        )
    )
    config = GenerateContentConfig(temperature=0.2, seed=3, max_output_tokens=64)

    model = OpenAIModel("openai/my-reasoner-1", base_url=LOCAL, http_client=wire.client)
    await _run(LlmAgent(name="a", model=model, generate_content_config=config))
    assert (
        "temperature" not in wire.body and wire.body["seed"] == 3 and wire.body["max_completion_tokens"] == 64
    )

    # A rule passed to one model instance wins over the table.
    own = ModelRules(r".*", accepts=frozenset({"temperature"}))
    model = OpenAIModel("openai/my-reasoner-1", base_url=LOCAL, http_client=wire.client, rules=own)
    await _run(LlmAgent(name="b", model=model, generate_content_config=config))
    assert wire.body["temperature"] == 0.2 and "seed" not in wire.body and wire.body["max_tokens"] == 64


def test_forced_tool_choice_and_structured_output_follow_the_table(caplog: pytest.LogCaptureFixture) -> None:
    from adk_core.models import LlmRequest
    from adk_core.types import Content

    register_model_rules(
        ModelRules(r"gpt-plain-.*", tool_choice=frozenset({"auto", "none"}), structured_output=False)
    )
    request = LlmRequest(
        contents=[Content.user("hi")],
        config=GenerateContentConfig(
            tools=[WEATHER_TOOL], tool_choice="get_weather", response_schema={"type": "object"}
        ),
    )
    with caplog.at_level(logging.WARNING, logger="adk_core.models"):
        body = OpenAIModel("gpt-plain-1", api_key=SECRET).build_request(request)

    assert "tool_choice" not in body and "response_format" not in body
    assert {w.split("'")[3] for w in _warnings(caplog)} == {"tool_choice", "response_schema"}


@pytest.mark.parametrize(
    "fields",
    [
        {"accepts": frozenset({"temprature"})},
        {"tool_choice": frozenset({"forced"})},
        {"thinking_excludes": frozenset({"top_q"})},
    ],
)
def test_a_row_naming_an_unknown_setting_is_refused(fields: dict[str, frozenset[str]]) -> None:
    with pytest.raises(ConfigurationError, match="unknown settings"):
        ModelRules(r"x-.*", **fields)  # type: ignore[arg-type]


def test_rules_are_found_by_name_and_by_its_last_segment() -> None:
    assert model_rules("claude-opus-4-7-20260416").accepts == frozenset({"stop_sequences"})
    assert model_rules("openai/gpt-5-mini").token_limit_field == "max_completion_tokens"
    assert "temperature" in model_rules("gpt-5-chat-latest").accepts
    assert "temperature" in model_rules("claude-opus-4-6").accepts
    assert model_rules("no-such-model") is None


def test_docs_list_every_builtin_row() -> None:
    from pathlib import Path

    from adk_core.models.rules import builtin_model_rules

    docs = (Path(__file__).parents[3] / "docs" / "models.md").read_text()
    for rule in builtin_model_rules():
        assert f"`{rule.pattern.replace('|', chr(92) + '|')}`" in docs, (
            f"docs/models.md does not list {rule.pattern}"
        )
