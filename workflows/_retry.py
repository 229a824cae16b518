"""adk_core's engine-neutral RetryOptions as Temporal's RetryPolicy: the one place the two meet."""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from adk_core.tools.execution import RetryOptions


def retry_policy(options: RetryOptions) -> RetryPolicy:
    return RetryPolicy(
        initial_interval=options.initial_interval,
        backoff_coefficient=options.backoff_coefficient,
        maximum_interval=options.maximum_interval,
        maximum_attempts=options.maximum_attempts,
        non_retryable_error_types=list(options.non_retryable_error_types) or None,
    )
