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
