"""Session appends run on a few connections held out of the engine's pool (adk_core.sql.held):
never more than two per engine, returned at dispose, replaced when broken or cancelled."""

from __future__ import annotations

import asyncio
import gc
import warnings
import weakref

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from adk_core.errors import AdkError
from adk_core.sessions.sql import DatabaseSessionService
from adk_core.sql import is_transient
from adk_core.sql.held import HELD_PER_ENGINE
from adk_core.types import Content, Event
from tests.integration.sessions.test_sql_sessions import held_statements

pytestmark = pytest.mark.integration


def event(event_id: str) -> Event:
    return Event(id=event_id, author="user", timestamp=1.0, content=Content.user(event_id))


async def stored_ids(sessions: DatabaseSessionService, app_name: str, session_id: str) -> list[str]:
    stored = await sessions.get_session(app_name=app_name, user_id="u", session_id=session_id)
    assert stored is not None
    return [e.id for e in stored.events]


async def other_backends(url: str, *, terminate: bool = False) -> int:
    """Connections to this database other than the one asking (terminated first when asked)."""
    probe = create_async_engine(url, poolclass=NullPool)
    what = "pg_terminate_backend(pid)" if terminate else "pid"
    try:
        async with probe.connect() as conn:
            return (await conn.execute(sa.text(
                f"SELECT count({what}) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ))).scalar_one()
    finally:
        await probe.dispose()


async def test_stores_sharing_an_engine_hold_two_connections_between_them_and_dispose_returns_them(
    migrated_url: str, app_name: str
) -> None:
    engine = create_async_engine(migrated_url)
    pool = engine.sync_engine.pool
    stores = [DatabaseSessionService(engine) for _ in range(5)]  # e.g. one store per request
    session = await stores[0].create_session(app_name=app_name, user_id="u")
    for i in range(30):
        await stores[i % 5].append_event(session, event(f"e{i}"))
    await asyncio.gather(*(stores[i % 5].append_events(session, [event(f"b{i}a"), event(f"b{i}b")]) for i in range(10)))
    assert 1 <= pool.checkedout() <= HELD_PER_ENGINE  # type: ignore[attr-defined]
    ids = await stored_ids(stores[0], app_name, session.id)
    assert ids[:30] == [f"e{i}" for i in range(30)] and len(ids) == 50

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # SQLAlchemy warns when it collects a connection never checked in
        await engine.dispose()
        gc.collect()
    assert await other_backends(migrated_url) == 0  # the held connections were closed, not leaked
    # The engine works again after dispose, holding anew.
    await stores[1].append_event(session, event("after-dispose"))
    assert (await stored_ids(stores[1], app_name, session.id))[-1] == "after-dispose"
    await engine.dispose()


async def test_a_closed_services_engine_is_not_kept_alive_by_its_held_connections(
    migrated_url: str, app_name: str
) -> None:
    """The set of held connections is kept per engine while the engine lives: it must not be what
    keeps the engine (and its pool) alive, or every service built from a URL and closed stays."""
    engines = []
    for i in range(3):
        service = DatabaseSessionService(migrated_url)
        session = await service.create_session(app_name=app_name, user_id="u", session_id=f"s{i}")
        await service.append_event(session, event("e1"))  # holds a connection
        engines.append(weakref.ref(service.engine.sync_engine))
        await service.close()
        del service, session
    gc.collect()
    assert [engine() for engine in engines] == [None] * 3


async def test_appends_beyond_the_held_connections_run_on_pooled_ones(engine: AsyncEngine, app_name: str) -> None:
    sessions = DatabaseSessionService(engine)
    created = [await sessions.create_session(app_name=app_name, user_id="u") for _ in range(12)]
    await asyncio.gather(*(sessions.append_event(s, event(f"{s.id}-1")) for s in created))
    await asyncio.gather(*(sessions.append_events(s, [event(f"{s.id}-2"), event(f"{s.id}-3")]) for s in created))
    for s in created:
        assert await stored_ids(sessions, app_name, s.id) == [f"{s.id}-1", f"{s.id}-2", f"{s.id}-3"]
    assert engine.sync_engine.pool.checkedout() <= HELD_PER_ENGINE  # type: ignore[attr-defined]


async def test_a_held_connection_the_server_drops_fails_one_append_as_transient_then_is_replaced(
    engine: AsyncEngine, migrated_url: str, app_name: str
) -> None:
    sessions = DatabaseSessionService(engine)
    session = await sessions.create_session(app_name=app_name, user_id="u")
    await sessions.append_event(session, event("e1"))  # holds a connection
    assert await other_backends(migrated_url, terminate=True) >= 1
    with pytest.raises(DBAPIError) as caught:
        await sessions.append_event(session, event("e2"))
    assert not isinstance(caught.value, AdkError) and is_transient(caught.value)  # an activity retries it
    await sessions.append_event(session, event("e2"))  # the retry, on a new connection
    assert await stored_ids(sessions, app_name, session.id) == ["e1", "e2"]


async def test_an_append_cancelled_while_it_waits_leaves_no_connection_mid_statement(
    engine: AsyncEngine, app_name: str
) -> None:
    sessions = DatabaseSessionService(engine)
    session = await sessions.create_session(app_name=app_name, user_id="u")
    await sessions.append_event(session, event("e1"))
    async with engine.connect() as blocker:
        await blocker.execute(
            sa.text("SELECT 1 FROM adk_sessions WHERE app_name = :a FOR UPDATE"), {"a": app_name}
        )
        waiting = asyncio.create_task(sessions.append_event(session, event("cancelled")))
        await asyncio.sleep(0.3)
        assert not waiting.done()  # it waits for the session row
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await blocker.rollback()
    await asyncio.wait_for(sessions.append_event(session, event("e2")), 10)
    ids = await stored_ids(sessions, app_name, session.id)
    # The cancelled append may or may not have reached the table; the next one always does, once.
    assert ids in (["e1", "e2"], ["e1", "cancelled", "e2"])


async def test_session_reads_take_a_held_connection_and_beyond_them_pooled_ones(
    engine: AsyncEngine, app_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = DatabaseSessionService(engine)
    created = [await sessions.create_session(app_name=app_name, user_id="u") for _ in range(12)]
    for s in created:
        await sessions.append_event(s, event(f"{s.id}-1"))
    with held_statements(monkeypatch) as on_held:
        assert await stored_ids(sessions, app_name, created[0].id) == [f"{created[0].id}-1"]
        assert len(on_held) == 1  # one read, on a held connection
        missing = await sessions.get_session(app_name=app_name, user_id="u", session_id="no-such-session")
        assert missing is None and len(on_held) == 2

        # Fifteen at once: two on the held connections, the rest on pooled ones; missing ones read None there too.
        ids = [s.id for s in created] + ["missing-1", "missing-2", "missing-3"]
        got = await asyncio.gather(*(sessions.get_session(app_name=app_name, user_id="u", session_id=i) for i in ids))
        assert [[e.id for e in g.events] if g is not None else None for g in got] == (
            [[f"{i}-1"] for i in ids[:12]] + [None, None, None]
        )
        assert 2 < len(on_held) < 2 + len(ids)  # some ran on held connections, not all
    assert engine.sync_engine.pool.checkedout() <= HELD_PER_ENGINE  # type: ignore[attr-defined]
