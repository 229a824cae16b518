"""SqlSimulatorStore: simulator sessions and events in Postgres (tables in adk_core.sql.schema).

The seed's promoted-field pattern: every row holds the full entity as JSONB and promotes the
columns that queries use (ids, session, time, turn, payload type, status). Writes run the same
rules as the in-memory store, inside one transaction that locks the session row, and announce
the change with ``pg_notify``; ``changes()`` LISTENs, so web servers hear of requests that workers
store without polling.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ..sql import SqlStore
from ..sql.schema import simulator_events, simulator_sessions
from . import rules
from .errors import SimulatorConflictError, SimulatorNotFoundError
from .models import SessionEvent, SessionSummary, SimulatorSession
from .store import new_session, summarize

CHANNEL = "adk_simulator"
"""The Postgres NOTIFY channel; the payload is the id of the session that changed."""


class SqlSimulatorStore(SqlStore):
    """Args: a database URL (the store owns the engine) or an AsyncEngine (the caller owns it).
    The tables come from the project's migrations (``adk_core.sql.migrate``)."""

    def __init__(self, url_or_engine: str | URL | AsyncEngine, engine_kwargs: dict[str, Any] | None = None):
        super().__init__(url_or_engine, engine_kwargs)

    # --- sessions ----------------------------------------------------------------------------------
    async def create_session(self, session: SimulatorSession) -> SimulatorSession:
        session = rules.check_session(session)
        async with self.engine.begin() as conn:
            inserted = await conn.execute(
                insert(simulator_sessions).values(**_session_row(session)).on_conflict_do_nothing()
                .returning(simulator_sessions.c.id)
            )
            if inserted.first() is None:
                raise SimulatorConflictError(f"session {session.id} already exists; use another UUIDv4")
            await _notify(conn, session.id)
        return session

    async def session_for(self, app_name: str, user_id: str, adk_session_id: str, *, description: str = "") -> SimulatorSession:
        key = (simulator_sessions.c.app_name == app_name) & (simulator_sessions.c.user_id == user_id) & (
            simulator_sessions.c.adk_session_id == adk_session_id
        )
        async with self.engine.begin() as conn:
            row = (await conn.execute(sa.select(simulator_sessions.c.session).where(key))).first()
            if row is not None:
                return SimulatorSession.model_validate(row.session)
            session = rules.check_session(
                new_session(description, app_name=app_name, user_id=user_id, adk_session_id=adk_session_id)
            )
            await conn.execute(
                insert(simulator_sessions).values(**_session_row(session))
                .on_conflict_do_nothing(constraint="adk_simulator_sessions_adk_key")
            )
            await _notify(conn, session.id)
            # Another writer may have won the race for this key: read back whichever row stands.
            row = (await conn.execute(sa.select(simulator_sessions.c.session).where(key))).one()
            return SimulatorSession.model_validate(row.session)

    async def get_session(self, session_id: str) -> SimulatorSession:
        async with self.engine.connect() as conn:
            return await _get_session(conn, session_id)

    async def list_sessions(self) -> list[SessionSummary]:
        async with self.engine.connect() as conn:
            sessions = (
                await conn.execute(sa.select(simulator_sessions.c.session).order_by(simulator_sessions.c.created_at.desc()))
            ).scalars().all()
            rows = (
                await conn.execute(
                    sa.select(simulator_events.c.session_id, simulator_events.c.event)
                    .order_by(simulator_events.c.timestamp, simulator_events.c.seq)
                )
            ).all()
        by_session: dict[str, list[SessionEvent]] = {}
        for row in rows:
            by_session.setdefault(row.session_id, []).append(SessionEvent.model_validate(row.event))
        return [
            summarize(session, by_session.get(session.id, []))
            for session in map(SimulatorSession.model_validate, sessions)
        ]

    async def events(self, session_id: str) -> list[SessionEvent]:
        async with self.engine.connect() as conn:
            await _get_session(conn, session_id)
            return await _events(conn, session_id)

    async def append(self, event: SessionEvent) -> SessionEvent:
        rules.check_event(event)
        async with self.engine.begin() as conn:
            session = await _get_session(conn, event.session_id, lock=True)
            stored = await _events(conn, session.id)
            if rules.check_append(session, stored, event):
                event = rules.in_time_order(stored, event)
                await conn.execute(
                    sa.insert(simulator_events).values(
                        event_id=event.event_id, session_id=event.session_id, timestamp=event.timestamp,
                        turn_id=event.turn_id, agent_name=event.agent_name, payload_type=event.payload_type,
                        event=event.model_dump(mode="json", exclude_none=True),
                    )
                )
                await _notify(conn, session.id)
        return event

    async def set_status(self, session_id: str, status: str) -> SimulatorSession:
        async with self.engine.begin() as conn:
            session = await _get_session(conn, session_id, lock=True)
            rules.check_transition(session.status, status)
            session = session.model_copy(update={"status": status})
            await conn.execute(
                sa.update(simulator_sessions).where(simulator_sessions.c.id == session_id)
                .values(status=status, session=session.model_dump(mode="json"))
            )
            await _notify(conn, session_id)
        return session

    @contextlib.asynccontextmanager
    async def changes(self) -> AsyncIterator[AsyncIterator[str]]:
        url = self.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
        try:
            await conn.execute(f"LISTEN {CHANNEL}")

            async def ids() -> AsyncIterator[str]:
                async for note in conn.notifies():
                    yield note.payload

            yield ids()
        finally:
            await conn.close()


def _session_row(session: SimulatorSession) -> dict[str, Any]:
    return dict(
        id=session.id, created_at=session.created_at, status=session.status, app_name=session.app_name,
        user_id=session.user_id, adk_session_id=session.adk_session_id, session=session.model_dump(mode="json"),
    )


async def _get_session(conn: AsyncConnection, session_id: str, *, lock: bool = False) -> SimulatorSession:
    query = sa.select(simulator_sessions.c.session).where(simulator_sessions.c.id == session_id)
    if lock:
        query = query.with_for_update()
    row = (await conn.execute(query)).first()
    if row is None:
        raise SimulatorNotFoundError(f"no simulator session {session_id!r}; list them with GET /api/sessions")
    return SimulatorSession.model_validate(row.session)


async def _events(conn: AsyncConnection, session_id: str) -> list[SessionEvent]:
    rows = await conn.execute(
        sa.select(simulator_events.c.event).where(simulator_events.c.session_id == session_id)
        .order_by(simulator_events.c.timestamp, simulator_events.c.seq)
    )
    return [SessionEvent.model_validate(e) for e in rows.scalars()]


async def _notify(conn: AsyncConnection, session_id: str) -> None:
    await conn.execute(sa.select(sa.func.pg_notify(CHANNEL, session_id)))
