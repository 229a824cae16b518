"""InMemorySessionService: the reference backend; deterministic enough to run inside a workflow."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from ..errors import AlreadyExistsError, SessionNotFoundError
from ..ids import validate_id, validate_session_key
from ..runtime import random_id, wall_clock
from ..state import merge_state, split_delta, validate_state_delta
from ..types import Event
from .base import (
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
    select_events,
    stored_copy_json,
    unique_events,
)

_Key = tuple[str, str, str]


class InMemorySessionService(SessionService):
    """Keeps everything in dicts. No await happens between a read and the write that depends on it,
    so concurrent asyncio appenders cannot interleave inside an append and nothing is lost."""

    def __init__(self, *, clock: Callable[[], float] = wall_clock, id_factory: Callable[[], str] = random_id):
        self._clock = clock
        self._new_id = id_factory
        self._sessions: dict[_Key, Session] = {}
        self._event_json: dict[_Key, dict[str, str]] = {}
        """Per session: each stored event's JSON by id (the text its stored copy was parsed from)."""
        self._app_state: dict[str, dict[str, Any]] = {}
        self._user_state: dict[tuple[str, str], dict[str, Any]] = {}

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        session_id = new_session_id(app_name, user_id, session_id, self._new_id)
        key = (app_name, user_id, session_id)
        if key in self._sessions:
            raise AlreadyExistsError(
                f"session {session_id!r} already exists for app {app_name!r}, user {user_id!r}; "
                "pick another id or get_session() the existing one"
            )
        state = dict(state or {})
        validate_state_delta(state)
        app_delta, user_delta, session_state = split_delta(state)
        self._app_state.setdefault(app_name, {}).update(app_delta)
        self._user_state.setdefault((app_name, user_id), {}).update(user_delta)
        stored = Session(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state=copy.deepcopy(session_state),
            last_update_time=self._clock(),
        )
        self._sessions[key] = stored
        self._event_json[key] = {}
        return self._view(stored, None)

    async def get_session(
        self, *, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None = None
    ) -> Session | None:
        validate_session_key(app_name, user_id, session_id)
        check_get_session_config(config)
        stored = self._sessions.get((app_name, user_id, session_id))
        return None if stored is None else self._view(stored, config)

    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        check_list_ids(app_name, user_id)
        chosen = [
            s
            for (app, user, _), s in self._sessions.items()
            if app == app_name and (user_id is None or user == user_id)
        ]
        chosen.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=[self._view(s, GetSessionConfig(num_recent_events=0)) for s in chosen])

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        validate_session_key(app_name, user_id, session_id)
        self._sessions.pop((app_name, user_id, session_id), None)
        self._event_json.pop((app_name, user_id, session_id), None)

    async def delete_user(self, *, app_name: str, user_id: str) -> None:
        validate_id("app name", app_name)
        validate_id("user id", user_id)
        for key in [k for k in self._sessions if k[:2] == (app_name, user_id)]:
            self._sessions.pop(key, None)
            self._event_json.pop(key, None)
        self._user_state.pop((app_name, user_id), None)

    async def append_event(self, session: Session, event: Event) -> Event:
        validate_session_key(session.app_name, session.user_id, session.id)
        if prepare_event_for_storage(event) is None:
            return event
        key = (session.app_name, session.user_id, session.id)
        stored = self._stored(key)
        known = self._event_json[key].get(event.id)
        if known is not None:
            # A retried append (e.g. a Temporal activity run twice): the store already has it. The
            # same id with other content is refused, never dropped silently.
            check_repeat(known, event)
            if not any(e.id == event.id for e in session.events):
                apply_event_to_session(session, event)
            return event
        # Serialized before anything changes: an event JSON cannot hold (NaN, a lone surrogate) is an
        # InvalidInputError with nothing written, its state delta included.
        self._write(key, stored, session, event, stored_copy_json(event))
        return event

    async def append_events(self, session: Session, events: list[Event]) -> list[Event]:
        """All or nothing: every event is checked (its delta, and an id already stored or repeated
        in the batch with other content) and serialized before any is written."""
        validate_session_key(session.app_name, session.user_id, session.id)
        events = [e for e in events if prepare_event_for_storage(e) is not None]
        key = (session.app_name, session.user_id, session.id)
        stored = self._stored(key)
        stored_json = self._event_json[key]
        new_json: dict[str, str] = {}
        for event in unique_events(events):
            if event.id in stored_json:
                check_repeat(stored_json[event.id], event)
            else:
                new_json[event.id] = stored_copy_json(event)
        # No await from here on: nothing can interleave with the writes.
        for event in events:
            text = new_json.pop(event.id, None)
            if text is None:  # stored before, or earlier in this batch: a repeat
                await self.append_event(session, event)
            else:
                self._write(key, stored, session, event, text)
        return events

    def _write(self, key: _Key, stored: Session, session: Session, event: Event, text: str) -> None:
        """Store a new event (its JSON already made: nothing here can fail) and apply it to ``session``."""
        app_delta, user_delta, session_delta = split_delta(event.actions.state_delta)
        if app_delta:
            self._app_state.setdefault(session.app_name, {}).update(copy.deepcopy(app_delta))
        if user_delta:
            self._user_state.setdefault((session.app_name, session.user_id), {}).update(copy.deepcopy(user_delta))
        stored.state.update(copy.deepcopy(session_delta))
        stored.events.append(_frozen(text))
        stored.last_update_time = event.timestamp
        self._event_json[key][event.id] = text
        apply_event_to_session(session, event)

    def _stored(self, key: _Key) -> Session:
        stored = self._sessions.get(key)
        if stored is None:
            _, user_id, session_id = key
            raise SessionNotFoundError(
                f"session {session_id!r} (app {key[0]!r}, user {user_id!r}) does not exist; "
                "create it with create_session() before appending events"
            )
        return stored

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        validate_id("app name", app_name)
        validate_id("user id", user_id)
        return copy.deepcopy(self._user_state.get((app_name, user_id), {}))

    async def get_app_state(self, *, app_name: str) -> dict[str, Any]:
        validate_id("app name", app_name)
        return copy.deepcopy(self._app_state.get(app_name, {}))

    def _view(self, stored: Session, config: GetSessionConfig | None) -> Session:
        state = merge_state(
            self._app_state.get(stored.app_name, {}),
            self._user_state.get((stored.app_name, stored.user_id), {}),
            stored.state,
        )
        return Session(
            id=stored.id,
            app_name=stored.app_name,
            user_id=stored.user_id,
            state=copy.deepcopy(state),
            events=[_thawed(e) for e in select_events(stored.events, config)],
            last_update_time=stored.last_update_time,
        )


class _FrozenEvent(Event):
    """A stored event with its JSON kept beside it: copies for callers are parsed from the JSON,
    several times cheaper than deep-copying the model (this is on every get_session)."""

    _json: str = ""


def _frozen(text: str) -> Event:
    event = _FrozenEvent.model_validate_json(text)
    event._json = text
    return event


def _thawed(event: Event) -> Event:
    text = getattr(event, "_json", "") or event.model_dump_json()
    return Event.model_validate_json(text)
