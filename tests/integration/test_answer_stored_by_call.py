"""A model call stores the agent's answer itself (ModelCallInput.answer, workflows/runtime.py): the
turn ends without a commit of its own (no local activity in its last workflow task), the store holds
exactly what the turn returned, a retried call hands back the answer its lost attempt stored instead
of asking the model again, and an agent whose callbacks can change the answer commits it as before."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from adk_core import App, LlmAgent, ScriptedModel
from adk_core.agents.context import CallbackContext
from adk_core.models import LlmResponse, function_call_response, text_response
from adk_core.types import Content
from adk_temporal.activities import contracts as c
from adk_temporal.worker import build_worker
from adk_temporal.workflows import session_workflow_id
from adkt.client import AdkClient
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration


async def add(a: int, b: int) -> dict:
    """Add two numbers."""
    return {"sum": a + b}


def _app(model: ScriptedModel, **agent: Any) -> App:
    return App(name=f"answer_{uuid.uuid4().hex[:6]}", root_agent=LlmAgent(name="a", model=model, tools=[add], **agent))


async def _last_task(client: AdkClient, app: str) -> list[str]:
    """The event types of the session workflow's history after its last activity completed."""
    history = await client.client.get_workflow_handle(session_workflow_id(app, "u", "s")).fetch_history()
    names = [EventType.Name(e.event_type).removeprefix("EVENT_TYPE_") for e in history.events]
    last = max(i for i, name in enumerate(names) if name == "ACTIVITY_TASK_COMPLETED")
    return names[last + 1:]


async def test_the_answer_is_stored_by_its_model_call_and_the_turn_commits_nothing_after(
    durable_stack: DurableStack,
) -> None:
    model = ScriptedModel([function_call_response("add", {"a": 1, "b": 2}), text_response("three"),
                           text_response("again")])  # fmt: skip
    app = durable_stack.register(_app(model))
    client = durable_stack.client

    first = await asyncio.wait_for(client.send(app.name, "u", "s", "add 1 and 2"), timeout=30)
    assert first.final_text == "three"
    # The last workflow task only ends the turn: no local activity stores anything in it.
    assert await _last_task(client, app.name) == [
        "WORKFLOW_TASK_SCHEDULED", "WORKFLOW_TASK_STARTED", "WORKFLOW_TASK_COMPLETED", "WORKFLOW_EXECUTION_UPDATE_COMPLETED",
    ]
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert stored is not None
    # Stored exactly as the turn returned it (the user's message is not among the turn's events).
    assert stored.events[1:] == first.events
    assert [e.author for e in stored.events] == ["user", "a", "a", "a"]

    # The next turn follows it: its commits go after the answer the model call stored.
    second = await asyncio.wait_for(client.send(app.name, "u", "s", "and again?"), timeout=30)
    assert second.final_text == "again"
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert stored is not None
    assert [e.text for e in stored.events if e.text] == ["add 1 and 2", "three", "and again?", "again"]
    assert stored.events[-1] == second.events[-1]
    assert [e.timestamp for e in stored.events] == sorted(e.timestamp for e in stored.events)


def _shout(callback_context: CallbackContext, llm_response: LlmResponse) -> LlmResponse | None:
    text = llm_response.content.parts[0].text if llm_response.content and llm_response.content.parts else None
    return text_response(text.upper()) if text else None


async def test_an_answer_a_callback_can_change_is_committed_by_the_turn(durable_stack: DurableStack) -> None:
    app = durable_stack.register(_app(ScriptedModel([text_response("quiet")]), after_model_callback=_shout))
    client = durable_stack.client

    result = await asyncio.wait_for(client.send(app.name, "u", "s", "speak"), timeout=30)

    assert result.final_text == "QUIET"
    assert "MARKER_RECORDED" in await _last_task(client, app.name)  # the turn's own commit, a local activity
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert stored is not None and stored.events[-1] == result.events[-1]
    assert stored.events[-1].callback_response is not None  # what the model said is kept with it


class _LoseFirstAnswer(Interceptor):
    """Fails a model call's first attempt after it stored its answer: what a worker dying before
    Temporal records the activity's result looks like to the next attempt."""

    def __init__(self) -> None:
        self.lost = 0

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        outer = self

        class Lose(ActivityInboundInterceptor):
            async def execute_activity(self, input: ExecuteActivityInput) -> Any:
                result = await super().execute_activity(input)
                info = activity.info()
                if (info.activity_type == c.GENERATE_CONTENT and info.attempt == 1
                        and isinstance(result, c.ModelCallResult) and result.answer_stored):
                    outer.lost += 1
                    raise RuntimeError("the worker died before Temporal recorded this result")
                return result

        return Lose(next)


async def test_a_retried_model_call_returns_the_answer_its_lost_attempt_stored(durable_stack: DurableStack) -> None:
    model = ScriptedModel([text_response("the first answer"), text_response("another answer")])
    app = _app(model)
    queue = f"answer-{uuid.uuid4().hex[:8]}"
    losing = _LoseFirstAnswer()
    worker = build_worker(
        durable_stack.client.client, [app], task_queue=queue, session_service=durable_stack.sessions,
        memory_service=durable_stack.memory, interceptors=[losing],
    )
    run = asyncio.create_task(worker.run())
    try:
        client = AdkClient(durable_stack.client.client, task_queue=queue)
        result = await asyncio.wait_for(client.send(app.name, "u", "s", "hello"), timeout=60)
    finally:
        await asyncio.wait_for(worker.shutdown(), timeout=60)
        await asyncio.wait_for(asyncio.gather(run, return_exceptions=True), timeout=10)

    assert losing.lost == 1
    assert result.final_text == "the first answer"
    assert len(model.requests) == 1  # the retry found the stored answer: the model was asked once
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert stored is not None
    assert [e.text for e in stored.events] == ["hello", "the first answer"]
    assert stored.events[-1] == result.events[-1]
    assert stored.events[0].content == Content.user("hello")
