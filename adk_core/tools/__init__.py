"""Tools: what agents can call."""

from typing import TYPE_CHECKING, Any

from ..agents.context import ToolContext
from .agent_tool import AgentTool
from .base import BaseTool, Toolset
from .builtin import (
    ExitLoopTool,
    LoadArtifactsTool,
    LoadMemoryTool,
    TransferToAgentTool,
    exit_loop,
    load_artifacts,
    load_memory,
)
from .execution import RetryOptions, ToolExecution
from .function_tool import FunctionTool, LongRunningFunctionTool
from .mcp import HttpServer, McpToolset, StdioServer
from .registry import ToolRegistry, ValidationMode

__all__ = [
    "AgentTool",
    "BaseTool",
    "ExitLoopTool",
    "FunctionTool",
    "HttpServer",
    "LoadArtifactsTool",
    "LoadMemoryTool",
    "LongRunningFunctionTool",
    "McpToolset",
    "OpenApiToolset",
    "RetryOptions",
    "StdioServer",
    "ToolContext",
    "ToolExecution",
    "ToolRegistry",
    "Toolset",
    "TransferToAgentTool",
    "ValidationMode",
    "exit_loop",
    "load_artifacts",
    "load_memory",
]

if TYPE_CHECKING:
    from .openapi import OpenApiToolset


def __getattr__(name: str) -> Any:
    # OpenApiToolset brings httpx, and httpx its command line (rich, click): about 0.15 s of every
    # process that imports adk_core, most of which never call an OpenAPI service. Imported when named.
    if name == "OpenApiToolset":
        from .openapi import OpenApiToolset

        return OpenApiToolset
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
