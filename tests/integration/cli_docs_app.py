"""The `shop` app that docs/temporal-cli.md drives with the plain `temporal` CLI: a support agent
that answers, and refunds only once a person confirms. Scripted, so no model key is needed."""

from __future__ import annotations

from typing import Any

from adk_core import App, LlmAgent, LlmRequest, ScriptedModel
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_core.tools import FunctionTool
from tests.scenarios import user_said


def refund(invoice: int) -> dict[str, Any]:
    """Refund an invoice."""
    return {"refunded": invoice}


def _script(request: LlmRequest) -> Any:
    done = tool_responses_this_turn(request)
    if done:
        return text_response(f"Done: {done[-1]}")
    if "refund" in user_said(request).lower():
        return function_call_response("refund", {"invoice": 42})
    return text_response("Invoice 42 was sent on 3 March.")


def shop_app(name: str = "shop") -> App:
    agent = LlmAgent(
        name="support_agent",
        model=ScriptedModel(_script),
        tools=[FunctionTool(refund, require_confirmation=True)],
    )
    return App(name=name, root_agent=agent)


app = shop_app()
