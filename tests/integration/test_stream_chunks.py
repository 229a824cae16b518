"""The stream table on a real Postgres: what the model activity writes, the client reads in order,
with a notification; the end-of-turn commit's events too; old rows are pruned by age."""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import AsyncIterator

import psycopg
import pytest
import pytest_asyncio
import sqlalchemy as sa
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from adk_core import telemetry
from adk_core.errors import ConfigurationError
from adk_core.models.base import LlmResponse
from adk_core.sql import migrate, postgres_url
from adk_core.sql.schema import stream_chunks
from adk_core.types import Content, Event
from adk_temporal.activities import streaming
from adk_temporal.activities.streaming import (
    ChunkPublisher,
    StreamTarget,
    TurnEventsTarget,
    complete_responses,
    publish_committed,
)
from adkt._stream_follow import StreamFollower, StreamHub

pytestmark = pytest.mark.integration


@pytest_asyncio.fixture(loop_scope="session")
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    await migrate(database_url)
    engine = create_async_engine(postgres_url(database_url))
    yield engine
    await engine.dispose()


def _target(stream_id: str, call: int = 0) -> StreamTarget:
    return StreamTarget(stream_id=stream_id, call=call, after_events=0, invocation_id="e-1")


async def _model(words: list[str]) -> AsyncIterator[LlmResponse]:
    for word in words:
        yield LlmResponse(content=Content.model(word), partial=True)
        await asyncio.sleep(0)
    yield LlmResponse(content=Content.model("".join(words)))


async def test_the_activity_returns_complete_responses_and_the_follower_reads_partials_in_order(
    engine: AsyncEngine, database_url: str
) -> None:
    async with StreamFollower(database_url, "s-order") as follower:
        words = [f"{i} " for i in range(300)]
        first = ChunkPublisher(engine, _target("s-order", 0), attempt=1, author="a")
        second = ChunkPublisher(engine, _target("s-order", 1), attempt=1, author="b")
        # Two writers of one stream at once (parallel branches): each call's rows keep their order.
        done = await asyncio.gather(complete_responses(_model(words), first), complete_responses(_model(words), second))
        assert [[r.content.text for r in responses if r.content] for responses in done] == [["".join(words)]] * 2
        await asyncio.wait_for(follower.wait(5.0), timeout=10)  # the NOTIFY of the first batch
        chunks = await follower.read()
        assert [c.id for c in chunks] == sorted(c.id for c in chunks)
        for call in (0, 1):
            mine = [c for c in chunks if c.call == call]
            assert mine[0].kind == "start" and [c.event.text for c in mine[1:]] == words
        assert await follower.read() == [], "each row is read once"
        await follower.delete()
    async with engine.connect() as conn:
        left = await conn.scalar(sa.select(sa.func.count()).where(stream_chunks.c.stream_id == "s-order"))
    assert left == 0


