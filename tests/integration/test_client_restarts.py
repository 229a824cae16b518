"""Every AdkClient call rides out a Temporal restart (issue 24, item 9): run_once, reply, pending and
stream, in flight when the dev server stops and started while it is down, each get their answer
once it is back, and nothing runs twice.

The server stays down several times longer than the client's SDK retries (temporal_restart.SDK_RETRIES:
under a second, cut from temporalio's ~11 s), so the client must ride out the outage itself. One
server restart serves every call kind (a restart costs ~8 s: stop, 3 s down, start, reconnect).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from adk_core import App, FunctionTool, LlmAgent, LlmRequest, ScriptedModel
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_core.types import Event
from adk_temporal.worker import build_worker
from adkt.client import AdkClient, connect
from adkt.embedded import TEMPORAL_DEV_ARGS, TemporalDevServer
from adkt.services import open_services
from tests.integration.temporal_restart import server_data_dir, with_sdk_retries

pytestmark = pytest.mark.integration

TEMPORAL_DOWN_SECONDS = 2.0
"""After the calls started while it is down (1 s after the stop): down ~3 s in all, several times the
client's SDK retries; the server answers again between its worker's 3 s and 6 s poll retries."""
CALL_TIMEOUT = 150.0
RUNS = 4


def _apps(transfers: list[int]) -> tuple[App, App]:
    async def slow_echo(n: int) -> dict:
        """Echo a number, slowly."""
        await asyncio.sleep(1.0)
        return {"n": n}

    def echo_script(request: LlmRequest) -> Any:
        done = tool_responses_this_turn(request)
        if not done:
            text = [p.text for c in request.contents if c.role == "user" for p in c.parts if p.text][-1]
            return function_call_response("slow_echo", {"n": int(text.split()[-1])})
        return text_response(f"echoed {done[-1]['n']}")

    def transfer_money(amount: int) -> dict:
        """Send money."""
        transfers.append(amount)
        return {"sent": amount}

    def bank_script(request: LlmRequest) -> Any:
        done = tool_responses_this_turn(request)
        return text_response(f"result: {done[-1]}") if done else function_call_response("transfer_money", {"amount": 50})

    suffix = uuid.uuid4().hex[:6]
    echo = App(name=f"cr_echo_{suffix}", root_agent=LlmAgent(name="e", model=ScriptedModel(echo_script), tools=[slow_echo]))
    bank = App(name=f"cr_bank_{suffix}", root_agent=LlmAgent(
        name="b", model=ScriptedModel(bank_script), tools=[FunctionTool(transfer_money, require_confirmation=True)],
    ))
    return echo, bank


@asynccontextmanager
async def _worker(address: str, namespace: str, apps: list[App], database_url: str, task_queue: str) -> AsyncIterator[None]:
    client = await connect(address, namespace=namespace)
    async with open_services(database_url) as services:
        worker = build_worker(client, apps, task_queue=task_queue, **services)
        run = asyncio.create_task(worker.run())
        try:
            yield
        finally:
            await asyncio.wait_for(worker.shutdown(), timeout=60)
            await asyncio.wait_for(asyncio.gather(run, return_exceptions=True), timeout=10)


async def _collect(stream: AsyncIterator[Event]) -> list[Event]:
    return [event async for event in stream]


async def test_every_client_call_survives_a_temporal_restart(database_url: str, tmp_path: Path) -> None:
    with server_data_dir(tmp_path) as data_dir:
        await _every_client_call_survives_a_temporal_restart(database_url, data_dir)


async def _every_client_call_survives_a_temporal_restart(database_url: str, data_dir: Path) -> None:
    first = TemporalDevServer(port=0, headless=True, data_dir=data_dir, extra_args=TEMPORAL_DEV_ARGS)
    await first.start()
    servers = [first]
    transfers: list[int] = []
    echo, bank = _apps(transfers)
    task_queue = f"client-restart-{uuid.uuid4().hex[:8]}"
    try:
        # The worker keeps the default connection; only the client's SDK gives up early.
        client = await with_sdk_retries(await connect(first.address, namespace=first.namespace))
        adk = AdkClient(client, task_queue=task_queue, retry_seconds=90)
        async with _worker(first.address, first.namespace, [echo, bank], database_url, task_queue):
            # Two conversations wait for a confirmation: one is asked what it waits for, one answered.
            for session_id in ("asked", "answered"):
                await asyncio.wait_for(adk.send(bank.name, "u", session_id, "send 50"), CALL_TIMEOUT)
            (waiting,) = await adk.pending(bank.name, "u", "answered")

            # In flight when the server stops: one-shot runs (each in its own session) and a stream.
            before = [asyncio.create_task(adk.run_once(echo.name, "u", f"before{i}", f"run {i}")) for i in range(RUNS)]
            streamed = asyncio.create_task(_collect(adk.stream(echo.name, "u", "streamed", "stream 7")))
            await asyncio.sleep(0.3)
            await first.stop()
            await asyncio.sleep(1.0)
            # Started while it is down.
            during = [asyncio.create_task(adk.run_once(echo.name, "u", f"during{i}", f"run {i}")) for i in range(RUNS)]
            asked = asyncio.create_task(adk.pending(bank.name, "u", "asked"))
            answered = asyncio.create_task(adk.reply(bank.name, "u", "answered", waiting.call_id, {"confirmed": True}))
            await asyncio.sleep(TEMPORAL_DOWN_SECONDS)
            again = TemporalDevServer(port=first.port, headless=True, data_dir=data_dir, extra_args=TEMPORAL_DEV_ARGS)
            servers.append(again)
            await again.start()

            runs = await asyncio.wait_for(asyncio.gather(*before, *during), CALL_TIMEOUT)
            events = await asyncio.wait_for(streamed, CALL_TIMEOUT)
            pending = await asyncio.wait_for(asked, CALL_TIMEOUT)
            reply = await asyncio.wait_for(answered, CALL_TIMEOUT)

        assert [r.final_text for r in runs] == [f"echoed {i}" for i in range(RUNS)] * 2
        assert events[-1].text == "echoed 7" and len({e.id for e in events}) == len(events)
        assert [p.name for p in pending] == ["transfer_money"]
        assert reply.final_text == "result: {'sent': 50}" and transfers == [50]
        async with open_services(database_url) as services:
            for session_id in [f"{when}{i}" for when in ("before", "during") for i in range(RUNS)] + ["streamed"]:
                session = await services["session_service"].get_session(app_name=echo.name, user_id="u", session_id=session_id)
                assert session is not None
                # Ran once: one user message, one tool call, its response, one answer.
                assert [e.author for e in session.events] == ["user", "e", "e", "e"], (session_id, session.events)
    finally:
        for server in servers:
            await server.stop()
