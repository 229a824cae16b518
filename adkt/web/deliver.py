"""Delivering a person's decision to the durable run that waits for it: the workflow's
``submit_decision`` Update."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode

from adk_core.simulator import Deliver, SessionEvent, SimulatorConflictError
from workflows._simulator import SUBMIT_DECISION, SimulatorDecision


def temporal_deliver(client: Client) -> Deliver:
    """A ``SimulatorService(deliver=...)`` that sends decisions to workflows through ``client``."""

    async def deliver(request: SessionEvent, response: dict[str, Any]) -> None:
        assert request.reply_to is not None and request.reply_to.workflow_id
        handle = client.get_workflow_handle(request.reply_to.workflow_id)
        try:
            await handle.execute_update(SUBMIT_DECISION, SimulatorDecision(turn_id=request.turn_id, response=response))
        except WorkflowUpdateFailedError as e:
            cause = getattr(e.cause, "message", None) or str(e.cause or e)
            raise SimulatorConflictError(f"the run refused the decision: {cause}") from None
        except RPCError as e:
            if e.status == RPCStatusCode.NOT_FOUND:
                raise SimulatorConflictError(
                    f"the run that asked (workflow {request.reply_to.workflow_id!r}) is no longer running; "
                    "its request cannot be answered"
                ) from None
            raise

    return deliver
