"""Agents: the tree, the LLM agent, and orchestrators."""

from .base import BaseAgent
from .context import CallbackContext, InvocationContext, ReadonlyContext, ToolContext
from .execution import AgentExecution
from .llm_agent import Agent, LlmAgent
from .run_config import RunConfig
from .workflow_agents import LoopAgent, ParallelAgent, SequentialAgent

__all__ = [
    "Agent",
    "AgentExecution",
    "BaseAgent",
    "CallbackContext",
    "InvocationContext",
    "LlmAgent",
    "LoopAgent",
    "ParallelAgent",
    "ReadonlyContext",
    "RunConfig",
    "SequentialAgent",
    "ToolContext",
]
