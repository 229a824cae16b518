"""Sessions under odd ids, many concurrent messages and repeated sends (hardening issue 1, 5, 6)."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.common import WorkflowIDConflictPolicy

from adk_core import App, FunctionTool, LlmAgent, LlmRequest, ScriptedModel
from adk_core.errors import InvalidInputError, StateKeyError
from adk_core.models import function_call_response, text_response
from adk_temporal.workflows import SendMessage, SessionWorkflow, SessionWorkflowInput, session_workflow_id
from adk_temporal.workflows.contracts import TurnQuery, TurnStatus
from adk_temporal.workflows.session import CARRY_OUTCOMES
from adkt.client import TurnFailedError, WorkflowTaskFailedError
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration


def _echo_app(durable_stack: DurableStack, prefix: str) -> tuple[App, list[list[str]]]:
    """An app whose model answers with the user texts it was shown (recorded per call)."""
    seen: list[list[str]] = []

    def script(request: LlmRequest) -> Any:
        texts = [p.text for c in request.contents if c.role == "user" for p in c.parts if p.text]
        seen.append(texts)
        return text_response(f"heard {texts[-1]}; history {len(texts)}")

    app = App(name=f"{prefix}_{uuid.uuid4().hex[:6]}", root_agent=LlmAgent(name="a", model=ScriptedModel(script)))
    return durable_stack.register(app), seen


async def test_users_whose_ids_used_to_collide_never_share_a_session(durable_stack: DurableStack) -> None:
    app, seen = _echo_app(durable_stack, "probe")
    client = durable_stack.client
    await client.send(app.name, "carol", "x/diary", "my secret is 42", state_delta={"secret": 42, "user:pin": 7})
    other = await client.send(app.name, "carol/x", "diary", "what is the secret?")

    assert seen[-1] == ["what is the secret?"]  # carol's message never reaches the other user's model
    assert other.final_text == "heard what is the secret?; history 1"
    assert session_workflow_id(app.name, "carol", "x/diary") != session_workflow_id(app.name, "carol/x", "diary")
    carol = await durable_stack.sessions.get_session(app_name=app.name, user_id="carol", session_id="x/diary")
    intruder = await durable_stack.sessions.get_session(app_name=app.name, user_id="carol/x", session_id="diary")
    assert carol is not None and intruder is not None
    assert carol.state == {"secret": 42, "user:pin": 7}
    assert intruder.state == {}
    assert [e.author for e in intruder.events] == ["user", "a"]


async def test_a_hundred_concurrent_messages_are_all_answered_once_in_queue_order(durable_stack: DurableStack) -> None:
    app, seen = _echo_app(durable_stack, "busy")
    client = durable_stack.client
    texts = [f"message {i}" for i in range(100)]
    results = await asyncio.wait_for(
        asyncio.gather(*(client.send(app.name, "u1", "s1", text) for text in texts)), timeout=120
    )

    assert sorted(r.final_text.split(";")[0] for r in results) == sorted(f"heard {t}" for t in texts)
    assert len({r.invocation_id for r in results}) == 100
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u1", session_id="s1")
    assert stored is not None
    user_texts = [e.text for e in stored.events if e.author == "user"]
    assert sorted(user_texts) == sorted(texts)  # none lost, none doubled
    # One turn at a time, in the order they were queued: each turn's events are contiguous and
    # its model saw every earlier message, in stored order.
    invocations = [e.invocation_id for e in stored.events]
    assert all(invocations[i] == invocations[i + 1] for i in range(0, 200, 2))
    assert seen[-1] == user_texts


async def test_messages_queued_by_signal_are_answered_in_order_and_followed_by_query(durable_stack: DurableStack) -> None:
    """The signal path (what AdkClient uses once Temporal refuses more in-flight updates, and what a
    plain Temporal client can use): messages queue durably, run in order, and the ``turn`` query
    tells each sender its result."""
    app, seen = _echo_app(durable_stack, "signals")
    client = durable_stack.client
    ids = [f"sig-{i}" for i in range(20)]
    for i, message_id in enumerate(ids):
        await client.client.start_workflow(
            SessionWorkflow.run, SessionWorkflowInput(app_name=app.name, user_id="u1", session_id="s1"),
            id=session_workflow_id(app.name, "u1", "s1"), task_queue=durable_stack.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING, start_signal="queue_message",
            start_signal_args=[SendMessage(message=f"message {i}", message_id=message_id)],
        )
    last = await client.send(app.name, "u1", "s1", "message 20")
    assert last.final_text == "heard message 20; history 21"  # after every queued one
    handle = client.client.get_workflow_handle(session_workflow_id(app.name, "u1", "s1"))
    for i, message_id in enumerate(ids):
        status = await handle.query(SessionWorkflow.turn, TurnQuery(message_id=message_id), result_type=TurnStatus)
        assert status.state == "done" and status.result is not None
        assert status.result.final_text == f"heard message {i}; history {i + 1}"
    assert [texts[-1] for texts in seen] == [f"message {i}" for i in range(21)]


async def test_a_repeated_message_id_returns_the_first_result(durable_stack: DurableStack) -> None:
    app, seen = _echo_app(durable_stack, "idem")
    client = durable_stack.client
    first, again = await asyncio.gather(
        client.send(app.name, "u1", "s1", "pay 10", message_id="m-1"),
        client.send(app.name, "u1", "s1", "pay 10", message_id="m-1"),
    )
    later = await client.send(app.name, "u1", "s1", "pay 10", message_id="m-1")
    assert first.invocation_id == again.invocation_id == later.invocation_id
    assert first.final_text == later.final_text
    assert len(seen) == 1
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u1", session_id="s1")
    assert stored is not None and len(stored.events) == 2


async def test_bad_ids_are_refused_at_the_client_before_any_workflow_starts(durable_stack: DurableStack) -> None:
    app, seen = _echo_app(durable_stack, "badids")
    for user, session in [(" carol", "s"), ("carol", ""), ("carol", "nul\x00"), ("carol", "s ")]:
        with pytest.raises(InvalidInputError):
            await durable_stack.client.send(app.name, user, session, "hi")
    for initial_state in [{"": 1}, {"a/b": 1}, {"k": "nul\x00"}, {"k": float("nan")}]:
        with pytest.raises((InvalidInputError, StateKeyError)):
            await durable_stack.client.send(app.name, "carol", "s", "hi", initial_state=initial_state)
    assert seen == []


async def test_a_session_workflow_under_another_id_refuses_to_run(durable_stack: DurableStack) -> None:
    app, _ = _echo_app(durable_stack, "squat")
    client = durable_stack.client.client
    handle = await client.start_workflow(
        SessionWorkflow.run,
        SessionWorkflowInput(app_name=app.name, user_id="carol", session_id="diary"),
        id=f"not-the-session-id-{uuid.uuid4().hex[:6]}",
        task_queue=durable_stack.task_queue,
    )
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()
    assert session_workflow_id(app.name, "carol", "diary") in str(failure.value.cause)
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="carol", session_id="diary")
    assert stored is None


async def test_a_turn_whose_events_cannot_be_stored_fails_once_and_the_next_turn_works(durable_stack: DurableStack) -> None:
    def read_file() -> dict:
        """Read a binary file."""
        return {"content": "PK\x00\x03"}  # Postgres cannot store a NUL in JSON

    def script(request: LlmRequest) -> Any:
        last = request.contents[-1].parts[-1]
        if last.function_response is not None:
            return text_response("read it")
        if last.text == "read":
            return function_call_response("read_file", {})
        return text_response("still here")

    app = durable_stack.register(App(
        name=f"nul_{uuid.uuid4().hex[:6]}",
        root_agent=LlmAgent(name="a", model=ScriptedModel(script), tools=[FunctionTool(read_file)]),
    ))
    client = durable_stack.client
    with pytest.raises(TurnFailedError, match="NUL"):
        await client.send(app.name, "u1", "s1", "read")
    after = await client.send(app.name, "u1", "s1", "are you there?")
    assert after.final_text == "still here"
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u1", session_id="s1")
    assert stored is not None
    assert [e.error_code for e in stored.events if e.error_code] == ["InvalidInputError"]
    assert stored.events[-1].text == "still here"


async def test_a_workflow_task_that_keeps_failing_reaches_the_client_as_a_clear_error(durable_stack: DurableStack) -> None:
    def stuck_callback(callback_context: Any, llm_request: LlmRequest) -> None:
        deadline = time.monotonic() + 2.5  # longer than Temporal's 2 s deadlock detection, every time
        while time.monotonic() < deadline:
            pass

    app = durable_stack.register(App(
        name=f"wedged_{uuid.uuid4().hex[:6]}",
        root_agent=LlmAgent(name="a", model=ScriptedModel(lambda r: text_response("hi")), before_model_callback=stuck_callback),
    ))
    started = time.monotonic()
    with pytest.raises(WorkflowTaskFailedError, match="deadlock"):
        await durable_stack.client.send(app.name, "u1", "s1", "hello")
    assert time.monotonic() - started < 30
    await durable_stack.client.client.get_workflow_handle(session_workflow_id(app.name, "u1", "s1")).terminate("test done")


async def test_a_repeated_message_id_after_continue_as_new_returns_the_stored_turn(durable_stack: DurableStack) -> None:
    app, seen = _echo_app(durable_stack, "repeat_can")
    client = durable_stack.client
    await client.client.start_workflow(
        SessionWorkflow.run,
        SessionWorkflowInput(app_name=app.name, user_id="u1", session_id="s1", max_turns_per_run=3),
        id=session_workflow_id(app.name, "u1", "s1"), task_queue=durable_stack.task_queue,
    )
    first = await client.send(app.name, "u1", "s1", "message 0", message_id="m-0")
    for i in range(1, 13):  # four continue-as-new: m-0 is no longer among the carried outcomes
        await client.send(app.name, "u1", "s1", f"message {i}", message_id=f"m-{i}")
    assert CARRY_OUTCOMES < 12  # so m-0 was not carried
    again = await client.send(app.name, "u1", "s1", "message 0", message_id="m-0")
    assert len(seen) == 13  # no second turn
    assert again.invocation_id == first.invocation_id
    assert [e.id for e in again.events] == [e.id for e in first.events]
    assert again.final_text == first.final_text == "heard message 0; history 1"


async def test_a_turn_followed_by_query_after_continue_as_new_is_read_back_in_full(durable_stack: DurableStack) -> None:
    """A sender that queued by signal and follows its turn by query may find it finished in an
    earlier run: the query then says done without a result, and asking again by update (same
    message id, no second turn) reads the turn back from the store."""
    app, seen = _echo_app(durable_stack, "follow_can")
    client = durable_stack.client
    workflow_id = session_workflow_id(app.name, "u1", "s1")
    for i in range(13):  # more than the finished turns a run hands to the next (CARRY_OUTCOMES)
        await client.client.start_workflow(
            SessionWorkflow.run,
            SessionWorkflowInput(app_name=app.name, user_id="u1", session_id="s1", max_turns_per_run=3),
            id=workflow_id, task_queue=durable_stack.task_queue, id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            start_signal="queue_message", start_signal_args=[SendMessage(message=f"message {i}", message_id=f"f-{i}")],
        )
    handle = client.client.get_workflow_handle(workflow_id)
    for _ in range(200):
        status = await handle.query(SessionWorkflow.turn, TurnQuery(message_id="f-12"), result_type=TurnStatus)
        if status.state == "done":
            break
        await asyncio.sleep(0.1)
    assert len(seen) == 13
    assert await client._follow(handle, "f-0") is None  # finished four runs ago: only the store has it
    again = await client.send(app.name, "u1", "s1", "message 0", message_id="f-0")
    assert again.final_text == "heard message 0; history 1"
    assert len(seen) == 13  # read back, not run again


async def test_a_failed_message_sent_again_after_continue_as_new_fails_the_same_and_runs_once(
    durable_stack: DurableStack,
) -> None:
    """A failed turn's id is remembered with why it failed and carried to the next runs: sent again
    (a client retrying its request) it gets the first failure, by update and by query, and its tool
    does not run a second time."""
    calls: list[str] = []

    def lookup(q: str) -> dict:
        """Look something up."""
        calls.append(q)
        return {"found": q}

    def script(request: LlmRequest) -> Any:
        texts = [p.text for c in request.contents if c.role == "user" for p in c.parts if p.text]
        return function_call_response("lookup", {"q": texts[-1]}) if texts[-1] == "look" else text_response("ok")

    agent = LlmAgent(name="a", model=ScriptedModel(script), tools=[FunctionTool(lookup)])
    app = durable_stack.register(App(name=f"failrepeat_{uuid.uuid4().hex[:6]}", root_agent=agent))
    client = durable_stack.client
    workflow_id = session_workflow_id(app.name, "u1", "s1")
    await client.client.start_workflow(
        SessionWorkflow.run,
        SessionWorkflowInput(app_name=app.name, user_id="u1", session_id="s1", max_turns_per_run=2),
        id=workflow_id, task_queue=durable_stack.task_queue,
    )
    # The turn needs two model calls and may make one: it fails (LlmCallsLimitExceededError).
    with pytest.raises(TurnFailedError) as first:
        await client.send(app.name, "u1", "s1", "look", message_id="m-look", max_llm_calls=1)
    for i in range(2 * CARRY_OUTCOMES + 2):  # continue-as-new until m-look's outcome is no longer carried
        await client.send(app.name, "u1", "s1", f"hello {i}")
    with pytest.raises(TurnFailedError) as again:
        await client.send(app.name, "u1", "s1", "look", message_id="m-look", max_llm_calls=1)
    assert str(again.value) == str(first.value)
    status = await client.client.get_workflow_handle(workflow_id).query(
        SessionWorkflow.turn, TurnQuery(message_id="m-look"), result_type=TurnStatus
    )
    assert status.state == "failed" and status.error_message and "llm" in status.error_message.lower()
    assert calls == ["look"]
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u1", session_id="s1")
    assert stored is not None
    assert sum(1 for e in stored.events if e.author == "user" and e.text == "look") == 1
