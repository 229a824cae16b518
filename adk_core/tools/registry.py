"""Tools by name: a ToolRegistry maps names to tools, and an agent asks for its tools by name.

A name an agent asks for is looked up, in this order:

1. in the agent's ``ToolRegistry`` (functions, tools, toolsets such as McpToolset/OpenApiToolset,
   agents, each registered under a name);
2. among the built-in tools (``exit_loop``, ``load_memory``, ``load_artifacts``);
3. as a reference to Python code: ``package.module:attr`` (or google-adk's ``package.module.attr``).

Names are bound once, when the agent is built: a worker that builds the app binds the same tools
every time, so the durable runtime looks tools up where calls run (adk_core.tools.lookup) with no
name resolution at run time. ``ValidationMode`` says what happens to a name that binds nothing.
"""

from __future__ import annotations

import difflib
import enum
import importlib
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from ..errors import ConfigurationError
from .base import BaseTool, Toolset
from .function_tool import as_tool

if TYPE_CHECKING:
    from ..agents.base import BaseAgent

logger = logging.getLogger(__name__)

Registrable: TypeAlias = "BaseTool | Toolset | BaseAgent | Callable[..., Any]"
BoundTool: TypeAlias = BaseTool | Toolset


class ValidationMode(enum.StrEnum):
    """What an agent does with a tool name that binds nothing.

    STRICT: refuse to build the agent (ConfigurationError naming what is missing and how to fix it).
    PERMISSIVE: bind what exists, leave out the rest, warn once; the instruction's sentences that name
    a left-out tool are not sent to the model (adk_core.flow.resolved_context).
    """

    STRICT = "strict"
    PERMISSIVE = "permissive"


def _builtins() -> dict[str, BoundTool]:
    from .builtin import exit_loop, load_artifacts, load_memory

    return {tool.name: tool for tool in (exit_loop, load_memory, load_artifacts)}


class ToolRegistry:
    """Names to tools.

    Example:
        registry = ToolRegistry()

        @registry.register
        def get_weather(city: str) -> dict: ...

        registry.register(McpToolset(StdioServer(...)), name="files")
        agent = LlmAgent(name="a", tools=["get_weather", "files"], tool_registry=registry)

    A function becomes a FunctionTool and an agent an AgentTool when registered; a registered
    toolset gives the agent every tool it lists.
    """

    def __init__(self, tools: Iterable[Registrable] | Mapping[str, Registrable] = ()) -> None:
        self._entries: dict[str, BoundTool] = {}
        if isinstance(tools, Mapping):
            for name, item in tools.items():
                self.register(item, name=name)
        else:
            for item in tools:
                self.register(item)

    def register(self, item: Any, *, name: str | None = None) -> Any:
        """Register ``item`` under ``name`` (default: the tool's, toolset's, agent's or function's
        name). Returns ``item``, so it works as a decorator on a function.

        Raises:
            ConfigurationError: the name is taken, or ``item`` is not a tool, toolset, agent or callable.
        """
        bound = _as_bound(item, where=f"ToolRegistry.register({name or _name_of(item)!r})")
        key = name or _name_of(bound)
        if not key:
            raise ConfigurationError(f"cannot tell the name of {item!r}; register it with name='...'")
        if key in self._entries and self._entries[key] is not bound:
            raise ConfigurationError(
                f"the tool registry already has {key!r} ({self._entries[key]!r}); register the new one under "
                "another name (register(item, name='...'))"
            )
        self._entries[key] = bound
        return item

    def get(self, name: str) -> BoundTool | None:
        """The entry registered as ``name``, else the built-in tool of that name, else None."""
        found = self._entries.get(name)
        return found if found is not None else _builtins().get(name)

    def names(self) -> list[str]:
        """Registered names, sorted (built-ins not included)."""
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"ToolRegistry({self.names()})"


@dataclass(frozen=True)
class BoundTools:
    """What an agent's tool list bound to.

    Attributes:
        tools: the tools and toolsets, in the order asked for.
        omitted: names asked for that bound nothing (only in PERMISSIVE mode).
    """

    tools: list[BoundTool]
    omitted: tuple[str, ...] = ()


_warned: set[tuple[str, tuple[str, ...]]] = set()


