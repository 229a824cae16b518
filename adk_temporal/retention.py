"""Retention on a Temporal Schedule (docs/security.md, "Retention").

    await install_schedule(client, task_queue="adk-retention", every=timedelta(hours=1))
    worker = retention_worker(client, engine, task_queue="adk-retention")

The schedule ``adk-retention`` starts a RetentionWorkflow every ``every``; it runs one activity that
deletes old streamed partials, old eval runs and stored payloads no kept history references
(activities.retention). Installing again updates the schedule (interval, ages, queue). Overlapping
passes are skipped (a slow pass is never run twice at once).
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleUpdate,
    ScheduleUpdateInput,
)
from temporalio.worker import Worker

from adk_temporal.activities.retention import RetentionActivities
from adk_temporal.workflows.plugin import AdkPlugin
from adk_temporal.workflows.retention import RetentionInput, RetentionResult, RetentionWorkflow
from adk_temporal.workflows.sandbox import sandbox_runner

SCHEDULE_ID = "adk-retention"
TASK_QUEUE = "adk-retention"

__all__ = ["SCHEDULE_ID", "TASK_QUEUE", "RetentionInput", "RetentionResult", "install_schedule", "retention_worker"]


def _schedule(task_queue: str, every: timedelta, input: RetentionInput) -> Schedule:
    return Schedule(
        action=ScheduleActionStartWorkflow(RetentionWorkflow.run, input, id=f"{SCHEDULE_ID}-pass", task_queue=task_queue),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)]),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP),
    )


async def install_schedule(
    client: Client, *, task_queue: str = TASK_QUEUE, every: timedelta = timedelta(hours=1),
    input: RetentionInput | None = None,
) -> None:
    """Create the ``adk-retention`` schedule, or update it to these settings."""
    schedule = _schedule(task_queue, every, input or RetentionInput())
    try:
        await client.create_schedule(SCHEDULE_ID, schedule)
    except ScheduleAlreadyRunningError:
        def replace(_: ScheduleUpdateInput) -> ScheduleUpdate:
            return ScheduleUpdate(schedule=schedule)

        await client.get_schedule_handle(SCHEDULE_ID).update(replace)


def retention_worker(client: Client, engine: AsyncEngine, *, task_queue: str = TASK_QUEUE) -> Worker:
    """A worker for the retention passes: the workflow and its one activity (on the sessions database).
    Built on a copy of ``client`` without the ADK plugin, which would register every ADK workflow here
    too; the copy keeps the client's converter (codec and payload storage)."""
    config = client.config()
    config["plugins"] = [p for p in config.get("plugins", []) if not isinstance(p, AdkPlugin)]
    own = Client(**config)
    activities = RetentionActivities(client, engine)
    return Worker(own, task_queue=task_queue, workflows=[RetentionWorkflow], activities=[activities.prune],
                  workflow_runner=sandbox_runner())  # the ADK sandbox: adk_temporal passes through
