"""DatabaseSessionService: sessions, events and app/user state on Postgres (SQLAlchemy 2 async, psycopg 3)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
import sqlalchemy as sa
from pydantic import TypeAdapter
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from adk_core.encryption import FROM_ENV, Sealer, open_json_text, open_state, resolve_sealer, seal_state
from adk_core.errors import AlreadyExistsError, SessionNotFoundError
from adk_core.ids import validate_id, validate_session_key
from adk_core.runtime import random_id, wall_clock
from adk_core.sessions.base import (
    GetSessionConfig,
    ListSessionsResponse,
    Session,
    SessionService,
    apply_event_to_session,
    check_get_session_config,
    check_list_ids,
    check_repeat,
    new_session_id,
    prepare_event_for_storage,
    stored_form,
    unique_events,
)
from adk_core.sql import SqlStore, dumps, dumps_model, store_errors
from adk_core.sql.erase import erase_session, erase_user
from adk_core.sql.held import Statement, driver_sql, held_connections
from adk_core.state import merge_state, split_delta, validate_state_delta
from adk_core.types import Event

from . import _statements as q

_EVENT_LIST = TypeAdapter(list[Event])


class DatabaseSessionService(SqlStore, SessionService):
    """Sessions in Postgres: tables adk_sessions, adk_events, adk_app_states, adk_user_states.

    The tables come from the shipped migrations (``await adk_core.sql.migrate(url)`` at deploy
    or start-up); the constructor connects to nothing and creates nothing.

    Every append is one atomic statement (``_statements.append_event_statement``): it locks the
    session row, numbers and inserts the event, and merges the session/app/user deltas with jsonb
    ``||``, so only the delta's keys change and concurrent writers never lose each other's keys. An
    event id that is already stored with the same content inserts nothing and merges nothing, and
    the append succeeds unchanged (a Temporal activity may run the same append twice). ``append_events`` runs several
    such statements in one transaction. An event id stored with *different* content is refused
    with EventConflictError, and nothing of the append is written. Ids, keys and values are
    validated before anything is sent; a failure anywhere leaves nothing written.

    An append first goes as events not stored yet, looking no id up (``APPEND_NEW_PLAIN_EVENTS``):
    an id stored already fails it on the primary key with nothing written, and it goes again with
    each id looked up, the path that tells repeats from conflicts. Only retried appends take it.

    Errors: what cannot succeed on retry (bad ids or values, a NUL Postgres cannot store, a
    database without the tables) is raised as an AdkError; transient database errors (connection
    lost, deadlock, serialization failure, too many connections) are raised unchanged, so a
    Temporal activity retries them. ``_errors`` holds the classification.

    A caller holding an old copy of the session (other writers appended since it was read) still
    appends successfully: its deltas are merged into the stored state, never written over it. Its
    copy gains only its own event and delta; call ``get_session`` again to see the others' changes.

    Args:
        url_or_engine: a ``postgresql+psycopg://`` URL (``postgresql://`` is accepted), or an
            ``AsyncEngine`` the caller owns; ``close()`` disposes only an engine built here.
        clock: seconds since the epoch, used for create/update times of sessions.
        id_factory: makes ids for sessions created without one.
        engine_kwargs: passed to ``create_async_engine`` when a URL is given (pool size etc.).
        sealer: encrypts what is stored (``adk_core.encryption``): by default this process's keys
            (ADK_ENCRYPTION_KEYS / _FILE) when configured, else nothing; None never encrypts.

    Encrypted, an event's JSON is stored as ``{"id", "invocation_id", "author", "branch",
    "timestamp", "adk_sealed"}`` (the fields its columns hold anyway, in clear) and state values are
    sealed one by one under their keys (so ``||`` still merges key by key). AES-GCM is randomized,
    so jsonb never finds a repeat equal: the stored event is decrypted and compared here instead.
    """

    def __init__(
        self,
        url_or_engine: str | URL | AsyncEngine,
        *,
        clock: Callable[[], float] = wall_clock,
        id_factory: Callable[[], str] = random_id,
        engine_kwargs: dict[str, Any] | None = None,
        sealer: Sealer | None | str = FROM_ENV,
    ) -> None:
        super().__init__(url_or_engine, engine_kwargs)
        self._sealer = resolve_sealer(sealer)
        self._clock = clock
        self._new_id = id_factory

    @store_errors
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        session_id = new_session_id(app_name, user_id, session_id, self._new_id)
        state = dict(state or {})
        validate_state_delta(state)
        app_delta, user_delta, session_state = split_delta(state)
        params = {
            "app": app_name,
            "user": user_id,
            "sid": session_id,
            "now": self._clock(),
            "state_json": _state_json(session_state, "session state", self._sealer),
            **_shared_state_params(app_delta, user_delta, self._sealer),
        }
        if not (app_delta or user_delta):
            # One statement on a held connection (every eval trial and conversation creates one):
            # a third of the CPU of the transaction below (bench/README.md, "eval").
            [(created, stored, update_time, app_state, user_state)] = await held_connections(
                self._engine
            ).fetch_first_rows([(_CREATE_AND_READ_SQL, params)])
            if created is None:
                raise _already_exists(app_name, user_id, session_id)
            return Session(
                id=created, app_name=app_name, user_id=user_id, events=[], last_update_time=update_time,
                state=merge_state(*(open_state(s, self._sealer) for s in (app_state, user_state, stored))),
            )
        async with self._engine.begin() as conn:
            if (await conn.execute(q.CREATE_SESSION, params)).first() is None:
                raise _already_exists(app_name, user_id, session_id)
            await _merge_shared_state(conn, params)
            row = (await conn.execute(q.GET_SESSION, params)).one()
        return self._to_session(row, [])

    @store_errors
    async def get_session(
        self, *, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None = None
    ) -> Session | None:
        validate_session_key(app_name, user_id, session_id)
        check_get_session_config(config)
        config = config or GetSessionConfig()
        params: dict[str, Any] = {"app": app_name, "user": user_id, "sid": session_id}
        no_events = config.num_recent_events == 0
        if no_events:
            sql = _GET_SESSION_SQL
        elif config.skip_compacted:
            sql = _skipping_compacted_sql(config.through_event_id is not None)
            params["through_id"] = config.through_event_id
        else:
            sql = _get_session_sql(
                config.through_event_id is not None,
                config.after_timestamp is not None,
                config.num_recent_events is not None,
                config.after_event_id is not None,
            )
            params |= {
                "after_id": config.after_event_id,
                "through_id": config.through_event_id,
                "after_ts": config.after_timestamp,
                "n": config.num_recent_events,
            }
        # On a held connection: every model call that finds its history uncached, and every run of a
        # conversation (its first workflow task loads the session), reads through here. A pool
        # checkout and SQLAlchemy's result handling cost more than the statement; the first
        # checkout also opened a connection, on whichever turn first continued as new.
        row = await held_connections(self._engine).fetch_row_or_none(sql, params)
        if row is None:
            return None
        return self._to_session(row, [] if no_events else self._read_events(row[_SESSION_COLUMNS]))

    @store_errors
    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        check_list_ids(app_name, user_id)
        query = q.LIST_APP_SESSIONS if user_id is None else q.LIST_USER_SESSIONS
        async with self._engine.connect() as conn:
            rows = (await conn.execute(query, {"app": app_name, "user": user_id})).all()
        return ListSessionsResponse(sessions=[self._to_session(row, []) for row in rows])

    @store_errors
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Delete the session and everything of it in this database (``adk_core.sql.erase``): events,
        memory entries, its artifacts, streamed partials, simulator sessions, eval trials. The
        Temporal workflows and the large payloads they reference: ``adk_temporal.deletion``."""
        validate_session_key(app_name, user_id, session_id)
        await erase_session(self._engine, app_name, user_id, session_id)

    @store_errors
    async def delete_user(self, *, app_name: str, user_id: str) -> None:
        validate_id("app name", app_name)
        validate_id("user id", user_id)
        await erase_user(self._engine, app_name, user_id)

    @store_errors
    async def append_event(self, session: Session, event: Event) -> Event:
        validate_session_key(session.app_name, session.user_id, session.id)
        if prepare_event_for_storage(event) is None:
            return event
        # Everything is serialized (so checked) before anything is sent: a refusal has written
        # nothing. One self-contained statement: no BEGIN/COMMIT round trips needed.
        await self._append(session, [event])
        if not any(e.id == event.id for e in session.events):
            # New, or a retried append that finds it stored: bring the caller's copy level.
            apply_event_to_session(session, event)
        return event

    @store_errors
    async def append_events(self, session: Session, events: list[Event]) -> list[Event]:
        """Append several events in ONE transaction (one commit), all or nothing. Events already
        stored with the same content (a retried activity) are skipped; one stored with other
        content is a conflict and nothing is written. Consecutive events without a state delta
        (most of them) go in one statement; a batch of only such events needs no transaction."""
        validate_session_key(session.app_name, session.user_id, session.id)
        events = [e for e in events if prepare_event_for_storage(e) is not None]
        unique = unique_events(events)
        if unique:
            await self._append(session, unique)
        known = {e.id for e in session.events}
        for event in unique:
            if event.id not in known:
                apply_event_to_session(session, event)
        return events

    async def _append(self, session: Session, events: list[Event]) -> None:
        """Store ``events`` (checked, ids unique) in order, all or nothing. Ids already stored are
        compared with what is stored: the same content is a repeat, other content raises
        EventConflictError. The statements compare jsonb; only when that differs is the stored
        JSON compared here, in ``stored_content``'s form (which tolerates fields added since)."""
        new_only = True  # first as events not stored yet: no lookups (_statements.APPEND_NEW_PLAIN_EVENTS)
        while True:
            runs = _runs_of_plain_events(events) if len(events) > 1 else [events]
            statements = [
                (_APPEND_NEW_PLAIN_SQL if new_only else _APPEND_PLAIN_SQL, _plain_events_params(session, run, self._sealer))
                if len(run) > 1
                else _single_append(_append_params(session, run[0], self._sealer), new_only)
                for run in runs
            ]
            try:
                rows = await self._run_appends(statements, runs)
            except sa.exc.IntegrityError as error:
                if not (new_only and _stored_already(error)):
                    raise
                # An id of the append is stored already (a retried call, or another writer): nothing
                # was written; again with each id looked up, which tells repeats from conflicts.
                new_only = False
                continue
            except _StoredAlready as repeats:
                # A plain batch held events stored in another jsonb form of the same content: the
                # statement inserted nothing (it could not tell), so the rest goes again without them.
                events = [e for e in events if e.id not in repeats.ids]
                if not events:
                    return
                continue
            break
        for run, row in zip(runs, rows, strict=True):
            inserted, existing = _row_ids(run, row)
            for event in run:
                if event.id not in inserted and event.id not in existing:
                    # Stored by another writer while this statement waited for the session's lock
                    # (after its snapshot): compare now. Rare; the rest of the batch is committed.
                    await self._compare_with_stored(session, event)

    async def _run_appends(self, statements: list[Statement], runs: list[list[Event]]) -> list[tuple[Any, ...]]:
        """Run append statements (several: in ONE transaction) and return each one's row; raises
        SessionNotFoundError when the session does not exist and EventConflictError on a conflict
        (then nothing changed). Appends are the hot path of a durable turn: they run on held
        connections (adk_core.sql.held)."""

        def check(index: int, row: tuple[Any, ...]) -> None:
            params, run = statements[index][1], runs[index]
            found, _, differing, *_ = row
            if not found:
                raise SessionNotFoundError(
                    f"session {params['sid']!r} (app {params['app']!r}, user {params['user']!r}) does not exist; "
                    "create it with create_session() before appending events"
                )
            if differing is None:
                return
            stored = [differing] if len(run) == 1 else [json.dumps(e) for e in json.loads(differing)]
            by_id = {e.id: e for e in run}
            ids = set()
            for text in stored:
                event_id = json.loads(text)["id"]
                check_repeat(self._opened(text), by_id[event_id])  # raises on a real conflict: rolled back
                ids.add(event_id)
            if len(run) > 1:
                raise _StoredAlready(ids)

        return await held_connections(self._engine).fetch_first_rows(statements, check)

    async def _compare_with_stored(self, session: Session, event: Event) -> None:
        params = {"app": session.app_name, "user": session.user_id, "sid": session.id, "event_id": event.id}
        async with self._engine.connect() as conn:
            stored = (await conn.execute(q.EVENT_JSON, params)).scalar_one_or_none()
        if stored is not None:
            check_repeat(self._opened(stored), event)

    def _opened(self, stored_json: str) -> str:
        """A stored event's JSON, decrypted when it is sealed."""
        return open_json_text(json.loads(stored_json), self._sealer) or stored_json

    def _read_events(self, events_json: str) -> list[Event]:
        if self._sealer is None and '"adk_sealed"' not in events_json:
            return _EVENT_LIST.validate_json(events_json)  # the plain fast path: one parse
        return [Event.model_validate_json(self._opened(json.dumps(e))) for e in json.loads(events_json)]

    def _to_session(self, row: Sequence[Any], loaded: list[Event]) -> Session:
        """A session from a row of ``_SESSION_ROWS``'s columns, in their order (an engine's Row or a
        held connection's tuple)."""
        app_name, user_id, session_id, state, update_time, app_state, user_state = row[:_SESSION_COLUMNS]
        return Session(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state=merge_state(
                open_state(app_state, self._sealer),
                open_state(user_state, self._sealer),
                open_state(state, self._sealer),
            ),
            events=loaded,
            last_update_time=update_time,
        )

    @store_errors
    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        validate_id("app name", app_name)
        validate_id("user id", user_id)
        async with self._engine.connect() as conn:
            state = (await conn.execute(q.USER_STATE, {"app": app_name, "user": user_id})).scalar_one_or_none()
        return open_state(state, self._sealer)

    @store_errors
    async def get_app_state(self, *, app_name: str) -> dict[str, Any]:
        validate_id("app name", app_name)
        async with self._engine.connect() as conn:
            state = (await conn.execute(q.APP_STATE, {"app": app_name})).scalar_one_or_none()
        return open_state(state, self._sealer)


