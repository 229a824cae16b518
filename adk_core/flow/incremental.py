"""What an invocation's flow derives from its session's events, derived once per event.

Every model call of an invocation is given the contents of all the session's loaded events, and
every model response's function calls get ids unique among the invocation's events
(``ensure_call_ids``). Derived anew at each step, both cost a step in proportion to the events so
far: a turn of n tool calls cost n² (a 300-call turn's last workflow tasks took three times its
first ones). During an invocation events are only appended, so ``InvocationMemo`` keeps what it
derived from a prefix of the session's event list and, at the next step, derives only what was
appended since. Another list, a list trimmed under it (seen by the list's identity and the first and
last events kept), a compaction among the new events (it may cover older ones), or a new event
answering a long-running call among the older ones (the answer goes back to the call:
adk_core.flow.contents.pair_answers) is derived from scratch, as before; the events already kept are not looked at again, so nothing may replace or edit
them in place (nothing does: the workflow trims its list only between turns). A short list (most
turns) is derived afresh every time: keeping it would cost more than it saves.

The memo hands out the same contents the full build would (the same objects where the build
returns an event's own content), in a new list each time: callers add to and edit their list.
Events are not edited once in the session; a content the flow built (a filtered or retold one) is
kept and handed out again by later steps.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from ..types import Content, Event
from .contents import build_contents, extended_contents, long_running_calls

D = TypeVar("D", list[Content], set[str])

SHORT = 16
"""Up to this many events are derived afresh at each step (W1's turns hold at most 8)."""


class _Kept(Generic[D]):
    """What was derived from ``events[start:count]`` of one list, which is recognised again by
    identity: the list itself and the first and last of those events."""

    __slots__ = ("events", "start", "count", "first", "last", "derived", "long_running")
    derived: D

    def __init__(self, events: list[Event], start: int, derived: D, long_running: frozenset[str] = frozenset()) -> None:
        self.events = events
        self.start = start
        self.derived = derived
        self.long_running = long_running
        """The long-running calls among the events derived (contents only): a new event answering
        one is derived from scratch with them."""
        self.first = events[start] if start < len(events) else None
        self.moved_to(events)

    def moved_to(self, events: list[Event]) -> None:
        """Now derived through the end of ``events`` (the same list, appended to)."""
        self.count = len(events)
        self.last = events[-1] if events else None

    def grown_into(self, events: list[Event], start: int) -> bool:
        """Whether ``events[start:]`` begins with what was derived (the same list, only appended to)."""
        if self.events is not events or self.start != start or len(events) < self.count:
            return False
        if self.count <= start:
            return True
        return events[start] is self.first and events[self.count - 1] is self.last


class InvocationMemo:
    """One per invocation (``InvocationContext``), shared by its agents and branches."""

    __slots__ = ("_contents", "_call_ids", "_call_ids_of")

    def __init__(self) -> None:
        self._contents: dict[tuple[str, str | None], _Kept[list[Content]]] = {}
        self._call_ids: _Kept[set[str]] | None = None
        self._call_ids_of = ""

    def contents(self, events: list[Event], start: int, agent_name: str, branch: str | None) -> list[Content]:
        """``build_contents(events[start:], agent_name, branch)``, a new list each call."""
        if len(events) - start <= SHORT:
            return build_contents(events[start:], agent_name, branch)
        key = (agent_name, branch)
        kept = self._contents.get(key)
        if kept is not None and kept.grown_into(events, start):
            new = events[max(kept.count, start):]
            # A compaction decides what the events before it show: all are built again with it.
            if not any(event.actions.compaction is not None for event in new):
                calls = extended_contents(kept.derived, kept.long_running, new, agent_name, branch)
                if calls is not None:
                    kept.long_running = calls
                    kept.moved_to(events)
                    return list(kept.derived)
        built = build_contents(events[start:], agent_name, branch)
        self._contents[key] = _Kept(events, start, built, long_running_calls(events[start:], agent_name))
        return list(built)

    def call_ids(self, events: list[Event], invocation_id: str) -> set[str]:
        """The ids of the function calls in the newest of ``events`` that ``invocation_id`` made (up
        to the newest event of another invocation). The caller must not change the set."""
        kept = self._call_ids
        if kept is not None and self._call_ids_of == invocation_id and kept.grown_into(events, 0):
            seen = kept.derived
            for event in events[kept.count:]:
                if event.invocation_id != invocation_id:
                    seen = set()  # an invocation's events are the newest ones: the older ones are another's
                    continue
                seen.update(call.id for call in event.function_calls() if call.id)
            kept.derived = seen
            kept.moved_to(events)
            return seen
        seen = set()
        for event in reversed(events):
            if event.invocation_id != invocation_id:
                break
            seen.update(call.id for call in event.function_calls() if call.id)
        if len(events) > SHORT:
            self._call_ids, self._call_ids_of = _Kept(events, 0, seen), invocation_id
        return seen


__all__ = ["InvocationMemo"]
