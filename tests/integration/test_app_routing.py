"""Apps have one owner each: the AppRegistry of the worker that serves them, reached by its own
workflows and activities only; and each app's runs go to its own task queue by default."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporalio import workflow
from temporalio.client import WorkflowFailureError

from adk_core import App, LlmAgent, ScriptedModel
from adk_core.errors import ConfigurationError
from adk_core.models import text_response
from adk_temporal.activities import AppRegistry
from adk_temporal.worker import build_worker
from adk_temporal.workflows import app_task_queue, run_agent
from adkt.client import AdkClient, connect
from adkt.services import open_services
from examples import own_workflow, support_desk
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration


def _app(name: str, reply: str) -> App:
    return App(name=name, root_agent=LlmAgent(name="a", model=ScriptedModel(lambda _: text_response(reply))))


async def test_two_workers_in_one_process_each_serve_only_their_apps(durable_stack: DurableStack) -> None:
    suffix = uuid.uuid4().hex[:6]
    red, blue = _app(f"red_{suffix}", "from red"), _app(f"blue_{suffix}", "from blue")
    client = await connect(durable_stack.address, database_url=durable_stack.database_url)
    async with open_services(durable_stack.database_url) as services:
        red_worker = build_worker(client, [red], **services)
        blue_worker = build_worker(client, [blue], **services)
        assert red_worker.task_queues == [app_task_queue(red.name)]
        assert red.name in red_worker.apps and blue.name not in red_worker.apps
        assert blue.name in blue_worker.apps and red.name not in blue_worker.apps
        async with red_worker, blue_worker:
            adk = AdkClient(client)  # no task queue: each app's own
            answers = await asyncio.gather(*(
                adk.send(app.name, f"u{n}", "s", "hi") for n in range(10) for app in (red, blue)
            ))  # fmt: skip
    assert [a.final_text for a in answers] == ["from red", "from blue"] * 10


def test_a_registry_refuses_a_namesake_and_names_what_it_serves() -> None:
    app = _app("same", "x")
    registry = AppRegistry([app])
    assert registry.register(app) is app  # the same object again: nothing changes
    with pytest.raises(ConfigurationError, match="already serves a different app named 'same'"):
        registry.register(_app("same", "y"))
    with pytest.raises(ConfigurationError, match=r"serves no app named 'other' \(it serves: same\)"):
        registry.get("other")


def test_no_module_keeps_apps_in_a_global() -> None:
    from adk_temporal.activities import apps
    from adk_temporal.workflows import app_scope

    for module in (apps, app_scope):
        for name, value in vars(module).items():
            assert not isinstance(value, dict | list | set | AppRegistry) or name.startswith("__"), (module, name)


async def test_an_agent_runs_inside_a_users_own_workflow(durable_stack: DurableStack) -> None:
    queue = f"own-{uuid.uuid4().hex[:8]}"
    client = durable_stack.client.client
    async with open_services(durable_stack.database_url) as services:
        worker = build_worker(client, [support_desk.app], task_queue=queue,
                              workflows=[own_workflow.TicketTriageWorkflow], **services)  # fmt: skip
        async with worker:
            handle = await client.start_workflow(
                own_workflow.TicketTriageWorkflow.run,
                own_workflow.TriageInput(tickets=["Where is my invoice INV-42?", "Is the email service up?"]),
                id=f"triage-{uuid.uuid4().hex[:8]}", task_queue=queue, result_type=list[own_workflow.TriagedTicket],
            )
            triaged = await handle.result()
    assert "INV-42 is shipped" in triaged[0].answer
    assert "email is degraded" in triaged[1].answer
    # Each ticket's conversation is in the session store, and ran as ADK activities of the user's workflow.
    for item in triaged:
        session = await durable_stack.sessions.get_session(app_name="support_desk", user_id="ops", session_id=item.session_id)
        assert session is not None and session.events[0].text == item.ticket
        assert session.events[-1].text == item.answer
    kinds = {e.activity_task_scheduled_event_attributes.activity_type.name
             async for e in handle.fetch_history_events() if e.HasField("activity_task_scheduled_event_attributes")}  # fmt: skip
    assert "adk.generate_content" in kinds


@workflow.defn
class _UnservedAppWorkflow:
    @workflow.run
    async def run(self) -> str:
        return (await run_agent("nobody_serves_this", "u", "s", "hi")).final_text


async def test_run_agent_for_an_app_the_worker_does_not_serve_fails_with_what_to_do(durable_stack: DurableStack) -> None:
    queue = f"own-{uuid.uuid4().hex[:8]}"
    client = durable_stack.client.client
    async with open_services(durable_stack.database_url) as services:
        async with build_worker(client, [], task_queue=queue, workflows=[_UnservedAppWorkflow], **services):
            with pytest.raises(WorkflowFailureError) as failure:
                await client.execute_workflow(_UnservedAppWorkflow.run, id=f"unserved-{uuid.uuid4().hex[:8]}",
                                              task_queue=queue)  # fmt: skip
    assert "serves no app named 'nobody_serves_this'" in str(failure.value.cause)


async def test_run_agent_outside_a_workflow_says_where_to_call_it() -> None:
    with pytest.raises(ConfigurationError, match="called from workflow code"):
        await run_agent("a", "u", "s", "hi")
