"""activities/_history.ContentsMemo: a model call converts only the events stored since the last
call, and what it returns is always exactly what build_contents gives for the whole prefix."""

from __future__ import annotations

from adk_core.flow.contents import build_contents
from adk_core.types import Content, Event, EventActions, EventCompaction, FunctionCall, Part
from adk_temporal.activities._history import ContentsMemo

KEY = ("a", "u", "s")


def _log(n: int) -> list[Event]:
    """A conversation between the user, agent "a" and agent "b" (whose words "a" sees as context)."""
    events = []
    for i in range(n):
        author = ("user", "a", "b")[i % 3]
        content = (
            Content.user(f"m{i}") if author == "user"
            else Content(role="model", parts=[Part(function_call=FunctionCall(name="t", args={"i": i}))])
            if i % 2 else Content.model(f"m{i}")
        )
        events.append(Event(id=f"e{i}", author=author, invocation_id="inv", timestamp=float(i), content=content,
                            branch="a" if i % 5 == 0 else None))
    return events


def test_growing_prefixes_give_what_a_full_build_gives_and_convert_only_the_new_events(monkeypatch) -> None:
    from adk_core.flow import contents
    from adk_temporal.activities import _history

    converted: list[int] = []
    real = contents.build_contents

    def counting(events, agent_name, branch, **kw):
        converted.append(len(events))
        return real(events, agent_name, branch, **kw)

    # The memo builds in full itself, and the new events through contents.extended_contents.
    monkeypatch.setattr(_history, "build_contents", counting)
    monkeypatch.setattr(contents, "build_contents", counting)
    memo, log = ContentsMemo(), _log(40)
    for n in (5, 6, 20, 20, 40):
        for agent, branch in (("a", None), ("b", "a.x")):
            assert memo.contents(KEY, log[:n], agent, branch, later=[]) == build_contents(log[:n], agent, branch)
    # Per agent and branch: 5, then 1 new, 14 new, 0 new, 20 new.
    assert converted == [5, 5, 1, 1, 14, 14, 0, 0, 20, 20]


def test_a_different_prefix_under_the_same_key_is_built_from_scratch() -> None:
    memo, log = ContentsMemo(), _log(10)
    memo.contents(KEY, log[:6], "a", None, later=[])
    other = [e.model_copy(update={"id": f"x{i}"}) for i, e in enumerate(log)]
    assert memo.contents(KEY, other[:8], "a", None, later=[]) == build_contents(other[:8], "a", None)
    assert memo.contents(KEY, log[:3], "a", None, later=[]) == build_contents(log[:3], "a", None)  # shorter


def test_a_compaction_in_the_log_or_after_it_is_applied() -> None:
    memo, log = ContentsMemo(), _log(12)
    compaction = Event(id="c", author="user", invocation_id="inv", timestamp=12.0, actions=EventActions(
        compaction=EventCompaction(start_timestamp=0.0, end_timestamp=4.0, compacted_content=Content.model("S"))))
    memo.contents(KEY, log[:8], "a", None, later=[])
    with_compaction = [*log[:8], compaction, *log[8:]]
    got = memo.contents(KEY, with_compaction, "a", None, later=[])
    assert got == build_contents(with_compaction, "a", None) and got != build_contents(log, "a", None)
    assert memo.contents(KEY, log[:8], "a", None, later=[compaction]) == build_contents(log[:8], "a", None,
                                                                                          later=[compaction])


def test_what_it_returns_is_the_callers_to_change() -> None:
    memo, log = ContentsMemo(), _log(6)
    first = memo.contents(KEY, log, "a", None, later=[])
    first.clear()
    assert memo.contents(KEY, log, "a", None, later=[]) == build_contents(log, "a", None)


def test_it_holds_at_most_max_entries() -> None:
    memo, log = ContentsMemo(max_entries=2), _log(4)
    for session in ("s1", "s2", "s3"):
        memo.contents(("a", "u", session), log, "a", None, later=[])
    assert len(memo._built) == 2


def test_an_answer_to_a_long_running_call_among_the_memos_events_is_built_with_them() -> None:
    """The answer goes back to its call (adk_core.flow.contents.pair_answers), into contents the
    memo built before it arrived: every prefix still gives what a full build gives."""

    def event(i: int, author: str, *parts: Part, long_running: list[str] | None = None) -> Event:
        return Event(id=f"e{i}", author=author, invocation_id=f"inv{i // 4}", timestamp=float(i),
                     content=Content(role="model" if any(p.function_call or p.text for p in parts) and author != "user"
                                     else "user", parts=list(parts)),
                     long_running_tool_ids=long_running)

    log = [
        event(0, "user", Part(text="approve")),
        event(1, "a", Part.from_function_call("ask", {}, id="A"), Part.from_function_call("t", {}, id="B"),
              long_running=["A"]),
        event(2, "a", Part.from_function_response("ask", {"ticket": 1}, id="A"), Part.from_function_response("t", {}, id="B")),
        event(3, "a", Part(text="waiting")),
        event(4, "user", Part(text="hello?")),
        event(5, "a", Part(text="still waiting")),
        event(6, "user", Part.from_function_response("ask", {"approved": True}, id="A")),
        event(7, "a", Part(text="approved")),
    ]
    memo = ContentsMemo()
    for n in range(1, len(log) + 1):
        assert memo.contents(KEY, log[:n], "a", None, later=[]) == build_contents(log[:n], "a", None), n
    built = memo.contents(KEY, log, "a", None, later=[])
    assert built[2].parts[0].function_response.response == {"approved": True}  # type: ignore[union-attr]
    assert len(built) == len(log) - 1  # the answer's own content went to its call
