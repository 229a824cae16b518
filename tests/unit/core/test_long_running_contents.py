"""adk_core.flow.contents.pair_answers and ending_with_answers: a long-running call's latest result
goes right after the call, in place of its first one, and the model call right after the answer
ends with it (tests/unit/core/test_long_running.py runs the same through the flow)."""

from __future__ import annotations

from adk_core.flow.contents import ending_with_answers, pair_answers
from adk_core.types import Content, Event, Part


def _call(*ids: str) -> Content:
    return Content(role="model", parts=[Part.from_function_call("f", {}, id=i) for i in ids])


def _result(call_id: str, value: str) -> Part:
    return Part.from_function_response("f", {"v": value}, id=call_id)


def test_the_latest_result_of_a_long_running_call_goes_right_after_it_in_place_of_the_first() -> None:
    contents = [
        Content.user("go"), _call("A"), Content(role="user", parts=[_result("A", "ticket")]), Content.model("waiting"),
        Content.user("meanwhile?"), Content.model("still waiting"),
        Content(role="user", parts=[_result("A", "final"), Part(text="there you are")]),
    ]
    paired = pair_answers(contents, {"A"})
    assert paired == [
        Content.user("go"), _call("A"), Content(role="user", parts=[_result("A", "final")]), Content.model("waiting"),
        Content.user("meanwhile?"), Content.model("still waiting"), Content.user("there you are"),
    ]
    assert pair_answers(paired, {"A"}) == paired  # applied again: nothing changes
    assert pair_answers(contents, set()) is contents  # only long-running calls are looked at
    assert paired[0] is contents[0] and paired[3] is contents[3], "contents left alone are the same objects"


def test_a_result_goes_to_the_latest_call_before_it_with_its_id_and_a_result_without_a_shown_call_stays() -> None:
    # Some OpenAI-compatible servers repeat ids (call_0) across invocations.
    contents = [
        _call("call_0"), Content(role="user", parts=[_result("call_0", "first")]), Content.model("ok"),
        _call("call_0", "B"), Content(role="user", parts=[_result("B", "b")]), Content.model("waiting"),
        Content(role="user", parts=[_result("call_0", "second"), _result("X", "orphan")]),
    ]
    assert pair_answers(contents, {"call_0"}) == [
        _call("call_0"), Content(role="user", parts=[_result("call_0", "first")]), Content.model("ok"),
        _call("call_0", "B"), Content(role="user", parts=[_result("B", "b"), _result("call_0", "second")]),
        Content.model("waiting"), Content(role="user", parts=[_result("X", "orphan")]),
    ]


def test_a_call_followed_by_no_results_gets_its_answer_in_a_content_of_its_own() -> None:
    contents = [_call("A"), Content.user("hello?"), Content.model("waiting"), Content(role="user", parts=[_result("A", "final")])]
    assert pair_answers(contents, {"A"}) == [
        _call("A"), Content(role="user", parts=[_result("A", "final")]), Content.user("hello?"), Content.model("waiting"),
    ]


def test_the_call_right_after_an_answer_ends_with_it() -> None:
    def answer(*parts: Part) -> Event:
        return Event(id="e", invocation_id="i", author="user", timestamp=1.0, content=Content(role="user", parts=list(parts)))

    paired = [Content.user("go"), _call("A"), Content(role="user", parts=[_result("A", "final")]), Content.model("waiting")]
    assert ending_with_answers(paired, answer(_result("A", "final")), "w", None) == paired[:3]
    with_words = [*paired, Content.user("thanks")]
    assert ending_with_answers(with_words, answer(_result("A", "final"), Part(text="thanks")), "w", None) == [
        *paired[:3], Content.user("thanks")
    ]
    in_place = [Content.user("go"), _call("A"), Content(role="user", parts=[_result("A", "final")])]
    assert ending_with_answers(in_place, answer(_result("A", "final")), "w", None) is in_place
    assert ending_with_answers(paired, Event(id="e", invocation_id="i", author="user", timestamp=1.0,
                                             content=Content.user("hi")), "w", None) is paired


def test_after_a_compaction_the_answer_goes_to_its_call_as_in_the_whole_log() -> None:
    """A compacting app's model call reads the session less what its newest compaction hides
    (contents.without_compacted): the answer is paired the same."""
    from adk_core.flow.contents import build_contents, without_compacted
    from adk_core.types import EventActions, EventCompaction

    def event(i: int, author: str, content: Content | None, **fields: object) -> Event:
        return Event(id=f"e{i}", invocation_id=f"i{i}", author=author, timestamp=float(i), content=content, **fields)

    summary = EventCompaction(start_timestamp=0.0, end_timestamp=1.0, compacted_content=Content.model("they met"))
    log = [
        event(0, "user", Content.user("hi")), event(1, "w", Content.model("hello")),
        event(2, "user", None, actions=EventActions(compaction=summary)),
        event(3, "user", Content.user("approve")), event(4, "w", _call("A"), long_running_tool_ids=["A"]),
        event(5, "w", Content(role="user", parts=[_result("A", "ticket")])), event(6, "w", Content.model("waiting")),
        event(7, "user", Content(role="user", parts=[_result("A", "final")])),
    ]
    built = build_contents(log, "w", None)
    assert build_contents(without_compacted(log), "w", None) == built
    assert built[1:] == [Content.user("approve"), _call("A"), Content(role="user", parts=[_result("A", "final")]),
                         Content.model("waiting")]
