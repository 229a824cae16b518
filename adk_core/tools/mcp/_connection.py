"""One process's connection to one MCP server: opened on first use, opened again after the server
went away, closed (bounded) by its owner.

The ``mcp`` client is built from async context managers (the transport, the session) that must be
entered and left in one task, so each live connection runs in a task of its own (``_Live.run``)
and callers share its session. Between the transport and the session sits a relay that notices
when the server is gone (a stdio process that exited, an HTTP transport error): it then ends the
session's stream, which fails the calls in flight at once instead of at their timeout, and marks
the connection dead so the next call starts the server again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

import anyio
import httpx
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import ClientSession, McpError, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

from ._errors import McpCallError, McpUnavailableError
from ._servers import HttpServer, McpServer, StdioServer

logger = logging.getLogger(__name__)
T = TypeVar("T")

CONNECTION_CLOSED = -32000  # mcp.shared.exceptions: the session's stream ended with the call in flight
REQUEST_TIMEOUT = 408  # what ClientSession raises when a call outlives its read timeout
MAX_LIST_PAGES = 100
"""Pages of tools/list read at most: a server whose cursor never ends is refused, not followed forever."""


class McpConnection:
    """A shared, self-healing connection to one MCP server, and the server's tool list.

    The tool list is fetched once and kept until ``refresh_tools`` or until the server says it
    changed (``notifications/tools/list_changed``).
    """

    def __init__(
        self, server: McpServer, *, connect_timeout: timedelta, list_timeout: timedelta = timedelta(minutes=1)
    ) -> None:
        self.server = server
        self._connect_timeout = connect_timeout
        self._list_timeout = list_timeout
        """How long listing the tools (all pages) may take: the toolset's call_timeout."""
        self._lock = asyncio.Lock()
        self._live: _Live | None = None
        self._tools: list[types.Tool] | None = None
        self.starts = 0
        """How many times the server was connected (started, for stdio): 1 + restarts."""

    @property
    def label(self) -> str:
        return self.server.label()

    async def list_tools(self, *, refresh: bool = False) -> list[types.Tool]:
        if self._tools is not None and not refresh:
            return self._tools

        async def all_pages(session: ClientSession) -> list[types.Tool]:
            # Bounded in time and pages: the SDK's tools/list has no read timeout, so a server that
            # never answers it would hold the turn (durably: each attempt until start_to_close).
            tools: list[types.Tool] = []
            cursor: str | None = None
            try:
                async with asyncio.timeout(self._list_timeout.total_seconds()):
                    for _ in range(MAX_LIST_PAGES):
                        page = await (session.list_tools(cursor=cursor) if cursor else session.list_tools())
                        tools.extend(page.tools)
                        cursor = page.nextCursor
                        if not cursor:
                            return tools
            except TimeoutError:
                raise self._unlisted() from None
            raise McpCallError(
                f"MCP server {self.label!r} lists its tools in more than {MAX_LIST_PAGES} pages (a cursor "
                "that never ends?); fix the server's tools/list pagination"
            )

        tools = await self._request("listing its tools", all_pages, self._list_timeout)
        self._tools = tools
        return tools

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, meta: dict[str, Any], timeout: timedelta
    ) -> types.CallToolResult:
        async def call(session: ClientSession) -> types.CallToolResult:
            # After the call the SDK lists the tools (without a timeout) when this session has not
            # yet, to check the result against the tool's output schema: bounded as a listing is.
            try:
                async with asyncio.timeout((timeout + self._list_timeout).total_seconds()):
                    return await session.call_tool(name, arguments, read_timeout_seconds=timeout, meta=meta)
            except TimeoutError:  # the call itself outliving its timeout is an McpError (REQUEST_TIMEOUT)
                raise self._unlisted(f" to check the answer of tool {name!r}") from None

        return await self._request(f"calling tool {name!r}", call, timeout)

    async def _request(
        self, doing: str, make: Callable[[ClientSession], Awaitable[T]], timeout: timedelta | None
    ) -> T:
        live = await self._connected()
        try:
            return await live.request(make)
        except McpError as error:
            raise self._error(doing, error, timeout, live) from None
        except _Gone:
            raise self._gone(doing) from None

    async def close(self, timeout: timedelta = timedelta(seconds=10)) -> None:
        """Stop the server (stdio) or end the HTTP session. Bounded: past ``timeout`` the task is cancelled."""
        async with self._lock:
            live, self._live = self._live, None
        if live is not None:
            await live.stop(timeout)

    def _forget_tools(self) -> None:
        self._tools = None

    async def _connected(self) -> _Live:
        async with self._lock:
            live = self._live
            if live is not None and live.dead:
                logger.warning("MCP server %s went away; connecting again", self.label)
                await live.stop(timedelta(seconds=5))
                live = self._live = None
            if live is None:
                live = _Live(self.server, on_tools_changed=self._forget_tools)
                await live.start(self._connect_timeout)
                self._live = live
                self.starts += 1
            return live

    def _error(self, doing: str, error: McpError, timeout: timedelta | None, live: _Live) -> Exception:
        code = error.error.code
        if code == CONNECTION_CLOSED:
            live.dead = True
            return self._gone(doing)
        if code == REQUEST_TIMEOUT:
            return McpUnavailableError(
                f"MCP server {self.label!r} did not answer within {timeout} while {doing}; raise the "
                "toolset's call_timeout if the tool is slow"
            )
        return McpCallError(f"MCP server {self.label!r} refused {doing}: {error.error.message} (code {code})")

    def _unlisted(self, why: str = "") -> McpUnavailableError:
        return McpUnavailableError(
            f"MCP server {self.label!r} did not list its tools{why} within {self._list_timeout} (tools/list "
            "got no answer); raise the toolset's call_timeout if the server is slow to list them"
        )

    def _gone(self, doing: str) -> McpUnavailableError:
        return McpUnavailableError(
            f"MCP server {self.label!r} went away while {doing} (its process exited or the connection "
            "dropped); it is started again on the next call"
        )


