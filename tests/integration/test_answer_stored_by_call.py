"""A model call stores the agent's answer itself (ModelCallInput.answer, workflows/runtime.py): the
turn ends without a commit of its own (no local activity in its last workflow task), the store holds
exactly what the turn returned, a retried call hands back the answer its lost attempt stored instead
of asking the model again (or that a still-running attempt stored first, even while a later attempt ran
that stores none of its own), the last allowed attempt leaves its answer to the turn's commit, and an agent whose callbacks can change the answer commits it
as before. The calls before it leave their events unstored (ModelCallInput.defer_commit): a short turn
reaches the store in one write, a long one as it goes."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from adk_core import AgentExecution, App, LlmAgent, ScriptedModel
from adk_core.agents.context import CallbackContext
from adk_core.compaction import EventsCompactionConfig
from adk_core.flow.llm_flow import answer_event
from adk_core.models import (
    LlmRequest,
    LlmResponse,
    function_call_response,
    text_response,
    tool_responses_this_turn,
)
from adk_core.sessions import Session
from adk_core.tools import RetryOptions
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
    stored = await _committed_by_the_turn(durable_stack, app, result)
    assert stored.callback_response is not None  # what the model said is kept with it


async def _committed_by_the_turn(durable_stack: DurableStack, app: App, result: Any) -> Any:
    """The turn's answer as stored, after checking the turn committed it itself (its last workflow
    task runs the commit, a local activity) exactly as it returned it."""
    assert "MARKER_RECORDED" in await _last_task(durable_stack.client, app.name)
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert stored is not None and stored.events[-1] == result.events[-1]
    return stored.events[-1]


class _Attempts(Interceptor):
    """Runs a model call's attempts under the test's control: ``fail_before`` attempts fail without
    calling the model (a worker lost before it began), ``drop_after`` attempts have their result
    dropped once done (a worker lost before Temporal recorded it). Each call's input is kept."""

    def __init__(self, *, fail_before: tuple[int, ...] = (), drop_after: tuple[int, ...] = ()) -> None:
        self.fail_before, self.drop_after = fail_before, drop_after
        self.inputs: list[c.ModelCallInput] = []
        self.results: list[c.ModelCallResult] = []

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        outer = self

        class Control(ActivityInboundInterceptor):
            async def execute_activity(self, input: ExecuteActivityInput) -> Any:
                info = activity.info()
                if info.activity_type != c.GENERATE_CONTENT:
                    return await super().execute_activity(input)
                outer.inputs.append(input.args[0])
                if info.attempt in outer.fail_before:
                    raise RuntimeError("the worker was lost before this attempt called the model")
                result = await super().execute_activity(input)
                outer.results.append(result)
                if info.attempt in outer.drop_after:
                    raise RuntimeError("the worker died before Temporal recorded this result")
                return result

        return Control(next)


async def _send_through(durable_stack: DurableStack, app: App, attempts: _Attempts, message: str) -> Any:
    """``message`` sent to a worker of its own running under ``attempts``: the turn's result, or
    the exception the send raised."""
    queue = f"answer-{uuid.uuid4().hex[:8]}"
    worker = build_worker(
        durable_stack.client.client, [app], task_queue=queue, session_service=durable_stack.sessions,
        memory_service=durable_stack.memory, interceptors=[attempts],
    )
    run = asyncio.create_task(worker.run())
    try:
        client = AdkClient(durable_stack.client.client, task_queue=queue)
        try:
            return await asyncio.wait_for(client.send(app.name, "u", "s", message), timeout=60)
        except Exception as failed:  # noqa: BLE001  (the caller asserts on it)
            return failed
    finally:
        await asyncio.wait_for(worker.shutdown(), timeout=60)
        await asyncio.wait_for(asyncio.gather(run, return_exceptions=True), timeout=10)


