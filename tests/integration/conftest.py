"""The durable stack for integration tests: a worker on the session's Temporal dev server, with
sessions in a fresh database of the session's embedded Postgres."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest_asyncio

from adk_core import App
from adk_core.memory import MemoryService
from adk_core.sessions import SessionService
from adk_temporal.worker import AdkWorker, build_worker
from adkt.client import AdkClient, connect
from adkt.embedded import EmbeddedPostgres, TemporalDevServer
from adkt.services import open_services

EVAL_SUITES = ["examples", "tests.integration"]
"""Where the eval suites the integration tests run live (examples.eval_chest_pain, tests.integration.eval_apps)."""


@dataclass
class DurableStack:
    client: AdkClient
    sessions: SessionService
    task_queue: str
    database_url: str
    address: str
    worker: AdkWorker
    memory: MemoryService

    def register(self, app: App) -> App:
        """Serve ``app`` from the stack's worker (apps are added while the worker runs)."""
        return self.worker.register(app)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def durable_stack(temporal_server: TemporalDevServer, postgres: EmbeddedPostgres) -> AsyncIterator[DurableStack]:
    url = await postgres.create_database(f"durable_{uuid.uuid4().hex[:8]}")
    client = await connect(temporal_server.address, namespace=temporal_server.namespace, database_url=url)
    task_queue = f"adk-test-{uuid.uuid4().hex[:8]}"
    async with open_services(url) as services:
        # The eval suites the tests start by reference: a worker imports no suite it did not register.
        worker = build_worker(client, [], task_queue=task_queue, eval_suites=EVAL_SUITES, **services)
        run = asyncio.create_task(worker.run())
        try:
            yield DurableStack(
                client=AdkClient(client, task_queue=task_queue),
                sessions=services["session_service"],
                task_queue=task_queue,
                database_url=url,
                address=temporal_server.address,
                worker=worker,
                memory=services["memory_service"],
            )
        finally:
            # Bounded: a worker that does not stop fails the session loudly instead of hanging it.
            await asyncio.wait_for(worker.shutdown(), timeout=60)
            await asyncio.wait_for(asyncio.gather(run, return_exceptions=True), timeout=10)
