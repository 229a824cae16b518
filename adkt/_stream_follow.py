"""Following a turn's partial events: the client side of activities/streaming.py.

``StreamFollower`` waits for the NOTIFY on the turn's channel and reads its new rows of
``adk_stream_chunks``; ``TurnMerge`` puts those partials among the turn's committed events in the
order the in-process Runner yields them, and turns a retried model call into one reset partial
(is_stream_reset) instead of duplicated text. docs/durability.md ("Streaming") describes what a
client sees.

Followers share a ``StreamHub`` per process and database: one LISTEN connection (adkt/listener.py)
and a small pool for reading rows, so a server following hundreds of turns holds a handful of
Postgres connections, not one per turn (docs/web.md, "Streams").
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import psycopg
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from adk_core.errors import ConfigurationError
from adk_core.sql import open_engine
from adk_core.sql.held import driver_sql, held_connections
from adk_core.sql.schema import stream_chunks
from adk_core.types import Event
from adk_temporal.activities.streaming import STREAM_RESET, channel_name, is_stream_reset
from adk_temporal.encryption import open_json, process_codec
from adkt.listener import NotifyListener, Subscription, close_shared_listeners, shared_listener

READ_POOL_SIZE, READ_POOL_OVERFLOW = 4, 4
"""Connections a hub reads rows on: each read is one short query, so a few serve hundreds of streams."""
READ_POOL_TIMEOUT_SECONDS = 30.0

_READ_ROWS_SQL = driver_sql(sa.text("""
SELECT max(id), json_agg(json_build_array(id, call, attempt, after_events, kind, event) ORDER BY id)
FROM adk_stream_chunks WHERE stream_id = :stream_id AND id > :after
"""))
"""A stream's rows after a given id as ONE row (the last id, the rows as a JSON array), so a read is
one pre-compiled statement on the hub's held connections (adk_core.sql.held): 0.8 ms on the first
token's path instead of 2.8 ms through a pool checkout and SQLAlchemy's result rows."""


@dataclass(frozen=True)
class Chunk:
    id: int
    call: int
    attempt: int
    after_events: int
    kind: str
    event: Event


class StreamHub:
    """What a process follows streams with: one LISTEN connection and a small pool to read rows on."""

    def __init__(self, database_url: str, *, listener: NotifyListener | None = None) -> None:
        self.listener = listener or shared_listener(database_url)  # the simulator's page listens there too
        # Autocommit: each read (and the finished turn's delete) is one statement, so no BEGIN before
        # it and no ROLLBACK when the connection goes back (0.44-0.56 ms a read against 0.78-0.81 ms).
        self.engine: AsyncEngine = open_engine(
            database_url, pool_size=READ_POOL_SIZE, max_overflow=READ_POOL_OVERFLOW,
            pool_timeout=READ_POOL_TIMEOUT_SECONDS, isolation_level="AUTOCOMMIT",
        )  # fmt: skip
        self.closed = False

    @classmethod
    def shared(cls, database_url: str) -> StreamHub:
        """This process's hub on ``database_url`` (one per event loop and database)."""
        hubs = _hubs.setdefault(asyncio.get_running_loop(), {})
        hub = hubs.get(database_url)
        if hub is None or hub.closed:
            hub = hubs[database_url] = cls(database_url)
        return hub

    def follow(self, stream_id: str) -> StreamFollower:
        return StreamFollower(None, stream_id, hub=self)

    async def close(self) -> None:
        """Close the LISTEN connection (open followers fail) and the read pool."""
        self.closed = True
        await self.listener.close()
        await self.engine.dispose()


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, StreamHub]] = weakref.WeakKeyDictionary()


async def close_stream_hubs() -> None:
    """Close this event loop's shared hubs and listeners (at server shutdown)."""
    hubs = _hubs.pop(asyncio.get_running_loop(), {})
    await asyncio.gather(*(hub.close() for hub in hubs.values()))
    await close_shared_listeners()


class StreamFollower:
    """Reads one stream's rows in commit order, and waits for the NOTIFY that says there are more.

    ``async with StreamFollower(database_url, stream_id)`` follows on the process's shared hub;
    ``hub.follow(stream_id)`` on a given one. Entering returns once the channel is LISTENed, so
    entering before the message is sent misses no notification of the turn (with
    ``wait_listening=False`` it returns at once: send, then ``await listening()`` and ``read()``);
    a notification the hub lost (a reconnect) only delays the next read, which takes every row
    after the last read.
    """

    def __init__(
        self, database_url: str | None, stream_id: str, *, hub: StreamHub | None = None, wait_listening: bool = True
    ) -> None:
        if hub is None and database_url is None:
            raise ConfigurationError("StreamFollower needs a database URL or a StreamHub")
        self._database_url = database_url
        self._hub = hub
        self._stream_id = stream_id
        self._wait_listening = wait_listening
        self._cursor = 0
        self._subscribing: Any = None
        self._subscription: Subscription | None = None

    @property
    def hub(self) -> StreamHub:
        if self._hub is None:
            assert self._database_url is not None
            self._hub = StreamHub.shared(self._database_url)
        return self._hub

    async def __aenter__(self) -> StreamFollower:
        self._subscribing = self.hub.listener.subscribe(channel_name(self._stream_id), wait_listening=self._wait_listening)
        self._subscription = await self._subscribing.__aenter__()
        return self

    async def listening(self) -> None:
        """Return once the channel is LISTENed (entered with ``wait_listening=False``, the caller
        may send meanwhile; rows committed before then are read by the next ``read``)."""
        assert self._subscription is not None, "use StreamFollower as an async context manager"
        await self._subscription.listening()

    async def __aexit__(self, *exc: Any) -> None:
        if self._subscribing is not None:
            await self._subscribing.__aexit__(*exc)

    async def read(self) -> list[Chunk]:
        """The rows committed since the last read, in id order (ids commit in order within a stream)."""
        params = {"stream_id": self._stream_id, "after": self._cursor}
        try:
            ((last, rows),) = await held_connections(self.hub.engine).fetch_first_rows([(_READ_ROWS_SQL, params)])
        except sa.exc.ProgrammingError as e:
            if not isinstance(e.orig, psycopg.errors.UndefinedTable):
                raise
            raise ConfigurationError(
                "the sessions database has no adk_stream_chunks table: migrate it (`adkt migrate`, or start a "
                "worker of this version, which migrates on start)"
            ) from None
        if not rows:
            return []
        self._cursor = last
        codec = process_codec()
        return [Chunk(r[0], r[1], r[2], r[3], r[4], Event.model_validate(open_json(r[5], codec))) for r in rows]

    async def wait(self, timeout: float) -> None:
        """Return when a notification arrives (or arrived while not waiting), or after ``timeout``.
        Raises ListenerUnavailableError when the hub can no longer listen."""
        assert self._subscription is not None, "use StreamFollower as an async context manager"
        await self._subscription.get(timeout)

    async def delete(self) -> None:
        """Drop the stream's rows: the turn is over and its committed events replace its partials."""
        async with self.hub.engine.begin() as conn:
            await conn.execute(stream_chunks.delete().where(stream_chunks.c.stream_id == self._stream_id))


