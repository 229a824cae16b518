"""ParallelAgent when one branch fails while another has just finished.

Temporal's workflow runtime returns a child workflow's result instead of a cancellation when the
result and the cancel arrive in one activation: a cancelled branch then goes on handing over its
events. The turn hung once in a few hundred durable runs (tests/integration/
test_durable_service_limits.py); here a runtime that absorbs the cancellation the same way makes
it happen every time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from adk_core import InMemoryRunner, LlmAgent, ParallelAgent, ScriptedModel
from adk_core.agents.base import BaseAgent
from adk_core.agents.context import InvocationContext
from adk_core.errors import ToolError
from adk_core.models import text_response
from adk_core.runtime import LocalRuntime
from adk_core.types import Event


class AbsorbsCancellation(LocalRuntime):
    """`left` fails just as `right`'s result arrives: the turn cancels `right` while its result is
    ready, and `right` returns it anyway, as Temporal does for a child workflow resolved in the same
    activation as the cancel."""

    def __init__(self) -> None:
        super().__init__()
        self.right_ready = asyncio.Event()
        self.result_arrives: asyncio.Future[None] | None = None

    def run_agent(self, agent: BaseAgent, ctx: InvocationContext) -> AsyncIterator[Event]:
        return self._left() if agent.name == "left" else self._right(agent, ctx)

    async def _left(self) -> AsyncIterator[Event]:
        await self.right_ready.wait()
        assert self.result_arrives is not None
        asyncio.get_running_loop().call_soon(self.result_arrives.set_result, None)  # before the failure is seen
        raise ToolError("left failed")
        yield  # noqa: RET503  (unreachable: makes this an async generator)

    async def _right(self, agent: BaseAgent, ctx: InvocationContext) -> AsyncIterator[Event]:
        events = [e async for e in agent.run_async(ctx)]  # what the child workflow will return
        self.result_arrives = asyncio.get_running_loop().create_future()
        self.right_ready.set()
        try:
            await self.result_arrives
        except asyncio.CancelledError:
            assert self.result_arrives.done()  # the result won
            task = asyncio.current_task()
            assert task is not None
            task.uncancel()
        for event in events:
            yield event


@pytest.mark.parametrize("right_answers", [1, 3])
async def test_a_failing_branch_fails_the_turn_while_a_finished_one_still_hands_over_events(right_answers: int) -> None:
    fan = ParallelAgent(name="fan", sub_agents=[
        LlmAgent(name="left", model=ScriptedModel([text_response("l")])),
        LlmAgent(name="right", model=ScriptedModel([text_response(f"r{i}") for i in range(right_answers)])),
    ])  # fmt: skip
    runner = InMemoryRunner(fan, runtime=AbsorbsCancellation())

    with pytest.raises(ToolError, match="left failed"):
        await asyncio.wait_for(runner.run("hi"), timeout=5)  # hung before: the branch waited to be handled


async def test_closing_the_turn_mid_event_releases_every_branch() -> None:
    """The consumer stops at the first event: the branch holding it and the others all end."""
    fan = ParallelAgent(name="fan", sub_agents=[
        LlmAgent(name=name, model=ScriptedModel([text_response(name)])) for name in ("a", "b", "c")
    ])  # fmt: skip
    events: Any = InMemoryRunner(fan).run_async(user_id="u", session_id="s", new_message=None)
    first = await asyncio.wait_for(anext(events), timeout=5)
    assert first is not None
    await asyncio.wait_for(events.aclose(), timeout=5)
