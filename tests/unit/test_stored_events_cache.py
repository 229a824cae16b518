"""activities/_history.StoredEventsCache: its bounds (sessions, events in all) hold through every way
the cached lists change, with the events counted as they change rather than recounted each time."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from adk_core.compaction import EventsCompactionConfig
from adk_core.compaction.planner import plan_compaction
from adk_core.flow.contents import build_contents
from adk_core.sessions import InMemorySessionService
from adk_core.types import Content, Event, EventActions, EventCompaction
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


async def test_two_reads_missing_at_once_add_the_new_events_once() -> None:
    """Two model calls of one session on one worker (a ParallelAgent's branches) both miss the
    cache and read the same new events: the first to finish adds them, the second must not again."""
    sessions = PausedReads()
    cache = StoredEventsCache(sessions)
    key = ("a", "u", "s1")
    first = await _store(sessions, "s1", 3)
    await cache.through(key, first[-1])
    later = await _store(sessions, "s1", 3)  # stored by another worker
    sessions.pause = True
    reads = [asyncio.ensure_future(cache.through(key, later[-1])) for _ in range(2)]
    await asyncio.sleep(0)  # both reads of the events after first[-1] are under way
    sessions.gate.set()
    assert [[e.id for e in events or []] for events in await asyncio.gather(*reads)] == [first + later] * 2
    sessions.pause = False
    assert [e.id for e in await cache.through(key, later[-1]) or []] == first + later
    assert cache._total == _counted(cache) == 6


async def test_a_read_awaited_while_a_ride_along_write_extends_the_list_adds_nothing_twice() -> None:
    sessions = PausedReads()
    cache = StoredEventsCache(sessions)
    key = ("a", "u", "s1")
    first = await _store(sessions, "s1", 2)
    await cache.through(key, first[-1])
    later = await _store(sessions, "s1", 2)
    sessions.pause = True
    read = asyncio.ensure_future(cache.through(key, later[-1]))
    await asyncio.sleep(0)  # the read is under way; this worker's write of the same events extends the list
    sessions.pause = False
    stored = await sessions.get_session(app_name="a", user_id="u", session_id="s1")
    assert stored is not None and cache.extend(key, first[-1], stored.events[2:])
    sessions.gate.set()
    assert [e.id for e in await read or []] == first + later
    assert [e.id for e in cache._events[key]] == first + later
    assert cache._total == _counted(cache) == 4



def _random_event(rng: random.Random, n: int, t: float) -> Event:
    if rng.random() < 0.15:
        start = rng.choice([0.0, rng.uniform(0, t)])
        summary = EventCompaction(start_timestamp=start, end_timestamp=rng.uniform(start, t + 1),
                                  compacted_content=Content.model(f"S{n}"))
        return Event(id=f"c{n}", author="user", invocation_id=f"i{n}", timestamp=t, actions=EventActions(compaction=summary))
    author = rng.choice(["user", "agent"])
    content = Content.user(f"m{n}") if author == "user" else Content.model(f"m{n}")
    return Event(id=f"e{n}", author=author, invocation_id=f"i{n // 3}", timestamp=t, content=content)


async def test_reads_skipping_compacted_events_give_what_the_whole_prefix_gives() -> None:
    """Random appends (some with compactions), reads through random events with and without skipping,
    and extensions as the ride-along writer makes them: a skipping read always builds the contents
    and plans the compaction the whole prefix does, and a plain read is the whole prefix."""
    config = EventsCompactionConfig(compaction_interval=2, overlap_size=1)
    for seed in range(60):
        rng = random.Random(seed)
        sessions = InMemorySessionService()
        session = await sessions.create_session(app_name="a", user_id="u", session_id="s")
        cache, key, log, t = StoredEventsCache(sessions), ("a", "u", "s"), [], 0.0
        for n in range(40):
            t += rng.choice([0.0, 1.0, 2.0, -0.5])
            new = [_random_event(rng, n, t)]
            if rng.random() < 0.5:  # as RideAlongWriter: the cache may take them before they are stored
                cache.extend(key, log[-1].id if log else SESSION_START, new)
            await sessions.append_events(session, new)
            log += new
            through = rng.randrange(len(log)) if rng.random() < 0.2 else len(log) - 1
            skip = rng.random() < 0.7
            got = await cache.through(key, log[through].id, skip_compacted=skip)
            whole = log[: through + 1]
            assert got is not None, (seed, n)
            if not skip:
                assert got == whole, (seed, n)
            assert build_contents(got, "agent", None) == build_contents(whole, "agent", None), (seed, n)
            assert plan_compaction(got, config) == plan_compaction(whole, config), (seed, n)
            assert cache._total == _counted(cache)


def _compaction(eid: str, start: float, end: float, at: float) -> Event:
    summary = EventCompaction(start_timestamp=start, end_timestamp=end, compacted_content=Content.model(f"S{eid}"))
    return Event(id=eid, author="user", invocation_id=eid, timestamp=at, actions=EventActions(compaction=summary))


def _texts(events: list[Event]) -> list[str]:
    return [p.text or "" for c in build_contents(events, "agent", None) for p in c.parts]


async def test_a_skipping_list_is_read_again_where_a_compaction_may_cover_what_it_left_out() -> None:
    e1, e2, e3 = (Event(id=f"e{i}", author="user", invocation_id="i", timestamp=float(i), content=Content.user(f"m{i}"))
                  for i in (1, 2, 3))
    wide, narrow = _compaction("wide", 1.0, 3.0, 3.5), _compaction("narrow", 1.0, 1.5, 4.0)
    key = ("a", "u", "s")

    async def cache_of(*events: Event) -> tuple[InMemorySessionService, StoredEventsCache, Any]:
        sessions = InMemorySessionService()
        session = await sessions.create_session(app_name="a", user_id="u", session_id="s")
        await sessions.append_events(session, list(events))
        cache = StoredEventsCache(sessions)
        assert [e.id for e in await cache.through(key, events[-1].id, skip_compacted=True) or []] == ["e3", "wide"]
        return sessions, cache, session

    # The narrow compaction covers only e1, which the cached list left out: taken from the writer...
    sessions, cache, session = await cache_of(e1, e2, e3, wide)
    assert not cache.extend(key, "wide", [narrow])
    await sessions.append_events(session, [narrow])
    whole = [e1, e2, e3, wide, narrow]
    assert _texts(await cache.through(key, "narrow", skip_compacted=True) or []) == _texts(whole)
    # ... or read after the cached list.
    sessions, cache, session = await cache_of(e1, e2, e3, wide)
    await sessions.append_events(session, [narrow])
    assert _texts(await cache.through(key, "narrow", skip_compacted=True) or []) == _texts(whole)
    # Through an event the list holds, with the compaction after it: e1 is not hidden there.
    sessions, cache, session = await cache_of(e1, e2, e3, wide)
    assert [e.id for e in await cache.through(key, "e3", skip_compacted=True) or []] == ["e1", "e2", "e3"]
    # A plain read of a skipping list reads everything.
    assert [e.id for e in await cache.through(key, "wide") or []] == ["e1", "e2", "e3", "wide"]


async def test_a_skipping_list_evicted_while_it_reads_on_is_still_read_again_past_a_compaction() -> None:
    """Whether the list skips is taken before the read after it is awaited: a list dropped meanwhile
    (another call's read evicted it) is still one that left events out."""
    e1, e2, e3 = (Event(id=f"e{i}", author="user", invocation_id="i", timestamp=float(i), content=Content.user(f"m{i}"))
                  for i in (1, 2, 3))
    wide, narrow = _compaction("wide", 1.0, 3.0, 3.5), _compaction("narrow", 1.0, 1.5, 4.0)
    key = ("a", "u", "s")
    sessions = PausedReads()
    session = await sessions.create_session(app_name="a", user_id="u", session_id="s")
    await sessions.append_events(session, [e1, e2, e3, wide])
    cache = StoredEventsCache(sessions)
    assert [e.id for e in await cache.through(key, "wide", skip_compacted=True) or []] == ["e3", "wide"]
    await sessions.append_events(session, [narrow])
    sessions.pause = True
    read = asyncio.ensure_future(cache.through(key, "narrow", skip_compacted=True))
    await asyncio.sleep(0)  # the read of the events after "wide" is under way
    cache.invalidate(key)
    sessions.pause = False
    sessions.gate.set()
    assert _texts(await read or []) == _texts([e1, e2, e3, wide, narrow])
