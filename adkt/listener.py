"""One Postgres LISTEN connection per process, shared by everything that waits for a NOTIFY.

A streamed turn waits for the NOTIFY that says its partials were written (activities/streaming.py),
the simulator's page for the one that says a session changed. One connection each would exhaust
Postgres's ``max_connections`` at a few dozen open streams; ``NotifyListener`` holds one connection,
LISTENs on the union of its subscribers' channels and hands each notification to the subscribers of
its channel.

What a subscriber can rely on:

- ``subscribe(channel)`` returns once the channel is LISTENed: a NOTIFY committed after that reaches it.
- Each subscriber has a bounded buffer. A subscriber that does not keep up loses payloads, never
  blocks the others: its next ``Notice`` says ``missed``.
- A lost connection is reopened with bounded backoff; after it, every subscriber gets a ``missed``
  notice. Notifications are not stored by Postgres, so whatever was sent meanwhile is gone: a
  subscriber catches up from the rows it follows (a stream reads every row after the last it read).
- After ``give_up_seconds`` without a connection, subscribers get ``ListenerUnavailableError``; the
  next ``subscribe`` tries again.
- With no subscribers for ``idle_seconds`` the connection is closed; ``close()`` ends everything.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from adk_core.errors import AdkError, InvalidInputError
from adk_core.sql import postgres_url

logger = logging.getLogger(__name__)

QUEUE_SIZE = 256
"""Payloads buffered per subscriber; beyond it the subscriber's next notice says ``missed``."""
IDLE_SECONDS = 5.0
"""How long the connection stays open without subscribers (a new stream soon after reuses it)."""
GIVE_UP_SECONDS = 30.0
"""How long reconnecting is tried before the waiting subscribers are failed."""
FIRST_BACKOFF, MAX_BACKOFF = 0.05, 2.0
CONNECT_TIMEOUT_SECONDS = 10.0
_CHANNEL = re.compile(r"[a-z_][a-z0-9_]{0,62}")
# TCP keepalives: a connection whose peer vanished (no FIN) is noticed within about a minute.
_KEEPALIVES = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 3}


class ListenerUnavailableError(AdkError):
    """The listener cannot LISTEN: Postgres did not accept a connection for ``give_up_seconds``, or
    the listener was closed (the server is shutting down)."""


@dataclass(frozen=True)
class Notice:
    """What arrived since the subscriber last looked. ``missed``: some notifications may have been
    lost (a reconnect, or more than ``queue_size`` payloads unread): catch up from the stored rows."""

    payloads: tuple[str, ...]
    missed: bool


class Subscription:
    """One subscriber's view of a channel; made by ``NotifyListener.subscribe``."""

    def __init__(self, channel: str, queue_size: int) -> None:
        self.channel = channel
        self._payloads: deque[str] = deque()
        self._queue_size = queue_size
        self._missed = False
        self._wake = asyncio.Event()
        self._error: BaseException | None = None
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def get(self, timeout: float | None = None) -> Notice | None:
        """The next notice, waiting up to ``timeout`` seconds (None: no limit); None when none came.
        Raises ListenerUnavailableError once the listener has given up or was closed."""
        if not self._wake.is_set():
            try:
                await asyncio.wait_for(self._wake.wait(), timeout)
            except TimeoutError:
                return None
        if self._error is not None:
            raise self._error
        notice = Notice(tuple(self._payloads), self._missed)
        self._payloads.clear()
        self._missed = False
        self._wake.clear()
        return notice

    async def listening(self) -> None:
        """Return once the channel is LISTENed: every notification from then on reaches ``get``.
        Raises ListenerUnavailableError when the listener gave up first."""
        await asyncio.shield(self._ready)

    def _deliver(self, payload: str) -> None:
        if len(self._payloads) >= self._queue_size:
            self._missed = True  # dropped, not blocking the listener: the subscriber catches up
        else:
            self._payloads.append(payload)
        self._wake.set()

    def _mark_missed(self) -> None:
        self._missed = True
        self._wake.set()

    def _listening(self) -> None:
        if not self._ready.done():
            self._ready.set_result(None)

    def _fail(self, error: BaseException) -> None:
        self._error = error
        self._wake.set()
        if not self._ready.done():
            self._ready.set_exception(error)
            self._ready.exception()  # retrieved here too: a subscriber that left will not