async def test_each_write_of_partials_is_a_span(engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    # A private provider, so this process's global tracing stays off for the other tests.
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(telemetry, "_tracer", provider.get_tracer("test"))
    monkeypatch.setattr(telemetry, "tracing_enabled", lambda: True)
    await complete_responses(_model(["a ", "b ", "c"]), ChunkPublisher(engine, _target("s-span"), attempt=1, author="a"))
    writes = [s for s in exporter.get_finished_spans() if s.name == "adk.stream.write"]
    assert writes, [s.name for s in exporter.get_finished_spans()]
    assert all(s.attributes is not None and s.attributes["adk.stream.id"] == "s-span" for s in writes)
    assert sum(s.attributes["adk.stream.rows"] for s in writes if s.attributes) == 4  # the start row and 3 partials


async def test_rows_older_than_the_retention_are_pruned(engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    async with engine.begin() as conn:
        await conn.execute(stream_chunks.insert(), [
            {"stream_id": "s-old", "call": 0, "attempt": 1, "seq": 0, "after_events": 0, "kind": "start",
             "event": {"author": "a"}, "create_time": 1000.0},
        ])
    monkeypatch.setattr(ChunkPublisher, "_last_prune", 0.0)
    await complete_responses(_model(["x"]), ChunkPublisher(engine, _target("s-new"), attempt=1, author="a"))
    async with engine.connect() as conn:
        streams = set((await conn.scalars(sa.select(stream_chunks.c.stream_id).distinct())).all())
    assert "s-old" not in streams and "s-new" in streams
    assert streaming.RETENTION_SECONDS >= 600, "longer than a model call may run"


async def test_a_partial_postgres_cannot_hold_is_skipped_not_fatal(engine: AsyncEngine, database_url: str) -> None:
    async with StreamFollower(database_url, "s-nul") as follower:
        done = await complete_responses(
            _model(["ok ", "bad\x00", "fine"]), ChunkPublisher(engine, _target("s-nul"), attempt=1, author="a")
        )
        assert done[-1].content is not None and done[-1].content.text == "ok bad\x00fine"
        assert [c.event.text for c in await follower.read() if c.kind == "partial"] == ["ok ", "fine"]


async def test_partials_are_encrypted_at_rest_when_keys_are_set(
    engine: AsyncEngine, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADK_ENCRYPTION_KEYS", "k1:" + base64.b64encode(b"\x01" * 32).decode())
    marker = "OKAPI-5521"
    async with StreamFollower(database_url, "s-sealed") as follower:
        publisher = ChunkPublisher(engine, _target("s-sealed"), attempt=1, author="a")
        await complete_responses(_model([marker, " and more"]), publisher)
        await asyncio.wait_for(follower.wait(5.0), timeout=10)
        chunks = await follower.read()
        assert [c.event.text for c in chunks[1:]] == [marker, " and more"]  # the reader decrypts
        async with engine.connect() as conn:
            stored = [row[0] for row in await conn.execute(
                sa.text("SELECT event::text FROM adk_stream_chunks WHERE stream_id = 's-sealed'"))]  # fmt: skip
        assert stored and not any(marker in row for row in stored) and all("adk_sealed" in row for row in stored)
        await follower.delete()


async def test_a_follower_reads_only_the_rows_after_its_last_read(engine: AsyncEngine, database_url: str) -> None:
    async with StreamFollower(database_url, "s-twice") as follower:
        first = ChunkPublisher(engine, _target("s-twice"), attempt=1, author="a")
        await complete_responses(_model(["a ", "b "]), first)
        assert [c.kind for c in await follower.read()] == ["start", "partial", "partial"]
        again = ChunkPublisher(engine, _target("s-twice"), attempt=2, author="a")  # a retried call's rows
        await complete_responses(_model(["c "]), again)
        later = await follower.read()
        assert [(c.attempt, c.kind, c.event.text) for c in later][1:] == [(2, "partial", "c ")]
        assert later[0].attempt == 2 and later[0].kind == "start"
        await follower.delete()


async def test_a_follower_on_a_database_without_the_stream_table_says_to_migrate(database_url: str) -> None:
    name = f"unmigrated_{uuid.uuid4().hex[:8]}"
    admin = postgres_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)
    async with await psycopg.AsyncConnection.connect(admin, autocommit=True) as conn:
        await conn.execute(f'CREATE DATABASE "{name}"')
    bare = postgres_url(database_url).set(database=name).render_as_string(hide_password=False)
    hub = StreamHub(bare)
    try:
        with pytest.raises(ConfigurationError, match="adkt migrate"):
            await hub.follow("s-none").read()
    finally:
        await hub.close()


async def test_committed_events_are_written_at_their_index_once_sealed_and_read_back(
    engine: AsyncEngine, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADK_ENCRYPTION_KEYS", "k1:" + base64.b64encode(b"\x02" * 32).decode())
    user = Event(author="user", content=Content.user("hi"))
    answer = Event(author="a", content=Content.model("PANGOLIN-7 says hello"))
    target = TurnEventsTarget(stream_id="s-committed", first=3, count=1)  # the answer is the turn's 4th event
    async with StreamFollower(database_url, "s-committed") as follower:
        await publish_committed(engine, target, [user, answer])
        await publish_committed(engine, target, [user, answer])  # the commit stored again: no second row
        await asyncio.wait_for(follower.wait(5.0), timeout=10)
        chunks = await follower.read()
        assert [(c.kind, c.call, c.after_events, c.event.id, c.event.text) for c in chunks] == [
            ("event", -1, 3, answer.id, "PANGOLIN-7 says hello")
        ]
        async with engine.connect() as conn:
            stored = await conn.scalar(
                sa.text("SELECT event::text FROM adk_stream_chunks WHERE stream_id = 's-committed'"))  # fmt: skip
        assert stored is not None and "PANGOLIN" not in stored, "sealed at rest, as partials are"
        await follower.delete()


async def test_committed_events_that_cannot_be_written_are_logged_not_raised(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def down(*args: object) -> None:
        raise ConnectionError("the database went away")

    monkeypatch.setattr(streaming, "_write_stream_rows", down)
    answer = Event(author="a", content=Content.model("hello"))
    await publish_committed(engine, TurnEventsTarget(stream_id="s-down", first=0, count=1), [answer])
    assert "committed events of stream s-down were not published" in caplog.text
    assert "the database went away" in caplog.text
