"""Without encryption, large payloads are stored by the SHA-256 of their bytes, so two users' histories
holding the same large value share one row: deleting one user must not delete the row the other's
history still needs (it is left to retention, which removes only unreferenced rows)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
import sqlalchemy as sa

from adk_core import App, LlmAgent, LlmRequest, LlmResponse, ScriptedModel
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_core.sql import open_engine
from adk_core.sql.schema import payloads
from adk_temporal.deletion import delete_user, history_payload_keys
from adk_temporal.workflows import session_workflow_id
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration


async def manual() -> dict:
    """The same large document for everyone."""
    return {"manual": "page " * 70_000}  # > 256 KiB: stored out of band


def _script(request: LlmRequest) -> LlmResponse:
    if not tool_responses_this_turn(request):
        return function_call_response("manual", {})
    return text_response("read it")


async def test_deleting_a_user_keeps_a_payload_another_users_history_shares(durable_stack: DurableStack) -> None:
    app = durable_stack.register(App(name=f"shared_{uuid.uuid4().hex[:6]}",
                                     root_agent=LlmAgent(name="a", model=ScriptedModel(_script), tools=[manual])))  # fmt: skip
    for user in ("leaving", "staying"):
        assert (await asyncio.wait_for(durable_stack.client.send(app.name, user, "s", "go"), timeout=60)).final_text == "read it"
    client = durable_stack.client.client
    staying = await history_payload_keys(client, session_workflow_id(app.name, "staying", "s"))
    assert staying, "the tool's result should be stored out of band"
    engine = open_engine(durable_stack.database_url)
    try:
        report = await asyncio.wait_for(delete_user(client, engine, app.name, "leaving", wait=False), timeout=120)
        assert report.workflows and report.payloads_left_to_retention >= 1
        async with engine.connect() as conn:
            kept = set((await conn.execute(sa.select(payloads.c.sha256).where(payloads.c.sha256.in_(staying)))).scalars())
    finally:
        await engine.dispose()
    assert kept == staying  # the staying user's history can still be replayed
