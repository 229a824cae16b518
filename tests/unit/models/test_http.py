"""The plumbing every provider shares: Retry-After, transport failures, tool-call ids, registry wiring."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from model_wire import SECRET, Wire, collect, simple_request

from adk_core.errors import ModelError
from adk_core.models import Model, resolve_model
from adk_core.models._convert import ToolCallIds, merge_extra
from adk_core.models._http import parse_retry_after
from adk_core.models.anthropic import AnthropicModel
from adk_core.models.gemini import GeminiModel
from adk_core.models.openai import OpenAIModel
from adk_core.types import FunctionCall, FunctionResponse


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "12"}, 12.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "1"}, 0.25),
        ({"retry-after": "Wed, 22 Oct 2025 10:00:45 GMT", "date": "Wed, 22 Oct 2025 10:00:00 GMT"}, 45.0),
        ({"retry-after": "Wed, 22 Oct 2025 09:59:00 GMT", "date": "Wed, 22 Oct 2025 10:00:00 GMT"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(httpx.Headers(headers)) == expected


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
@pytest.mark.parametrize(
    ("exc", "text"),
    [
        (httpx.ConnectError("[Errno 111] Connection refused"), "could not reach gemini"),
        (httpx.ReadTimeout("timed out"), "did not answer in time"),
    ],
    ids=["connect", "timeout"],
)
async def test_transport_failures_are_retryable_without_status(
    wire: Wire, exc: Exception, text: str, stream: bool
) -> None:
    wire.reply_raw(exc)

    with pytest.raises(ModelError, match=text) as caught:
        await collect(
            GeminiModel("gemini-2.5-flash", api_key=SECRET, http_client=wire.client),
            simple_request(),
            stream=stream,
        )

    assert (caught.value.status, caught.value.retryable, caught.value.error_type) == (None, True, "transport")


class _BrokenStream(httpx.AsyncByteStream):
    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
        yield b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}\n\n'
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")


async def test_connection_lost_mid_stream_is_retryable(wire: Wire) -> None:
    wire.reply_raw(httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_BrokenStream()))
    seen = []

    with pytest.raises(ModelError) as caught:
        async for response in AnthropicModel(
            "claude-sonnet-4-5", api_key=SECRET, http_client=wire.client
        ).generate_content(simple_request(), stream=True):
            seen.append(response)

    assert [r.content.text for r in seen if r.content] == ["Hel"]
    assert caught.value.retryable and caught.value.status is None


async def test_success_status_with_unexpected_body_is_a_clear_error(wire: Wire) -> None:
    model = OpenAIModel("gpt-4o", api_key=SECRET, http_client=wire.client)
    wire.reply_raw(
        httpx.Response(200, headers={"content-type": "text/html"}, text="<html>captive portal</html>")
    )
    with pytest.raises(ModelError, match="not JSON"):
        await collect(model, simple_request())

    wire.reply_raw(httpx.Response(200, headers={"content-type": "application/json"}, text="{}"))
    with pytest.raises(ModelError, match="event stream"):
        await collect(model, simple_request(), stream=True)


def test_tool_call_ids_pair_calls_and_responses_by_name_in_order() -> None:
    ids = ToolCallIds()
    first = ids.for_call(FunctionCall(name="get_weather"))
    second = ids.for_call(FunctionCall(name="get_weather"))
    lookup = ids.for_call(FunctionCall(name="ns.lookup"))

    assert (first, second, lookup) == ("call_1_get_weather", "call_2_get_weather", "call_3_ns_lookup")
    assert ids.for_call(FunctionCall(name="x", id="given")) == "given"
    assert ids.for_response(FunctionResponse(name="get_weather")) == first
    assert ids.for_response(FunctionResponse(name="get_weather")) == second
    assert ids.for_response(FunctionResponse(name="ns.lookup")) == lookup


def test_merge_extra_adds_nested_keys_instead_of_replacing() -> None:
    body = {"generationConfig": {"temperature": 0.1}, "contents": []}
    merge_extra(body, {"generationConfig": {"thinkingConfig": {"thinkingBudget": 0}}, "labels": {"a": "b"}})
    assert body == {
        "generationConfig": {"temperature": 0.1, "thinkingConfig": {"thinkingBudget": 0}},
        "contents": [],
        "labels": {"a": "b"},
    }


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("gemini-2.5-flash", GeminiModel),
        ("claude-sonnet-4-5", AnthropicModel),
        ("gpt-4o", OpenAIModel),
        ("openai/qwen3", OpenAIModel),
    ],
)
def test_registry_builds_each_provider_from_its_name(name: str, cls: type) -> None:
    model = resolve_model(name)
    assert type(model) is cls and model.name == name
    assert isinstance(model, Model)
