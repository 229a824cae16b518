"""Server-sent events: keeping a quiet stream open."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from .routes import Sse

KEEPALIVE_SECONDS = 15.0
"""An SSE comment this often while a turn is quiet, so proxies keep the connection open."""


async def with_keepalive(source: AsyncIterator[Sse], every: float = KEEPALIVE_SECONDS) -> AsyncIterator[Sse | None]:
    """``source``'s items, and None (a keep-alive comment) whenever it is quiet for ``every`` seconds.
    The source is read in its own task: timing out a wait on the generator itself would close it."""
    queue: asyncio.Queue[tuple[bool, Sse | BaseException | None]] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for item in source:
                queue.put_nowait((False, item))
        except BaseException as e:  # noqa: BLE001 - handed to the reader, re-raised there
            queue.put_nowait((True, e))
            return
        queue.put_nowait((True, None))

    reader = asyncio.create_task(pump())
    try:
        while True:
            try:
                ended, item = await asyncio.wait_for(queue.get(), every)
            except TimeoutError:
                yield None
                continue
            if ended:
                if isinstance(item, BaseException):
                    raise item
                return
            yield item  # type: ignore[misc]
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
