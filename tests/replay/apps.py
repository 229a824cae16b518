"""The apps the checked-in histories (tests/replay/histories) were recorded with.

Module-level objects, so `adkt replay ... --app tests.replay.apps:children` loads the same apps a
worker did. Changing what these apps do changes what replaying their histories expects: that is
the point (tests/integration/test_replay.py).
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from adk_core import (
    AgentExecution,
    App,
    LlmAgent,
    LlmRequest,
    LlmResponse,
    ParallelAgent,
    ScriptedModel,
    SequentialAgent,
)
from adk_core.compaction import EventsCompactionConfig, LlmEventsSummarizer
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_core.models.base import UsageMetadata
from adk_core.simulator import SimulatorPlugin
from adk_core.tools import AgentTool, FunctionTool
from adk_core.tools.execution import ToolExecution
from adk_core.types import Content, Part
from examples import w1

LONG_TURN_CALLS = 680
"""Tool calls in the long turn: enough to outgrow the conversation's run (workflows.session
TURN_HISTORY_EVENTS) and then the child's first run, which continues-as-new."""


def transfer_money(amount: int) -> dict:
    """Send money."""
    return {"sent": amount}


def _confirm_script(request: LlmRequest) -> Any:
    done = tool_responses_this_turn(request)
    if not done:
        return function_call_response("transfer_money", {"amount": 50})
    return text_response(f"result: {done[-1]}")


def build_confirm_app(*, tool_execution: Any = None) -> App:
    """The confirmation conversation's app; ``tool_execution`` lets the replay test build a changed variant."""
    tool = FunctionTool(transfer_money, require_confirmation=True, execution=tool_execution)
    return App(
        name="replay_confirm",
        root_agent=LlmAgent(
            name="banker", model=ScriptedModel(_confirm_script, name="confirm-scripted"), tools=[tool]
        ),
    )


def _helper_script(request: LlmRequest) -> Any:
    return text_response(f"helped with {request.contents[-1].parts[0].text}")


def _caller_script(request: LlmRequest) -> Any:
    done = tool_responses_this_turn(request)
    if done:
        return text_response(f"caller got {done[0]['result']}")
    return function_call_response("helper", {"request": "the report"})


def _seen(name: str):
    def script(request: LlmRequest) -> Any:
        texts = [p.text for c in request.contents for p in c.parts if p.text]
        return text_response(f"{name} saw {len(texts)} texts")

    return script


def build_children_app(*, child_workflow: bool = True) -> App:
    """An AgentTool agent and two ParallelAgent branches, each a child workflow."""
    execution = AgentExecution(child_workflow=child_workflow)
    helper = LlmAgent(name="helper", description="Helps.", model=ScriptedModel(_helper_script), execution=execution)
    caller = LlmAgent(name="caller", model=ScriptedModel(_caller_script), tools=[AgentTool(helper)])
    fan = ParallelAgent(name="fan", sub_agents=[
        LlmAgent(name="left", model=ScriptedModel(_seen("left")), execution=execution),
        LlmAgent(name="right", model=ScriptedModel(_seen("right")), execution=execution),
    ])
    return App(name="replay_children", root_agent=SequentialAgent(name="pipeline", sub_agents=[caller, fan]))


def _count_answer(request: LlmRequest) -> Any:
    texts = [p.text for c in request.contents for p in c.parts if p.text]
    return text_response(f"answer to {texts[-1] if texts else 'nothing'}")


def _summary(request: LlmRequest) -> Any:
    return text_response("The user asked a few questions and got answers.")


compaction = App(
    name="replay_compaction",
    root_agent=LlmAgent(name="counter", model=ScriptedModel(_count_answer, name="counter-model")),
    events_compaction_config=EventsCompactionConfig(
        2, 1, summarizer=LlmEventsSummarizer(ScriptedModel(_summary, name="summarizer-model"))
    ),
)


COMPACTED_TURN_STEPS = 6


