"""The seed's entities and rules, through the service and the in-memory store (the Postgres store
runs the same checks: tests/integration/test_simulator_store.py)."""

from __future__ import annotations

import uuid

import pytest

from adk_core.simulator import (
    Decision,
    InMemorySimulatorStore,
    NotHeadOfQueueError,
    SessionCompletedError,
    SessionEvent,
    SimulatorConflictError,
    SimulatorInputError,
    SimulatorNotFoundError,
    SimulatorService,
    SimulatorSession,
    TurnAlreadyAnsweredError,
    rules,
)

REQUEST = {
    "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
    "tools": [{"function_declarations": [{
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }]}],
}
TEXT = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hello"}]}}]}


def uid() -> str:
    return str(uuid.uuid4())


async def ask(service: SimulatorService, *, adk_session: str = "s1", agent: str = "a", at: float = 1.0) -> SessionEvent:
    return await service.submit_request(
        app_name="app", user_id="u", adk_session_id=adk_session, agent_name=agent, turn_id=uid(),
        event_id=uid(), timestamp=at, llm_request=REQUEST,
    )


def answer(event: SessionEvent, *, at: float = 2.0, response: dict = TEXT) -> SessionEvent:
    return SessionEvent(event_id=uid(), session_id=event.session_id, timestamp=at, turn_id=event.turn_id,
                        agent_name=event.agent_name, llm_response=response)


def test_ids_must_be_uuid4() -> None:
    assert rules.check_uuid4(uid(), "id")
    for bad in ["nope", str(uuid.uuid1()), "", "{" + str(uuid.uuid4()) + "}"]:
        with pytest.raises(SimulatorInputError, match="UUID"):
            rules.check_uuid4(bad, "id")


async def test_sessions_truncate_descriptions_and_go_active_to_completed_only() -> None:
    store = InMemorySimulatorStore()
    session = await store.create_session(SimulatorSession(id=uid(), created_at=0, description="x" * 900))
    assert len(session.description) == 500 and session.status == "active"
    with pytest.raises(SimulatorInputError, match="UUID"):
        await store.create_session(SimulatorSession(id="not-a-uuid", created_at=0))
    with pytest.raises(SimulatorConflictError, match="already exists"):
        await store.create_session(session)
    await store.set_status(session.id, "completed")
    with pytest.raises(SimulatorConflictError, match="active -> completed only"):
        await store.set_status(session.id, "active")
    with pytest.raises(SimulatorInputError, match="not one of"):
        await store.set_status(session.id, "paused")


async def test_event_rules() -> None:
    service = SimulatorService()
    request = await ask(service)
    store = service.store
    base = dict(event_id=uid(), session_id=request.session_id, timestamp=3.0, turn_id=uid(), agent_name="a")
    with pytest.raises(SimulatorInputError, match="exactly one"):
        await store.append(SessionEvent(**base))
    with pytest.raises(SimulatorInputError, match="exactly one"):
        await store.append(SessionEvent(**base, llm_request=REQUEST, llm_response=TEXT))
    with pytest.raises(SimulatorInputError, match="agent_name is empty"):
        await store.append(SessionEvent(**{**base, "agent_name": " "}, llm_request=REQUEST))
    with pytest.raises(SimulatorInputError, match="at most 100"):
        await store.append(SessionEvent(**{**base, "agent_name": "a" * 101}, llm_request=REQUEST))
    with pytest.raises(SimulatorInputError, match="turn_id"):
        await store.append(SessionEvent(**{**base, "turn_id": "t1"}, llm_request=REQUEST))
    with pytest.raises(SimulatorNotFoundError, match="no simulator session"):
        await store.append(SessionEvent(**{**base, "session_id": uid()}, llm_request=REQUEST))
    with pytest.raises(SimulatorConflictError, match="no request to answer"):
        await store.append(SessionEvent(**base, llm_response=TEXT))
    with pytest.raises(SimulatorInputError, match="no candidates"):
        await store.append(answer(request, response={"candidates": []}))
    with pytest.raises(SimulatorConflictError, match="already has a request"):
        await store.append(SessionEvent(**{**base, "turn_id": request.turn_id}, llm_request=REQUEST))
    # A concurrent writer's older clock (another branch's workflow) is stored in time order.
    late = await store.append(answer(request, at=0.5))
    assert late.timestamp == request.timestamp
    assert [e.timestamp for e in await store.events(request.session_id)] == sorted(
        e.timestamp for e in await store.events(request.session_id)
    )
    response = late
    assert await store.append(response) == response  # a repeat (a retried activity) is a no-op
    await store.append(answer(request, at=0.5).model_copy(update={"event_id": late.event_id}))  # with its own clock too
    with pytest.raises(TurnAlreadyAnsweredError, match="at most one response"):
        await store.append(answer(request, at=4.0))
    with pytest.raises(SimulatorConflictError, match="other content"):
        await store.append(response.model_copy(update={"agent_name": "someone_else"}))
    assert [e.payload_type for e in await store.events(request.session_id)] == ["request", "response"]