async def test_a_retried_model_call_returns_the_answer_its_lost_attempt_stored(durable_stack: DurableStack) -> None:
    model = ScriptedModel([text_response("the first answer"), text_response("another answer")])
    app = _app(model)
    attempts = _Attempts(drop_after=(1,))

    result = await _send_through(durable_stack, app, attempts, "hello")

    assert not isinstance(result, BaseException), result
    assert [r.answer_stored for r in attempts.results] == [True, True]  # the first stored it, then was lost
    assert result.final_text == "the first answer"
    assert len(model.requests) == 1  # the retry found the stored answer: the model was asked once
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert stored is not None
    assert [e.text for e in stored.events] == ["hello", "the first answer"]
    assert stored.events[-1] == result.events[-1]
    assert stored.events[0].content == Content.user("hello")


EARLIER_ANSWER = "the answer of the earlier attempt"


def _earlier_attempt_stores_its_answer_meanwhile(
    durable_stack: DurableStack, attempts: _Attempts, own: str | LlmResponse,
) -> Any:
    """A model script: while this attempt waits on the model, the attempt before it (its heartbeat
    missed, yet still running) stores what the call carries and its own answer under the call's
    answer id. Then this attempt answers ``own`` (text, or a response of its own)."""

    async def answer(request: LlmRequest) -> LlmResponse:
        call = attempts.inputs[-1]
        slot = call.answer
        assert slot is not None
        earlier = answer_event(text_response(EARLIER_ANSWER), event_id=slot.event_id, timestamp=slot.timestamp,
                               invocation_id=slot.invocation_id, author=slot.author, branch=slot.branch)
        stub = Session(id=call.key.session_id, app_name=call.key.app_name, user_id=call.key.user_id)
        await durable_stack.sessions.append_events(stub, [*call.commit, earlier])
        return text_response(own) if isinstance(own, str) else own

    return answer


async def _the_earlier_answer_is_the_turns(durable_stack: DurableStack, app: App, result: Any) -> None:
    assert not isinstance(result, BaseException), result
    assert result.final_text == EARLIER_ANSWER  # the one stored: the session keeps one
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert stored is not None
    assert [e.text for e in stored.events] == ["hello", EARLIER_ANSWER]
    assert stored.events[-1] == result.events[-1]


async def test_an_answer_stored_first_by_a_still_running_attempt_is_the_calls_answer(
    durable_stack: DurableStack,
) -> None:
    attempts = _Attempts(fail_before=(1,))
    model = ScriptedModel(_earlier_attempt_stores_its_answer_meanwhile(durable_stack, attempts, "the answer of this attempt"))
    app = _app(model)

    result = await _send_through(durable_stack, app, attempts, "hello")

    slots = [i.answer.event_id if i.answer else None for i in attempts.inputs]
    assert len(slots) == 2 and slots[0] is not None and slots[0] == slots[1], "both attempts store under one id"
    assert len(model.requests) == 1
    await _the_earlier_answer_is_the_turns(durable_stack, app, result)


async def test_an_answer_stored_by_a_still_running_attempt_while_the_last_one_ran_is_the_calls_answer(
    durable_stack: DurableStack,
) -> None:
    """The last allowed attempt stores nothing (below), and the turn commits its answer under the
    call's answer id. Had the attempt before it (its heartbeat missed, yet still running) stored its
    own answer under that id meanwhile, that commit met it and failed the turn (EventConflictError).
    The last attempt now looks for such an answer once its model call is done, and returns it."""
    attempts = _Attempts(fail_before=(1,))
    execution = AgentExecution(model_retry=RetryOptions(initial_interval=timedelta(milliseconds=100), maximum_attempts=2))
    model = ScriptedModel(_earlier_attempt_stores_its_answer_meanwhile(durable_stack, attempts, "the last attempt's answer"))
    app = _app(model, execution=execution)

    result = await _send_through(durable_stack, app, attempts, "hello")

    last = attempts.inputs[-1].answer
    assert last is not None and last.last_attempt == 2 == len(attempts.inputs)
    assert len(model.requests) == 1
    await _the_earlier_answer_is_the_turns(durable_stack, app, result)


