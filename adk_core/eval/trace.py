"""Trace: what metrics read. The final events of a main session and its state, nothing else.

Metrics never see the running system, only this record, so the same metric scores a simulated
run, a production session loaded from Postgres (``Trace.from_session(session)``), or a log of
events on its own (``Trace.from_events(events)``, state rebuilt from the events' deltas).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidInputError
from ..sessions import Session
from ..state import TEMP_PREFIX
from ..types import REQUEST_CONFIRMATION_FUNCTION, Event, FunctionCall, FunctionResponse
from .scopes import ScopedView

MIN_TRANSCRIPT_CHARS = 200


@dataclass(frozen=True)
class Trace:
    """Events in order, and the state they left (all scopes, flat ADK keys)."""

    events: Sequence[Event]
    state: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_session(cls, session: Session) -> Trace:
        return cls(events=list(session.events), state=dict(session.state))

    @classmethod
    def from_events(cls, events: Sequence[Event], initial_state: Mapping[str, Any] | None = None) -> Trace:
        """State rebuilt by applying every event's delta in order (what a session store does)."""
        state = dict(initial_state or {})
        for event in events:
            for key, value in event.actions.state_delta.items():
                if not key.startswith(TEMP_PREFIX):
                    state[key] = value
        return cls(events=list(events), state=state)

    @property
    def scoped(self) -> ScopedView:
        """``{scope: {key: value}}``: ``trace.scoped["patient"]["age"]``."""
        return ScopedView(self.state)

    def tool_calls(self, *, ignore: Sequence[str] = (REQUEST_CONFIRMATION_FUNCTION,)) -> list[FunctionCall]:
        """Every function call the system made, in order."""
        return [c for e in self.events if e.author != "user" for c in e.function_calls() if c.name not in ignore]

    def tool_results(self) -> list[FunctionResponse]:
        """Every tool result, in order (the system's own and those a user answered with)."""
        return [r for e in self.events for r in e.function_responses()]

    def turns(self) -> list[list[Event]]:
        """The events grouped by invocation (one group per system turn), in order."""
        groups: list[list[Event]] = []
        current: str | None = None
        for event in self.events:
            if not groups or event.invocation_id != current:
                groups.append([])
                current = event.invocation_id
            groups[-1].append(event)
        return groups

    def final_response(self, events: Sequence[Event] | None = None) -> str:
        """The last final text the system gave (in ``events``, default the whole trace)."""
        for event in reversed(list(self.events if events is None else events)):
            if event.author != "user" and not event.partial and event.text and event.is_final_response():
                return event.text
        return ""

    def transcript(self, *, max_chars: int = 20_000) -> str:
        """A readable rendering for judges and reports: who said or called what, in order.

        Over ``max_chars`` it keeps whole lines from the start and the end, and says in one line
        between them how many lines and characters were cut.
        """
        if max_chars < MIN_TRANSCRIPT_CHARS:
            raise InvalidInputError(
                f"transcript(max_chars={max_chars}): give at least {MIN_TRANSCRIPT_CHARS}, room for the line saying what was cut"
            )
        lines: list[str] = []
        for event in self.events:
            for part in event.content.parts if event.content else []:
                if part.text and not part.thought:
                    lines.append(f"[{event.author}] {part.text}")
                elif part.function_call is not None:
                    call = part.function_call
                    lines.append(f"[{event.author}] calls {call.name}({_short(call.args)})")
                elif part.function_response is not None:
                    response = part.function_response
                    lines.append(f"[{response.name} result] {_short(response.response)}")
        return _fit(lines, max_chars)


def _fit(lines: list[str], max_chars: int) -> str:
    """``lines`` joined, or, over ``max_chars``, whole lines from the start (a quarter of the room: the
    request) and from the end (the rest: the outcome) around one line saying how much was cut."""
    text = "\n".join(lines)
    if len(text) <= max_chars:
        return text
    # Room for the marker line, sized for the largest counts it can hold.
    room = max_chars - len(_cut_marker(len(lines), len(text))) - 2
    head: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > room // 4:
            break
        head.append(line)
        used += len(line) + 1
    tail: list[str] = []
    for line in reversed(lines[len(head):]):
        if used + len(line) + 1 > room:
            break
        tail.append(line)
        used += len(line) + 1
    tail.reverse()
    cut = lines[len(head) : len(lines) - len(tail)]
    marker = _cut_marker(len(cut), sum(len(line) for line in cut))
    return "\n".join([*head, marker, *tail])


def _cut_marker(lines: int, chars: int) -> str:
    return f"[... {lines} lines ({chars:,} characters) cut here to fit the transcript limit ...]"


def _short(value: Any, limit: int = 500) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= limit else text[:limit] + "..."
