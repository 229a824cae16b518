"""Following a turn's partial events: the client side of activities/streaming.py.

``StreamFollower`` LISTENs on the turn's channel and reads its new rows of ``adk_stream_chunks``;
``TurnMerge`` puts those partials among the turn's committed events in the order the in-process
Runner yields them, and turns a retried model call into one reset partial (is_stream_reset) instead
of duplicated text. docs/durability.md ("Streaming") describes what a client sees.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import psycopg

from adk_core.errors import ConfigurationError
from adk_core.sql import postgres_url
from adk_core.types import Event
from adk_temporal.activities.streaming import STREAM_RESET, channel_name, is_stream_reset
from adk_temporal.encryption import open_json, process_codec

_READ = (
    "SELECT id, call, attempt, after_events, kind, event FROM adk_stream_chunks "
    "WHERE stream_id = %s AND id > %s ORDER BY id"
)


@dataclass(frozen=True)
class Chunk:
    id: int
    call: int
    attempt: int
    after_events: int
    kind: str
    event: Event


class StreamFollower:
    """Reads one stream's rows in commit order, and waits for the NOTIFY that says there are more.

    One connection of its own (autocommit: a LISTEN inside a transaction would wait for its end).
    """

    def __init__(self, database_url: str, stream_id: str) -> None:
        url = postgres_url(database_url).set(drivername="postgresql")
        self._conninfo = url.render_as_string(hide_password=False)
        self._stream_id = stream_id
        self._cursor = 0
        self._conn: psycopg.AsyncConnection[Any] | None = None

    async def __aenter__(self) -> StreamFollower:
        self._conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
        # Listening before the message is sent: no notification of the turn can be missed.
        await self._conn.execute(f"LISTEN {channel_name(self._stream_id)}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._conn is not None:
            await self._conn.close()

    @property
    def conn(self) -> psycopg.AsyncConnection[Any]:
        assert self._conn is not None, "use StreamFollower as an async context manager"
        return self._conn

    async def read(self) -> list[Chunk]:
        """The rows committed since the last read, in id order (ids commit in order within a stream)."""
        try:
            rows = await (await self.conn.execute(_READ, (self._stream_id, self._cursor))).fetchall()
        except psycopg.errors.UndefinedTable:
            raise ConfigurationError(
                "the sessions database has no adk_stream_chunks table: migrate it (`adkt migrate`, or start a "
                "worker of this version, which migrates on start)"
            ) from None
        if rows:
            self._cursor = rows[-1][0]
        codec = process_codec()
        return [Chunk(r[0], r[1], r[2], r[3], r[4], Event.model_validate(open_json(r[5], codec))) for r in rows]

    async def wait(self, timeout: float) -> None:
        """Return when a notification arrives (or was received while not waiting), or after ``timeout``."""
        async for _ in self.conn.notifies(timeout=timeout, stop_after=1):
            pass

    async def delete(self) -> None:
        """Drop the stream's rows: the turn is over and its committed events replace its partials."""
        await self.conn.execute("DELETE FROM adk_stream_chunks WHERE stream_id = %s", (self._stream_id,))


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
        self._calls: dict[int, _Call] = {}
        self._released_authors: list[str] = []  # of the committed events handed out, in order

    def add_events(self, events: list[Event]) -> None:
        self._events.extend(events)

    def add_chunks(self, chunks: list[Chunk]) -> None:
        for chunk in chunks:
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