class _StoredAlready(Exception):
    """Events of a plain batch found stored with the same content in another jsonb form."""

    def __init__(self, ids: set[str]) -> None:
        super().__init__(sorted(ids))
        self.ids = ids


def _row_ids(run: list[Event], row: tuple[Any, ...]) -> tuple[set[str], set[str]]:
    """The ids an append statement's row says it inserted, and those it found stored already."""
    _, inserted, _, existing, *_ = row
    if len(run) == 1:
        event_id = run[0].id
        return ({event_id} if inserted is not None else set()), ({event_id} if existing else set())
    return set(inserted or ()), set(existing or ())


def _event_json(event: Event, sealer: Sealer | None) -> str:
    """An event's stored JSON: plain, or sealed with the fields its columns hold in clear beside it."""
    text = dumps_model(stored_form(event), f"event {event.id!r}")
    if sealer is None:
        return text
    return sealer.seal_json(
        text,
        id=event.id,
        invocation_id=event.invocation_id,
        author=event.author,
        branch=event.branch,
        timestamp=event.timestamp,
    )


def _state_json(state: dict[str, Any], what: str, sealer: Sealer | None) -> str:
    """State as stored: checked as plain JSON first (a NaN or a NUL is refused by name), then sealed."""
    text = dumps(state, what)
    return text if sealer is None else dumps(seal_state(state, sealer), what)


