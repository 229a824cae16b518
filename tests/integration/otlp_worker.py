"""A worker process for test_tracing_otlp: an app with tracing on, exporting with OTLP; with
``no-cache``, no workflow cache (every workflow task replays the history from the start, as after
an eviction); with ``held-until=PATH``, a standby worker: it imports and loads the app, then waits
(standby_worker.wait_for_go: at most 120 s) for PATH to exist before it connects to Temporal.

    python -m tests.integration.otlp_worker ADDRESS DATABASE_URL TASK_QUEUE MODULE:APP [no-cache] [held-until=PATH]

MODULE:APP names an App, or a function that returns one.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import signal
import sys
from pathlib import Path

from adk_temporal.tracing import configure_tracing
from adk_temporal.worker import build_worker, load_app
from adkt.client import connect
from adkt.services import open_services
from tests.integration.standby_worker import wait_for_go


async def main(address: str, database_url: str, task_queue: str, app_spec: str, *options: str) -> None:
    provider = configure_tracing("traced-worker")
    module, _, attr = app_spec.partition(":")
    factory = getattr(importlib.import_module(module), attr)
    app = factory() if inspect.isfunction(factory) else load_app(app_spec)  # an App, or a function making one
    cache = {"max_cached_workflows": 0} if "no-cache" in options else {}
    for option in options:
        if option.startswith("held-until="):
            wait_for_go(Path(option.partition("=")[2]))  # nothing else runs before the worker connects
    client = await connect(address)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, stop.set)
    async with open_services(database_url) as services:
        worker = build_worker(client, [app], task_queue=task_queue, tracing=True, **cache, **services)
        run = asyncio.create_task(worker.run())
        print("worker running", flush=True)
        await stop.wait()
        await worker.shutdown()
        await asyncio.gather(run, return_exceptions=True)
    provider.shutdown()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))

