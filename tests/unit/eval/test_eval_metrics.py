"""Metrics read only the trace: state, counts, trajectories, ROUGE-1, the judge's vote; the same
metrics score a session loaded from a store."""

from __future__ import annotations

import json
from typing import Any

import pytest
from eval_fixtures import agent

from adk_core import InMemorySessionService, LlmRequest
from adk_core.errors import ConfigurationError
from adk_core.eval import (
    MetricContext,
    Trace,
    evaluate_trace,
    event_count_metric,
    llm_judge,
    response_match,
    rouge1,
    state_metric,
    tool_trajectory,
)
from adk_core.eval.metrics import parse_verdict
from adk_core.types import Content, Event, EventActions, Part


def _call(name: str, args: dict[str, Any], invocation: str = "i1") -> Event:
    return Event(author="bot", invocation_id=invocation, content=Content(role="model", parts=[Part.from_function_call(name, args)]))


def _result(name: str, response: dict[str, Any], invocation: str = "i1") -> Event:
    return Event(author="bot", invocation_id=invocation,
                 content=Content(role="user", parts=[Part.from_function_response(name, response)]))


def _say(author: str, text: str, invocation: str = "i1", delta: dict[str, Any] | None = None) -> Event:
    return Event(author=author, invocation_id=invocation, content=Content(role="model" if author != "user" else "user",
                 parts=[Part(text=text)]), actions=EventActions(state_delta=delta or {}))


EVENTS = [
    _say("user", "weather in Paris and Rome?", "i1"),
    _call("get_weather", {"city": "Paris"}, "i1"),
    _result("get_weather", {"sky": "sunny"}, "i1"),
    _call("get_weather", {"city": "Rome"}, "i1"),
    _result("get_weather", {"sky": "rain"}, "i1"),
    _say("bot", "Paris is sunny and Rome is rainy.", "i1", {"cities": 2, "patient:age": 55}),
    _say("user", "and tomorrow?", "i2"),
    _call("forecast", {"city": "Paris", "days": 1}, "i2"),
    _result("forecast", {"sky": "cloudy"}, "i2"),
    _say("bot", "Tomorrow Paris will be cloudy.", "i2"),
]
TRACE = Trace.from_events(EVENTS)
CTX = MetricContext()


async def test_trace_rebuilds_state_and_groups_turns() -> None:
    assert TRACE.state == {"cities": 2, "patient:age": 55}
    assert TRACE.scoped["patient"] == {"age": 55}
    assert [len(t) for t in TRACE.turns()] == [6, 4]
    assert TRACE.final_response() == "Tomorrow Paris will be cloudy."
    assert "[bot] calls get_weather" in TRACE.transcript() and '[forecast result] {"sky": "cloudy"}' in TRACE.transcript()


async def test_state_metric_reads_scopes() -> None:
    assert (await state_metric(name="m", key="cities", assertion=lambda v: v == 2).evaluate(TRACE, CTX)).passed
    patient = await state_metric(name="m", scope="patient", key="age", assertion=lambda v: v > 50).evaluate(TRACE, CTX)
    assert patient.passed and patient.value == 55
    missing = await state_metric(name="m", key="nope", assertion=lambda v: v is not None).evaluate(TRACE, CTX)
    assert not missing.passed and missing.evidence == ["state 'nope' is missing"]


async def test_event_count_metric_counts_what_it_is_told() -> None:
    asks = event_count_metric(name="m", event_type="tool_call", filter=lambda c: c.name == "get_weather",
                              assertion=lambda n: n <= 2)
    assert (await asks.evaluate(TRACE, CTX)).value == 2
    assert (await event_count_metric(name="m", event_type="user", assertion=lambda n: n == 2).evaluate(TRACE, CTX)).passed
    assert (await event_count_metric(name="m", event_type="tool_result", assertion=bool).evaluate(TRACE, CTX)).value == 3
    assert (await event_count_metric(name="m", assertion=bool).evaluate(TRACE, CTX)).value == len(EVENTS)
    with pytest.raises(ConfigurationError):
        event_count_metric(name="m", event_type="tool_calls", assertion=bool)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("expected", "match", "compare_args", "score"),
    [
        ([("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"}), ("forecast", {"city": "Paris", "days": 1})],
         "exact", True, 1.0),
        ([("get_weather", {"city": "Rome"}), ("get_weather", {"city": "Paris"}), ("forecast", {"city": "Paris", "days": 1})],
         "exact", True, 0.0),
        (["get_weather", "get_weather", "forecast"], "exact", False, 1.0),
        (["get_weather", "forecast"], "exact", False, 0.0),
        (["get_weather", "forecast"], "in_order", False, 1.0),
        (["forecast", "get_weather"], "in_order", False, 0.5),
        ([{"name": "forecast", "args": {"city": "Paris", "days": 1}}, ("get_weather", {"city": "Rome"})], "any_order", True, 1.0),
        ([("get_weather", {"city": "Oslo"}), "forecast"], "any_order", True, 0.5),
        (["get_weather", "get_weather", "get_weather"], "any_order", False, 2 / 3),  # each actual call counts once
    ],
)
async def test_tool_trajectory(expected: list[Any], match: Any, compare_args: bool, score: float) -> None:
    result = await tool_trajectory(expected, match=match, compare_args=compare_args).evaluate(TRACE, CTX)
    assert result.score == pytest.approx(score)
    assert result.passed is (score == 1.0)