def _append_params(session: Session, event: Event, sealer: Sealer | None) -> dict[str, Any]:
    compaction = event.actions.compaction
    app_delta, user_delta, session_delta = split_delta(event.actions.state_delta)
    params: dict[str, Any] = {
        "app": session.app_name,
        "user": session.user_id,
        "sid": session.id,
        "now": event.timestamp,
        "event_id": event.id,
        "invocation": event.invocation_id,
        "by": event.author,
        "on_branch": event.branch,
        "at": event.timestamp,
        "event_json": _event_json(event, sealer),
        "range_from": compaction.start_timestamp if compaction else None,
        "range_to": compaction.end_timestamp if compaction else None,
        **_shared_state_params(app_delta, user_delta, sealer),
    }
    if session_delta:
        params["session_json"] = _state_json(session_delta, "state delta", sealer)
    return params


def _runs_of_plain_events(events: list[Event]) -> list[list[Event]]:
    """``events`` in order, cut into runs: consecutive plain events together, each other event alone
    (a state delta's merges, and a compaction's range, are the single-event statement's)."""
    runs: list[list[Event]] = []
    for event in events:
        if _plain(event) and runs and _plain(runs[-1][-1]):
            runs[-1].append(event)
        else:
            runs.append([event])
    return runs


def _plain(event: Event) -> bool:
    return not event.actions.state_delta and event.actions.compaction is None


