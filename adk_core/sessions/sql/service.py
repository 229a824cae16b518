"""DatabaseSessionService: sessions, events and app/user state on Postgres (SQLAlchemy 2 async, psycopg 3)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from pydantic import TypeAdapter
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from adk_core.errors import AlreadyExistsError, SessionNotFoundError
from adk_core.runtime import random_id, wall_clock
from adk_core.sessions.base import (
    GetSessionConfig,
    ListSessionsResponse,
    Session,
    SessionService,
    apply_event_to_session,
    prepare_event_for_storage,
    stored_copy,
)
from adk_core.state import merge_state, split_delta, validate_state_delta
from adk_core.types import Event

from ._json import concat, dumps, dumps_model, jsonb
from .engine import SqlStore
from .schema import app_states, events, sessions, user_states

_EVENT_LIST = TypeAdapter(list[Event])


class _AlreadyStored(Exception):
    """Raised inside an append transaction to roll it back: the event id is already stored."""


class DatabaseSessionService(SqlStore, SessionService):
    """Sessions in Postgres: tables adk_sessions, adk_events, adk_app_states, adk_user_states.

    The tables come from the shipped migrations (``await adk_core.sessions.sql.migrate(url)`` at deploy
    or start-up); the constructor connects to nothing and creates nothing.

    Every append is one transaction: the session row is locked by the UPDATE that allocates the
    event's sequence number, the event is inserted, and the session/app/user deltas are merged with
    jsonb ``||``, so only the delta's keys change and concurrent writers never lose each other's
    keys. An event id that is already stored rolls the transaction back and the append succeeds
    unchanged (a Temporal activity may run the same append twice). Keys and values are validated
    before the transaction starts; a failure anywhere leaves nothing written.

    A caller holding an old copy of the session (other writers appended since it was read) still
    appends successfully: its deltas are merged into the stored state, never written over it. Its
    copy gains only its own event and delta; call ``get_session`` again to see the others' changes.

    Args:
        url_or_engine: a ``postgresql+psycopg://`` URL (``postgresql://`` is accepted), or an
            ``AsyncEngine`` the caller owns; ``close()`` disposes only an engine built here.
        clock: seconds since the epoch, used for create/update times of sessions.
        id_factory: makes ids for sessions created without one.
        engine_kwargs: passed to ``create_async_engine`` when a URL is given (pool size etc.).
    """

    def __init__(
        self,
        url_or_engine: str | URL | AsyncEngine,
        *,
        clock: Callable[[], float] = wall_clock,
        id_factory: Callable[[], str] = random_id,
        engine_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(url_or_engine, engine_kwargs)
        self._clock = clock
        self._new_id = id_factory

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        session_id = session_id.strip() if session_id and session_id.strip() else self._new_id()
        state = dict(state or {})
        validate_state_delta(state)
        app_delta, user_delta, session_state = split_delta(state)
        session_json = dumps(session_state, "session state")
        app_json = dumps(app_delta, "app: state") if app_delta else None
        user_json = dumps(user_delta, "user: state") if user_delta else None
        now = self._clock()
        async with self._engine.begin() as conn:
            inserted = await conn.execute(
                pg_insert(sessions)
                .values(
                    app_name=app_name,
                    user_id=user_id,
                    id=session_id,
                    state=jsonb(session_json),
                    create_time=now,
                    update_time=now,
                )
                .on_conflict_do_nothing()
                .returning(sessions.c.id)
            )
            if inserted.first() is None:
                raise AlreadyExistsError(
                    f"session {session_id!r} already exists for app {app_name!r}, user {user_id!r}; "
                    "pick another id or get_session() the existing one"
                )
            await _merge_shared_state(conn, app_name, user_id, app_json, user_json, now)
            row = (
                await conn.execute(_session_rows().where(*_session_key(app_name, user_id, session_id)))
            ).one()
        return _to_session(row, [])

    async def get_session(
        self, *, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None = None
    ) -> Session | None:
        # One statement, so one snapshot: the state returned is the state after the events returned.
        query = _session_rows().where(*_session_key(app_name, user_id, session_id))
        events_json = _events_json(app_name, user_id, session_id, config)
        if events_json is not None:
            query = query.add_columns(events_json.label("events"))
        async with self._engine.connect() as conn:
            row = (await conn.execute(query)).first()
        if row is None:
            return None
        return _to_session(row, [] if events_json is None else _EVENT_LIST.validate_json(row.events))

    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        query = _session_rows().where(sessions.c.app_name == app_name)
        if user_id is not None:
            query = query.where(sessions.c.user_id == user_id)
        async with self._engine.connect() as conn:
            rows = (await conn.execute(query.order_by(sessions.c.create_time, sessions.c.id))).all()
        return ListSessionsResponse(sessions=[_to_session(row, []) for row in rows])

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        async with self._engine.begin() as conn:
            await conn.execute(
                sa.delete(events).where(
                    events.c.app_name == app_name,
                    events.c.user_id == user_id,
                    events.c.session_id == session_id,
                )
            )
            await conn.execute(sa.delete(sessions).where(*_session_key(app_name, user_id, session_id)))

    async def append_event(self, session: Session, event: Event) -> Event:
        if prepare_event_for_storage(event) is None:
            return event
        app_delta, user_delta, session_delta = split_delta(event.actions.state_delta)
        session_json = dumps(session_delta, "state delta") if session_delta else None
        app_json = dumps(app_delta, "app: state delta") if app_delta else None
        user_json = dumps(user_delta, "user: state delta") if user_delta else None
        event_json = dumps_model(stored_copy(event), f"event {event.id!r}")
        try:
            async with self._engine.begin() as conn:
                await self._append(conn, session, event, event_json, session_json, app_json, user_json)
        except _AlreadyStored:
            # A retried append: the store already has this event; bring the caller's copy level.
            if not any(e.id == event.id for e in session.events):
                apply_event_to_session(session, event)
            return event
        apply_event_to_session(session, event)
        return event

    async def _append(
        self,
        conn: AsyncConnection,
        session: Session,
        event: Event,
        event_json: str,
        session_json: str | None,
        app_json: str | None,
        user_json: str | None,
    ) -> None:
        # The UPDATE locks the session row until commit: appenders to one session take turns here.
        values: dict[str, Any] = {"last_seq": sessions.c.last_seq + 1, "update_time": event.timestamp}
        if session_json is not None:
            values["state"] = concat(sessions.c.state, jsonb(session_json))
        seq = (
            await conn.execute(
                sa.update(sessions)
                .where(*_session_key(session.app_name, session.user_id, session.id))
                .values(values)
                .returning(sessions.c.last_seq)
            )
        ).scalar_one_or_none()
        if seq is None:
            raise SessionNotFoundError(
                f"session {session.id!r} (app {session.app_name!r}, user {session.user_id!r}) does not exist; "
                "create it with create_session() before appending events"
            )
        inserted = await conn.execute(
            pg_insert(events)
            .values(
                app_name=session.app_name,
                user_id=session.user_id,
                session_id=session.id,
                id=event.id,
                seq=seq,
                invocation_id=event.invocation_id,
                author=event.author,
                branch=event.branch,
                timestamp=event.timestamp,
                event=jsonb(event_json),
            )
            .on_conflict_do_nothing(constraint="adk_events_pkey")
            .returning(events.c.seq)
        )
        if inserted.first() is None:
            raise _AlreadyStored
        await _merge_shared_state(
            conn, session.app_name, session.user_id, app_json, user_json, event.timestamp
        )

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        query = sa.select(user_states.c.state).where(
            user_states.c.app_name == app_name, user_states.c.user_id == user_id
        )
        async with self._engine.connect() as conn:
            return (await conn.execute(query)).scalar_one_or_none() or {}

    async def get_app_state(self, *, app_name: str) -> dict[str, Any]:
        query = sa.select(app_states.c.state).where(app_states.c.app_name == app_name)
        async with self._engine.connect() as conn:
            return (await conn.execute(query)).scalar_one_or_none() or {}


def _session_key(app_name: str, user_id: str, session_id: str) -> tuple[sa.ColumnElement[bool], ...]:
    return (sessions.c.app_name == app_name, sessions.c.user_id == user_id, sessions.c.id == session_id)


def _session_rows() -> sa.Select[Any]:
    """Session rows with their app and user state alongside."""
    app_state = sa.select(app_states.c.state).where(app_states.c.app_name == sessions.c.app_name)
    user_state = sa.select(user_states.c.state).where(
        user_states.c.app_name == sessions.c.app_name, user_states.c.user_id == sessions.c.user_id
    )
    return sa.select(
        sessions.c.app_name,
        sessions.c.user_id,
        sessions.c.id,
        sessions.c.state,
        sessions.c.update_time,
        app_state.scalar_subquery().label("app_state"),
        user_state.scalar_subquery().label("user_state"),
    )


def _to_session(row: sa.Row[Any], loaded: list[Event]) -> Session:
    return Session(
        id=row.id,
        app_name=row.app_name,
        user_id=row.user_id,
        state=merge_state(row.app_state or {}, row.user_state or {}, row.state),
        events=loaded,
        last_update_time=row.update_time,
    )


async def _merge_shared_state(
    conn: AsyncConnection,
    app_name: str,
    user_id: str,
    app_json: str | None,
    user_json: str | None,
    now: float,
) -> None:
    """Upsert app and user state, merging the delta's keys into what is stored (app row first, always)."""
    if app_json is not None:
        stmt = pg_insert(app_states).values(app_name=app_name, state=jsonb(app_json), update_time=now)
        await conn.execute(
            stmt.on_conflict_do_update(
                index_elements=[app_states.c.app_name],
                set_={
                    "state": concat(app_states.c.state, stmt.excluded.state),
                    "update_time": stmt.excluded.update_time,
                },
            )
        )
    if user_json is not None:
        stmt = pg_insert(user_states).values(
            app_name=app_name, user_id=user_id, state=jsonb(user_json), update_time=now
        )
        await conn.execute(
            stmt.on_conflict_do_update(
                index_elements=[user_states.c.app_name, user_states.c.user_id],
                set_={
                    "state": concat(user_states.c.state, stmt.excluded.state),
                    "update_time": stmt.excluded.update_time,
                },
            )
        )


