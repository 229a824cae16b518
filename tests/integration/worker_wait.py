"""Waiting (bounded) for a worker to show as polling its task queue, for tests that start eval
suites through the HTTP API (which refuses a queue nobody polls)."""

from __future__ import annotations

import asyncio

from adkt.web.api.backend import ApiBackend


async def worker_polls(backend: ApiBackend, queue: str, timeout: float = 20.0) -> None:
    """A worker started a moment ago is not listed as a poller yet: wait until it is."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await backend.has_worker(queue):
        if loop.time() > deadline:
            raise AssertionError(f"no worker polled {queue!r} within {timeout} s")
        await asyncio.sleep(0.1)
