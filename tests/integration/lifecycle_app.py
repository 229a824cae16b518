"""An app whose one tool takes a few seconds and leaves a trace of each run in $LIFECYCLE_DIR, for
tests/integration/test_worker_lifecycle.py (a worker stopped while the tool runs)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from adk_core import App, LlmAgent, LlmRequest, ScriptedModel
from adk_core.models import LlmResponse, function_call_response, text_response, tool_responses_this_turn
from adk_core.tools import FunctionTool

TOOL_SECONDS = 2.0
"""Long enough that the test's SIGTERM (sent within ~0.1 s of the tool's start) comes well before the
tool's end: the test checks the worker waited at least 1 s for it."""


async def slow_report(name: str) -> dict:
    """Write a report (slowly)."""
    folder = Path(os.environ["LIFECYCLE_DIR"])
    with (folder / "started").open("a") as f:
        f.write(f"{name}\n")
    await asyncio.sleep(TOOL_SECONDS)
    with (folder / "finished").open("a") as f:
        f.write(f"{name}\n")
    return {"report": name}


def _script(request: LlmRequest) -> LlmResponse:
    done = tool_responses_this_turn(request)
    return text_response(f"wrote {done[-1]['report']}") if done else function_call_response("slow_report", {"name": "q3"})


app = App(name="lifecycle", root_agent=LlmAgent(name="reporter", model=ScriptedModel(_script),
                                                tools=[FunctionTool(slow_report)]))  # fmt: skip
