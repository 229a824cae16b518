"""Run an agent from inside your own Temporal workflow.

    from adk_temporal.workflows import run_agent

    @workflow.defn
    class TicketTriage:
        @workflow.run
        async def run(self, ticket: str) -> str:
            result = await run_agent("support_desk", "ops", f"ticket-{workflow.info().workflow_id}", ticket)
            return result.final_text

One call is one invocation of the app's agent on one session, exactly as in AgentRunWorkflow:
model and tool calls run as this worker's ADK activities, events are committed to the session
store, and a crash resumes the invocation where it stopped. Register your workflow on a worker
that carries AdkPlugin, e.g. ``build_worker(client, [app], workflows=[TicketTriage], ...)``; the
app must be one that worker serves.

The session is written by this workflow while the call runs: give each workflow its own session
ids (or sessions no SessionWorkflow is serving at the same time), as you would give each process
its own file.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from adk_core.errors import ConfigurationError
    from adk_core.ids import validate_session_key
    from adk_core.types import Content, Event

    from ._invocation import DurableInvoker
    from .contracts import AgentRunResult, final_text

__all__ = ["run_agent"]

ReplyWaiter = Callable[[str, str], Awaitable[Any]]
"""``await waiter(kind, call_id)`` returns the answer to a confirmation or long-running tool call."""


async def run_agent(
    app_name: str,
    user_id: str,
    session_id: str,
    message: str | Content | None,
    *,
    state_delta: dict[str, Any] | None = None,
    create_session: bool = True,
    initial_state: dict[str, Any] | None = None,
    max_llm_calls: int = 500,
    wait_for_reply: ReplyWaiter | None = None,
) -> AgentRunResult:
    """One invocation of ``app_name``'s root agent, from workflow code; returns its events.

    ``wait_for_reply``: how your workflow answers tool confirmations and long-running tools (for
    example ``workflow.wait_condition`` on a dict that an Update fills). Without it the invocation
    ends at the first request, which stays pending in the session (``result.events`` holds it) and is
    answered by the next message, as with ``adkt run``.

    Raises ApplicationError (non-retryable, with the engine's error type) when the invocation
    fails; the session then holds an error event saying why.
    """
    if not workflow.in_workflow():
        raise ConfigurationError(
            "run_agent is called from workflow code; outside a workflow use adkt.client.AdkClient"
        )
    validate_session_key(app_name, user_id, session_id)
    content = Content.user(message) if isinstance(message, str) else message
    invoker = DurableInvoker(app_name, user_id, session_id, waiter=wait_for_reply)
    await invoker.load(create=create_session, initial_state=initial_state)
    events: list[Event] = []
    invocation_id = await invoker.invoke(content, state_delta=state_delta, max_llm_calls=max_llm_calls, events=events)
    return AgentRunResult(
        session_id=session_id, invocation_id=invocation_id, events=events, final_text=final_text(events)
    )
