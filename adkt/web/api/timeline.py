"""A conversation's turns drawn as timelines, from its stored events (and, where Temporal still
has them, its workflow history: timeline_history.py).

Each turn (one invocation) becomes bars: one per agent, and under it its model calls, tool calls
and waits for a person. Stored events carry what each bar needs:

- a model call ends when its event was made (the workflow's time when the activity's result
  arrived) and starts when the event before it was made (what it answered: the user's message or
  a tool's result); its tokens and cost are the event's ``usage_metadata`` and ``adk_cost_usd``;
- a tool call runs from the event that called it (or the person's answer that let it run) to
  the event with its result;
- a wait for a person runs from the question (a confirmation request, a long-running tool's
  pending result) to the person's answer, or to now while it is open.

The history then sharpens model and tool bars to their activities' own times and adds what
events do not hold: retried attempts and continue-as-new.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

from adk_core.models.pricing import turn_usage
from adk_core.types import Event
from adk_core.types.event import REQUEST_CONFIRMATION_FUNCTION

SpanKind = Literal["agent", "model", "tool", "wait", "retry", "continue_as_new", "error"]


class TimelineSpan(BaseModel):
    """One bar. Times are seconds since the epoch; ``depth`` nests bars under their agent."""

    id: str
    kind: SpanKind
    name: str
    agent: str
    depth: int
    start: float
    end: float
    open: bool = Field(False, description="still running or waiting (its end is the time of the request)")
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    attempts: int | None = Field(None, description="the activity's attempts, from the workflow history")
    error: str | None = None
    request: Any = Field(None, description="what the call was given (a model call: the newest input it answered)")
    response: Any = Field(None, description="what it returned")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def duration_ms(self) -> float:
        return round((self.end - self.start) * 1000.0, 1)


class TimelineTurn(BaseModel):
    invocation_id: str
    message: str = Field(description="what started the turn: the user's words, or the answer a person gave")
    start: float
    end: float
    status: Literal["done", "failed", "waiting"]
    model_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    trace_id: str | None = Field(None, description="the turn's OpenTelemetry trace, when its caller traced it")
    spans: list[TimelineSpan]


class TimelineTotals(BaseModel):
    turns: int
    model_calls: int
    tool_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None


class SessionTimeline(BaseModel):
    """GET .../sessions/{session}/timeline: every turn of the conversation, oldest first."""

    workflow_id: str
    workflow_url: str | None
    history: bool = Field(description="whether Temporal's history of the conversation was read (retries, continue-as-new)")
    totals: TimelineTotals
    turns: list[TimelineTurn]


def build_turns(events: Sequence[Event], now: float) -> list[TimelineTurn]:
    """The turns of ``events`` (a session's stored events, in order), each with its bars."""
    groups: dict[str, list[Event]] = {}
    turn_of: dict[str, str] = {}  # invocation id -> the turn it belongs to
    asked: dict[str, str] = {}  # call id a person answers -> the turn that asked
    for event in events:
        if event.partial:
            continue
        invocation = event.invocation_id or ""
        if invocation not in turn_of:
            # A person's answer runs as an invocation of its own; drawn in the turn that asked, the
            # wait sits between the question and what the answer let happen.
            answers = [asked[r.id] for r in event.function_responses() if r.id in asked] if event.author == "user" else []
            turn_of[invocation] = answers[0] if answers else invocation
        turn = turn_of[invocation]
        groups.setdefault(turn, []).append(event)
        for call in event.function_calls():
            if call.id and (call.name == REQUEST_CONFIRMATION_FUNCTION or call.id in (event.long_running_tool_ids or [])):
                asked[call.id] = turn
    return [_turn(invocation_id, group, now) for invocation_id, group in groups.items()]


def totals(turns: Sequence[TimelineTurn]) -> TimelineTotals:
    costs = [t.cost_usd for t in turns if t.cost_usd is not None]
    return TimelineTotals(
        turns=len(turns), model_calls=sum(t.model_calls for t in turns),
        tool_calls=sum(1 for t in turns for s in t.spans if s.kind == "tool"),
        input_tokens=sum(t.input_tokens for t in turns), output_tokens=sum(t.output_tokens for t in turns),
        cost_usd=sum(costs) if costs else None,
    )  # fmt: skip


def _turn(invocation_id: str, events: list[Event], now: float) -> TimelineTurn:
    spans: list[TimelineSpan] = []
    calls: dict[str, tuple[Event, Any]] = {}  # function call id -> (its event, the call)
    waits: dict[str, TimelineSpan] = {}  # call id a person answers -> its open wait
    questions: list[TimelineSpan] = []  # every wait, answered or not
    last_person = events[0].timestamp
    for i, event in enumerate(events):
        before = events[i - 1].timestamp if i else event.timestamp
        depth = 1 + (event.branch.count(".") if event.branch else 0)
        if event.author == "user":
            last_person = event.timestamp
            for response in event.function_responses():
                wait = waits.pop(response.id or "", None)
                if wait is not None:
                    wait.end, wait.open, wait.response = event.timestamp, False, response.response
        elif event.content is not None and event.content.role == "model" and not _asks_a_person(event):
            spans.append(_model_span(event, events[i - 1] if i else None, depth))
        for call in event.function_calls():
            calls[call.id or ""] = (event, call)
            if call.name == REQUEST_CONFIRMATION_FUNCTION:
                original = (call.args or {}).get("originalFunctionCall") or {}
                waits[call.id or ""] = _wait(event, f"confirm {original.get('name', 'a tool')}", call.args, depth)
                questions.append(waits[call.id or ""])
        if event.author != "user":
            for response in event.function_responses():
                called_at, asked = calls.get(response.id or "") or (None, None)
                start = max(called_at.timestamp if called_at else before, last_person)
                spans.append(TimelineSpan(
                    id=f"{event.id}/{response.id}", kind="tool", name=response.name, agent=event.author, depth=depth,
                    start=min(start, event.timestamp), end=event.timestamp, request=asked.args if asked else None,
                    response=response.response,
                ))  # fmt: skip
                if _still_running(called_at, response.id):
                    waits[response.id or ""] = _wait(event, f"{response.name} (long-running)", response.response, depth)
                    questions.append(waits[response.id or ""])
        if event.error_code or event.error_message:
            spans.append(TimelineSpan(id=f"{event.id}/error", kind="error", name=event.error_code or "error",
                                      agent=event.author, depth=depth, start=event.timestamp, end=event.timestamp,
                                      error=event.error_message))  # fmt: skip
    for wait in waits.values():  # unanswered: drawn up to now
        wait.end = max(now, wait.start)
    spans.extend(questions)
    usage = turn_usage(events)
    failed = any(s.kind == "error" for s in spans)
    end = max([events[-1].timestamp, *(s.end for s in spans)])
    return TimelineTurn(
        invocation_id=invocation_id, message=_message(events[0]), start=events[0].timestamp, end=end,
        status="failed" if failed else "waiting" if waits else "done", model_calls=usage.model_calls,
        input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, cost_usd=usage.cost_usd,
        spans=_with_agents(spans),
    )  # fmt: skip


def _model_span(event: Event, answered: Event | None, depth: int) -> TimelineSpan:
    """``answered``: the event before, what the call answered (the rest of its request is the
    conversation before it, sent by reference)."""
    usage = turn_usage([event])
    asked = answered.content.model_dump(exclude_none=True) if answered and answered.content else None
    return TimelineSpan(
        id=event.id, kind="model", name=_model_name(event), agent=event.author, depth=depth,
        start=answered.timestamp if answered else event.timestamp, end=event.timestamp, request=asked,
        input_tokens=usage.input_tokens if event.usage_metadata else None,
        output_tokens=usage.output_tokens if event.usage_metadata else None, cost_usd=usage.cost_usd,
        response=event.content.model_dump(exclude_none=True) if event.content else None,
    )  # fmt: skip


def _asks_a_person(event: Event) -> bool:
    """A confirmation request: the framework's question, made with no model call."""
    calls = event.function_calls()
    return bool(calls) and all(c.name == REQUEST_CONFIRMATION_FUNCTION for c in calls)


def _model_name(event: Event) -> str:
    calls = [c.name for c in event.function_calls() if c.name != REQUEST_CONFIRMATION_FUNCTION]
    return "model → " + ", ".join(calls) if calls else "model → answer"


def _wait(event: Event, name: str, request: Any, depth: int) -> TimelineSpan:
    """A question to a person, under the agent that asked it."""
    return TimelineSpan(id=f"{event.id}/wait/{name}", kind="wait", name=name, agent=event.author, depth=depth,
                        start=event.timestamp, end=event.timestamp, open=True, request=request)  # fmt: skip


def _still_running(called_at: Event | None, call_id: str | None) -> bool:
    return called_at is not None and call_id in (called_at.long_running_tool_ids or [])


def _message(first: Event) -> str:
    if first.author == "user" and first.content is not None:
        if first.content.text:
            return first.content.text
        answers = [r.name for r in first.content.function_responses()]
        if answers:
            return "answer: " + ", ".join("confirmation" if n == REQUEST_CONFIRMATION_FUNCTION else n for n in answers)
    return f"({first.author})"


def _with_agents(spans: list[TimelineSpan]) -> list[TimelineSpan]:
    """An agent bar over each run of its calls and questions, those under it, in time order. A
    transfer ends one agent's run and starts the next one's."""
    out: list[TimelineSpan] = []
    current: TimelineSpan | None = None
    for span in sorted(spans, key=lambda s: (s.start, s.end)):
        if current is None or span.agent != current.agent or span.depth - 1 != current.depth:
            current = TimelineSpan(id=f"agent/{len(out)}/{span.agent}", kind="agent", name=span.agent,
                                   agent=span.agent, depth=span.depth - 1, start=span.start, end=span.end)  # fmt: skip
            out.append(current)
        current.end = max(current.end, span.end)
        out.append(span)
    return out
