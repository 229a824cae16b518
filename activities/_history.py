"""A worker's cache of stored session events, so each model call reads only what is new (and
converts only what is new into model contents: ContentsMemo).

Model activities resolve a ContentsRef ("the events of this session through event X"). Reading
the whole session for every call costs a full scan per model call; instead each worker keeps the
stored prefix it last read and fetches only events after it. A cached list is a complete prefix of
the session in store order (it is only ever filled from reads), so an event found in it means
everything before that event is there too; or, for a compacting app, that prefix less what its
newest compaction hides (``skip_compacted``: adk_core.flow.contents.without_compacted), which gives
the same contents and the same next compaction, and does not grow with the session.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

from temporalio.exceptions import ApplicationError

from adk_core import telemetry
from adk_core.flow.contents import build_contents, extended_contents, long_running_calls
from adk_core.sessions import GetSessionConfig, Session, SessionService
from adk_core.types import Content, Event

from .contracts import SESSION_START

_Key = tuple[str, str, str]
T = TypeVar("T")
MAX_TRACKED_SESSIONS = 10_000


class StoredEventsCache:
    def __init__(self, sessions: SessionService, *, max_sessions: int = 256, max_events: int = 50_000) -> None:
        """Keeps at most ``max_sessions`` sessions and about ``max_events`` events in all, evicting
        the least recently used sessions first (the one just used is always kept)."""
        self._sessions = sessions
        self._max = max_sessions
        self._max_events = max_events
        self._events: OrderedDict[_Key, list[Event]] = OrderedDict()
        self._skipping: set[_Key] = set()
        """Sessions whose cached list leaves out what its newest compaction hides."""
        self._total = 0
        """Events in all the cached lists, kept as they change: counting them on every change read
        each cached session (up to ``max_sessions``) at every model call."""

    async def through(self, key: _Key, event_id: str, *, skip_compacted: bool = False) -> list[Event] | None:
        """The session's stored events up to and including ``event_id``; None if it is not stored.

        ``skip_compacted``: less what the newest compaction among them hides, for whoever builds
        contents or plans a compaction from them and has no compaction after them to apply.
        """
        cached = self._events.get(key)
        skipping = key in self._skipping  # of the list read now: the read below may see it replaced
        if cached is not None and (skip_compacted or not skipping):
            self._events.move_to_end(key)
            found = index_of(cached, event_id)
            if found is not None and not (skipping and has_compaction(cached[found + 1:])):
                return cached[: found + 1]
            if found is None:
                size = len(cached)
                after = cached[-1].id if cached else None  # an empty prefix: a session created here
                newer = await self._read(key, GetSessionConfig(after_event_id=after, through_event_id=event_id))
                if newer and newer[-1].id == event_id and not (skipping and has_compaction(newer)):
                    if self._events.get(key) is cached and (cached[-1].id if cached else None) == after:
                        self._grow(key, cached, newer)
                        return list(cached)
                    # Another read of the session (a ParallelAgent's branches miss together) or a
                    # ride-along write grew the list, or it was replaced or dropped, while this read
                    # awaited: growing it again would repeat events. What was cached then, and what
                    # this read found after it, are still the answer.
                    return cached[:size] + newer
        events = await self._read(key, GetSessionConfig(through_event_id=event_id, skip_compacted=skip_compacted))
        if not events or events[-1].id != event_id:
            self.invalidate(key)
            return None
        self._put(key, events, skipping=skip_compacted and has_compaction(events))
        return list(events)

    def created(self, key: _Key) -> None:
        """This worker just created the session: its stored prefix is empty, known without a read."""
        self._put(key, [])

    def extend(self, key: _Key, after_event_id: str | None, events: list[Event]) -> bool:
        """Add events being stored right after ``after_event_id`` (SESSION_START: first in the
        session), if that is where the cached prefix ends (the workflow knows the order). True
        when the cache now ends with them."""
        cached = self._events.get(key)
        if not events or cached is None or after_event_id is None:
            return False
        if key in self._skipping and has_compaction(events):
            # A new compaction may cover events the list left out: its next read reads them anew.
            self.invalidate(key)
            return False
        if cached and cached[-1].id == events[-1].id:
            if cached[-1] == events[-1]:
                return True  # a retried activity: already added
            # The same id with other content: a lost workflow task ran again (_written_prefix). The
            # store compares the two; until it has, this worker knows nothing of the session.
            self.invalidate(key)
            return False
        if (cached[-1].id if cached else SESSION_START) != after_event_id:
            return False
        self._grow(key, cached, events)
        return True

    def invalidate(self, key: _Key) -> None:
        dropped = self._events.pop(key, None)
        self._skipping.discard(key)
        if dropped is not None:
            self._total -= len(dropped)

    def _put(self, key: _Key, events: list[Event], *, skipping: bool = False) -> None:
        self.invalidate(key)
        self._events[key] = events
        if skipping:
            self._skipping.add(key)
        self._total += len(events)
        self._evict()

    def _grow(self, key: _Key, cached: list[Event], events: list[Event]) -> None:
        """Append ``events`` to ``cached``, the key's list when it was read: counted only if it still
        is (a read awaited meanwhile may have seen it evicted or replaced)."""
        cached.extend(events)
        if self._events.get(key) is cached:
            self._total += len(events)
            self._evict()

    def _evict(self) -> None:
        while len(self._events) > 1 and (len(self._events) > self._max or self._total > self._max_events):
            key, dropped = self._events.popitem(last=False)
            self._skipping.discard(key)
            self._total -= len(dropped)

    async def through_stored(self, key: _Key, event_id: str, *, skip_compacted: bool = False) -> list[Event]:
        """``through``, for an activity: when the event is not stored yet (the commit carrying it may
        still be in flight in a concurrent activity), a retryable HistoryNotReady error."""
        events = await self.through(key, event_id, skip_compacted=skip_compacted)
        if events is None:
            raise ApplicationError(f"event {event_id!r} of session {key[2]!r} is not stored yet", type="HistoryNotReady")
        return events

    async def _read(self, key: _Key, config: GetSessionConfig) -> list[Event]:
        app_name, user_id, session_id = key
        session = await self._sessions.get_session(
            app_name=app_name, user_id=user_id, session_id=session_id, config=config
        )
        return session.events if session is not None else []


class ContentsMemo:
    """Per session, agent and branch: the model contents built from a prefix of the stored events.

    Contents are built one event at a time (adk_core/flow/contents.py), so the contents of a longer
    prefix are the memo's followed by those of the new events: a model call converts only the
    events stored since the last one instead of the whole conversation. Compactions break that
    (a later compaction hides earlier events), so a log that holds one is built in full, unmemoized.
    So does a new event answering a long-running call among the memo's events (the answer goes back
    to the call: adk_core.flow.contents.pair_answers): the prefix is then built in full once.
    Holds at most ``max_entries`` (least recently used dropped first).
    """

    def __init__(self, *, max_entries: int = 256) -> None:
        self._max = max_entries
        self._built: OrderedDict[
            tuple[_Key, str, str | None], tuple[str, int, list[Content], frozenset[str]]
        ] = OrderedDict()

    def contents(self, key: _Key, events: list[Event], agent_name: str, branch: str | None, *,
                 later: list[Event]) -> list[Content]:
        """``build_contents(events, agent_name, branch, later=later)``, reusing what was built before."""
        if not events or has_compaction(later):
            return build_contents(events, agent_name, branch, later=later)
        slot = (key, agent_name, branch)
        start, built = 0, []
        long_running: frozenset[str] = frozenset()
        memo = self._built.get(slot)
        if memo is not None:
            last_id, count, memo_contents, memo_calls = memo
            if count <= len(events) and events[count - 1].id == last_id:
                start, built, long_running = count, list(memo_contents), memo_calls
        new = events[start:]
        if has_compaction(new):
            self._built.pop(slot, None)
            return build_contents(events, agent_name, branch)
        calls = extended_contents(built, long_running, new, agent_name, branch)
        if calls is None:  # the answer to a long-running call goes back to its call: all anew
            built, calls = build_contents(events, agent_name, branch), long_running_calls(events, agent_name)
        self._built[slot] = (events[-1].id, len(events), built, calls)
        self._built.move_to_end(slot)
        while len(self._built) > self._max:
            self._built.popitem(last=False)
        return list(built)


def has_compaction(events: Iterable[Event]) -> bool:
    return any(e.actions.compaction is not None for e in events)


def index_of(events: list[Event], event_id: str) -> int | None:
    """Where the event with ``event_id`` is in ``events`` (the last such), if it is there."""
    for i in range(len(events) - 1, -1, -1):
        if events[i].id == event_id:
            return i
    return None


class RideAlongWriter:
    """Stores the session events that ride along with a model activity (a tool activity only
    asks how many of its events are stored: ``store=False``).

    The workflow sends every event it has not seen acknowledged with each activity, in order, and
    with the stored event they follow (``after``). When this worker's cache can take them (it ends
    at ``after``, or at an event this worker is already writing), the activity does its work at
    once (the model reads the new events from the cache) and the write runs in the background,
    from the moment the work is done. The activity does not wait for the write: it reports how many of the events are known
    stored (``run``'s second value), and the workflow keeps the rest queued, so they ride along
    with the next activity, which finds them written (or, on another worker, writes them again,
    idempotently by event id). The write is off the turn's critical path and nothing is ever
    acknowledged before it is stored. Writes for one session run one after the other, in order:
    the store numbers events in the order their transactions commit.

    When the cache cannot take the events (another worker served the session last, or the cache
    dropped it), they are written before the work, as a plain synchronous commit.
    """

    def __init__(self, sessions: SessionService, cache: StoredEventsCache) -> None:
        self._sessions = sessions
        self._cache = cache
        self._writing: OrderedDict[_Key, tuple[Event, asyncio.Future[None]]] = OrderedDict()
        """Per session: the last event of the newest background write, and that write. Finished
        entries beyond MAX_TRACKED_SESSIONS are dropped (a dropped session's next batch is just
        written again, synchronously and idempotently)."""

    async def run(self, key: _Key, after: str | None, events: list[Event], work: Callable[[], Awaitable[T]], *,
                  wait: bool = False, store: bool = True, defer: bool = False,
                  then: Callable[[T], list[Event]] | None = None) -> tuple[T, int]:
        """Store ``events`` (after ``after``) and do ``work``; returns its result and how many of
        ``events`` are known stored. With ``wait``, everything is stored before this returns.
        Without ``store``, only the work is done, and the count says how many of ``events`` this
        worker's earlier writes have stored: the events stay queued for a later activity.
        ``then`` gives the events the work's result adds (a model call's answer): they are stored
        right after ``events``, in the same write, and waited for. With ``defer``, ``events`` are
        stored only when ``then`` gives events: all in one write; otherwise as without ``store``."""
        if defer:
            result = await work()
            answer = then(result) if then else []
            if not answer:
                return result, self._known_stored(key, events)
            await self._store_next(key, after, [*events, *answer])
            return result, len(events)
        if not store:
            result = await work()
            return result, self._known_stored(key, events)
        if not events:
            result = await work()
            await self._store_next(key, after, then(result) if then else [])
            return result, 0
        rest, stored, previous = list(events), 0, None
        newest = self._writing.get(key)
        found = _written_prefix(events, newest[0]) if newest is not None else None
        if newest is not None and found is not None and not _failed(newest[1]):
            # This worker is writing (or wrote) a prefix of the batch: the rest follows it.
            previous = newest[1]
            stored = found + 1 if previous.done() else 0
            rest, after = list(events[found + 1:]), events[found].id
        if rest and not self._cache.extend(key, after, rest):
            # The order is not known here: a plain commit of the whole batch, before the work.
            self._writing.pop(key, None)
            await self._commit(key, events)
            result = await work()
            await self._store_next(key, events[-1].id, then(result) if then else [])
            return result, len(events)
        if not rest:
            result = await work()
            answer = then(result) if then else []
            if answer:
                await self._store_next(key, events[-1].id, answer)
                return result, len(events)
            if wait and previous is not None:
                await previous
            return result, len(events) if previous is None or (previous.done() and not _failed(previous)) else stored
        work_done = asyncio.get_running_loop().create_future()
        write = asyncio.ensure_future(self._chain(previous, key, rest, work_done))
        self._writing[key] = (rest[-1], write)
        self._writing.move_to_end(key)
        write.add_done_callback(lambda done: self._on_written(key, done))
        self._drop_finished()
        added: list[Event] = []
        try:
            result = await work()
            added = then(result) if then else []
            if added:
                # In the same write as the batch (it starts once the work is done): one round trip.
                self._cache.extend(key, rest[-1].id, added)
                rest.extend(added)
                self._writing[key] = (added[-1], write)
        finally:
            work_done.set_result(None)
        if wait or added:
            await asyncio.shield(write)  # a cancelled call must not cancel the batch's write
        if write.done() and not _failed(write):
            stored = len(events)
        return result, stored

    async def _store_next(self, key: _Key, after: str | None, events: list[Event]) -> None:
        """Store ``events`` now, after this worker's newest write for the session has finished (so
        the store numbers them after it), and wait."""
        if not events:
            return
        newest = self._writing.get(key)
        if newest is not None:
            await asyncio.shield(newest[1])  # its failure fails this store too: the activity is retried
        try:
            await self._commit(key, events)
        except BaseException:
            self._forget(key)  # the cache must never hold what the store may not
            raise
        self._cache.extend(key, after, events)  # where it cannot, the cache stays a shorter prefix
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        self._writing[key] = (events[-1], done)
        self._writing.move_to_end(key)
        self._drop_finished()

    def _known_stored(self, key: _Key, events: list[Event]) -> int:
        """How many of ``events`` (a prefix) this worker's finished writes have stored."""
        newest = self._writing.get(key)
        if newest is None or not newest[1].done() or _failed(newest[1]):
            return 0
        found = _written_prefix(events, newest[0])
        return found + 1 if found is not None else 0

    async def _chain(self, previous: asyncio.Future[None] | None, key: _Key, events: list[Event],
                     work_done: asyncio.Future[None]) -> None:
        # The write waits for the activity's work: sharing this event loop with it, it would only
        # delay the work and the activity's completion. Started after, it runs while Temporal
        # carries the result to the workflow and back.
        await work_done
        if previous is not None:
            await asyncio.shield(previous)  # a failure here fails this write too: the next batch redoes both
        await self._commit(key, events)

    async def _commit(self, key: _Key, events: list[Event]) -> None:
        app_name, user_id, session_id = key
        stub = Session(id=session_id, app_name=app_name, user_id=user_id)
        with telemetry.start_span("adk.session.append_events", store_span_attributes(key, {"adk.events.count": len(events)})):
            await self._sessions.append_events(stub, events)

    def _on_written(self, key: _Key, write: asyncio.Future[None]) -> None:
        if _failed(write):
            # The cache holds events the store may not: drop it, so reads go to the store.
            self._forget(key)

    def _drop_finished(self) -> None:
        while len(self._writing) > MAX_TRACKED_SESSIONS:
            oldest, (_, write) = next(iter(self._writing.items()))
            if not write.done():
                return  # oldest first: a write still running is recent enough to keep
            del self._writing[oldest]

    def _forget(self, key: _Key) -> None:
        self._writing.pop(key, None)
        self._cache.invalidate(key)


def _written_prefix(events: list[Event], written: Event) -> int | None:
    """Where ``written`` (the last event of this worker's newest write) is in ``events``, if it is
    the same event there. The same id with other content (another timestamp at least) is a workflow
    task that was lost and ran again (local activities): not what was written, so the batch is
    committed, and compared with what is stored, in full."""
    found = index_of(events, written.id)
    return found if found is not None and events[found] == written else None


def _failed(write: asyncio.Future[None]) -> bool:
    """Done without success (reading the exception also marks it retrieved: no asyncio warning)."""
    return write.done() and (write.cancelled() or write.exception() is not None)


def store_span_attributes(key: _Key, extra: dict[str, object] | None = None) -> dict[str, object]:
    """What a session-store span says: which conversation (never what it holds)."""
    app_name, user_id, session_id = key
    return {"gen_ai.conversation.id": session_id, "adk.app": app_name, "adk.user": user_id, **(extra or {})}
