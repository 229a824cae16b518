"""A worker process for test_tracing_otlp: examples/w1.py with tracing on, exporting with OTLP, and
no workflow cache (every workflow task replays the history from the start, as after an eviction).

    python -m tests.integration.otlp_worker ADDRESS DATABASE_URL TASK_QUEUE
"""

from __future__ import annotations

import asyncio
import signal
import sys

from adk_temporal.tracing import configure_tracing
from adk_temporal.worker import build_worker
from adkt.client import connect
from adkt.services import open_services
from examples import w1


async def main(address: str, database_url: str, task_queue: str) -> None:
    provider = configure_tracing("w1-no-cache")
    client = await connect(address)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, stop.set)
    async with open_services(database_url) as services:
        worker = build_worker(client, [w1.app], task_queue=task_queue, tracing=True, max_cached_workflows=0, **services)
        run = asyncio.create_task(worker.run())
        print("worker running", flush=True)
        await stop.wait()
        await worker.shutdown()
        await asyncio.gather(run, return_exceptions=True)
    provider.shutdown()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
