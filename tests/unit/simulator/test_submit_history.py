"""adk.simulator_submit_request reads a request's history reference of the asking session only."""

from __future__ import annotations

import pytest

from adk_core.errors import InvalidInputError
from adk_core.sessions import InMemorySessionService
from adk_core.simulator import SimulatorAsk, SimulatorService
from adk_core.types import Content, Event
from adk_temporal.activities.simulator_activities import SimulatorActivities


def ask(session_id: str, history_of: str) -> SimulatorAsk:
    history = {"app_name": "a", "user_id": "u", "session_id": history_of, "through_event_id": "e1",
               "agent_name": "agent"}
    return SimulatorAsk(
        app_name="a", user_id="u", adk_session_id=session_id, agent_name="agent", turn_id="t", request_event_id="q",
        response_event_id="r", timestamp=1.0,
        llm_request={"contents": [{"role": "user", "parts": [{"text": "now"}]}], "history": history},
    )


async def test_a_reference_to_another_session_is_refused_and_its_own_is_read() -> None:
    sessions = InMemorySessionService()
    for sid, said in (("mine", "my earlier words"), ("theirs", "someone else's words")):
        session = await sessions.create_session(app_name="a", user_id="u", session_id=sid)
        await sessions.append_event(session, Event(id="e1", author="user", timestamp=1.0, content=Content.user(said)))
    activities = SimulatorActivities(SimulatorService(), sessions)

    with pytest.raises(InvalidInputError, match="another session"):
        await activities._with_history(ask("mine", history_of="theirs"))
    request = await activities._with_history(ask("mine", history_of="mine"))
    assert "history" not in request
    assert [c["parts"][0]["text"] for c in request["contents"]] == ["my earlier words", "now"]