def bind_tools(
    items: Sequence[Any],
    *,
    registry: ToolRegistry | None = None,
    mode: ValidationMode | str = ValidationMode.STRICT,
    agent_name: str = "",
) -> BoundTools:
    """Bind an agent's ``tools`` list: tools and toolsets as they are, functions as FunctionTools,
    names through ``registry`` (then the built-ins, then as ``module:attr`` references).

    Raises:
        ConfigurationError: in STRICT mode, a name that binds nothing (the message lists them, what
            the registry has, and how to fix it); in any mode, an item of the wrong type or a
            referenced module that fails while importing.
    """
    mode = _mode(mode, agent_name)
    tools: list[BoundTool] = []
    missing: list[tuple[str, str]] = []
    for item in items:
        if not isinstance(item, str):
            tools.append(_as_bound(item, where=f"agent {agent_name!r}"))
            continue
        found, why = _lookup(item.strip(), registry, agent_name)
        if found is None:
            missing.append((item, why))
        else:
            tools.append(found)
    if not missing:
        return BoundTools(tools)
    if mode is ValidationMode.STRICT:
        raise ConfigurationError(_missing_message(agent_name, missing, registry))
    omitted = tuple(name for name, _ in missing)
    if (agent_name, omitted) not in _warned:  # once per process: a worker builds its apps once, a dev reload again
        _warned.add((agent_name, omitted))
        logger.warning(
            "agent %r runs without tools %s (tool_validation=permissive): %s",
            agent_name,
            list(omitted),
            "; ".join(why for _, why in missing),
        )
    return BoundTools(tools, omitted)


def tool_name_of(reference: str) -> str:
    """The name a tool referenced as ``pkg.mod:attr`` or ``pkg.mod.attr`` would have (its last part)."""
    return reference.rsplit(":", 1)[-1].rsplit(".", 1)[-1]


def _mode(mode: ValidationMode | str, agent_name: str) -> ValidationMode:
    try:
        return ValidationMode(mode)
    except ValueError:
        raise ConfigurationError(
            f"agent {agent_name!r}: tool_validation {mode!r} is not one of 'strict', 'permissive'"
        ) from None


def _lookup(name: str, registry: ToolRegistry | None, agent_name: str) -> tuple[BoundTool | None, str]:
    """(the tool, '') or (None, why not)."""
    found = registry.get(name) if registry is not None else _builtins().get(name)
    if found is not None:
        return found, ""
    module_name, attr = _split_reference(name)
    if module_name is None:
        where = "the tool registry" if registry is not None else "the built-in tools (the agent has no tool_registry)"
        return None, f"{name!r} is not in {where}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and module_name.startswith(e.name):
            return None, f"{name!r}: no module {e.name!r}"
        raise ConfigurationError(f"agent {agent_name!r}: importing tool {name!r} failed: {e}") from e
    except Exception as e:  # the module exists but raises: that is a bug to show, not a missing tool
        raise ConfigurationError(
            f"agent {agent_name!r}: importing tool {name!r} failed: {type(e).__name__}: {e}"
        ) from e
    if not hasattr(module, attr):
        return None, f"{name!r}: module {module_name!r} has no {attr!r}"
    return _as_bound(getattr(module, attr), where=f"agent {agent_name!r}, tool {name!r}"), ""


def _split_reference(name: str) -> tuple[str | None, str]:
    if ":" in name:
        module_name, _, attr = name.partition(":")
    elif "." in name:
        module_name, _, attr = name.rpartition(".")
    else:
        return None, name
    if not attr.isidentifier() or not all(p.isidentifier() for p in module_name.split(".")):
        return None, name
    return module_name, attr


def _as_bound(item: Any, *, where: str) -> BoundTool:
    from ..agents.base import BaseAgent
    from .agent_tool import AgentTool

    if isinstance(item, BaseTool | Toolset):
        return item
    if isinstance(item, BaseAgent):
        return AgentTool(item)
    if callable(item) and not isinstance(item, type):
        return as_tool(item)
    raise ConfigurationError(
        f"{where}: {item!r} is a {type(item).__name__}, not a tool; give a function, a BaseTool, a Toolset "
        "(McpToolset, OpenApiToolset, ...) or an agent"
    )


def _name_of(item: Any) -> str:
    return str(getattr(item, "name", "") or getattr(item, "__name__", ""))


def _missing_message(agent_name: str, missing: list[tuple[str, str]], registry: ToolRegistry | None) -> str:
    names = [name for name, _ in missing]
    known = [*(registry.names() if registry is not None else []), *_builtins()]
    hints = []
    for name in names:
        close = difflib.get_close_matches(name, known, n=1)
        if close:
            hints.append(f"did you mean {close[0]!r} for {name!r}?")
    has = f"the registry has {', '.join(repr(n) for n in known)}" if known else "no tool is registered"
    return (
        f"agent {agent_name!r} asks for tools that do not exist: {'; '.join(why for _, why in missing)} ({has}). "
        + (" ".join(h[0].upper() + h[1:] for h in hints) + " " if hints else "")
        + "Fix: register each in the agent's ToolRegistry (registry.register(my_function)), write it as a "
        "reference 'package.module:function', correct the name, or set tool_validation to 'permissive' to run "
        "without it"
    )


__all__ = ["BoundTools", "ToolRegistry", "ValidationMode", "bind_tools", "tool_name_of"]
