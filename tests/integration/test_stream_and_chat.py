"""The thin client's streaming (a turn bigger than its result included), and `adkt chat` answering
a confirmation at its prompt."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path

import pytest

from adk_core import App, LlmAgent, LlmRequest, LlmResponse, ScriptedModel
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adkt.client import AdkClient
from examples.w1 import USER_MESSAGE, build_agent, check_turn
from tests.integration import chat_app
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


async def test_stream_yields_the_turn_in_order(durable_stack: DurableStack) -> None:
    app = durable_stack.register(App(name=f"w1_stream_{uuid.uuid4().hex[:6]}", root_agent=build_agent()))
    streamed = [e async for e in durable_stack.client.stream(app.name, "u1", "s1", USER_MESSAGE)]
    check_turn(streamed)
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u1", session_id="s1")
    assert stored is not None
    assert [e.id for e in streamed] == [e.id for e in stored.events[1:]], "every event once, in stored order"


CALLS, RESULT_BYTES = 30, 8 * 1024


async def big_step(i: int) -> dict:
    """Do step i and report at length."""
    await asyncio.sleep(0.02)  # time for the client's queries to bring each step's events
    return {"done": i, "report": "x" * RESULT_BYTES}


def _steps(request: LlmRequest) -> LlmResponse:
    n = len(tool_responses_this_turn(request))
    return function_call_response("big_step", {"i": n}) if n < CALLS else text_response(f"done after {n}")


@pytest.mark.parametrize("partial", [False, True], ids=["committed", "partial"])
async def test_a_turn_bigger_than_its_result_streams_every_event_it_can_once(
    durable_stack: DurableStack, partial: bool
) -> None:
    """30 tool results of 8 KB: the turn's result holds only its newest events (128 KB of them,
    TurnResult.events_omitted). A client that followed the turn by query has the older ones already,
    and must still get the rest, the answer last, from the result, each once."""
    app = durable_stack.register(App(
        name=f"big_{uuid.uuid4().hex[:6]}",
        root_agent=LlmAgent(name="worker", model=ScriptedModel(_steps), tools=[big_step]),
    ))
    client = AdkClient(durable_stack.client.client, task_queue=durable_stack.task_queue,
                       database_url=durable_stack.database_url)
    streamed = [e async for e in client.stream(app.name, "u1", "s1", "go", partial=partial)]
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u1", session_id="s1")
    assert stored is not None
    assert len(stored.events) == 1 + 2 * CALLS + 1
    committed = [e.id for e in streamed if not e.partial]
    assert committed[-1] == stored.events[-1].id and streamed[-1].text == f"done after {CALLS}"
    assert len(set(committed)) == len(committed), "no event twice"
    order = {e.id: n for n, e in enumerate(stored.events)}
    assert [order[i] for i in committed] == sorted(order[i] for i in committed), "in stored order"
    assert len(committed) > 2 * CALLS - 10, "followed by query, the client has (nearly) every event"


async def test_chat_asks_for_a_confirmation_and_sends_the_answer(durable_stack: DurableStack) -> None:
    durable_stack.register(chat_app.app)
    session = f"chat-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ADK_TASK_QUEUE": durable_stack.task_queue}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "adkt.main", "chat", "tests.integration.chat_app:app",
        "--address", durable_stack.address, "--database-url", durable_stack.database_url, "--session", session,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        cwd=ROOT, env=env,
    )
    output, _ = await asyncio.wait_for(process.communicate(b"send 50\ny\n/quit\n"), timeout=90)
    text = output.decode()
    assert process.returncode == 0, text
    assert "send_money" in text and "allow?" in text, text
    assert "result: {'sent': 50}" in text, text
    stored = await durable_stack.sessions.get_session(app_name="chat_confirm", user_id="user", session_id=session)
    assert stored is not None
    assert any(r.response == {"sent": 50} for e in stored.events for r in e.function_responses())
