"""What both workflows do to run one invocation of the engine, and to find pending requests."""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities import contracts as c
    from activities.apps import get_app
    from adk_core.agents.run_config import RunConfig
    from adk_core.errors import AdkError
    from adk_core.flow.functions import unanswered_long_running_calls
    from adk_core.runner import Runner
    from adk_core.sessions import Session
    from adk_core.types import REQUEST_CONFIRMATION_FUNCTION, Content, Event

    from .contracts import PendingRequest
    from .runtime import TemporalRuntime, Waiter
    from .services import DurableArtifactService, DurableMemoryService, DurableSessionService


class DurableInvoker:
    """Holds one session's durable services and runs invocations on it."""

    def __init__(self, app_name: str, user_id: str, session_id: str, *, waiter: Waiter | None = None) -> None:
        self.key = c.SessionKey(app_name=app_name, user_id=user_id, session_id=session_id)
        self.sessions = DurableSessionService(self.key)
        self.runtime = TemporalRuntime(app_name=app_name, sessions=self.sessions, waiter=waiter)
        self.session: Session | None = None
        app = get_app(app_name)
        self.runner = Runner(
            app=app,
            session_service=self.sessions,
            artifact_service=DurableArtifactService(self.key),
            memory_service=DurableMemoryService(self.key),
            runtime=self.runtime,
        )

    async def load(self, *, create: bool, initial_state: dict | None, tail_events: int = 20) -> Session:
        result = await self.sessions.load(create_if_missing=create, initial_state=initial_state, tail_events=tail_events)
        self.session = result.session
        return self.session

    async def invoke(
        self, message: Content | None, *, state_delta: dict | None, max_llm_calls: int, events: list[Event]
    ) -> str:
        """Run one invocation, appending its events to ``events`` as they come; returns its id.

        Engine errors fail the invocation with an ApplicationError naming the error type, after
        the events made so far are stored.
        """
        assert self.session is not None, "load() first"
        ctx = self.runner.new_invocation_context(self.session, run_config=RunConfig(max_llm_calls=max_llm_calls))
        try:
            async for event in self.runner.run_invocation(ctx, message, state_delta):
                events.append(event)
        except AdkError as e:
            await self.sessions.flush()
            raise ApplicationError(str(e), type=type(e).__name__, non_retryable=True) from e
        await self.sessions.flush()
        return ctx.invocation_id

    def trim(self, keep: int = 200) -> None:
        """Older events stay in the store (and reach models by reference); keep workflow memory bounded."""
        events = self.session.events if self.session is not None else []
        if len(events) > keep:
            self.sessions.unloaded_through = events[-keep - 1].id
            del events[:-keep]


def pending_requests(events: list[Event]) -> list[PendingRequest]:
    """Long-running calls (tool confirmations included) that no reply has answered yet.

    Only a user's function response answers: a long-running tool's own first result (say
    ``{"status": "pending", "ticket": ...}``) carries the same call id but is not the answer.
    """
    pending: list[PendingRequest] = []
    for _, event, call in unanswered_long_running_calls(events):
        if call.name == REQUEST_CONFIRMATION_FUNCTION:
            original = call.args.get("originalFunctionCall", {})
            confirmation = call.args.get("toolConfirmation", {})
            pending.append(
                PendingRequest(
                    kind="tool_confirmation", call_id=call.id or "", name=original.get("name", ""),
                    args=original.get("args", {}), hint=confirmation.get("hint", ""), agent=event.author,
                )
            )
        else:
            pending.append(
                PendingRequest(kind="long_running_tool", call_id=call.id or "", name=call.name, args=call.args,
                               agent=event.author)
            )
    return pending


def reply_content(call_id: str, pending: list[PendingRequest], response: dict) -> Content:
    """The user message that answers a pending request (ADK's function-response pattern)."""
    from adk_core.types import Part

    request = next(p for p in pending if p.call_id == call_id)
    name = REQUEST_CONFIRMATION_FUNCTION if request.kind == "tool_confirmation" else request.name
    return Content(role="user", parts=[Part.from_function_response(name, response, id=call_id)])


def check_reply(call_id: str, pending: list[PendingRequest]) -> None:
    if not any(p.call_id == call_id for p in pending):
        known = ", ".join(p.call_id for p in pending) or "none"
        raise ValueError(f"no pending request has call id {call_id!r}; pending call ids: {known}")