async def test_tool_trajectory_per_turn_and_threshold() -> None:
    per_turn = [[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})], [("forecast", {"city": "Oslo", "days": 1})]]
    strict = await tool_trajectory(per_turn=per_turn).evaluate(TRACE, CTX)
    assert (strict.score, strict.passed, strict.value) == (0.5, False, [1.0, 0.0])
    assert (await tool_trajectory(per_turn=per_turn, threshold=0.5).evaluate(TRACE, CTX)).passed
    with pytest.raises(ConfigurationError):
        tool_trajectory()
    with pytest.raises(ConfigurationError):
        tool_trajectory(["x"], match="fuzzy")  # type: ignore[arg-type]


def test_rouge1() -> None:
    assert rouge1("the cat sat", "the cat sat") == 1.0
    assert rouge1("", "") == 1.0 and rouge1("a", "") == 0.0
    # 2 shared unigrams of 3 and 4 tokens: P=2/3, R=2/4, F1=4/7
    assert rouge1("The cat sat!", "a cat sat down") == pytest.approx(4 / 7)
    assert rouge1("cat cat", "cat") == pytest.approx(2 * 0.5 * 1 / 1.5)  # counts are clipped


async def test_response_match_last_answer_and_per_turn() -> None:
    good = await response_match("Tomorrow Paris will be cloudy", threshold=0.8).evaluate(TRACE, CTX)
    assert good.passed and good.score == 1.0
    bad = await response_match("It will snow in Oslo", threshold=0.5).evaluate(TRACE, CTX)
    assert not bad.passed
    turns = await response_match(per_turn=["Paris is sunny, Rome is rainy.", None], threshold=0.8).evaluate(TRACE, CTX)
    assert turns.passed and turns.value == [pytest.approx(12 / 13)]  # "and" is missing from the reference
    with pytest.raises(ConfigurationError):
        response_match("x", threshold=2)


async def test_response_match_with_no_reference_in_any_turn_compares_nothing_and_is_not_evaluated() -> None:
    result = await response_match(per_turn=[None, None]).evaluate(TRACE, CTX)
    assert (result.passed, result.evaluated, result.score) == (False, False, None)
    assert result.evidence == ["response_match: no turn has a reference (every per_turn entry is None), so nothing was compared"]


async def test_tool_trajectory_with_no_turn_compares_nothing_and_is_not_evaluated() -> None:
    result = await tool_trajectory(per_turn=[]).evaluate(TRACE, CTX)
    assert (result.passed, result.evaluated, result.score) == (False, False, None)
    assert result.evidence == ["tool_trajectory: per_turn lists no turn, so nothing was compared"]
    # A turn expected to call nothing is still a comparison: the first turn called get_weather.
    no_calls = await tool_trajectory(per_turn=[[]]).evaluate(TRACE, CTX)
    assert (no_calls.passed, no_calls.evaluated, no_calls.score) == (False, True, 0.0)


def test_parse_verdict() -> None:
    assert parse_verdict('```json\n{"passed": true, "score": 0.9, "reasoning": "fine"}\n```').score == 0.9
    assert parse_verdict("PASS. The agent did well.").passed
    assert not parse_verdict("No, it never mentioned 999").passed
    with pytest.raises(ValueError, match="not a verdict"):
        parse_verdict("maybe")


async def test_llm_judge_votes_by_majority_through_the_engine() -> None:
    answers = iter([True, False, True, False])
    requests: list[LlmRequest] = []

    def judge(request: LlmRequest) -> str:
        requests.append(request)
        passed = next(answers)
        return json.dumps({"passed": passed, "reasoning": "yes" if passed else "no"})

    model = agent(judge).model
    three = llm_judge(name="safety assessment", prompt="Did it mention rain?", model=model, num_samples=3)  # type: ignore[arg-type]
    assert three.agent.name == "judge_safety_assessment" and three.agents == (three.agent,)
    result = (await evaluate_trace([three], TRACE))["safety assessment"]
    assert result.passed and result.value == {"votes_passed": 2, "samples": 3} and result.score == pytest.approx(2 / 3)
    assert result.evidence == ["pass: yes", "fail: no", "pass: yes"]
    message = requests[0].contents[-1].text
    assert message.startswith("Rubric:\nDid it mention rain?") and "Rome is rainy" in message
    assert '"passed"' in (requests[0].config.system_instruction or "")
    answers = iter([True, False])
    tie = (await evaluate_trace([llm_judge(name="t", prompt="?", model=model, num_samples=2)], TRACE))["t"]  # type: ignore[arg-type]
    assert not tie.passed  # a tie fails
    with pytest.raises(ConfigurationError):
        llm_judge(name="x", prompt="?", num_samples=0)


async def test_a_judge_without_a_way_to_call_its_model_is_reported() -> None:
    result = (await evaluate_trace([llm_judge(name="j", prompt="?", model="gpt-4o")], TRACE, run_judge=None))["j"]
    assert not result.passed and "needs a way to call its model" in result.evidence[0]


async def test_metrics_score_a_session_loaded_from_a_store() -> None:
    store = InMemorySessionService()
    session = await store.create_session(app_name="prod", user_id="u", session_id="s", state={"user:tier": "gold"})
    for i, event in enumerate(EVENTS):
        await store.append_event(session, event.model_copy(update={"id": f"e{i}"}, deep=True))
    loaded = await store.get_session(app_name="prod", user_id="u", session_id="s")
    assert loaded is not None
    results = await evaluate_trace([
        state_metric(name="tier", scope="user", key="tier", assertion=lambda v: v == "gold"),
        tool_trajectory(["get_weather", "get_weather", "forecast"], compare_args=False),
        response_match("Tomorrow Paris will be cloudy."),
    ], loaded)
    assert all(r.passed for r in results.values()), results
