"""ScriptedModel: a deterministic model for tests, public so users can test their own agents."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from ..errors import ConfigurationError
from ..types import Content, Part
from .base import LlmRequest, LlmResponse

ScriptItem = LlmResponse | str | Content | Part | list[LlmResponse]
"""One scripted answer: a response, text, content, a single part, or a list of streamed chunks."""
ScriptFunction = Callable[[LlmRequest], ScriptItem | Awaitable[ScriptItem]]


def tool_responses_this_turn(request: LlmRequest) -> list[dict[str, Any]]:
    """The tool results the request carries since the user's latest words (the newest user content
    with text), oldest first: what a script function usually decides its next answer by."""
    newest_first: list[dict[str, Any]] = []
    for content in reversed(request.contents):
        if content.role == "user" and any(p.text for p in content.parts):
            break
        # Gathered newest first and turned round once: putting each at the front instead made a
        # turn of n tool calls cost n² a model call (bench_long_turn's own model spent most of it).
        newest_first.extend(reversed([p.function_response.response for p in content.parts if p.function_response is not None]))
    newest_first.reverse()
    return newest_first


def text_response(text: str) -> LlmResponse:
    return LlmResponse(content=Content(role="model", parts=[Part(text=text)]), turn_complete=True)


def function_call_response(name: str, args: dict[str, Any] | None = None, *, id: str | None = None) -> LlmResponse:
    return LlmResponse(
        content=Content(role="model", parts=[Part.from_function_call(name, args or {}, id=id)]),
        turn_complete=True,
    )


def _as_responses(item: ScriptItem) -> list[LlmResponse]:
    if isinstance(item, LlmResponse):
        return [item]
    if isinstance(item, str):
        return [text_response(item)]
    if isinstance(item, Content):
        return [LlmResponse(content=item.model_copy(update={"role": "model"}), turn_complete=True)]
    if isinstance(item, Part):
        return [LlmResponse(content=Content(role="model", parts=[item]), turn_complete=True)]
    if isinstance(item, list) and all(isinstance(r, LlmResponse) for r in item):
        return list(item)
    raise ConfigurationError(
        f"ScriptedModel cannot use {type(item).__name__} as a response; give an LlmResponse, str, Content, "
        "Part, or a list of LlmResponse chunks"
    )


class ScriptedModel:
    """Answers from a script instead of a provider.

    Args:
        script: a list of answers used in order (one per call), or a function of the request
            returning the answer. Prefer a function for durable runs: a list keeps its position in
            process memory, so a retried or relocated model activity would take the next item.
        name: the model name reported in requests and telemetry.
        record_requests: keep each request in ``requests`` (the default). A benchmark's model leaves
            it off: recording holds every request's contents, which the garbage collector then scans.
        fresh_responses: the script builds a new response object on every call (as ``w1_script``
            does), so each is handed out as it is. By default each is deep-copied, because a script
            may hand out the same object twice and the flow fills in what it receives.

    Unless ``record_requests`` is off, every request is recorded in ``requests`` for assertions: the
    newest ``MAX_RECORDED`` of them, so a worker serving a scripted app for days (``adkt dev`` on an
    example) does not grow forever.
    """

    MAX_RECORDED = 10_000

    def __init__(
        self,
        script: Sequence[ScriptItem] | ScriptFunction,
        *,
        name: str = "scripted",
        record_requests: bool = True,
        fresh_responses: bool = False,
    ) -> None:
        self._name = name
        self._script = script
        self._record = record_requests
        self._copy = not fresh_responses
        self._position = 0
        self.requests: list[LlmRequest] = []

    @property
    def name(self) -> str:
        return self._name

    async def generate_content(self, request: LlmRequest, *, stream: bool = False) -> AsyncIterator[LlmResponse]:
        if self._record:
            self.requests.append(request)
            if len(self.requests) > self.MAX_RECORDED:
                del self.requests[: len(self.requests) - self.MAX_RECORDED]
        for response in _as_responses(await self._next(request)):
            # A fresh deep copy: a script may hand out the same response object twice. (Not rebuilt
            # from model_dump(exclude_unset=True): that drops lists a script filled in place.)
            yield response.model_copy(deep=True) if self._copy else response

    async def _next(self, request: LlmRequest) -> ScriptItem:
        if callable(self._script):
            item = self._script(request)
            return await item if inspect.isawaitable(item) else item
        if self._position >= len(self._script):
            raise ConfigurationError(
                f"ScriptedModel {self._name!r} ran out of responses after {len(self._script)} calls; "
                "add more responses to its script, or pass a function of the request"
            )
        item = self._script[self._position]
        self._position += 1
        return item
