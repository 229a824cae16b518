"""Partial model output of a durable model call, published to Postgres for the clients following a turn.

A streamed model call (``RunConfig(streaming_mode="sse")``) yields partial responses while it runs.
They must reach the client at once, in order, and must not enter workflow history (which would grow
with every token). So the model activity returns only the complete responses to the workflow and
writes the partials as rows of ``adk_stream_chunks``, with a ``NOTIFY`` on the stream's channel in the
same transaction; the client LISTENs on that channel and reads new rows (adkt/_stream_follow.py).
docs/durability.md ("Streaming") says why this channel and what a client sees when a call is retried.

Rows are keyed by (stream, model call, attempt, seq). Every attempt first writes a ``start`` row, so
a client that showed text of an earlier attempt knows at once to discard it. The turn's end-of-turn
commit writes its events there too, once stored (``event`` rows, ``publish_committed``): the client
hands out the committed final answer at once, not a workflow task and the turn's result later. Writing never holds up
the model: rows queue in memory and a background task writes whatever has queued, one transaction
per batch. A stream that cannot be written loses its partials (the call itself goes on and its
complete response is the committed event), and the worker logs why.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterator
from typing import Any, Literal

import sqlalchemy as sa
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncEngine

from adk_core import telemetry
from adk_core.errors import AdkError
from adk_core.flow.llm_flow import response_event_fields
from adk_core.models.base import LlmResponse
from adk_core.runtime import wall_clock
from adk_core.sql import dumps_model
from adk_core.sql.held import driver_sql, held_connections
from adk_core.sql.schema import stream_chunks
from adk_core.types import Event
from adk_temporal.encryption import process_codec, seal_json

logger = logging.getLogger(__name__)

CHANNEL_PREFIX = "adk_stream_"
RETENTION_SECONDS = 30 * 60.0
"""Rows older than this are deleted by workers. Longer than a model call may run (10 minutes by
default), so no live stream loses rows; a client deletes its finished turn's rows itself."""
PRUNE_EVERY_SECONDS = 60.0
"""How often one worker process runs the age-based delete (it rides on a stream's first write)."""
MAX_BATCH_ROWS = 500

ChunkKind = Literal["start", "partial", "event"]
COMMITTED_CALL = -1
"""The ``call`` of a stream's ``event`` rows: committed events, not any model call's partials."""
STREAM_RESET = "adk_stream_reset"
"""custom_metadata key of the partial event that tells a client to discard the text it showed of
an earlier attempt of the same model call (``{"attempt": n}``: the attempt that starts over)."""


def is_stream_reset(event: Event) -> bool:
    """Whether ``event`` is the partial that says: drop this call's partial text shown so far."""
    return bool(event.partial and event.custom_metadata and STREAM_RESET in event.custom_metadata)


class StreamTarget(BaseModel):
    """Where a model call's partials go: given by the workflow to the model activity."""

    stream_id: str
    """The turn's stream (turn_stream_id); the client following the turn knows it in advance."""
    call: int
    """The model call's number within the turn (0, 1, ...), the same on every attempt."""
    after_events: int
    """How many events the turn had made when this call started: the client shows the call's
    partials after that many committed events, so they interleave with them as in-process."""
    invocation_id: str
    branch: str | None = None


class TurnEventsTarget(BaseModel):
    """Where a commit of the turn's own events goes too, once stored: given by the workflow to the
    append activity when a client follows the turn and the commit is the turn's latest events."""

    stream_id: str
    first: int
    """The turn's index (as TurnQuery.after counts) of the first event published."""
    count: int
    """How many of the commit's events are published: its last ones (the user's message, stored with
    the turn's first commit, is no event of the turn)."""


def turn_stream_id(workflow_id: str, message_id: str) -> str:
    """The stream of the turn that runs message ``message_id`` in the conversation ``workflow_id``."""
    return f"{workflow_id}#{message_id}"


def channel_name(stream_id: str) -> str:
    """The LISTEN/NOTIFY channel of a stream: an identifier of at most 63 bytes whatever the ids hold."""
    return CHANNEL_PREFIX + hashlib.sha256(stream_id.encode()).hexdigest()[:40]


