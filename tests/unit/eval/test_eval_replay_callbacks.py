"""Replay (adk_core.eval.replay) and model callbacks: a response an after-model callback (the
agent's or a plugin's, returned or edited in place) replaced is replayed from what the model said,
so a changed callback sees the model's own words; a response a before-model callback made up is no
model's and is not handed out; and events no callback touched serialize as they always did."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from adk_core import App, BasePlugin, LlmAgent, LlmRequest, ScriptedModel
from adk_core.eval import EvalCase, ToolMock, metric, run_eval
from adk_core.eval.replay import recorded_responses, replay_case, trace_changes
from adk_core.models import LlmResponse, function_call_response, text_response
from adk_core.types import Content, Event, Part

model_calls: list[int] = []


def lookup(key: str) -> dict:
    """Look a key up."""
    raise RuntimeError("mocked")


def _script(request: LlmRequest) -> LlmResponse:
    model_calls.append(1)
    done = [r.response for c in request.contents for r in c.function_responses()]
    return (
        text_response(f"value {done[-1]['value']}")
        if done
        else function_call_response("lookup", {"key": "k"})
    )


def _checked(callback_context: Any, llm_response: LlmResponse) -> LlmResponse | None:
    """Appends a marker to each text answer (applied to its own output, it would append a second)."""
    text = llm_response.content.text if llm_response.content else ""
    return text_response(f"{text} [checked]") if text else None


def _checked_in_place(callback_context: Any, llm_response: LlmResponse) -> None:
    """The same, by editing the model's response instead of returning another."""
    if llm_response.content is not None and llm_response.content.text:
        llm_response.content.parts[0].text = f"{llm_response.content.text} [checked]"


class _CheckedPlugin(BasePlugin):
    async def after_model_callback(
        self, *, callback_context: Any, llm_response: LlmResponse
    ) -> LlmResponse | None:
        return _checked(callback_context, llm_response)


def _leave_alone(callback_context: Any, llm_response: LlmResponse) -> None:
    return None


def _case(*, after_model: Callable[..., Any] | None = None, plugin: BasePlugin | None = None,
          before_model: Callable[..., Any] | None = None) -> EvalCase:  # fmt: skip
    agent = LlmAgent(name="sys", model=ScriptedModel(_script), tools=[lookup],
                     after_model_callback=after_model, before_model_callback=before_model)  # fmt: skip
    return EvalCase(
        "replay-callbacks",
        app_or_agent=App(name="replay-callbacks", root_agent=agent, plugins=[plugin] if plugin else []),
        tool_mocks={"lookup": ToolMock(execute=lambda args: {"value": 2})},
        first_message="go",
        metrics=[metric("answered", lambda t: t.final_response().startswith("value 2"))],
    )


def _texts(responses: list[LlmResponse]) -> list[str]:
    return [r.content.function_calls()[0].name if r.content.function_calls() else r.content.text
            for r in responses if r.content is not None]  # fmt: skip


@pytest.mark.parametrize(
    "rewriting",
    [{"after_model": _checked}, {"after_model": _checked_in_place}, {"plugin": _CheckedPlugin("checked")}],
    ids=["agent-callback-returns", "agent-callback-edits-in-place", "plugin-callback"],
)
async def test_a_replay_hands_the_callback_what_the_model_said(rewriting: dict[str, Any]) -> None:
    recorded = await run_eval(_case(**rewriting))
    assert recorded.status == "passed" and recorded.events[-1].text == "value 2 [checked]"
    # The stored event shows the rewritten answer; the recording keeps the model's own.
    assert _texts(recorded_responses(recorded.events)["sys"]) == ["lookup", "value 2"]

    calls = len(model_calls)
    same, runtime = await replay_case(_case(**rewriting), recorded.events)
    assert runtime.diverged is None and runtime.unused() == {} and same.status == recorded.status
    assert trace_changes(recorded.events, same.events) == [], "the unchanged callback reproduces the trial"

    # The callback no longer rewrites: the replayed trace shows what the model answered.
    plain, runtime = await replay_case(_case(), recorded.events)
    assert runtime.diverged is None and plain.events[-1].text == "value 2"
    assert trace_changes(recorded.events, plain.events) == [
        "event 3: recorded ('sys', 'value 2 [checked]', [], [], {}), replayed ('sys', 'value 2', [], [], {})"
    ]
    assert len(model_calls) == calls


async def test_a_callback_that_returns_the_same_response_marks_nothing() -> None:
    recorded = await run_eval(_case(after_model=_leave_alone))
    assert all(e.callback_response is None for e in recorded.events)


def _answers_first(callback_context: Any, llm_request: LlmRequest) -> LlmResponse | None:
    """Makes up the agent's first model response (the lookup) itself; the model gives the rest."""
    asked = any(r for c in llm_request.contents for r in c.function_responses())
    return None if asked else function_call_response("lookup", {"key": "k"})


async def test_a_response_a_before_model_callback_made_up_is_not_handed_out_as_the_models() -> None:
    recorded = await run_eval(_case(before_model=_answers_first))
    assert recorded.status == "passed"
    assert _texts(recorded_responses(recorded.events)["sys"]) == ["value 2"]
    calls = len(model_calls)
    again, runtime = await replay_case(_case(before_model=_answers_first), recorded.events)
    assert runtime.diverged is None and runtime.unused() == {} and again.status == "passed"
    assert trace_changes(recorded.events, again.events) == [] and len(model_calls) == calls


_EVENT_FIELDS = {
    "id", "invocation_id", "author", "branch", "timestamp", "content", "partial", "turn_complete", "finish_reason",
    "error_code", "error_message", "interrupted", "long_running_tool_ids", "usage_metadata", "custom_metadata",
    "model_version", "actions",
}  # fmt: skip


async def test_events_no_callback_replaced_serialize_as_before_and_a_marked_one_round_trips() -> None:
    plain = Event(author="sys", content=Content(role="model", parts=[Part(text="hi")]))
    assert set(json.loads(plain.model_dump_json())) == _EVENT_FIELDS
    assert set(plain.model_dump()) == _EVENT_FIELDS
    recorded = await run_eval(_case())
    assert all(set(json.loads(e.model_dump_json())) == _EVENT_FIELDS for e in recorded.events)

    marked = (await run_eval(_case(after_model=_checked))).events[-1]
    assert (
        marked.callback_response is not None and marked.callback_response.callback == "after_model_callback"
    )
    assert marked.callback_response.model_response is not None
    assert marked.callback_response.model_response.content == Content(
        role="model", parts=[Part(text="value 2")]
    )
    assert Event.model_validate_json(marked.model_dump_json()) == marked
