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
    maximum_attempts: int = 10
    """Attempts before the call fails for good (0: unlimited, bounded only by the timeouts). A
    tool is retried when its worker dies or times out, or when it raises with retry_errors on."""
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
    heartbeat_timeout: timedelta | None = timedelta(seconds=10)
    """The tool's activity heartbeats on its own while the tool runs, so a worker that dies is
    noticed within this (then the call is retried elsewhere). None turns the check off, leaving
    start_to_close_timeout as the only bound. Not used by local activities."""
    retry: RetryOptions = field(default_factory=RetryOptions)
    task_queue: str | None = None
    """Run on another worker's queue (e.g. one with GPU or network access)."""
    retry_errors: bool = False
    """Retry when the tool raises. Off by default: the model is told about the error and can
    decide itself; crashes and timeouts of the worker running the tool are always retried."""


def remote_tool_execution(refused_error: str, *, timeout: timedelta = timedelta(minutes=2)) -> ToolExecution:
    """Options for a tool that calls a remote service (MCP, OpenAPI): retried, three attempts at most
    (after 1 s and 2 s), when the service gave no answer (unreachable, died, timed out, 5xx); an
    answer that refuses the call (the ``refused_error`` type) goes to the model at once."""
    return ToolExecution(
        start_to_close_timeout=timeout,
        retry_errors=True,
        retry=RetryOptions(maximum_attempts=3, non_retryable_error_types=(refused_error,)),
    )