_WRITE_ROWS = sa.text("""
WITH locked AS (SELECT pg_advisory_xact_lock(:lock_key)),
written AS (
    INSERT INTO adk_stream_chunks (stream_id, call, attempt, seq, after_events, kind, event, create_time)
    SELECT :stream_id, r.call, r.attempt, r.seq, r.after_events, r.kind, r.event, r.create_time
    FROM locked CROSS JOIN ROWS FROM (jsonb_to_recordset(CAST(:rows AS jsonb))
        AS (call int, attempt int, seq int, after_events int, kind text, event jsonb, create_time double precision))
        WITH ORDINALITY AS r(call, attempt, seq, after_events, kind, event, create_time, n)
    ORDER BY r.n
    ON CONFLICT ON CONSTRAINT adk_stream_chunks_position DO NOTHING
    RETURNING 1
)
SELECT pg_notify(:channel, '') FROM (SELECT count(*) FROM written) AS w
""")
"""Writers of one stream (parallel branches, a stale attempt) take turns on the advisory lock, held
to the commit, so ids commit in id order within a stream and a reader's "id > last seen" never skips
a row. The rows read from the lock's CTE, so none is inserted before the lock is held; the NOTIFY
counts them first, and Postgres delivers it at the commit. A row already there is left as it is: a
commit stored again (its workflow task retried) writes the same events' rows again."""


_WRITE_ROWS_SQL = driver_sql(_WRITE_ROWS)


def _rows_json(rows: list[dict[str, Any]]) -> str:
    """The rows as one JSON array for _WRITE_ROWS (each event is already JSON text: embedded as is)."""
    return "[" + ",".join(
        f'{{"call":{r["call"]:d},"attempt":{r["attempt"]:d},"seq":{r["seq"]:d},"after_events":{r["after_events"]:d},'
        f'"kind":"{r["kind"]}","create_time":{float(r["create_time"])!r},"event":{r["event"]}}}'
        for r in rows
    ) + "]"


def _lock_key(stream_id: str) -> int:
    return int.from_bytes(hashlib.sha256(stream_id.encode()).digest()[:8], "big", signed=True)


def partial_event(response: LlmResponse, *, author: str, target: StreamTarget, event_id: str) -> Event:
    """The event a partial response becomes, shaped as the in-process flow shapes it."""
    fields = {**response_event_fields(response), "partial": True}
    return Event(id=event_id, invocation_id=target.invocation_id, author=author, branch=target.branch,
                 timestamp=wall_clock(), **fields)  # fmt: skip


