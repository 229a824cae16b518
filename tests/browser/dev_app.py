"""An app for the dev page and HTTP API tests: a plain tool call, then a tool that needs a person's
confirmation, then a final answer that reports what happened."""

from __future__ import annotations

from typing import Any

from adk_core import App, LlmAgent, LlmRequest, ScriptedModel
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_core.tools import FunctionTool, LongRunningFunctionTool


def get_balance(account: str) -> dict:
    """Look up an account's balance."""
    return {"account": account, "balance": 1200}


def send_money(amount: int, to: str) -> dict:
    """Send money to someone."""
    return {"sent": amount, "to": to}


def open_ticket(topic: str) -> dict:
    """Open a support ticket; a person closes it later."""
    return {"status": "pending", "ticket": f"T-{topic}"}


def _teller(request: LlmRequest) -> Any:
    done = tool_responses_this_turn(request)
    if not done:
        return function_call_response("get_balance", {"account": "checking"})
    if len(done) == 1:
        return function_call_response("send_money", {"amount": 50, "to": "Ana"})
    last = done[-1]
    if "sent" in last:
        return text_response(f"Done: sent {last['sent']} to {last['to']}; the balance was {done[0]['balance']}.")
    return text_response(f"Nothing was sent ({last.get('error', last)}).")


def _helpdesk(request: LlmRequest) -> Any:
    done = tool_responses_this_turn(request)
    if not done:
        return function_call_response("open_ticket", {"topic": "vpn"})
    if done[-1].get("status") == "pending":
        return text_response(f"Opened {done[-1]['ticket']}; waiting for it to close.")
    return text_response(f"Ticket closed: {done[-1].get('resolution', done[-1])}.")


def teller(name: str) -> App:
    return App(
        name=name,
        root_agent=LlmAgent(
            name="teller", description="Looks up balances and sends money (asks first).", model=ScriptedModel(_teller),
            tools=[FunctionTool(get_balance), FunctionTool(send_money, require_confirmation=True)],
        ),
    )  # fmt: skip


def helpdesk(name: str) -> App:
    return App(
        name=name,
        root_agent=LlmAgent(
            name="helpdesk", description="Opens tickets that a person closes later.", model=ScriptedModel(_helpdesk),
            tools=[LongRunningFunctionTool(open_ticket)],
        ),
    )  # fmt: skip
