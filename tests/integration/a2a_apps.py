"""The two apps of the A2A tests: ``a2a_specialist`` (served over A2A by adkt.a2a_server) and
``a2a_front``, whose coordinator transfers to a RemoteA2aAgent that reaches the specialist.

test_a2a_crash.py runs ``app`` (the front app, built from $A2A_REMOTE_URL) in worker subprocesses
it SIGKILLs. The specialist's ``answer`` tool logs each run to $A2A_TEST_LOG (one JSON line) and,
when $A2A_HOLD_DIR is set, writes ``started`` there and waits (bounded) for ``release``: the slow
remote the crash test kills the front worker behind.
"""

from __future__ import annotations

import asyncio
import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

from adk_core import App, LlmAgent
from adk_core.a2a import RemoteA2aAgent
from adk_core.models import LlmRequest, LlmResponse, ScriptedModel, function_call_response, text_response
from adk_core.models import tool_responses_this_turn as responses
from adk_core.tools import FunctionTool, ToolContext, ToolExecution
from adk_core.tools.execution import RetryOptions

HOLD_SECONDS = 60.0


async def answer(tool_context: ToolContext) -> dict[str, Any]:
    """Answer the user's message (slowly when the crash test holds it)."""
    text = tool_context.user_content.text if tool_context.user_content is not None else ""
    log = os.environ.get("A2A_TEST_LOG")
    if log:
        with open(log, "a") as out:
            out.write(json.dumps({"text": text, "session": tool_context.session.id}) + "\n")
    hold = os.environ.get("A2A_HOLD_DIR")
    if hold:
        (Path(hold) / "started").write_text(str(os.getpid()))
        for _ in range(int(HOLD_SECONDS / 0.05)):
            if (Path(hold) / "release").exists():
                break
            await asyncio.sleep(0.05)
    return {"answer": f"specialist says: {text}"}


def _specialist_model(request: LlmRequest) -> LlmResponse:
    done = responses(request)
    return text_response(done[-1]["answer"]) if done else function_call_response("answer", {})


def _coordinator_model(request: LlmRequest) -> LlmResponse:
    if responses(request):
        return text_response("transferred")
    return function_call_response("transfer_to_agent", {"agent_name": "specialist_remote"})


def specialist_app(name: str = "a2a_specialist", *, confirm: bool = False) -> App:
    """``confirm``: the answer tool asks a human first (the turn waits: the A2A task needs input)."""
    tool = FunctionTool(answer, require_confirmation=confirm)
    agent = LlmAgent(name="specialist", model=ScriptedModel(_specialist_model), tools=[tool],
                     description="answers questions")  # fmt: skip
    return App(name=name, root_agent=agent)


def front_app(url: str, *, name: str = "a2a_front", heartbeat: timedelta = timedelta(seconds=10)) -> App:
    remote = RemoteA2aAgent(
        name="specialist_remote", agent_card=url, description="the specialist, reached over A2A",
        # Called where each request is made: tells the crash test which worker process polls.
        headers=lambda: {"X-Test-Worker-Pid": str(os.getpid())},
        poll_interval=timedelta(seconds=0.1), poll_budget=timedelta(seconds=20), max_wait=timedelta(seconds=120),
        # A short heartbeat timeout lets the crash test notice the killed worker's poll in 3 s.
        execution=ToolExecution(start_to_close_timeout=timedelta(seconds=60), heartbeat_timeout=heartbeat,
                                retry_errors=True, retry=RetryOptions(maximum_attempts=3,
                                                                      non_retryable_error_types=("A2aCallError",))),
    )  # fmt: skip
    coordinator = LlmAgent(name="coordinator", model=ScriptedModel(_coordinator_model), sub_agents=[remote])
    return App(name=name, root_agent=coordinator)


app = front_app(os.environ.get("A2A_REMOTE_URL", "http://127.0.0.1:9/"), heartbeat=timedelta(seconds=3))
