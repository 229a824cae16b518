"""The token trigger for models that report no prompt tokens: the runtime estimates each prompt."""

from __future__ import annotations

from adk_core import InMemoryRunner
from adk_core.compaction import EventsCompactionConfig, plan_compaction
from adk_core.compaction.estimate import (
    ESTIMATED_PROMPT_TOKENS_KEY,
    TOKENS_PER_MEDIA_PART,
    add_prompt_estimate,
    estimate_prompt_tokens,
    prompt_tokens,
)
from adk_core.models.base import (
    FunctionDeclaration,
    GenerateContentConfig,
    LlmRequest,
    LlmResponse,
    UsageMetadata,
)
from adk_core.types import Content, Event, Part

from .conversation import TOKEN_THRESHOLD, make_app, question, request_text


def test_the_estimate_counts_a_token_for_four_characters_of_everything_sent():
    declaration = FunctionDeclaration(name="lookup", description="Look a key up.",
                                      parameters={"type": "object", "properties": {"key": {"type": "string"}}})
    request = LlmRequest(
        contents=[
            Content.user("x" * 400),
            Content(role="model", parts=[Part.from_function_call("lookup", {"key": "k" * 40})]),
            Content(role="user", parts=[Part.from_function_response("lookup", {"value": "v" * 400})]),
            Content(role="user", parts=[Part.from_bytes(b"\x89PNG" * 1000, "image/png")]),
        ],
        config=GenerateContentConfig(system_instruction="s" * 80, tools=[declaration]),
    )
    declared = len(declaration.model_dump_json(exclude_none=True))
    text = 400 + 80 + len("lookup") + len('{"key": "' + "k" * 40 + '"}') + len("lookup") + len('{"value": "' + "v" * 400 + '"}')
    assert estimate_prompt_tokens(request) == -(-(text + declared) // 4) + TOKENS_PER_MEDIA_PART
    assert estimate_prompt_tokens(LlmRequest()) == 0


def test_a_reported_count_wins_and_partials_get_none():
    request = LlmRequest(contents=[Content.user("y" * 4_000)])
    reported = LlmResponse(content=Content.model("a"), usage_metadata=UsageMetadata(prompt_token_count=7))
    partial = LlmResponse(content=Content.model("a"), partial=True)
    silent = LlmResponse(content=Content.model("a"), custom_metadata={"mine": 1})
    add_prompt_estimate(request, [reported, partial, silent])
    assert reported.custom_metadata is None and partial.custom_metadata is None
    assert silent.custom_metadata == {"mine": 1, ESTIMATED_PROMPT_TOKENS_KEY: 1_000}

    def event(response: LlmResponse) -> Event:
        usage = response.usage_metadata.model_dump(exclude_none=True) if response.usage_metadata else None
        return Event(author="a", content=response.content, usage_metadata=usage, custom_metadata=response.custom_metadata)

    assert prompt_tokens(event(reported)) == 7
    assert prompt_tokens(event(silent)) == 1_000
    assert prompt_tokens(Event(author="a", custom_metadata={ESTIMATED_PROMPT_TOKENS_KEY: True})) is None


def test_the_planner_reads_the_estimate_where_nothing_was_reported():
    config = EventsCompactionConfig(token_threshold=100, event_retention_size=0)
    events = [
        Event(id="q", invocation_id="i1", author="user", content=Content.user("q"), timestamp=1.0),
        Event(id="a", invocation_id="i1", author="agent", content=Content.model("a"), timestamp=2.0,
              custom_metadata={ESTIMATED_PROMPT_TOKENS_KEY: 99}),
    ]
    assert plan_compaction(events, config) is None
    events[1].custom_metadata = {ESTIMATED_PROMPT_TOKENS_KEY: 100}
    plan = plan_compaction(events, config)
    assert plan is not None and [e.id for e in plan.events] == ["q", "a"]


async def test_a_model_reporting_no_usage_is_compacted_by_the_estimate():
    """The conversation of test_runner_compaction's token test, by a model that reports no usage:
    it compacts as often, and no prompt grows past one turn over the threshold."""
    app, model, summarizer = make_app("estimated", trigger="estimated")
    runner = InMemoryRunner(app=app)
    for n in range(1, 61):
        await runner.run(question(n), session_id="s")
    tokens = [len(request_text(r)) // 4 for r in model.requests]
    assert max(tokens) < TOKEN_THRESHOLD + 100, max(tokens)
    assert 60 // 8 <= len(summarizer.requests) <= 60 // 3, len(summarizer.requests)
    session = await runner.session_service.get_session(app_name="estimated", user_id="user", session_id="s")
    assert session is not None
    answers = [e for e in session.events if e.author == "counter"]
    assert all(e.usage_metadata is None for e in answers)  # what the provider said stays as it said it
    assert all(isinstance((e.custom_metadata or {}).get(ESTIMATED_PROMPT_TOKENS_KEY), int) for e in answers)


async def test_apps_without_a_token_threshold_pay_nothing():
    app, model, _ = make_app("interval_only")
    runner = InMemoryRunner(app=app)
    events = await runner.run(question(1), session_id="s")
    assert events[-1].custom_metadata is None
