"""An app for the chat/stream tests: a tool that needs a human's confirmation."""

from __future__ import annotations

from typing import Any

from adk_core import App, LlmAgent, LlmRequest, ScriptedModel
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_core.tools import FunctionTool


def send_money(amount: int) -> dict:
    """Send money."""
    return {"sent": amount}


def _script(request: LlmRequest) -> Any:
    done = tool_responses_this_turn(request)
    if not done:
        return function_call_response("send_money", {"amount": 50})
    return text_response(f"result: {done[-1]}")


app = App(
    name="chat_confirm",
    root_agent=LlmAgent(
        name="banker", model=ScriptedModel(_script), tools=[FunctionTool(send_money, require_confirmation=True)]
    ),
)
