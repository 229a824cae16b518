"""Benchmark workload W1 (see shared WORKLOAD-W1.md), exactly: one agent, two tools, a scripted model.

One turn = 4 model calls + 3 tool calls, strictly sequential, ending in the text "done".
"""

from __future__ import annotations

from adk_core import App, LlmAgent, LlmRequest, LlmResponse, ScriptedModel
from adk_core.models import function_call_response, text_response, tool_responses_this_turn

USER_MESSAGE = "Please add 1 and 2, look up x, then add 3 and 4."
EXPECTED_TOOL_RESULTS = [{"sum": 3}, {"value": "X"}, {"sum": 7}]
EXPECTED_FINAL_TEXT = "done"


async def add(a: int, b: int) -> dict:
    """Add two integers."""
    return {"sum": a + b}


async def lookup(key: str) -> dict:
    """Look up a key."""
    return {"value": key.upper()}


def w1_script(request: LlmRequest) -> LlmResponse:
    """Count function responses after the last user content that carries text; answer by that count."""
    n = len(tool_responses_this_turn(request))
    if n == 0:
        return function_call_response("add", {"a": 1, "b": 2})
    if n == 1:
        return function_call_response("lookup", {"key": "x"})
    if n == 2:
        return function_call_response("add", {"a": 3, "b": 4})
    return text_response("done")


def build_agent() -> LlmAgent:
    return LlmAgent(
        name="assistant",
        # The harness's own costs left out: w1_script builds each response anew, and nothing reads
        # the requests back.
        model=ScriptedModel(w1_script, name="w1-scripted", record_requests=False, fresh_responses=True),
        instruction="You are a helpful assistant. Use the tools add and lookup when asked.",
        tools=[add, lookup],
    )


app = App(name="w1", root_agent=build_agent())


def check_turn(events) -> None:
    """Raise AssertionError unless ``events`` is one correct W1 turn."""
    results = [r.response for e in events for r in e.function_responses()]
    assert results == EXPECTED_TOOL_RESULTS, results
    finals = [e for e in events if e.is_final_response() and e.text]
    assert finals and finals[-1].text == EXPECTED_FINAL_TEXT, [e.text for e in events]
