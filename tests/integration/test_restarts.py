"""The servers restart under running conversations: every turn completes once and its sender gets
the result.

(a) Postgres stops and starts again on the same data folder and port while turns run: activities
that touch the store fail until it is back, Temporal retries them. (b) The Temporal dev server stops
and starts again on the same port and database file while turns run: workers and clients reconnect,
the client after its SDK gave up (temporal_restart.SDK_RETRIES); the worker's SDK retries (~10 s)
carry its completions over the ~5 s outage (tasks the server times out after losing their worker:
test_crash.py).
Each test runs its own server (the session's are shared, and the session's dev server keeps nothing
across a restart), and a worker built by adk_temporal.worker.build_worker with the default timeouts.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from adk_core import App, LlmAgent, LlmRequest, ScriptedModel
from adk_core.models import function_call_response, text_response
from adk_temporal.worker import build_worker
from adk_temporal.workflows import session_workflow_id
from adkt.client import AdkClient, connect
from adkt.embedded import TEMPORAL_DEV_ARGS, EmbeddedPostgres, TemporalDevServer
from adkt.services import open_services
from tests.integration.temporal_restart import server_data_dir, with_sdk_retries

pytestmark = pytest.mark.integration

CONVERSATIONS = 8
TURNS = 6
RESTART_AFTER_TURNS = CONVERSATIONS * TURNS // 3
POSTGRES_DOWN_SECONDS = 2.0
"""Activities failing on the store are retried 1 s, then 3 s after their first failure (Temporal's
default policy): back after ~2 s, the store is there for the 3 s retry (5 s down waited for the 7 s one)."""
TEMPORAL_DOWN_SECONDS = 3.0
"""Several times the client's SDK retries (SDK_RETRIES, under a second), so the client has to ride
out the outage itself instead of its SDK doing it for it. With the ~1.5 s graceful stop and the
start, the server answers again ~5 s after its pollers' first failure, between their 3 s and 6 s
retries."""
TURN_TIMEOUT = 120.0


async def echo(n: int) -> dict:
    """Echo a number."""
    await asyncio.sleep(0.05)
    return {"n": n}


def _script(request: LlmRequest) -> Any:
    users = [c for c in request.contents if c.role == "user" and any(p.text for p in c.parts)]
    answered = [p.function_response.response for p in request.contents[-1].parts if p.function_response]
    if not answered:
        return function_call_response("echo", {"n": len(users)})
    return text_response(f"turn {len(users)} echoed {answered[0]['n']}")


def _app() -> App:
    return App(name=f"restarts_{uuid.uuid4().hex[:6]}", root_agent=LlmAgent(name="r", model=ScriptedModel(_script), tools=[echo]))


async def _converse_through(adk: AdkClient, app: App, restart: Callable[[], Coroutine[Any, Any, None]]) -> dict[str, list[str]]:
    """CONVERSATIONS conversations of TURNS turns each, sent back to back; ``restart`` runs once a
    third of the turns are done. Returns each conversation's answers."""
    sessions = [f"c{i}-{uuid.uuid4().hex[:6]}" for i in range(CONVERSATIONS)]
    answers: dict[str, list[str]] = {s: [] for s in sessions}
    done = in_flight = 0
    enough = asyncio.Event()

    async def converse(session_id: str) -> None:
        nonlocal done, in_flight
        for turn in range(1, TURNS + 1):
            in_flight += 1
            result = await asyncio.wait_for(adk.send(app.name, "u", session_id, f"message {turn}"), TURN_TIMEOUT)
            in_flight -= 1
            answers[session_id].append(result.final_text)
            done += 1
            if done >= RESTART_AFTER_TURNS:
                enough.set()

    runs = [asyncio.create_task(converse(s)) for s in sessions]
    try:
        await asyncio.wait_for(enough.wait(), timeout=60)
        sent_before = in_flight
        await restart()
        assert done < CONVERSATIONS * TURNS, "every turn finished before the restart: nothing ran into it"
        assert sent_before > 0
        await asyncio.gather(*runs)
    finally:
        for task in runs:
            task.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
    return answers


