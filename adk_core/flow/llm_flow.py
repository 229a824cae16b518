"""The LLM flow: build a request, call the model, run the tools it asks for, repeat until a final answer.

Request processors, in order: basic config -> instructions -> contents -> tools (which may edit the
contents) -> agent transfer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from .. import telemetry
from .._callables import first_result
from ..agents.base import new_event
from ..agents.context import CallbackContext, InvocationContext, ReadonlyContext, ToolContext
from ..compaction.planner import compaction_event, prompt_over_threshold
from ..errors import ConfigurationError, LlmCallsLimitExceededError
from ..models.base import GenerateContentConfig, LlmRequest, LlmResponse
from ..tools.builtin import TransferToAgentTool
from ..types import Event, EventActions
from ..types.event import CallbackResponse, ModelOutput
from . import history
from .contents import current_turn_start, ending_with_answers
from .functions import (
    awaited_results,
    confirmation_replies,
    confirmation_request_event,
    ensure_call_ids,
    handle_function_calls,
    long_running_ids,
)
from .resolved_context import ResolvedContext, resolve_context, resolve_tools

if TYPE_CHECKING:
    from ..agents.llm_agent import LlmAgent


# --- request processors ---------------------------------------------------------------------------
async def build_request(agent: LlmAgent, ctx: InvocationContext) -> LlmRequest:
    model = agent.canonical_model
    config = (
        agent.generate_content_config.model_copy(deep=True) if agent.generate_content_config else GenerateContentConfig()
    )
    request = LlmRequest(model=model.name, config=config)
    tool_context = ToolContext(ctx)
    # The instruction and the tools as one unit: the instruction names no tool the call lacks.
    resolved = await resolve_context(agent, ctx, tool_context)
    _add_instructions(agent, resolved, request)
    # Contents before tools: a tool's process_llm_request may read or extend them (load_artifacts
    # attaches the artifacts the model just asked for).
    _add_contents(agent, ctx, request)
    await _add_tools(agent, tool_context, resolved, request)
    _add_agent_transfer(agent, request)
    if agent.output_schema is not None and not request.config.tools:
        request.config.response_schema = agent.output_schema.model_json_schema()
        request.config.response_mime_type = "application/json"
    return request


def _add_contents(agent: LlmAgent, ctx: InvocationContext, request: LlmRequest) -> None:
    """The contents of the loaded events, built once and by value (callbacks and tools see them).

    For a session the runtime stores itself, the stored events before the loaded ones go by
    reference (``request.history``), and the loaded ones are marked as a stored prefix that the
    runtime may send by reference too (adk_core.flow.history). Not right after the user's answer to
    a long-running call made earlier: that call's contents end with the answer
    (``ending_with_answers``), which no reference stands for, so the loaded events go by value.
    """
    loaded = ctx.session.events
    current_turn_only = agent.include_contents == "none"
    start = current_turn_start(loaded) if current_turn_only else 0
    whole_turn_loaded = current_turn_only and start < len(loaded) and loaded[start].author == "user"
    # Only the events appended since the last step are built (adk_core.flow.incremental).
    contents = ctx.flow_memo.contents(loaded, start, agent.name, ctx.branch)
    request.contents = ending_with_answers(contents, loaded[-1], agent.name, ctx.branch) if loaded else contents
    if not ctx.runtime_stores_session:
        return
    cursor = ctx.runtime.history_cursor(ctx)
    if cursor is not None and not (current_turn_only and whole_turn_loaded):
        # Older events are stored but not loaded here: refer to them; the model runtime reads them back.
        request.history = history.reference(ctx, agent.name, cursor, current_turn_only=current_turn_only)
    if loaded and request.contents is contents:
        ref = history.reference(ctx, agent.name, loaded[-1].id, current_turn_only=current_turn_only)
        history.mark_stored_prefix(request, ref, request.contents)


def _add_instructions(agent: LlmAgent, resolved: ResolvedContext, request: LlmRequest) -> None:
    request.append_instructions(resolved.instruction)
    identity = f'You are an agent. Your internal name is "{agent.name}".'
    if agent.description:
        identity += f' The description about you is "{agent.description}".'
    request.append_instructions(identity)


async def _add_tools(agent: LlmAgent, tool_context: ToolContext, resolved: ResolvedContext, request: LlmRequest) -> None:
    for tool in resolved.tools:
        if tool.name in request.tools_dict:
            raise ConfigurationError(
                f"agent {agent.name!r} has two tools named {tool.name!r}; tool names must be unique per agent"
            )
        await tool.process_llm_request(tool_context=tool_context, llm_request=request)


def _add_agent_transfer(agent: LlmAgent, request: LlmRequest) -> None:
    targets = agent.transfer_targets()
    if not targets:
        return
    lines = "\n".join(f"Agent name: {t.name}\nAgent description: {t.description}\n" for t in targets)
    guidance = (
        f"You have a list of other agents to transfer to:\n\n{lines}\n"
        "If you are the best to answer the question according to your description, you can answer it.\n\n"
        "If another agent is better for answering the question according to its description, call "
        "`transfer_to_agent` function to transfer the question to that agent. When transferring, do not "
        "generate any text other than the function call."
    )
    if agent.parent_agent is not None and not agent.disallow_transfer_to_parent:
        guidance += (
            f"\n\nYour parent agent is {agent.parent_agent.name}. If neither the other agents nor you are "
            "best for answering the question according to the descriptions, transfer to your parent agent."
        )
    request.append_instructions(guidance)
    request.append_tools([TransferToAgentTool([t.name for t in targets])])


# --- the loop -------------------------------------------------------------------------------------
class _Step:
    """What a step tells the loop besides its events: whether a long-running call it made (or a
    confirmed call it ran) got no result yet. The model is then not called again: the next request
    would hold the call without its result, which providers refuse (400). The invocation ends, as
    it does when that call is the only one (its event is final), and the result arrives later, as a
    FunctionResponse message."""

    __slots__ = ("awaits_result",)

    def __init__(self) -> None:
        self.awaits_result = False


async def run_llm_flow(agent: LlmAgent, ctx: InvocationContext) -> AsyncIterator[Event]:
    step = _Step()
    async for event in _resume_confirmed_calls(agent, ctx, step=step):
        yield event
        if event.actions.transfer_to_agent or event.is_final_response():
            return
    if step.awaits_result:
        return
    while True:
        last: Event | None = None
        async for event in _run_one_step(agent, ctx, step):
            last = event
            yield event
        if ctx.end_invocation or last is None or last.partial or last.is_final_response() or step.awaits_result:
            return


async def _run_one_step(agent: LlmAgent, ctx: InvocationContext, step: _Step) -> AsyncIterator[Event]:
    await _compact_if_the_prompt_grew(ctx)
    request = await build_request(agent, ctx)
    try:
        ctx.count_llm_call()
    except LlmCallsLimitExceededError as error:
        # As google-adk does: the session records why the turn ended (an error event from this
        # agent), then the error is raised to the caller.
        yield new_event(
            ctx, author=agent.name, error_code=type(error).__name__, error_message=str(error), turn_complete=True
        )
        raise
    callback_context = CallbackContext(ctx)
    async for response, by_callback in _call_model(agent, ctx, request, callback_context):
        if response.partial:
            # A streamed chunk is not stored: what the model callbacks write (into the context they
            # hold for the whole call) goes with the final response, as in google-adk.
            yield _model_event(agent, ctx, response, EventActions(), by_callback)
            continue
        event = _model_event(agent, ctx, response, callback_context.actions, by_callback)
        callback_context = CallbackContext(ctx)  # a later final response starts with a clean delta
        ensure_call_ids(ctx, event)
        event.long_running_tool_ids = long_running_ids(event, request.tools_dict)
        _save_output(agent, event)
        yield event
        calls = event.function_calls()
        if not calls:
            continue
        response_event = await handle_function_calls(ctx, agent, calls, request.tools_dict)
        if response_event is None:
            continue  # every call is long-running and waits: the call event is final
        if event.long_running_tool_ids and awaited_results(event.long_running_tool_ids, response_event):
            step.awaits_result = True  # the other calls' results are kept; the model waits for all
        async for follow_up in _after_tool_responses(agent, ctx, event, response_event, step):
            yield follow_up


async def _compact_if_the_prompt_grew(ctx: InvocationContext) -> None:
    """The token trigger inside a long invocation (adk_core.compaction, "By prompt tokens"): when a
    model call of this invocation reported ``token_threshold`` prompt tokens or more, the older
    events are summarized before the next call. Not before an invocation's first call (the end of
    the previous invocation judged the same prompt), nor on a parallel branch (its siblings' events
    interleave with its own)."""
    config = ctx.events_compaction_config
    if config is None or config.token_threshold is None or ctx.branch is not None or ctx.llm_calls_made == 0:
        return
    if not prompt_over_threshold(ctx.session.events, config):
        return
    compaction = await ctx.runtime.summarize_before_model_call(ctx, config)
    if compaction is not None:
        await ctx.runtime.commit(ctx, compaction_event(
            compaction, invocation_id=ctx.invocation_id, timestamp=ctx.runtime.now(), before_call=ctx.llm_calls_made
        ))


async def _after_tool_responses(
    agent: LlmAgent, ctx: InvocationContext, model_event: Event, response_event: Event, step: _Step
) -> AsyncIterator[Event]:
    yield response_event
    if response_event.actions.requested_tool_confirmations:
        request_event = confirmation_request_event(ctx, agent, model_event, response_event)
        yield request_event
        async for event in _await_confirmations(agent, ctx, request_event, step):
            yield event
        return
    target_name = response_event.actions.transfer_to_agent
    if target_name:
        target = agent.root_agent.find_agent(target_name)
        if target is None:
            raise ConfigurationError(f"agent {agent.name!r} transferred to unknown agent {target_name!r}")
        async for event in target.run_async(ctx):
            yield event


async def _await_confirmations(
    agent: LlmAgent, ctx: InvocationContext, request_event: Event, step: _Step
) -> AsyncIterator[Event]:
    """Wait for the human's answers where the runtime can wait durably; otherwise the invocation
    ends here and the answers arrive as the next message."""
    replies = []
    for call in request_event.function_calls():
        reply = await ctx.runtime.wait_for("tool_confirmation", call.id or "", ctx)
        if reply is None:
            return
        replies.append(reply)
    from ..types import Content, Part

    answer = new_event(
        ctx,
        author="user",
        content=Content(
            role="user",
            parts=[Part.from_function_response(c.name, dict(r), id=c.id) for c, r in zip(request_event.function_calls(), replies, strict=True)],
        ),
    )
    yield answer
    async for event in _resume_confirmed_calls(agent, ctx, answer, step=step):
        yield event
    if not ctx.end_invocation and not step.awaits_result:
        async for event in run_llm_flow(agent, ctx):
            yield event


async def _resume_confirmed_calls(
    agent: LlmAgent, ctx: InvocationContext, answer: Event | None = None, *, step: _Step
) -> AsyncIterator[Event]:
    """Run the tool calls a human just confirmed (or report their rejection to the model). A
    confirmed long-running call whose tool gives no result yet leaves ``step`` awaiting it."""
    if answer is None:
        events = ctx.session.events
        answer = events[-1] if events and events[-1].author == "user" else None
        if answer is None:
            return
    calls, confirmations = confirmation_replies(answer, ctx.session.events)
    if not calls:
        return
    tools = {t.name: t for t in await agent.canonical_tools(ReadonlyContext(ctx))}
    response_event = await handle_function_calls(ctx, agent, calls, tools, confirmations)
    long_running = [c.id for c in calls if c.id and c.name in tools and tools[c.name].is_long_running]
    if long_running and awaited_results(long_running, response_event):
        step.awaits_result = True
    if response_event is not None:
        yield response_event
        if response_event.actions.transfer_to_agent:
            target = agent.root_agent.find_agent(response_event.actions.transfer_to_agent)
            if target is not None:
                async for event in target.run_async(ctx):
                    yield event


async def _call_model(
    agent: LlmAgent, ctx: InvocationContext, request: LlmRequest, callback_context: CallbackContext
) -> AsyncIterator[tuple[LlmResponse, CallbackResponse | None]]:
    """The responses for this step, each with a CallbackResponse when a model callback gave it."""
    plugins = ctx.plugin_manager
    response = await plugins.run("before_model_callback", callback_context=callback_context, llm_request=request)
    if response is None and agent.before_model_callback:
        response = await first_result(
            agent.before_model_callback, callback_context=callback_context, llm_request=request
        )
    if response is not None:
        yield response, CallbackResponse(callback="before_model_callback")
        return
    model = agent.canonical_model
    stream = ctx.run_config.streaming_mode == "sse"
    attributes = telemetry.model_span_attributes(model.name, ctx.invocation_id, ctx.session.id)
    with ctx.runtime.span(f"generate_content {model.name}", attributes) as span:
        try:
            async for response in ctx.runtime.generate_content(model, request, stream=stream, ctx=ctx):
                telemetry.set_attributes(span, telemetry.usage_attributes(response.usage_metadata))
                yield await _after_model(agent, ctx, callback_context, response)
        except Exception as error:
            recovered = await plugins.run(
                "on_model_error_callback", callback_context=callback_context, llm_request=request, error=error
            )
            if recovered is None and agent.on_model_error_callback:
                recovered = await first_result(
                    agent.on_model_error_callback, callback_context=callback_context, llm_request=request, error=error
                )
            if recovered is None:
                raise
            yield recovered, None


async def _after_model(
    agent: LlmAgent, ctx: InvocationContext, callback_context: CallbackContext, response: LlmResponse
) -> tuple[LlmResponse, CallbackResponse | None]:
    """The response the after-model callbacks leave, and, when they changed a final one (returned
    another or edited it in place), what the model said: the event keeps it for a replay."""
    plugins = ctx.plugin_manager
    if not agent.after_model_callback and not plugins.has("after_model_callback"):
        return response, None
    # Only final responses are stored; a copy of each streamed chunk would be thrown away.
    said = None if response.partial else response.model_copy(deep=True)
    altered = await plugins.run("after_model_callback", callback_context=callback_context, llm_response=response)
    if altered is None and agent.after_model_callback:
        altered = await first_result(agent.after_model_callback, callback_context=callback_context, llm_response=response)
    final = altered if altered is not None else response
    if said is None or final == said:
        return final, None
    fields = response_event_fields(said)
    del fields["partial"]
    return final, CallbackResponse(callback="after_model_callback", model_response=ModelOutput(**fields))


def _model_event(
    agent: LlmAgent, ctx: InvocationContext, response: LlmResponse, actions: EventActions,
    by_callback: CallbackResponse | None,
) -> Event:  # fmt: skip
    stamp = ctx.runtime.model_event_stamp(response)
    if stamp is None:
        return new_event(ctx, author=agent.name, actions=actions, callback_response=by_callback, **response_event_fields(response))
    event = answer_event(response, event_id=stamp[0], timestamp=stamp[1], invocation_id=ctx.invocation_id,
                         author=agent.name, branch=ctx.branch)
    event.actions, event.callback_response = actions, by_callback
    return event


def answer_event(
    response: LlmResponse, *, event_id: str, timestamp: float, invocation_id: str, author: str, branch: str | None
) -> Event:
    """The event of a model response that nothing changed: no callback, no actions. What a durable
    model call stores itself when the response is the agent's answer (workflows/runtime.py), and
    what the engine then builds for it: the two must be equal."""
    return Event(id=event_id, invocation_id=invocation_id, author=author, branch=branch, timestamp=timestamp,
                 **response_event_fields(response))


def response_of(event: Event) -> LlmResponse:
    """The model response an ``answer_event`` was made of (what a durable model call finds stored
    by an earlier attempt of itself)."""
    return LlmResponse(**{name: getattr(event, name) for name in _RESPONSE_FIELDS})


def response_event_fields(response: LlmResponse) -> dict[str, Any]:
    """The Event fields a model response fills: one shape for the events of this flow and the
    partials the durable model activity streams (activities/streaming.py)."""
    return {
        "content": response.content,
        "partial": response.partial,
        "turn_complete": response.turn_complete,
        "finish_reason": response.finish_reason,
        "error_code": response.error_code,
        "error_message": response.error_message,
        "interrupted": response.interrupted,
        "usage_metadata": response.usage_metadata.model_dump(exclude_none=True) if response.usage_metadata else None,
        "custom_metadata": response.custom_metadata,
        "model_version": response.model_version,
    }


_RESPONSE_FIELDS = (
    "content", "partial", "turn_complete", "finish_reason", "error_code", "error_message", "interrupted",
    "usage_metadata", "custom_metadata", "model_version",
)
"""The fields ``response_event_fields`` fills, named alike on LlmResponse and Event."""


def _save_output(agent: LlmAgent, event: Event) -> None:
    """output_key: keep the agent's final answer in state (validated against output_schema)."""
    if not agent.output_key or not event.is_final_response() or not event.content or event.author != agent.name:
        return
    text = event.text
    if not text:
        return
    if agent.output_schema is None:
        event.actions.state_delta[agent.output_key] = text
        return
    try:
        value = agent.output_schema.model_validate_json(text).model_dump(mode="json")
    except ValueError as e:
        event.error_code = "OUTPUT_SCHEMA_MISMATCH"
        event.error_message = (
            f"agent {agent.name!r} answered text that is not valid {agent.output_schema.__name__} JSON "
            f"({_first_line(e)}); nothing was saved to {agent.output_key!r}"
        )
        return
    event.actions.state_delta[agent.output_key] = value


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


__all__ = ["build_request", "resolve_tools", "run_llm_flow"]
