"""ToolContext lives with the other contexts in adk_core.agents.context; re-exported here for discovery."""

from ..agents.context import ToolContext

__all__ = ["ToolContext"]
