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
