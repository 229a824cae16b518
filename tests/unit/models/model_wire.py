"""Helpers for the provider tests: recorded payloads, a fake wire, and the weather conversation.

A plain module rather than conftest.py so tests can import it by a name no other test folder uses.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from adk_core.errors import ModelError
from adk_core.models import FunctionDeclaration, GenerateContentConfig, LlmRequest, LlmResponse
from adk_core.types import Content, Part

PAYLOADS = Path(__file__).parent / "payloads"
SECRET = "sk-test-abcdefghijklmnopqrstuvwxyz0123456789-secret"
"""A fake API key the tests look for everywhere it must not appear."""

KEY_ENV_VARS = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL")

WEATHER_TOOL = FunctionDeclaration(
    name="get_weather",
    description="Current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def payload(name: str) -> str:
    return (PAYLOADS / name).read_text()


class Wire:
    """An httpx MockTransport that answers with queued responses and records every request."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self._responses: list[httpx.Response | Exception] = []
        self.client = httpx.AsyncClient(transport=httpx.MockTransport(self._handle))

    def reply(self, fixture: str, status: int = 200, headers: dict[str, str] | None = None) -> None:
        """Queue the payload file ``fixture``; ``.sse`` files are served as an event stream."""
        content_type = "text/event-stream" if fixture.endswith(".sse") else "application/json"
        all_headers = {"content-type": content_type, **(headers or {})}
        self._responses.append(httpx.Response(status, headers=all_headers, content=payload(fixture).encode()))

    def reply_raw(self, response: httpx.Response | Exception) -> None:
        self._responses.append(response)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self._responses.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    @property
    def request(self) -> httpx.Request:
        return self.requests[-1]

    @property
    def body(self) -> dict[str, Any]:
        return json.loads(self.request.content)


def simple_request(text: str = "What is the capital of France?") -> LlmRequest:
    return LlmRequest(contents=[Content.user(text)])


def weather_history(call_id: str | None = "call_1") -> LlmRequest:
    """A user question, the model's tool call, and the tool's answer: the usual second model turn."""
    return LlmRequest(
        contents=[
            Content.user("What's the weather in Paris?"),
            Content(
                role="model",
                parts=[
                    Part(text="Let me check."),
                    Part.from_function_call("get_weather", {"city": "Paris"}, id=call_id),
                ],
            ),
            Content(
                role="user",
                parts=[
                    Part.from_function_response(
                        "get_weather", {"temp_c": 18, "conditions": "cloudy"}, id=call_id
                    )
                ],
            ),
        ],
        config=GenerateContentConfig(
            system_instruction="You are a weather assistant.",
            tools=[WEATHER_TOOL],
            tool_choice="auto",
            temperature=0.2,
            max_output_tokens=256,
        ),
    )


async def collect(model: Any, request: LlmRequest, *, stream: bool = False) -> list[LlmResponse]:
    return [response async for response in model.generate_content(request, stream=stream)]


ErrorCase = tuple[str, int, dict[str, str], bool, float | None, str]
"""(fixture, status, headers, retryable, retry_after, text the message must contain)."""


def error_cases(provider: str, cases: list[ErrorCase]) -> Callable[[Any], Any]:
    ids = [f"{provider}-{status}" for _, status, *_ in cases]
    return pytest.mark.parametrize(
        ("fixture", "status", "headers", "retryable", "retry_after", "message"), cases, ids=ids
    )


async def expect_model_error(
    model: Any, wire: Wire, case: ErrorCase, *, stream: bool, provider: str
) -> None:
    """Reply with the case's recorded error and check the ModelError the model raises for it."""
    fixture, status, headers, retryable, retry_after, message = case
    wire.reply(fixture, status, headers)
    with pytest.raises(ModelError) as caught:
        await collect(model, simple_request(), stream=stream)
    error = caught.value
    assert (error.status, error.retryable, error.retry_after, error.provider) == (
        status, retryable, retry_after, provider,
    )  # fmt: skip
    assert message in str(error)
