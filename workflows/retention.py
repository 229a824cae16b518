"""RetentionWorkflow: one pass of activities.retention, started by the ``adk-retention`` Schedule
(adk_temporal.retention.install_schedule). Its input and result types live here (plain dataclasses),
so the sandbox imports nothing else."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

RETENTION = "adk.retention"


@dataclass(frozen=True)
class RetentionInput:
    """Ages in seconds; None keeps that kind forever."""

    stream_chunk_age: float | None = 3600.0
    eval_run_age: float | None = 90 * 86400.0
    payload_age: float | None = 3600.0
    """Payloads younger than this are kept even when unreferenced: a store happens before the history
    event that references it is recorded."""


@dataclass(frozen=True)
class RetentionResult:
    stream_chunks: int = 0
    eval_runs: int = 0
    payloads: int = 0
    histories_read: int = 0


@workflow.defn(name="AdkRetentionWorkflow")
class RetentionWorkflow:
    @workflow.run
    async def run(self, input: RetentionInput) -> RetentionResult:
        return await workflow.execute_activity(
            RETENTION,
            input,
            result_type=RetentionResult,
            start_to_close_timeout=timedelta(hours=1),
            heartbeat_timeout=timedelta(minutes=2),  # one history read between beats
            retry_policy=RetryPolicy(maximum_attempts=3),  # the next scheduled pass picks up the rest
            summary="remove old stream chunks, eval runs and unreferenced payloads",
        )
