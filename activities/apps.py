"""The apps a worker serves, by name. Workflows and activities look agents up here.

Module-level on purpose: workflow code cannot receive constructor arguments, and this module is
passed through Temporal's sandbox so workflows see the very objects the worker registered.
"""

from __future__ import annotations

from adk_core import App, BaseAgent
from adk_core.errors import ConfigurationError

_apps: dict[str, App] = {}


def register_app(app: App, *, replace: bool = True) -> App:
    if not replace and app.name in _apps and _apps[app.name] is not app:
        raise ConfigurationError(f"an app named {app.name!r} is already registered with this worker")
    _apps[app.name] = app
    return app


def get_app(name: str) -> App:
    try:
        return _apps[name]
    except KeyError:
        known = ", ".join(sorted(_apps)) or "none"
        raise ConfigurationError(
            f"this worker serves no app named {name!r} (it serves: {known}); start a worker with "
            f"`adkt worker --app module:attr` for that app, or check the app_name you sent"
        ) from None


def get_agent(app_name: str, agent_name: str) -> BaseAgent:
    agent = get_app(app_name).find_agent(agent_name)
    if agent is None:
        raise ConfigurationError(
            f"app {app_name!r} has no agent named {agent_name!r}; the worker may run an older version of the app"
        )
    return agent


def registered_apps() -> list[str]:
    return sorted(_apps)