async def _retried_activities(adk: AdkClient, app: App, sessions: list[str]) -> int:
    """Activities whose last attempt was not the first: proof that turns ran into the outage."""
    retried = 0
    for session_id in sessions:
        history = await adk.client.get_workflow_handle(session_workflow_id(app.name, "u", session_id)).fetch_history()
        retried += sum(
            1 for e in history.events
            if e.HasField("activity_task_started_event_attributes") and e.activity_task_started_event_attributes.attempt > 1
        )  # fmt: skip
    return retried


async def _check_stored(database_url: str, app: App, answers: dict[str, list[str]]) -> None:
    expected = [f"turn {t} echoed {t}" for t in range(1, TURNS + 1)]
    assert all(texts == expected for texts in answers.values()), answers
    async with open_services(database_url) as services:
        for session_id in answers:
            session = await services["session_service"].get_session(app_name=app.name, user_id="u", session_id=session_id)
            assert session is not None
            ids = [e.id for e in session.events]
            # Once each: user message, tool call, tool response, answer.
            assert len(ids) == len(set(ids)) == 4 * TURNS, (session_id, len(ids), len(set(ids)))
            assert [e.text for e in session.events if e.author == "user"] == [f"message {t}" for t in range(1, TURNS + 1)]
            assert [e.text for e in session.events if e.author == "r" and e.text] == expected


@asynccontextmanager
async def _worker(client_address: str, namespace: str, app: App, database_url: str, task_queue: str) -> AsyncIterator[None]:
    client = await connect(client_address, namespace=namespace)
    async with open_services(database_url) as services:
        worker = build_worker(client, [app], task_queue=task_queue, **services)
        run = asyncio.create_task(worker.run())
        try:
            yield
        finally:
            await worker.shutdown()
            await asyncio.gather(run, return_exceptions=True)


async def test_postgres_restarted_mid_run(temporal_server: TemporalDevServer, tmp_path: Path) -> None:
    first = EmbeddedPostgres(tmp_path / "postgres", durable=False)
    await first.start()
    servers = [first]
    try:
        database_url = await first.create_database("restarts")
        app = _app()
        task_queue = f"pg-restart-{uuid.uuid4().hex[:8]}"
        adk = AdkClient(await connect(temporal_server.address, namespace=temporal_server.namespace), task_queue=task_queue)

        async def restart() -> None:
            await first.stop()
            await asyncio.sleep(POSTGRES_DOWN_SECONDS)
            again = EmbeddedPostgres(tmp_path / "postgres", port=first.port, durable=False)
            servers.append(again)
            await again.start()

        async with _worker(temporal_server.address, temporal_server.namespace, app, database_url, task_queue):
            answers = await _converse_through(adk, app, restart)
        await _check_stored(database_url, app, answers)
        assert await _retried_activities(adk, app, list(answers)) > 0, "no activity ran into the outage"
    finally:
        for server in servers:
            await server.stop()


async def test_temporal_restarted_mid_run(database_url: str, tmp_path: Path) -> None:
    with server_data_dir(tmp_path) as data_dir:
        await _temporal_restarted_mid_run(database_url, data_dir)


async def _temporal_restarted_mid_run(database_url: str, data_dir: Path) -> None:
    first = TemporalDevServer(port=0, headless=True, data_dir=data_dir, extra_args=TEMPORAL_DEV_ARGS)
    await first.start()
    servers = [first]
    try:
        app = _app()
        task_queue = f"temporal-restart-{uuid.uuid4().hex[:8]}"
        # The worker keeps the default connection; only the client's SDK gives up early.
        client = await with_sdk_retries(await connect(first.address, namespace=first.namespace))
        adk = AdkClient(client, task_queue=task_queue)

        async def restart() -> None:
            await first.stop()
            await asyncio.sleep(TEMPORAL_DOWN_SECONDS)
            again = TemporalDevServer(port=first.port, headless=True, data_dir=data_dir, extra_args=TEMPORAL_DEV_ARGS)
            servers.append(again)
            await again.start()

        async with _worker(first.address, first.namespace, app, database_url, task_queue):
            answers = await _converse_through(adk, app, restart)
        await _check_stored(database_url, app, answers)
    finally:
        for server in servers:
            await server.stop()
