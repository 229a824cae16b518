"""Record the workflow histories that tests/integration/test_replay.py replays.

    python -m tests.replay.record_histories            every scenario
    python -m tests.replay.record_histories children   only those named (see SCENARIOS)

Starts a fresh embedded stack (Temporal dev server, Postgres, an in-process worker serving
tests/replay/apps.py), runs each scenario and writes the history of every run it made, children
and continued-as-new runs included, to tests/replay/histories/<scenario>[.<n>-<type>].json (gzipped
when large). Re-record only on purpose: a history that no longer replays means running workflows
would break on deploy, and re-recording hides exactly that.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from examples import w1
from tests.replay import apps as replay_apps

HISTORIES = Path(__file__).parent / "histories"
USER_ID = "replay-user"
GZIP_ABOVE = 512 * 1024
"""Histories larger than this (the long turn's) are stored gzipped."""


class Recorder:
    """The stack one recording runs on, and the writing of histories."""

    def __init__(self, client: Client, adk: Any, database_url: str, task_queue: str, out: Path) -> None:
        self.client = client
        self.adk = adk
        self.database_url = database_url
        self.task_queue = task_queue
        self.out = out
        self.written: list[Path] = []

    async def write_tree(self, stem: str, workflow_id: str, run_id: str | None = None) -> None:
        """Write a workflow's runs (following continue-as-new) and, recursively, its children's."""
        if run_id is None:  # from the conversation's first run on, not its latest
            description = await self.client.get_workflow_handle(workflow_id).describe()
            run_id = description.raw_description.workflow_execution_info.first_run_id or None
        n = 0
        while True:
            history = await self.client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
            name = stem if n == 0 else f"{stem}.run{n + 1}"
            self._write(name, history.to_json())
            children = []
            next_run = None
            for event in history.events:
                if event.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
                    started = event.child_workflow_execution_started_event_attributes
                    children.append((started.workflow_type.name, started.workflow_execution))
                if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
                    next_run = event.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
            for i, (workflow_type, execution) in enumerate(children, 1):
                await self.write_tree(f"{name}.{i}-{workflow_type}", execution.workflow_id, execution.run_id)
            if next_run is None:
                return
            # Bounded: the next run's first task may not have been recorded yet.
            async with asyncio.timeout(30):
                await self.client.get_workflow_handle(workflow_id, run_id=next_run).result()
            run_id, n = next_run, n + 1

    def _write(self, name: str, text: str) -> None:
        data = (text + "\n").encode()
        path = self.out / f"{name}.json"
        if len(data) > GZIP_ABOVE:
            path = path.with_suffix(".json.gz")
            data = gzip.compress(data, mtime=0)
        path.write_bytes(data)
        self.written.append(path)


async def agent_run_w1(r: Recorder) -> None:
    """AgentRunWorkflow: W1 (four tool calls) as one run."""
    result = await r.adk.run_once(w1.app.name, USER_ID, "w1-session", w1.USER_MESSAGE, workflow_id="replay-w1")
    w1.check_turn(result.events)
    await r.write_tree("agent_run_w1", "replay-w1")


async def session_answer_stored(r: Recorder) -> None:
    """SessionWorkflow: two W1 turns whose model calls stored the answers (ModelCallInput.answer),
    so the turns end without a commit of their own (patch ``model-call-stores-answer``)."""
    from adk_temporal.workflows import session_workflow_id

    for _ in range(2):
        turn = await r.adk.send(w1.app.name, USER_ID, "answer-session", w1.USER_MESSAGE)
        w1.check_turn(turn.events)
    await r.write_tree("session_answer_stored", session_workflow_id(w1.app.name, USER_ID, "answer-session"))


async def session_confirm(r: Recorder) -> None:
    """SessionWorkflow with a tool confirmation: once while it waits, once answered and ended."""
    from adk_temporal.workflows import session_workflow_id

    app, session = replay_apps.confirm.name, "confirm-session"
    await r.adk.send(app, USER_ID, session, "send 50")
    [pending] = await r.adk.pending(app, USER_ID, session)
    workflow_id = session_workflow_id(app, USER_ID, session)
    await r.write_tree("session_pending_confirmation", workflow_id)
    turn = await r.adk.reply(app, USER_ID, session, pending.call_id, {"confirmed": True})
    assert turn.final_text == "result: {'sent': 50}", turn.final_text
    await _ended(r, workflow_id)
    await r.write_tree("session_confirm", workflow_id)


async def children(r: Recorder) -> None:
    """AgentToolWorkflow and AgentBranchWorkflow children of one AgentRunWorkflow."""
    app = replay_apps.children.name
    result = await r.adk.run_once(app, USER_ID, "children-session", "please", workflow_id="replay-children")
    assert result.final_text.startswith(("left saw", "right saw")), result.final_text
    await r.write_tree("children", "replay-children")


async def _start_w1_conversation(r: Recorder, session: str, **options: Any) -> Any:
    """A W1 conversation's SessionWorkflow started with ``options`` in its input (the client's sends
    then go to it); its handle."""
    from adk_temporal.workflows import SessionWorkflow, SessionWorkflowInput, session_workflow_id

    return await r.client.start_workflow(
        SessionWorkflow.run,
        SessionWorkflowInput(app_name=w1.app.name, user_id=USER_ID, session_id=session, **options),
        id=session_workflow_id(w1.app.name, USER_ID, session), task_queue=r.task_queue,
    )


async def session_continue_as_new(r: Recorder) -> None:
    """A conversation whose run continues-as-new between turns (SessionWorkflowInput.max_history_events)."""
    app, session = w1.app.name, "can-session"
    handle = await _start_w1_conversation(r, session, idle_timeout_seconds=1, max_history_events=20)
    first_run = handle.first_execution_run_id
    for _ in range(2):
        result = await r.adk.send(app, USER_ID, session, w1.USER_MESSAGE)
        w1.check_turn(result.events)
    await _ended(r, handle.id)
    await r.write_tree("session_continue_as_new", handle.id, first_run)


async def session_renewed(r: Recorder) -> None:
    """A conversation whose run grew long, then renewed itself while idle (SessionWorkflowInput.
    renew_idle_run_after_seconds), and whose renewed run then ended idle."""
    from adk_temporal.workflows.session import RENEW_MIN_HISTORY_EVENTS

    app, session = w1.app.name, "renewed-session"
    handle = await _start_w1_conversation(r, session, idle_timeout_seconds=3, renew_idle_run_after_seconds=1)
    first_run = handle.first_execution_run_id
    while (await handle.describe()).history_length < RENEW_MIN_HISTORY_EVENTS + 20:
        w1.check_turn((await r.adk.send(app, USER_ID, session, w1.USER_MESSAGE)).events)
    await _ended(r, handle.id)
    history = await r.client.get_workflow_handle(handle.id, run_id=first_run).fetch_history()
    assert history.events[-1].event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, "no renewal"
    await r.write_tree("session_renewed", handle.id, first_run)


async def long_turn(r: Recorder) -> None:
    """A turn that outgrows the conversation's run: it goes on in a child AgentRunWorkflow, which
    continues-as-new (docs/durability.md, "Long turns")."""
    from adk_temporal.workflows import session_workflow_id

    app, session = replay_apps.long_turn.name, "long-session"
    result = await r.adk.send(app, USER_ID, session, "go", max_llm_calls=replay_apps.LONG_TURN_CALLS + 5)
    assert result.final_text == f"done after {replay_apps.LONG_TURN_CALLS}", result.final_text
    workflow_id = session_workflow_id(app, USER_ID, session)
    await _ended(r, workflow_id)
    await r.write_tree("long_turn", workflow_id)


async def streamed_turn(r: Recorder) -> None:
    """A turn streamed token by token (RunConfig streaming_mode="sse", partials through Postgres)."""
    from adk_temporal.workflows import session_workflow_id

    app, session = replay_apps.streaming.name, "stream-session"
    events = [e async for e in r.adk.stream(app, USER_ID, session, "weather?", partial=True)]
    assert events[-1].text == "It is 21 degrees in Paris.", events[-1].text
    workflow_id = session_workflow_id(app, USER_ID, session)
    await _ended(r, workflow_id)
    await r.write_tree("streamed_turn", workflow_id)


async def compaction(r: Recorder) -> None:
    """A conversation whose events are compacted (App.events_compaction_config: every 2 turns)."""
    from adk_temporal.workflows import session_workflow_id

    app, session = replay_apps.compaction.name, "compaction-session"
    for n in range(1, 4):
        await r.adk.send(app, USER_ID, session, f"question {n}")
    stored = await _session_events(r, app, session)
    assert any(e.actions.compaction is not None for e in stored), "no compaction event was stored"
    workflow_id = session_workflow_id(app, USER_ID, session)
    await _ended(r, workflow_id)
    await r.write_tree("compaction", workflow_id)


async def compaction_in_turn(r: Recorder) -> None:
    """A turn of tool steps compacted before its model calls by the token trigger, then a second turn."""
    from adk_temporal.workflows import session_workflow_id

    app, session = replay_apps.compaction_in_turn.name, "compaction-in-turn-session"
    for n in range(1, 3):
        result = await r.adk.send(app, USER_ID, session, f"do the steps ({n})")
        assert result.final_text == "all done", result.final_text
    stored = await _session_events(r, app, session)
    assert any("/compaction/" in e.id for e in stored), "no compaction was made before a model call"
    workflow_id = session_workflow_id(app, USER_ID, session)
    await _ended(r, workflow_id)
    await r.write_tree("compaction_in_turn", workflow_id)


async def simulator_wait(r: Recorder) -> None:
    """A conversation waiting on a person in the simulator (SimulatorPlugin), then answered."""
    from adk_core.simulator import SimulatorService
    from adk_core.simulator.sql import SqlSimulatorStore
    from adk_temporal.workflows import session_workflow_id
    from adkt.web.deliver import temporal_deliver

    app, session = replay_apps.simulator.name, "simulator-session"
    workflow_id = session_workflow_id(app, USER_ID, session)
    store = SqlSimulatorStore(r.database_url)
    web = SimulatorService(store, deliver=temporal_deliver(r.client))
    try:
        turn = asyncio.create_task(r.adk.send(app, USER_ID, session, "Weather in Paris?"))
        head = await _simulator_head(web, session, after=None)
        await r.write_tree("simulator_wait", workflow_id)  # waiting for the person
        await web.submit_decision(head.session.id, head.head.turn_id,
                                  {"function_calls": [{"name": "get_weather", "args": {"city": "Paris"}}]})
        second = await _simulator_head(web, session, after=head.head.turn_id)
        await web.submit_decision(second.session.id, second.head.turn_id, {"text": "Paris: sunny."})
        async with asyncio.timeout(30):
            result = await turn
        assert result.final_text == "Paris: sunny.", result.final_text
    finally:
        await store.close()
    await _ended(r, workflow_id)
    await r.write_tree("simulator_answered", workflow_id)


async def eval_suite(r: Recorder) -> None:
    """EvalSuiteWorkflow running one case as an EvalCaseWorkflow child."""
    from adk_temporal.workflows.eval import EvalSuiteInput, EvalSuiteRunResult, EvalSuiteWorkflow

    result = await r.client.execute_workflow(
        EvalSuiteWorkflow.run, EvalSuiteInput(suite=replay_apps.EVAL_SUITE, run_id="replay-eval"),
        id="adk-eval/replay-eval", task_queue=r.task_queue, result_type=EvalSuiteRunResult,
    )
    assert [x.status for x in result.results] == ["passed"], result.results
    await r.write_tree("eval_suite", "adk-eval/replay-eval")


async def session_cancelled(r: Recorder) -> None:
    """SessionWorkflow cancelled while the turn's second model call runs: the turn stores its events
    and a CancelledError event, and the run ends cancelled (patch ``end-cancelled-turn``). The same
    scenario recorded before that patch is session_cancelled_before_patch.json."""
    from temporalio.client import WorkflowFailureError

    from adk_temporal.workflows import SessionWorkflow, session_workflow_id
    from adk_temporal.workflows.contracts import TurnQuery

    app, session = replay_apps.cancel.name, "cancel-session"
    workflow_id = session_workflow_id(app, USER_ID, session)
    turn = asyncio.create_task(r.adk.send(app, USER_ID, session, "add 1 and 2", message_id="to-cancel"))
    try:
        async with asyncio.timeout(30):  # the call and the tool's result, then the second call starts
            while True:
                with contextlib.suppress(Exception):  # not started yet
                    status = await r.client.get_workflow_handle(workflow_id).query(
                        SessionWorkflow.turn, TurnQuery(message_id="to-cancel"))
                    if len(status.events) >= 2:
                        break
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        await r.client.get_workflow_handle(workflow_id).cancel()
        async with asyncio.timeout(30):
            with contextlib.suppress(WorkflowFailureError):
                await r.client.get_workflow_handle(workflow_id).result()
    finally:
        turn.cancel()
        await asyncio.gather(turn, return_exceptions=True)
    await r.write_tree("session_cancelled", workflow_id)


SCENARIOS: dict[str, Callable[[Recorder], Awaitable[None]]] = {
    f.__name__: f for f in (
        agent_run_w1, session_answer_stored, session_confirm, children, session_continue_as_new, session_renewed, long_turn,
        streamed_turn, compaction, compaction_in_turn,
        simulator_wait, eval_suite, session_cancelled,
    )
}


async def _ended(r: Recorder, workflow_id: str) -> None:
    """Until the conversation's latest run ended (idle timeout 1 s): a complete history."""
    async with asyncio.timeout(60):
        await r.client.get_workflow_handle(workflow_id).result()


async def _session_events(r: Recorder, app: str, session: str) -> list[Any]:
    from adkt.services import open_services

    async with open_services(r.database_url) as services:
        stored = await services["session_service"].get_session(app_name=app, user_id=USER_ID, session_id=session)
    return list(stored.events) if stored is not None else []


async def _simulator_head(web: Any, adk_session_id: str, *, after: str | None) -> Any:
    async with asyncio.timeout(30):
        while True:
            for summary in await web.list_sessions():
                if summary.session.adk_session_id == adk_session_id:
                    view = await web.view(summary.session.id)
                    if view.head is not None and view.head.turn_id != after:
                        return view
            await asyncio.sleep(0.2)


async def record(names: list[str] | None = None, out: Path = HISTORIES) -> list[Path]:
    from adk_temporal.worker import build_worker
    from adkt.client import AdkClient, connect
    from adkt.embedded import TEMPORAL_DEV_ARGS, EmbeddedPostgres, TemporalDevServer
    from adkt.services import open_services

    unknown = set(names or ()) - SCENARIOS.keys()
    if unknown:
        raise SystemExit(f"unknown scenarios {sorted(unknown)}; choose from {sorted(SCENARIOS)}")
    out.mkdir(parents=True, exist_ok=True)
    task_queue = f"replay-recording-{uuid.uuid4().hex[:6]}"
    with tempfile.TemporaryDirectory() as tmp:
        async with (
            TemporalDevServer(port=0, headless=True, extra_args=TEMPORAL_DEV_ARGS) as server,
            EmbeddedPostgres(Path(tmp) / "postgres", durable=False) as postgres,
            open_services(postgres.url) as services,
        ):
            client = await connect(server.address, namespace=server.namespace)
            adk = AdkClient(client, task_queue=task_queue, idle_timeout_seconds=1, database_url=postgres.url)
            worker = build_worker(client, replay_apps.apps(), task_queue=task_queue,
                                  eval_suites=[replay_apps.EVAL_SUITE], **services)
            recorder = Recorder(client, adk, postgres.url, task_queue, out)
            async with worker:
                for name, scenario in SCENARIOS.items():
                    if not names or name in names:
                        await scenario(recorder)
    return recorder.written


if __name__ == "__main__":
    for path in asyncio.run(record(sys.argv[1:] or None)):
        print(f"wrote {path}")
