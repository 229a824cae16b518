"""The 10-case suite tests/integration/test_eval_crash.py runs on worker subprocesses it SIGKILLs.

Case i: the user asks to look up k<i> (a mocked tool, so an activity), the model answers with the
value, the scripted user asks "and doubled?", the model answers, the user ends the conversation:
three model calls per case. The model is a function of the request and appends one line per
*completed* call to ``calls.log`` in $EVAL_CRASH_DIR ("case<i> call<n> pid <pid>"), and the mock one
line per run to ``tools.log``: the test reads them to see that nothing completed ran twice.

While ``armed`` exists in that folder, the second model call of cases HANG_FROM and up hangs once
(a ``hang-case<i>`` marker, then a long sleep): the test kills the worker while those calls hang,
disarms, and starts a fresh worker, whose retries find the markers and go on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

from adk_core import AgentExecution, LlmAgent, LlmRequest, LlmResponse
from adk_core.agents.execution import MODEL_RETRY
from adk_core.eval import EvalCase, ToolMock, UserAgents, metric, scripted_user, tool_trajectory
from adk_core.models import function_call_response, text_response

N_CASES = 10
HANG_FROM = 4
HANG_SECONDS = 120.0
CALLS_LOG = "calls.log"
TOOLS_LOG = "tools.log"
# The killed worker's hanging model calls are noticed in 3 s, not the default 10 s, and retried after
# 0.2 s (not 1 s): the test is about what the retries do (tests/integration/test_crash.py keeps one
# crash on the defaults).
EXECUTION = AgentExecution(
    model_heartbeat_timeout=timedelta(seconds=3),
    model_retry=dataclasses.replace(MODEL_RETRY, initial_interval=timedelta(milliseconds=200)),
)


def crash_dir() -> Path:
    return Path(os.environ["EVAL_CRASH_DIR"])


def _case_index(request: LlmRequest) -> int:
    first = next(c.text for c in request.contents if c.role == "user" and c.text)
    match = re.match(r"case (\d+):", first)
    assert match, first
    return int(match.group(1))


def _reply(request: LlmRequest, case: int) -> LlmResponse:
    responses = [r.response for c in request.contents for r in c.function_responses()]
    if not responses:
        return function_call_response("lookup", {"key": f"k{case}"})
    value = responses[-1]["value"]
    asked_double = any(c.role == "user" and c.text == "and doubled?" for c in request.contents)
    return text_response(f"doubled {2 * value}" if asked_double else f"value {value}")


class LoggedModel:
    """Answers by ``_reply``; logs each completed call; hangs once where the test kills the worker."""

    @property
    def name(self) -> str:
        return "logged-scripted"

    async def generate_content(self, request: LlmRequest, stream: bool = False) -> AsyncIterator[LlmResponse]:
        case = _case_index(request)
        call = 1 + sum(1 for c in request.contents if c.role == "model")
        folder = crash_dir()
        hang = folder / f"hang-case{case}"
        if call == 2 and case >= HANG_FROM and (folder / "armed").exists() and not hang.exists():
            hang.write_text(str(os.getpid()))
            await asyncio.sleep(HANG_SECONDS)
        await asyncio.sleep(0.02)  # a little model latency, so cases overlap
        response = _reply(request, case)
        with (folder / CALLS_LOG).open("a") as f:
            f.write(f"case{case} call{call} pid {os.getpid()}\n")
        yield response


def _mock(args: dict) -> dict:
    with (crash_dir() / TOOLS_LOG).open("a") as f:
        f.write(f"{args['key']} pid {os.getpid()}\n")
    return {"value": int(args["key"][1:]) + 10}


def lookup(key: str) -> dict:
    """Look a key up in an external service."""
    raise RuntimeError("mocked in eval")


def _case(i: int) -> EvalCase:
    return EvalCase(
        f"case-{i}",
        app_or_agent=LlmAgent(name="calc", model=LoggedModel(), tools=[lookup], execution=EXECUTION),
        tool_mocks={"lookup": ToolMock(execute=_mock)},
        user_agents=UserAgents(loop=scripted_user("customer", ["and doubled?"])),
        first_message=f"case {i}: look up k{i}",
        metrics=[
            metric("doubled", lambda trace, i=i: trace.final_response() == f"doubled {2 * (i + 10)}"),
            tool_trajectory([("lookup", {"key": f"k{i}"})], name="looked_up"),
        ],
    )


cases = [_case(i) for i in range(N_CASES)]
