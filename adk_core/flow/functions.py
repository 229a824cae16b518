"""Tool dispatch: run the function calls of one model response and build the response event."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from .. import telemetry
from .._callables import first_result
from ..agents.base import new_event
from ..agents.context import InvocationContext, ToolContext
from ..errors import RemoteError, error_type_name
from ..types import (
    REQUEST_CONFIRMATION_FUNCTION,
    Content,
    Event,
    EventActions,
    FunctionCall,
    Part,
    ToolConfirmation,
)

if TYPE_CHECKING:
    from ..agents.llm_agent import LlmAgent
    from ..tools.base import BaseTool

CALL_ID_PREFIX = "adk-"


def ensure_call_ids(ctx: InvocationContext, event: Event) -> None:
    """Give every function call an id unique in its invocation, so responses pair up and
    ``ToolContext.idempotency_key`` tells calls apart. Some providers omit ids; some
    OpenAI-compatible servers repeat them (``call_0`` on every turn): those get fresh ones."""
    # The ids the invocation's events hold, kept up to date a step at a time (adk_core.flow.incremental).
    seen = ctx.flow_memo.call_ids(ctx.session.events, ctx.invocation_id)
    given: set[str] = set()
    for call in event.function_calls():
        if not call.id or call.id in seen or call.id in given:
            call.id = CALL_ID_PREFIX + ctx.runtime.new_id()
        given.add(call.id)


def long_running_ids(event: Event, tools: dict[str, BaseTool]) -> list[str] | None:
    ids = [c.id for c in event.function_calls() if c.id and c.name in tools and tools[c.name].is_long_running]
    return ids or None


def awaited_results(long_running: list[str], response_event: Event | None) -> list[str]:
    """Which of the ``long_running`` calls ``response_event`` (their step's results) holds no result
    for: their tools returned None, and the results arrive later, as FunctionResponse messages."""
    answered = {r.id for r in response_event.function_responses()} if response_event is not None else set()
    return [call_id for call_id in long_running if call_id not in answered]


async def handle_function_calls(
    ctx: InvocationContext,
    agent: LlmAgent,
    calls: list[FunctionCall],
    tools: dict[str, BaseTool],
    confirmations: dict[str, ToolConfirmation] | None = None,
) -> Event | None:
    """Run the calls (concurrently when there are several) and merge their results into one event."""
    confirmations = confirmations or {}
    if len(calls) == 1:
        results = [await _run_one(ctx, agent, calls[0], tools, confirmations.get(calls[0].id or ""))]
    else:
        results = await asyncio.gather(
            *(_run_one(ctx, agent, call, tools, confirmations.get(call.id or "")) for call in calls)
        )
    parts: list[Part] = []
    actions = EventActions()
    for part, call_actions in results:
        if part is not None:
            parts.append(part)
        actions.merge(call_actions)
    if not parts and actions.is_empty():
        return None
    return new_event(
        ctx, author=agent.name, content=Content(role="user", parts=parts) if parts else None, actions=actions
    )


async def _run_one(
    ctx: InvocationContext,
    agent: LlmAgent,
    call: FunctionCall,
    tools: dict[str, BaseTool],
    confirmation: ToolConfirmation | None,
) -> tuple[Part | None, EventActions]:
    tool_context = ToolContext(ctx, function_call_id=call.id, tool_confirmation=confirmation)
    tool = tools.get(call.name)
    if tool is None:
        available = ", ".join(sorted(tools)) or "none"
        response: Any = {"error": f"Tool '{call.name}' not found. Available tools: {available}."}
        return _response_part(call, response), tool_context.actions
    args = dict(call.args)
    plugins = ctx.plugin_manager
    response = await plugins.run("before_tool_callback", tool=tool, tool_args=args, tool_context=tool_context)
    if response is None and agent.before_tool_callback:
        response = await first_result(agent.before_tool_callback, tool=tool, args=args, tool_context=tool_context)
    if response is None:
        attributes = telemetry.tool_span_attributes(tool.name, tool.description, call.id)
        with ctx.runtime.span(f"execute_tool {tool.name}", attributes):
            try:
                response = await ctx.runtime.run_tool(tool, args, tool_context)
            except Exception as error:
                response = await _on_tool_error(ctx, agent, tool, args, tool_context, error)
    altered = await plugins.run(
        "after_tool_callback", tool=tool, tool_args=args, tool_context=tool_context, result=response
    )
    if altered is None and agent.after_tool_callback:
        altered = await first_result(
            agent.after_tool_callback, tool=tool, args=args, tool_context=tool_context, tool_response=response
        )
    if altered is not None:
        response = altered
    if response is None and tool.is_long_running:
        return None, tool_context.actions  # the result comes later, as a FunctionResponse message
    return _response_part(call, response), tool_context.actions


async def _on_tool_error(
    ctx: InvocationContext, agent: LlmAgent, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext,
    error: Exception,
) -> Any:
    """A tool that raised becomes an error response the model sees, unless a callback recovers."""
    if isinstance(error, RemoteError):
        # Raised in another process (a tool activity): callbacks get the tool's own exception class
        # where the tool's and the callbacks' modules can name it, as they would in-process.
        error = error.rebuilt(near=[tool, *agent.on_tool_error_callback, *ctx.plugin_manager.plugins])
    recovered = await ctx.plugin_manager.run(
        "on_tool_error_callback", tool=tool, tool_args=args, tool_context=tool_context, error=error
    )
    if recovered is None and agent.on_tool_error_callback:
        recovered = await first_result(
            agent.on_tool_error_callback, tool=tool, args=args, tool_context=tool_context, error=error
        )
    if recovered is not None:
        return recovered
    return {"error": f"Tool '{tool.name}' failed: {error_type_name(error)}: {error}"}


def _response_part(call: FunctionCall, response: Any) -> Part:
    if not isinstance(response, dict):
        response = {"result": response}
    return Part.from_function_response(call.name, response, id=call.id)


def confirmation_request_event(ctx: InvocationContext, agent: LlmAgent, model_event: Event, response_event: Event) -> Event:
    """The event asking a human to confirm: one ``adk_request_confirmation`` call per paused tool call."""
    calls = {c.id: c for c in model_event.function_calls()}
    parts = []
    ids = []
    for call_id, confirmation in response_event.actions.requested_tool_confirmations.items():
        request_id = CALL_ID_PREFIX + ctx.runtime.new_id()
        ids.append(request_id)
        original = calls.get(call_id)
        parts.append(
            Part.from_function_call(
                REQUEST_CONFIRMATION_FUNCTION,
                {
                    "originalFunctionCall": original.model_dump(mode="json") if original else {"id": call_id},
                    "toolConfirmation": confirmation.model_dump(mode="json"),
                },
                id=request_id,
            )
        )
    return new_event(
        ctx, author=agent.name, content=Content(role="model", parts=parts), long_running_tool_ids=ids
    )


def confirmation_replies(event: Event, session_events: list[Event]) -> tuple[list[FunctionCall], dict[str, ToolConfirmation]]:
    """The original calls a user's ``adk_request_confirmation`` responses answer, and the answers."""
    replies = {
        r.id: r.response for r in event.function_responses() if r.name == REQUEST_CONFIRMATION_FUNCTION and r.id
    }
    if not replies:
        return [], {}
    calls: list[FunctionCall] = []
    confirmations: dict[str, ToolConfirmation] = {}
    ran: set[str] | None = None
    for past in reversed(session_events):
        for request in past.function_calls():
            if request.name != REQUEST_CONFIRMATION_FUNCTION or request.id not in replies:
                continue
            original = FunctionCall.model_validate(request.args.get("originalFunctionCall", {}))
            reply = replies.pop(request.id)
            if ran is None:
                ran = _calls_run(session_events)
            if original.id and original.id in ran:
                # The same answer sent again (a client's retry, a second click): the call ran on the
                # first one; running a confirmed payment twice is what confirmation is there to stop.
                continue
            calls.append(original)
            confirmations[original.id or ""] = ToolConfirmation(
                confirmed=bool(reply.get("confirmed", False)), payload=reply.get("payload")
            )
        if not replies:
            break
    calls.reverse()
    return calls, confirmations


def _calls_run(events: list[Event]) -> set[str]:
    """Ids of the calls that have a tool's response: not the one standing in for a call that waits
    for its confirmation (its event lists the id in ``requested_tool_confirmations``)."""
    return {r.id for e in events for r in e.function_responses()
            if r.id and r.id not in e.actions.requested_tool_confirmations}  # fmt: skip


def unanswered_long_running_calls(events: list[Event]) -> list[tuple[int, Event, FunctionCall]]:
    """(index, event, call) for long-running calls (confirmation requests included) that no user
    reply has answered. A long-running tool's own first result carries the call id too, but only
    a user's function response is the answer."""
    answered = {r.id for e in events if e.author == "user" for r in e.function_responses() if r.id}
    found = []
    for i, event in enumerate(events):
        ids = set(event.long_running_tool_ids or ())
        for call in event.function_calls():
            if call.id in ids and call.id not in answered:
                found.append((i, event, call))
    return found


def resumable_tail_start(events: list[Event]) -> int:
    """Where the part of a session a new invocation needs begins: the last agent event (it decides
    who answers next) or the oldest call still waiting for a reply, whichever comes first.
    Everything before it reaches the model by reference only."""
    starts = [i for i, _, _ in unanswered_long_running_calls(events)]
    for i in range(len(events) - 1, -1, -1):
        if events[i].author != "user":
            starts.append(i)
            break
    return min(starts) if starts else 0
