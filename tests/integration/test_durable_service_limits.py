"""Service methods a durable run cannot offer fail the turn with a clear message (issue 24, item 7).

Before, they raised NotImplementedError: not an AdkError, so Temporal retried the workflow task
forever and the sender waited on a conversation that could never answer.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.client import WorkflowFailureError, WorkflowHistory
from temporalio.exceptions import ApplicationError

from adk_core import AgentExecution, App, LlmAgent, ParallelAgent, ScriptedModel
from adk_core.agents.context import CallbackContext, InvocationContext
from adk_core.models import text_response
from adk_core.plugins import BasePlugin
from adk_temporal.workflows import session_workflow_id
from adkt.client import TurnFailedError
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration


class _CallsService(BasePlugin):
    """Calls one session-service method before the run, as a plugin reporting on users might."""

    def __init__(self, call: Callable[[InvocationContext], Awaitable[Any]]) -> None:
        super().__init__("calls_service")
        self.call = call

    async def before_run_callback(self, *, invocation_context: InvocationContext) -> None:
        await self.call(invocation_context)


def _app(durable_stack: DurableStack, call: Callable[[InvocationContext], Awaitable[Any]]) -> App:
    app = App(
        name=f"limits_{uuid.uuid4().hex[:6]}",
        root_agent=LlmAgent(name="a", model=ScriptedModel([text_response("hello"), text_response("again")])),
        plugins=[_CallsService(call)],
    )
    return durable_stack.register(app)


def _worker_failures(history: WorkflowHistory) -> list[str]:
    """Workflow tasks the worker failed (what Temporal retries without end); a routine
    UnhandledCommand (a signal or cancel arrived while the task completed) is not one."""
    return [
        e.workflow_task_failed_event_attributes.failure.message for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
        and e.workflow_task_failed_event_attributes.cause
        == WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE
    ]


def _list(ctx: InvocationContext) -> Awaitable[Any]:
    return ctx.session_service.list_sessions(app_name=ctx.app_name, user_id=ctx.session.user_id)


def _delete(ctx: InvocationContext) -> Awaitable[Any]:
    return ctx.session_service.delete_session(app_name=ctx.app_name, user_id="someone", session_id="s")


def _create(ctx: InvocationContext) -> Awaitable[Any]:
    return ctx.session_service.create_session(app_name=ctx.app_name, user_id="someone")


def _user_state(ctx: InvocationContext) -> Awaitable[Any]:
    return ctx.session_service.get_user_state(app_name=ctx.app_name, user_id=ctx.session.user_id)


def _app_state(ctx: InvocationContext) -> Awaitable[Any]:
    return ctx.session_service.get_app_state(app_name=ctx.app_name)


def _other_session(ctx: InvocationContext) -> Awaitable[Any]:
    return ctx.session_service.get_session(app_name=ctx.app_name, user_id=ctx.session.user_id, session_id="other")


@pytest.mark.parametrize(
    ("call", "says", "instead"),
    [
        (_list, "list_sessions", "adkt sessions list"),
        (_delete, "delete_session", "outside workflow code"),
        (_create, "create_session", "AdkClient.send"),
        (_user_state, "get_user_state", "session.state"),
        (_app_state, "get_app_state", "session.state"),
        (_other_session, "get_session of another session", "read other sessions from a client"),
    ],
    ids=["list_sessions", "delete_session", "create_session", "get_user_state", "get_app_state", "other_session"],
)
async def test_a_service_call_a_durable_run_cannot_offer_fails_the_turn_not_the_workflow_task(
    durable_stack: DurableStack, call: Callable[[InvocationContext], Awaitable[Any]], says: str, instead: str
) -> None:
    app = _app(durable_stack, call)
    client = durable_stack.client

    with pytest.raises(TurnFailedError) as failed:
        await asyncio.wait_for(client.send(app.name, "u", "s", "hi"), timeout=30)

    assert failed.value.error_type == "UnsupportedOperationError"
    assert failed.value.reason.startswith(f"{says} is not available inside a durable run")
    assert instead in failed.value.reason  # says what to do instead
    # The workflow never failed a workflow task (no spinning), and the conversation goes on.
    handle = client.client.get_workflow_handle(session_workflow_id(app.name, "u", "s"))
    assert not _worker_failures(await handle.fetch_history())
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert stored is not None
    assert stored.events[-1].error_code == "UnsupportedOperationError"
    status = (await handle.describe()).status
    assert status is not None and status.name == "RUNNING"



class _ListsInBranches(BasePlugin):
    """Calls list_sessions when a ParallelAgent branch starts: in its own AgentBranchWorkflow,
    outside the parent's invocation, where an error that is not an AdkError fails workflow tasks."""

    def __init__(self) -> None:
        super().__init__("lists_in_branches")

    async def before_agent_callback(self, *, agent: Any, callback_context: CallbackContext) -> None:
        if agent.name == "left":
            ctx = callback_context.invocation_context
            await ctx.session_service.list_sessions(app_name=ctx.app_name)


async def test_a_branch_child_workflow_fails_instead_of_retrying_its_task(durable_stack: DurableStack) -> None:
    child = AgentExecution(child_workflow=True)
    fan = ParallelAgent(name="fan", sub_agents=[
        LlmAgent(name="left", model=ScriptedModel([text_response("l")]), execution=child),
        LlmAgent(name="right", model=ScriptedModel([text_response("r")]), execution=child),
    ])
    app = durable_stack.register(App(name=f"branch_{uuid.uuid4().hex[:6]}", root_agent=fan, plugins=[_ListsInBranches()]))
    client = durable_stack.client

    parent = session_workflow_id(app.name, "u", "s")
    with pytest.raises(TurnFailedError) as failed:
        try:
            await asyncio.wait_for(client.send(app.name, "u", "s", "hi"), timeout=30)
        except TimeoutError:  # say where it waits: a workflow task failing again and again, or what else
            pytest.fail(f"no answer in 30 s: {await _what_each_workflow_did(client, parent)}")

    assert "list_sessions" in failed.value.reason
    branches = [w async for w in client.client.list_workflows(f"WorkflowType = 'AgentBranchWorkflow' AND WorkflowId STARTS_WITH '{parent}/'")]
    assert branches, "the branch ran as a child workflow"
    for branch in branches:
        assert not _worker_failures(await client.client.get_workflow_handle(branch.id, run_id=branch.run_id).fetch_history())


async def _what_each_workflow_did(client: Any, parent: str) -> dict[str, Any]:
    found = [w async for w in client.client.list_workflows(f"WorkflowId STARTS_WITH '{parent}'")]
    said: dict[str, Any] = {}
    for w in found:
        history = await client.client.get_workflow_handle(w.id, run_id=w.run_id).fetch_history()
        said[w.id] = {"status": w.status, "task failures": _worker_failures(history)[:2],
                      "events": [EventType.Name(e.event_type).removeprefix("EVENT_TYPE_") for e in history.events][-40:]}  # fmt: skip
    return said


async def test_run_once_fails_with_the_message(durable_stack: DurableStack) -> None:
    app = _app(durable_stack, _list)
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(
            durable_stack.client.run_once(app.name, "u", "once", "hi", workflow_id=f"once-{app.name}"), timeout=30
        )
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "UnsupportedOperationError"
    assert cause.message.startswith("list_sessions is not available inside a durable run")
