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

__all__ = [
    "AgentTool",
    "BaseTool",
    "ExitLoopTool",
    "FunctionTool",
    "LoadArtifactsTool",
    "LoadMemoryTool",
    "LongRunningFunctionTool",
    "RetryOptions",
    "ToolContext",
    "ToolExecution",
    "Toolset",
    "TransferToAgentTool",
    "exit_loop",
    "load_artifacts",
    "load_memory",
]
