"""Cancelling a conversation's workflow (the Temporal UI's or CLI's cancel) ends it cancelled, whatever
it is doing: the running turn stores its events and an error event saying why, its sender hears
CancelledError, the messages queued behind it are answered as not run, and nothing is left waiting."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from datetime import timedelta

import pytest
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import CancelledError

from adk_core import App, LlmAgent, ScriptedModel
from adk_core.agents.execution import AgentExecution
from adk_core.models import (
    LlmRequest,
    LlmResponse,
    function_call_response,
    text_response,
    tool_responses_this_turn,
)
from adk_temporal.workflows import SessionWorkflow, agent_run, session, session_workflow_id
from adk_temporal.workflows.contracts import TurnQuery
from adkt.client import TurnFailedError
from adkt.embedded import TemporalDevServer
from tests.integration.conftest import DurableStack
from tests.integration.test_deletion_cli import invoke

pytestmark = pytest.mark.integration


def _latest_user_text(request: LlmRequest) -> str:
    return next(p.text for content in reversed(request.contents) if content.role == "user"
                for p in content.parts if p.text)


async def _abandon(turn: asyncio.Task, release: asyncio.Event | None = None) -> None:
    """Let a hanging tool return and stop waiting for the turn (bounded)."""
    if release is not None:
        release.set()
    turn.cancel()
    await asyncio.gather(turn, return_exceptions=True)


async def add(a: int, b: int) -> dict:
    """Add two numbers."""
    return {"sum": a + b}


async def _cancel(durable_stack: DurableStack, app: App) -> WorkflowHandle:
    handle = durable_stack.client.client.get_workflow_handle(session_workflow_id(app.name, "u", "s"))
    await handle.cancel()
    return handle


async def _ended_cancelled(handle: WorkflowHandle) -> None:
    with pytest.raises(WorkflowFailureError) as ended:
        await asyncio.wait_for(handle.result(), timeout=30)
    assert isinstance(ended.value.cause, CancelledError)


async def test_a_turn_cancelled_while_its_tool_runs_stores_its_events_and_ends_the_workflow(
    durable_stack: DurableStack,
) -> None:
    tool_started, release = asyncio.Event(), asyncio.Event()

    async def slow_lookup(key: str) -> dict:
        """Look a key up, slowly."""
        tool_started.set()
        await asyncio.wait_for(release.wait(), timeout=30)
        return {"value": key}

    def script(request: LlmRequest) -> LlmResponse:
        if tool_responses_this_turn(request):
            return text_response("found it")
        return function_call_response("slow_lookup", {"key": "x"})

    app = durable_stack.register(App(
        name=f"cancel_{uuid.uuid4().hex[:6]}",
        root_agent=LlmAgent(name="a", model=ScriptedModel(script), tools=[slow_lookup]),
    ))
    turn = asyncio.create_task(durable_stack.client.send(app.name, "u", "s", "look x up"))
    try:
        await asyncio.wait_for(tool_started.wait(), timeout=30)
        assert await durable_stack.client.cancel(app.name, "u", "s")  # returns once the workflow ended
        with pytest.raises(TurnFailedError) as failed:
            await asyncio.wait_for(turn, timeout=30)
        assert failed.value.error_type == "CancelledError"
        await _ended_cancelled(durable_stack.client.client.get_workflow_handle(session_workflow_id(app.name, "u", "s")))
    finally:
        await _abandon(turn, release)

    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert stored is not None
    # The message and the call (the tool's result never came), then why the turn stopped; not a
    # tool error handed to the model, which would have answered and gone on.
    assert [e.author for e in stored.events] == ["user", "a", "a"]
    assert [c.name for c in stored.events[1].function_calls()] == ["slow_lookup"]
    assert stored.events[2].error_code == "CancelledError"


async def _queued(handle: WorkflowHandle, message_id: str) -> None:
    while (await handle.query(SessionWorkflow.turn, TurnQuery(message_id=message_id))).state != "queued":
        await asyncio.sleep(0.05)


async def test_messages_queued_behind_a_cancelled_turn_are_answered_as_not_run(durable_stack: DurableStack) -> None:
    first_call = asyncio.Event()

    async def hang_on_first(request: LlmRequest) -> LlmResponse:
        if _latest_user_text(request) == "first":
            first_call.set()
            await asyncio.sleep(60)  # cancelled through its heartbeat when the workflow is
        return text_response("answered")

    app = durable_stack.register(App(name=f"cancel_{uuid.uuid4().hex[:6]}",
                                     root_agent=LlmAgent(name="a", model=ScriptedModel(hang_on_first))))
    client = durable_stack.client
    first = asyncio.create_task(client.send(app.name, "u", "s", "first"))
    second: asyncio.Task | None = None
    try:
        await asyncio.wait_for(first_call.wait(), timeout=30)
        second = asyncio.create_task(client.send(app.name, "u", "s", "second", message_id="second"))
        handle = client.client.get_workflow_handle(session_workflow_id(app.name, "u", "s"))
        await asyncio.wait_for(_queued(handle, "second"), timeout=30)
        await _cancel(durable_stack, app)
        for task, why in ((first, "its workflow was cancelled"), (second, "before this message ran")):
            with pytest.raises(TurnFailedError) as failed:
                await asyncio.wait_for(task, timeout=30)
            assert failed.value.error_type == "CancelledError" and why in failed.value.reason
        await _ended_cancelled(handle)
    finally:
        for task in (first, second):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert stored is not None
    assert [(e.author, e.text or e.error_code) for e in stored.events] == [("user", "first"), ("a", "CancelledError")]


async def test_adkt_sessions_cancel_stops_an_idle_conversation_and_says_when_nothing_runs(
    durable_stack: DurableStack, temporal_server: TemporalDevServer,
) -> None:
    app = durable_stack.register(App(name=f"cancel_{uuid.uuid4().hex[:6]}",
                                     root_agent=LlmAgent(name="a", model=ScriptedModel(lambda r: "hi"))))
    await asyncio.wait_for(durable_stack.client.send(app.name, "u", "s", "hello"), timeout=30)  # then it waits, idle

    result = await invoke(durable_stack, temporal_server, "sessions", "cancel", app.name, "u", "s")

    assert result.exit_code == 0, result.output
    assert f"cancelled session 's' of user 'u' in app {app.name!r}" in result.output
    handle = durable_stack.client.client.get_workflow_handle(session_workflow_id(app.name, "u", "s"))
    assert (await handle.describe()).status == WorkflowExecutionStatus.CANCELED
    again = await invoke(durable_stack, temporal_server, "sessions", "cancel", app.name, "u", "s")
    assert again.exit_code == 0 and "is not running: nothing to cancel" in again.output, again.output
    # The session stays, and the next message starts the conversation again.
    assert (await asyncio.wait_for(durable_stack.client.send(app.name, "u", "s", "back"), timeout=30)).final_text == "hi"


async def test_cancelling_a_turn_that_outgrew_its_run_stops_the_child_running_it(
    durable_stack: DurableStack, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A long turn goes on in a child workflow that continues as new (docs/durability.md, "Long
    turns"); Temporal cancels a child through the run it started, so the cancellation has to reach
    the child's current run by id. (Before, it reached nothing: the turn ran to its end and the
    conversation kept running.)"""
    monkeypatch.setattr(agent_run, "TURN_HISTORY_EVENTS", 100)  # a few calls a run: read by the in-process worker
    monkeypatch.setattr(session, "TURN_HISTORY_EVENTS", 100)
    deep_in, release = asyncio.Event(), asyncio.Event()

    async def step(i: int) -> dict:
        """Do step i."""
        if i == 30:  # by now the child has continued as new
            deep_in.set()
            await asyncio.wait_for(release.wait(), timeout=30)
        return {"done": i}

    def script(request: LlmRequest) -> LlmResponse:
        n = len(tool_responses_this_turn(request))
        return function_call_response("step", {"i": n}) if n < 60 else text_response("all done")

    app = durable_stack.register(App(name=f"cancel_{uuid.uuid4().hex[:6]}",
                                     root_agent=LlmAgent(name="a", model=ScriptedModel(script), tools=[step])))
    client = durable_stack.client
    turn = asyncio.create_task(client.send(app.name, "u", "s", "go", max_llm_calls=100))
    try:
        await asyncio.wait_for(deep_in.wait(), timeout=60)
        assert await client.cancel(app.name, "u", "s")
        with pytest.raises(TurnFailedError) as failed:
            await asyncio.wait_for(turn, timeout=30)
        assert failed.value.error_type == "CancelledError"
        conversation = session_workflow_id(app.name, "u", "s")
        runs = [e async for e in client.client.list_workflows(f'WorkflowId STARTS_WITH "{conversation}/turn/"')]
        [child] = {run.id for run in runs}
        assert len(runs) > 1, "the child continued as new before the cancel"
        assert (await client.client.get_workflow_handle(child).describe()).status == WorkflowExecutionStatus.CANCELED
    finally:
        await _abandon(turn, release)

    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert stored is not None
    assert len({e.id for e in stored.events}) == len(stored.events)
    assert [r.response for e in stored.events for r in e.function_responses()] == [{"done": i} for i in range(30)]
    assert stored.events[-1].error_code == "CancelledError" and not any(e.text == "all done" for e in stored.events)


