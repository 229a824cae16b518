"""TurnMerge: a durable turn's partials placed among its committed events, and retried calls reset."""

from __future__ import annotations

from adk_core.types import Content, Event
from adk_temporal.activities.streaming import STREAM_RESET, is_stream_reset
from adkt._stream_follow import Chunk, TurnMerge

_ids = iter(range(1, 10_000))


def _partial(text: str, author: str = "a") -> Event:
    return Event(author=author, content=Content.model(text), partial=True)


def _start(attempt: int, author: str = "a") -> Event:
    return Event(author=author, partial=True, custom_metadata={STREAM_RESET: {"attempt": attempt}})


def _chunk(call: int, attempt: int, after: int, event: Event) -> Chunk:
    kind = "start" if is_stream_reset(event) else "partial"
    return Chunk(next(_ids), call, attempt, after, kind, event)


def _final(text: str, author: str = "a") -> Event:
    return Event(author=author, content=Content.model(text))


def _shown(events: list[Event]) -> list[str]:
    return ["RESET" if is_stream_reset(e) else f"{'~' if e.partial else ''}{e.text}" for e in events]


def test_partials_of_each_call_go_after_the_events_before_it_and_before_its_own_response() -> None:
    merge = TurnMerge()
    # Call 0 streams before anything is committed; call 1 starts after two events (call, tool result).
    merge.add_chunks([_chunk(0, 1, 0, _start(1)), _chunk(0, 1, 0, _partial("Let me ")), _chunk(0, 1, 0, _partial("look"))])
    assert _shown(merge.take()) == ["~Let me ", "~look"]
    merge.add_chunks([_chunk(1, 1, 2, _start(1)), _chunk(1, 1, 2, _partial("It is"))])
    assert merge.take() == [], "call 1's partials wait for the two events before it"
    merge.add_events([_final("Let me look"), Event(author="a", content=Content.user("tool result"))])
    merge.add_chunks([_chunk(1, 1, 2, _partial(" sunny"))])
    assert _shown(merge.take()) == ["Let me look", "tool result", "~It is", "~ sunny"]
    merge.add_events([_final("It is sunny")])
    assert _shown(merge.take()) == ["It is sunny"]


def test_a_new_attempt_after_shown_text_resets_it_once() -> None:
    merge = TurnMerge()
    merge.add_chunks([_chunk(0, 1, 0, _start(1)), _chunk(0, 1, 0, _partial("Hel"))])
    assert _shown(merge.take()) == ["~Hel"]
    merge.add_chunks([_chunk(0, 2, 0, _start(2)), _chunk(0, 2, 0, _partial("Hello")), _chunk(0, 2, 0, _partial("!"))])
    merge.add_events([_final("Hello!")])
    assert _shown(merge.take()) == ["RESET", "~Hello", "~!", "Hello!"]


def test_an_attempt_whose_text_was_never_shown_needs_no_reset() -> None:
    merge = TurnMerge()
    merge.add_chunks([_chunk(0, 1, 0, _start(1)), _chunk(0, 2, 0, _start(2)), _chunk(0, 2, 0, _partial("Hi"))])
    assert _shown(merge.take()) == ["~Hi"]


def test_rows_of_a_stale_attempt_and_after_the_response_are_dropped() -> None:
    merge = TurnMerge()
    merge.add_chunks([_chunk(0, 2, 0, _start(2)), _chunk(0, 2, 0, _partial("new"))])
    merge.add_chunks([_chunk(0, 1, 0, _partial("old"))])  # a worker that lost its attempt still writes
    merge.add_events([_final("new")])
    assert _shown(merge.take()) == ["~new", "new"]
    merge.add_chunks([_chunk(0, 3, 0, _start(3)), _chunk(0, 3, 0, _partial("late"))])
    assert merge.take() == []


def test_parallel_calls_stream_side_by_side_until_each_ones_response() -> None:
    merge = TurnMerge()
    merge.add_chunks([_chunk(0, 1, 0, _partial("a1", "a")), _chunk(1, 1, 0, _partial("b1", "b"))])
    merge.add_events([_final("A", "a")])
    assert _shown(merge.take()) == ["~a1", "~b1", "A"]
    merge.add_chunks([_chunk(1, 1, 0, _partial("b2", "b")), _chunk(0, 1, 0, _partial("a2", "a"))])
    assert _shown(merge.take()) == ["~b2"], "b still streams; a's response closed its call"


def test_rows_of_a_call_first_seen_after_its_response_are_dropped() -> None:
    merge = TurnMerge()
    merge.add_events([_final("A")])
    assert _shown(merge.take()) == ["A"]
    merge.add_chunks([_chunk(0, 1, 0, _partial("stale"))])  # its attempt lost the race and still wrote
    assert merge.take() == []


def _committed(index: int, event: Event) -> Chunk:
    """An ``event`` row: a committed event of the turn, written by its end-of-turn commit."""
    return Chunk(next(_ids), -1, 0, index, "event", event)


def test_the_committed_answer_from_the_stream_is_handed_out_once_before_the_turn_result() -> None:
    merge = TurnMerge()
    merge.add_chunks([_chunk(0, 1, 0, _start(1)), _chunk(0, 1, 0, _partial("Hi"))])
    merge.add_chunks([_committed(0, _final("Hi there"))])
    assert _shown(merge.take()) == ["~Hi", "Hi there"]
    assert merge.received == 1, "the next query starts after it"
    merge.add_events([_final("Hi there")], first=0)  # the turn's result brings it again
    assert merge.take() == []


def test_a_committed_event_read_before_the_ones_before_it_waits_for_them() -> None:
    merge = TurnMerge()
    tool_call, tool_result = _final("calling a tool"), Event(author="a", content=Content.user("tool result"))
    merge.add_chunks([_committed(2, _final("It is sunny"))])  # the end-of-turn commit; 0 and 1 rode along earlier
    assert merge.take() == [] and merge.received == 0
    merge.add_events([tool_call], first=0)
    assert _shown(merge.take()) == ["calling a tool"]
    merge.add_events([tool_call, tool_result], first=0)  # a query that overlaps what it has
    assert _shown(merge.take()) == ["tool result", "It is sunny"]
    assert merge.received == 3


def test_a_committed_event_closes_its_calls_partials_as_a_queried_one_does() -> None:
    merge = TurnMerge()
    merge.add_chunks([_chunk(0, 1, 0, _partial("He")), _committed(0, _final("Hello"))])
    assert _shown(merge.take()) == ["~He", "Hello"]
    merge.add_chunks([_chunk(0, 2, 0, _start(2)), _chunk(0, 2, 0, _partial("late"))])  # a lost attempt's rows
    assert merge.take() == []


def test_events_a_bounded_result_left_out_are_skipped_not_waited_for() -> None:
    merge = TurnMerge()
    merge.add_events([_final("call 0"), _final("call 1")], first=0)  # what the queries brought
    assert _shown(merge.take()) == ["call 0", "call 1"]
    merge.add_chunks([_committed(9, _final("answer"))])
    assert merge.take() == [], "the stream's answer waits for events 2-8"
    # The turn's result holds its newest events only (7 to 9); 2-6 are in the session store.
    merge.add_events([_final("call 7"), _final("call 8"), _final("answer")], first=7)
    assert _shown(merge.take()) == ["call 7", "call 8", "answer"]
    assert merge.received == 10
