"""Artifacts from workflow code: every operation of the artifact activity (adk.artifacts), through
DurableArtifactService, gives what the in-process services give."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from adk_core import App, InMemoryRunner, LlmAgent, ScriptedModel
from adk_core.agents.context import CallbackContext
from adk_core.artifacts.sql import DatabaseArtifactService
from adk_core.memory.sql import DatabaseMemoryService
from adk_core.models import text_response
from adk_core.sessions.sql import DatabaseSessionService
from adk_core.sql import migrate, open_engine
from adk_core.types import Part
from adk_temporal.activities.contracts import ARTIFACTS
from adk_temporal.worker import build_worker
from adk_temporal.workflows import session_workflow_id
from adkt.client import AdkClient, connect
from adkt.embedded import EmbeddedPostgres, TemporalDevServer
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration


async def _every_artifact_op(callback_context: CallbackContext) -> None:
    """Runs in the workflow in durable runs: each call below is one artifact activity."""
    service = callback_context.invocation_context.artifact_service
    assert service is not None
    keys = dict(app_name=callback_context.app_name, user_id=callback_context.user_id,
                session_id=callback_context.session_id)
    saved = [await callback_context.save_artifact("notes.txt", Part(text=f"v{i}")) for i in range(2)]
    await callback_context.save_artifact("other.txt", Part(text="x"))
    newest = await callback_context.load_artifact("notes.txt")
    first = await callback_context.load_artifact("notes.txt", version=0)
    names = await callback_context.list_artifacts()
    versions = await service.list_versions(**keys, filename="notes.txt")
    await service.delete_artifact(**keys, filename="other.txt")
    record: dict[str, Any] = {
        "saved": saved,
        "newest": newest.text if newest else None,
        "first": first.text if first else None,
        "names": sorted(names),
        "versions": versions,
        "after_delete": sorted(await callback_context.list_artifacts()),
        "missing": await callback_context.load_artifact("nothing.txt"),
    }
    callback_context.state["artifact_ops"] = record


def _agent() -> LlmAgent:
    return LlmAgent(name="keeper", model=ScriptedModel([text_response("done")]), before_agent_callback=_every_artifact_op)


async def test_every_artifact_operation_matches_the_in_process_services(durable_stack: DurableStack) -> None:
    app = durable_stack.register(App(name=f"artifacts_{uuid.uuid4().hex[:6]}", root_agent=_agent()))
    await durable_stack.client.send(app.name, "u1", "s1", "keep these")
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u1", session_id="s1")
    assert stored is not None

    local = InMemoryRunner(_agent(), app_name="local")
    await local.run("keep these")
    local_session = await local.session_service.get_session(app_name="local", user_id="user", session_id="session")
    assert local_session is not None

    expected = {
        "saved": [0, 1], "newest": "v1", "first": "v0", "names": ["notes.txt", "other.txt"], "versions": [0, 1],
        "after_delete": ["notes.txt"], "missing": None,
    }
    assert local_session.state["artifact_ops"] == expected
    assert stored.state["artifact_ops"] == expected

    history = await durable_stack.client.client.get_workflow_handle(session_workflow_id(app.name, "u1", "s1")).fetch_history()
    scheduled = [e.activity_task_scheduled_event_attributes.activity_type.name for e in history.events
                 if e.HasField("activity_task_scheduled_event_attributes")]
    assert scheduled.count(ARTIFACTS) == 10, "3 saves, 3 loads, 2 lists, versions and delete: one activity each"


class CommitReplyLost(DatabaseArtifactService):
    """The real Postgres store, whose first save fails after its transaction committed (as when the
    connection drops while the COMMIT's reply is on its way, or the worker dies then)."""

    failed = False

    async def save_artifact(self, **kw: Any) -> int:
        version = await super().save_artifact(**kw)
        if not self.failed:
            self.failed = True
            raise ConnectionResetError("connection lost after COMMIT was sent")
        return version


async def _save_once(callback_context: CallbackContext) -> None:
    if "saved" not in callback_context.state:
        callback_context.state["saved"] = await callback_context.save_artifact("report.txt", Part(text="the report"))


async def test_a_retried_save_that_had_committed_stores_one_version(
    temporal_server: TemporalDevServer, postgres: EmbeddedPostgres
) -> None:
    url = await postgres.create_database(f"artretry_{uuid.uuid4().hex[:8]}")
    await migrate(url)
    engine = open_engine(url)
    client = await connect(temporal_server.address, namespace=temporal_server.namespace, database_url=url)
    task_queue = f"art-retry-{uuid.uuid4().hex[:8]}"
    app = App(name=f"art_{uuid.uuid4().hex[:6]}",
              root_agent=LlmAgent(name="a", model=ScriptedModel([text_response("ok")]), before_agent_callback=_save_once))
    sessions = DatabaseSessionService(engine)
    store = CommitReplyLost(engine)
    worker = build_worker(client, [app], session_service=sessions, artifact_service=store,
                          memory_service=DatabaseMemoryService(engine), task_queue=task_queue)
    run = asyncio.create_task(worker.run())
    try:
        await asyncio.wait_for(AdkClient(client, task_queue=task_queue).send(app.name, "u1", "s1", "hi"), 120)
        assert store.failed, "the first attempt committed and failed: the activity was retried"
        session = await sessions.get_session(app_name=app.name, user_id="u1", session_id="s1")
        assert session is not None
        versions = await store.list_versions(app_name=app.name, user_id="u1", session_id="s1", filename="report.txt")
        assert (session.state["saved"], versions) == (0, [0])
    finally:
        await asyncio.wait_for(worker.shutdown(), 60)
        await asyncio.wait_for(asyncio.gather(run, return_exceptions=True), 10)
        await engine.dispose()
