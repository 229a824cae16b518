"""A turn's result carries its newest events within a byte budget, and always its last one."""

from __future__ import annotations

from pydantic_core import to_json

from adk_core.types import Content, Event
from adk_temporal.workflows._invocation import bounded_tail
from adk_temporal.workflows.contracts import TurnResult


def _event(i: int, size: int = 100) -> Event:
    return Event(id=f"e{i}", author="a", invocation_id="i", timestamp=1.0, content=Content.user("x" * size))


def test_small_turns_keep_every_event() -> None:
    events = [_event(i) for i in range(8)]
    assert bounded_tail(events) == (events, 0)


def test_a_long_turn_keeps_its_newest_events_within_the_budget() -> None:
    events = [_event(i) for i in range(3000)]
    kept, omitted = bounded_tail(events, budget=50_000)
    assert kept == events[omitted:] and omitted + len(kept) == 3000
    assert sum(len(to_json(e, exclude_none=True)) for e in kept) <= 50_000
    assert sum(len(to_json(e, exclude_none=True)) for e in events[omitted - 1:]) > 50_000, "as many as fit"


def test_the_last_event_is_kept_however_large() -> None:
    events = [_event(0), _event(1, size=10_000)]
    assert bounded_tail(events, budget=1_000) == ([events[1]], 1)


def test_a_results_events_after_an_index_say_where_they_start() -> None:
    events = [Event(id=f"e{i}", author="a", invocation_id="i") for i in range(6, 10)]
    result = TurnResult(events=events, events_omitted=6)  # a turn of 10 events, the newest 4 kept
    slices = [result.events_after(after) for after in (0, 8, 10)]
    assert [([e.id for e in got], first) for got, first in slices] == [
        (["e6", "e7", "e8", "e9"], 6), (["e8", "e9"], 8), ([], 10),
    ], "from 0: the result starts at 6 (0-5 were left out); from 8: where the client is"


def test_a_result_within_budget_is_encoded_once_and_the_converter_sends_those_bytes(monkeypatch) -> None:
    from adk_temporal.workflows import _invocation
    from adk_temporal.workflows.converter import AdkPayloadConverter

    def make(kept: list[Event], left_out: int) -> TurnResult:
        return TurnResult(invocation_id="i", events=kept, final_text="done", message_id="m", events_omitted=left_out)

    events = [_event(i) for i in range(8)]
    result, data = _invocation.result_within_budget(make, events)
    assert result == make(events, 0) and data == to_json(result, exclude_none=True)
    encodes: list[object] = []
    from adk_temporal.workflows import converter

    def counting(value, **kw):
        encodes.append(value)
        return to_json(value, **kw)

    monkeypatch.setattr(converter, "to_json", counting)
    converter_ = AdkPayloadConverter()
    assert converter_.to_payloads([result])[0].data == data and encodes == [], "sent as measured, not encoded again"
    equal_copy = result.model_copy()
    assert converter_.to_payloads([equal_copy])[0].data == data and encodes == [equal_copy], "another object: encoded"

    monkeypatch.setattr(_invocation, "RESULT_EVENT_BYTES", 2_000)  # a long turn: its newest events that fit
    big, big_data = _invocation.result_within_budget(make, [_event(i) for i in range(40)])
    assert big.events_omitted > 0 and [e.id for e in big.events] == [f"e{i}" for i in range(big.events_omitted, 40)]
    assert big_data == to_json(big, exclude_none=True) and len(to_json(big.events, exclude_none=True)) <= 2_000
