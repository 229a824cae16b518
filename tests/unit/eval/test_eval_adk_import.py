"""google-adk eval sets (data/weather.evalset.json, data/legacy/home.test.json, written in google-adk's
formats) imported as EvalCases and run with tool_trajectory and response_match."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from eval_fixtures import agent, calls, function_responses, user_texts

from adk_core import LlmRequest, ScriptedModel, ToolContext
from adk_core.errors import ConfigurationError
from adk_core.eval import END_CONVERSATION, load_adk_eval_set, passthrough, run_eval_suite
from adk_core.models import function_call_response, text_response

DATA = Path(__file__).parent / "data"
called: list[str] = []


def get_weather(city: str, tool_context: ToolContext) -> dict:
    """Current weather for a city (a real API in production)."""
    called.append(city)
    return {"city": city, "sky": "sunny" if city == "Paris" else "rainy", "celsius": 21 if city == "Paris" else 14}


def weather_script(request: LlmRequest) -> Any:
    said = user_texts(request)[-1]
    if request.contents[-1].function_responses():
        w = function_responses(request)[-1][1]
        return text_response(f"It is {w['sky']} in {w['city']}, {w['celsius']} degrees.")
    city = next((c for c in ("Paris", "Rome") if c.lower() in said.lower()), None)
    if city is None:
        return text_response("Hello! Ask me about the weather in any city.")
    return function_call_response("get_weather", {"city": city})


def weather_agent() -> Any:
    return agent(weather_script, name="weather_agent", tools=[get_weather])


def _simulator(request: LlmRequest) -> str:
    return "What is the weather in Paris?" if len(user_texts(request)) < 2 else END_CONVERSATION


async def test_an_evalset_file_is_imported_and_passes_with_recorded_tool_responses() -> None:
    called.clear()
    cases = load_adk_eval_set(DATA / "weather.evalset.json", weather_agent(),
                              user_simulator_model=ScriptedModel(_simulator))
    assert [c.name for c in cases] == ["weather_set/paris_then_rome", "weather_set/greeting", "weather_set/planned_trip"]
    first = cases[0]
    assert first.first_message == "What is the weather in Paris?"
    assert first.initial_state == {"user": {"units": "celsius"}}
    assert [m.name for m in first.metrics] == ["tool_trajectory_avg_score", "response_match_score"]
    result = await run_eval_suite(cases)
    paris, greeting, trip = result.results
    assert paris.passed and greeting.passed, [(r.name, r.status, r.error, r.metrics) for r in result.results[:2]]
    # The scenario case ran with a simulated user, but google-adk's default criteria compare against an
    # expected conversation it does not have: not evaluated (never passed), and the suite does not pass.
    assert trip.status == "not_evaluated" and not result.passed
    assert set(trip.metrics) == {"tool_trajectory_avg_score", "response_match_score"}
    assert "needs an expected conversation" in trip.metrics["tool_trajectory_avg_score"].evidence[0]
    assert called == []  # get_weather replayed the recorded responses; the real tool never ran
    assert paris.turns == 2 and paris.metrics["tool_trajectory_avg_score"].value == [1.0, 1.0]
    assert paris.metrics["response_match_score"].score == 1.0
    assert [e.text for e in trip.events if e.author == "user"] == ["I am planning a trip.", "What is the weather in Paris?"]


def _two_cities(request: LlmRequest) -> Any:
    """Asks the weather of Paris and Rome in one model response, then says what each call answered."""
    if request.contents[-1].function_responses():
        return text_response(" and ".join(f"{w['city']} is {w['sky']}" for _, w in function_responses(request)) + ".")
    return calls(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"}))


async def test_recorded_responses_without_ids_answer_the_calls_of_their_tool_in_order(tmp_path: Path) -> None:
    # google-adk makes the ids optional; hand-written sets omit them.
    evalset = tmp_path / "no_ids.evalset.json"
    evalset.write_text(json.dumps({"eval_set_id": "no_ids", "eval_cases": [{"eval_id": "two_cities", "conversation": [{
        "user_content": {"parts": [{"text": "Weather in Paris and Rome?"}]},
        "final_response": {"parts": [{"text": "Paris is sunny and Rome is rainy."}]},
        "intermediate_data": {
            "tool_uses": [{"name": "get_weather", "args": {"city": "Paris"}}, {"name": "get_weather", "args": {"city": "Rome"}}],
            "tool_responses": [{"name": "get_weather", "response": {"city": "Paris", "sky": "sunny"}},
                               {"name": "get_weather", "response": {"city": "Rome", "sky": "rainy"}}],
        },
    }]}]}))
    called.clear()
    (case,) = load_adk_eval_set(evalset, agent(_two_cities, name="weather_agent", tools=[get_weather]))
    result = (await run_eval_suite([case])).results[0]
    assert called == []  # replayed, not run
    answer = next(e.text for e in reversed(result.events) if e.author == "weather_agent" and e.text)
    assert answer == "Paris is sunny and Rome is rainy."  # each call got its own recorded response
    assert result.status == "passed", (result.error, result.metrics)


async def test_a_wrong_trajectory_or_answer_fails_the_imported_case() -> None:
    def wrong(request: LlmRequest) -> Any:
        if request.contents[-1].function_responses():
            return text_response("No idea, sorry.")
        return function_call_response("get_weather", {"city": "Oslo"})

    (case, *_) = load_adk_eval_set(DATA / "weather.evalset.json", agent(wrong, name="weather_agent", tools=[get_weather]),
                                   user_simulator_model=ScriptedModel(_simulator), tool_mocks=passthrough(get_weather))
    result = (await run_eval_suite([case])).results[0]
    assert result.status == "failed"
    assert result.metrics["tool_trajectory_avg_score"].score == 0.0
    assert not result.metrics["response_match_score"].passed


async def test_the_older_list_format_with_its_test_config() -> None:
    called.clear()
    (case,) = load_adk_eval_set(DATA / "legacy" / "home.test.json", weather_agent(), tool_mocks=passthrough(get_weather))
    trajectory, response = case.metrics
    assert trajectory.match == "in_order" and response.threshold == 0.5  # type: ignore[attr-defined]
    result = (await run_eval_suite([case])).results[0]
    assert result.status == "passed", (result.error, result.metrics)
    assert called == ["Paris"]  # passed through: the real tool ran


def test_a_scenario_needs_a_model_and_bad_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="user_simulator_model"):
        load_adk_eval_set(DATA / "weather.evalset.json", weather_agent())
    bad = tmp_path / "empty.evalset.json"
    bad.write_text('{"eval_set_id": "x", "eval_cases": []}')
    with pytest.raises(ConfigurationError, match="no eval cases"):
        load_adk_eval_set(bad, weather_agent())
    assert re.fullmatch(r"weather_set/\w+", load_adk_eval_set(
        DATA / "weather.evalset.json", weather_agent(), user_simulator_model="gpt-4o")[0].name)


def _one_turn_set(tmp_path: Path, expected_calls: list[dict[str, Any]], criteria: dict[str, Any]) -> tuple[Path, Path]:
    evalset = tmp_path / "one.evalset.json"
    evalset.write_text(json.dumps({"eval_set_id": "one", "eval_cases": [{"eval_id": "paris", "conversation": [{
        "user_content": {"parts": [{"text": "What is the weather in Paris?"}]},
        "final_response": {"parts": [{"text": "It is sunny in Paris, 21 degrees."}]},
        "intermediate_data": {"tool_uses": expected_calls},
    }]}]}))
    config = tmp_path / "test_config.json"
    config.write_text(json.dumps({"criteria": criteria}))
    return evalset, config


async def test_every_criterion_is_kept_and_one_that_cannot_run_marks_the_case_not_evaluated(tmp_path: Path) -> None:
    evalset, config = _one_turn_set(tmp_path, [{"name": "get_weather", "args": {"city": "Paris"}}], {
        "tool_trajectory_avg_score": 1.0, "response_match_score": 0.5, "team_tone_check_v3": {"threshold": 0.9},
    })
    (case,) = load_adk_eval_set(evalset, weather_agent(), config_path=config, tool_mocks=passthrough(get_weather))
    assert [m.name for m in case.metrics] == ["tool_trajectory_avg_score", "response_match_score", "team_tone_check_v3"]
    result = (await run_eval_suite([case])).results[0]
    assert result.metrics["tool_trajectory_avg_score"].passed and result.metrics["response_match_score"].passed
    assert result.status == "not_evaluated"
    assert not result.metrics["team_tone_check_v3"].evaluated
    assert "team_tone_check_v3" in (result.not_evaluated_reason or "")
    assert "not supported" in result.metrics["team_tone_check_v3"].evidence[0]


@pytest.mark.parametrize(
    ("match_type", "expected_calls", "google_adk_score"),
    [
        # Partial credit would give 0.5 here and pass a 0.5 threshold; google-adk scores the invocation 0.
        ("IN_ORDER", [{"name": "get_weather", "args": {"city": "Paris"}}, {"name": "get_weather", "args": {"city": "Rome"}}], 0.0),
        ("ANY_ORDER", [{"name": "get_weather", "args": {"city": "Paris"}}, {"name": "get_weather", "args": {"city": "Oslo"}}], 0.0),
        ("EXACT", [{"name": "get_weather", "args": {"city": "Paris"}}, {"name": "get_weather", "args": {"city": "Paris"}}], 0.0),
        ("IN_ORDER", [{"name": "get_weather", "args": {"city": "Paris"}}], 1.0),
    ],
)
async def test_imported_trajectory_criteria_keep_google_adks_all_or_nothing_scores(
    tmp_path: Path, match_type: str, expected_calls: list[dict[str, Any]], google_adk_score: float
) -> None:
    evalset, config = _one_turn_set(tmp_path, expected_calls, {
        "tool_trajectory_avg_score": {"threshold": 0.5, "match_type": match_type}})
    (case,) = load_adk_eval_set(evalset, weather_agent(), config_path=config, tool_mocks=passthrough(get_weather))
    result = (await run_eval_suite([case])).results[0]
    assert result.metrics["tool_trajectory_avg_score"].score == google_adk_score
    assert result.status == ("passed" if google_adk_score >= 0.5 else "failed")


async def test_ignore_args_compares_names_only(tmp_path: Path) -> None:
    evalset, config = _one_turn_set(tmp_path, [{"name": "get_weather", "args": {"city": "Oslo"}}], {
        "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "EXACT", "ignore_args": True}})
    (case,) = load_adk_eval_set(evalset, weather_agent(), config_path=config, tool_mocks=passthrough(get_weather))
    assert (await run_eval_suite([case])).results[0].metrics["tool_trajectory_avg_score"].score == 1.0


@pytest.mark.parametrize(
    ("criterion", "message"),
    [
        ({"threshold": 1.0, "match_type": "FUZZY"}, "match_type must be one of EXACT, IN_ORDER, ANY_ORDER"),
        ({"threshold": "high"}, "threshold must be a number from 0 to 1"),
        (1.5, "threshold must be a number from 0 to 1"),
    ],
)
def test_a_bad_criterion_is_refused_with_how_to_fix_it(tmp_path: Path, criterion: Any, message: str) -> None:
    evalset, config = _one_turn_set(tmp_path, [], {"tool_trajectory_avg_score": criterion})
    with pytest.raises(ConfigurationError, match=message):
        load_adk_eval_set(evalset, weather_agent(), config_path=config, tool_mocks=passthrough(get_weather))
