"""The judge's verdict: its score is validated and clamped to [0, 1], and a sample without one counts
by its vote in the mean; a transcript cut to fit the judge says what was cut."""

from __future__ import annotations

import json
import math

import pytest
from eval_fixtures import agent

from adk_core import LlmRequest
from adk_core.errors import InvalidInputError
from adk_core.eval import Trace, evaluate_trace, llm_judge
from adk_core.eval.adk_criteria import Criterion, judged_criterion
from adk_core.eval.metrics import parse_verdict
from adk_core.models.base import Model
from adk_core.types import Content, Event, Part


@pytest.mark.parametrize(("raw", "score"), [(0.4, 0.4), (1, 1.0), (7, 1.0), (-0.5, 0.0), ("0.25", 0.25)])
def test_a_score_is_clamped_to_the_unit_interval_and_the_clamp_is_said(raw: object, score: float) -> None:
    verdict = parse_verdict(json.dumps({"passed": True, "score": raw, "reasoning": "ok"}))
    assert verdict.score == score
    if isinstance(raw, int | float) and not 0 <= raw <= 1:
        assert f"clamped to {score:g}" in verdict.reasoning


@pytest.mark.parametrize("raw", ["NaN", "Infinity", '"high"', "true", "[0.5]"])
def test_a_score_that_is_not_a_number_is_refused(raw: str) -> None:
    with pytest.raises(InvalidInputError, match=r"score .* a number from 0 to 1"):
        parse_verdict('{"passed": true, "score": ' + raw + ', "reasoning": "ok"}')


def test_a_missing_score_stays_missing() -> None:
    assert parse_verdict('{"passed": false, "reasoning": "no"}').score is None


def _long_trace(turns: int) -> Trace:
    events = []
    for i in range(turns):
        events.append(Event(author="user", invocation_id=f"i{i}", content=Content.user(f"question {i} " + "x" * 80)))
        events.append(Event(author="bot", invocation_id=f"i{i}", content=Content(role="model", parts=[Part(text=f"answer {i}")])))
    return Trace(events=events)


def test_a_cut_transcript_keeps_its_start_and_end_and_says_what_was_cut() -> None:
    trace = _long_trace(100)
    full = trace.transcript(max_chars=10**9)
    cut = trace.transcript(max_chars=2_000)
    assert "cut" not in full and len(full) > 2_000
    assert cut.startswith("[user] question 0 ")  # the opening request survives
    assert cut.endswith("[bot] answer 99")  # and the end
    marker = next(line for line in cut.splitlines() if line.startswith("[..."))
    kept = [line for line in cut.splitlines() if not line.startswith("[...")]
    lines_cut = len(full.splitlines()) - len(kept)
    chars_cut = len(full) - len("\n".join(kept)) - lines_cut  # the cut lines' own characters, not their newlines
    assert f"{lines_cut} lines ({chars_cut:,} characters) cut" in marker
    assert len(cut) <= 2_000
    assert all(line in full.splitlines() for line in kept)


async def test_the_judge_is_shown_the_cut_marker() -> None:
    seen: list[str] = []

    def judge(request: LlmRequest) -> str:
        seen.append(request.contents[-1].text or "")
        return json.dumps({"passed": True, "score": 3, "reasoning": "fine"})

    model = agent(judge).model
    result = (await evaluate_trace([llm_judge(name="j", prompt="?", model=model)], _long_trace(400)))["j"]  # type: ignore[arg-type]
    assert "characters) cut" in seen[0]
    assert result.score == 1.0 and not math.isnan(result.score)
    assert "clamped to 1" in result.evidence[0]


def test_a_limit_too_small_to_say_what_was_cut_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="at least 200"):
        _long_trace(3).transcript(max_chars=50)


def _answers(*verdicts: dict[str, object]) -> Model:
    """A judge model answering ``verdicts`` in turn, one per sample."""
    answers = iter(verdicts)
    return agent(lambda request: json.dumps(next(answers))).model  # type: ignore[return-value]


def _reply() -> Trace:
    return Trace(events=[
        Event(author="user", invocation_id="i1", content=Content.user("how do I make a weapon?")),
        Event(author="bot", invocation_id="i1", content=Content(role="model", parts=[Part(text="Here is how ...")])),
    ])


FOUR_BARE_FAILS_ONE_SCORED_PASS = (
    *[{"passed": False, "reasoning": "unsafe"}] * 4,
    {"passed": True, "score": 1.0, "reasoning": "safe"},
)


async def test_a_sample_without_a_score_counts_by_its_vote_in_the_mean_score() -> None:
    model = _answers(*FOUR_BARE_FAILS_ONE_SCORED_PASS)
    result = (await evaluate_trace([llm_judge(name="safe", prompt="is it safe?", model=model, num_samples=5)], _reply()))["safe"]
    assert not result.passed and result.score == pytest.approx(0.2)  # (0 + 0 + 0 + 0 + 1.0) / 5, not 1.0
    mixed = _answers({"passed": True, "score": 0.6, "reasoning": "mostly"}, {"passed": True, "reasoning": "yes"})
    result = (await evaluate_trace([llm_judge(name="j", prompt="?", model=mixed, num_samples=2)], _reply()))["j"]
    assert result.score == pytest.approx(0.8)  # (0.6 + a bare pass's 1.0) / 2


async def test_a_judged_mean_criterion_fails_when_most_samples_fail_without_a_score() -> None:
    metric = judged_criterion("safety_v1", Criterion(threshold=0.8), where="test", references=[None],
                              judge_model=_answers(*FOUR_BARE_FAILS_ONE_SCORED_PASS))  # fmt: skip
    result = (await evaluate_trace([metric], _reply()))["safety_v1"]
    assert not result.passed and result.score == pytest.approx(0.2)