class NotifyListener:
    """One LISTEN connection on ``database_url`` shared by any number of subscribers."""

    def __init__(
        self, database_url: str, *, queue_size: int = QUEUE_SIZE, idle_seconds: float = IDLE_SECONDS,
        give_up_seconds: float = GIVE_UP_SECONDS,
    ) -> None:
        url = postgres_url(database_url).set(drivername="postgresql")
        self._conninfo = make_conninfo(url.render_as_string(hide_password=False), **_KEEPALIVES)
        self._where = f"{url.host or 'localhost'}:{url.port or 5432}/{url.database}"
        self._queue_size = queue_size
        self._idle_seconds = idle_seconds
        self._give_up_seconds = give_up_seconds
        self._subscribers: dict[str, set[Subscription]] = {}
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self.connections_opened = 0
        """How many connections the listener has opened so far (one, unless it reconnected or idled)."""

    @property
    def channels(self) -> int:
        return len(self._subscribers)

    @contextlib.asynccontextmanager
    async def subscribe(self, channel: str, *, wait_listening: bool = True) -> AsyncIterator[Subscription]:
        """Subscribe to ``channel`` (a lower-case SQL identifier) for the duration of the context.
        ``wait_listening=False`` enters at once, the LISTEN still on its way: await
        ``subscription.listening()`` before relying on notifications."""
        if not _CHANNEL.fullmatch(channel):
            raise InvalidInputError(
                f"channel {channel!r} is not a lower-case SQL identifier of at most 63 characters "
                "(letters, digits, _); hash longer names, as activities.streaming.channel_name does"
            )
        if self._closed:
            raise ListenerUnavailableError("the listener is closed; open a new NotifyListener")
        subscription = Subscription(channel, self._queue_size)
        self._subscribers.setdefault(channel, set()).add(subscription)
        self._changed.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name=f"LISTEN on {self._where}")
        try:
            if wait_listening:
                await subscription.listening()
            yield subscription
        finally:
            subscribers = self._subscribers.get(channel)
            if subscribers is not None:
                subscribers.discard(subscription)
                if not subscribers:
                    del self._subscribers[channel]
                self._changed.set()

    async def close(self) -> None:
        """Close the connection; current subscribers get ListenerUnavailableError."""
        self._closed = True
        self._fail_all(ListenerUnavailableError("the listener was closed (the server is shutting down)"))
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def _fail_all(self, error: BaseException) -> None:
        for subscribers in self._subscribers.values():
            for subscription in subscribers:
                subscription._fail(error)
        self._subscribers.clear()

    async def _run(self) -> None:
        failing_since: float | None = None
        delay = FIRST_BACKOFF
        while self._subscribers:
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT_SECONDS):
                    conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
            except (psycopg.Error, OSError, TimeoutError) as e:
                now = time.monotonic()
                failing_since = failing_since or now
                if now - failing_since >= self._give_up_seconds:
                    self._fail_all(ListenerUnavailableError(
                        f"cannot LISTEN on {self._where}: no connection for {self._give_up_seconds:.0f} s ({e}); "
                        "check that Postgres is up and accepts connections (max_connections), and the database URL"
                    ))  # fmt: skip
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, MAX_BACKOFF)
                continue
            reconnected = self.connections_opened > 0
            self.connections_opened += 1
            failing_since, delay = None, FIRST_BACKOFF
            try:
                await self._serve(conn, reconnected=reconnected)
                return  # idle: no subscribers left
            except psycopg.Error as e:
                logger.warning("the LISTEN connection to %s was lost (%s); reconnecting", self._where, e)
            finally:
                await conn.close()

    async def _serve(self, conn: psycopg.AsyncConnection[Any], *, reconnected: bool) -> None:
        """LISTEN on what the subscribers want and dispatch notifications until idle or the connection fails."""
        listening: set[str] = set()
        catch_up = reconnected
        while True:
            self._changed.clear()
            wanted = set(self._subscribers)
            statements = [f"LISTEN {c}" for c in wanted - listening] + [f"UNLISTEN {c}" for c in listening - wanted]
            if statements:
                await conn.execute("; ".join(statements))  # one round trip for a burst of new streams
            listening = wanted
            for channel in wanted:
                for subscription in self._subscribers[channel]:
                    subscription._listening()
                    if catch_up:
                        subscription._mark_missed()
            catch_up = False
            if not listening:
                try:
                    await asyncio.wait_for(self._changed.wait(), self._idle_seconds)
                except TimeoutError:
                    return
                continue
            await self._dispatch_until_changed(conn)

    async def _dispatch_until_changed(self, conn: psycopg.AsyncConnection[Any]) -> None:
        async def read() -> None:
            async for note in conn.notifies():
                for subscription in self._subscribers.get(note.channel, ()):
                    subscription._deliver(note.payload)

        reader = asyncio.create_task(read())
        changed = asyncio.create_task(self._changed.wait())
        try:
            await asyncio.wait({reader, changed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            # Cancelling the wait on an idle connection is safe (no query in flight); a notification
            # that arrives before the next wait is kept by psycopg and yielded then.
            for task in (reader, changed):
                task.cancel()
            await asyncio.gather(changed, return_exceptions=True)
            try:
                await reader
            except asyncio.CancelledError:
                if asyncio.current_task().cancelling():  # type: ignore[union-attr]
                    raise
            # any other error (the connection failed) propagates to _run, which reconnects


_shared: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, NotifyListener]] = weakref.WeakKeyDictionary()


def shared_listener(database_url: str) -> NotifyListener:
    """This process's listener on ``database_url`` (one per event loop and database)."""
    key = postgres_url(database_url).render_as_string(hide_password=False)
    listeners = _shared.setdefault(asyncio.get_running_loop(), {})
    listener = listeners.get(key)
    if listener is None or listener._closed:
        listener = listeners[key] = NotifyListener(database_url)
    return listener


async def close_shared_listeners() -> None:
    """Close this event loop's shared listeners (at server shutdown)."""
    listeners = _shared.pop(asyncio.get_running_loop(), {})
    await asyncio.gather(*(listener.close() for listener in listeners.values()))
