"""The simulator's activities: a durable run stores its request to a person, and later the
person's response, in the simulator store (the sessions database on a Postgres worker)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from temporalio import activity

from adk_core.sessions import SessionService
from adk_core.simulator import InMemorySimulatorStore, SimulatorAsk, SimulatorService
from adk_core.simulator.sql import SqlSimulatorStore

from .adk_activities import _fail_fast_on_adk_errors

SUBMIT_REQUEST = "adk.simulator_submit_request"
RECORD_RESPONSE = "adk.simulator_record_response"
SIMULATOR_ACTIVITY_NAMES = (SUBMIT_REQUEST, RECORD_RESPONSE)

_PROCESS_STORE = InMemorySimulatorStore()
"""For workers whose sessions are in memory (tests, scripts): one store per process."""


class RecordResponseInput(BaseModel):
    session_id: str
    turn_id: str
    event_id: str
    timestamp: float
    agent_name: str
    llm_response: dict[str, Any]


class SimulatorActivities:
    def __init__(self, service: SimulatorService) -> None:
        self.service = service

    @classmethod
    def for_sessions(cls, session_service: SessionService) -> SimulatorActivities:
        """Keep simulator sessions beside the ADK sessions: in their Postgres database (sharing the
        engine) or, for in-memory sessions, in this process."""
        engine = getattr(session_service, "engine", None)
        store = SqlSimulatorStore(engine) if engine is not None else _PROCESS_STORE
        return cls(SimulatorService(store))

    def all(self) -> list:
        return [self.submit_request, self.record_response]

    @activity.defn(name=SUBMIT_REQUEST)
    @_fail_fast_on_adk_errors
    async def submit_request(self, ask: SimulatorAsk) -> str:
        """Queue the request in its session (idempotent by event id); returns the session id."""
        event = await self.service.submit_request(
            app_name=ask.app_name, user_id=ask.user_id, adk_session_id=ask.adk_session_id,
            agent_name=ask.agent_name, turn_id=ask.turn_id, event_id=ask.request_event_id,
            timestamp=ask.timestamp, llm_request=ask.llm_request, reply_to=ask.reply_to,
            description=ask.description,
        )
        return event.session_id

    @activity.defn(name=RECORD_RESPONSE)
    @_fail_fast_on_adk_errors
    async def record_response(self, input: RecordResponseInput) -> None:
        await self.service.record_response(
            session_id=input.session_id, turn_id=input.turn_id, event_id=input.event_id,
            timestamp=input.timestamp, agent_name=input.agent_name, llm_response=input.llm_response,
        )
