"""The seed's rules, in one place, shared by the in-memory and the SQL store and the service.

Each check raises a SimulatorError subclass that names the rule and what to do instead.
"""

from __future__ import annotations

import uuid
from typing import Any

import jsonschema

from .errors import (
    NotHeadOfQueueError,
    SessionCompletedError,
    SimulatorConflictError,
    SimulatorInputError,
    TurnAlreadyAnsweredError,
)
from .models import SessionEvent, SimulatorSession, function_declarations, is_abandoned

MAX_DESCRIPTION = 500
MAX_AGENT_NAME = 100
STATUS_ORDER = {"active": 0, "completed": 1}


def check_uuid4(value: str, what: str) -> str:
    try:
        parsed = uuid.UUID(value)
    except (ValueError, TypeError, AttributeError):
        raise SimulatorInputError(f"{what} {value!r} is not a UUID; use a UUIDv4 such as str(uuid.uuid4())") from None
    if parsed.version != 4 or str(parsed) != value.lower():
        raise SimulatorInputError(f"{what} {value!r} is not a canonical UUIDv4; use str(uuid.uuid4())")
    return value


def truncate_description(description: str | None) -> str:
    return (description or "")[:MAX_DESCRIPTION]


def check_agent_name(name: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise SimulatorInputError("agent_name is empty; every event names the agent that made the request")
    if len(name) > MAX_AGENT_NAME:
        raise SimulatorInputError(f"agent_name is {len(name)} characters; at most {MAX_AGENT_NAME} are allowed")
    return name


def check_session(session: SimulatorSession) -> SimulatorSession:
    check_uuid4(session.id, "session id")
    if session.status not in STATUS_ORDER:
        raise SimulatorInputError(f"status {session.status!r} is not one of 'active', 'completed'")
    return session.model_copy(update={"description": truncate_description(session.description)})


def check_transition(current: str, new: str) -> None:
    if new not in STATUS_ORDER:
        raise SimulatorInputError(f"status {new!r} is not one of 'active', 'completed'")
    if STATUS_ORDER[new] < STATUS_ORDER[current]:
        raise SimulatorConflictError(f"a session goes active -> completed only; it cannot go {current} -> {new}")


def check_response_shape(response: dict[str, Any]) -> None:
    candidates = response.get("candidates") if isinstance(response, dict) else None
    if not candidates:
        raise SimulatorInputError(
            "the response has no candidates; answer with a text or at least one function call"
        )
    parts = (candidates[0].get("content") or {}).get("parts") or []
    if not parts:
        raise SimulatorInputError("the response's first candidate has no parts; add a text or a function call")


def check_event(event: SessionEvent) -> None:
    """The rules of one event on its own."""
    check_uuid4(event.session_id, "session_id")
    check_uuid4(event.turn_id, "turn_id")
    check_agent_name(event.agent_name)
    if not event.event_id:
        raise SimulatorInputError("event_id is empty; give every event a unique id")
    if (event.llm_request is None) == (event.llm_response is None):
        raise SimulatorInputError("an event carries exactly one of llm_request and llm_response")
    if event.llm_response is not None and not is_abandoned(event.llm_response):
        check_response_shape(event.llm_response)


def check_append(session: SimulatorSession, events: list[SessionEvent], event: SessionEvent) -> bool:
    """Whether ``event`` is new (True) or a repeat of a stored one (False, nothing to do), given the
    session and its stored events; raises when a rule refuses it."""
    check_event(event)
    for stored in events:
        if stored.event_id == event.event_id:
            # The store may have moved the timestamp (in_time_order): a retry with its own is a repeat.
            if stored.model_dump(exclude={"timestamp"}) != event.model_dump(exclude={"timestamp"}):
                raise SimulatorConflictError(f"event {event.event_id!r} is already stored with other content")
            return False
    if session.status != "active":
        raise SessionCompletedError(f"session {session.id} is completed; start a new session to play more turns")
    same_turn = [e for e in events if e.turn_id == event.turn_id]
    if event.llm_request is not None and same_turn:
        raise SimulatorConflictError(f"turn {event.turn_id} already has a request; a turn has exactly one")
    if event.llm_response is not None:
        if not any(e.llm_request is not None for e in same_turn):
            raise SimulatorConflictError(f"turn {event.turn_id} has no request to answer")
        if any(e.llm_response is not None for e in same_turn):
            raise TurnAlreadyAnsweredError(f"turn {event.turn_id} is already answered; a turn has at most one response")
    return True


def in_time_order(events: list[SessionEvent], event: SessionEvent) -> SessionEvent:
    """``event``, stamped no earlier than the session's newest event, so that a session's events are
    ordered by time. Writers are concurrent: ParallelAgent branches are workflows of their own, each
    stamping with its own clock, and their activities reach the store in any order. Stores call this
    while they hold the session's lock."""
    newest = max((e.timestamp for e in events), default=None)
    if newest is not None and event.timestamp < newest:
        return event.model_copy(update={"timestamp": newest})
    return event


def pending_requests(events: list[SessionEvent]) -> list[SessionEvent]:
    """Requests without a response, oldest first: the session's FIFO queue."""
    answered = {e.turn_id for e in events if e.llm_response is not None}
    return [e for e in events if e.llm_request is not None and e.turn_id not in answered]


def check_head(session: SimulatorSession, events: list[SessionEvent], turn_id: str) -> SessionEvent:
    """The request of ``turn_id``, if it may be answered now (it is the head of the queue)."""
    check_uuid4(turn_id, "turn_id")
    if session.status != "active":
        raise SessionCompletedError(f"session {session.id} is completed; its requests can no longer be answered")
    queue = pending_requests(events)
    if not any(e.turn_id == turn_id for e in events):
        from .errors import SimulatorNotFoundError

        raise SimulatorNotFoundError(f"session {session.id} has no turn {turn_id}")
    if any(e.turn_id == turn_id and e.llm_response is not None for e in events):
        raise TurnAlreadyAnsweredError(f"turn {turn_id} is already answered; a turn has at most one response")
    head = queue[0]
    if head.turn_id != turn_id:
        raise NotHeadOfQueueError(
            f"turn {turn_id} is not the head of the queue; answer turn {head.turn_id} "
            f"(agent {head.agent_name!r}) first: only the oldest pending request is answerable"
        )
    return head


def check_decision(request: dict[str, Any], response: dict[str, Any]) -> None:
    """A response must have a candidate, and every function call in it must name a tool the
    request offers with arguments its JSON schema accepts."""
    check_response_shape(response)
    declared = function_declarations(request)
    for part in response["candidates"][0]["content"]["parts"]:
        call = part.get("function_call")
        if call is None:
            if not isinstance(part.get("text"), str):
                raise SimulatorInputError("each part of an answer is a text or a function call")
            continue
        name = call.get("name")
        if name not in declared:
            offered = ", ".join(sorted(declared)) or "none"
            raise SimulatorInputError(f"function {name!r} is not among the request's tools ({offered})")
        schema = declared[name].get("parameters") or {"type": "object"}
        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(call.get("args") or {}), key=str)
        if errors:
            where = "/".join(str(p) for p in errors[0].absolute_path) or "(arguments)"
            raise SimulatorInputError(f"arguments of {name!r} do not match its schema at {where}: {errors[0].message}")