async def test_one_session_per_adk_session_with_pending_counts() -> None:
    service = SimulatorService()
    first = await ask(service, adk_session="s1", at=1)
    await ask(service, adk_session="s1", at=2)
    other = await ask(service, adk_session="s2", at=3)
    assert first.session_id != other.session_id
    counts = {s.session.adk_session_id: s.pending_count for s in await service.list_sessions()}
    assert counts == {"s1": 2, "s2": 1}


async def test_only_the_head_is_answerable_and_decisions_are_checked() -> None:
    service = SimulatorService()
    first = await ask(service, at=1)
    second = await ask(service, at=2)
    waiting = service.expect_decision(first.turn_id)
    view = await service.view(first.session_id)
    assert view.head == first and [p.turn_id for p in view.pending] == [first.turn_id, second.turn_id]
    with pytest.raises(NotHeadOfQueueError, match=f"answer turn {first.turn_id}"):
        await service.submit_decision(first.session_id, second.turn_id, Decision(text="no"))
    with pytest.raises(SimulatorInputError, match="no candidates"):
        await service.submit_decision(first.session_id, first.turn_id, Decision())
    with pytest.raises(SimulatorInputError, match="not among the request's tools"):
        await service.submit_decision(first.session_id, first.turn_id, {"function_calls": [{"name": "rm", "args": {}}]})
    with pytest.raises(SimulatorInputError, match="'city' is a required property"):
        await service.submit_decision(first.session_id, first.turn_id, {"function_calls": [{"name": "get_weather"}]})
    with pytest.raises(SimulatorInputError, match="at city"):
        await service.submit_decision(
            first.session_id, first.turn_id, {"function_calls": [{"name": "get_weather", "args": {"city": 3}}]}
        )
    with pytest.raises(SimulatorNotFoundError, match="no turn"):
        await service.submit_decision(first.session_id, uid(), Decision(text="x"))
    response = await service.submit_decision(
        first.session_id, first.turn_id, {"function_calls": [{"name": "get_weather", "args": {"city": "Paris"}}]}
    )
    assert waiting.done() and waiting.result() == response
    # Nobody waits for the second request in this process: a clear conflict, not a hang.
    await service.store.append(answer(first))
    with pytest.raises(SimulatorConflictError, match="no agent is waiting"):
        await service.submit_decision(first.session_id, second.turn_id, Decision(text="late"))


async def test_a_completed_session_takes_no_more() -> None:
    service = SimulatorService()
    request = await ask(service)
    await service.complete(request.session_id)
    with pytest.raises(SessionCompletedError, match="completed"):
        await service.submit_decision(request.session_id, request.turn_id, Decision(text="x"))
    with pytest.raises(SessionCompletedError, match="completed"):
        await ask(service, at=5)
