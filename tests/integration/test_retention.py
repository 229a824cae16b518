"""Retention on a real Temporal Schedule and Postgres: one pass removes old stream chunks, old eval
runs and old payloads no history references, and keeps everything newer or still referenced."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import timedelta

import pytest
import sqlalchemy as sa

from adk_core.sql import migrate, open_engine
from adk_core.sql.schema import eval_runs, payloads, stream_chunks
from adk_temporal.retention import (
    SCHEDULE_ID,
    RetentionInput,
    RetentionResult,
    install_schedule,
    retention_worker,
)
from adkt.client import connect
from adkt.embedded import TemporalDevServer

pytestmark = pytest.mark.integration
DAY = 86400.0


async def test_a_scheduled_pass_prunes_what_is_old_and_unreferenced(
    temporal_server: TemporalDevServer, database_url: str
) -> None:
    await migrate(database_url)
    engine = open_engine(database_url)
    client = await connect(temporal_server.address, namespace=temporal_server.namespace, database_url=database_url)
    now, old = time.time(), time.time() - 2 * DAY
    async with engine.begin() as conn:
        await conn.execute(sa.insert(stream_chunks), [
            {"stream_id": sid, "call": 0, "attempt": 0, "seq": 0, "after_events": 0, "kind": "start", "event": {},
             "create_time": at} for sid, at in (("old-stream", old), ("new-stream", now))])
        await conn.execute(sa.insert(eval_runs), [
            {"run_id": rid, "suite": "s", "mode": "durable", "status": "completed", "start_time": at}
            for rid, at in (("old-run", old), ("new-run", now))])
        await conn.execute(sa.insert(payloads), [
            {"sha256": "0" * 64, "data": b"old, unreferenced", "size": 1, "create_time": old},
            {"sha256": "1" * 64, "data": b"new, unreferenced", "size": 1, "create_time": now}])
    # A workflow whose input is stored out of band (> 256 KiB): its history references the payload.
    # No worker serves its type, so it stays open; terminated at the end.
    referencing = await client.start_workflow(
        "NoSuchWorkflow", "x" * 300_000, id=f"retention-ref-{uuid.uuid4().hex[:6]}", task_queue="nobody-polls")
    async with engine.begin() as conn:
        referenced = set((await conn.execute(sa.select(payloads.c.sha256).where(payloads.c.size > 250_000))).scalars())
        assert referenced, "the large input was not stored out of band"
        await conn.execute(sa.update(payloads).values(create_time=old))  # every payload is old now

    queue = f"retention-{uuid.uuid4().hex[:6]}"
    await install_schedule(client, task_queue=queue, every=timedelta(days=1),
                           input=RetentionInput(stream_chunk_age=DAY, eval_run_age=DAY, payload_age=DAY))
    handle = client.get_schedule_handle(SCHEDULE_ID)
    try:
        await install_schedule(client, task_queue=queue, every=timedelta(hours=12),  # again: an update
                               input=RetentionInput(stream_chunk_age=DAY, eval_run_age=DAY, payload_age=DAY))
        assert (await handle.describe()).schedule.spec.intervals[0].every == timedelta(hours=12)
        async with retention_worker(client, engine, task_queue=queue):
            await handle.trigger()
            deadline = time.monotonic() + 30
            while not (actions := (await handle.describe()).info.recent_actions):
                assert time.monotonic() < deadline, "the schedule started no pass"
                await asyncio.sleep(0.2)
            run = client.get_workflow_handle(actions[-1].action.workflow_id, result_type=RetentionResult)
            result = await asyncio.wait_for(run.result(), timeout=60)
        assert isinstance(result, RetentionResult)
        assert (result.stream_chunks, result.eval_runs, result.payloads) == (1, 1, 2)
        assert result.histories_read >= 1
    finally:
        await handle.delete()
        await referencing.terminate("test over")
    async with engine.connect() as conn:
        assert set((await conn.execute(sa.select(stream_chunks.c.stream_id))).scalars()) == {"new-stream"}
        assert set((await conn.execute(sa.select(eval_runs.c.run_id))).scalars()) == {"new-run"}
        assert set((await conn.execute(sa.select(payloads.c.sha256))).scalars()) == referenced
    await engine.dispose()
