"""Compaction at the end of a durable invocation (adk_core.compaction; the activity is in
activities/compaction_activities.py).

The summary is written by an activity, which reads the stored events itself, so nothing in
workflow history grows with the conversation. The compaction event is made here, with an id that
follows from the invocation's and the workflow's clock, and stored like any other event: appends
are idempotent by id, so however the worker crashes the session ends up with one compaction event
for the invocation or none.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from adk_core.agents.context import InvocationContext
    from adk_core.compaction import compaction_event, may_be_due
    from adk_core.runner import Runner
    from adk_core.types import EventCompaction
    from adk_temporal.activities.compaction_activities import (
        SUMMARIZE_EVENTS,
        SummarizeEventsInput,
        SummarizeEventsResult,
    )

    from .runtime import TemporalRuntime
    from .services import DurableSessionService, raise_if_cancelled

SUMMARIZE_TIMEOUT = timedelta(minutes=10)
SUMMARIZE_HEARTBEAT_TIMEOUT = timedelta(seconds=10)
SUMMARIZE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=60), maximum_attempts=8
)
"""Bounded: a summary that cannot be written is skipped (logged), and the next invocation plans
the same compaction again; the turn itself has already succeeded."""
PATCH_ID = "adk-events-compaction"
"""Compaction adds an activity at the end of an invocation. A history recorded before compaction
was turned on for the app (or before this code) has no marker, so on replay it runs without."""


async def compact_after_invocation(
    runner: Runner, runtime: TemporalRuntime, sessions: DurableSessionService, ctx: InvocationContext
) -> None:
    """Store a compaction event when one is due, after the invocation's events are stored."""
    config = runner.events_compaction_config
    if config is None or not ctx.session.events or not workflow.patched(PATCH_ID):
        return
    if not may_be_due(ctx.session.events, config, whole_session=sessions.unloaded_through is None):
        return  # the loaded events show it is not due: no activity
    compaction = await summarize_in_activity(runtime, sessions, ctx)
    if compaction is None:
        return
    event = compaction_event(compaction, invocation_id=ctx.invocation_id, timestamp=runtime.now())
    await runtime.commit(ctx, event)
    await sessions.flush()


async def summarize_in_activity(
    runtime: TemporalRuntime, sessions: DurableSessionService, ctx: InvocationContext, *,
    before_model_call: bool = False,
) -> EventCompaction | None:
    """The next compaction of the stored session through ``ctx``'s newest event, written by the
    ``adk.summarize_events`` activity once the invocation's events are stored; None when none is
    due or the summary could not be written (logged, planned again next time). ``before_model_call``:
    inside an invocation, by the token trigger alone (TemporalRuntime.summarize_before_model_call)."""
    await sessions.flush()
    try:
        result = await workflow.execute_activity(
            SUMMARIZE_EVENTS,
            SummarizeEventsInput(
                app_name=runtime.app_name, key=sessions.key, through_event_id=ctx.session.events[-1].id,
                invocation_id=ctx.invocation_id, before_model_call=before_model_call,
            ),
            result_type=SummarizeEventsResult,
            start_to_close_timeout=SUMMARIZE_TIMEOUT,
            heartbeat_timeout=SUMMARIZE_HEARTBEAT_TIMEOUT,
            retry_policy=SUMMARIZE_RETRY,
            summary="compact session events",
        )
    except ActivityError as error:
        raise_if_cancelled(error)  # the conversation is being cancelled: not a compaction to skip
        workflow.logger.warning(
            f"compaction in invocation {ctx.invocation_id} skipped, to be planned again: {error.cause or error}"
        )
        return None
    return result.compaction
