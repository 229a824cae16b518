"""Apps for the determinism check (adk_temporal.determinism, `adkt check`): one whose workflow code
reads the clock, randomness and fresh ids directly, and the same app written with the runtime seam.

Module-level apps, so `adkt check tests.unit.determinism_apps:bad` loads them as a user would.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from time import time as now
from typing import Any

from adk_core import App, BaseAgent, LlmAgent, LlmRequest, LlmResponse, SequentialAgent
from adk_core.agents.base import new_event
from adk_core.agents.context import InvocationContext
from adk_core.plugins import BasePlugin
from adk_core.tools import FunctionTool
from adk_core.tools.execution import ToolExecution
from adk_core.types import Content, Event

INLINE = ToolExecution(mode="inline", start_to_close_timeout=timedelta(seconds=1))


class RemoteModel:
    """A model the check must never call (a real provider in a real app)."""

    name = "remote"

    async def generate_content(self, request: LlmRequest, *, stream: bool = False) -> AsyncIterator[LlmResponse]:
        raise AssertionError("the check called a model; model calls are activities")
        yield  # pragma: no cover


# --- the mistakes ---------------------------------------------------------------------------


def greeting_by_time_of_day(ctx: Any) -> str:
    hour = datetime.now().hour
    return "Good morning." if hour < 12 else "Good afternoon."


def tag_request(callback_context: Any, llm_request: LlmRequest) -> None:
    callback_context.state["request_id"] = str(uuid.uuid4())


def remember_when(callback_context: Any) -> None:
    callback_context.state["answered_at"] = now()


def stamp(note: str) -> dict:
    """Stamp a note with the time (runs in the workflow: inline)."""
    return {"note": note, "at": time.time()}


def fetch_quote(symbol: str) -> dict:
    """A tool that runs as an activity: it may read the clock (its result is recorded)."""
    return {"symbol": symbol, "at": time.time()}


class SamplingPlugin(BasePlugin):
    def __init__(self) -> None:
        super().__init__("sampling")

    async def after_model_callback(self, *, callback_context: Any, llm_response: LlmResponse) -> None:
        if random.random() < 0.1:
            callback_context.state["sampled"] = True


def _bad_app() -> App:
    specialist = LlmAgent(name="specialist", model=RemoteModel(), after_agent_callback=remember_when)  # type: ignore[arg-type]
    root = LlmAgent(
        name="desk", model=RemoteModel(), instruction=greeting_by_time_of_day,  # type: ignore[arg-type]
        before_model_callback=tag_request,
        tools=[FunctionTool(stamp, execution=INLINE), fetch_quote], sub_agents=[specialist],
    )
    return App(name="bad_desk", root_agent=root, plugins=[SamplingPlugin()])


# --- the same app, right --------------------------------------------------------------------


def greeting_by_workflow_time(ctx: Any) -> str:
    hour = datetime.fromtimestamp(ctx.runtime.now()).hour
    return "Good morning." if hour < 12 else "Good afternoon."


def tag_request_durably(callback_context: Any, llm_request: LlmRequest) -> None:
    callback_context.state["request_id"] = callback_context.runtime.new_id()


def remember_when_durably(callback_context: Any) -> None:
    callback_context.state["answered_at"] = callback_context.runtime.now()


def stamp_durably(note: str, tool_context: Any) -> dict:
    """Stamp a note with the workflow's time."""
    return {"note": note, "at": tool_context.runtime.now()}


class SeededSamplingPlugin(BasePlugin):
    def __init__(self) -> None:
        super().__init__("sampling")

    async def after_model_callback(self, *, callback_context: Any, llm_response: LlmResponse) -> None:
        if callback_context.runtime.random() < 0.1 or random.Random(42).random() < 0.1:
            callback_context.state["sampled"] = True


def _good_app() -> App:
    specialist = LlmAgent(name="specialist", model=RemoteModel(), after_agent_callback=remember_when_durably)  # type: ignore[arg-type]
    root = LlmAgent(
        name="desk", model=RemoteModel(), instruction=greeting_by_workflow_time,  # type: ignore[arg-type]
        before_model_callback=tag_request_durably,
        tools=[FunctionTool(stamp_durably, execution=INLINE), fetch_quote], sub_agents=[specialist],
    )
    return App(name="good_desk", root_agent=root, plugins=[SeededSamplingPlugin()])


def big_amounts_after_hours(amount: int) -> bool:
    """A require_confirmation rule of an activity tool: evaluated with the tool, in the activity."""
    return amount > 100 or datetime.now().hour >= 18


def transfer(amount: int) -> dict:
    """Send money (an activity)."""
    return {"sent": amount}


class Stamper(BaseAgent):
    """A custom agent: its _run_async_impl is workflow code."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncIterator[Event]:
        yield new_event(ctx, author=self.name, content=Content.model(f"at {time.monotonic():.0f}"))


bad = _bad_app()
good = _good_app()
custom = App(name="custom_desk", root_agent=SequentialAgent(name="flow", sub_agents=[
    LlmAgent(name="payer", model=RemoteModel(),  # type: ignore[arg-type]
             tools=[FunctionTool(transfer, require_confirmation=big_amounts_after_hours)]),
    Stamper(name="stamper"),
]))
