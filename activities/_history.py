"""A worker's cache of stored session events, so each model call reads only what is new.

Model activities resolve a ContentsRef ("the events of this session through event X"). Reading
the whole session for every call costs a full scan per model call; instead each worker keeps the
stored prefix it last read and fetches only events after it. A cached list is always a complete
prefix of the session in store order (it is only ever filled from reads), so an event found in it
means everything before that event is there too.
"""

from __future__ import annotations

from collections import OrderedDict

from adk_core.sessions import GetSessionConfig, SessionService
from adk_core.types import Event

_Key = tuple[str, str, str]


class StoredEventsCache:
    def __init__(self, sessions: SessionService, *, max_sessions: int = 256, max_events: int = 50_000) -> None:
        """Keeps at most ``max_sessions`` sessions and about ``max_events`` events in all, evicting
        the least recently used sessions first (the one just used is always kept)."""
        self._sessions = sessions
        self._max = max_sessions
        self._max_events = max_events
        self._events: OrderedDict[_Key, list[Event]] = OrderedDict()

    async def through(self, key: _Key, event_id: str) -> list[Event] | None:
        """The session's stored events up to and including ``event_id``; None if it is not stored."""
        cached = self._events.get(key)
        if cached is not None:
            self._events.move_to_end(key)
            found = _index(cached, event_id)
            if found is not None:
                return cached[: found + 1]
            newer = await self._read(key, GetSessionConfig(after_event_id=cached[-1].id, through_event_id=event_id))
            if newer and newer[-1].id == event_id:
                cached.extend(newer)
                self._evict()
                return list(cached)
        events = await self._read(key, GetSessionConfig(through_event_id=event_id))
        if not events or events[-1].id != event_id:
            self._events.pop(key, None)
            return None
        self._events[key] = events
        self._events.move_to_end(key)
        self._evict()
        return list(events)

    def extend(self, key: _Key, after_event_id: str | None, events: list[Event]) -> bool:
        """Add events being stored right after ``after_event_id``, if that is where the cached
        prefix ends (the workflow knows the order). True when the cache now ends with them."""
        cached = self._events.get(key)
        if not events or cached is None or after_event_id is None:
            return False
        if cached[-1].id == events[-1].id:
            return True  # a retried activity: already added
        if cached[-1].id != after_event_id:
            return False
        cached.extend(events)
        self._evict()
        return True

    def _evict(self) -> None:
        total = sum(len(v) for v in self._events.values())
        while len(self._events) > 1 and (len(self._events) > self._max or total > self._max_events):
            _, dropped = self._events.popitem(last=False)
            total -= len(dropped)

    def invalidate(self, key: _Key) -> None:
        self._events.pop(key, None)

    async def _read(self, key: _Key, config: GetSessionConfig) -> list[Event]:
        app_name, user_id, session_id = key
        session = await self._sessions.get_session(
            app_name=app_name, user_id=user_id, session_id=session_id, config=config
        )
        return session.events if session is not None else []


def _index(events: list[Event], event_id: str) -> int | None:
    for i in range(len(events) - 1, -1, -1):
        if events[i].id == event_id:
            return i
    return None
