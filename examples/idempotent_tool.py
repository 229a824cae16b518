"""A tool whose effect happens once, although durable runs execute tools at least once.

    python -m examples.idempotent_tool                                 # in-process, scripted model
    adkt run examples.idempotent_tool:app "Pay invoice INV-42: 12000"  # durable, embedded servers

A tool activity can run again after it already had its effect: its worker died before reporting
back, or it outran its timeout and Temporal retried it. ``tool_context.idempotency_key`` is the same
on every run of one tool call (and different for every other call), so the tool makes the key part
of the effect: taking the payment and recording the key are one step, and a repeat finds the first
payment and returns its receipt. docs/durability.md, "Tools run at least once", has the pattern.
"""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta

from adk_core import (
    App,
    FunctionTool,
    InMemoryRunner,
    LlmAgent,
    LlmRequest,
    LlmResponse,
    ScriptedModel,
    ToolContext,
)
from adk_core.models import function_call_response, text_response
from adk_core.tools import ToolExecution


class Payments:
    """Payments by idempotency key: a payment is taken and its key recorded in one step, so a
    repeated call gets the first receipt back instead of paying twice.

    In memory here, for one process. In production keep the same rule where the payment lives: a
    table whose primary key is the idempotency key, written in the transaction that takes the
    payment (``INSERT ... ON CONFLICT (idempotency_key) DO NOTHING``, then read the row back), or a
    provider that deduplicates on a key you send (an ``Idempotency-Key`` header). Recording the key
    *after* the effect, in a separate step, is not enough: a crash between the two repeats it.
    """

    def __init__(self) -> None:
        self.receipts: dict[str, dict] = {}
        # A retry can start while a timed-out first attempt is still running: one payment per key.
        self._lock = asyncio.Lock()

    async def pay(self, idempotency_key: str, invoice_id: str, amount_cents: int) -> dict:
        async with self._lock:
            receipt = self.receipts.get(idempotency_key)
            if receipt is None:
                receipt = {
                    "receipt": f"R-{len(self.receipts) + 1:04d}",
                    "invoice_id": invoice_id,
                    "amount_cents": amount_cents,
                }
                self.receipts[idempotency_key] = receipt
            return dict(receipt)


def payment_tool(payments: Payments) -> FunctionTool:
    async def pay_invoice(invoice_id: str, amount_cents: int, tool_context: ToolContext) -> dict:
        """Pay an invoice.

        Args:
            invoice_id: the invoice, e.g. "INV-42".
            amount_cents: how much to pay, in cents.
        """
        return await payments.pay(tool_context.idempotency_key, invoice_id, amount_cents)

    # Retried freely (Temporal's default policy): the key makes a repeat harmless.
    return FunctionTool(pay_invoice, execution=ToolExecution(start_to_close_timeout=timedelta(seconds=30)))


def scripted(request: LlmRequest) -> LlmResponse:
    """Stands in for a model: pays the invoice the user names, then reports the receipt."""
    last = request.contents[-1].parts[0]
    if last.function_response is not None:
        paid = last.function_response.response
        return text_response(f"Paid {paid['invoice_id']}: receipt {paid['receipt']}.")
    said = last.text or ""
    match = re.search(r"(INV-\d+)\D*(\d+)?", said)
    invoice, amount = (match.group(1), int(match.group(2) or 0)) if match else ("INV-0", 0)
    return function_call_response("pay_invoice", {"invoice_id": invoice, "amount_cents": amount})


def build_app(payments: Payments) -> App:
    agent = LlmAgent(
        name="cashier",
        model=ScriptedModel(scripted, name="scripted-cashier"),
        instruction="Pay the invoices the user asks you to pay with pay_invoice, then give the receipt number.",
        tools=[payment_tool(payments)],
    )
    return App(name="idempotent_tool", root_agent=agent)


payments = Payments()
app = build_app(payments)


async def main() -> None:
    runner = InMemoryRunner(app=app)
    for event in await runner.run("Pay invoice INV-42: 12000"):
        print(f"{event.author}: {event.text or event.function_calls() or event.function_responses()}")
    print(f"payments taken: {len(payments.receipts)}")


if __name__ == "__main__":
    asyncio.run(main())