async def test_a_cancelled_turn_stores_what_its_calls_left_unstored(durable_stack: DurableStack) -> None:
    """Cancelling the conversation's workflow while a model call runs: the events the turn's earlier
    calls left queued (its message, a call and its result) reach the store with an error event saying
    why the turn stopped, the sender hears it, and the workflow ends cancelled. (Before, the cancelled
    call failed the turn as a ModelError and the workflow went on running.)"""
    second_call = asyncio.Event()

    async def add_then_hang(request: LlmRequest) -> LlmResponse:
        if _latest_user_text(request) == "warm up":
            return text_response("ready")
        if not tool_responses_this_turn(request):
            return function_call_response("add", {"a": 1, "b": 2})
        second_call.set()
        await asyncio.sleep(60)  # cancelled through its heartbeat when the workflow is
        return text_response("too late")

    app = durable_stack.register(App(name=f"cancel_{uuid.uuid4().hex[:6]}",
                                     root_agent=LlmAgent(name="a", model=ScriptedModel(add_then_hang), tools=[add])))
    client = durable_stack.client
    await asyncio.wait_for(client.send(app.name, "u", "s", "warm up"), timeout=30)  # the session exists
    turn = asyncio.create_task(client.send(app.name, "u", "s", "add 1 and 2"))
    try:
        await asyncio.wait_for(second_call.wait(), timeout=30)
        handle = await _cancel(durable_stack, app)  # Temporal's own cancel, as the UI sends it
        with pytest.raises(TurnFailedError) as failed:
            await asyncio.wait_for(turn, timeout=30)
        assert failed.value.error_type == "CancelledError"
        await _ended_cancelled(handle)
    finally:
        await _abandon(turn)

    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert stored is not None
    assert [(e.author, e.text) for e in stored.events[:2]] == [("user", "warm up"), ("a", "ready")]
    turn_events = stored.events[2:]
    assert [e.author for e in turn_events] == ["user", "a", "a", "a"], "the message, the call, its result, why"
    assert turn_events[0].text == "add 1 and 2"
    assert [r.response for r in turn_events[2].function_responses()] == [{"sum": 3}]
    assert turn_events[3].error_code == "CancelledError"


