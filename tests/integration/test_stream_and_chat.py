"""The thin client's streaming, and `adkt chat` answering a confirmation at its prompt."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path

import pytest

from adk_core import App
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
