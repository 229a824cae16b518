"""SimulatorPlugin: a person plays the model for the agents you name."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from ..plugins.base import BasePlugin
from .models import ReplyTo, request_payload, to_llm_response
from .service import SimulatorService

if TYPE_CHECKING:
    from ..agents.context import CallbackContext, InvocationContext
    from ..models.base import LlmRequest, LlmResponse

WAIT_KIND = "simulator_decision"
"""The ``Runtime.wait_for`` kind of a wait for a person's decision (its key is the turn id)."""


class SimulatorAsk(BaseModel):
    """One model request put to a person: everything the agent side stores and waits on."""

    app_name: str
    user_id: str
    adk_session_id: str
    agent_name: str
    turn_id: str
    request_event_id: str
    response_event_id: str
    timestamp: float
    llm_request: dict[str, Any]
    description: str = ""
    reply_to: ReplyTo | None = None


class SimulatorChannel(Protocol):
    """How a request reaches the simulator and its decision comes back. In-process: the service
    directly; under Temporal the runtime offers one (``runtime.simulator_channel``) that stores by
    activity and waits on the workflow's ``submit_decision`` Update."""

    async def ask(self, ask: SimulatorAsk, ctx: InvocationContext) -> dict[str, Any]: ...


class LocalChannel:
    def __init__(self, service: SimulatorService) -> None:
        self.service = service

    async def ask(self, ask: SimulatorAsk, ctx: InvocationContext) -> dict[str, Any]:
        decided = self.service.expect_decision(ask.turn_id)  # before the request is visible
        request = await self.service.submit_request(
            app_name=ask.app_name, user_id=ask.user_id, adk_session_id=ask.adk_session_id,
            agent_name=ask.agent_name, turn_id=ask.turn_id, event_id=ask.request_event_id,
            timestamp=ask.timestamp, llm_request=ask.llm_request, description=ask.description,
        )
        try:
            response = await decided
        except asyncio.CancelledError:
            # The run gave up waiting (cancelled, timed out): close the request, or it would head its
            # session's queue for good and no later request of the session could be answered.
            with contextlib.suppress(Exception):
                await asyncio.shield(self.service.abandon(request, "the run that asked was cancelled"))
            raise
        await self.service.record_response(
            session_id=request.session_id, turn_id=ask.turn_id, event_id=ask.response_event_id,
            timestamp=ctx.runtime.now(), agent_name=ask.agent_name, llm_response=response,
        )
        return response


class SimulatorPlugin(BasePlugin):
    """Sends the model requests of ``targets`` (agent names; None: every agent) to a person.

    Each request becomes the pending request of a simulator session (one per ADK session), and the
    person's decision comes back as the model's response; other agents keep their real model.
    In-process the run awaits the decision; in a durable run the request is stored by an activity
    and the workflow waits on its ``submit_decision`` Update, across worker and server restarts.

    Args:
        targets: names of the agents a person plays the model for; None for all.
        service: the in-process service (and store) the web app serves; a new in-memory one by
            default. Durable runs use the worker's store instead (the sessions database).
    """

    def __init__(self, targets: Sequence[str] | None = None, *, service: SimulatorService | None = None,
                 name: str = "simulator") -> None:
        super().__init__(name)
        self.targets = None if targets is None else frozenset(targets)
        self.service = service if service is not None else SimulatorService()
        self._local = LocalChannel(self.service)

    def targets_agent(self, agent_name: str) -> bool:
        return self.targets is None or agent_name in self.targets

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        agent_name = callback_context.agent_name
        if not self.targets_agent(agent_name):
            return None
        ctx = callback_context.invocation_context
        runtime = ctx.runtime
        channel: SimulatorChannel = getattr(runtime, "simulator_channel", None) or self._local
        ask = SimulatorAsk(
            app_name=ctx.app_name, user_id=ctx.user_id, adk_session_id=ctx.session.id, agent_name=agent_name,
            turn_id=runtime.new_id(), request_event_id=runtime.new_id(), response_event_id=runtime.new_id(),
            timestamp=runtime.now(), llm_request=request_payload(llm_request),
            description=f"{ctx.app_name} / {ctx.user_id} / {ctx.session.id}",
        )
        return to_llm_response(await channel.ask(ask, ctx))