async def test_a_model_call_that_finishes_after_the_cancel_cannot_store_its_answer_after_it(
    durable_stack: DurableStack,
) -> None:
    """The workflow stops waiting for a cancelled model call at once, but the call hears of the
    cancellation only at its next heartbeat: a model that answers before then used to store its
    answer after the turn's CancelledError event, an answer the workflow never saw. The error event
    takes the id the answer would have had, so the store refuses the late answer."""
    call_started, release = asyncio.Event(), asyncio.Event()

    async def answer_when_released(request: LlmRequest) -> LlmResponse:
        call_started.set()
        await asyncio.wait_for(release.wait(), timeout=30)
        return text_response("too late")

    # A long heartbeat timeout: the first beat (which would carry the cancellation) comes after 15 s.
    execution = AgentExecution(model_heartbeat_timeout=timedelta(seconds=60))
    app = durable_stack.register(App(
        name=f"cancel_{uuid.uuid4().hex[:6]}",
        root_agent=LlmAgent(name="a", model=ScriptedModel(answer_when_released), execution=execution),
    ))
    turn = asyncio.create_task(durable_stack.client.send(app.name, "u", "s", "hello"))
    try:
        await asyncio.wait_for(call_started.wait(), timeout=30)
        handle = await _cancel(durable_stack, app)
        with pytest.raises(TurnFailedError) as failed:
            await asyncio.wait_for(turn, timeout=30)
        assert failed.value.error_type == "CancelledError"
        await _ended_cancelled(handle)
        release.set()  # the model answers now, long before its first heartbeat
        for _ in range(30):  # the late answer, were it stored, is there within a few ms of its call's end
            stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
            assert stored is not None
            assert "too late" not in [e.text for e in stored.events], "an answer stored after the cancellation"
            await asyncio.sleep(0.1)
    finally:
        await _abandon(turn, release)
    assert [(e.author, e.text or e.error_code) for e in stored.events] == [("user", "hello"), ("a", "CancelledError")]


async def test_a_cancel_that_comes_after_the_call_stored_its_answer_stores_the_cancellation_after_it(
    durable_stack: DurableStack, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The other order: the call stored its answer, and the cancellation reached the workflow before
    the call's result did. The error event, given the answer's id, meets the stored answer; the
    turn stores it again under an id of its own, after the answer, and the run still ends."""
    app = durable_stack.register(App(
        name=f"cancel_{uuid.uuid4().hex[:6]}",
        root_agent=LlmAgent(name="a", model=ScriptedModel(lambda request: text_response("answered first"))),
    ))
    sessions = durable_stack.sessions
    store = sessions.append_events

    async def cancel_once_the_answer_is_stored(session, events):  # type: ignore[no-untyped-def]
        stored = await store(session, events)
        if session.app_name == app.name and "answered first" in [e.text for e in events]:
            handle = await _cancel(durable_stack, app)
            # The call's result waits until the workflow has ended: the cancellation reaches it first.
            with contextlib.suppress(WorkflowFailureError):
                await asyncio.wait_for(handle.result(), timeout=30)
        return stored

    monkeypatch.setattr(sessions, "append_events", cancel_once_the_answer_is_stored)
    with pytest.raises(TurnFailedError) as failed:
        await asyncio.wait_for(durable_stack.client.send(app.name, "u", "s", "hello"), timeout=30)
    assert failed.value.error_type == "CancelledError"
    await _ended_cancelled(durable_stack.client.client.get_workflow_handle(session_workflow_id(app.name, "u", "s")))
    monkeypatch.undo()

    stored = await sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert stored is not None
    assert [(e.author, e.text or e.error_code) for e in stored.events] == [
        ("user", "hello"), ("a", "answered first"), ("a", "CancelledError"),
    ]
    assert stored.events[1].id != stored.events[2].id
