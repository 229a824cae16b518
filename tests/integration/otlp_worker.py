"""A worker process for test_tracing_otlp: an app with tracing on, exporting with OTLP; with
``no-cache``, no workflow cache (every workflow task replays the history from the start, as after
an eviction).

    python -m tests.integration.otlp_worker ADDRESS DATABASE_URL TASK_QUEUE MODULE:APP [no-cache]

MODULE:APP names an App, or a function that returns one.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import signal
import sys

from adk_temporal.tracing import configure_tracing
from adk_temporal.worker import build_worker, load_app
from adkt.client import connect
from adkt.services import open_services


async def main(address: str, database_url: str, task_queue: str, app_spec: str, *options: str) -> None:
    provider = configure_tracing("traced-worker")
    module, _, attr = app_spec.partition(":")
    factory = getattr(importlib.import_module(module), attr)
    app = factory() if inspect.isfunction(factory) else load_app(app_spec)  # an App, or a function making one
    cache = {"max_cached_workflows": 0} if "no-cache" in options else {}
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


def crash_app_fast_heartbeat() -> object:
    """tests/integration/crash_app.py's app with a 2 s model heartbeat timeout (10 s by default), so
    the killed worker's model call is retried sooner."""
    from datetime import timedelta

    from adk_core import AgentExecution, App, LlmAgent
    from adk_core.tools import FunctionTool
    from adk_core.tools.execution import ToolExecution
    from tests.integration import crash_app

    agent = LlmAgent(
        name="crasher", model=crash_app.SlowOnceModel(), instruction="Run the slow step, then add.",
        tools=[FunctionTool(crash_app.slow_step, execution=ToolExecution(retry=crash_app.FAST_RETRY)), crash_app.add],
        execution=AgentExecution(model_heartbeat_timeout=timedelta(seconds=2)),
    )
    return App(name=crash_app.app.name, root_agent=agent)
