"""adk_core: the agent framework. Imports no temporalio; runs in-process on its own, and unchanged
inside a Temporal workflow through the runtime seam (adk_core.runtime)."""

from .agents import (
    Agent,
    AgentExecution,
    BaseAgent,
    CallbackContext,
    InvocationContext,
    LlmAgent,
    LoopAgent,
    ParallelAgent,
    ReadonlyContext,
    RunConfig,
    SequentialAgent,
    ToolContext,
)
from .app import App, check_model_parameters
from .artifacts import ArtifactService, InMemoryArtifactService
from .errors import AdkError
from .memory import InMemoryMemoryService, MemoryService
from .models import LlmRequest, LlmResponse, Model, ScriptedModel
from .plugins import BasePlugin
from .runner import InMemoryRunner, Runner
from .runtime import LocalRuntime, Runtime
from .sessions import InMemorySessionService, Session, SessionService
from .tools import (
    AgentTool,
    BaseTool,
    FunctionTool,
    LongRunningFunctionTool,
    ToolRegistry,
    Toolset,
    ValidationMode,
)
from .types import Content, Event, EventActions, Part

__all__ = [
    "AdkError",
    "Agent",
    "AgentExecution",
    "AgentTool",
    "App",
    "ArtifactService",
    "BaseAgent",
    "BasePlugin",
    "BaseTool",
    "CallbackContext",
    "Content",
    "Event",
    "EventActions",
    "FunctionTool",
    "InMemoryArtifactService",
    "InMemoryMemoryService",
    "InMemoryRunner",
    "InMemorySessionService",
    "InvocationContext",
    "LlmAgent",
    "LlmRequest",
    "LlmResponse",
    "LocalRuntime",
    "LongRunningFunctionTool",
    "LoopAgent",
    "MemoryService",
    "Model",
    "ParallelAgent",
    "Part",
    "ReadonlyContext",
    "RunConfig",
    "Runner",
    "Runtime",
    "ScriptedModel",
    "SequentialAgent",
    "Session",
    "SessionService",
    "ToolContext",
    "ToolRegistry",
    "Toolset",
    "ValidationMode",
    "check_model_parameters",
]