class _Gone(Exception):  # noqa: N818  (a signal between _Live and McpConnection)
    """The connection ended with a request in flight."""


class _Live:
    """One open connection: its task, its session, and whether the server is gone."""

    def __init__(self, server: McpServer, *, on_tools_changed: Any) -> None:
        self._server = server
        self._on_tools_changed = on_tools_changed
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.session: ClientSession | None = None
        self.dead = False
        self.ended = asyncio.Event()
        """Set when the connection's task ends: the transport failed or the connection was stopped."""

    async def request(self, make: Callable[[ClientSession], Awaitable[T]]) -> T:
        """Run one request on the session; raise _Gone if the connection ends first (a failed HTTP
        transport does not answer the requests in flight, so they would wait for their timeout)."""
        assert self.session is not None
        call = asyncio.ensure_future(make(self.session))
        ended = asyncio.ensure_future(self.ended.wait())
        try:
            await asyncio.wait({call, ended}, return_when=asyncio.FIRST_COMPLETED)
            if not call.done():
                await asyncio.wait({call}, timeout=0.5)  # an answer already on its way still counts
            if not call.done():
                raise _Gone()
            return call.result()
        finally:
            ended.cancel()
            call.cancel()

    async def start(self, timeout: timedelta) -> None:
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._run(ready), name=f"mcp {self._server.label()}")
        try:
            await asyncio.wait_for(asyncio.shield(ready), timeout.total_seconds())
        except Exception as error:
            await self.stop(timedelta(seconds=5))
            if isinstance(error, TimeoutError):
                detail = f"it did not finish the MCP handshake within {timeout}"
            else:
                leaf = _first_leaf(error)
                detail = f"{type(leaf).__name__}: {leaf}" if str(leaf) else (
                    "the connection closed before the MCP handshake (did the process exit at once? a stdio "
                    "server's stderr goes to this process's stderr)"
                )
            raise McpUnavailableError(
                f"could not connect to MCP server {self._server.label()!r}: {detail}. Check the command (or "
                "URL) and that the server speaks MCP"
            ) from error

    async def stop(self, timeout: timedelta) -> None:
        self.dead = True
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout.total_seconds())
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(task, 5)

    async def _run(self, ready: asyncio.Future[None]) -> None:
        relay: asyncio.Task[None] | None = None
        try:
            async with self._transport() as (read, write):
                to_session, session_read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
                relay = asyncio.create_task(self._relay(read, to_session))
                async with ClientSession(session_read, write, message_handler=self._on_message) as session:
                    await session.initialize()
                    self.session = session
                    ready.set_result(None)
                    await self._stop.wait()
        except BaseException as error:
            if not ready.done():
                ready.set_exception(error if isinstance(error, Exception) else McpUnavailableError(str(error)))
            elif not self._stop.is_set():
                leaf = _first_leaf(error)
                logger.warning("MCP server %s connection ended: %s: %s", self._server.label(), type(leaf).__name__, leaf)
            if not isinstance(error, Exception):
                raise
        finally:
            self.dead = True
            self.ended.set()
            if relay is not None:
                relay.cancel()
                with contextlib.suppress(BaseException):
                    await relay

    async def _relay(
        self,
        read: MemoryObjectReceiveStream[SessionMessage | Exception],
        to_session: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        async with to_session:
            try:
                async for message in read:
                    if isinstance(message, httpx.TransportError | OSError):
                        logger.warning("MCP server %s unreachable: %s", self._server.label(), message)
                        break
                    await to_session.send(message)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
        # The server is gone (or we are stopping): the session's stream has ended, which fails the
        # calls in flight (CONNECTION_CLOSED). The session is left open until the next call replaces
        # it: leaving it now would cancel the session before it tells those calls.
        self.dead = True

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ToolListChangedNotification
        ):
            self._on_tools_changed()

    @contextlib.asynccontextmanager
    async def _transport(
        self,
    ) -> AsyncIterator[tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]]:
        server = self._server
        if isinstance(server, StdioServer):
            params = StdioServerParameters(
                command=server.command, args=list(server.args), env=dict(server.env), cwd=server.cwd
            )
            async with stdio_client(params) as (read, write):
                yield read, write
        elif isinstance(server, HttpServer):
            seconds = server.timeout.total_seconds()
            # A long read timeout: a call's own bound is its read timeout in the session.
            http = httpx.AsyncClient(headers=dict(server.headers), timeout=httpx.Timeout(seconds, read=None))
            async with http, streamable_http_client(server.url, http_client=http) as (read, write, _session_id):
                yield read, write
        else:
            raise McpCallError(f"unknown MCP server kind {type(server).__name__}; use StdioServer or HttpServer")


def _first_leaf(error: BaseException) -> BaseException:
    """The first real error inside the task groups' ExceptionGroups the mcp client raises."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error
