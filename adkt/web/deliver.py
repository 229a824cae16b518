"""Delivering a person's decision to the durable run that waits for it: the workflow's
``submit_decision`` Update.

The Update is bounded (``timeout``): with no worker polling the run's task queue, Temporal holds
an Update until a worker accepts it, and the person would wait on a spinning page for as long as
the workers are down. After the timeout the person gets ``SimulatorDeliveryTimeoutError``; the
request stays pending in the store. The Update's id is derived from the turn and the response,
so answering again with the same decision reattaches to the same Update instead of sending a
second one, and a different decision is refused by the run if the first one got through.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from datetime import timedelta
from typing import Any

from temporalio.client import Client, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.service import RPCError, RPCStatusCode

from adk_core.simulator import (
    AskerGoneError,
    Deliver,
    SessionEvent,
    SimulatorConflictError,
    SimulatorDeliveryTimeoutError,
)
from adk_temporal.workflows._simulator import SUBMIT_DECISION, SimulatorDecision

DELIVER_TIMEOUT = timedelta(seconds=20)


def update_id(turn_id: str, response: dict[str, Any]) -> str:
    """The Update id of one decision: the same answer to the same turn is the same Update."""
    digest = hashlib.sha256(json.dumps(response, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return f"simulator:{turn_id}:{digest[:16]}"


def temporal_deliver(client: Client, *, timeout: timedelta = DELIVER_TIMEOUT) -> Deliver:
    """A ``SimulatorService(deliver=...)`` that sends decisions to workflows through ``client``,
    giving up (with ``SimulatorDeliveryTimeoutError``) when no worker accepts one within ``timeout``."""

    async def deliver(request: SessionEvent, response: dict[str, Any]) -> None:
        assert request.reply_to is not None and request.reply_to.workflow_id
        workflow_id = request.reply_to.workflow_id
        handle = client.get_workflow_handle(workflow_id)
        decision = SimulatorDecision(turn_id=request.turn_id, response=response)
        try:
            async with asyncio.timeout(timeout.total_seconds()):
                await handle.execute_update(
                    SUBMIT_DECISION, decision, id=update_id(request.turn_id, response), rpc_timeout=timeout
                )
        except WorkflowUpdateFailedError as e:
            cause = getattr(e.cause, "message", None) or str(e.cause or e)
            raise SimulatorConflictError(f"the run refused the decision: {cause}") from None
        except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
            raise SimulatorDeliveryTimeoutError(
                f"no worker accepted the decision for turn {request.turn_id} within {timeout.total_seconds():g} s "
                f"(workflow {workflow_id!r}): is a worker running for its task queue? The decision is not "
                "stored: the request stays pending in the simulator. Temporal may still hand it to the run "
                "when a worker starts; reload the session, and if the request is still pending, answer it "
                "again (the same answer is the same Update, sent once)"
            ) from None
        except RPCError as e:
            if e.status == RPCStatusCode.NOT_FOUND:
                raise AskerGoneError(
                    f"the run that asked (workflow {workflow_id!r}) is no longer running"
                ) from None
            raise

    return deliver
