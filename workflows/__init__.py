"""Temporal workflows that run adk_core's engine durably.

    AgentRunWorkflow   one invocation: a message in, its events out
    SessionWorkflow    one conversation: messages by Update, continue-as-new between turns
    AgentToolWorkflow  an AgentTool's agent as a child workflow
    AgentBranchWorkflow a ParallelAgent branch as a child workflow
    run_agent          one invocation from inside your own workflow (workflows/embed.py)
"""

from .agent_run import AgentBranchWorkflow, AgentRunWorkflow, AgentToolWorkflow
from .contracts import (
    TASK_QUEUE,
    AgentRunInput,
    AgentRunResult,
    PendingRequest,
    Reply,
    SendMessage,
    SessionWorkflowInput,
    TurnResult,
    app_task_queue,
    session_workflow_id,
)
from .embed import run_agent
from .plugin import AdkPlugin
from .session import SessionWorkflow

__all__ = [
    "TASK_QUEUE",
    "AdkPlugin",
    "AgentBranchWorkflow",
    "AgentRunInput",
    "AgentRunResult",
    "AgentRunWorkflow",
    "AgentToolWorkflow",
    "PendingRequest",
    "Reply",
    "SendMessage",
    "SessionWorkflow",
    "SessionWorkflowInput",
    "TurnResult",
    "app_task_queue",
    "run_agent",
    "session_workflow_id",
]
