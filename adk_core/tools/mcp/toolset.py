"""McpToolset: the tools of an MCP server, as tools of an agent.

Every exchange with the server goes through the runtime's tool call (``Runtime.run_tool``), so a
durable run makes it in an activity and never in workflow code:

- listing: once per invocation per toolset, the toolset runs its own list tool
  (``McpListTools``); under Temporal that is an ``adk.run_tool`` activity whose result, the
  filtered list, is in the run's history, so a replay sees the tools the turn saw. The worker
  fetches the list from the server once and keeps it (``refresh_tools`` fetches it again).
- calling: each ``McpTool`` call is a tool call like any other (an activity with the toolset's
  ToolExecution: timeouts, heartbeats, bounded retries of McpUnavailableError only), and sends the
  call's idempotency key in the request's ``_meta`` (IDEMPOTENCY_META_KEY), identical on every
  attempt.

On the worker, the tool activity finds an MCP tool by name through ``tool_named``, which maps a
provider-safe name back to the server's own from the worker's kept list; a tool the server no
longer lists is called by its name as is, and the server's answer reaches the model.
"""

from __future__ import annotations

import fnmatch
import json
import threading
import weakref
from collections import OrderedDict
from collections.abc import Collection
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ...errors import ConfigurationError
from ...models.base import FunctionDeclaration
from .._names import provider_safe_name
from .._schema import inline_refs
from ..base import BaseTool
from ..execution import ToolExecution, remote_tool_execution
from ._errors import McpCallError, McpUnavailableError
from ._servers import McpServer

if TYPE_CHECKING:
    from ...agents.context import ReadonlyContext, ToolContext
    from ._connection import McpConnection

IDEMPOTENCY_META_KEY = "adk-temporal/idempotency-key"
"""The ``_meta`` entry of every ``tools/call`` request that holds the call's idempotency key."""

DEFAULT_EXECUTION = remote_tool_execution("McpCallError")
"""MCP calls: a server that could not be reached, died or timed out is tried again, twice at most,
after 1 s and 2 s; an answer that is an error goes to the model at once."""

_TURNS_KEPT = 64  # per runtime: an in-process Runner's runtime serves many invocations


