"""SimulatorPlugin under Temporal: requests stored by activity, decisions by the `submit_decision`
Update; only targeted agents wait; a worker SIGKILLed while a person thinks loses nothing."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from temporalio.client import WorkflowUpdateFailedError

from adk_core.simulator import SessionView, SimulatorService, export_session
from adk_core.simulator.sql import SqlSimulatorStore
from adk_core.sql import migrate
from adk_temporal.workflows import session_workflow_id
from adk_temporal.workflows._simulator import SUBMIT_DECISION, SimulatorDecision
from adkt.client import AdkClient, connect
from adkt.embedded import TemporalDevServer
from adkt.web.deliver import temporal_deliver
from tests.integration import simulator_app
from tests.integration.conftest import DurableStack
from tests.integration.processes import forget_sticky_queues, release, wait_until, worker_script
from tests.integration.test_crash import _no_task_running, _stop

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


async def wait_for_head(service: SimulatorService, adk_session_id: str, *, after: str | None = None,
                        timeout: float = 30.0) -> SessionView:
    """The session's head request once there is one other than turn ``after``; woken by the
    store's NOTIFYs, never by polling."""

    async def find() -> SessionView | None:
        for summary in await service.list_sessions():
            if summary.session.adk_session_id == adk_session_id:
                view = await service.view(summary.session.id)
                if view.head is not None and view.head.turn_id != after:
                    return view
        return None

    async with service.store.changes() as changes:
        async with asyncio.timeout(timeout):
            while (view := await find()) is None:
                await anext(changes)
    return view


async def test_targeted_agents_wait_for_a_person_others_use_their_model(durable_stack: DurableStack) -> None:
    durable_stack.register(simulator_app.app)
    session_id = f"s-{uuid.uuid4().hex[:8]}"
    store = SqlSimulatorStore(durable_stack.database_url)
    web = SimulatorService(store, deliver=temporal_deliver(durable_stack.client.client))
    try:
        run = asyncio.create_task(durable_stack.client.send(simulator_app.app.name, "u", session_id, "Paris?"))
        head = await wait_for_head(web, session_id)
        assert head.head.agent_name == "planner"
        assert head.head.reply_to.workflow_id == session_workflow_id(simulator_app.app.name, "u", session_id)
        assert head.head.llm_request["tools"][0]["function_declarations"][0]["name"] == "get_weather"
        await web.submit_decision(head.session.id, head.head.turn_id,
                                  {"function_calls": [{"name": "get_weather", "args": {"city": "Paris"}}]})

        # The Update refuses a second decision for the same turn, whoever sends it.
        handle = durable_stack.client.client.get_workflow_handle(head.head.reply_to.workflow_id)
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(SUBMIT_DECISION, SimulatorDecision(
                turn_id=head.head.turn_id, response={"candidates": [{"content": {"parts": [{"text": "x"}]}}]}))

        second = await wait_for_head(web, session_id, after=head.head.turn_id)
        assert second.head.agent_name == "planner"
        assert second.head.llm_request["contents"][-1]["parts"][0]["function_response"]["response"]["sky"] == "sunny"
        await web.submit_decision(second.session.id, second.head.turn_id, {"text": "Paris: sunny."})

        third = await wait_for_head(web, session_id, after=second.head.turn_id)
        assert third.head.agent_name == "reviewer"  # the writer used its own model
        await web.submit_decision(third.session.id, third.head.turn_id, {"text": "Approved."})

        result = await asyncio.wait_for(run, 30)
        said = [(e.author, e.content.text) for e in result.events if e.content and e.content.text]
        assert said == [("planner", "Paris: sunny."), ("writer", "draft from the real model"), ("reviewer", "Approved.")]
        final = await web.view(head.session.id)
        assert final.head is None
        assert [(t.agent_name, t.response is not None) for t in final.timeline] == [
            ("planner", True), ("planner", True), ("reviewer", True)
        ]
    finally:
        await store.close()


