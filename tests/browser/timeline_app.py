"""An app whose turn has something of everything the dev page's timeline draws: a transfer from one
agent to another, priced model calls, a tool that fails once and is retried by Temporal, and a tool
that waits for a person's confirmation."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from adk_core import App, LlmAgent, LlmRequest, ScriptedModel
from adk_core.models import UsageMetadata, function_call_response, text_response, tool_responses_this_turn
from adk_core.tools import FunctionTool, RetryOptions, ToolExecution

MODEL = "gemini-2.5-flash"  # priced by the worker's default table
USAGE = UsageMetadata(prompt_token_count=1200, candidates_token_count=40)


class Flaky:
    """find_table's service: down for the first call of each restaurant, then up."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def find_table(self, restaurant: str, people: int, time: str) -> dict:
        """Find a free table."""
        if restaurant not in self.seen:
            self.seen.add(restaurant)
            raise ConnectionError(f"{restaurant}'s booking service did not answer")
        return {"restaurant": restaurant, "table": 12, "people": people, "time": time}


def book_table(restaurant: str, table: int, time: str) -> dict:
    """Book a table."""
    return {"booked": f"{restaurant}, table {table} at {time}"}


def _priced(response: Any) -> Any:
    response.usage_metadata = USAGE.model_copy()
    return response


def _concierge(request: LlmRequest) -> Any:
    return _priced(function_call_response("transfer_to_agent", {"agent_name": "booker"}))


def _booker(request: LlmRequest) -> Any:
    done = tool_responses_this_turn(request)
    found = next((d for d in done if "table" in d), None)
    if found is None:  # (in-process, without Temporal's retry, the first failure comes back here)
        return _priced(function_call_response("find_table", {"restaurant": "Luigi's", "people": 2, "time": "20:00"}))
    if done[-1] is found:
        return _priced(function_call_response("book_table", {"restaurant": "Luigi's", "table": found["table"], "time": "20:00"}))
    last = done[-1]
    return _priced(text_response(f"Booked: {last['booked']}." if "booked" in last else f"Not booked ({last})."))


def concierge(name: str) -> App:
    flaky = Flaky()
    retried = ToolExecution(retry_errors=True, retry=RetryOptions(initial_interval=timedelta(milliseconds=100), maximum_attempts=3))
    booker = LlmAgent(
        name="booker", description="Finds and books tables.", model=ScriptedModel(_booker, name=MODEL),
        tools=[FunctionTool(flaky.find_table, execution=retried), FunctionTool(book_table, require_confirmation=True)],
    )  # fmt: skip
    root = LlmAgent(name="concierge", description="Sends each request to the right agent.",
                    model=ScriptedModel(_concierge, name=MODEL), sub_agents=[booker])  # fmt: skip
    return App(name=name, root_agent=root)
