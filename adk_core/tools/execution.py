"""How a tool runs in a durable run. Plain data: the Temporal runtime reads it, adk_core ignores it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal


@dataclass(frozen=True)
class RetryOptions:
    """Mirrors Temporal's RetryPolicy without importing it. None fields use Temporal's defaults."""

    initial_interval: timedelta = timedelta(seconds=1)
    backoff_coefficient: float = 2.0
    maximum_interval: timedelta | None = None
    maximum_attempts: int = 0
    """0 means unlimited (bounded by the timeouts)."""
    non_retryable_error_types: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolExecution:
    """Per-tool options for durable runs.

    mode:
        "activity"        a regular activity (default): retried, visible, heartbeat-capable;
        "local_activity"  a local activity: cheaper, for short tools without side effects that matter;
        "inline"          runs in the workflow itself: only for pure, deterministic functions.
    """

    mode: Literal["activity", "local_activity", "inline"] = "activity"
    start_to_close_timeout: timedelta = timedelta(minutes=5)
    schedule_to_close_timeout: timedelta | None = None
    heartbeat_timeout: timedelta | None = None
    retry: RetryOptions = field(default_factory=RetryOptions)
    task_queue: str | None = None
    """Run on another worker's queue (e.g. one with GPU or network access)."""
    retry_errors: bool = False
    """Retry when the tool raises. Off by default: the model is told about the error and can
    decide itself; crashes and timeouts of the worker running the tool are always retried."""
