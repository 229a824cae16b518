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
        # Each branch hands over its events one at a time; when its task ends, one last item follows:
        # None when it finished, its exception when it failed or was cancelled (a done callback, so
        # even a branch cancelled before it started sends it).
        queue: asyncio.Queue[tuple[Event, asyncio.Event] | BaseException | None] = asyncio.Queue()
        stopping = False

        async def run_branch(sub: BaseAgent) -> None:
            branch = f"{ctx.branch}.{sub.name}" if ctx.branch else f"{self.name}.{sub.name}"
            async for event in ctx.runtime.run_agent(sub, ctx.for_branch(branch)):
                handled = asyncio.Event()
                await queue.put((event, handled))
                await handled.wait()
                if stopping:
                    return

        def last_item(task: asyncio.Task[None]) -> None:
            queue.put_nowait(asyncio.CancelledError() if task.cancelled() else task.exception())

        tasks = [asyncio.create_task(run_branch(sub)) for sub in self.sub_agents]
        for task in tasks:
            task.add_done_callback(last_item)
        ended = 0  # branches whose last item was taken from the queue
        in_hand: asyncio.Event | None = None
        try:
            while ended < len(tasks):
                item = await queue.get()
                if item is None:
                    ended += 1
                elif isinstance(item, BaseException):
                    ended += 1
                    raise item
                else:
                    event, in_hand = item
                    yield event
                    in_hand.set()
        finally:
            stopping = True
            if in_hand is not None:
                in_hand.set()
            for task in tasks:
                if not task.done():
                    task.cancel()
            # A cancelled branch may go on: the durable runtime returns a child workflow's result
            # instead of the cancellation when both arrive in one workflow activation. Release what
            # it hands over until every branch has ended; gathering it while it waited for its event
            # to be handled hung the turn.
            while ended < len(tasks):
                item = await queue.get()
                if item is None or isinstance(item, BaseException):
                    ended += 1
                else:
                    item[1].set()
            await asyncio.gather(*tasks, return_exceptions=True)
