"""Where the commands find Temporal and Postgres: configured, a running `adkt dev`, or started here.

Order of precedence for each address: the command-line option, then the environment (Temporal's
envconfig for Temporal, ADK_DATABASE_URL for Postgres), then the `dev.json` a running `adkt dev`
wrote into the .adk folder. With none of these, `run` and `chat` start an embedded stack for the
duration of the command (`embedded_stack`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from temporalio.worker import Worker

from adk_core import App
from adkt.client import AdkClient, connect
from adkt.embedded import TEMPORAL_DEV_ARGS, EmbeddedPostgres, TemporalDevServer
from adkt.services import open_services
from adkt.settings import Settings, configured_temporal_address
from worker import build_worker

DEV_STATE_FILE = "dev.json"


@dataclass
class DevState:
    """What a running `adkt dev` tells the other commands (`.adk/dev.json`)."""

    address: str
    database_url: str
    task_queue: str
    namespace: str = "default"
    ui_url: str | None = None
    apps: list[str] = field(default_factory=list)
    pid: int = 0

    def write(self, adk_dir: Path) -> Path:
        path = adk_dir / DEV_STATE_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")
        return path

    @classmethod
    def read(cls, adk_dir: Path) -> DevState | None:
        """The state of a dev stack that is still running, else None (a stale file is ignored)."""
        path = adk_dir / DEV_STATE_FILE
        try:
            state = cls(**json.loads(path.read_text()))
        except FileNotFoundError:
            return None
        return state if _alive(state.pid) and _listening(state.address) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return pid > 0


def _listening(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass
class Target:
    """Resolved addresses; None means nothing configured and no dev stack running."""

    address: str | None
    database_url: str | None
    task_queue: str
    namespace: str | None = None
    dev: DevState | None = None


def resolve(settings: Settings, *, address: str | None = None, database_url: str | None = None) -> Target:
    dev = DevState.read(settings.adk_dir)
    configured = address or configured_temporal_address()
    if configured is None and dev is not None:
        return Target(dev.address, database_url or settings.database_url or dev.database_url,
                      dev.task_queue, dev.namespace, dev)  # fmt: skip
    return Target(configured, database_url or settings.database_url or (dev.database_url if dev else None),
                  settings.task_queue)  # fmt: skip


@dataclass
class Stack:
    """A running embedded stack: Temporal dev server, sessions database and an in-process worker."""

    temporal: TemporalDevServer
    database_url: str
    client: AdkClient
    worker: Worker
    worker_task: asyncio.Task[None]


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
) -> AsyncIterator[Stack]:
    """Start Temporal (headless and in memory unless `ui_port` / `temporal_dir`), an embedded Postgres
    (unless `database_url`), migrations and a worker for `apps`; stop all of it, in reverse, on exit."""
    temporal = TemporalDevServer(
        port=port, ui_port=ui_port or 0, headless=ui_port is None, data_dir=temporal_dir, extra_args=TEMPORAL_DEV_ARGS
    )
    postgres = None if database_url else EmbeddedPostgres(postgres_dir or settings.adk_dir / "postgres")
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
        worker = build_worker(client, apps, task_queue=settings.task_queue, **services)
        worker_task = asyncio.create_task(worker.run())

        async def stop_worker() -> None:
            if not worker_task.done():
                await worker.shutdown()
            await asyncio.gather(worker_task, return_exceptions=True)

        stack.push_async_callback(stop_worker)
        yield Stack(temporal, url, AdkClient(client, task_queue=settings.task_queue), worker, worker_task)


@contextlib.asynccontextmanager
async def app_client(
    apps: Sequence[App], settings: Settings, *, address: str | None = None, database_url: str | None = None,
    on_embedded: Callable[[], None] | None = None,
) -> AsyncIterator[AdkClient]:
    """A client of the configured Temporal (or a running `adkt dev`); with neither, of an embedded
    stack that serves `apps` and lives as long as this context."""
    target = resolve(settings, address=address, database_url=database_url)
    if target.address is not None:
        yield AdkClient(await connect(target.address, namespace=target.namespace), task_queue=target.task_queue)
        return
    if on_embedded is not None:
        on_embedded()
    async with embedded_stack(apps, settings, database_url=target.database_url) as stack:
        yield stack.client


async def wait_for_signal(*tasks: asyncio.Future[object]) -> None:
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
