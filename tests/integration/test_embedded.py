"""The embedded dev services (adkt.embedded) through the session fixtures, plus extra instances."""

from __future__ import annotations

import asyncio
import socket
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from temporalio import activity, workflow
from temporalio.api.workflowservice.v1 import GetSystemInfoRequest
from temporalio.client import Client
from temporalio.worker import Worker

from adkt.embedded import EmbeddedPostgres, EmbeddedServerError, TemporalDevServer

pytestmark = pytest.mark.integration


@activity.defn
async def shout(word: str) -> str:
    return word.upper()


@workflow.defn(sandboxed=False)
class ShoutWorkflow:
    @workflow.run
    async def run(self, word: str) -> str:
        return await workflow.execute_activity(shout, word, start_to_close_timeout=timedelta(seconds=10))


async def test_temporal_runs_a_workflow_with_an_activity(
    temporal_server: TemporalDevServer, temporal_client: Client
) -> None:
    assert temporal_server.ui_url is None  # headless
    task_queue = f"test-embedded-{uuid.uuid4()}"
    async with Worker(temporal_client, task_queue=task_queue, workflows=[ShoutWorkflow], activities=[shout]):
        result = await temporal_client.execute_workflow(
            ShoutWorkflow.run, "durable", id=f"shout-{uuid.uuid4()}", task_queue=task_queue
        )
    assert result == "DURABLE"


async def _scalar(url: str, query: str) -> object:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            return (await conn.execute(text(query))).scalar_one()
    finally:
        await engine.dispose()


async def test_postgres_answers_through_sqlalchemy(postgres: EmbeddedPostgres) -> None:
    assert postgres.url.startswith("postgresql+psycopg://postgres@127.0.0.1:")
    assert postgres.url.endswith("/adk")
    assert await _scalar(postgres.url, "SELECT 1") == 1


async def test_database_url_is_a_fresh_isolated_database(
    postgres: EmbeddedPostgres, database_url: str
) -> None:
    assert database_url != postgres.url
    engine = create_async_engine(database_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(text("CREATE TABLE only_here (id int)"))
    finally:
        await engine.dispose()
    assert await _scalar(database_url, "SELECT count(*) FROM pg_tables WHERE tablename = 'only_here'") == 1
    assert await _scalar(postgres.url, "SELECT count(*) FROM pg_tables WHERE tablename = 'only_here'") == 0
    # Creating it again is a no-op that returns the same URL.
    assert await postgres.create_database(database_url.rsplit("/", 1)[-1]) == database_url


async def test_second_instances_run_beside_the_session_ones(
    tmp_path: Path, temporal_server: TemporalDevServer, postgres: EmbeddedPostgres
) -> None:
    temporal = TemporalDevServer(port=0, headless=True, data_dir=tmp_path / "temporal")
    pg = EmbeddedPostgres(tmp_path / "postgres", durable=False, database="other")
    await asyncio.gather(temporal.start(), pg.start())
    try:
        assert temporal.address != temporal_server.address
        assert pg.port != postgres.port
        assert await _scalar(pg.url, "SELECT current_database()") == "other"
        client = await Client.connect(temporal.address)
        assert (await client.workflow_service.get_system_info(GetSystemInfoRequest())).server_version
    finally:
        temporal_proc, pg_proc = temporal._proc, pg._proc
        await asyncio.gather(temporal.stop(), pg.stop())
    assert temporal_proc is not None and temporal_proc.returncode == 0  # SIGTERM was enough
    assert pg_proc is not None and pg_proc.returncode == 0  # fast shutdown was enough
    assert (tmp_path / "temporal" / "temporal.db").exists()
    await temporal.stop()  # stopping twice is harmless


async def test_a_picked_port_taken_before_the_server_binds_it_is_picked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from adkt.embedded import temporal as embedded_temporal

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()  # what another process starting at that moment looks like to the dev server
    picks: list[int] = []
    real_claim = embedded_temporal._claim_port

    def claim(host: str, port: int, what: str) -> int:
        picked = taken.getsockname()[1] if not picks else real_claim(host, port, what)
        picks.append(picked)
        return picked

    monkeypatch.setattr(embedded_temporal, "_claim_port", claim)
    server = TemporalDevServer(port=0, headless=True)
    try:
        await asyncio.wait_for(server.start(), timeout=60)
        assert len(picks) == 2 and server.port == picks[1] != picks[0]  # the second start, on a new port
        client = await Client.connect(server.address)
        assert (await client.workflow_service.get_system_info(GetSystemInfoRequest())).server_version
    finally:
        await server.stop()
        taken.close()

    chosen = TemporalDevServer(port=picks[0], headless=True)  # a port the caller chose is not picked again
    taken = socket.socket()
    taken.bind(("127.0.0.1", picks[0]))
    taken.listen()
    try:
        with pytest.raises(EmbeddedServerError, match="in use"):
            await chosen.start()
    finally:
        taken.close()