async def test_an_answer_stored_by_a_still_running_attempt_wins_over_a_later_attempts_function_calls(
    durable_stack: DurableStack,
) -> None:
    """A retried call whose model asks for a tool this time stores nothing of its own. The attempt
    before it, still running, stored its answer under the call's answer id meanwhile: the turn used
    to go on with the function calls, its event under that same id, and fail when storing it
    (EventConflictError), the answer nobody saw left in the store. The attempt now looks for such an
    answer once its model call is done, and returns it: the turn ends with it."""
    attempts = _Attempts(fail_before=(1,))
    model = ScriptedModel(_earlier_attempt_stores_its_answer_meanwhile(
        durable_stack, attempts, function_call_response("add", {"a": 1, "b": 2})))
    app = _app(model)

    result = await _send_through(durable_stack, app, attempts, "hello")

    assert len(attempts.inputs) == 2 and len(model.requests) == 1
    await _the_earlier_answer_is_the_turns(durable_stack, app, result)


async def test_the_last_allowed_attempt_leaves_its_answer_to_the_turn(durable_stack: DurableStack) -> None:
    """Its result lost, no attempt follows to find a stored answer: the store must not hold one the
    workflow never saw (it would reach the next turn's model, never the user)."""
    attempts = _Attempts(fail_before=(1,), drop_after=(2,))
    execution = AgentExecution(model_retry=RetryOptions(initial_interval=timedelta(milliseconds=100), maximum_attempts=2))
    app = _app(ScriptedModel([text_response("an answer nobody sees")]), execution=execution)

    failed = await _send_through(durable_stack, app, attempts, "hello")

    assert isinstance(failed, BaseException)
    assert [r.answer_stored for r in attempts.results] == [False]
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert stored is not None
    assert "an answer nobody sees" not in [e.text for e in stored.events]
    assert stored.events[0].text == "hello" and stored.events[-1].error_code is not None


async def test_with_one_attempt_allowed_the_turn_commits_the_answer(durable_stack: DurableStack) -> None:
    execution = AgentExecution(model_retry=RetryOptions(maximum_attempts=1))
    app = durable_stack.register(_app(ScriptedModel([text_response("once")]), execution=execution))
    client = durable_stack.client

    result = await asyncio.wait_for(client.send(app.name, "u", "s", "hi"), timeout=30)

    assert result.final_text == "once"
    await _committed_by_the_turn(durable_stack, app, result)


def _adding(calls: int) -> ScriptedModel:
    """Calls ``add`` ``calls`` times in a turn, one call per model response, then answers."""

    def answer(request: LlmRequest) -> LlmResponse:
        done = len(tool_responses_this_turn(request))
        return function_call_response("add", {"a": done, "b": 1}) if done < calls else text_response(f"{done} sums")

    return ScriptedModel(answer)


class _Appends:
    """The session store's append statements, as lists of event authors."""

    def __init__(self, durable_stack: DurableStack, monkeypatch: pytest.MonkeyPatch) -> None:
        self.writes: list[list[str]] = []
        sessions = durable_stack.sessions
        append = sessions.append_events

        async def counted(session: Any, events: list[Any], *args: Any, **kwargs: Any) -> Any:
            self.writes.append([e.author for e in events])
            return await append(session, events, *args, **kwargs)

        monkeypatch.setattr(sessions, "append_events", counted)