class McpToolset:
    """The tools of one MCP server (stdio or streamable HTTP).

    Args:
        server: ``StdioServer(command, args, env=...)`` or ``HttpServer(url, headers=...)``.
        name: names the toolset in errors and activity summaries (default: from the server).
        allow: tool names (or ``fnmatch`` patterns) to expose; None exposes all.
        deny: tool names (or patterns) never exposed, even if allowed.
        tool_name_prefix: prepended with ``_`` to each tool's name, to keep two servers' tools apart.
        call_timeout: how long one call may wait for the server's answer, and listing the tools
            (every page) for the server's list.
        connect_timeout: how long starting/connecting and the MCP handshake may take.
        execution: how durable runs run each call (default ``DEFAULT_EXECUTION``). Keep
            ``start_to_close_timeout`` above ``call_timeout``.

    The connection (and a stdio server's process) belongs to this object in the process that uses
    it: in a worker, the worker closes it on shutdown; in-process, call ``await toolset.close()``.
    """

    def __init__(
        self,
        server: McpServer,
        *,
        name: str | None = None,
        allow: Collection[str] | None = None,
        deny: Collection[str] = (),
        tool_name_prefix: str | None = None,
        call_timeout: timedelta = timedelta(seconds=60),
        connect_timeout: timedelta = timedelta(seconds=30),
        execution: ToolExecution | None = None,
    ) -> None:
        if isinstance(allow, str) or isinstance(deny, str):
            raise ConfigurationError("McpToolset allow= and deny= take a list of tool names, not one string")
        self.server = server
        self.name = name or f"mcp:{server.label()}"
        self.allow = tuple(allow) if allow is not None else None
        self.deny = tuple(deny)
        self.tool_name_prefix = tool_name_prefix
        self.call_timeout = call_timeout
        self.connect_timeout = connect_timeout
        self.execution = execution or DEFAULT_EXECUTION
        self._connection: McpConnection | None = None
        self._lister = McpListTools(self)
        self._turns: weakref.WeakKeyDictionary[Any, OrderedDict[str, list[dict[str, Any]]]] = weakref.WeakKeyDictionary()
        self._turns_lock = threading.Lock()  # workflows of one worker may run in several threads

    # --- the agent's view: tools of this turn -------------------------------------------------
    async def get_tools(self, readonly_context: ReadonlyContext) -> list[BaseTool]:
        """The server's tools for this invocation, listed through the runtime once per invocation."""
        runtime = readonly_context.runtime
        invocation_id = readonly_context.invocation_id
        listing = self._turn_listing(runtime, invocation_id)
        if listing is None:
            from ...agents.context import ToolContext

            call_context = ToolContext(
                readonly_context._ic,  # noqa: SLF001  (the invocation this listing belongs to)
                function_call_id=f"mcp-list-{runtime.new_id()}",
            )
            result = await runtime.run_tool(self._lister, {}, call_context)
            listing = list(result["tools"])
            self._remember(runtime, invocation_id, listing)
        return [self._tool(spec["name"], spec) for spec in listing]

    async def tool_named(self, name: str) -> BaseTool | None:
        """The tool called ``name`` if this toolset may have it: how a worker finds the tool of a call
        the model made from a list recorded earlier. The server's own name for it comes from this
        worker's list (fetched once per worker); a tool no longer listed is called by its name as is."""
        if name == self._lister.name:
            return self._lister
        remote = self._remote_name(name)
        if remote is None:
            return None
        try:
            tools = await self.connection.list_tools()
        except (McpUnavailableError, McpCallError):
            tools = []  # the call itself meets the outage (and is retried as a call) or the refusal
        remote = next((t.name for t in tools if self._exposed_name(t.name) == name), remote)
        if not self.exposes(remote):
            return None
        return McpTool(self, name=name, remote_name=remote, spec=None)

    def exposes(self, remote_name: str) -> bool:
        """Whether the allow/deny filters let the server's tool ``remote_name`` through."""
        if self.allow is not None and not any(fnmatch.fnmatchcase(remote_name, p) for p in self.allow):
            return False
        return not any(fnmatch.fnmatchcase(remote_name, p) for p in self.deny)

    # --- the worker's view: the connection -------------------------------------------------
    @property
    def connection(self) -> McpConnection:
        if self._connection is None:
            try:
                from ._connection import McpConnection
            except ImportError as error:
                raise ConfigurationError(
                    f"McpToolset needs the mcp package ({error}): pip install 'adk-temporal[mcp]'"
                ) from error
            self._connection = McpConnection(
                self.server, connect_timeout=self.connect_timeout, list_timeout=self.call_timeout
            )
        return self._connection

    async def refresh_tools(self) -> list[str]:
        """Fetch the server's tool list again (turns that start later see it). Returns the names exposed."""
        tools = await self.connection.list_tools(refresh=True)
        return [self._exposed_name(t.name) for t in tools if self.exposes(t.name)]

    async def close(self) -> None:
        """Stop a stdio server's process / end the HTTP session. The next call connects again."""
        if self._connection is not None:
            await self._connection.close()

    # --- helpers -----------------------------------------------------------------------------
    def _tool(self, name: str, spec: dict[str, Any]) -> McpTool:
        # A list recorded before lists carried remote_name: the name without the prefix.
        remote = spec.get("remote_name") or self._remote_name(name) or name
        return McpTool(self, name=name, remote_name=remote, spec=spec)

    def _exposed_name(self, remote: str) -> str:
        """What the model calls the server's tool ``remote``: prefixed, and safe for every provider."""
        return provider_safe_name(f"{self.tool_name_prefix}_{remote}" if self.tool_name_prefix else remote)

    def _remote_name(self, name: str) -> str | None:
        if not self.tool_name_prefix:
            return name
        prefix = f"{self.tool_name_prefix}_"
        return name[len(prefix):] if name.startswith(prefix) else None

    def _turn_listing(self, runtime: Any, invocation_id: str) -> list[dict[str, Any]] | None:
        with self._turns_lock:
            turns = self._turns.get(runtime)
            return None if turns is None else turns.get(invocation_id)

    def _remember(self, runtime: Any, invocation_id: str, listing: list[dict[str, Any]]) -> None:
        with self._turns_lock:
            turns = self._turns.setdefault(runtime, OrderedDict())
            turns[invocation_id] = listing
            while len(turns) > _TURNS_KEPT:
                turns.popitem(last=False)

    def __repr__(self) -> str:
        return f"McpToolset(name={self.name!r})"