def _plain_events_params(session: Session, events: list[Event], sealer: Sealer | None) -> dict[str, Any]:
    stored = ",".join(_event_json(e, sealer) for e in events)
    return {
        "app": session.app_name,
        "user": session.user_id,
        "sid": session.id,
        "now": events[-1].timestamp,
        "events_json": f"[{stored}]",
    }


def _already_exists(app_name: str, user_id: str, session_id: str) -> AlreadyExistsError:
    return AlreadyExistsError(
        f"session {session_id!r} already exists for app {app_name!r}, user {user_id!r}; "
        "pick another id or get_session() the existing one"
    )


_APPEND_PLAIN_SQL = driver_sql(q.APPEND_PLAIN_EVENTS)
_APPEND_NEW_PLAIN_SQL = driver_sql(q.APPEND_NEW_PLAIN_EVENTS)
_CREATE_AND_READ_SQL = driver_sql(q.CREATE_AND_READ_SESSION)
_GET_SESSION_SQL = driver_sql(q.GET_SESSION)
_SESSION_COLUMNS = len(q.GET_SESSION.selected_columns)
"""How many columns a session row has (``_statements._SESSION_ROWS``); ``get_session_with_events`` puts
its ``events`` column right after them."""


@functools.cache
def _get_session_sql(through: bool, after: bool, last_n: bool, after_id: bool) -> str:
    return driver_sql(q.get_session_with_events(through, after, last_n, after_id))


