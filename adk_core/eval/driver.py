"""drive_case: the simulation loop of one trial, engine-neutral.

    first message (or the loop user agent opens)
    -> system turn -> state_matches? done
                   -> pending tool yields?  each answered by user_agents.tools[name], concurrently;
                                            their results are the next message
                   -> else loop user agent? its answer is the next message (END_CONVERSATION: done)
                   -> else done
    -> before every further system turn: max_turns, max_duration -> terminated
    -> metrics on the final trace (also when terminated)

It reaches the world only through its CaseHost (models, tools, sessions) and the host's runtime
(clock and ids), so in-process (LocalCaseHost) and inside a Temporal workflow (a durable host with
the Temporal runtime) it is the same function. Concurrency is asyncio.gather, which a workflow
runs deterministically.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from ..agents.base import BaseAgent
from ..errors import EvalUserAgentError, RemoteError
from ..flow.functions import unanswered_long_running_calls
from ..sessions import Session
from ..types import Content, Event, FunctionCall, Part
from .bridge import YieldInfo
from .case import EvalCase
from .host import CaseHost
from .metrics.base import MetricContext, evaluate_metrics
from .results import (
    EvalError,
    EvalResult,
    SessionRef,
    Status,
    TerminationReason,
    TokenUsage,
    metric_error,
    status_of,
)
from .scopes import ScopedView
from .state_change import changes_in, merge_changes, state_delta_for, unwrap
from .streaming import Watchers
from .termination import matches
from .trace import Trace
from .user_agents import ends_conversation, user_agent_output

OPENING_PROMPT = "(The conversation has not started yet. Send your first message.)"
SILENT_PROMPT = "(The agent said nothing.)"


class _Stop(Exception):
    """The conversation ended (a loop user agent said END_CONVERSATION)."""


class _Failed(Exception):
    def __init__(self, phase: str, error: BaseException, prefix: str = "") -> None:
        super().__init__(str(error))
        self.error = EvalError(phase=phase, message=prefix + str(error), error_type=error_type_of(error))


def error_type_of(error: BaseException) -> str:
    """The error's own type name, also when it crossed a process boundary: a RemoteError's
    ``error_type``, or the ``type`` a Temporal ApplicationError carries (a durable host may raise one)."""
    if isinstance(error, RemoteError):
        return error.error_type
    carried = getattr(error, "type", None)
    return carried if isinstance(carried, str) and carried else type(error).__name__


async def drive_case(case: EvalCase, host: CaseHost, *, trial: int = 0) -> EvalResult:
    """Run one trial of ``case`` through ``host`` and score it.

    Never raises for what the case does: a failing system, user agent or metric becomes an
    ``error`` result saying which phase failed (the system's EvalToolError, a missing user agent's
    EvalUserAgentError, a model error ...).
    """
    runtime = host.runtime
    started = runtime.now()
    limits = case.terminate_when
    max_seconds = limits.max_duration_seconds
    turns = 0
    status: Status | None = None
    reason: TerminationReason | None = None
    error: EvalError | None = None
    # Streaming metrics see each system event as the host's runner yields it (adk_core.eval.streaming).
    watchers = Watchers(case.streaming_metrics, runtime.now)
    try:
        try:
            await host.start(initial_state=case.initial_state_flat())
        except Exception as e:  # noqa: BLE001  (becomes the result)
            raise _Failed("system", e) from e
        message = case.first_content()
        delta: dict[str, Any] | None = None
        if message is None:
            message, delta = await _answer_loop(case, host, await host.main_session(), opening=True)
        while True:
            if limits.max_turns is not None and turns >= limits.max_turns:
                status, reason = "terminated", "max_turns"
                break
            if max_seconds is not None and runtime.now() - started >= max_seconds:
                status, reason = "terminated", "max_duration"
                break
            try:
                watchers.turn_start()
                await host.run_system(message, delta, on_event=watchers.see)
            except Exception as e:  # noqa: BLE001
                raise _Failed("system", e) from e
            turns += 1
            main = await host.main_session()
            if limits.state_matches is not None and matches(limits.state_matches, ScopedView(main.state)):
                reason = "state_matches"  # the goal state: metrics decide passed or failed
                break
            pending = unanswered_long_running_calls(main.events)
            if pending:
                message, delta = await _answer_tool_yields(case, host, main, [(e, c) for _, e, c in pending])
            elif case.user_agents.loop is not None:
                message, delta = await _answer_loop(case, host, main)
            else:
                break  # the system's turn ended and nobody plays the user: done
    except _Stop:
        pass
    except _Failed as failed:
        error = failed.error

    try:
        final: Session | None = await host.main_session()
    except Exception:  # noqa: BLE001  (only when start() itself failed: the error says why)
        if error is None:
            raise
        final = None
    trace = Trace.from_session(final) if final is not None else Trace(events=[])
    metrics: dict[str, Any] = {}
    if error is None:
        metrics, metric_errors = await evaluate_metrics(case.metrics, trace, MetricContext(run_judge=host.run_judge))
        if metric_errors:
            error = metric_error(metric_errors)
    if error is not None:
        status = "error"
    elif status is None:
        status = status_of(metrics)
    return EvalResult(
        name=case.name,
        status=status,
        metrics=metrics,
        events=list(trace.events),
        duration_ms=(runtime.now() - started) * 1000.0,
        turns=turns,
        token_usage=token_usage(trace.events),
        error=error,
        termination_reason=reason,
        trial=trial,
        session=SessionRef(app_name=final.app_name, user_id=final.user_id, session_id=final.id) if final else None,
        measurements=watchers.values(),
    )


# --- user agents ----------------------------------------------------------------------------------
async def _answer_loop(
    case: EvalCase, host: CaseHost, main: Session, *, opening: bool = False
) -> tuple[Content, dict[str, Any]]:
    agent = case.user_agents.loop
    assert agent is not None  # EvalCase requires first_message or a loop agent
    info = YieldInfo(type="loop", invocation_id=_last_invocation(main.events), awaiting_input=True)
    answer, changes = await _ask(case, host, agent, main, info, opening=opening)
    if ends_conversation(answer):
        raise _Stop
    if isinstance(answer, Content):
        content = answer
    else:
        content = Content.user(answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False))
    return content, state_delta_for(main.state, merge_changes(changes))


async def _answer_tool_yields(
    case: EvalCase, host: CaseHost, main: Session, pending: list[tuple[Event, FunctionCall]]
) -> tuple[Content, dict[str, Any]]:
    jobs = []
    for event, call in pending:
        agent = case.user_agents.tools.get(call.name)
        if agent is None:
            raise _Failed("user_agent", EvalUserAgentError(missing_user_agent_message(call.name, call.args)))
        info = YieldInfo(type="tool", invocation_id=event.invocation_id, tool_name=call.name, call_id=call.id,
                         args=dict(call.args))
        jobs.append((agent, info))
    # Concurrently, as the seed spawns them; every job finishes before the first failure is reported.
    outcomes = await asyncio.gather(*(_ask(case, host, a, main, i) for a, i in jobs), return_exceptions=True)
    parts: list[Part] = []
    changes: list[Mapping[str, Mapping[str, Any]]] = []
    for (_, info), outcome in zip(jobs, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            raise outcome
        answer, answer_changes = outcome
        response = answer if isinstance(answer, dict) else {"result": answer}
        parts.append(Part.from_function_response(info.tool_name or "", response, id=info.call_id))
        changes.extend(answer_changes)
    return Content(role="user", parts=parts), state_delta_for(main.state, merge_changes(changes))


async def _ask(
    case: EvalCase, host: CaseHost, agent: BaseAgent, main: Session, info: YieldInfo, *, opening: bool = False
) -> tuple[Any, list[Mapping[str, Mapping[str, Any]]]]:
    """One user agent's answer (after the bridge) and the state changes it carries."""
    what = "the conversation" if info.type == "loop" else f"tool yield {info.tool_name!r}"
    try:
        prompt = await case.bridge.prompt(main, info)
        if not prompt.strip():
            prompt = OPENING_PROMPT if opening else SILENT_PROMPT
        events = await host.run_user_agent(agent, Content.user(prompt))
        output, output_changes = unwrap(user_agent_output(agent, events))
        changes: list[Mapping[str, Mapping[str, Any]]] = [*changes_in(events), *([output_changes] if output_changes else [])]
        if info.type == "loop" and ends_conversation(output):
            return output, changes
        answer, answer_changes = unwrap(await case.bridge.response(output, await host.user_session(), info))
    except Exception as e:  # noqa: BLE001
        raise _Failed("user_agent", e, prefix=f"user agent {agent.name!r} failed on {what}: ") from e
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        raise _Failed("user_agent", EvalUserAgentError(
            f"user agent {agent.name!r} gave no answer to {what}. Check its model and instruction; a loop user agent "
            "ends the conversation by answering END_CONVERSATION ('</finished>')"
        ))
    return answer, [*changes, *([answer_changes] if answer_changes else [])]


def missing_user_agent_message(tool_name: str, args: Mapping[str, Any]) -> str:
    """The seed's text for a tool yield without a user agent, in Python."""
    return (
        f"Tool '{tool_name}' yielded but no user agent was provided.\n\n"
        "Add a tool yield agent:\n"
        "  user_agents=UserAgents(\n"
        "      tools={\n"
        f'          "{tool_name}": LlmAgent(...),\n'
        "      },\n"
        "  )\n\n"
        "Yield occurred with args:\n"
        f"  {json.dumps(dict(args), ensure_ascii=False, sort_keys=True, default=repr)}"
    )


def _last_invocation(events: list[Event]) -> str:
    return events[-1].invocation_id if events else ""


def token_usage(events: list[Event] | Any) -> TokenUsage | None:
    """Input/output tokens the system's model calls reported (None when none did)."""
    usage = [e.usage_metadata for e in events if e.usage_metadata]
    if not usage:
        return None
    return TokenUsage(
        input=sum(int(u.get("prompt_token_count") or 0) for u in usage),
        output=sum(int(u.get("candidates_token_count") or 0) for u in usage),
    )
