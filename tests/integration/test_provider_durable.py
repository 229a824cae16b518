"""Providers under the durable runtime: HTTP status becomes Temporal retry behaviour, keys never
reach workflow history, and a plain-JSON start from the temporal CLI works."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path

import httpx
import pytest
from temporalio.client import WorkflowFailureError

from adk_core import App, LlmAgent
from adk_core.models import GenerateContentConfig, ThinkingConfig
from adk_core.models.anthropic import AnthropicModel
from adk_core.models.gemini import GeminiModel
from adk_core.models.pricing import COST_KEY
from adkt.embedded import temporal_binary
from examples.w1 import USER_MESSAGE, build_agent
from tests.integration.conftest import DurableStack
from tests.unit.models.cache_sim import INSTRUCTION, SimulatedAnthropic, SimulatedGemini

pytestmark = pytest.mark.integration

PAYLOADS = Path(__file__).parent.parent / "unit" / "models" / "payloads"
SECRET = "sk-test-never-in-history-4242"


def _gemini(responses: list[httpx.Response], seen: list[httpx.Request]) -> GeminiModel:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return responses.pop(0)

    return GeminiModel("gemini-2.5-flash", api_key=SECRET, http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))


def _ok() -> httpx.Response:
    return httpx.Response(200, json=json.loads((PAYLOADS / "gemini_text.json").read_text()))


async def _history_json(stack: DurableStack, workflow_id: str) -> str:
    handle = stack.client.client.get_workflow_handle(workflow_id)
    return (await handle.fetch_history()).to_json()


async def test_429_is_retried_after_retry_after_and_the_key_stays_out_of_history(durable_stack: DurableStack) -> None:
    seen: list[httpx.Request] = []
    limited = httpx.Response(429, headers={"Retry-After": "1"}, json={"error": {"code": 429, "message": "slow down"}})
    model = _gemini([limited, _ok()], seen)
    app = durable_stack.register(App(name=f"gemini_{uuid.uuid4().hex[:6]}", root_agent=LlmAgent(name="g", model=model)))
    workflow_id = f"provider-{uuid.uuid4().hex[:8]}"
    result = await durable_stack.client.run_once(app.name, "u1", "s1", "hello", workflow_id=workflow_id)
    assert result.final_text, "the retried call answered"
    assert len(seen) == 2 and all(r.headers["x-goog-api-key"] == SECRET for r in seen)
    history = await _history_json(durable_stack, workflow_id)
    assert SECRET not in history
    attempts = [
        e["activityTaskStartedEventAttributes"].get("attempt", 1)
        for e in json.loads(history)["events"]
        if "activityTaskStartedEventAttributes" in e
    ]
    assert max(attempts) == 2


async def test_400_fails_the_run_without_retrying(durable_stack: DurableStack) -> None:
    seen: list[httpx.Request] = []
    bad = httpx.Response(400, json=json.loads((PAYLOADS / "gemini_error_400.json").read_text()))
    model = _gemini([bad, _ok()], seen)
    app = durable_stack.register(App(name=f"gemini_bad_{uuid.uuid4().hex[:6]}", root_agent=LlmAgent(name="g", model=model)))
    with pytest.raises(WorkflowFailureError) as failure:
        await durable_stack.client.run_once(app.name, "u1", "s1", "hello")
    assert len(seen) == 1, "a 400 is not retried"
    assert "ModelError" in repr(failure.value.cause) or "400" in str(failure.value.cause)
    assert SECRET not in str(failure.value.cause)


async def test_a_parameter_the_model_refuses_stays_out_of_the_durable_call(durable_stack: DurableStack) -> None:
    # The model activity runs the same adapter, so claude-opus-4-7 never sees temperature (issue 23).
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=json.loads((PAYLOADS / "anthropic_text.json").read_text()))

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    model = AnthropicModel("claude-opus-4-7", api_key=SECRET, http_client=client)
    agent = LlmAgent(name="c", model=model, generate_content_config=GenerateContentConfig(temperature=0.2))
    app = durable_stack.register(App(name=f"opus_{uuid.uuid4().hex[:6]}", root_agent=agent))
    result = await durable_stack.client.run_once(app.name, "u1", "s1", "hello")
    assert result.final_text == "The capital of France is Paris."
    [request] = seen
    body = json.loads(request.content)
    assert body["model"] == "claude-opus-4-7" and "temperature" not in body


async def test_claude_reads_its_prompt_cache_across_durable_turns(durable_stack: DurableStack) -> None:
    # The activity builds each body from stored events (history by reference): the breakpoints must
    # land where the in-process runner puts them, and the cache read reach the event's usage and cost.
    provider = SimulatedAnthropic()
    model = AnthropicModel("claude-sonnet-4-5", api_key=SECRET, http_client=provider.client())
    app = durable_stack.register(App(name=f"cache_{uuid.uuid4().hex[:6]}",
                                     root_agent=LlmAgent(name="t", model=model, instruction=INSTRUCTION)))  # fmt: skip
    await durable_stack.client.run_once(app.name, "u1", "s1", "Plan a trip to Lisbon.")
    second = await durable_stack.client.run_once(app.name, "u1", "s1", "And to Porto?")

    [first_usage, second_usage] = provider.usages
    assert first_usage["cache_read_input_tokens"] == 0 and first_usage["cache_creation_input_tokens"] > 1024
    assert second_usage["cache_read_input_tokens"] == first_usage["cache_creation_input_tokens"]
    [event] = [e for e in second.events if e.usage_metadata]
    assert event.usage_metadata is not None and event.custom_metadata is not None
    assert event.usage_metadata["cached_content_token_count"] == second_usage["cache_read_input_tokens"]
    assert event.custom_metadata[COST_KEY] > 0


async def test_gemini_context_cache_is_created_once_across_a_retried_durable_call(durable_stack: DurableStack) -> None:
    # The entry is created in the model activity; the call naming it fails once (503) and Temporal
    # retries the activity, which must reuse the entry, not create another.
    provider = SimulatedGemini(now=time.time(), unavailable=1)
    model = GeminiModel("gemini-2.5-flash", api_key=SECRET, http_client=provider.client(), context_cache=True)
    app = durable_stack.register(App(name=f"gcache_{uuid.uuid4().hex[:6]}",
                                     root_agent=LlmAgent(name="t", model=model, instruction=INSTRUCTION)))  # fmt: skip
    await durable_stack.client.run_once(app.name, "u1", "s1", "Plan a trip to Lisbon.")
    second = await durable_stack.client.run_once(app.name, "u1", "s1", "And to Porto?")

    assert len(provider.creates) == 1 and provider.unavailable == 0
    assert [b.get("cachedContent") for b in provider.bodies] == [None, "cachedContents/sim0", "cachedContents/sim0"]
    [event] = [e for e in second.events if e.usage_metadata]
    assert event.usage_metadata is not None and event.usage_metadata["cached_content_token_count"] > 1024


def _get_weather(city: str) -> dict[str, object]:
    """Current weather for a city."""
    return {"temp_c": 18, "conditions": "cloudy"}


async def test_a_thinking_tool_loop_sends_the_signed_thinking_block_back_durably(durable_stack: DurableStack) -> None:
    # The second model call is built in the workflow from stored events: the thinking block and its
    # signature must survive the activity boundary and storage to reach Anthropic again (issue 23).
    seen: list[dict[str, object]] = []
    thinking = {"type": "thinking", "thinking": "Need the weather.", "signature": "c2lnLTE="}
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "_get_weather", "input": {"city": "Paris"}}
    replies = [
        {"id": "m1", "type": "message", "role": "assistant", "model": "claude-opus-4-7", "stop_reason": "tool_use",
         "usage": {"input_tokens": 10, "output_tokens": 10}, "content": [thinking, tool_use]},
        {"id": "m2", "type": "message", "role": "assistant", "model": "claude-opus-4-7", "stop_reason": "end_turn",
         "usage": {"input_tokens": 10, "output_tokens": 10}, "content": [{"type": "text", "text": "18 C and cloudy."}]},
    ]  # fmt: skip

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=replies[len(seen) - 1])

    model = AnthropicModel("claude-opus-4-7", api_key=SECRET, http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))
    config = GenerateContentConfig(thinking=ThinkingConfig(effort="medium"))
    agent = LlmAgent(name="w", model=model, tools=[_get_weather], generate_content_config=config)
    app = durable_stack.register(App(name=f"think_{uuid.uuid4().hex[:6]}", root_agent=agent))
    result = await durable_stack.client.run_once(app.name, "u1", "s1", "Weather in Paris?")
    assert result.final_text == "18 C and cloudy."
    assert seen[0]["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert seen[0]["output_config"] == {"effort": "medium"}
    messages = seen[1]["messages"]
    assert isinstance(messages, list)
    assistant = next(m for m in messages if m["role"] == "assistant")
    assert assistant["content"][0] == thinking and assistant["content"][1]["type"] == "tool_use"


async def test_temporal_cli_starts_an_agent_run_with_plain_json(durable_stack: DurableStack) -> None:
    app = durable_stack.register(App(name=f"w1_cli_{uuid.uuid4().hex[:6]}", root_agent=build_agent()))
    payload = {"app_name": app.name, "user_id": "u1", "session_id": "cli", "message": USER_MESSAGE}
    process = await asyncio.create_subprocess_exec(
        temporal_binary(), "workflow", "execute", "--address", durable_stack.address,
        "--type", "AgentRunWorkflow", "--task-queue", durable_stack.task_queue,
        "--workflow-id", f"cli-{uuid.uuid4().hex[:8]}", "--input", json.dumps(payload), "--output", "json",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, stderr.decode()
    output = json.loads(stdout)
    assert output["result"]["final_text"] == "done", output
