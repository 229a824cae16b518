"""A quick scripted suite the dev page starts (tests/browser/test_eval_page.py): every model here is
a function of its request, so a run takes a few seconds and a retry or replay answers the same.

    refund-order     looks the order up (mocked), approves the refund (a real tool that writes
                     ``refund_status`` to state), answers; a judge agrees, with its rationale: passes
    escalate-angry   an angry customer asks for a manager and the agent does not offer one: the
                     ``offers_manager`` metric and the judge fail
"""

from __future__ import annotations

from adk_core import LlmAgent, LlmRequest, ScriptedModel, ToolContext
from adk_core.eval import EvalCase, ToolMock, llm_judge, metric, passthrough, state_metric, tool_trajectory
from adk_core.models import LlmResponse, function_call_response, text_response, tool_responses_this_turn

SUITE = "tests.integration.eval_page_suite:cases"


def lookup_order(order_id: str) -> dict:
    """Look an order up in the shop's database."""
    raise AssertionError("never called in eval: mocked")


def approve_refund(order_id: str, amount: int, tool_context: ToolContext) -> dict:
    """Refund an order."""
    tool_context.state["refund_status"] = "approved"
    return {"refunded": amount, "order_id": order_id}


def _support(request: LlmRequest) -> LlmResponse:
    said = next((c.text for c in reversed(request.contents) if c.role == "user" and c.text), "") or ""
    if "manager" in said:
        return text_response("I'm sorry to hear that. Is there anything else about your order?")
    done = tool_responses_this_turn(request)
    if not done:
        return function_call_response("lookup_order", {"order_id": "42"})
    if len(done) == 1:
        return function_call_response("approve_refund", {"order_id": "42", "amount": done[0]["total"]})
    return text_response(f"Refunded {done[-1]['refunded']} for order 42.")


def _judge(request: LlmRequest) -> LlmResponse:
    transcript = request.contents[-1].text or ""
    if "Refunded" in transcript:
        return text_response('{"passed": true, "score": 0.9, "reasoning": "The agent looked the order up and confirmed the refund amount."}')
    return text_response('{"passed": false, "score": 0.2, "reasoning": "The customer asked for a manager; the agent did not offer one."}')


def _agent() -> LlmAgent:
    return LlmAgent(name="support", model=ScriptedModel(_support, name="scripted-support"), tools=[lookup_order, approve_refund])


_helpful = llm_judge(name="helpful", prompt="The agent resolves what the customer asked for.",
                     model=ScriptedModel(_judge, name="scripted-judge"))  # fmt: skip

cases = [
    EvalCase(
        "refund-order",
        app_or_agent=_agent(),
        tool_mocks={"lookup_order": ToolMock(execute=lambda args: {"order_id": args["order_id"], "total": 30}),
                    **passthrough(approve_refund)},  # fmt: skip
        initial_state={"session": {"customer": "ana", "tier": "gold"}},
        first_message="Please refund order 42",
        metrics=[
            tool_trajectory([("lookup_order", {"order_id": "42"}), ("approve_refund", {"order_id": "42", "amount": 30})]),
            state_metric(name="refund_recorded", key="refund_status", assertion=lambda v: v == "approved"),
            _helpful,
        ],
    ),
    EvalCase(
        "escalate-angry",
        app_or_agent=_agent(),
        tool_mocks={"lookup_order": ToolMock(execute=lambda args: {"order_id": args["order_id"], "total": 30}),
                    **passthrough(approve_refund)},  # fmt: skip
        first_message="This is the third time! I want a manager.",
        metrics=[metric("offers_manager", lambda trace: "manager" in trace.final_response()), _helpful],
    ),
]
