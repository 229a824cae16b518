"""A conversation's run keeps its finished turns as JSON, the newest few also as objects: the same
answers as before, bounded in number, and out of the cyclic garbage collector's way."""

from __future__ import annotations

import gc

from pydantic_core import to_json

from adk_core.types import Content, Event, Part
from adk_temporal.workflows._outcomes import FRESH_OUTCOMES, KeptOutcomes
from adk_temporal.workflows.contracts import TurnOutcome, TurnResult


def _turn(n: int) -> TurnOutcome:
    """A W1-like turn: a user message, three calls and their results, the answer."""
    events = [Event(id=f"{n}-u", author="user", invocation_id=f"i{n}", content=Content.user("add 1 and 2"))]
    for k in range(3):
        events.append(Event(id=f"{n}-c{k}", author="assistant", invocation_id=f"i{n}", content=Content(
            role="model", parts=[Part.from_function_call("add", {"a": 1, "b": k}, id=f"call-{n}-{k}")])))
        events.append(Event(id=f"{n}-r{k}", author="assistant", invocation_id=f"i{n}", content=Content(
            role="user", parts=[Part.from_function_response("add", {"sum": 1 + k}, id=f"call-{n}-{k}")])))
    events.append(Event(id=f"{n}-a", author="assistant", invocation_id=f"i{n}", content=Content(
        role="model", parts=[Part(text="done")])))
    return TurnOutcome(message_id=f"m{n}", result=TurnResult(invocation_id=f"i{n}", events=events,
                                                             final_text="done", message_id=f"m{n}"))


def test_an_older_turn_reads_back_equal_to_what_was_kept() -> None:
    kept = KeptOutcomes(keep=10)
    failed = TurnOutcome(message_id="bad", error_type="ModelError", error_message="429",
                         failed_events=_turn(0).result.events[:2], failed_events_omitted=3)  # type: ignore[union-attr]
    turns = [_turn(1), failed, *(_turn(n) for n in range(2, 2 + FRESH_OUTCOMES))]
    for outcome in turns:
        kept.add(outcome)
    assert kept.get("m1") == turns[0] and kept.get("m1") is not turns[0], "read back from its JSON"
    assert kept.get("bad") == failed
    assert kept.get(f"m{1 + FRESH_OUTCOMES}") is turns[-1], "the newest are answered as they were kept"
    assert kept.get("never") is None and "never" not in kept and "m1" in kept


def test_only_the_newest_turns_are_kept_and_a_repeated_id_keeps_its_place() -> None:
    kept = KeptOutcomes(keep=3)
    for n in range(3):
        kept.add(_turn(n))
    kept.add(_turn(0))  # the same message again (a cancelled turn is kept twice)
    kept.add(_turn(3))
    assert [m in kept for m in ("m0", "m1", "m2", "m3")] == [False, True, True, True], "m0 was still the oldest"
    assert kept.get("m0") is None


def test_the_newest_turns_handed_on_fit_their_byte_budget() -> None:
    kept = KeptOutcomes(keep=10)
    turns = [_turn(n) for n in range(6)]
    for outcome in turns:
        kept.add(outcome)
    size = len(to_json(turns[0], exclude_none=True))
    assert kept.newest(4, budget=10 * size) == turns[2:], "the newest 4, oldest first"
    assert kept.newest(4, budget=2 * size + 10) == turns[4:], "as many of the newest as fit"
    assert kept.newest(0, budget=10 * size) == []


def test_a_runs_kept_turns_hold_few_objects_for_the_collector() -> None:
    kept = KeptOutcomes(keep=200)
    for n in range(100):
        kept.add(_turn(n))
    tracked = _tracked_reachable(kept)
    one_turn = _tracked_reachable(_turn(0))
    assert one_turn > 50  # the W1-like turn as objects
    # 100 turns held as objects would be 100 * one_turn; as JSON, the fresh ones and the two dicts.
    assert tracked <= (FRESH_OUTCOMES + 1) * one_turn, (tracked, one_turn)


def _tracked_reachable(root: object) -> int:
    """How many objects the cyclic garbage collector tracks among those reachable from ``root``
    (types and modules left out: they are shared with everything)."""
    seen: set[int] = set()
    todo = [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, type) or type(obj).__name__ == "module":
            continue
        seen.add(id(obj))
        todo.extend(o for o in gc.get_referents(obj) if gc.is_tracked(o))
    return len(seen)


def test_a_turn_kept_with_its_results_json_keeps_the_same_bytes_as_one_encoded_in_full() -> None:
    """The turn's result is encoded once (to measure and send it); the kept JSON is spliced from it."""
    for message_id in ("m1", 'quote " and back\\slash', "é ✓ 日本", ""):
        turn = _turn(1).model_copy(update={"message_id": message_id})
        with_json, alone = KeptOutcomes(keep=3), KeptOutcomes(keep=3)
        with_json.add(turn, to_json(turn.result, exclude_none=True))
        alone.add(turn)
        assert with_json._json[message_id] == alone._json[message_id] == to_json(turn, exclude_none=True)
    failed = TurnOutcome(message_id="bad", error_type="ModelError", error_message="429")
    kept = KeptOutcomes(keep=3)
    kept.add(failed, b'{"not":"this turn"}')  # a failed turn has no result: its given JSON is ignored
    assert kept._json["bad"] == to_json(failed, exclude_none=True)
