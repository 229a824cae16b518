"""MCP servers' tools for agents (needs the ``mcp`` extra: ``pip install 'adk-temporal[mcp]'``).

Importing this package does not import ``mcp``; the first connection does.
"""

from ._errors import McpCallError, McpUnavailableError
from ._servers import HttpServer, McpServer, StdioServer
from .toolset import DEFAULT_EXECUTION, IDEMPOTENCY_META_KEY, McpListTools, McpTool, McpToolset

__all__ = [
    "DEFAULT_EXECUTION",
    "IDEMPOTENCY_META_KEY",
    "HttpServer",
    "McpCallError",
    "McpListTools",
    "McpServer",
    "McpTool",
    "McpToolset",
    "McpUnavailableError",
    "StdioServer",
]
