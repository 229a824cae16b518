"""Small agents for the eval tests: scripted models as functions of the request."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adk_core import LlmAgent, LlmRequest, ScriptedModel
from adk_core.models import LlmResponse, function_call_response, text_response
from adk_core.runtime import LocalRuntime
from adk_core.types import Content, Part


def function_responses(request: LlmRequest) -> list[tuple[str, dict[str, Any]]]:
    """Every (tool name, response) in the request's contents, oldest first."""
    return [(r.name, r.response) for c in request.contents for r in c.function_responses()]


def user_texts(request: LlmRequest) -> list[str]:
    return [c.text for c in request.contents if c.role == "user" and c.text]


def calls(*pairs: tuple[str, dict[str, Any]]) -> LlmResponse:
    """One model response with several function calls (run concurrently by the engine)."""
    return LlmResponse(
        content=Content(role="model", parts=[Part.from_function_call(name, args) for name, args in pairs]),
        turn_complete=True,
    )


def agent(script: Callable[[LlmRequest], Any], *, name: str = "system", tools: list[Any] | None = None,
          **kwargs: Any) -> LlmAgent:
    return LlmAgent(name=name, model=ScriptedModel(script, name=f"scripted-{name}"), tools=tools or [], **kwargs)


def call_once_then_say(tool: str, args: dict[str, Any], text: str = "done") -> Callable[[LlmRequest], LlmResponse]:
    """Call ``tool`` once, then answer ``text`` (with the tool's response appended)."""

    def script(request: LlmRequest) -> LlmResponse:
        results = [r for n, r in function_responses(request) if n == tool]
        if results:
            return text_response(f"{text}: {results[-1]}")
        return function_call_response(tool, args)

    return script


class FakeClock(LocalRuntime):
    """LocalRuntime with a clock that moves only when told (and by ``step`` per reading)."""

    def __init__(self, start: float = 1_000.0, step: float = 0.0) -> None:
        self.t = start
        self.step = step
        self.ids = 0

    def now(self) -> float:
        self.t += self.step
        return self.t

    def new_id(self) -> str:
        self.ids += 1
        return f"id-{self.ids}"
