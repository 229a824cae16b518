"""The retention activity (docs/security.md, "Retention"): old streamed partials, old eval runs, and
stored payloads no history references any more. Run by workflows.retention on a Temporal Schedule."""

from __future__ import annotations

import time

from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio import activity
from temporalio.client import Client

from adk_core.sql.retention import prune_eval_runs, prune_payloads, prune_stream_chunks
from adk_temporal.workflows.retention import RETENTION, RetentionInput, RetentionResult


class RetentionActivities:
    """Holds the Temporal client (to read which payloads histories reference) and the database."""

    def __init__(self, client: Client, engine: AsyncEngine) -> None:
        self.client = client
        self.engine = engine

    @activity.defn(name=RETENTION)
    async def prune(self, input: RetentionInput) -> RetentionResult:
        now = time.time()
        chunks = runs = stored = read = 0
        if input.stream_chunk_age is not None:
            chunks = await prune_stream_chunks(self.engine, before=now - input.stream_chunk_age)
        if input.eval_run_age is not None:
            runs = await prune_eval_runs(self.engine, before=now - input.eval_run_age)
        if input.payload_age is not None:
            from adk_temporal.deletion import history_payload_keys  # noqa: PLC0415  (reads histories: client side)

            # Listed after the age cut-off is taken: a payload older than it was stored before any
            # history that references it could be listed here, so it is seen.
            before = now - input.payload_age
            referenced: set[str] = set()
            async for execution in self.client.list_workflows(""):
                referenced |= await history_payload_keys(self.client, execution.id, execution.run_id)
                read += 1
                activity.heartbeat(read)
            stored = await prune_payloads(self.engine, before=before, referenced=referenced)
        return RetentionResult(stream_chunks=chunks, eval_runs=runs, payloads=stored, histories_read=read)
