"""The simulator's function-call form lists a tool's arguments in the order the tool declares
them, though Postgres stores the request as JSONB (which sorts object keys, shortest first): the
stored request spells the order out (``property_ordering``) and the page (static/app.js) follows it."""

from __future__ import annotations

import uuid

import pytest

from adk_core.models.base import LlmRequest
from adk_core.simulator import SessionEvent, SimulatorSession
from adk_core.simulator.models import function_declarations, request_payload
from adk_core.simulator.sql import SqlSimulatorStore
from adk_core.sql import migrate
from adk_core.tools import FunctionTool
from adk_core.types import Content

pytestmark = pytest.mark.integration


def book_table(restaurant: str, people: int, time: str, notes: str = "") -> dict:
    """Book a table."""
    return {}


async def test_the_declared_order_survives_the_store(database_url: str) -> None:
    request = LlmRequest(contents=[Content.user("a table for two")])
    request.append_tools([FunctionTool(book_table)])
    await migrate(database_url)
    store = SqlSimulatorStore(database_url)
    try:
        session = await store.create_session(SimulatorSession(id=str(uuid.uuid4()), created_at=1.0))
        await store.append(SessionEvent(event_id=uuid.uuid4().hex, session_id=session.id, timestamp=1.0,
                                        turn_id=str(uuid.uuid4()), agent_name="a", llm_request=request_payload(request)))  # fmt: skip
        [stored] = await store.events(session.id)
    finally:
        await store.close()
    parameters = function_declarations(stored.llm_request or {})["book_table"]["parameters"]
    assert list(parameters["properties"]) == ["time", "notes", "people", "restaurant"]  # what JSONB gives back
    assert parameters["property_ordering"] == ["restaurant", "people", "time", "notes"]
