"""PluginManager: runs one hook across all plugins, first non-None result wins."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._callables import call_maybe_async
from ..errors import ConfigurationError
from .base import BasePlugin

HOOKS = (
    "on_user_message_callback",
    "before_run_callback",
    "after_run_callback",
    "on_event_callback",
    "before_agent_callback",
    "after_agent_callback",
    "before_model_callback",
    "after_model_callback",
    "on_model_error_callback",
    "before_tool_callback",
    "after_tool_callback",
    "on_tool_error_callback",
)


class PluginManager:
    def __init__(self, plugins: Sequence[BasePlugin] = ()) -> None:
        names = [p.name for p in plugins]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise ConfigurationError(f"plugin names must be unique; {sorted(duplicates)} appear more than once")
        self.plugins = list(plugins)
        # Only hooks a plugin actually overrides are called: with no plugins, every hook is free.
        self._hooks: dict[str, list[Callable[..., Any]]] = {
            hook: [
                getattr(p, hook)
                for p in self.plugins
                if getattr(type(p), hook, None) is not getattr(BasePlugin, hook)
            ]
            for hook in HOOKS
        }

    def has(self, hook: str) -> bool:
        return bool(self._hooks[hook])

    async def run(self, hook: str, **kwargs: Any) -> Any:
        for fn in self._hooks[hook]:
            result = await call_maybe_async(fn, **kwargs)
            if result is not None:
                return result
        return None

    async def notify(self, hook: str, **kwargs: Any) -> None:
        """Run every plugin's hook (notifications have no result to short-circuit on)."""
        for fn in self._hooks[hook]:
            await call_maybe_async(fn, **kwargs)
