"""The Postgres simulator store: the same rules as in memory, the promoted columns, and changes
announced with NOTIFY."""

from __future__ import annotations

import asyncio
import uuid

import pytest
import pytest_asyncio
import sqlalchemy as sa

from adk_core.simulator import (
    NotHeadOfQueueError,
    SessionEvent,
    SimulatorService,
    TurnAlreadyAnsweredError,
)
from adk_core.simulator.sql import SqlSimulatorStore
from adk_core.sql import migrate
from tests.unit.simulator.test_rules_and_store import REQUEST, answer, ask

pytestmark = pytest.mark.integration


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def migrated(database_url: str) -> str:
    await migrate(database_url)
    return database_url


@pytest_asyncio.fixture(loop_scope="session")
async def store(migrated: str):
    store = SqlSimulatorStore(migrated)
    yield store
    await store.close()


async def test_rules_hold_in_postgres(store: SqlSimulatorStore) -> None:
    service = SimulatorService(store)
    session_key = f"s-{uuid.uuid4().hex[:6]}"
    first = await ask(service, adk_session=session_key, at=1)
    second = await ask(service, adk_session=session_key, at=2)
    assert first.session_id == second.session_id
    service.expect_decision(first.turn_id)
    with pytest.raises(NotHeadOfQueueError):
        await service.submit_decision(first.session_id, second.turn_id, {"text": "x"})
    await service.submit_decision(first.session_id, first.turn_id, {"text": "ok"})
    response = await store.append(answer(first, at=3))
    assert await store.append(response) == response
    with pytest.raises(TurnAlreadyAnsweredError):
        await store.append(answer(first, at=4))
    view = await service.view(first.session_id)
    assert view.head == second and view.timeline[0].response == response
    summary = next(s for s in await service.list_sessions() if s.session.id == first.session_id)
    assert (summary.pending_count, summary.turn_count) == (1, 2)
    async with store.engine.connect() as conn:
        rows = (await conn.execute(sa.text(
            "SELECT payload_type, turn_id, event->'llm_request' IS NOT NULL AS has_request "
            "FROM adk_simulator_events WHERE session_id = :s ORDER BY timestamp"
        ), {"s": first.session_id})).all()
    assert [tuple(r) for r in rows] == [
        ("request", first.turn_id, True), ("request", second.turn_id, True), ("response", first.turn_id, False)
    ]


async def test_concurrent_sessions_for_one_adk_session_are_one(store: SqlSimulatorStore) -> None:
    key = f"s-{uuid.uuid4().hex[:6]}"
    sessions = await asyncio.gather(*(store.session_for("app", "u", key) for _ in range(5)))
    assert len({s.id for s in sessions}) == 1


async def test_writes_are_announced(store: SqlSimulatorStore) -> None:
    service = SimulatorService(store)
    async with store.changes() as changes:
        event = await ask(service, adk_session=f"s-{uuid.uuid4().hex[:6]}")
        seen = [await asyncio.wait_for(anext(changes), 5) for _ in range(2)]  # session made, request stored
    assert set(seen) == {event.session_id}


async def test_concurrent_answers_store_one(store: SqlSimulatorStore) -> None:
    service = SimulatorService(store)
    request = await ask(service, adk_session=f"s-{uuid.uuid4().hex[:6]}")
    results = await asyncio.gather(
        *(store.append(answer(request, at=2 + i)) for i in range(4)), return_exceptions=True
    )
    assert sum(isinstance(r, SessionEvent) for r in results) == 1
    assert all(isinstance(r, (SessionEvent, TurnAlreadyAnsweredError)) for r in results)
    assert REQUEST == (await store.events(request.session_id))[0].llm_request
