"""Where an MCP server is: a command this process starts (stdio) or a URL (streamable HTTP).

Plain data, importable without the ``mcp`` package; the connection reads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta


@dataclass(frozen=True)
class StdioServer:
    """An MCP server this process starts and talks to over stdin/stdout.

    The process belongs to the worker (or the in-process program) that uses the toolset: it is
    started on first use, started again when it dies, and stopped by ``McpToolset.close()`` (a
    worker closes its apps' toolsets when it shuts down).

    Args:
        command: the executable, e.g. ``"npx"`` or ``sys.executable``.
        args: its arguments.
        env: extra environment variables (API keys, config). The process gets only a small safe
            set of the parent's variables (HOME, PATH, ...) plus these.
        cwd: its working directory (default: this process's).
    """

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None

    def label(self) -> str:
        return " ".join([self.command, *self.args])


@dataclass(frozen=True)
class HttpServer:
    """An MCP server reached over streamable HTTP.

    Args:
        url: the MCP endpoint, e.g. ``"https://example.com/mcp"``.
        headers: sent with every request (``{"Authorization": "Bearer ..."}``).
        timeout: connect/write timeout of each HTTP request (a call's own bound is the toolset's
            ``call_timeout``).
    """

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: timedelta = timedelta(seconds=30)

    def label(self) -> str:
        return self.url


McpServer = StdioServer | HttpServer