class McpListTools(BaseTool):
    """The toolset's own tool that lists the server's tools (filtered, renamed). Never shown to the model."""

    toolset_internal = True
    """A toolset's own call, not a tool of the agent: eval interception leaves it alone."""

    def __init__(self, toolset: McpToolset) -> None:
        super().__init__(
            name=f"{toolset.name}.list_tools",
            description=f"list the tools of MCP server {toolset.server.label()}",
            execution=remote_tool_execution("McpCallError", timeout=toolset.connect_timeout + toolset.call_timeout),
        )
        self.toolset = toolset

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        toolset = self.toolset
        tools = await toolset.connection.list_tools()
        return {
            "tools": [
                {
                    "name": toolset._exposed_name(t.name),  # noqa: SLF001
                    "remote_name": t.name,
                    "description": t.description or "",
                    "parameters": _parameters(t.inputSchema),
                }
                for t in tools
                if toolset.exposes(t.name)
            ]
        }


class McpTool(BaseTool):
    """One tool of an MCP server. Built by McpToolset; its description and schema are the server's."""

    def __init__(self, toolset: McpToolset, *, name: str, remote_name: str, spec: dict[str, Any] | None) -> None:
        super().__init__(name=name, description=(spec or {}).get("description", ""), execution=toolset.execution)
        self.toolset = toolset
        self.remote_name = remote_name
        self._parameters: dict[str, Any] | None = (spec or {}).get("parameters")

    def declaration(self) -> FunctionDeclaration:
        return FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters=self._parameters or {"type": "object", "properties": {}},
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        toolset = self.toolset
        result = await toolset.connection.call_tool(
            self.remote_name,
            args,
            meta={IDEMPOTENCY_META_KEY: tool_context.idempotency_key},
            timeout=toolset.call_timeout,
        )
        if result.isError:
            raise McpCallError(
                f"tool {self.remote_name!r} of MCP server {toolset.server.label()!r} answered with an error: "
                f"{_text(result.content) or '(no message)'}"
            )
        if result.structuredContent is not None:
            return result.structuredContent
        text = _text(result.content)
        if all(getattr(block, "type", None) == "text" for block in result.content):
            return _json_object(text) or {"result": text}
        return {"content": [block.model_dump(mode="json", exclude_none=True) for block in result.content]}


def _parameters(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """The server's input schema with ``$ref``s inlined (Gemini refuses them); a recursive one as sent."""
    if not schema:
        return None
    try:
        return inline_refs(schema)
    except Exception:  # a recursive schema cannot be inlined; providers that accept $ref still can use it
        return schema


def _json_object(text: str) -> dict[str, Any] | None:
    """Servers often answer an object as its JSON text; the model gets it as the object."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _text(content: list[Any]) -> str:
    return "\n".join(block.text for block in content if getattr(block, "type", None) == "text")


__all__ = ["DEFAULT_EXECUTION", "IDEMPOTENCY_META_KEY", "McpListTools", "McpTool", "McpToolset"]