def _stepping_with_usage(request: LlmRequest) -> LlmResponse:
    """Steps through one turn, reporting a prompt token per 4 characters of the request; it reads its
    progress from the newest step result it sees (a summary may stand in for the turn's start)."""
    done = 0
    for content in reversed(request.contents):
        results = [p.function_response.response for p in content.parts if p.function_response is not None]
        if results:
            done = int(results[-1]["i"]) + 1
            break
        if content.role == "user" and content.parts and content.parts[0].text and content.parts[0].text.startswith("do "):
            break
    response = function_call_response("logged_step", {"i": done}) if done < COMPACTED_TURN_STEPS else text_response("all done")
    size = sum(len(c.model_dump_json()) for c in request.contents)
    return response.model_copy(update={"usage_metadata": UsageMetadata(prompt_token_count=size // 4)})


async def logged_step(i: int) -> dict:
    """Do step i, and log what it did."""
    return {"i": i, "log": "step output " * 12}


compaction_in_turn = App(
    name="replay_compaction_in_turn",
    root_agent=LlmAgent(name="stepper", model=ScriptedModel(_stepping_with_usage, name="stepper-model"), tools=[logged_step]),
    events_compaction_config=EventsCompactionConfig(
        summarizer=LlmEventsSummarizer(ScriptedModel(_summary, name="summarizer-model")),
        token_threshold=300, event_retention_size=2,
    ),
)


async def step(i: int) -> dict:
    """Do step i."""
    return {"done": i}


def _long_script(request: LlmRequest) -> LlmResponse:
    n = len(tool_responses_this_turn(request))
    return function_call_response("step", {"i": n}) if n < LONG_TURN_CALLS else text_response(f"done after {n}")


long_turn = App(name="replay_long", root_agent=LlmAgent(name="worker", model=ScriptedModel(_long_script), tools=[step]))


def _stream_script(request: LlmRequest) -> list[LlmResponse]:
    pieces = ["It is 21", " degrees", " in Paris."]
    partials = [
        LlmResponse(content=Content(role="model", parts=[Part(text=p)]), partial=True) for p in pieces
    ]
    return [*partials, text_response("".join(pieces))]


streaming = App(name="replay_stream", root_agent=LlmAgent(name="talker", model=ScriptedModel(_stream_script)))


def get_weather(city: str) -> dict:
    """Weather for a city.

    Args:
        city: the city name.
    """
    return {"city": city, "sky": "sunny"}


def _unused(request: LlmRequest) -> Any:
    raise AssertionError("the simulator answers this agent's model calls")


simulator = App(
    name="replay_simulator",
    root_agent=LlmAgent(name="weather", model=ScriptedModel(_unused), instruction="Answer with get_weather.",
                        tools=[FunctionTool(get_weather)]),
    plugins=[SimulatorPlugin()],
)

def _w1_variant(**agent_fields: Any) -> App:
    """W1 under its own app name with one thing changed: what a deploy of a changed app looks like."""
    fields: dict[str, Any] = dict(
        name="assistant", model=ScriptedModel(w1.w1_script, name="w1-scripted"),
        instruction="You are a helpful assistant. Use the tools add and lookup when asked.",
        tools=[w1.add, w1.lookup],
    )
    return App(name=w1.app.name, root_agent=LlmAgent(**{**fields, **agent_fields}))


w1_inline_add = _w1_variant(tools=[
    FunctionTool(w1.add, execution=ToolExecution(mode="inline", start_to_close_timeout=timedelta(seconds=1))), w1.lookup,
])
"""W1 with `add` moved from an activity into the workflow: its recorded histories no longer replay."""

PROMO_ENDS = datetime(2026, 11, 24, tzinfo=UTC).timestamp()
"""After the W1 history was recorded (2026-11-23); test_replay moves it to just before the replay."""


def _free_lookups_until_promo_ends(tool: Any, args: dict, tool_context: Any) -> Any:
    # The mistake adkt check exists for: the wall clock inside workflow code. A replay after
    # PROMO_ENDS skips the lookup the recorded run made.
    if tool.name == "lookup" and time.time() > PROMO_ENDS:
        return {"value": "promo over"}
    return None


w1_clock_callback = _w1_variant(before_tool_callback=_free_lookups_until_promo_ends)
"""W1 with a before-tool callback that reads the clock directly."""

async def _add_then_hang(request: LlmRequest) -> LlmResponse:
    if not tool_responses_this_turn(request):
        return function_call_response("add", {"a": 1, "b": 2})
    await asyncio.sleep(30)  # the recording cancels the conversation while this call runs
    return text_response("too late")


cancel = App(name="replay_cancel", root_agent=LlmAgent(name="adder", model=ScriptedModel(_add_then_hang), tools=[w1.add]))
"""A turn whose second model call runs until the conversation is cancelled."""

confirm = build_confirm_app()
children = build_children_app()
w1_app = w1.app

EVAL_SUITE = "examples.eval_chest_pain:chest_pain_case"
"""The eval cases the EvalSuiteWorkflow history ran (eval workflows register their apps themselves)."""


def apps() -> list[App]:
    """Every app the histories were recorded with: what a worker of this build serves."""
    return [w1_app, confirm, children, compaction, compaction_in_turn, long_turn, streaming, simulator, cancel]
