"""Errors of MCP tools. Both reach the model as the tool's error; they differ in whether a durable
run tries the call again (McpToolset's default ToolExecution retries only McpUnavailableError).

    AdkError
    ├── McpCallError          the server answered the call with an error (an ``isError`` result,
    │                         a JSON-RPC error such as an unknown tool or invalid arguments)
    └── McpUnavailableError   no answer: the server could not be started or reached, died during
                              the call, or did not answer within the call timeout
"""

from __future__ import annotations

from ...errors import AdkError


class McpCallError(AdkError):
    """The MCP server answered with an error. Trying again gives the same answer, so it is not retried."""


class McpUnavailableError(AdkError):
    """The MCP server gave no answer. A durable run retries the call (bounded), with the same
    idempotency key; in-process the model is told and may call again."""