def _start_worker(
    address: str, database_url: str, task_queue: str, log: Path, *, held_until: Path | None = None
) -> subprocess.Popen:
    """``python worker.py`` for the app; with ``held_until``, a standby worker
    (tests/integration/standby_worker.py) that imports now and starts once that file exists."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, *worker_script(held_until), "--app", "tests.integration.simulator_app:single", "--address", address,
             "--database-url", database_url, "--task-queue", task_queue],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=out, stderr=subprocess.STDOUT,
        )


async def test_a_worker_killed_while_a_person_thinks_loses_nothing(
    temporal_server: TemporalDevServer, database_url: str, tmp_path: Path
) -> None:
    task_queue = f"sim-{uuid.uuid4().hex[:8]}"
    session_id = f"s-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "worker.log"
    adk = AdkClient(await connect(temporal_server.address, namespace=temporal_server.namespace), task_queue=task_queue)
    app_name = simulator_app.single.name
    await migrate(database_url)  # the worker would too, but the test reads the store before it is up
    go = tmp_path / "go"
    # The second is the fresh worker that takes over after the kill, held until then.
    workers = [_start_worker(temporal_server.address, database_url, task_queue, log),
               _start_worker(temporal_server.address, database_url, task_queue, log, held_until=go)]
    try:
        run = asyncio.create_task(adk.send(app_name, "u", session_id, "Weather in Oslo for 3 days?"))
        store = SqlSimulatorStore(database_url)
        first = await wait_for_head(SimulatorService(store), session_id, timeout=60)
        await store.close()
        # The person thinks: the workflow waits for the decision, the activity that stored the request
        # and the workflow task after it done.
        workflow_id = session_workflow_id(app_name, "u", session_id)
        await wait_until(lambda: _no_task_running(adk.client, workflow_id, activities=True),
                         "the workflow waiting for the decision", timeout=30, logs=[log], procs=[workers[0]],
                         interval=0.05)  # fmt: skip

        os.kill(workers[0].pid, signal.SIGKILL)
        workers[0].wait(timeout=10)
        await forget_sticky_queues(adk.client, workflow_id)
        release(workers[1], go, log)

        # A new web server process: nothing but the database and Temporal.
        store = SqlSimulatorStore(database_url)
        web = SimulatorService(store, deliver=temporal_deliver(adk.client))
        again = await wait_for_head(web, session_id)
        assert again.head == first.head
        await web.submit_decision(again.session.id, again.head.turn_id,
                                  {"function_calls": [{"name": "get_weather", "args": {"city": "Oslo", "days": 3}}]})
        second = await wait_for_head(web, session_id, after=first.head.turn_id, timeout=60)
        await web.submit_decision(second.session.id, second.head.turn_id, {"text": "Sunny for 3 days."})
        result = await asyncio.wait_for(run, 60)
        assert result.final_text == "Sunny for 3 days."
        calls = [p.function_call for e in result.events if e.content for p in e.content.parts if p.function_call]
        assert [(c.name, c.args) for c in calls] == [("get_weather", {"city": "Oslo", "days": 3})]
        await store.close()
    except BaseException:
        print(log.read_text()[-4000:])
        raise
    finally:
        for worker in workers:
            _stop(worker)


async def test_a_long_one_shot_session_shows_the_person_and_the_export_every_earlier_turn(
    durable_stack: DurableStack,
) -> None:
    """A one-shot run loads only the session's newest events and sends older ones to the model by
    reference. A person must still see the whole conversation, and its export every user message
    and tool result: the stored request holds the referenced turns as contents, not the reference."""
    durable_stack.register(simulator_app.single)
    app_name = simulator_app.single.name
    session_id = f"s-{uuid.uuid4().hex[:8]}"
    store = SqlSimulatorStore(durable_stack.database_url)
    web = SimulatorService(store, deliver=temporal_deliver(durable_stack.client.client))
    cities = [f"City{n}" for n in range(1, 8)]  # 4 events a message: past the 20 a one-shot run loads
    try:
        last_turn: str | None = None
        for city in cities:
            run = asyncio.create_task(durable_stack.client.run_once(app_name, "u", session_id, f"Weather in {city}?"))
            ask = await wait_for_head(web, session_id, after=last_turn)
            await web.submit_decision(ask.session.id, ask.head.turn_id,
                                      {"function_calls": [{"name": "get_weather", "args": {"city": city}}]})
            say = await wait_for_head(web, session_id, after=ask.head.turn_id)
            await web.submit_decision(say.session.id, say.head.turn_id, {"text": f"{city}: sunny."})
            last_turn = say.head.turn_id
            await asyncio.wait_for(run, 30)

        view = await web.view(say.session.id)
        last_request = view.timeline[-1].request.llm_request
        assert last_request is not None and "history" not in last_request
        texts = [p.get("text") for c in last_request["contents"] for p in c["parts"]]
        assert texts[0] == "Weather in City1?" and "City6: sunny." in texts

        exported = await export_session(web, say.session.id)
        assert exported.user_messages == [f"Weather in {city}?" for city in cities]
        assert [(c.args["city"], (c.response or {}).get("sky")) for c in exported.tool_calls] == [
            (city, "sunny") for city in cities
        ]
    finally:
        await store.close()