@dataclass
class _Call:
    after_events: int
    attempt: int = 0
    author: str = ""
    shown: bool = False
    """Some partial of the current attempt was handed out."""
    closed: bool = False
    """The call's committed event was handed out: later rows (a stale attempt) are dropped."""
    pending: list[Event] = field(default_factory=list)


class TurnMerge:
    """Orders one turn's partials among its committed events.

    Committed events come by index in the turn (``add_events``), from the turn's query or result
    and from the stream's ``event`` rows (the end-of-turn commit, written once stored); each is
    handed out once, in turn order, whichever source brings it first.

    A model call's partials go after the events the turn had made when the call started
    (``after_events``) and before the next committed event, which is the call's own response: the
    model activity writes every partial before it returns, so a reader that reads the rows after
    learning of an event has all partials that precede it.
    Attempts: rows of an attempt older than the newest seen for the call are ignored; when a newer
    attempt starts after text of an older one was handed out, the newer attempt's reset event is
    handed out first, then its own partials.
    """

    def __init__(self) -> None:
        self._events: deque[Event] = deque()
        self._received = 0
        self._ahead: dict[int, Event] = {}  # committed events read before one that precedes them
        self._calls: dict[int, _Call] = {}
        self._released_authors: list[str] = []  # of the committed events handed out, in order

    @property
    def received(self) -> int:
        """How many of the turn's committed events it has, all before them included: where the
        next query of the turn starts (TurnQuery.after)."""
        return self._received

    def add_events(self, events: list[Event], first: int | None = None) -> None:
        """The turn's committed events from index ``first`` (default: right after those received),
        as the turn's query or result gives them: all it holds from there on. Events it already has
        are dropped; events before ``first`` it lacks were left out of a bounded result
        (TurnResult.events_omitted; they are in the session store) and are skipped."""
        start = self._received if first is None else first
        if start > self._received:
            self._ahead = {index: event for index, event in self._ahead.items() if index >= start}
            self._received = start
        self._place(events, start)

    def _place(self, events: list[Event], start: int) -> None:
        """Events at their index; one read before an event that precedes it waits for that one."""
        for index, event in enumerate(events, start):
            if index >= self._received:
                self._ahead.setdefault(index, event)
        while self._received in self._ahead:
            self._events.append(self._ahead.pop(self._received))
            self._received += 1

    def add_chunks(self, chunks: list[Chunk]) -> None:
        for chunk in chunks:
            if chunk.kind == "event":
                self._place([chunk.event], chunk.after_events)
                continue
            call = self._calls.get(chunk.call)
            if call is None:
                # A call first seen after its response went out (its own rows lost, a stale attempt's left).
                answered = chunk.event.author in self._released_authors[chunk.after_events:]
                call = self._calls[chunk.call] = _Call(after_events=chunk.after_events, closed=answered)
            if call.closed or chunk.attempt < call.attempt:
                continue
            if chunk.attempt > call.attempt:
                call.pending.clear()
                if call.shown:
                    call.pending.append(chunk.event if chunk.kind == "start" else _reset_like(chunk.event, chunk.attempt))
                call.shown = False
                call.attempt = chunk.attempt
            call.author = chunk.event.author
            if chunk.kind == "partial":
                call.pending.append(chunk.event)

    def take(self) -> list[Event]:
        """Everything that may be handed out now, in order."""
        out: list[Event] = []
        while True:
            for number in sorted(self._calls):
                call = self._calls[number]
                if call.closed or call.after_events > len(self._released_authors) or not call.pending:
                    continue
                call.shown = call.shown or any(not is_stream_reset(e) for e in call.pending)
                out.extend(call.pending)
                call.pending.clear()
            if not self._events:
                return out
            event = self._events.popleft()
            out.append(event)
            self._released_authors.append(event.author)
            for call in self._calls.values():
                if not call.closed and call.after_events < len(self._released_authors) and call.author == event.author:
                    call.closed = True


def _reset_like(event: Event, attempt: int) -> Event:
    """A reset made from a partial, for an attempt whose start row was not read (pruned meanwhile)."""
    return event.model_copy(update={"content": None, "custom_metadata": {STREAM_RESET: {"attempt": attempt}}})
