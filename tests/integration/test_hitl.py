"""People in the loop, durably: tool confirmations and long-running tools answered by Update
(AgentRunWorkflow and SessionWorkflow), and a conversation that survives continue-as-new."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.service import RPCError

from adk_core import App, Content, InMemoryRunner, LlmAgent, LlmRequest, Part, ScriptedModel, ToolContext
from adk_core.models import LlmResponse, function_call_response, text_response, tool_responses_this_turn
from adk_core.tools import FunctionTool, LongRunningFunctionTool
from adk_core.tools.function_tool import CONFIRMATION_REJECTED_ERROR
from adk_temporal.workflows import (
    AgentRunInput,
    AgentRunWorkflow,
    PendingRequest,
    Reply,
    SessionWorkflow,
    SessionWorkflowInput,
    session_workflow_id,
)
from adkt.client import MessageRejectedError
from tests.integration.conftest import DurableStack
from tests.scenarios import user_said

pytestmark = pytest.mark.integration


def _unique(name: str) -> str:
    return f"{name}_{uuid.uuid4().hex[:6]}"


def _confirm_app(durable_stack: DurableStack, transfers: list[int]) -> App:
    def transfer_money(amount: int) -> dict:
        """Send money."""
        transfers.append(amount)
        return {"sent": amount}

    def script(request: LlmRequest) -> Any:
        done = tool_responses_this_turn(request)
        if not done:
            return function_call_response("transfer_money", {"amount": 50})
        return text_response(f"result: {done[-1]}")

    agent = LlmAgent(
        name="banker",
        model=ScriptedModel(script),
        tools=[FunctionTool(transfer_money, require_confirmation=True)],
    )
    return durable_stack.register(App(name=_unique("hitl_confirm"), root_agent=agent))


async def _poll(get, *, timeout: float = 10.0) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = await get()
        if value or loop.time() > deadline:
            return value
        await asyncio.sleep(0.05)


def _only_confirmation(pending: list[PendingRequest]) -> PendingRequest:
    assert len(pending) == 1, pending
    request = pending[0]
    assert (request.kind, request.name, request.args) == (
        "tool_confirmation",
        "transfer_money",
        {"amount": 50},
    )
    return request


async def test_agent_run_waits_for_confirmation_in_the_same_run(durable_stack: DurableStack) -> None:
    transfers: list[int] = []
    app = _confirm_app(durable_stack, transfers)
    handle = await durable_stack.client.client.start_workflow(
        AgentRunWorkflow.run,
        AgentRunInput(
            app_name=app.name, user_id="u1", session_id="s1", message="send 50", wait_for_replies=True
        ),
        id=_unique("hitl-run"),
        task_queue=durable_stack.task_queue,
    )
    request = _only_confirmation(await _poll(lambda: handle.query(AgentRunWorkflow.pending)))

    with pytest.raises((WorkflowUpdateFailedError, RPCError)):
        await handle.execute_update(
            AgentRunWorkflow.reply, Reply(call_id="no-such-call", response={"confirmed": True})
        )
    assert transfers == []

    await handle.execute_update(
        AgentRunWorkflow.reply, Reply(call_id=request.call_id, response={"confirmed": True})
    )
    result = await handle.result()
    assert transfers == [50]
    assert result.final_text == "result: {'sent': 50}"
    assert await handle.query(AgentRunWorkflow.pending) == []


async def test_a_run_waiting_for_a_person_has_stored_the_turn_so_far(durable_stack: DurableStack) -> None:
    """The model calls before the wait left their events unstored (ModelCallInput.defer_commit): the
    wait stores them first, so readers of the session see the question while it waits for days."""
    app = _confirm_app(durable_stack, [])
    handle = await durable_stack.client.client.start_workflow(
        AgentRunWorkflow.run,
        AgentRunInput(app_name=app.name, user_id="u1", session_id="s1", message="send 50", wait_for_replies=True),
        id=_unique("hitl-run"),
        task_queue=durable_stack.task_queue,
    )
    request = _only_confirmation(await _poll(lambda: handle.query(AgentRunWorkflow.pending)))

    async def stored_calls() -> list[str]:
        session = await durable_stack.sessions.get_session(app_name=app.name, user_id="u1", session_id="s1")
        return [c.id or "" for e in (session.events if session else []) for c in e.function_calls()]

    calls = await _poll(stored_calls)
    assert calls and calls[0], "the model's call is stored while the run waits"
    session = await durable_stack.sessions.get_session(app_name=app.name, user_id="u1", session_id="s1")
    assert session is not None and session.events[0].text == "send 50"
    await handle.execute_update(AgentRunWorkflow.reply, Reply(call_id=request.call_id, response={"confirmed": False}))
    await asyncio.wait_for(handle.result(), timeout=30)


async def test_session_confirmation_by_client_reply(durable_stack: DurableStack) -> None:
    transfers: list[int] = []
    app = _confirm_app(durable_stack, transfers)
    client = durable_stack.client
    first = await client.send(app.name, "u1", "s1", "send 50")
    assert first.events[-1].long_running_tool_ids
    request = _only_confirmation(await client.pending(app.name, "u1", "s1"))

    with pytest.raises(MessageRejectedError, match="no pending request has call id 'no-such-call'"):
        await client.reply(app.name, "u1", "s1", "no-such-call", {"confirmed": True})

    second = await client.reply(app.name, "u1", "s1", request.call_id, {"confirmed": True})
    assert transfers == [50]
    assert second.final_text == "result: {'sent': 50}"
    assert await client.pending(app.name, "u1", "s1") == []


async def test_session_rejection_skips_tool_and_model_sees_it(durable_stack: DurableStack) -> None:
    transfers: list[int] = []
    app = _confirm_app(durable_stack, transfers)
    client = durable_stack.client
    await client.send(app.name, "u1", "s1", "send 50")
    request = _only_confirmation(await client.pending(app.name, "u1", "s1"))
    turn = await client.reply(app.name, "u1", "s1", request.call_id, {"confirmed": False})
    assert transfers == []
    assert turn.final_text == f"result: {{'error': {CONFIRMATION_REJECTED_ERROR!r}}}"


async def test_long_running_tool_result_arrives_by_reply(durable_stack: DurableStack) -> None:
    started: list[str] = []

    def start_job(name: str) -> dict:
        """Start a job that finishes later."""
        started.append(name)
        return {"status": "pending", "ticket": f"T-{name}"}

    def script(request: LlmRequest) -> Any:
        done = tool_responses_this_turn(request)
        if not done:
            return function_call_response("start_job", {"name": "report"})
        if done[-1].get("status") == "pending":
            return text_response(f"waiting for {done[-1]['ticket']}")
        return text_response(f"job {done[-1]['status']}: {done[-1]['url']}")

    model = ScriptedModel(script)
    agent = LlmAgent(name="runner", model=model, tools=[LongRunningFunctionTool(start_job)])
    app = durable_stack.register(App(name=_unique("hitl_long"), root_agent=agent))
    client = durable_stack.client

    first = await client.send(app.name, "u1", "s1", "make the report")
    assert first.final_text == "waiting for T-report"
    pending = await client.pending(app.name, "u1", "s1")
    assert [(p.kind, p.name, p.args) for p in pending] == [
        ("long_running_tool", "start_job", {"name": "report"})
    ]

    turn = await client.reply(app.name, "u1", "s1", pending[0].call_id, {"status": "done", "url": "r.pdf"})
    assert turn.final_text == "job done: r.pdf"
    assert started == ["report"]
    last = model.requests[-1].contents[-1].parts[0].function_response
    assert last is not None and last.response == {"status": "done", "url": "r.pdf"}
    assert await client.pending(app.name, "u1", "s1") == []


async def _in_process(agent: LlmAgent, messages: list[Any]) -> list[LlmRequest]:
    """The requests ``agent``'s ScriptedModel gets for ``messages`` in-process (InMemoryRunner)."""
    runner = InMemoryRunner(agent, app_name="in_process")
    for message in messages:
        await runner.run(message, session_id="s")
    return agent.model.requests  # type: ignore[union-attr]


