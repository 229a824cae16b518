"""An event id stored with other content is refused through the durable append path, not dropped
(issue 24, item 8); a retried commit of the same events stays an idempotent repeat."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause

from adk_core import App, LlmAgent, ScriptedModel
from adk_core.agents.context import InvocationContext
from adk_core.models import text_response
from adk_core.plugins import BasePlugin
from adk_core.types import Content, Event
from adk_temporal.workflows import session_workflow_id
from adkt.client import TurnFailedError
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration


class _ReusesAnId(BasePlugin):
    """When armed, gives the next answer the id of an answer already stored, with new text: what a
    plugin that builds events with its own (colliding) ids would do."""

    def __init__(self) -> None:
        super().__init__("reuses_an_id")
        self.reuse: str | None = None

    async def on_event_callback(self, *, invocation_context: InvocationContext, event: Event) -> Event | None:
        if self.reuse is None or event.author == "user":
            return None
        event_id, self.reuse = self.reuse, None
        return event.model_copy(update={"id": event_id, "content": Content.model("a different answer")})


async def test_a_reused_event_id_fails_the_turn_naming_the_id_and_keeps_the_stored_event(
    durable_stack: DurableStack,
) -> None:
    plugin = _ReusesAnId()
    answers = ScriptedModel([text_response("first answer"), text_response("second answer"), text_response("third")])
    app = durable_stack.register(
        App(name=f"conflict_{uuid.uuid4().hex[:6]}", root_agent=LlmAgent(name="a", model=answers), plugins=[plugin])
    )
    client = durable_stack.client
    first = await asyncio.wait_for(client.send(app.name, "u", "s", "one"), timeout=30)
    (answer,) = [e for e in first.events if e.author == "a"]

    plugin.reuse = answer.id
    with pytest.raises(TurnFailedError) as failed:
        await asyncio.wait_for(client.send(app.name, "u", "s", "two"), timeout=30)

    assert failed.value.error_type == "EventConflictError"
    assert repr(answer.id) in failed.value.reason and "different content" in failed.value.reason
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert stored is not None
    kept = [e for e in stored.events if e.id == answer.id]
    assert [e.text for e in kept] == ["first answer"]  # stored once, as first written
    assert stored.events[-1].error_code == "EventConflictError"
    # The conversation goes on, and its workflow never failed a task over this.
    third = await asyncio.wait_for(client.send(app.name, "u", "s", "three"), timeout=30)
    assert third.final_text == "third"
    history = await client.client.get_workflow_handle(session_workflow_id(app.name, "u", "s")).fetch_history()
    assert not [
        e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
        and e.workflow_task_failed_event_attributes.cause
        == WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE
    ]
