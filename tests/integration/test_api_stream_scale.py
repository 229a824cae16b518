"""Concurrent SSE streams through the HTTP API against a Postgres that allows 40 connections (80 in
the default run, the issue's 200 with ``pytest -m scale``):
every stream gets its partials in order and its turn's end, because the API follows all of them on
one LISTEN connection and a small read pool (adkt/listener.py, adkt/_stream_follow.py). With a
connection per stream, Postgres refuses the 41st.

The limit is Postgres's own: a role with CONNECTION LIMIT 40 owning a database with the same
limit, on the session's embedded server (a server of its own would cost seconds to start). Every
connection of this test's worker and API goes through that role."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import psycopg
import pytest
from httpx_sse import aconnect_sse
from psycopg import sql

from adk_core import App, Content, LlmAgent, LlmRequest, LlmResponse
from adk_core.models import text_response
from adk_core.sessions.sql import DatabaseSessionService
from adk_core.sql import migrate, open_engine, postgres_url
from adk_temporal.worker import build_worker
from adkt.client import AdkClient, connect
from adkt.embedded import EmbeddedPostgres, TemporalDevServer
from adkt.web.api.backend import ApiBackend
from adkt.web.api.models import AppInfo
from adkt.web.serve import serving

pytestmark = pytest.mark.integration

STREAMS = 200
LIMIT = 40
WORDS = [f"w{i} " for i in range(6)]


class _SlowWords:
    """Streams its answer a word at a time, slowly enough that all the turns overlap."""

    name = "slow-words"

    async def generate_content(self, request: LlmRequest, *, stream: bool = False) -> AsyncIterator[LlmResponse]:
        if stream:
            for word in WORDS:
                await asyncio.sleep(0.05)
                yield LlmResponse(content=Content.model(word), partial=True)
        yield text_response("".join(WORDS))


async def _limited_database(postgres: EmbeddedPostgres) -> tuple[str, str]:
    """A database and a role each limited to LIMIT connections (superusers ignore both limits)."""
    role = f"limited_{uuid.uuid4().hex[:8]}"
    async with await psycopg.AsyncConnection.connect(_conninfo(postgres.url), autocommit=True) as conn:
        await conn.execute(sql.SQL("CREATE ROLE {} LOGIN CONNECTION LIMIT {}").format(sql.Identifier(role), LIMIT))
        await conn.execute(sql.SQL("CREATE DATABASE {} OWNER {} CONNECTION LIMIT {}").format(
            sql.Identifier(role), sql.Identifier(role), LIMIT))  # fmt: skip
    return role, f"postgresql+psycopg://{role}@{postgres.host}:{postgres.port}/{role}"


def _conninfo(url: str) -> str:
    return postgres_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _stream(http: httpx.AsyncClient, app: str, n: int) -> list[tuple[str, dict[str, Any]]]:
    path = f"/api/v1/apps/{app}/users/u{n}/sessions/s{n}/messages/stream"
    received = []
    async with aconnect_sse(http, "POST", path, json={"text": "go", "partial": True}) as source:
        assert source.response.status_code == 200, await source.response.aread()
        async for sse in source.aiter_sse():
            if not sse.data:  # a keep-alive comment, which httpx_sse reports with the last event id
                continue
            received.append((sse.event, json.loads(sse.data)))
    return received


@pytest.mark.parametrize("streams", [
    80,  # twice the connection limit: enough to show the sharing, in the default run
    pytest.param(STREAMS, marks=pytest.mark.scale),  # the full size (pytest -m scale): minutes on 2 cores
])
async def test_sse_streams_share_one_listen_connection_under_a_40_connection_postgres(
    temporal_server: TemporalDevServer, postgres: EmbeddedPostgres, streams: int
) -> None:
    role, url = await _limited_database(postgres)
    await migrate(url)
    app = App(name=f"scale_{uuid.uuid4().hex[:6]}", root_agent=LlmAgent(name="poet", model=_SlowWords()))
    client = await connect(temporal_server.address, namespace=temporal_server.namespace)
    task_queue = f"adk-scale-{uuid.uuid4().hex[:8]}"
    worker_engine = open_engine(url, pool_size=5, max_overflow=5)  # the worker's share of the 40
    worker = build_worker(client, [app], task_queue=task_queue, session_service=DatabaseSessionService(worker_engine))
    run = asyncio.create_task(worker.run())
    backend = ApiBackend.open(AdkClient(client, task_queue=task_queue), url, apps=[AppInfo(name=app.name)])
    peak = {"connections": 0, "listening": 0}
    sampling = True

    async def sample() -> None:  # as the superuser, which the limit does not count
        async with await psycopg.AsyncConnection.connect(_conninfo(postgres.url), autocommit=True) as conn:
            while sampling:
                row = await (await conn.execute(
                    "SELECT count(*), count(*) FILTER (WHERE query LIKE 'LISTEN%%') FROM pg_stat_activity "
                    "WHERE usename = %s", (role,))).fetchone()  # fmt: skip
                assert row is not None
                peak["connections"] = max(peak["connections"], row[0])
                peak["listening"] = max(peak["listening"], row[1])
                await asyncio.sleep(0.05)

    sampler = asyncio.create_task(sample())
    try:
        async with serving(None, port=0, api=backend, page=False) as base:
            limits = httpx.Limits(max_connections=streams + 10, max_keepalive_connections=streams + 10)
            async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as http:
                started = time.monotonic()
                async with asyncio.timeout(240):
                    results = await asyncio.gather(*(_stream(http, app.name, n) for n in range(streams)))
                elapsed = time.monotonic() - started
        for received in results:
            kinds = [kind for kind, _ in received]
            assert kinds == ["start", *["partial"] * len(WORDS), "event", "done"], received[-1]
            assert [e["content"]["parts"][0]["text"] for kind, e in received if kind == "partial"] == WORDS
            assert received[-1][1]["final_text"] == "".join(WORDS)
        print(f"{streams} streams in {elapsed:.1f} s; peak {peak['connections']} connections of the role, "
              f"{peak['listening']} listening")  # fmt: skip
        assert peak["listening"] == 1, peak
        assert 0 < peak["connections"] <= LIMIT, peak
    finally:
        sampling = False
        await asyncio.gather(sampler, return_exceptions=True)
        await backend.close()
        await asyncio.wait_for(worker.shutdown(), timeout=60)
        await asyncio.wait_for(asyncio.gather(run, return_exceptions=True), timeout=10)
        await worker_engine.dispose()
