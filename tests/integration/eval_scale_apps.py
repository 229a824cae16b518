"""Eval cases for the suite-at-scale, streaming-metric and replay tests (imported by reference by workers).

    thousand        1,000 one-turn cases with an instant scripted model (continue-as-new, scale)
    slow            4 cases whose model takes SLOW_S per call, for cancel and resume
    timed           one case whose tool mock takes TOOL_S, for the streaming metrics
    replayed        a case with a before-tool callback that writes state; a metric checks it
    replayed_changed  the same case with the callback changed, for replay
    replayed_diverging  the same case with an after-model callback that asks the model once more
    replay_calls    the system model's calls in this process: a replay adds none

Every model here is a function of the request (a retry or replay answers the same).
"""

from __future__ import annotations

import asyncio
from typing import Any

from adk_core import LlmAgent, LlmRequest, ScriptedModel
from adk_core.eval import EvalCase, ToolMock, metric, state_metric
from adk_core.models import LlmResponse, function_call_response, text_response
from adk_core.models.base import UsageMetadata

SLOW_S = 0.4
TOOL_S = 0.3


def _answer(request: LlmRequest) -> LlmResponse:
    return text_response("ok")


_quick = LlmAgent(name="quick", model=ScriptedModel(_answer, name="scripted-quick"))

thousand = [
    EvalCase(f"n{i:04d}", app_or_agent=_quick, first_message="hi",
             metrics=[metric("ok", lambda trace: trace.final_response() == "ok")])
    for i in range(1000)
]  # fmt: skip


slow_calls: list[int] = []
"""One entry per call of the slow model in this process: a resume must not call it for finished trials."""


class _SlowModel(ScriptedModel):
    """Answers after SLOW_S (a real model's latency, in small)."""

    async def generate_content(self, request: LlmRequest, stream: bool = False) -> Any:
        slow_calls.append(1)
        await asyncio.sleep(SLOW_S)
        async for response in super().generate_content(request, stream=stream):
            yield response


_slow = LlmAgent(name="slow", model=_SlowModel(_answer, name="scripted-slow"))
slow = [
    EvalCase(f"slow{i}", app_or_agent=_slow, first_message="hi",
             metrics=[metric("ok", lambda trace: trace.final_response() == "ok")])
    for i in range(4)
]  # fmt: skip


# --- streaming metrics ------------------------------------------------------------------------------
def lookup(key: str) -> dict:
    """Look a key up in an external service."""
    raise RuntimeError("never called in eval: mocked")


async def _slow_lookup(args: dict) -> dict:
    await asyncio.sleep(TOOL_S)  # a mock that takes as long as the service would
    return {"value": 2}


def _lookup_then_answer(request: LlmRequest) -> LlmResponse:
    done = [r.response for c in request.contents for r in c.function_responses()]
    if not done:
        return function_call_response("lookup", {"key": "x"})
    response = text_response(f"value {done[-1]['value']}")
    usage = UsageMetadata(prompt_token_count=1000, candidates_token_count=100)
    return response.model_copy(update={"usage_metadata": usage, "model_version": "gemini-2.5-flash"})


timed = EvalCase(
    "timed",
    app_or_agent=LlmAgent(name="timed", model=ScriptedModel(_lookup_then_answer, name="gemini-2.5-flash"),
                          tools=[lookup]),
    tool_mocks={"lookup": ToolMock(execute=_slow_lookup)},
    first_message="look x up",
    metrics=[metric("answered", lambda trace: trace.final_response() == "value 2")],
)


# --- replay -----------------------------------------------------------------------------------------
replay_calls: list[int] = []


def _replay_script(request: LlmRequest) -> LlmResponse:
    replay_calls.append(1)
    return _lookup_then_answer(request)


def _mark(tool: Any, args: dict, tool_context: Any) -> None:
    tool_context.state["marked"] = args.get("key")


def _mark_changed(tool: Any, args: dict, tool_context: Any) -> None:
    tool_context.state["marked"] = "changed"


def _ask_again(callback_context: Any, llm_response: LlmResponse) -> LlmResponse | None:
    """Turns the final answer into one more lookup: the agent then wants a third model response."""
    if llm_response.content is not None and llm_response.content.text == "value 2":
        return function_call_response("lookup", {"key": "y"})
    return None


def _replay_case(callback: Any, after_model: Any = None) -> EvalCase:
    agent = LlmAgent(name="marker", model=ScriptedModel(_replay_script, name="scripted-marker"), tools=[lookup],
                     before_tool_callback=callback, after_model_callback=after_model)
    return EvalCase(
        "replayed",
        app_or_agent=agent,
        tool_mocks={"lookup": ToolMock(execute=lambda args: {"value": 2})},
        first_message="look x up",
        metrics=[state_metric(name="marked_x", key="marked", assertion=lambda v: v == "x"),
                 metric("answered", lambda trace: trace.final_response() == "value 2")],
    )


replayed = _replay_case(_mark)
replayed_changed = _replay_case(_mark_changed)
replayed_diverging = _replay_case(_mark, after_model=_ask_again)
