"""Which turn a streamed model call belongs to: the workflow side of activities/streaming.py.

Only plain data, counted in workflow code, so it is the same on replay: the turn's stream id, the
number of each model call and how many events the turn had made when the call started.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from adk_core.agents.context import InvocationContext
    from adk_core.sessions import SessionService
    from adk_core.types import Event
    from adk_temporal.activities.streaming import StreamTarget, TurnEventsTarget


class TurnStream:
    """One turn's stream. ``events`` is the list the turn's events are appended to as they are
    made; ``sessions`` the turn's own session service (an AgentTool's scratch session does not stream)."""

    def __init__(self, stream_id: str, events: list[Event], sessions: SessionService) -> None:
        self.stream_id = stream_id
        self._events = events
        self._sessions = sessions
        self._calls = 0

    def target(self, ctx: InvocationContext) -> StreamTarget | None:
        if ctx.session_service is not self._sessions:
            return None
        call = self._calls
        self._calls += 1
        return StreamTarget(
            stream_id=self.stream_id, call=call, after_events=len(self._events),
            invocation_id=ctx.invocation_id, branch=ctx.branch,
        )

    def committed(self, stored: list[Event]) -> TurnEventsTarget | None:
        """Where a commit of ``stored`` goes too: its last events that are the turn's latest (the
        user's message before them is no event of the turn); None when it ends with none of them."""
        count = 0
        while (count < min(len(stored), len(self._events))
               and stored[-1 - count].id == self._events[-1 - count].id):  # fmt: skip
            count += 1
        if not count:
            return None
        return TurnEventsTarget(stream_id=self.stream_id, first=len(self._events) - count, count=count)
