"""ResolvedContext: the instruction and the verified tools that one model call gets, as one unit.

An instruction written for tools the agent asked for by name ("Look the order up with
get_order.") must not reach the model when ``get_order`` was left out (ValidationMode.PERMISSIVE):
a model told about a tool it cannot call calls it anyway, or tells the user it did. So the
instruction is pruned against the tools the call really has: a sentence that names a tool the agent
asked for but cannot call is removed (a line left empty goes with it). Pure string work on the
agent's own data, so it is the same on every replay of a durable run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..agents.context import InvocationContext, ReadonlyContext, ToolContext
from ..agents.llm_agent import LlmAgent
from ..errors import ToolError
from ..tools.base import BaseTool, Toolset
from ..tools.registry import tool_name_of
from .instructions import inject_state

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class ResolvedContext:
    """What one model call is given.

    Attributes:
        instruction: the global and the agent's instruction, templated, with every sentence that
            names an omitted tool removed.
        tools: the tools the model can call (toolsets expanded), in order.
        omitted: tool names the agent asked for that it does not have; the instruction names none.
    """

    instruction: str
    tools: tuple[BaseTool, ...]
    omitted: tuple[str, ...] = ()

    @property
    def tool_names(self) -> list[str]:
        return [tool.name for tool in self.tools]


async def resolve_tools(agent: LlmAgent, ctx: ReadonlyContext) -> list[BaseTool]:
    """The agent's tools with every Toolset expanded.

    Raises:
        ToolError: a toolset failed. Nothing is skipped: under the durable runtime the workflow
            and the tool activity each resolve the tools, and a toolset skipped in one but not
            the other would give them different tools.
    """
    tools: list[BaseTool] = []
    for item in agent.tools:
        if isinstance(item, BaseTool):
            tools.append(item)
            continue
        try:
            tools.extend(await item.get_tools(ctx))
        except Exception as error:
            raise ToolError(
                f"toolset {_toolset_name(item)!r} of agent {agent.name!r} failed to list its tools: "
                f"{type(error).__name__}: {error}. Fix the toolset (is its server reachable?) or remove it "
                "from the agent's tools"
            ) from error
    return tools


def _toolset_name(toolset: Toolset) -> str:
    return getattr(toolset, "name", type(toolset).__name__)


async def resolve_context(
    agent: LlmAgent, ctx: InvocationContext, tool_context: ToolContext | None = None
) -> ResolvedContext:
    """Resolve the agent's instruction (read-only context) and its tools (toolsets listed with
    ``tool_context``, a new ToolContext if None) for one model call."""
    readonly = ReadonlyContext(ctx)
    parts = []
    root = agent.root_agent
    if isinstance(root, LlmAgent) and root.global_instruction:
        text, template = await root.canonical_global_instruction(readonly)
        parts.append(await inject_state(text, readonly, agent_name=agent.name) if template else text)
    if agent.instruction:
        text, template = await agent.canonical_instruction(readonly)
        parts.append(await inject_state(text, readonly, agent_name=agent.name) if template else text)
    # Tools after the instruction, the order the flow always had: under Temporal both may start
    # activities (an {artifact.x} placeholder, a toolset's listing), and recorded runs replay that order.
    tools = tuple(await resolve_tools(agent, tool_context or ToolContext(ctx))) if agent.tools else ()
    callable_names = {tool.name for tool in tools}
    omitted = tuple(name for name in getattr(agent, "omitted_tools", ()) if tool_name_of(name) not in callable_names)
    instruction = "\n\n".join(p for p in parts if p)
    return ResolvedContext(instruction=prune_instruction(instruction, omitted), tools=tools, omitted=omitted)


def prune_instruction(text: str, names: Iterable[str]) -> str:
    """``text`` without the sentences that name any of ``names`` (or, for a reference like
    ``pkg.mod:get_order``, its tool name ``get_order``) as a whole word."""
    words = {word for name in names for word in (name, tool_name_of(name)) if word}
    if not words or not text:
        return text
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    mention = re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)")
    kept_lines = []
    for line in text.split("\n"):
        if not mention.search(line):
            kept_lines.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        sentences = [s for s in _SENTENCE_END.split(line.strip()) if not mention.search(s)]
        if sentences:
            kept_lines.append(indent + " ".join(sentences))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept_lines)).strip("\n")


__all__ = ["ResolvedContext", "prune_instruction", "resolve_context", "resolve_tools"]
