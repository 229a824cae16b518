"""FunctionTool: a Python function (sync or async) as a tool, its declaration read from the
signature and docstring."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..agents.context import ToolContext
from ..errors import InvalidInputError
from ..models.base import FunctionDeclaration
from . import _schema
from .base import BaseTool
from .execution import ToolExecution

CONFIRMATION_REQUIRED_ERROR = "This tool call requires confirmation; please approve or reject it."
CONFIRMATION_REJECTED_ERROR = "This tool call was rejected by the user."
LONG_RUNNING_NOTE = (
    "NOTE: This is a long-running operation. Do not call this tool again if it has already "
    "returned a pending status."
)


def _is_tool_context(param: inspect.Parameter, annotation: Any) -> bool:
    return param.name == "tool_context" or annotation is ToolContext or annotation == "ToolContext"


class FunctionTool(BaseTool):
    """Wraps a function. A parameter named ``tool_context`` or annotated ``ToolContext`` receives
    the call's context and is hidden from the model.

    A sync function runs in a thread (``runtime.run_sync``), so a blocking call in it does not
    stall other tools or the worker; inside a workflow (``ToolExecution(mode="inline")``) it is
    called directly. Call Temporal's ``activity.heartbeat()`` from async tools only: it needs
    the worker's event loop.

    Args:
        func: the function; its docstring describes the tool and its Args section the parameters.
        name: defaults to the function's name.
        require_confirmation: True, or a function of the call's arguments (sync or async; it may
            also take ``tool_context``) returning whether a human must confirm this call first.
        execution: how the durable runtime runs it (see ToolExecution).
    """

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        require_confirmation: bool | Callable[..., Any] = False,
        is_long_running: bool = False,
        execution: ToolExecution | None = None,
    ) -> None:
        self.func = func
        self._declaration = _schema.build_declaration(func, name=name, ignore=_is_tool_context)
        super().__init__(
            name=self._declaration.name,
            description=self._declaration.description,
            is_long_running=is_long_running,
            execution=execution,
        )
        if is_long_running:
            self._declaration.description = f"{self._declaration.description}\n\n{LONG_RUNNING_NOTE}".strip()
        self.require_confirmation = require_confirmation
        params = inspect.signature(func).parameters
        self._context_param = next(
            (p.name for p in params.values() if _is_tool_context(p, p.annotation)), None
        )
        self._is_async = inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(type(func).__call__)

    def declaration(self) -> FunctionDeclaration:
        return self._declaration

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        try:
            kwargs = _schema.coerce_args(self.func, args, ignore=_is_tool_context)
        except InvalidInputError as e:
            return {"error": str(e)}
        if await self._needs_confirmation(kwargs, tool_context):
            refusal = confirmation_step(self.name, tool_context)
            if refusal is not None:
                return refusal
        if self._context_param:
            kwargs[self._context_param] = tool_context
        if self._is_async:
            return await self.func(**kwargs)
        # A blocking function must not hold up the event loop that runs every other tool, model
        # call and activity: the runtime runs it in a thread (or directly, inside a workflow).
        result = await tool_context.runtime.run_sync(self.func, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result

    async def _needs_confirmation(self, kwargs: dict[str, Any], tool_context: ToolContext) -> bool:
        rule = self.require_confirmation
        if not callable(rule):
            return bool(rule)
        call_kwargs = dict(kwargs)
        if "tool_context" in inspect.signature(rule).parameters:
            call_kwargs["tool_context"] = tool_context
        result = rule(**call_kwargs)
        return bool(await result if inspect.isawaitable(result) else result)


def confirmation_step(tool_name: str, tool_context: ToolContext) -> dict[str, Any] | None:
    """For a call that needs confirmation: ask for it (first time) or refuse it (rejected); None
    when it was confirmed and the call may run."""
    if tool_context.tool_confirmation is None:
        tool_context.request_confirmation(hint=f"Please approve or reject the call to '{tool_name}'.")
        tool_context.actions.skip_summarization = True
        return {"error": CONFIRMATION_REQUIRED_ERROR}
    if not tool_context.tool_confirmation.confirmed:
        return {"error": CONFIRMATION_REJECTED_ERROR}
    return None


class LongRunningFunctionTool(FunctionTool):
    """A function that starts work which finishes later. Its first result (e.g. a ticket id) goes
    to the model; the final result arrives as a FunctionResponse with the same call id."""

    def __init__(self, func: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(func, is_long_running=True, **kwargs)


def as_tool(tool: BaseTool | Callable[..., Any]) -> BaseTool:
    return tool if isinstance(tool, BaseTool) else FunctionTool(tool)
