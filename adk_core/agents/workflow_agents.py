"""Agents that orchestrate sub-agents: SequentialAgent, ParallelAgent, LoopAgent."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from ..errors import ConfigurationError
from ..types import Event
from .base import BaseAgent
from .context import InvocationContext


class SequentialAgent(BaseAgent):
    """Runs its sub-agents once each, in order."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncIterator[Event]:
        for sub in self.sub_agents:
            async for event in sub.run_async(ctx):
                yield event
            if ctx.end_invocation:
                return


class LoopAgent(BaseAgent):
    """Runs its sub-agents in order, again and again, until one escalates (e.g. calls the
    ``exit_loop`` tool) or ``max_iterations`` rounds are done."""

    def __init__(self, *, max_iterations: int | None = None, **kwargs: Any) -> None:
        if max_iterations is not None and max_iterations < 1:
            raise ConfigurationError(f"LoopAgent max_iterations must be >= 1 or None, not {max_iterations}")
        super().__init__(**kwargs)
        self.max_iterations = max_iterations

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncIterator[Event]:
        rounds = 0
        while self.max_iterations is None or rounds < self.max_iterations:
            for sub in self.sub_agents:
                escalated = False
                async for event in sub.run_async(ctx):
                    yield event
                    escalated = escalated or bool(event.actions.escalate)
                if escalated or ctx.end_invocation:
                    return
            rounds += 1


class ParallelAgent(BaseAgent):
    """Runs its sub-agents concurrently, each on its own branch so none sees the others' turns.

    Events are yielded as they come; a branch waits until its event has been handled (stored by
    the runner) before it goes on, so state written by an event is visible to its next step.
    Branches run through ``runtime.run_agent``: the durable runtime runs a sub-agent with
    ``execution=AgentExecution(child_workflow=True)`` as a child workflow.
    """

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncIterator[Event]:
        queue: asyncio.Queue[tuple[Event, asyncio.Event] | BaseException | None] = asyncio.Queue()

        async def run_branch(sub: BaseAgent) -> None:
            branch = f"{ctx.branch}.{sub.name}" if ctx.branch else f"{self.name}.{sub.name}"
            try:
                async for event in ctx.runtime.run_agent(sub, ctx.for_branch(branch)):
                    handled = asyncio.Event()
                    await queue.put((event, handled))
                    await handled.wait()
            except BaseException as e:  # surfaced to the consumer, which re-raises
                await queue.put(e)
                return
            await queue.put(None)

        tasks = [asyncio.create_task(run_branch(sub)) for sub in self.sub_agents]
        remaining = len(tasks)
        try:
            while remaining:
                item = await queue.get()
                if item is None:
                    remaining -= 1
                elif isinstance(item, BaseException):
                    raise item
                else:
                    event, handled = item
                    yield event
                    handled.set()
        finally:
            for task in tasks:
                if not task.done():
                    task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