class ChunkPublisher:
    """Writes one attempt's rows in the background, in order; ``close()`` waits until all are written."""

    _last_prune = 0.0  # per worker process: the age-based delete runs at most every PRUNE_EVERY_SECONDS

    def __init__(self, engine: AsyncEngine, target: StreamTarget, *, attempt: int, author: str) -> None:
        self._engine = engine
        self._target = target
        self._attempt = attempt
        self._author = author
        self._seq = 0
        self._queue: list[dict[str, Any]] = []
        self._wake = asyncio.Event()
        self._closing = False
        self._failed = False
        self._task: asyncio.Task[None] | None = None
        self._codec = process_codec()  # partial text is as private as the answer: encrypted at rest too

    def start(self) -> None:
        # The start row carries the reset event a client shows when it must discard this call's
        # text of an earlier attempt (it is never shown otherwise).
        target = self._target
        reset = Event(
            id=self._event_id(), invocation_id=target.invocation_id, author=self._author, branch=target.branch,
            timestamp=wall_clock(), partial=True, custom_metadata={STREAM_RESET: {"attempt": self._attempt}},
        )
        self._row("start", reset)
        self._task = asyncio.create_task(self._write_loop(), name=f"stream {self._target.stream_id}")

    def publish(self, response: LlmResponse) -> None:
        self._row("partial", partial_event(response, author=self._author, target=self._target, event_id=self._event_id()))

    def _event_id(self) -> str:
        return f"{self._target.stream_id}/{self._target.call}/{self._attempt}/{self._seq}"

    def _row(self, kind: ChunkKind, event: Event) -> None:
        if self._failed:
            return
        try:
            data = dumps_model(event, "a partial event")
        except AdkError as e:  # e.g. a NUL in the text, which Postgres JSON cannot hold: skip this partial
            logger.warning("a partial of stream %s call %d was not published: %s", self._target.stream_id,
                           self._target.call, e)
            return
        target = self._target
        self._queue.append({
            "stream_id": target.stream_id, "call": target.call, "attempt": self._attempt, "seq": self._seq,
            "after_events": target.after_events, "kind": kind, "create_time": wall_clock(),
            "event": seal_json(data, self._codec),
        })
        self._seq += 1
        self._wake.set()

    async def close(self) -> None:
        """Write what is queued and stop. Partials are written before the activity returns, so a
        client that sees the call's committed event can read all of them."""
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await self._task

    async def abort(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _write_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                batch, self._queue = self._queue[:MAX_BATCH_ROWS], self._queue[MAX_BATCH_ROWS:]
                try:
                    await self._write(batch)
                except Exception as e:  # noqa: BLE001  (display only: the call's result does not depend on it)
                    self._failed = True
                    self._queue.clear()
                    logger.warning("partials of stream %s call %d could not be written, the client shows the "
                                   "complete response only: %s", self._target.stream_id, self._target.call, e)
                    return
            if self._closing:
                return

    async def _write(self, rows: list[dict[str, Any]]) -> None:
        stream_id = self._target.stream_id
        with telemetry.start_span("adk.stream.write", {"adk.stream.id": stream_id, "adk.stream.rows": len(rows)}):
            await _write_stream_rows(self._engine, stream_id, rows)
        await self._prune_now_and_then()

    async def _prune_now_and_then(self) -> None:
        now = wall_clock()
        if now - ChunkPublisher._last_prune < PRUNE_EVERY_SECONDS:
            return
        ChunkPublisher._last_prune = now
        try:
            async with self._engine.begin() as conn:
                await conn.execute(stream_chunks.delete().where(stream_chunks.c.create_time < now - RETENTION_SECONDS))
        except Exception as e:  # noqa: BLE001  (housekeeping: the next prune, a minute on, tries again)
            logger.warning("could not delete stream rows older than %.0f s: %s", RETENTION_SECONDS, e)


async def _write_stream_rows(engine: AsyncEngine, stream_id: str, rows: list[dict[str, Any]]) -> None:
    # One statement in its own transaction: the lock, the rows in order, the NOTIFY (0.7-0.8 ms
    # against 2.1-2.3 ms as BEGIN, three statements and COMMIT; each is a round trip before
    # the first token reaches the client).
    # On the engine's held connections, as session appends (adk_core.sql.held): no pool checkout
    # or autocommit switch per batch.
    params = {"lock_key": _lock_key(stream_id), "stream_id": stream_id, "rows": _rows_json(rows),
              "channel": channel_name(stream_id)}  # fmt: skip
    await held_connections(engine).fetch_first_rows([(_WRITE_ROWS_SQL, params)])


async def publish_committed(engine: AsyncEngine, target: TurnEventsTarget, events: list[Event]) -> None:
    """The turn's events just stored, as ``event`` rows of its stream (seq and after_events: each
    one's index in the turn). For display only, as partials: a client that misses them gets the
    same events from the turn's query or result, so a failure is logged, not raised."""
    codec = process_codec()
    now = wall_clock()
    try:
        rows = [
            {"call": COMMITTED_CALL, "attempt": 0, "seq": index, "after_events": index, "kind": "event",
             "create_time": now, "event": seal_json(dumps_model(event, "a committed event"), codec)}
            for index, event in enumerate(events[len(events) - target.count:], target.first)
        ]
        with telemetry.start_span("adk.stream.write", {"adk.stream.id": target.stream_id, "adk.stream.rows": len(rows)}):
            await _write_stream_rows(engine, target.stream_id, rows)
    except Exception as e:  # noqa: BLE001  (display only: the events are stored, the client reads them from the turn)
        logger.warning("committed events of stream %s were not published (the client gets them with the turn's "
                       "result): %s", target.stream_id, e)


async def complete_responses(
    responses: AsyncIterator[LlmResponse], publisher: ChunkPublisher | None
) -> list[LlmResponse]:
    """The model's complete responses, for the workflow; partials go to ``publisher`` (or nowhere:
    they never go into workflow history)."""
    complete: list[LlmResponse] = []
    if publisher is not None:
        publisher.start()
    try:
        async for response in responses:
            if not response.partial:
                complete.append(response)
            elif publisher is not None:
                publisher.publish(response)
    except BaseException:
        if publisher is not None:
            await publisher.abort()
        raise
    if publisher is not None:
        await publisher.close()
    return complete


def publisher_for(engine: AsyncEngine | None, target: StreamTarget | None, *, attempt: int, author: str) -> ChunkPublisher | None:
    """A publisher when the call has a stream and the worker a Postgres engine; otherwise None."""
    if target is None or engine is None:
        return None
    return ChunkPublisher(engine, target, attempt=attempt, author=author)
