"""Shipping a new version under running conversations (docs/versioning.md).

Workers started with a deployment name and build id (``adkt worker --deployment-name --build-id``)
pin each run to their version. Making a version current (``promote``) sends new runs there; running
conversations move at their next turn boundary (SessionWorkflow continues-as-new with AUTO_UPGRADE),
and ``promote`` wakes the idle ones with the ``check_version`` signal so they move at once instead of
at their next message. Runs that are mid-turn (a slow tool, a pending confirmation, an eval suite)
finish on the version they started on; the old version's workers keep serving them until none is left
(``pinned_runs``), then stop.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from temporalio.api.enums.v1 import RoutingConfigUpdateState
from temporalio.api.workflowservice.v1 import (
    DescribeWorkerDeploymentRequest,
    SetWorkerDeploymentCurrentVersionRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from adk_core.errors import ConfigurationError
from adk_temporal.worker import WorkerVersion

SET_CURRENT_TIMEOUT_SECONDS = 60.0
"""How long ``set_current_version`` waits for the version's workers to register with the server."""
ROUTING_TIMEOUT_SECONDS = 30.0
"""How long ``promote`` waits for the server to route every task queue to the new version before it
wakes conversations anyway."""
NUDGE_CONCURRENCY = 20
"""Signals in flight at once when waking idle conversations."""
_IN_PROGRESS = RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_IN_PROGRESS
OPEN_CONVERSATIONS = 'WorkflowType="SessionWorkflow" AND ExecutionStatus="Running"'


@dataclass(frozen=True)
class Promotion:
    version: WorkerVersion
    nudged: int
    """Open conversations signalled to move (the idle ones move now, the busy ones after their turn)."""
    failed: int
    """Conversations the signal did not reach (ended meanwhile, or the service refused): they move at
    their next message."""
    routed: bool = True
    """False when the server was still routing the deployment's task queues to the version after
    ROUTING_TIMEOUT_SECONDS: conversations woken before it finished move at their next message;
    promoting again wakes them again."""


async def promote(client: Client, version: WorkerVersion, *, timeout: float = SET_CURRENT_TIMEOUT_SECONDS) -> Promotion:
    """Make ``version`` current and wake the deployment's open conversations on other versions, so the
    idle ones move to it now."""
    routed = await set_current_version(client, version, timeout=timeout)
    nudged, failed = await nudge_conversations(client, version)
    return Promotion(version=version, nudged=nudged, failed=failed, routed=routed)


async def set_current_version(client: Client, version: WorkerVersion, *, timeout: float = SET_CURRENT_TIMEOUT_SECONDS) -> bool:
    """Route new runs (and conversations that move) to ``version``; True once every task queue of
    the deployment routes there, False if that is still under way after ``ROUTING_TIMEOUT_SECONDS``.

    The server knows a version once one of its workers has polled; a version that is still starting
    is waited for up to ``timeout`` seconds, then refused with what to check.
    """
    request = SetWorkerDeploymentCurrentVersionRequest(
        namespace=client.namespace, deployment_name=version.deployment_name, build_id=version.build_id,
        identity=client.identity,
    )
    deadline = time.monotonic() + timeout
    delay = 0.2
    while True:
        try:
            await client.workflow_service.set_worker_deployment_current_version(request)
            break
        except RPCError as e:
            waiting = e.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.FAILED_PRECONDITION, RPCStatusCode.UNAVAILABLE)
            if not waiting:
                raise
            if time.monotonic() > deadline:
                raise ConfigurationError(
                    f"version {version} is not known to the Temporal server after {timeout:g} s ({e.message}): start "
                    f"its workers first (adkt worker --deployment-name {version.deployment_name} "
                    f"--build-id {version.build_id}) and check they reach this server and namespace"
                ) from None
        await asyncio.sleep(delay)
        delay = min(delay * 2, 2.0)
    return await routing_propagated(client, version, timeout=ROUTING_TIMEOUT_SECONDS)


async def routing_propagated(client: Client, version: WorkerVersion, *, timeout: float) -> bool:
    """Wait (up to ``timeout`` seconds) until every task queue of the deployment routes to the new
    version; False if it has not by then. Until it has, a pinned run's next workflow task may not
    yet say that its target changed, so a conversation woken too early stays where it is until its
    next message (still correct, only later)."""
    request = DescribeWorkerDeploymentRequest(namespace=client.namespace, deployment_name=version.deployment_name)
    deadline = time.monotonic() + timeout
    while True:
        described = await client.workflow_service.describe_worker_deployment(request)
        info = described.worker_deployment_info
        current = info.routing_config.current_deployment_version
        if current.build_id == version.build_id and info.routing_config_update_state != _IN_PROGRESS:
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.1)


def conversations_to_move(version: WorkerVersion) -> str:
    """The visibility query for the open conversations of ``version``'s deployment that run on
    another of its versions: only they have somewhere to move, so a promotion signals them and not
    the whole namespace (other deployments' conversations, or those already on ``version``)."""
    return (
        f'{OPEN_CONVERSATIONS} AND TemporalWorkerDeployment="{version.deployment_name}" '
        f'AND TemporalWorkerDeploymentVersion!="{version}"'
    )


async def nudge_conversations(client: Client, version: WorkerVersion) -> tuple[int, int]:
    """Signal ``check_version`` to the open conversations that can move to ``version``; returns
    (signalled, not reached)."""
    semaphore = asyncio.Semaphore(NUDGE_CONCURRENCY)

    async def nudge(workflow_id: str) -> bool:
        async with semaphore:
            try:
                await client.get_workflow_handle(workflow_id).signal("check_version")
                return True
            except RPCError:
                return False  # it ended meanwhile: its next message starts it on the current version

    ids = [w.id async for w in client.list_workflows(conversations_to_move(version))]
    reached = await asyncio.gather(*(nudge(i) for i in ids))
    return sum(reached), len(reached) - sum(reached)


async def run_version(client: Client, workflow_id: str) -> str | None:
    """The worker version (``name:build_id``) a workflow's current run is on, None when unversioned."""
    description = await client.get_workflow_handle(workflow_id).describe()
    info = description.raw_description.workflow_execution_info.versioning_info
    version = info.deployment_version
    return f"{version.deployment_name}:{version.build_id}" if version.build_id else None


async def pinned_runs(client: Client, version: WorkerVersion) -> list[str]:
    """Workflow ids of the open runs still on ``version``: its workers may stop when this is empty."""
    query = f'ExecutionStatus="Running" AND TemporalWorkerDeploymentVersion="{version}"'
    return [w.id async for w in client.list_workflows(query)]
