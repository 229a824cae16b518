"""App: what a worker or runner serves — a name, a root agent and the plugins around it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .agents.base import BaseAgent
from .plugins.base import BasePlugin


@dataclass
class App:
    """The unit users deploy. ``adkt worker --app module:attr`` loads one of these (or a bare agent)."""

    name: str
    root_agent: BaseAgent
    plugins: Sequence[BasePlugin] = field(default_factory=list)

    def find_agent(self, name: str) -> BaseAgent | None:
        """An agent of the tree, or one reachable only through an AgentTool."""
        return find_agent_anywhere(self.root_agent, name)


def find_agent_anywhere(root: BaseAgent, name: str) -> BaseAgent | None:
    from .tools.agent_tool import AgentTool

    seen: set[int] = set()
    stack = [root]
    while stack:
        agent = stack.pop()
        if id(agent) in seen:
            continue
        seen.add(id(agent))
        if agent.name == name:
            return agent
        stack.extend(agent.sub_agents)
        stack.extend(t.agent for t in getattr(agent, "tools", ()) if isinstance(t, AgentTool))
    return None
