"""Serving a small ASGI app beside a worker or the dev stack (the health probes, the codec server)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from starlette.requests import Request

from adk_core.errors import ConfigurationError


@contextlib.asynccontextmanager
async def serving_asgi(app: Any, *, host: str, port: int, what: str, fix: str) -> AsyncIterator[str]:
    """Serve ``app`` on ``host:port`` (0: any free port) while the block runs; yields its base URL.

    The socket is bound here, so a taken port is a ConfigurationError naming ``what`` and ``fix``
    rather than uvicorn's ``sys.exit`` inside a task; stopping waits at most 10 s."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise ConfigurationError(f"the {what} cannot listen on {host}:{port} ({e.strerror}); {fix}") from None
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()  # raises why it stopped
                raise ConfigurationError(f"the {what} on {host}:{port} stopped while starting")
            await asyncio.sleep(0.02)
        yield f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), timeout=10)
        sock.close()


async def read_at_most(request: Request, limit: int) -> bytes | None:
    """The request's body, or None when it is larger than ``limit`` bytes: a numeric Content-Length
    over it is refused before anything is read, and a body streamed beyond it stops being read there
    (a Content-Length that is no number is left to the bounded read). Shared by the codec server and
    the web app (adkt/web/body.py), which say what a refusal means to their callers."""
    try:
        if int(request.headers.get("content-length") or 0) > limit:
            return None
    except ValueError:
        pass
    received = bytearray()
    async for chunk in request.stream():
        received += chunk
        if len(received) > limit:
            return None
    return bytes(received)
