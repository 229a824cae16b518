"""BaseAgent: names, the agent tree, and the before/after-agent callback protocol."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from .. import telemetry
from .._callables import Callbacks, as_list, first_result
from ..errors import ConfigurationError
from ..types import Content, Event
from .context import CallbackContext, InvocationContext
from .execution import AgentExecution, agent_execution

RESERVED_AUTHOR = "user"


def validate_agent_name(name: object) -> str:
    if not isinstance(name, str) or not name.isidentifier():
        raise ConfigurationError(
            f"agent name {name!r} is not a valid identifier; use letters, digits and underscores, "
            "not starting with a digit (e.g. 'billing_agent')"
        )
    if name == RESERVED_AUTHOR:
        raise ConfigurationError("agent name 'user' is reserved for the end user's events; pick another name")
    return name


class BaseAgent:
    """An agent in a tree. Subclass and implement ``_run_async_impl`` for a custom agent.

    Args:
        name: identifier, unique in the tree.
        description: what it does; other agents read it to decide on transfers.
        sub_agents: children; each may have one parent only.
        before_agent_callback / after_agent_callback: ``(callback_context) -> Content | None``,
            sync or async, one or a list. A Content from ``before`` skips the agent; from
            ``after`` it is added as the agent's last word.
        execution: how a durable run runs this agent (``AgentExecution``: child workflow, model call
            timeouts, retries and task queue); in-process runs ignore it.
        durable: the old, untyped form of ``execution``: a dict of the same fields, converted with a
            DeprecationWarning.
    """

    def __init__(
        self,
        *,
        name: str,
        description: str = "",
        sub_agents: Sequence[BaseAgent] = (),
        before_agent_callback: Callbacks = None,
        after_agent_callback: Callbacks = None,
        execution: AgentExecution | None = None,
        durable: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = validate_agent_name(name)
        self.description = description
        self.parent_agent: BaseAgent | None = None
        self.sub_agents: list[BaseAgent] = list(sub_agents)
        self.before_agent_callback = as_list(before_agent_callback)
        self.after_agent_callback = as_list(after_agent_callback)
        self.execution = agent_execution(execution, durable, self.name)
        for sub in self.sub_agents:
            if sub.parent_agent is not None:
                raise ConfigurationError(
                    f"agent {sub.name!r} already has parent {sub.parent_agent.name!r}; an agent can be a "
                    f"sub-agent of one parent only; create a second instance for {self.name!r}"
                )
            sub.parent_agent = self
        self._check_unique_names()

    # --- the tree ---------------------------------------------------------------------------
    @property
    def root_agent(self) -> BaseAgent:
        agent = self
        while agent.parent_agent is not None:
            agent = agent.parent_agent
        return agent

    def find_agent(self, name: str) -> BaseAgent | None:
        """This agent or a descendant named ``name``."""
        if self.name == name:
            return self
        return self.find_sub_agent(name)

    def find_sub_agent(self, name: str) -> BaseAgent | None:
        for sub in self.sub_agents:
            found = sub.find_agent(name)
            if found is not None:
                return found
        return None

    def walk(self) -> list[BaseAgent]:
        agents = [self]
        for sub in self.sub_agents:
            agents.extend(sub.walk())
        return agents

    def _check_unique_names(self) -> None:
        seen: set[str] = set()
        for agent in self.walk():
            if agent.name in seen:
                raise ConfigurationError(
                    f"agent name {agent.name!r} appears twice in the tree under {self.name!r}; "
                    "names must be unique so transfers and session history can tell agents apart"
                )
            seen.add(agent.name)

    # --- running ----------------------------------------------------------------------------
    async def run_async(self, parent_context: InvocationContext) -> AsyncIterator[Event]:
        """Run the agent, yielding its events. Callers consume events in order; the runner stores
        each before asking for the next."""
        ctx = parent_context.for_agent(self)
        attributes = telemetry.agent_span_attributes(self.name, self.description, ctx.invocation_id, ctx.session.id)
        with ctx.runtime.span(f"invoke_agent {self.name}", attributes):
            event = await self._handle_before_agent(ctx)
            if event is not None:
                yield event
            if ctx.end_invocation:
                return
            async for event in self._run_async_impl(ctx):
                yield event
            if ctx.end_invocation:
                return
            event = await self._handle_after_agent(ctx)
            if event is not None:
                yield event

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncIterator[Event]:
        raise NotImplementedError(f"{type(self).__name__} must implement _run_async_impl(ctx)")
        yield  # pragma: no cover  (makes this an async generator)

    async def _handle_before_agent(self, ctx: InvocationContext) -> Event | None:
        plugins = ctx.plugin_manager
        if not self.before_agent_callback and not plugins.has("before_agent_callback"):
            return None
        callback_context = CallbackContext(ctx)
        content = await plugins.run("before_agent_callback", agent=self, callback_context=callback_context)
        if content is None:
            content = await first_result(self.before_agent_callback, callback_context=callback_context)
        if content is not None:
            ctx.end_invocation = True
        return self._callback_event(ctx, content, callback_context)

    async def _handle_after_agent(self, ctx: InvocationContext) -> Event | None:
        plugins = ctx.plugin_manager
        if not self.after_agent_callback and not plugins.has("after_agent_callback"):
            return None
        callback_context = CallbackContext(ctx)
        content = await plugins.run("after_agent_callback", agent=self, callback_context=callback_context)
        if content is None:
            content = await first_result(self.after_agent_callback, callback_context=callback_context)
        return self._callback_event(ctx, content, callback_context)

    def _callback_event(
        self, ctx: InvocationContext, content: Content | None, callback_context: CallbackContext
    ) -> Event | None:
        if content is None and not callback_context.state.has_delta() and not callback_context.actions.artifact_delta:
            return None
        if content is not None and not isinstance(content, Content):
            raise ConfigurationError(
                f"an agent callback of {self.name!r} returned {type(content).__name__}; return a "
                "Content (e.g. Content.model('...')) or None"
            )
        return new_event(ctx, author=self.name, content=content, actions=callback_context.actions)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def new_event(ctx: InvocationContext, *, author: str, **fields: Any) -> Event:
    """An event stamped with the runtime's id and clock, in the context's invocation and branch."""
    return Event(
        id=ctx.runtime.new_id(),
        invocation_id=ctx.invocation_id,
        author=author,
        branch=ctx.branch,
        timestamp=ctx.runtime.now(),
        **fields,
    )
