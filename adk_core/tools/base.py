"""BaseTool and Toolset: the extension points for what agents can do."""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..models.base import FunctionDeclaration, LlmRequest
from .execution import ToolExecution

if TYPE_CHECKING:
    from ..agents.context import ReadonlyContext, ToolContext


class BaseTool(abc.ABC):
    """A capability the model can call.

    Subclasses set ``name``/``description``, return a declaration, and implement ``run_async``.
    ``execution`` tells the durable runtime how to run it (activity options, inline, ...).
    """

    is_long_running: bool = False

    def __init__(
        self,
        *,
        name: str,
        description: str = "",
        is_long_running: bool = False,
        execution: ToolExecution | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.is_long_running = is_long_running
        self.execution = execution

    def declaration(self) -> FunctionDeclaration | None:
        """What the model is told; None for tools that only edit the request."""
        return None

    @abc.abstractmethod
    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """Run the tool. Return a JSON-serializable value (a dict is sent to the model as is)."""

    async def process_llm_request(self, *, tool_context: ToolContext, llm_request: LlmRequest) -> None:
        """Add this tool to the request. Override to also edit instructions or contents."""
        llm_request.append_tools([self])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


@runtime_checkable
class Toolset(Protocol):
    """A dynamic source of tools, resolved before every model call (e.g. an MCP server)."""

    name: str

    async def get_tools(self, readonly_context: ReadonlyContext) -> list[BaseTool]: ...
