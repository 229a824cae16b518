"""An idle conversation's workflow ends; the next message starts it again with nothing lost."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    Interceptor,
    OutboundInterceptor,
    WorkflowExecutionStatus,
    WorkflowFailureError,
)

from adk_core import App, FunctionTool, LlmAgent, LlmRequest, ScriptedModel, ToolContext
from adk_core.errors import InvalidInputError
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_temporal.workflows import SessionWorkflow, SessionWorkflowInput, session_workflow_id
from adk_temporal.workflows.contracts import Reply, TurnQuery, TurnStatus
from adkt.client import AdkClient, MessageRejectedError
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration


async def test_idle_conversation_ends_and_the_next_message_restarts_it(durable_stack: DurableStack) -> None:
    def remember(color: str, tool_context: ToolContext) -> dict:
        """Remember a color."""
        tool_context.state["color"] = color
        return {"ok": True}

    def script(request: LlmRequest) -> Any:
        if tool_responses_this_turn(request):
            return text_response("noted")
        texts = [p.text for c in request.contents for p in c.parts if p.text]
        if texts[-1].startswith("remember"):
            return function_call_response("remember", {"color": texts[-1].split()[-1]})
        return text_response("earlier you said: " + texts[0])

    model = ScriptedModel(script)
    app = durable_stack.register(App(name=f"idle_{uuid.uuid4().hex[:6]}", root_agent=LlmAgent(name="a", model=model, tools=[remember])))
    client = AdkClient(durable_stack.client.client, task_queue=durable_stack.task_queue, idle_timeout_seconds=1)
    await client.send(app.name, "u1", "s1", "remember blue")
    handle = client.client.get_workflow_handle(session_workflow_id(app.name, "u1", "s1"))
    first_run = (await handle.describe()).run_id
    await handle.result()  # ends after a second without messages
    second = await client.send(app.name, "u1", "s1", "what did I say?")
    assert second.final_text == "earlier you said: remember blue"
    assert (await handle.describe()).run_id != first_run
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u1", session_id="s1")
    assert stored is not None and stored.state["color"] == "blue"
    assert len({e.id for e in stored.events}) == len(stored.events) == 6


async def test_a_busy_conversation_keeps_one_idle_timer_and_outlives_a_long_turn(durable_stack: DurableStack) -> None:
    """The idle clock is one timer per run, not a timer started and cancelled every turn; a turn
    that runs longer than the idle timeout does not count as idle, and the conversation only ends
    once it has had nothing to do for the whole timeout after its last turn."""

    async def slow(seconds: float) -> dict:
        """Take a while."""
        await asyncio.sleep(seconds)
        return {"slept": seconds}

    def script(request: LlmRequest) -> Any:
        if tool_responses_this_turn(request):
            return text_response("done")
        text = [p.text for c in request.contents for p in c.parts if p.text][-1]
        return function_call_response("slow", {"seconds": 2.5 if text == "slow" else 0.0})

    app = durable_stack.register(
        App(name=f"idle_busy_{uuid.uuid4().hex[:6]}", root_agent=LlmAgent(name="a", model=ScriptedModel(script), tools=[slow]))
    )
    client = AdkClient(durable_stack.client.client, task_queue=durable_stack.task_queue, idle_timeout_seconds=2)
    handle = client.client.get_workflow_handle(session_workflow_id(app.name, "u1", "s1"))
    run_ids = set()
    for text in ("one", "two", "slow", "three"):
        assert (await client.send(app.name, "u1", "s1", text)).final_text == "done"
        run_ids.add((await handle.describe()).run_id)
    assert len(run_ids) == 1  # the slow turn (longer than the timeout) did not end the conversation
    history = await handle.fetch_history()
    started = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_TIMER_STARTED]
    # One timer armed at the first wait, re-armed once per timeout that passed mid-conversation.
    assert 1 <= len(started) <= 3, [e.timer_started_event_attributes for e in started]
    await handle.result()  # and it still ends once idle


class _CountUpdates(Interceptor):
    """Which kind of update each send used."""

    def __init__(self) -> None:
        self.kinds: list[str] = []

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        kinds = self.kinds

        class Outbound(OutboundInterceptor):
            async def start_workflow_update(self, input: Any) -> Any:
                kinds.append("update")
                return await super().start_workflow_update(input)

            async def start_update_with_start_workflow(self, input: Any) -> Any:
                kinds.append("with-start")
                return await super().start_update_with_start_workflow(input)

        return Outbound(next)


async def test_later_messages_go_by_plain_update_and_an_ended_conversation_starts_again(
    durable_stack: DurableStack,
) -> None:
    """A client that saw a conversation running sends its next messages without the start the
    server would try first; when the conversation has ended meanwhile, the same message starts it."""
    app = durable_stack.register(App(name=f"plain_{uuid.uuid4().hex[:6]}", root_agent=LlmAgent(
        name="a", model=ScriptedModel(lambda request: text_response(f"turn {len(request.contents)}")))))  # fmt: skip
    counted = _CountUpdates()
    config = durable_stack.client.client.config()
    client = AdkClient(Client(**{**config, "interceptors": [*config["interceptors"], counted]}),
                       task_queue=durable_stack.task_queue, idle_timeout_seconds=1)  # fmt: skip
    for _ in range(3):
        await client.send(app.name, "u1", "s1", "hi")
    assert counted.kinds == ["with-start", "update", "update"]
    await client.client.get_workflow_handle(session_workflow_id(app.name, "u1", "s1")).result()  # idle: ended
    assert (await client.send(app.name, "u1", "s1", "again")).final_text == "turn 7"
    assert counted.kinds[3:] == ["update", "with-start"]  # the plain one found it ended
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u1", session_id="s1")
    assert stored is not None and len(stored.events) == 8  # every message once


async def test_a_long_run_left_idle_renews_itself_and_still_ends_on_time(durable_stack: DurableStack) -> None:
    """A run long enough that a cold worker would replay much of it continues as new once idle for
    renew_idle_run_after_seconds: the new run holds a few events, the idle timeout still counts from
    the last turn (not from the renewal), and the next message finds the whole conversation."""

    def script(request: LlmRequest) -> Any:
        asked = [p.text for c in request.contents if c.role == "user" for p in c.parts if p.text]
        return text_response(f"message {len(asked)}")

    app = durable_stack.register(App(name=f"renew_{uuid.uuid4().hex[:6]}", root_agent=LlmAgent(name="a", model=ScriptedModel(script))))
    client = AdkClient(durable_stack.client.client, task_queue=durable_stack.task_queue, idle_timeout_seconds=4,
                       renew_idle_run_after_seconds=2)
    handle = client.client.get_workflow_handle(session_workflow_id(app.name, "u1", "s1"))
    loop = asyncio.get_running_loop()
    turns = 0
    while turns == 0 or (await handle.describe()).history_length < 220:
        turns += 1
        assert (await client.send(app.name, "u1", "s1", f"hello {turns}")).final_text == f"message {turns}"
    last_turn = loop.time()
    long_run = (await handle.describe()).run_id

    async with asyncio.timeout(20):
        while (await handle.describe()).run_id == long_run:
            await asyncio.sleep(0.05)
    renewed = await handle.describe()
    assert renewed.history_length < 30, renewed.history_length
    history = await client.client.get_workflow_handle(handle.id, run_id=long_run).fetch_history()
    assert history.events[-1].event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
    # The renewed run is short, so it does not renew again; it ends 4 s after the last turn (6 s or
    # more had it counted from the renewal): a second of margin either way on a loaded machine.
    await asyncio.wait_for(client.client.get_workflow_handle(handle.id, run_id=renewed.run_id).result(), timeout=20)
    assert loop.time() - last_turn < 5.0
    assert (await handle.describe()).run_id == renewed.run_id

    again = await client.send(app.name, "u1", "s1", "still there?")  # a new run, from the store
    assert again.final_text == f"message {turns + 1}"


def _confirming_banker(durable_stack: DurableStack, prefix: str = "idle_reply") -> tuple[App, list[int]]:
    """An app whose agent asks to confirm a transfer of 50 on "send 50" and answers "ok" to anything
    else; the transfers made."""
    transfers: list[int] = []

    def transfer_money(amount: int) -> dict:
        """Send money."""
        transfers.append(amount)
        return {"sent": amount}

    def script(request: LlmRequest) -> Any:
        done = tool_responses_this_turn(request)
        if done:
            return text_response(f"result: {done[-1]}")
        text = [p.text for c in request.contents if c.role == "user" for p in c.parts if p.text][-1]
        return function_call_response("transfer_money", {"amount": 50}) if text == "send 50" else text_response("ok")

    agent = LlmAgent(name="banker", model=ScriptedModel(script),
                     tools=[FunctionTool(transfer_money, require_confirmation=True)])
    return durable_stack.register(App(name=f"{prefix}_{uuid.uuid4().hex[:6]}", root_agent=agent)), transfers


async def test_a_run_renewed_while_a_confirmation_waits_still_takes_the_reply(durable_stack: DurableStack) -> None:
    """A long run idle because it waits for a person's confirmation renews itself like any idle run:
    the new run still lists the request, and the reply runs the tool once."""
    app, transfers = _confirming_banker(durable_stack, "renew_hitl")
    client = AdkClient(durable_stack.client.client, task_queue=durable_stack.task_queue, renew_idle_run_after_seconds=1)
    handle = client.client.get_workflow_handle(session_workflow_id(app.name, "u1", "s1"))
    await client.send(app.name, "u1", "s1", "hello")
    while (await handle.describe()).history_length < 220:
        await client.send(app.name, "u1", "s1", "hello")
    asked = await client.send(app.name, "u1", "s1", "send 50")
    assert asked.events[-1].long_running_tool_ids
    long_run = (await handle.describe()).run_id

    async with asyncio.timeout(20):
        while (await handle.describe()).run_id == long_run:
            await asyncio.sleep(0.05)
    (request,) = await client.pending(app.name, "u1", "s1")
    assert (request.kind, request.name, request.args) == ("tool_confirmation", "transfer_money", {"amount": 50})
    answered = await client.reply(app.name, "u1", "s1", request.call_id, {"confirmed": True})
    assert answered.final_text == "result: {'sent': 50}" and transfers == [50]
    assert await client.pending(app.name, "u1", "s1") == []


async def test_a_renewal_time_below_zero_is_refused_with_how_to_fix_it(durable_stack: DurableStack) -> None:
    with pytest.raises(InvalidInputError, match="renew_idle_run_after_seconds is -1; give seconds above 0, 0 never"):
        AdkClient(durable_stack.client.client, renew_idle_run_after_seconds=-1)
    # Started by hand (the temporal CLI, say): the run fails at once, saying why and what to give.
    app = durable_stack.register(App(name=f"renew_bad_{uuid.uuid4().hex[:6]}", root_agent=LlmAgent(name="a", model=ScriptedModel("ok"))))
    handle = await durable_stack.client.client.start_workflow(
        SessionWorkflow.run,
        SessionWorkflowInput(app_name=app.name, user_id="u1", session_id="s1", renew_idle_run_after_seconds=0),
        id=session_workflow_id(app.name, "u1", "s1"), task_queue=durable_stack.task_queue,
    )
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), timeout=20)
    assert "renew_idle_run_after_seconds is 0.0; give the seconds" in str(failed.value.cause)


async def _asked_then_idle(client: AdkClient, app: App) -> str:
    """Ask for a confirmation, then wait past the idle timeout: the conversation's workflow ends."""
    asked = await client.send(app.name, "u1", "s1", "send 50")
    assert asked.events[-1].long_running_tool_ids
    (request,) = await client.pending(app.name, "u1", "s1")
    handle = client.client.get_workflow_handle(session_workflow_id(app.name, "u1", "s1"))
    async with asyncio.timeout(20):
        while (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
            await asyncio.sleep(0.1)
    return request.call_id


@pytest.mark.parametrize("by", ["update", "signal"])
async def test_a_reply_after_the_conversation_went_idle_is_taken(durable_stack: DurableStack, by: str) -> None:
    """A person answers a confirmation after the idle timeout ended the workflow: the reply starts
    the conversation again and is checked once the session is loaded, not refused for loading
    (``signal``: the way a client queues when the conversation has too many updates in flight)."""
    app, transfers = _confirming_banker(durable_stack)
    client = AdkClient(durable_stack.client.client, task_queue=durable_stack.task_queue, idle_timeout_seconds=1)
    call_id = await _asked_then_idle(client, app)
    if by == "update":
        answered = await client.reply(app.name, "u1", "s1", call_id, {"confirmed": True})
    else:
        reply = Reply(call_id=call_id, response={"confirmed": True}, reply_id="r-1")
        await client._signal("queue_reply", reply, app.name, "u1", "s1", None)
        handle = client.client.get_workflow_handle(session_workflow_id(app.name, "u1", "s1"))
        # Asked while the run may still be loading its session: known (queued), never "unknown".
        status = await handle.query(SessionWorkflow.turn, TurnQuery(message_id="r-1"), result_type=TurnStatus)
        assert status.state != "unknown"
        async with asyncio.timeout(30):
            followed = await client._follow(handle, "r-1")
        assert followed is not None
        answered = followed
    assert answered.final_text == "result: {'sent': 50}" and transfers == [50]


async def test_a_reply_to_nothing_pending_after_idle_is_refused_with_the_reason(durable_stack: DurableStack) -> None:
    app, transfers = _confirming_banker(durable_stack)
    client = AdkClient(durable_stack.client.client, task_queue=durable_stack.task_queue, idle_timeout_seconds=1)
    await _asked_then_idle(client, app)
    with pytest.raises(MessageRejectedError, match="no-such-call"):
        await client.reply(app.name, "u1", "s1", "no-such-call", {"confirmed": True})
    assert transfers == []
