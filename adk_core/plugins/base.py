"""BasePlugin: hooks over the whole run. Plugins run before agent callbacks at every hook;
the first plugin returning something other than None wins and the rest (and the agent's
callbacks) are skipped."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..agents.base import BaseAgent
    from ..agents.context import CallbackContext, InvocationContext, ToolContext
    from ..models.base import LlmRequest, LlmResponse
    from ..tools.base import BaseTool
    from ..types import Content, Event


class BasePlugin:
    """Override the hooks you need; the defaults do nothing. Hooks may be sync or async."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def on_user_message_callback(
        self, *, invocation_context: InvocationContext, user_message: Content
    ) -> Content | None:
        """Return a Content to replace the user's message."""

    async def before_run_callback(self, *, invocation_context: InvocationContext) -> Content | None:
        """Return a Content to answer without running any agent."""

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        """Notification that the invocation finished."""

    async def on_event_callback(self, *, invocation_context: InvocationContext, event: Event) -> Event | None:
        """Return an Event to replace this one before it is stored and yielded."""

    async def before_agent_callback(self, *, agent: BaseAgent, callback_context: CallbackContext) -> Content | None:
        """Return a Content to skip the agent."""

    async def after_agent_callback(self, *, agent: BaseAgent, callback_context: CallbackContext) -> Content | None:
        """Return a Content to add as the agent's final word."""

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        """Return an LlmResponse to skip the model call."""

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> LlmResponse | None:
        """Return an LlmResponse to replace the model's."""

    async def on_model_error_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest, error: Exception
    ) -> LlmResponse | None:
        """Return an LlmResponse to recover from a model failure."""

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        """Return a dict to skip the tool and use it as the result."""

    async def after_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext, result: Any
    ) -> dict[str, Any] | None:
        """Return a dict to replace the tool's result."""

    async def on_tool_error_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext, error: Exception
    ) -> dict[str, Any] | None:
        """Return a dict to use as the result of a tool that raised."""
