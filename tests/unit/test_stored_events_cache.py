"""activities/_history.StoredEventsCache: its bounds (sessions, events in all) hold through every way
the cached lists change, with the events counted as they change rather than recounted each time."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from adk_core.sessions import InMemorySessionService
from adk_core.types import Content, Event
from adk_temporal.activities._history import StoredEventsCache
from adk_temporal.activities.contracts import SESSION_START


def _event(eid: str) -> Event:
    return Event(id=eid, author="user", invocation_id="i", timestamp=1.0, content=Content.user(eid))


def _counted(cache: StoredEventsCache) -> int:
    return sum(len(events) for events in cache._events.values())


async def _store(sessions: InMemorySessionService, session_id: str, count: int) -> list[str]:
    session = await sessions.get_session(app_name="a", user_id="u", session_id=session_id)
    if session is None:
        session = await sessions.create_session(app_name="a", user_id="u", session_id=session_id)
    ids = [f"{session_id}-{len(session.events) + i}" for i in range(count)]
    for eid in ids:
        await sessions.append_event(session, _event(eid))
    return ids


async def test_the_bounds_hold_and_the_count_stays_true_through_every_change() -> None:
    sessions = InMemorySessionService()
    cache = StoredEventsCache(sessions, max_sessions=5, max_events=40)
    rng = random.Random(3)
    for step in range(400):
        sid = f"s{rng.randrange(9)}"
        key = ("a", "u", sid)
        action = rng.choice(["read", "extend", "created", "invalidate"])
        if action == "read":
            ids = await _store(sessions, sid, rng.randrange(1, 6))
            assert [e.id for e in await cache.through(key, ids[-1]) or []][-1] == ids[-1]
        elif action == "extend":
            cached = cache._events.get(key)
            after = (cached[-1].id if cached else SESSION_START) if cached is not None else None
            new = [_event(f"{sid}-x{step}-{i}") for i in range(rng.randrange(1, 4))]
            assert cache.extend(key, after, new) == (cached is not None)
        elif action == "created":
            cache.created(("a", "u", f"{sid}-new{step}"))
        else:
            cache.invalidate(key)
        assert cache._total == _counted(cache)
        assert len(cache._events) <= 5
        assert cache._total <= 40 or len(cache._events) == 1  # the one just used is always kept


class PausedReads(InMemorySessionService):
    """get_session waits for ``gate`` while ``pause`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.pause = False
        self.gate = asyncio.Event()

    async def get_session(self, **kwargs: Any) -> Any:  # type: ignore[override]
        if self.pause:
            await self.gate.wait()
        return await super().get_session(**kwargs)


async def test_a_list_evicted_while_its_read_was_awaited_is_not_counted() -> None:
    sessions = PausedReads()
    cache = StoredEventsCache(sessions, max_sessions=2)
    first = await _store(sessions, "s1", 2)
    await cache.through(("a", "u", "s1"), first[-1])
    later = await _store(sessions, "s1", 3)
    sessions.pause = True
    read = asyncio.ensure_future(cache.through(("a", "u", "s1"), later[-1]))  # reads the 3 newer events
    await asyncio.sleep(0)
    cache.created(("a", "u", "s2"))
    cache.created(("a", "u", "s3"))  # s1 is the least recently used of three: evicted meanwhile
    sessions.gate.set()
    events = await read
    assert [e.id for e in events or []] == first + later  # the caller still gets its answer
    assert ("a", "u", "s1") not in cache._events
    assert cache._total == _counted(cache) == 0

