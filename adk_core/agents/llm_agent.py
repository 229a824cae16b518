"""LlmAgent: an agent that talks to a model, calls tools and may transfer to other agents."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from .._callables import Callbacks, as_list
from ..errors import ConfigurationError
from ..models.base import GenerateContentConfig, Model
from ..models.registry import resolve_model
from ..tools.base import BaseTool, Toolset
from ..tools.registry import ToolRegistry, ValidationMode, bind_tools
from ..types import Event
from .base import BaseAgent
from .context import InvocationContext, ReadonlyContext

InstructionProvider = Callable[[ReadonlyContext], str | Awaitable[str]]
ToolUnion = BaseTool | Toolset | Callable[..., Any] | str


class LlmAgent(BaseAgent):
    """An agent backed by a model.

    Args:
        model: a Model, or a name the registry resolves (e.g. "gemini-2.5-flash"); empty means
            inherit from the nearest LlmAgent ancestor.
        instruction: text with ``{var}`` / ``{var?}`` / ``{artifact.name}`` placeholders, or a
            function of a ReadonlyContext returning the text (used as is, no templating).
        global_instruction: on the root agent, prepended to every agent's instruction.
        tools: BaseTool instances, plain functions (wrapped in FunctionTool), Toolsets, or names:
            a name in ``tool_registry``, a built-in tool's name, or ``package.module:attr``.
        tool_registry: where tool names are looked up (adk_core.tools.registry).
        tool_validation: a name that binds nothing raises ConfigurationError here (STRICT), or is
            left out with a warning and out of the instruction the model sees (PERMISSIVE).
        output_key: store the final text answer (or the validated output_schema object) in state.
        output_schema: a pydantic model the final answer must be JSON for.
        input_schema: a pydantic model describing the input when this agent is used as a tool.
        include_contents: "default" sends the conversation; "none" only the current turn.
        disallow_transfer_to_parent / disallow_transfer_to_peers: remove those transfer targets.
        before_model_callback, after_model_callback, on_model_error_callback,
        before_tool_callback, after_tool_callback, on_tool_error_callback: sync or async
            callables, one or a list; the first non-None result wins.
    """

    def __init__(
        self,
        *,
        name: str,
        model: str | Model = "",
        instruction: str | InstructionProvider = "",
        global_instruction: str | InstructionProvider = "",
        description: str = "",
        tools: Sequence[ToolUnion] = (),
        tool_registry: ToolRegistry | None = None,
        tool_validation: ValidationMode | str = ValidationMode.STRICT,
        generate_content_config: GenerateContentConfig | None = None,
        output_key: str | None = None,
        output_schema: type[BaseModel] | None = None,
        input_schema: type[BaseModel] | None = None,
        include_contents: Literal["default", "none"] = "default",
        disallow_transfer_to_parent: bool = False,
        disallow_transfer_to_peers: bool = False,
        sub_agents: Sequence[BaseAgent] = (),
        before_model_callback: Callbacks = None,
        after_model_callback: Callbacks = None,
        on_model_error_callback: Callbacks = None,
        before_tool_callback: Callbacks = None,
        after_tool_callback: Callbacks = None,
        on_tool_error_callback: Callbacks = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, description=description, sub_agents=sub_agents, **kwargs)
        if generate_content_config is not None and (
            generate_content_config.tools or generate_content_config.system_instruction
        ):
            raise ConfigurationError(
                f"agent {name!r}: set tools with tools=[...] and the system instruction with instruction=..., "
                "not inside generate_content_config"
            )
        if include_contents not in ("default", "none"):
            raise ConfigurationError(f"agent {name!r}: include_contents must be 'default' or 'none'")
        self.model = model
        self.instruction = instruction
        self.global_instruction = global_instruction
        bound = bind_tools(tools, registry=tool_registry, mode=tool_validation, agent_name=name)
        self.tools: list[BaseTool | Toolset] = bound.tools
        self.tool_registry = tool_registry
        self.omitted_tools = bound.omitted
        """Tool names asked for that bound nothing (PERMISSIVE); the instruction is pruned of them."""
        self.generate_content_config = generate_content_config
        self.output_key = output_key
        self.output_schema = output_schema
        self.input_schema = input_schema
        self.include_contents = include_contents
        self.disallow_transfer_to_parent = disallow_transfer_to_parent
        self.disallow_transfer_to_peers = disallow_transfer_to_peers
        self.before_model_callback = as_list(before_model_callback)
        self.after_model_callback = as_list(after_model_callback)
        self.on_model_error_callback = as_list(on_model_error_callback)
        self.before_tool_callback = as_list(before_tool_callback)
        self.after_tool_callback = as_list(after_tool_callback)
        self.on_tool_error_callback = as_list(on_tool_error_callback)

    @property
    def canonical_model(self) -> Model:
        """The model this agent uses: its own, or the nearest LlmAgent ancestor's."""
        agent: BaseAgent | None = self
        while agent is not None:
            model = getattr(agent, "model", None)
            if isinstance(model, str) and model:
                return resolve_model(model)
            if model and not isinstance(model, str):
                return model
            agent = agent.parent_agent
        raise ConfigurationError(
            f"agent {self.name!r} has no model and no ancestor LlmAgent has one; pass model='gemini-2.5-flash' "
            "(or a Model instance) to it or to an ancestor"
        )

    async def canonical_instruction(self, ctx: ReadonlyContext) -> tuple[str, bool]:
        """(instruction, whether to template it)."""
        return await _resolve_text(self.instruction, ctx)

    async def canonical_global_instruction(self, ctx: ReadonlyContext) -> tuple[str, bool]:
        return await _resolve_text(self.global_instruction, ctx)

    async def canonical_tools(self, ctx: ReadonlyContext) -> list[BaseTool]:
        """Tools plus those of each Toolset; a failing toolset raises ToolError."""
        return await _llm_flow.resolve_tools(self, ctx)

    def transfer_targets(self) -> list[BaseAgent]:
        """Agents this one may hand over to: its sub-agents, then its parent and peers unless disallowed."""
        targets = list(self.sub_agents)
        parent = self.parent_agent
        if isinstance(parent, LlmAgent):
            if not self.disallow_transfer_to_parent:
                targets.append(parent)
            if not self.disallow_transfer_to_peers:
                targets.extend(p for p in parent.sub_agents if p is not self)
        return targets

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncIterator[Event]:
        async for event in _llm_flow.run_llm_flow(self, ctx):
            yield event


async def _resolve_text(value: str | InstructionProvider, ctx: ReadonlyContext) -> tuple[str, bool]:
    if isinstance(value, str):
        return value, True
    result = value(ctx)
    if inspect.isawaitable(result):
        result = await result
    return str(result), False


Agent = LlmAgent
"""ADK's short name for LlmAgent."""


# Last, as the flow imports this module: an import inside the methods would run on every call (in a
# workflow sandbox, through its importer: about 15 us each).
from ..flow import llm_flow as _llm_flow  # noqa: E402
