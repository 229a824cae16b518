"""The simulator's activities: a durable run stores its request to a person, and later the
person's response, in the simulator store (the sessions database on a Postgres worker).

A durable request may carry its older turns by reference (``history``: events the workflow did
not load, e.g. a one-shot run loads the newest 20). The person has to read the whole conversation,
and an export takes its user messages and tool results from the stored requests, so the request is
stored with those turns as contents, read from the session here."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from temporalio import activity

from adk_core.errors import InvalidInputError, SessionNotFoundError
from adk_core.flow.contents import contents_for_ref
from adk_core.models.base import ContentsRef
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
    def __init__(self, service: SimulatorService, sessions: SessionService | None = None) -> None:
        self.service = service
        self.sessions = sessions
        """Where a request's ``history`` reference is read (None: requests are stored as they come)."""

    @classmethod
    def for_sessions(cls, session_service: SessionService) -> SimulatorActivities:
        """Keep simulator sessions beside the ADK sessions: in their Postgres database (sharing the
        engine) or, for in-memory sessions, in this process."""
        engine = getattr(session_service, "engine", None)
        store = SqlSimulatorStore(engine) if engine is not None else _PROCESS_STORE
        return cls(SimulatorService(store), session_service)

    def all(self) -> list:
        return [self.submit_request, self.record_response]

    @activity.defn(name=SUBMIT_REQUEST)
    @_fail_fast_on_adk_errors
    async def submit_request(self, ask: SimulatorAsk) -> str:
        """Queue the request in its session (idempotent by event id); returns the session id."""
        event = await self.service.submit_request(
            app_name=ask.app_name, user_id=ask.user_id, adk_session_id=ask.adk_session_id,
            agent_name=ask.agent_name, turn_id=ask.turn_id, event_id=ask.request_event_id,
            timestamp=ask.timestamp, llm_request=await self._with_history(ask), reply_to=ask.reply_to,
            description=ask.description,
        )
        return event.session_id

    async def _with_history(self, ask: SimulatorAsk) -> dict[str, Any]:
        """The request with the turns its ``history`` reference stands for put before its contents,
        built as the model activity builds them (compactions stored after the reference included).
        The reference must name the asking session: no other session's turns are read for it."""
        request = ask.llm_request
        if "history" not in request or self.sessions is None:
            return request
        ref = ContentsRef.model_validate(request["history"])
        if (ref.app_name, ref.user_id, ref.session_id) != (ask.app_name, ask.user_id, ask.adk_session_id):
            raise InvalidInputError(
                f"the request of session {ask.adk_session_id!r} refers to the history of another session "
                f"({ref.app_name}/{ref.user_id}/{ref.session_id}); a request shows its own session's turns only"
            )
        session = await self.sessions.get_session(app_name=ref.app_name, user_id=ref.user_id, session_id=ref.session_id)
        if session is None:
            raise SessionNotFoundError(
                f"session {ref.session_id!r} of app {ref.app_name!r} is gone; a request to a person cannot show its turns"
            )
        ids = [e.id for e in session.events]
        if ref.through_event_id not in ids:
            raise SessionNotFoundError(
                f"event {ref.through_event_id!r} is not in session {ref.session_id!r}; the request's history cannot be read"
            )
        cut = ids.index(ref.through_event_id) + 1
        history = contents_for_ref(session.events[:cut], ref.agent_name, ref.branch, ref.current_turn_only,
                                   later=session.events[cut:])
        contents = [c.model_dump(mode="json", exclude_none=True) for c in history] + list(request.get("contents") or [])
        return {**{k: v for k, v in request.items() if k != "history"}, "contents": contents}

    @activity.defn(name=RECORD_RESPONSE)
    @_fail_fast_on_adk_errors
    async def record_response(self, input: RecordResponseInput) -> None:
        await self.service.record_response(
            session_id=input.session_id, turn_id=input.turn_id, event_id=input.event_id,
            timestamp=input.timestamp, agent_name=input.agent_name, llm_response=input.llm_response,
        )
