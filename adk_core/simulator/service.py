"""SimulatorService: the rules between the agents that ask and the person who answers.

The agent side stores a request, waits for its decision and stores the response. The person's
side lists sessions, reads one, and submits a decision, which is checked (head of the queue, at
least one candidate, function calls valid against their tool's JSON schema) and then delivered:
to an agent waiting in this process (an asyncio future, no polling), or, for a durable run, by
the ``deliver`` function given (the web app sends the workflow's ``submit_decision`` Update).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from ..runtime import wall_clock
from . import rules
from .errors import AskerGoneError, SimulatorConflictError
from .models import Decision, ReplyTo, SessionEvent, SessionSummary, SessionView, Turn, abandoned_response
from .store import InMemorySimulatorStore, SimulatorStore

Deliver = Callable[[SessionEvent, dict[str, Any]], Awaitable[None]]
"""Hands a checked response to the durable run that waits for ``request``."""


class SimulatorService:
    def __init__(self, store: SimulatorStore | None = None, *, deliver: Deliver | None = None) -> None:
        self.store: SimulatorStore = store if store is not None else InMemorySimulatorStore()
        self.deliver = deliver
        self._waiters: dict[str, asyncio.Future[dict[str, Any]]] = {}

    # --- the agent's side ----------------------------------------------------------------------
    async def submit_request(
        self,
        *,
        app_name: str,
        user_id: str,
        adk_session_id: str,
        agent_name: str,
        turn_id: str,
        event_id: str,
        timestamp: float,
        llm_request: dict[str, Any],
        reply_to: ReplyTo | None = None,
        description: str = "",
    ) -> SessionEvent:
        """Put a request at the back of its ADK session's simulator queue (idempotent by event id)."""
        session = await self.store.session_for(app_name, user_id, adk_session_id, description=description)
        event = SessionEvent(
            event_id=event_id, session_id=session.id, timestamp=timestamp, turn_id=turn_id,
            agent_name=agent_name, llm_request=llm_request, reply_to=reply_to,
        )
        return await self.store.append(event)

    async def record_response(
        self, *, session_id: str, turn_id: str, event_id: str, timestamp: float, agent_name: str,
        llm_response: dict[str, Any],
    ) -> SessionEvent:
        event = SessionEvent(
            event_id=event_id, session_id=session_id, timestamp=timestamp, turn_id=turn_id,
            agent_name=agent_name, llm_response=llm_response,
        )
        return await self.store.append(event)

    def expect_decision(self, turn_id: str) -> asyncio.Future[dict[str, Any]]:
        """A future the next decision for ``turn_id`` resolves (register it before storing the request)."""
        future = self._waiters.get(turn_id)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            self._waiters[turn_id] = future
            future.add_done_callback(lambda _: self._waiters.pop(turn_id, None))
        return future

    # --- the person's side ---------------------------------------------------------------------
    async def list_sessions(self) -> list[SessionSummary]:
        return await self.store.list_sessions()

    async def view(self, session_id: str) -> SessionView:
        session = await self.store.get_session(session_id)
        events = await self.store.events(session_id)
        pending = rules.pending_requests(events)
        responses = {e.turn_id: e for e in events if e.llm_response is not None}
        timeline = [
            Turn(turn_id=e.turn_id, agent_name=e.agent_name, request=e, response=responses.get(e.turn_id))
            for e in events
            if e.llm_request is not None
        ]
        return SessionView(session=session, head=pending[0] if pending else None, pending=pending, timeline=timeline)

    async def submit_decision(self, session_id: str, turn_id: str, decision: Decision | dict[str, Any]) -> dict[str, Any]:
        """Check a person's answer to ``turn_id`` and hand it to the agent waiting for it; returns
        the response as the agent gets it. The agent stores the response event itself."""
        if isinstance(decision, dict):
            decision = Decision.model_validate(decision)
        session = await self.store.get_session(session_id)
        head = rules.check_head(session, await self.store.events(session_id), turn_id)
        response = decision.to_response()
        rules.check_decision(head.llm_request or {}, response)
        future = self._waiters.get(turn_id)
        if future is not None:
            if future.done():
                raise SimulatorConflictError(f"turn {turn_id} was already answered; its response is being stored")
            future.set_result(response)
            return response
        if head.reply_to is not None and head.reply_to.workflow_id:
            if self.deliver is None:
                raise SimulatorConflictError(
                    f"turn {turn_id} waits in workflow {head.reply_to.workflow_id!r}, and this server has no "
                    "Temporal client to reach it: serve the simulator with `adkt sim`"
                )
            try:
                await self.deliver(head, response)
            except AskerGoneError as gone:
                await self.abandon(head, str(gone))
                raise AskerGoneError(f"{gone}; the request is closed, answer the next one") from None
            return response
        # In-process, the run that asked registers its waiter before the request is visible: none
        # now means that run has ended (cancelled, timed out) without closing the request.
        reason = f"no agent is waiting for turn {turn_id}: the in-process run that asked has ended"
        await self.abandon(head, reason)
        raise AskerGoneError(f"{reason}; the request is closed, answer the next one")

    async def abandon(self, request: SessionEvent, reason: str) -> None:
        """Close ``request``, which nobody waits for any more, with ``abandoned_response(reason)``:
        the requests behind it in its session's queue can then be answered. A repeat stores nothing."""
        await self.record_response(
            session_id=request.session_id, turn_id=request.turn_id, event_id=f"{request.event_id}/abandoned",
            timestamp=wall_clock(), agent_name=request.agent_name, llm_response=abandoned_response(reason),
        )

    async def complete(self, session_id: str) -> None:
        await self.store.set_status(session_id, "completed")
