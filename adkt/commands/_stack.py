"""Embedded stacks: Temporal dev server, Postgres and an in-process worker, started and stopped together.

`run` and `chat` start one for the duration of the command when nothing is configured (see
_devstate.resolve); `adkt dev` runs one until Ctrl-C.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from adk_core import App
from adk_temporal.worker import DEFAULT_GRACEFUL_SHUTDOWN, AdkWorker, build_worker
from adkt.client import AdkClient, connect
from adkt.embedded import TEMPORAL_DEV_ARGS, EmbeddedPostgres, TemporalDevServer
from adkt.services import open_services
from adkt.settings import Settings


@dataclass
class Stack:
    """A running embedded stack: Temporal dev server, sessions database and an in-process worker."""

    temporal: TemporalDevServer
    database_url: str
    client: AdkClient
    worker: AdkWorker
    worker_task: asyncio.Task[None]
    build: Callable[[Sequence[App]], AdkWorker]
    """Builds a worker for some apps on this stack's client and stores."""

    async def stop_worker(self) -> None:
        if not self.worker_task.done():
            await self.worker.shutdown()
        await asyncio.gather(self.worker_task, return_exceptions=True)

    async def restart_worker(self, apps: Sequence[App]) -> None:
        """Replace the worker with one for `apps` (`adkt dev --reload`); Temporal and Postgres keep
        running, and what the old worker had in flight is retried on the new one by Temporal."""
        await self.stop_worker()
        self.worker = self.build(apps)
        self.worker_task = asyncio.create_task(self.worker.run())


@contextlib.asynccontextmanager
async def embedded_stack(
    apps: Sequence[App],
    settings: Settings,
    *,
    database_url: str | None = None,
    port: int = 0,
    ui_port: int | None = None,
    temporal_dir: Path | None = None,
    postgres_dir: Path | None = None,
    temporal_args: Sequence[str] = (),
    eval_suites: Sequence[str] = (),
    graceful_shutdown: timedelta = DEFAULT_GRACEFUL_SHUTDOWN,
) -> AsyncIterator[Stack]:
    """Start Temporal (headless and in memory unless `ui_port` / `temporal_dir`), an embedded Postgres
    (unless `database_url`), migrations and a worker for `apps`; stop all of it, in reverse, on exit.
    `eval_suites`: the modules whose eval suites the worker may import (build_worker).
    `graceful_shutdown`: how long the worker lets in-flight activities finish when the stack stops."""
    temporal = TemporalDevServer(
        port=port, ui_port=ui_port or 0, headless=ui_port is None, data_dir=temporal_dir,
        extra_args=(*TEMPORAL_DEV_ARGS, *temporal_args),
    )
    # shared: a second `adkt run` (or `adkt sessions`) uses the Postgres the first one started there.
    postgres = None if database_url else EmbeddedPostgres(postgres_dir or settings.adk_dir / "postgres", shared=True)
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(temporal.stop)
        starts = [temporal.start()]
        if postgres is not None:
            stack.push_async_callback(postgres.stop)
            starts.append(postgres.start())
        # Both servers take a second or two to come up; start them side by side.
        results = await asyncio.gather(*starts, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        url = database_url or postgres.url  # type: ignore[union-attr]
        client = await connect(temporal.address, namespace=temporal.namespace)
        services = await stack.enter_async_context(open_services(url))

        def build(served: Sequence[App]) -> AdkWorker:
            return build_worker(client, served, task_queue=settings.task_queue, serve_eval_suites=True,
                                eval_suites=eval_suites, graceful_shutdown=graceful_shutdown, **services)

        worker = build(apps)
        running = Stack(temporal, url, AdkClient(client, task_queue=settings.task_queue, database_url=url), worker,
                        asyncio.create_task(worker.run()), build)  # fmt: skip
        stack.push_async_callback(running.stop_worker)
        yield running


async def wait_for_signal(*tasks: asyncio.Future[Any]) -> None:
    """Wait for SIGINT/SIGTERM, or until one of `tasks` ends (a worker that failed)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    signals = (signal.SIGINT, signal.SIGTERM)
    for sig in signals:
        loop.add_signal_handler(sig, stop.set)
    waiter = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        for sig in signals:
            loop.remove_signal_handler(sig)
    for task in tasks:
        if task.done() and not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