async def test_long_running_calls_answers_reach_the_model_after_their_calls_as_in_process(
    durable_stack: DurableStack,
) -> None:
    """A long-running call beside a plain one, a first result then the final one: the model is not
    called while a call has no result, each answer goes right after its call, and the model sees
    what it sees in-process, request for request (the activity rebuilds it from the stored events)."""

    def get_weather(city: str) -> dict:
        """Current weather for a city."""
        return {"temp_c": 18}

    def request_approval(amount: int) -> None:
        """Ask a manager to approve a spend; the answer comes later."""

    def open_ticket(amount: int) -> dict:
        """Open an approval ticket; the decision arrives later."""
        return {"status": "pending", "ticket": "T1"}

    def script(request: LlmRequest) -> Any:
        done = tool_responses_this_turn(request)
        said = user_said(request)
        if said == "thanks":
            return text_response("bye")
        if not done:
            call = Part.from_function_call
            parts = ([call("request_approval", {"amount": 5}, id="toolu_A"), call("get_weather", {"city": "Paris"}, id="toolu_B")]
                     if said == "approve and weather" else [call("open_ticket", {"amount": 5}, id="toolu_T")])
            return LlmResponse(content=Content(role="model", parts=parts))
        if done[-1].get("status") == "pending":
            return text_response("ticket T1 opened, waiting")
        return text_response(f"done: {done}")

    def agent() -> LlmAgent:
        tools = [get_weather, LongRunningFunctionTool(request_approval), LongRunningFunctionTool(open_ticket)]
        return LlmAgent(name="approver", model=ScriptedModel(script), tools=tools)

    durable = agent()
    app = durable_stack.register(App(name=_unique("hitl_long_parallel"), root_agent=durable))
    client = durable_stack.client
    first = await client.send(app.name, "u1", "s1", "approve and weather")
    assert [r.id for r in first.events[-1].function_responses()] == ["toolu_B"]
    assert len(durable.model.requests) == 1  # type: ignore[union-attr]
    assert [(p.kind, p.call_id) for p in await client.pending(app.name, "u1", "s1")] == [("long_running_tool", "toolu_A")]
    approved = await client.reply(app.name, "u1", "s1", "toolu_A", {"approved": True})
    assert approved.final_text == "done: [{'temp_c': 18}, {'approved': True}]"
    assert (await client.send(app.name, "u1", "s1", "open a ticket")).final_text == "ticket T1 opened, waiting"
    assert (await client.reply(app.name, "u1", "s1", "toolu_T", {"approved": True})).final_text == "done: [{'approved': True}]"
    assert (await client.send(app.name, "u1", "s1", "thanks")).final_text == "bye"

    def answer(name: str, call_id: str) -> Content:
        return Content(role="user", parts=[Part.from_function_response(name, {"approved": True}, id=call_id)])

    local = await _in_process(agent(), [
        "approve and weather", answer("request_approval", "toolu_A"), "open a ticket", answer("open_ticket", "toolu_T"), "thanks",
    ])
    requests = durable.model.requests  # type: ignore[union-attr]
    assert len(requests) == len(local) == 6
    for seen, expected in zip(requests, local, strict=True):
        assert [c.model_dump() for c in seen.contents] == [c.model_dump() for c in expected.contents]
    answered = requests[-2].contents  # right after the ticket's answer: the answer in the ticket's place, last
    assert answered[-2].function_calls()[0].id == "toolu_T"
    assert [r.response for r in answered[-1].function_responses()] == [{"approved": True}]
    final = requests[-1].contents
    assert [r.id for r in final[2].function_responses()] == ["toolu_B", "toolu_A"]  # after the calls, together
    assert [c.text for c in final[-4:]] == ["", "ticket T1 opened, waiting", "done: [{'approved': True}]", "thanks"]


