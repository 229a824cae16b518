"""The newcomer's own app: a shop assistant with one tool, on a scripted model (no API key)."""

from __future__ import annotations

from adk_core import App, LlmAgent, LlmRequest, ScriptedModel
from adk_core.models import LlmResponse, function_call_response, text_response

STOCK = {"kettle": 3, "toaster": 0}


def check_stock(item: str) -> dict:
    """How many of ``item`` are in stock."""
    return {"item": item, "in_stock": STOCK.get(item.strip().lower(), 0)}


def _script(request: LlmRequest) -> LlmResponse:
    last = request.contents[-1]
    for part in last.parts:
        if part.function_response is not None:
            stock = part.function_response.response
            return text_response(f"{stock['item']}: {stock['in_stock']} in stock")
    item = (last.parts[0].text or "").split()[-1].strip("?").lower()
    return function_call_response("check_stock", {"item": item})


app = App(name="shop", root_agent=LlmAgent(name="clerk", model=ScriptedModel(_script), tools=[check_stock]))
