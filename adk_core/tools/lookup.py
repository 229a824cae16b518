"""Finding an agent's tool by name where a call runs (a tool activity), and closing what tools hold."""

from __future__ import annotations

import asyncio
import inspect
import logging
from datetime import timedelta
from typing import TYPE_CHECKING

from .base import BaseTool

if TYPE_CHECKING:
    from ..agents.base import BaseAgent
    from ..agents.context import ReadonlyContext
    from ..agents.llm_agent import LlmAgent

logger = logging.getLogger(__name__)


async def find_tool(agent: LlmAgent, name: str, ctx: ReadonlyContext) -> BaseTool | None:
    """The agent's tool called ``name``: a plain tool, else one a toolset names without listing
    (``tool_named``, sync or async: McpToolset maps the name to the server's own), else one a
    toolset lists."""
    for item in agent.tools:
        if isinstance(item, BaseTool) and item.name == name:
            return item
    for item in agent.tools:
        named = getattr(item, "tool_named", None)
        if named is not None:
            tool = named(name)
            if inspect.isawaitable(tool):
                tool = await tool
            if isinstance(tool, BaseTool):
                return tool
    if all(isinstance(item, BaseTool) for item in agent.tools):
        return None
    tools = {t.name: t for t in await agent.canonical_tools(ctx)}
    return tools.get(name)


async def close_tools(root: BaseAgent, timeout: timedelta = timedelta(seconds=10)) -> None:
    """Close every tool and toolset in an agent tree that holds something (``async close()``: an
    MCP server's process or session). Bounded by ``timeout`` in all; one that fails is logged."""
    from ..agents.llm_agent import LlmAgent

    closers = []
    pending: list[BaseAgent] = [root]
    seen: set[int] = set()
    while pending:
        agent = pending.pop()
        if id(agent) in seen:
            continue
        seen.add(id(agent))
        pending.extend(agent.sub_agents)
        if isinstance(agent, LlmAgent):
            for item in agent.tools:
                inner = getattr(item, "agent", None)  # an AgentTool's agent has tools of its own
                if inner is not None and hasattr(inner, "sub_agents"):
                    pending.append(inner)
                close = getattr(item, "close", None)
                if inspect.iscoroutinefunction(close) and id(item) not in seen:
                    seen.add(id(item))
                    closers.append(close())
    if not closers:
        return
    done, running = await asyncio.wait([asyncio.ensure_future(c) for c in closers], timeout=timeout.total_seconds())
    for task in running:
        task.cancel()
    for task in done:
        if task.exception() is not None:
            logger.warning("closing a tool failed: %r", task.exception())