async def test_conversation_keeps_history_and_state_across_continue_as_new(
    durable_stack: DurableStack,
) -> None:
    def remember(fact: str, tool_context: ToolContext) -> dict:
        """Remember a fact."""
        tool_context.state["fact"] = fact
        return {"remembered": fact}

    def recall(tool_context: ToolContext) -> dict:
        """Recall the fact."""
        return {"fact": tool_context.state.get("fact")}

    def script(request: LlmRequest) -> Any:
        done = tool_responses_this_turn(request)
        said = user_said(request)
        if done:
            return text_response(f"ok {done[-1]}")
        if said.startswith("remember "):
            return function_call_response("remember", {"fact": said.removeprefix("remember ")})
        if said == "recall":
            return function_call_response("recall", {})
        return text_response(f"heard: {said}")

    model = ScriptedModel(script)
    app = durable_stack.register(
        App(name=_unique("hitl_can"), root_agent=LlmAgent(name="memo", model=model, tools=[remember, recall]))
    )
    temporal = durable_stack.client.client
    handle = await temporal.start_workflow(
        SessionWorkflow.run,
        SessionWorkflowInput(app_name=app.name, user_id="u1", session_id="s1", max_turns_per_run=2),
        id=session_workflow_id(app.name, "u1", "s1"),
        task_queue=durable_stack.task_queue,
    )
    first_run = handle.first_execution_run_id
    messages = ["remember blue", "hello 2", "hello 3", "hello 4", "recall"]
    texts = []
    for message in messages:
        turn_start = len(model.requests)
        turn = await durable_stack.client.send(app.name, "u1", "s1", message)
        texts.append(turn.final_text)

    assert texts == [
        "ok {'remembered': 'blue'}",
        "heard: hello 2",
        "heard: hello 3",
        "heard: hello 4",
        "ok {'fact': 'blue'}",
    ]
    description = await temporal.get_workflow_handle(handle.id).describe()
    assert description.run_id != first_run
    # Every request of turn 5 carried turn 1's words (history from the store, by reference).
    turn_five = model.requests[turn_start:]
    assert len(turn_five) == 2
    for request in turn_five:
        texts_seen = [p.text for c in request.contents for p in c.parts if p.text]
        assert "remember blue" in texts_seen and "recall" in texts_seen
    session = await durable_stack.sessions.get_session(app_name=app.name, user_id="u1", session_id="s1")
    assert session is not None and session.state["fact"] == "blue"
    ids = [e.id for e in session.events]
    assert (
        len(ids) == len(set(ids)) == 2 * 4 + 3 * 2
    )  # tool turns: user, call, result, text; others: user, text
