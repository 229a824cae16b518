"""The shared LISTEN connection (adkt/listener.py) on a real Postgres: one connection for many
subscribers, each notification to its channel's subscribers in order, a bounded buffer per
subscriber, a reconnect after the connection is killed (subscribers told to catch up, a stream
follower losing no row), clean close."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import psycopg
import pytest
from psycopg import sql

from adk_core.models.base import LlmResponse
from adk_core.sql import migrate, open_engine, postgres_url
from adk_core.types import Content
from adk_temporal.activities.streaming import ChunkPublisher, StreamTarget, complete_responses
from adkt._stream_follow import StreamHub
from adkt.listener import ListenerUnavailableError, NotifyListener, Subscription

pytestmark = pytest.mark.integration


def _conninfo(database_url: str) -> str:
    return postgres_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _notify(database_url: str, notes: list[tuple[str, str]]) -> None:
    async with await psycopg.AsyncConnection.connect(_conninfo(database_url), autocommit=True) as conn:
        for channel, payload in notes:
            await conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))


async def _listen_backends(database_url: str) -> list[int]:
    """Pids of the sessions that LISTEN on this database (the listener's connection runs LISTEN)."""
    async with await psycopg.AsyncConnection.connect(_conninfo(database_url), autocommit=True) as conn:
        rows = await (await conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%%'"
        )).fetchall()  # fmt: skip
    return [r[0] for r in rows]


async def _collect(subscription: Subscription, count: int) -> tuple[list[str], bool]:
    got: list[str] = []
    missed = False
    async with asyncio.timeout(10):
        while len(got) < count:
            notice = await subscription.get(5.0)
            if notice is not None:
                got += notice.payloads
                missed = missed or notice.missed
    return got, missed


async def test_many_subscribers_share_one_connection_and_each_gets_its_channel_in_order(database_url: str) -> None:
    listener = NotifyListener(database_url)
    try:
        async with contextlib.AsyncExitStack() as stack:
            subs = [await stack.enter_async_context(listener.subscribe(f"chan_{i % 20}")) for i in range(60)]
            assert len(await _listen_backends(database_url)) == 1
            await _notify(database_url, [(f"chan_{c}", f"{c}:{n}") for n in range(5) for c in range(20)])
            for i, sub in enumerate(subs):
                got, missed = await _collect(sub, 5)
                assert got == [f"{i % 20}:{n}" for n in range(5)] and not missed
        assert listener.connections_opened == 1
    finally:
        await listener.close()


async def test_a_slow_subscriber_loses_payloads_beyond_its_buffer_and_is_told(database_url: str) -> None:
    listener = NotifyListener(database_url, queue_size=4)
    try:
        async with listener.subscribe("slow_one") as slow, listener.subscribe("slow_one") as fast:
            for n in range(10):
                await _notify(database_url, [("slow_one", str(n))])
                assert (await _collect(fast, 1))[0] == [str(n)]
            notice = await slow.get(1.0)
            assert notice is not None and notice.payloads == ("0", "1", "2", "3") and notice.missed
    finally:
        await listener.close()


async def test_a_killed_connection_is_reopened_and_subscribers_are_told_to_catch_up(database_url: str) -> None:
    listener = NotifyListener(database_url)
    try:
        async with listener.subscribe("kill_me") as sub:
            [pid] = await _listen_backends(database_url)
            async with await psycopg.AsyncConnection.connect(_conninfo(database_url), autocommit=True) as conn:
                await conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
            async with asyncio.timeout(10):
                notice = await sub.get(5.0)
            assert notice is not None and notice.missed, "after a reconnect the subscriber re-reads what it follows"
            await _notify(database_url, [("kill_me", "after")])
            assert (await _collect(sub, 1))[0] == ["after"]
            assert listener.connections_opened == 2
    finally:
        await listener.close()


async def test_close_ends_subscribers_and_a_database_that_never_answers_fails_them_in_bounded_time(
    database_url: str, unused_tcp_port: int
) -> None:
    listener = NotifyListener(database_url)
    async with listener.subscribe("closing") as sub:
        await listener.close()
        with pytest.raises(ListenerUnavailableError, match="closed"):
            await sub.get(1.0)
    assert await _listen_backends(database_url) == []

    nowhere = NotifyListener(f"postgresql+psycopg://postgres@127.0.0.1:{unused_tcp_port}/x", give_up_seconds=0.3)
    with pytest.raises(ListenerUnavailableError, match="no connection for"):
        async with asyncio.timeout(10):
            async with nowhere.subscribe("never"):
                pass
    with pytest.raises(Exception, match="lower-case SQL identifier"):
        async with listener.subscribe("Bad-Name"):
            pass


async def test_a_follower_loses_no_row_when_the_listen_connection_is_killed_mid_stream(database_url: str) -> None:
    """The second half of the stream is written while the listener cannot connect, so its NOTIFYs
    reach no one and none comes after: only the listener's catch-up notice wakes the follower."""
    await migrate(database_url)
    engine = open_engine(database_url)
    hub = StreamHub(database_url, listener=NotifyListener(database_url))
    target = StreamTarget(stream_id="s-reconnect", call=0, after_events=0, invocation_id="e-1")
    words = [f"{i} " for i in range(40)]
    database = str(postgres_url(database_url).database)
    admin = _conninfo(postgres_url(database_url).set(database="postgres").render_as_string(hide_password=False))

    async def model(half: list[str]) -> AsyncIterator[LlmResponse]:
        for word in half:
            yield LlmResponse(content=Content.model(word), partial=True)
        yield LlmResponse(content=Content.model("".join(half)))

    async def read_until(texts: list[str], count: int) -> None:
        async with asyncio.timeout(10):  # shorter than the wait: a follower nobody wakes fails here
            while len(texts) < count:
                await follower.wait(60.0)
                texts += [c.event.text or "" for c in await follower.read() if c.kind == "partial"]

    try:
        async with hub.follow("s-reconnect") as follower, await psycopg.AsyncConnection.connect(
            admin, autocommit=True
        ) as conn:
            texts: list[str] = []
            await complete_responses(model(words[:20]), ChunkPublisher(engine, target, attempt=1, author="a"))
            await read_until(texts, 20)
            # New connections refused (pooled ones go on), then the listener's killed: it cannot reconnect.
            await conn.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(sql.Identifier(database)))
            try:
                [pid] = await _listen_backends_via(conn, database)
                await conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
                await complete_responses(model(words[20:]), ChunkPublisher(engine, target, attempt=2, author="a"))
            finally:
                await conn.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS true").format(sql.Identifier(database)))
            await read_until(texts, 40)
            assert texts == words, "every row, in order, across the reconnect"
            assert hub.listener.connections_opened == 2
            await follower.delete()
    finally:
        await hub.close()
        await engine.dispose()


async def _listen_backends_via(conn: psycopg.AsyncConnection, database: str) -> list[int]:
    rows = await (await conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = %s AND query LIKE 'LISTEN%%'", (database,)
    )).fetchall()  # fmt: skip
    return [r[0] for r in rows]
