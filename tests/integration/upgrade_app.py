"""Two versions of one app, for the rolling upgrade (tests/integration/test_rolling_upgrade.py).

    v1   instruction "v1", tools: slow_step, transfer (needs confirmation), legacy_lookup
    v2   instruction "v2", tools: slow_step, transfer, new_lookup (legacy_lookup removed), and a
         before_model callback that answers "hi" itself: the workflow then schedules no model
         activity where v1 did, so v2 code replaying a v1 history would fail as non-deterministic.

Every answer names the version whose code produced it. ``slow_step`` waits until the file named by
$UPGRADE_RELEASE_FILE exists (bounded), so the test holds turns mid-tool across the switch.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from adk_core import App, LlmAgent, LlmRequest, ScriptedModel
from adk_core.eval import EvalCase, passthrough, tool_trajectory
from adk_core.models import LlmResponse, function_call_response, text_response, tool_responses_this_turn
from adk_core.simulator import SimulatorPlugin
from adk_core.tools import FunctionTool

APP_NAME = "upgrade_desk"
SLOW_STEP_LIMIT_SECONDS = 120.0


async def slow_step(job: str) -> dict:
    """Run a slow job."""
    release = Path(os.environ["UPGRADE_RELEASE_FILE"])
    deadline = time.monotonic() + SLOW_STEP_LIMIT_SECONDS
    while not release.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{release} never appeared")
        await asyncio.sleep(0.1)
    return {"job": job, "done": True}


def transfer(amount: int) -> dict:
    """Send money."""
    return {"sent": amount}


def legacy_lookup(key: str) -> dict:
    """Look a key up (v1 only)."""
    return {"key": key, "source": "legacy"}


def new_lookup(key: str) -> dict:
    """Look a key up (v2 only)."""
    return {"key": key, "source": "new"}


def _script(version: str):
    def script(request: LlmRequest) -> LlmResponse:
        done = tool_responses_this_turn(request)
        said = request.contents[-1].parts[0].text if request.contents and request.contents[-1].parts else ""
        if done:
            return text_response(f"{version}: done {sorted(done[-1])}")
        if said == "slow":
            return function_call_response("slow_step", {"job": "report"})
        if said == "pay":
            return function_call_response("transfer", {"amount": 5})
        return text_response(f"{version}: {said}")

    return script


def _answer_hi_in_v2(callback_context: object, llm_request: LlmRequest) -> LlmResponse | None:
    said = llm_request.contents[-1].parts[0].text if llm_request.contents and llm_request.contents[-1].parts else ""
    return text_response("v2: hi (callback)") if said == "hi" else None


def _tools(*extra: object) -> list:
    return [FunctionTool(slow_step), FunctionTool(transfer, require_confirmation=True), *extra]


v1 = App(name=APP_NAME, root_agent=LlmAgent(
    name="desk", instruction="v1", model=ScriptedModel(_script("v1"), name="upgrade-v1"),
    tools=_tools(FunctionTool(legacy_lookup)),
))
v2 = App(name=APP_NAME, root_agent=LlmAgent(
    name="desk", instruction="v2", model=ScriptedModel(_script("v2"), name="upgrade-v2"),
    tools=_tools(FunctionTool(new_lookup)), before_model_callback=_answer_hi_in_v2,
))

# An eval suite whose one trial is mid-tool across the switch: it must finish on v1.
slow_cases = [EvalCase(
    "slow-report", app_or_agent=v1, tool_mocks=passthrough(slow_step), first_message="slow",
    metrics=[tool_trajectory([{"name": "slow_step", "args": {"job": "report"}}])],
)]


# A conversation a person answers through the agent simulator: its turn waits mid-model-call.
SIM_APP_NAME = "upgrade_sim"


def _person_answers(request: LlmRequest) -> LlmResponse:
    raise AssertionError("the simulator answers this agent's model calls")


sim_v1 = App(name=SIM_APP_NAME, root_agent=LlmAgent(name="helper", model=ScriptedModel(_person_answers)),
             plugins=[SimulatorPlugin()])  # fmt: skip
sim_v2 = App(name=SIM_APP_NAME, root_agent=LlmAgent(name="helper", instruction="v2",
                                                    model=ScriptedModel(_person_answers)),
             plugins=[SimulatorPlugin()])  # fmt: skip