def _events_json(
    app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None
) -> sa.ScalarSelect[Any] | None:
    """A JSON array (as text) of the events ``config`` selects, oldest first; None when it selects none.

    Same semantics as ``base.select_events``. Every filter runs on the (app_name, user_id,
    session_id, seq) index: the last N events are read backwards from the end of the session and no
    other row is touched.
    """
    config = config or GetSessionConfig()
    if config.num_recent_events is not None and config.num_recent_events <= 0:
        return None
    in_session = (
        events.c.app_name == app_name,
        events.c.user_id == user_id,
        events.c.session_id == session_id,
    )
    selected = sa.select(events.c.event, events.c.seq).where(*in_session)
    if config.through_event_id is not None:
        cursor = sa.select(events.c.seq).where(*in_session, events.c.id == config.through_event_id)
        selected = selected.where(events.c.seq <= cursor.scalar_subquery())
    if config.after_timestamp is not None:
        selected = selected.where(events.c.timestamp > config.after_timestamp)
    if config.num_recent_events is not None:
        selected = selected.order_by(events.c.seq.desc()).limit(config.num_recent_events)
    chosen = selected.subquery("chosen")
    as_array = sa.func.json_agg(aggregate_order_by(chosen.c.event, chosen.c.seq))
    return sa.select(sa.cast(sa.func.coalesce(as_array, sa.text("'[]'::json")), sa.Text)).scalar_subquery()
