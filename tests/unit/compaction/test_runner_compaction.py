"""Compaction in-process: the Runner compacts after invocations; the model's input stays bounded."""

from __future__ import annotations

import pytest

from adk_core import App, Content, InMemoryRunner, LlmAgent, ScriptedModel, SequentialAgent
from adk_core.compaction import EventsCompactionConfig, LlmEventsSummarizer
from adk_core.errors import ConfigurationError, ModelError
from adk_core.flow.contents import SUMMARY_HEADER
from adk_core.models.base import LlmRequest

from .conversation import (
    INTERVAL,
    OVERLAP,
    RETAINED,
    TOKEN_THRESHOLD,
    TURNS,
    agentic_app,
    make_app,
    question,
    request_text,
)


async def converse(app: App, turns: int) -> InMemoryRunner:
    runner = InMemoryRunner(app=app)
    for n in range(1, turns + 1):
        await runner.run(question(n), session_id="s")
    return runner


async def test_input_stays_bounded_with_compaction_and_grows_without():
    app, model, summarizer = make_app("counting")
    await converse(app, TURNS)
    sizes = [len(request_text(r)) for r in model.requests]
    plain_app, plain_model, _ = make_app("counting", compaction=False)
    await converse(plain_app, TURNS)
    plain = [len(request_text(r)) for r in plain_model.requests]

    assert len(sizes) == len(plain) == TURNS
    # A sawtooth: it grows within a window and drops at each compaction, the same height all along
    # (a few characters more once the turn numbers have more digits).
    assert max(sizes[TURNS // 2:]) <= 1.1 * max(sizes[: TURNS // 4])
    assert max(sizes) < 3_000
    assert plain[-1] > 20 * plain[9] and plain[-1] > 50_000  # without compaction: linear growth
    assert len(summarizer.requests) == TURNS // INTERVAL
    print(f"\nrequest text, chars: with compaction max {max(sizes)} last {sizes[-1]}; without last {plain[-1]}")


async def test_every_stored_event_stays():
    app, _, _ = make_app("counting")
    runner = await converse(app, 30)
    session = await runner.session_service.get_session(app_name="counting", user_id="user", session_id="s")
    assert session is not None
    compactions = [e for e in session.events if e.actions.compaction is not None]
    others = [e for e in session.events if e.actions.compaction is None]
    assert len(compactions) == 30 // INTERVAL
    assert [e.text for e in others if e.author == "user"] == [question(n) for n in range(1, 31)]
    assert len(others) == 60
    # Each compaction starts where the first did (nesting) and stops before the kept invocations.
    assert len({c.actions.compaction.start_timestamp for c in compactions}) == 1
    assert all(c.id == f"{c.invocation_id}/compaction" and c.author == "user" for c in compactions)


async def test_the_model_sees_one_summary_then_the_kept_and_new_turns():
    app, model, _ = make_app("counting")
    await converse(app, 2 * INTERVAL + 1)
    last = model.requests[-1]
    texts = [c.parts[0].text for c in last.contents]
    assert texts.count(SUMMARY_HEADER) == 1 and texts[0] == SUMMARY_HEADER
    summary = last.contents[0].parts[-1].text or ""
    assert f"questions 1 to {2 * INTERVAL - OVERLAP}" in summary
    # After the summary: the kept invocation (overlap) and the new one, word for word.
    assert [c.parts[0].text for c in last.contents[1:] if c.role == "user"] == [
        question(2 * INTERVAL - OVERLAP + 1), question(2 * INTERVAL + 1)
    ]


async def test_a_failed_summary_is_skipped_and_planned_again():
    calls = {"n": 0}

    def flaky(request: LlmRequest) -> str:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ModelError("provider down", status=503, retryable=True)
        return "summary"

    agent = LlmAgent(name="a", model=ScriptedModel(lambda r: "ok"))
    config = EventsCompactionConfig(2, 0, summarizer=LlmEventsSummarizer(ScriptedModel(flaky)))
    runner = InMemoryRunner(app=App(name="x", root_agent=agent, events_compaction_config=config))
    for n in range(3):
        events = await runner.run(f"m{n}", session_id="s")
        assert events and events[-1].text == "ok"  # the turn stands whatever the summary did
    session = await runner.session_service.get_session(app_name="x", user_id="user", session_id="s")
    assert session is not None
    assert [e.invocation_id for e in session.events if e.actions.compaction] == [session.events[-3].invocation_id]


async def test_compaction_event_is_not_yielded_as_turn_output():
    app, _, _ = make_app("counting")
    runner = InMemoryRunner(app=app)
    for n in range(1, INTERVAL + 1):
        events = await runner.run(question(n), session_id="s")
        assert all(e.actions.compaction is None for e in events)


def test_app_defaults_the_summarizer_to_the_root_agents_model():
    model = ScriptedModel(["x"])
    app = App(name="x", root_agent=LlmAgent(name="a", model=model), events_compaction_config=EventsCompactionConfig(3))
    summarizer = app.events_compaction_config.summarizer
    assert isinstance(summarizer, LlmEventsSummarizer) and summarizer.model is model


def test_an_app_without_an_llm_root_needs_a_summarizer():
    root = SequentialAgent(name="seq", sub_agents=[LlmAgent(name="a", model=ScriptedModel(["x"]))])
    with pytest.raises(ConfigurationError, match="summarizer=LlmEventsSummarizer"):
        App(name="x", root_agent=root, events_compaction_config=EventsCompactionConfig(3))


@pytest.mark.parametrize(
    ("interval", "overlap", "match"),
    [(0, 0, "compaction_interval"), (3, 3, "overlap_size"), (3, -1, "overlap_size"), (2.5, 0, "whole number")],
)
def test_bad_config_says_how_to_fix_it(interval, overlap, match):
    with pytest.raises(ConfigurationError, match=match):
        EventsCompactionConfig(interval, overlap)


def test_a_summarizer_must_have_summarize_events():
    with pytest.raises(ConfigurationError, match="summarize_events"):
        EventsCompactionConfig(3, summarizer=object())  # type: ignore[arg-type]


def test_summarizer_prompt_needs_the_transcript_placeholder():
    with pytest.raises(ConfigurationError, match="transcript"):
        LlmEventsSummarizer(ScriptedModel(["x"]), prompt="Summarize.")


async def test_summarizer_request_carries_the_previous_summary_and_clips_large_values():
    from adk_core.compaction.llm_summarizer import MAX_VALUE_CHARS
    from adk_core.types import Event, EventActions, EventCompaction, Part

    model = ScriptedModel(lambda r: "new summary")
    previous = Event(author="user", actions=EventActions(compaction=EventCompaction(
        start_timestamp=1, end_timestamp=2, compacted_content=Content.model("old summary"))))
    big = Event(author="a", content=Content(role="user", parts=[
        Part.from_function_response("lookup", {"rows": "x" * 10_000}, id="c1")]))
    summary = await LlmEventsSummarizer(model).summarize_events([previous, big])
    assert summary is not None and summary.text == "new summary"
    sent = request_text(model.requests[0])
    assert "old summary" in sent and "(cut)" in sent and len(sent) < MAX_VALUE_CHARS + 2_000


async def test_by_tokens_the_prompt_stays_under_the_threshold_and_the_newest_events_stay_verbatim():
    """The token trigger alone: each time a prompt reaches TOKEN_THRESHOLD tokens, all but the newest
    RETAINED events are summarized, and the question of a kept answer is kept with it."""
    app, model, summarizer = make_app("counting", trigger="tokens")
    runner = await converse(app, 60)
    tokens = [len(request_text(r)) // 4 for r in model.requests]
    assert max(tokens) < TOKEN_THRESHOLD + 100  # one turn past the threshold at most
    assert 60 // 8 <= len(summarizer.requests) <= 60 // 3, len(summarizer.requests)

    session = await runner.session_service.get_session(app_name="counting", user_id="user", session_id="s")
    assert session is not None
    compactions = [e for e in session.events if e.actions.compaction is not None]
    assert len(compactions) == len(summarizer.requests)
    assert len({c.actions.compaction.start_timestamp for c in compactions}) == 1  # nested
    # After the newest compaction's summary the model saw the RETAINED newest events word for word.
    newest = compactions[-1]
    after = session.events[session.events.index(newest) + 1:]
    seen = model.requests[len(model.requests) - len(after) // 2]
    assert seen.contents[0].parts[0].text == SUMMARY_HEADER
    kept = seen.contents[1:-1]  # before the new question
    assert RETAINED <= len(kept) <= RETAINED + 1 and kept[0].role == "user" and kept[-1].role == "model"
    print(f"\nby tokens: {len(compactions)} compactions in 60 turns, prompt max {max(tokens)} tokens")


async def test_a_long_invocation_is_compacted_before_its_model_calls():
    """One invocation of 30 tool rounds: each time a call's prompt reached the threshold, the older
    events were summarized before the next call, so no prompt grew past one step over it; the model
    still finished the work (it reads its progress from the newest step it sees)."""
    app, model, summarizer = agentic_app("long", steps=30, token_threshold=900, keep=3)
    runner = InMemoryRunner(app=app)
    events = await runner.run("do the work", session_id="s")
    assert events[-1].text == "finished"
    assert len(model.requests) == 31
    tokens = [(sum(len(c.model_dump_json()) for c in r.contents) + len(r.config.system_instruction or "")) // 4
              for r in model.requests]
    assert max(tokens) < 900 + 250, tokens  # a step (call and result) is about 150 tokens

    session = await runner.session_service.get_session(app_name="long", user_id="user", session_id="s")
    assert session is not None
    compactions = [e for e in session.events if e.actions.compaction is not None]
    invocation = events[-1].invocation_id
    assert len(compactions) >= 3 and all(e.id.startswith(f"{invocation}/compaction/") for e in compactions)
    assert len(compactions) == len(summarizer.requests)
    steps = [r.response["done"] for e in session.events for r in e.function_responses()]
    assert steps == list(range(30))  # every step stored, none repeated
    print(f"\nlong invocation: {len(compactions)} compactions in 31 calls, prompt max {max(tokens)} tokens")