@functools.cache
def _skipping_compacted_sql(through: bool) -> str:
    return driver_sql(q.get_session_skipping_compacted(through))


@functools.cache
def _append_sql(session_delta: bool, app_delta: bool, user_delta: bool, new_only: bool) -> str:
    return driver_sql(q.append_event_statement(session_delta, app_delta, user_delta, new_only))


def _single_append(params: dict[str, Any], new_only: bool) -> Statement:
    """The one-event append statement for ``params`` (``_append_params``), merges as its deltas need."""
    return _append_sql("session_json" in params, "app_json" in params, "user_json" in params, new_only), params


def _stored_already(error: sa.exc.IntegrityError) -> bool:
    """Whether an append without lookups failed because an id of it is stored already."""
    cause = error.orig
    return isinstance(cause, psycopg.errors.UniqueViolation) and cause.diag.constraint_name == "adk_events_pkey"


async def _merge_shared_state(conn: AsyncConnection, params: dict[str, Any]) -> None:
    """Merge app: and user: deltas (``app_json``/``user_json`` when present) into their rows.

    The app row is always locked before the user row, so two transactions never wait on each other.
    """
    if "app_json" in params:
        await conn.execute(q.MERGE_APP_STATE, params)
    if "user_json" in params:
        await conn.execute(q.MERGE_USER_STATE, params)


def _shared_state_params(
    app_delta: dict[str, Any], user_delta: dict[str, Any], sealer: Sealer | None
) -> dict[str, str]:
    params = {}
    if app_delta:
        params["app_json"] = _state_json(app_delta, "app: state", sealer)
    if user_delta:
        params["user_json"] = _state_json(user_delta, "user: state", sealer)
    return params

