"""The apps one worker serves, by name: an AppRegistry object, owned by the worker's AdkPlugin.

There is no process-wide registry: two workers in one process (an app's own worker beside
`adkt dev`, or a test stack) each serve their own apps. Activities hold their worker's registry;
workflow code reaches it through workflows.app_scope.worker_apps().
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from adk_core import App, BaseAgent
from adk_core.errors import ConfigurationError
from adk_core.tools.lookup import close_tools

from .eval_allow import EvalSuites


class AppRegistry:
    """Apps by name. Apps may be added while the worker runs (eval cases register theirs on first use)."""

    def __init__(self, apps: Iterable[App] = (), *, eval_suites: EvalSuites | None = None) -> None:
        self._apps: dict[str, App] = {}
        self._agents: dict[tuple[str, str], BaseAgent] = {}
        """Agents found by name: every model and tool activity looks one up, and finding it walks
        the tree and its AgentTools. An app's tree is fixed once it is served."""
        self.eval_suites = eval_suites if eval_suites is not None else EvalSuites()
        """The eval suites this worker may import (activities.eval_allow): none unless registered."""
        for app in apps:
            self.register(app)

    def register(self, app: App) -> App:
        """Serve ``app``. Registering the same object again changes nothing; a different app under a
        taken name is refused (a reloaded app gets a new worker and registry: adkt dev --reload)."""
        current = self._apps.get(app.name)
        if current is not None and current is not app:
            raise ConfigurationError(
                f"this worker already serves a different app named {app.name!r}; app names must be unique per worker"
            )
        self._apps[app.name] = app
        return app

    def get(self, name: str) -> App:
        try:
            return self._apps[name]
        except KeyError:
            known = ", ".join(sorted(self._apps)) or "none"
            raise ConfigurationError(
                f"this worker serves no app named {name!r} (it serves: {known}); start a worker with "
                f"`adkt worker --app module:attr` for that app, or check the app_name you sent"
            ) from None

    def agent(self, app_name: str, agent_name: str) -> BaseAgent:
        found = self._agents.get((app_name, agent_name))
        if found is not None:
            return found
        agent = self.get(app_name).find_agent(agent_name)
        if agent is None:
            raise ConfigurationError(
                f"app {app_name!r} has no agent named {agent_name!r}; the worker may run an older version of the app"
            )
        self._agents[(app_name, agent_name)] = agent
        return agent

    async def close(self) -> None:
        """Release what the apps' tools hold in this process (MCP servers' processes and sessions),
        bounded: the worker calls it when it stops."""
        await asyncio.gather(*(close_tools(app.root_agent) for app in self._apps.values()))

    def names(self) -> list[str]:
        return sorted(self._apps)

    def __contains__(self, name: object) -> bool:
        return name in self._apps
