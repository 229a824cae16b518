"""Odd ids, state keys and values, and message sizes through the client: every send either
answers or raises one of the client's typed errors quickly, and no workflow is left running or
stuck (hardening issue: "a fuzz test of ids, state keys/values and message sizes")."""

from __future__ import annotations

import asyncio
import random
import uuid
from typing import Any

import pytest

from adk_core import App, FunctionTool, LlmAgent, LlmRequest, ScriptedModel
from adk_core.errors import AdkError
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adkt.client import AdkClient, MessageRejectedError, TurnFailedError
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration

GOOD_IDS = ["u", "carol/x", "x%2Fy", "a b", "é", "💡"]
BAD_IDS = [" padded", "padded ", "", "nul\x00", "tab\t", "x" * 257, "u\ud800"]
KEYS = ["k", "user:k", "app:k", "temp:k", "", "a/b", "..", "nul\x00", "x" * 300, "ok:colon"]
VALUES: list[Any] = [1, "text", None, [1, {"a": 2}], "nul\x00", float("nan"), float("inf"), {"deep": {"er": [1]}}]
SIZES = [0, 1, 1_000, 300_000, 3_000_000]
TYPED = (AdkError,)  # InvalidInputError, StateKeyError, MessageRejectedError, TurnFailedError...


def _echo_state(key: str, value: str) -> dict:
    """Write a state value (the model picks it from the message)."""
    return {"ok": True}


async def test_odd_inputs_give_answers_or_typed_errors_and_leave_nothing_running(durable_stack: DurableStack) -> None:
    def script(request: LlmRequest) -> Any:
        if tool_responses_this_turn(request):
            return text_response("done")
        text = request.contents[-1].parts[-1].text or ""
        if text.startswith("tool"):
            return function_call_response("_echo_state", {"key": "k", "value": "v\x00" if "nul" in text else "v"})
        return text_response(f"read {len(text)}")

    app = durable_stack.register(App(
        name=f"fuzz_{uuid.uuid4().hex[:6]}",
        root_agent=LlmAgent(name="a", model=ScriptedModel(script), tools=[FunctionTool(_echo_state)]),
    ))
    client = AdkClient(durable_stack.client.client, task_queue=durable_stack.task_queue, idle_timeout_seconds=2)
    rng = random.Random(7)
    outcomes: dict[str, int] = {}
    for case in range(60):
        user = rng.choice(BAD_IDS if rng.random() < 0.15 else GOOD_IDS)
        session = rng.choice(BAD_IDS if rng.random() < 0.15 else GOOD_IDS)
        delta = {rng.choice(KEYS): rng.choice(VALUES)} if rng.random() < 0.5 else None
        message = rng.choice(["tool", "tool nul", ""]) + "m" * rng.choice(SIZES)
        try:
            turn = await asyncio.wait_for(client.send(app.name, user, session, message, state_delta=delta), timeout=60)
            outcomes["answered"] = outcomes.get("answered", 0) + 1
            assert turn.final_text in {"done", f"read {len(message)}"}, (case, turn.final_text)
        except TYPED as e:
            kind = type(e).__name__ + (f"({e.error_type})" if isinstance(e, TurnFailedError) else "")
            outcomes[kind] = outcomes.get(kind, 0) + 1
            assert str(e), case
            assert not isinstance(e, MessageRejectedError), (case, e)  # bad input is refused before sending
    assert outcomes.get("answered", 0) >= 10, outcomes
    assert outcomes.get("InvalidInputError", 0) + outcomes.get("StateKeyError", 0) >= 10, outcomes

    # Every conversation ends by itself (idle 2 s): none is stuck running or retrying.
    query = f'WorkflowType="SessionWorkflow" AND TaskQueue="{durable_stack.task_queue}" AND ExecutionStatus="Running"'
    running: list[str] = []
    for _ in range(60):
        running = [w.id async for w in durable_stack.client.client.list_workflows(query) if app.name in w.id]
        if not running:
            break
        await asyncio.sleep(0.5)
    assert running == [], running
