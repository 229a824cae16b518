"""Where simulator sessions and their events live: the protocol and the in-memory store."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Protocol

from ..runtime import random_id, wall_clock
from . import rules
from .errors import SimulatorNotFoundError
from .models import SessionEvent, SessionSummary, SimulatorSession


class SimulatorStore(Protocol):
    """Every write checks the seed's rules (``rules``) against what is stored, atomically."""

    async def create_session(self, session: SimulatorSession) -> SimulatorSession: ...

    async def session_for(self, app_name: str, user_id: str, adk_session_id: str, *, description: str = "") -> SimulatorSession:
        """The simulator session of an ADK session, made on first use (idempotent)."""
        ...

    async def get_session(self, session_id: str) -> SimulatorSession: ...

    async def list_sessions(self) -> list[SessionSummary]:
        """Newest first, with how many requests wait in each."""
        ...

    async def events(self, session_id: str) -> list[SessionEvent]:
        """Ordered by time (then by arrival)."""
        ...

    async def append(self, event: SessionEvent) -> SessionEvent:
        """Store an event; a repeat of a stored event (same id and content) is a no-op."""
        ...

    async def set_status(self, session_id: str, status: str) -> SimulatorSession: ...

    def changes(self) -> contextlib.AbstractAsyncContextManager[AsyncIterator[str]]:
        """``async with store.changes() as ids: async for session_id in ids``: the id of every
        session that changes from now on, as it changes (pushed, never polled)."""
        ...

    async def close(self) -> None: ...


def new_session(
    description: str = "", *, app_name: str | None = None, user_id: str | None = None, adk_session_id: str | None = None
) -> SimulatorSession:
    return SimulatorSession(
        id=random_id(), created_at=wall_clock(), description=rules.truncate_description(description),
        app_name=app_name, user_id=user_id, adk_session_id=adk_session_id,
    )


def summarize(session: SimulatorSession, events: list[SessionEvent]) -> SessionSummary:
    return SessionSummary(
        session=session,
        pending_count=len(rules.pending_requests(events)),
        turn_count=sum(1 for e in events if e.llm_request is not None),
        last_activity=max((e.timestamp for e in events), default=None),
    )


class ChangeFeed:
    """Fan-out of session ids to every open ``changes()``."""

    def __init__(self) -> None:
        self._queues: set[asyncio.Queue[str]] = set()

    def publish(self, session_id: str) -> None:
        for queue in self._queues:
            queue.put_nowait(session_id)

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[AsyncIterator[str]]:
        queue: asyncio.Queue[str] = asyncio.Queue()
        self._queues.add(queue)

        async def ids() -> AsyncIterator[str]:
            while True:
                yield await queue.get()

        try:
            yield ids()
        finally:
            self._queues.discard(queue)


class InMemorySimulatorStore:
    def __init__(self) -> None:
        self._sessions: dict[str, SimulatorSession] = {}
        self._events: dict[str, list[SessionEvent]] = {}
        self._by_key: dict[tuple[str, str, str], str] = {}
        self._lock = asyncio.Lock()
        self._feed = ChangeFeed()

    async def create_session(self, session: SimulatorSession) -> SimulatorSession:
        session = rules.check_session(session)
        async with self._lock:
            if session.id in self._sessions:
                from .errors import SimulatorConflictError

                raise SimulatorConflictError(f"session {session.id} already exists; use another UUIDv4")
            self._sessions[session.id] = session
            self._events[session.id] = []
        self._feed.publish(session.id)
        return session

    async def session_for(self, app_name: str, user_id: str, adk_session_id: str, *, description: str = "") -> SimulatorSession:
        key = (app_name, user_id, adk_session_id)
        async with self._lock:
            existing = self._by_key.get(key)
        if existing is not None:
            return self._sessions[existing]
        session = await self.create_session(
            new_session(description, app_name=app_name, user_id=user_id, adk_session_id=adk_session_id)
        )
        self._by_key[key] = session.id
        return session

    async def get_session(self, session_id: str) -> SimulatorSession:
        session = self._sessions.get(session_id)
        if session is None:
            raise SimulatorNotFoundError(f"no simulator session {session_id!r}; list them with GET /api/sessions")
        return session

    async def list_sessions(self) -> list[SessionSummary]:
        sessions = sorted(self._sessions.values(), key=lambda s: s.created_at, reverse=True)
        return [summarize(s, self._events[s.id]) for s in sessions]

    async def events(self, session_id: str) -> list[SessionEvent]:
        await self.get_session(session_id)
        return sorted(self._events[session_id], key=lambda e: e.timestamp)

    async def append(self, event: SessionEvent) -> SessionEvent:
        rules.check_event(event)
        async with self._lock:
            session = await self.get_session(event.session_id)
            if rules.check_append(session, self._events[session.id], event):
                event = rules.in_time_order(self._events[session.id], event)
                self._events[session.id].append(event)
        self._feed.publish(event.session_id)
        return event

    async def set_status(self, session_id: str, status: str) -> SimulatorSession:
        async with self._lock:
            session = await self.get_session(session_id)
            rules.check_transition(session.status, status)
            session = session.model_copy(update={"status": status})
            self._sessions[session_id] = session
        self._feed.publish(session_id)
        return session

    def changes(self) -> contextlib.AbstractAsyncContextManager[AsyncIterator[str]]:
        return self._feed.subscribe()

    async def close(self) -> None:
        return None
