"""google-adk's judged criteria on import: each runs through our own llm_judge with the criterion's
judge model and sample count, unit by unit (turns, or the whole conversation), and a scenario case
is scored on them with a simulated user."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from test_eval_adk_import import DATA, _simulator, weather_agent

from adk_core import LlmRequest, ScriptedModel
from adk_core.errors import ConfigurationError
from adk_core.eval import case_apps, load_adk_eval_set, run_eval_suite
from adk_core.eval.adk_criteria import GOOGLE_ADK_NUM_SAMPLES, JudgedCriterion

asked: list[str] = []


def _judge(request: LlmRequest) -> str:
    """Passes a turn whose last agent line agrees with its reference (same sky word); rubric turns get 0.5."""
    message = request.contents[-1].text or ""
    asked.append(message)
    rubric, transcript = message.split("\nTranscript:\n", 1)
    last_reply = [line for line in transcript.splitlines() if line.startswith("[weather_agent]") and " calls " not in line][-1]
    if "Rubrics:" in rubric:
        return json.dumps({"passed": False, "score": 0.5, "reasoning": "meets one of two rubrics"})
    reference = re.search(r"Reference answer:\n(.*)", rubric)
    if reference:
        sky = next(w for w in ("sunny", "rainy") if w in reference.group(1))
        return json.dumps({"passed": sky in last_reply, "reasoning": f"reference says {sky}"})
    return json.dumps({"passed": True, "score": 1, "reasoning": "fine"})


JUDGE = ScriptedModel(_judge, name="scripted-judge")


def _config(tmp_path: Path, criteria: dict[str, Any]) -> Path:
    config = tmp_path / "test_config.json"
    config.write_text(json.dumps({"criteria": criteria}))
    return config


async def test_final_response_match_v2_votes_per_turn_with_the_criteria_sample_count(tmp_path: Path) -> None:
    config = _config(tmp_path, {"final_response_match_v2": {
        "threshold": 0.5, "judge_model_options": {"judge_model": "gemini-2.5-pro", "num_samples": 3}}})
    (case, *_) = load_adk_eval_set(DATA / "weather.evalset.json", weather_agent(), config_path=config,
                                   user_simulator_model=ScriptedModel(_simulator))
    (criterion,) = case.metrics
    assert isinstance(criterion, JudgedCriterion)
    assert (criterion.judge.agent.model, criterion.judge.num_samples) == ("gemini-2.5-pro", 3)  # the suite's judge
    (case, *_) = load_adk_eval_set(DATA / "weather.evalset.json", weather_agent(), config_path=config,
                                   user_simulator_model=ScriptedModel(_simulator), judge_model=JUDGE)
    assert [a.name for a in case_apps(case).judges.root_agent.sub_agents] == ["judge_final_response_match_v2"]
    asked.clear()
    result = (await run_eval_suite([case])).results[0]
    assert result.status == "passed", (result.error, result.metrics)
    metric = result.metrics["final_response_match_v2"]
    assert (metric.score, metric.value) == (1.0, [1.0, 1.0])
    assert len(asked) == 2 * 3  # two turns, three samples each
    assert "Reference answer:\nIt is sunny in Paris" in asked[0] and "Reference answer:\nIt is rainy in Rome" in asked[3]
    assert "[... " not in asked[0]


async def test_rubric_quality_is_the_mean_share_of_rubrics_met(tmp_path: Path) -> None:
    rubrics = [{"rubric_id": "temp", "rubric_content": {"text_property": "Gives the temperature in Celsius."}},
               {"rubric_id": "wear", "rubricContent": {"textProperty": "Suggests what to wear."}}]
    config = _config(tmp_path, {"rubric_based_final_response_quality_v1": {"threshold": 0.8, "rubrics": rubrics,
                                                                           "judge_model_options": {"num_samples": 1}}})
    (case, *_) = load_adk_eval_set(DATA / "weather.evalset.json", weather_agent(), config_path=config,
                                   user_simulator_model=ScriptedModel(_simulator), judge_model=JUDGE)
    asked.clear()
    result = (await run_eval_suite([case])).results[0]
    metric = result.metrics["rubric_based_final_response_quality_v1"]
    assert (metric.score, metric.value, metric.passed, result.status) == (0.5, [0.5, 0.5], False, "failed")
    assert "- Gives the temperature in Celsius.\n- Suggests what to wear." in asked[0]


async def test_a_scenario_case_is_scored_on_its_judged_criteria_with_a_simulated_user(tmp_path: Path) -> None:
    config = _config(tmp_path, {"multi_turn_task_success_v1": 1.0, "per_turn_user_simulator_quality_v1": 1.0,
                                "final_response_match_v2": 0.8, "rubric_based_tool_use_quality_v1": 0.5})
    trip = load_adk_eval_set(DATA / "weather.evalset.json", weather_agent(), config_path=config,
                             user_simulator_model=ScriptedModel(_simulator), judge_model=JUDGE)[2]
    asked.clear()
    result = (await run_eval_suite([trip])).results[0]
    assert [e.text for e in result.events if e.author == "user"] == ["I am planning a trip.", "What is the weather in Paris?"]
    assert result.metrics["multi_turn_task_success_v1"].value == [1.0]
    assert result.metrics["per_turn_user_simulator_quality_v1"].value == [1.0, 1.0]  # one per user turn
    assert len(asked) == 5 + 2 * 5  # google-adk's default of 5 samples: the conversation once, each user turn once
    assert "Ask for the weather in Paris" in asked[-1] and "A traveller who writes short messages." in asked[-1]
    # No reference answers in a scenario, no rubrics in this config: those two could not run, and say why.
    assert "reference answers" in result.metrics["final_response_match_v2"].evidence[0]
    assert "needs rubrics" in result.metrics["rubric_based_tool_use_quality_v1"].evidence[0]
    assert result.status == "not_evaluated"


def test_the_google_adk_sample_default_and_bad_judge_options(tmp_path: Path) -> None:
    (case, *_) = load_adk_eval_set(DATA / "weather.evalset.json", weather_agent(), user_simulator_model="m",
                                   config_path=_config(tmp_path, {"hallucinations_v1": 0.9}))
    assert case.metrics[0].judge.num_samples == GOOGLE_ADK_NUM_SAMPLES == 5  # type: ignore[attr-defined]
    for options, message in [({"num_samples": 0}, "num_samples must be a whole number >= 1"),
                             ({"judge_model": 3}, "judge_model must be a model name")]:
        config = _config(tmp_path, {"safety_v1": {"threshold": 0.9, "judge_model_options": options}})
        with pytest.raises(ConfigurationError, match=message):
            load_adk_eval_set(DATA / "weather.evalset.json", weather_agent(), user_simulator_model="m", config_path=config)
    config = _config(tmp_path, {"rubric_based_final_response_quality_v1": {"threshold": 0.9, "rubrics": [{"rubric_id": "x"}]}})
    with pytest.raises(ConfigurationError, match="text_property"):
        load_adk_eval_set(DATA / "weather.evalset.json", weather_agent(), user_simulator_model="m", config_path=config)


async def test_a_scenario_case_whose_criteria_all_ran_and_passed_passes(tmp_path: Path) -> None:
    config = _config(tmp_path, {"multi_turn_task_success_v1": {"threshold": 1.0, "judge_model_options": {"num_samples": 1}}})
    trip = load_adk_eval_set(DATA / "weather.evalset.json", weather_agent(), config_path=config,
                             user_simulator_model=ScriptedModel(_simulator), judge_model=JUDGE)[2]
    result = (await run_eval_suite([trip])).results[0]
    assert result.status == "passed" and result.metrics["multi_turn_task_success_v1"].score == 1.0
