"""The durable half of the simulator: the request is stored by an activity and the workflow waits
on its ``submit_decision`` Update. Nothing polls; a worker may die while a person thinks, and
the replayed workflow waits again for the same turn."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from adk_core.agents.context import InvocationContext
    from adk_core.simulator import WAIT_KIND, ReplyTo, SimulatorAsk
    from adk_core.simulator.rules import check_response_shape
    from adk_temporal.activities.simulator_activities import (
        RECORD_RESPONSE,
        SUBMIT_REQUEST,
        RecordResponseInput,
    )

if TYPE_CHECKING:
    from .runtime import TemporalRuntime

SUBMIT_DECISION = "submit_decision"
STORE_TIMEOUT = timedelta(seconds=30)
STORE_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=10),
                          maximum_attempts=20)
KEEP_ANSWERED = 1000


class SimulatorDecision(BaseModel):
    """The ``submit_decision`` Update's argument: a checked response for one turn (the web app
    checks it against the simulator's rules before sending)."""

    turn_id: str
    response: dict[str, Any]


class SimulatorMailbox:
    """Decisions delivered by Update, waiting for the turn that asked."""

    def __init__(self) -> None:
        self._decisions: dict[str, dict[str, Any]] = {}
        self._answered: list[str] = []

    def refusal(self, decision: SimulatorDecision) -> str | None:
        if decision.turn_id in self._decisions or decision.turn_id in self._answered:
            return f"turn {decision.turn_id} is already answered; a turn has at most one response"
        try:
            check_response_shape(decision.response)
        except ValueError as e:
            return str(e)
        return None

    def deliver(self, decision: SimulatorDecision) -> None:
        self._decisions[decision.turn_id] = decision.response

    async def wait(self, turn_id: str) -> dict[str, Any]:
        await workflow.wait_condition(lambda: turn_id in self._decisions)
        self._answered.append(turn_id)
        del self._answered[:-KEEP_ANSWERED]
        return self._decisions.pop(turn_id)


class SimulatorUpdates:
    """The ``submit_decision`` Update for a workflow class that runs agents, delivering into
    ``self._simulator`` (the mailbox its runtime waits on). The child workflows of AgentTools and
    ParallelAgent branches take it too: a request records the workflow that asked, child or not."""

    _simulator: SimulatorMailbox

    @workflow.update(name=SUBMIT_DECISION)
    async def submit_decision(self, decision: SimulatorDecision) -> None:
        """A person's answer to a model request of a SimulatorPlugin target (checked by the simulator first)."""
        self._simulator.deliver(decision)

    @submit_decision.validator
    def _check_decision(self, decision: SimulatorDecision) -> None:
        reason = self._simulator.refusal(decision)
        if reason:
            raise ValueError(reason)


class DurableSimulatorChannel:
    """``runtime.simulator_channel`` of TemporalRuntime, used by SimulatorPlugin in a workflow."""

    def __init__(self, runtime: TemporalRuntime) -> None:
        self._runtime = runtime

    async def ask(self, ask: SimulatorAsk, ctx: InvocationContext) -> dict[str, Any]:
        # No run id: the Update goes to whichever run of this workflow id is current.
        ask = ask.model_copy(update={"reply_to": ReplyTo(workflow_id=workflow.info().workflow_id)})
        session_id = await workflow.execute_activity(
            SUBMIT_REQUEST, ask, result_type=str, start_to_close_timeout=STORE_TIMEOUT, retry_policy=STORE_RETRY,
            summary=f"{ask.agent_name} -> a person (simulator)",
        )
        response = await self._runtime.wait_for(WAIT_KIND, ask.turn_id, ctx)
        assert isinstance(response, dict)  # the simulator's mailbox (SimulatorMailbox.wait) answers with a dict
        await workflow.execute_activity(
            RECORD_RESPONSE,
            RecordResponseInput(
                session_id=session_id, turn_id=ask.turn_id, event_id=ask.response_event_id,
                timestamp=self._runtime.now(), agent_name=ask.agent_name, llm_response=response,
            ),
            start_to_close_timeout=STORE_TIMEOUT, retry_policy=STORE_RETRY,
            summary=f"{ask.agent_name}: a person's answer (simulator)",
        )
        return response