async def test_a_short_turn_reaches_the_store_in_one_write(durable_stack: DurableStack,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    app = durable_stack.register(_app(_adding(3)))
    client = durable_stack.client
    await asyncio.wait_for(client.send(app.name, "u", "s", "warm up"), timeout=30)  # the session exists
    appends = _Appends(durable_stack, monkeypatch)

    result = await asyncio.wait_for(client.send(app.name, "u", "s", "add three times"), timeout=30)

    assert result.final_text == "3 sums"
    assert appends.writes == [["user"] + ["a"] * 7], "the message, 3 calls, 3 results and the answer in one write"
    # Nothing is being written while the turn runs, so its tool calls carry none of its events.
    history = await client.client.get_workflow_handle(session_workflow_id(app.name, "u", "s")).fetch_history()
    tool_inputs = [
        json.loads(e.activity_task_scheduled_event_attributes.input.payloads[0].data) for e in history.events
        if e.activity_task_scheduled_event_attributes.activity_type.name == c.RUN_TOOL
    ]
    assert len(tool_inputs) == 6 and all(not i.get("commit") for i in tool_inputs[3:])  # the warm-up turn first
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert stored is not None
    assert stored.events[-7:] == result.events and stored.events[-8].text == "add three times"


async def test_a_long_turn_stores_its_events_as_it_goes(durable_stack: DurableStack,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    app = durable_stack.register(_app(_adding(20)))  # 41 events: past the 32 that may ride along unstored
    client = durable_stack.client
    await asyncio.wait_for(client.send(app.name, "u", "s", "warm up"), timeout=30)
    appends = _Appends(durable_stack, monkeypatch)

    result = await asyncio.wait_for(client.send(app.name, "u", "s", "add twenty times"), timeout=60)

    assert result.final_text == "20 sums"
    assert len(appends.writes) > 1 and max(len(w) for w in appends.writes) <= 33
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert stored is not None
    assert stored.events[-41:] == result.events, "every event stored once, in the turn's order"


async def test_a_long_turn_defers_only_its_first_events(durable_stack: DurableStack) -> None:
    """Once a turn's events outgrow one deferred write, its later calls store what they carry: were
    they to defer again, each would carry up to DEFER_MAX_EVENTS events (a long turn's history twice
    the size, docs/scaling.md, "Long turns")."""
    app = durable_stack.register(_app(_adding(40)))  # 81 events
    client = durable_stack.client

    result = await asyncio.wait_for(client.send(app.name, "u", "s", "add forty times"), timeout=90)

    assert result.final_text == "40 sums"
    history = await client.client.get_workflow_handle(session_workflow_id(app.name, "u", "s")).fetch_history()
    calls = [
        json.loads(e.activity_task_scheduled_event_attributes.input.payloads[0].data) for e in history.events
        if e.activity_task_scheduled_event_attributes.activity_type.name == c.GENERATE_CONTENT
    ]
    assert len(calls) == 41
    deferred = [call["defer_commit"] for call in calls]
    outgrown = deferred.index(False)
    assert 0 < outgrown and all(deferred[:outgrown]) and not any(deferred[outgrown:]), deferred
    carried = [len(call.get("commit", [])) for call in calls[outgrown + 1:]]
    assert max(carried) <= 4, f"each later call carries what the step before made, not the turn: {carried}"
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert stored is not None
    assert stored.events == [*stored.events[:1], *result.events] and stored.events[0].text == "add forty times"


async def test_a_deferred_call_whose_result_is_lost_is_retried_and_the_turn_stored_once(
    durable_stack: DurableStack,
) -> None:
    attempts = _Attempts(drop_after=(1,))  # every model call's first result is lost
    app = _app(_adding(2))

    result = await _send_through(durable_stack, app, attempts, "add twice")

    assert not isinstance(result, BaseException), result
    assert result.final_text == "2 sums"
    assert [i.defer_commit for i in attempts.inputs] == [True] * 6, "three calls, each tried twice"
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert stored is not None
    assert stored.events[1:] == result.events and stored.events[0].text == "add twice"


async def test_the_model_calls_of_an_app_that_compacts_store_what_they_carry(durable_stack: DurableStack) -> None:
    """A compaction stored after a history reference must be found in the store, so these calls never
    leave their events unstored, and the tools they call carry the queue to acknowledge it."""
    attempts = _Attempts()
    agent = LlmAgent(name="a", model=_adding(2), tools=[add])
    app = App(name=f"answer_{uuid.uuid4().hex[:6]}", root_agent=agent,
              events_compaction_config=EventsCompactionConfig(compaction_interval=100, overlap_size=1))

    result = await _send_through(durable_stack, app, attempts, "add twice")

    assert not isinstance(result, BaseException), result
    assert len(attempts.inputs) == 3 and not any(i.defer_commit for i in attempts.inputs)
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert stored is not None and stored.events[1:] == result.events
