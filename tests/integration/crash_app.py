"""The app tests/integration/test_crash.py runs in worker subprocesses it SIGKILLs.

W1-like: the model is a function of the request (so a retry on another process answers the same),
one turn = slow_step, then add, then the text "done". ``slow_step`` and the model's second call
each hang once: the first attempt leaves a marker file in $CRASH_MARKER_DIR and sleeps, so the test
can kill the worker inside it; the retry on the next worker finds the marker and goes on at once.
The tool appends one line to ``effects.log`` per completed attempt (the side effect to count).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

from adk_core import AgentExecution, App, LlmAgent, LlmRequest, LlmResponse
from adk_core.agents.execution import MODEL_RETRY
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_core.tools import FunctionTool
from adk_core.tools.execution import RetryOptions, ToolExecution

HANG_SECONDS = 30.0
TOOL_MARKER = "tool.marker"
MODEL_MARKER = "model.marker"
EFFECTS = "effects.log"
USER_MESSAGE = "run the slow step, then add 1 and 2"


def marker_dir() -> Path:
    return Path(os.environ["CRASH_MARKER_DIR"])


async def _hang_once(marker: str) -> None:
    path = marker_dir() / marker
    if path.exists():
        return
    path.write_text(str(os.getpid()))
    await asyncio.sleep(HANG_SECONDS)


async def slow_step(step: int) -> dict:
    """A slow step with a side effect."""
    await _hang_once(TOOL_MARKER)
    with (marker_dir() / EFFECTS).open("a") as f:
        f.write(f"step {step} pid {os.getpid()}\n")
    return {"step": step, "ok": True}


async def add(a: int, b: int) -> dict:
    """Add two integers."""
    return {"sum": a + b}


def script(request: LlmRequest) -> LlmResponse:
    n = len(tool_responses_this_turn(request))
    if n == 0:
        return function_call_response("slow_step", {"step": 1})
    if n == 1:
        return function_call_response("add", {"a": 1, "b": 2})
    return text_response("done")


class SlowOnceModel:
    """Answers by ``script``; its second call of a turn hangs once (marker file)."""

    @property
    def name(self) -> str:
        return "slow-once"

    async def generate_content(self, request: LlmRequest, stream: bool = False) -> AsyncIterator[LlmResponse]:
        if len(tool_responses_this_turn(request)) == 1:
            await _hang_once(MODEL_MARKER)
        yield script(request)


FAST_RETRY = RetryOptions(initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=1))
FAST_HEARTBEAT = timedelta(seconds=3)


def build(heartbeat_timeout: timedelta | None = None) -> App:
    """The app; ``heartbeat_timeout`` replaces the default heartbeat timeouts (10 s) of the tool's and
    the model's activities, and the model's retry then waits 0.2 s (not 1 s) like the tool's."""
    tool, agent = ToolExecution(retry=FAST_RETRY), AgentExecution()
    if heartbeat_timeout is not None:
        tool = dataclasses.replace(tool, heartbeat_timeout=heartbeat_timeout)
        agent = AgentExecution(
            model_heartbeat_timeout=heartbeat_timeout,
            model_retry=dataclasses.replace(MODEL_RETRY, initial_interval=FAST_RETRY.initial_interval),
        )
    return App(
        name="crash_app",
        root_agent=LlmAgent(
            name="crasher",
            model=SlowOnceModel(),
            instruction="Run the slow step, then add.",
            tools=[FunctionTool(slow_step, execution=tool), add],
            execution=agent,
        ),
    )


app = build()
"""Default timeouts on purpose: the activities' own heartbeats (10 s heartbeat timeout) are what
notices the killed worker, not a shortened start-to-close."""

fast_heartbeat = build(FAST_HEARTBEAT)
"""The same app with a 3 s heartbeat timeout: a killed worker's call is noticed in 3 s, not 10 (the
worker beats every 0.5 s, Temporal's SDK sends a beat every 1.6 s), for the tests that are about
what happens after the kill; one test keeps the defaults."""
