"""Tools: what agents can call."""

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
from .openapi import OpenApiToolset
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
