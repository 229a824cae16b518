"""Tool mocks: ``ToolMock``, the deliberately small ``MockToolContext`` it receives, and ``passthrough``."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._callables import call_maybe_async
from ..agents.context import ToolContext
from ..errors import ConfigurationError
from ..tools.base import BaseTool
from ..tools.function_tool import FunctionTool
from .scopes import ScopedState

MockExecute = Callable[..., Any]
ToolMocks = Mapping[str, "ToolMock | BaseTool | Callable[..., Any]"]
"""``EvalCase.tool_mocks``: tool name -> a ToolMock (replace the tool), or the real tool object or
function (run the real tool: passthrough, for tools without side effects)."""


class MockToolContext:
    """What a mock sees of the call: ids, the tool's name, scoped state, and the runtime's clock.

    Deliberately smaller than ToolContext: a mock stands in for an effect and has no business with
    artifacts, memory or confirmations. ``state`` writes land in the call's state delta, as a real
    tool's do (``ctx.state.session.set("k", v)``, ``ctx.state.patient.get("age")``).
    """

    __slots__ = ("_tool_context", "tool_name", "state")

    def __init__(self, tool_context: ToolContext, tool_name: str) -> None:
        self._tool_context = tool_context
        self.tool_name = tool_name
        self.state = ScopedState(tool_context.state)

    @property
    def call_id(self) -> str:
        return self._tool_context.function_call_id or ""

    @property
    def invocation_id(self) -> str:
        return self._tool_context.invocation_id

    def now(self) -> float:
        """Seconds since the epoch from the runtime (the seed recommends it over the wall clock)."""
        return self._tool_context.runtime.now()


@dataclass(frozen=True)
class ToolMock:
    """Replaces a tool during an eval.

    Args:
        execute: ``execute(args, ctx)`` (or ``execute(args)``), sync or async, returning the tool's
            result; ``args`` is the dict the model called the tool with, ``ctx`` a MockToolContext.
            Under the durable runtime it runs in a local activity on the trial's worker, with the
            tool's timeouts and retries, so it may do anything a tool may (I/O included).
    """

    execute: MockExecute

    def __post_init__(self) -> None:
        if not callable(self.execute):
            raise ConfigurationError(f"ToolMock(execute=...) needs a function, not {type(self.execute).__name__}")

    async def run(self, args: dict[str, Any], ctx: MockToolContext) -> Any:
        positional = _positional_count(self.execute)
        call_args = (args, ctx)[: positional if positional is not None else 2]
        return await call_maybe_async(lambda: self.execute(*call_args))


def _positional_count(fn: Callable[..., Any]) -> int | None:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def tool_name_of(tool: BaseTool | Callable[..., Any]) -> str:
    """The name a tool (or a plain function turned into a FunctionTool) is called by."""
    if isinstance(tool, BaseTool):
        return tool.name
    return getattr(tool, "__name__", "")


def passthrough(*tools: BaseTool | Callable[..., Any]) -> dict[str, BaseTool | Callable[..., Any]]:
    """``tool_mocks`` entries that run these real tools: ``{**passthrough(record_answer), "read": ToolMock(...)}``."""
    entries: dict[str, BaseTool | Callable[..., Any]] = {}
    for tool in tools:
        name = tool_name_of(tool)
        if not name:
            raise ConfigurationError(f"passthrough({tool!r}): cannot tell this tool's name; use tool_mocks={{'name': tool}}")
        entries[name] = tool
    return entries


def check_passthrough(name: str, given: Any, tool: BaseTool) -> None:
    """A plain function given for a FunctionTool must be that tool's own function.

    Guards the unsafe mistake of passing a stand-in function expecting it to mock the tool: a
    function is read as "run the real tool", so a different one would silently run the real tool.
    """
    if isinstance(given, ToolMock | BaseTool) or not isinstance(tool, FunctionTool):
        return
    if given is not tool.func:
        raise ConfigurationError(
            f"tool_mocks[{name!r}] is a function, but not the one tool {name!r} wraps ({tool.func!r}). "
            f"A function means 'run the real tool'. To replace the tool, write "
            f"tool_mocks={{{name!r}: ToolMock(execute=your_function)}}; to run the real tool, pass the tool "
            "object or its own function"
        )


def validate_tool_mocks(tool_mocks: Mapping[str, Any]) -> None:
    for name, value in tool_mocks.items():
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"tool_mocks keys are tool names; got {name!r}")
        if isinstance(value, ToolMock | BaseTool):
            continue
        if callable(value) and not inspect.isclass(value):
            continue
        raise ConfigurationError(
            f"tool_mocks[{name!r}] is a {type(value).__name__}; give ToolMock(execute=...) to replace the tool, "
            "or the real tool (object or function) to run it"
        )
