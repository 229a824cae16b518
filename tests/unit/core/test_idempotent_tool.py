"""ToolContext.idempotency_key, and examples/idempotent_tool.py: a repeated tool call has one effect."""

from __future__ import annotations

import pytest

from adk_core import InMemoryRunner, ToolContext
from adk_core.errors import ConfigurationError
from adk_core.sessions import Session
from examples.idempotent_tool import Payments, build_app


async def _paid_once(payments: Payments) -> tuple[InMemoryRunner, Session, str, str]:
    """One in-process turn that pays INV-42; returns the runner, session, invocation id and call id."""
    runner = InMemoryRunner(app=build_app(payments))
    events = await runner.run("Pay invoice INV-42: 12000")
    call = next(c for e in events for c in e.function_calls())
    assert events[-1].text == "Paid INV-42: receipt R-0001."
    session = await runner.session_service.get_session(app_name="idempotent_tool", user_id="user", session_id="session")
    assert session is not None and call.id
    return runner, session, events[0].invocation_id, call.id


async def test_a_repeated_call_pays_once_and_returns_the_first_receipt() -> None:
    payments = Payments()
    runner, session, invocation_id, call_id = await _paid_once(payments)
    first = payments.receipts.copy()
    # What a retried activity does: the same call again, in a context rebuilt from the same ids.
    tool = runner.agent.tools[0]
    ctx = runner.new_invocation_context(session, invocation_id=invocation_id)
    again = await tool.run_async(  # type: ignore[union-attr]
        args={"invoice_id": "INV-42", "amount_cents": 12000}, tool_context=ToolContext(ctx, function_call_id=call_id)
    )
    assert payments.receipts == first and len(payments.receipts) == 1
    assert again == {"receipt": "R-0001", "invoice_id": "INV-42", "amount_cents": 12000}


async def test_distinct_calls_pay_separately() -> None:
    payments = Payments()
    runner = InMemoryRunner(app=build_app(payments))
    await runner.run("Pay invoice INV-42: 12000")
    await runner.run("Pay invoice INV-42: 12000")  # asked twice: two calls, two payments
    assert sorted(r["receipt"] for r in payments.receipts.values()) == ["R-0001", "R-0002"]


async def test_key_is_stable_for_a_call_and_needs_one() -> None:
    payments = Payments()
    runner, session, invocation_id, call_id = await _paid_once(payments)
    ctx = runner.new_invocation_context(session, invocation_id=invocation_id)
    key = ToolContext(ctx, function_call_id=call_id).idempotency_key
    assert key == f"{invocation_id}:{call_id}" == ToolContext(ctx, function_call_id=call_id).idempotency_key
    assert ToolContext(ctx, function_call_id="other").idempotency_key != key
    with pytest.raises(ConfigurationError, match="only valid inside a tool call"):
        _ = ToolContext(ctx).idempotency_key
