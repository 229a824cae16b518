"""ScriptedModel keeps the newest requests for assertions, never an unbounded list."""

from __future__ import annotations

from adk_core import Content, LlmRequest
from adk_core.models import ScriptedModel


async def test_it_records_every_request_up_to_a_bound_and_keeps_the_newest(monkeypatch) -> None:
    monkeypatch.setattr(ScriptedModel, "MAX_RECORDED", 5)
    model = ScriptedModel(lambda request: "ok")
    for i in range(12):
        responses = [r async for r in model.generate_content(LlmRequest(contents=[Content.user(f"q{i}")]))]
        assert responses[-1].content is not None and responses[-1].content.parts[0].text == "ok"
    assert [r.contents[0].parts[0].text for r in model.requests] == [f"q{i}" for i in range(7, 12)]


def test_tool_responses_this_turn_are_the_results_since_the_users_latest_words() -> None:
    from adk_core.models import tool_responses_this_turn
    from adk_core.types import Part

    def results(*values: int) -> Content:
        return Content(role="user", parts=[Part.from_function_response("t", {"v": v}) for v in values])

    call = Content(role="model", parts=[Part.from_function_call("t", {})])
    earlier = [Content.user("first"), call, results(1)]
    request = LlmRequest(contents=[*earlier, Content.user("second"), call, results(2, 3), call, results(4)])
    assert tool_responses_this_turn(request) == [{"v": 2}, {"v": 3}, {"v": 4}]
    assert tool_responses_this_turn(LlmRequest(contents=[*earlier, Content.user("third")])) == []
    assert tool_responses_this_turn(LlmRequest(contents=[call, results(5)])) == [{"v": 5}]  # no user words at all


async def test_each_response_is_a_whole_fresh_copy_of_what_the_script_handed_out() -> None:
    """A script may reuse one response object and may fill its lists in place: every call gets all
    of it, and changing what one call got changes neither the script's object nor the next call's."""
    from adk_core.models.base import LlmResponse
    from adk_core.types import Part

    content = Content(role="model")
    content.parts.append(Part(text="hello"))  # filled in place, not passed to the constructor
    shared = LlmResponse(content=content)
    model = ScriptedModel(lambda request: shared)
    first = [r async for r in model.generate_content(LlmRequest(contents=[Content.user("a")]))][0]
    assert first.content is not None and [p.text for p in first.content.parts] == ["hello"]
    first.content.parts.append(Part(text="changed"))
    second = [r async for r in model.generate_content(LlmRequest(contents=[Content.user("b")]))][0]
    assert second.content is not None and [p.text for p in second.content.parts] == ["hello"]
    assert [p.text for p in shared.content.parts] == ["hello"]


async def test_a_benchmark_model_records_nothing_and_hands_out_what_its_script_built() -> None:
    from adk_core.models import text_response

    built = []

    def script(request: LlmRequest):
        built.append(text_response("ok"))
        return built[-1]

    model = ScriptedModel(script, record_requests=False, fresh_responses=True)
    for i in range(3):
        responses = [r async for r in model.generate_content(LlmRequest(contents=[Content.user(f"q{i}")]))]
        assert responses == [built[-1]] and responses[0] is built[-1]
    assert model.requests == []
