"""tool_trajectory's scores: partial credit by longest common subsequence (in_order) and by maximum
matching (any_order), checked against brute-force references; and google-adk's all-or-nothing
scoring per invocation, which imported criteria keep."""

from __future__ import annotations

from itertools import combinations, permutations
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adk_core.eval import MetricContext, Trace, tool_trajectory
from adk_core.eval.metrics.trajectory import ExpectedCall, match_score
from adk_core.types import Content, Event, FunctionCall, Part

CTX = MetricContext()


def _fc(name: str, **args: Any) -> FunctionCall:
    return FunctionCall(name=name, args=args)


def test_in_order_gives_credit_for_the_longest_common_subsequence() -> None:
    # One expected call missing must not push the scan past the end: [a, c] still appear in order.
    expected = [ExpectedCall("b"), ExpectedCall("a"), ExpectedCall("c")]
    assert match_score([_fc("a"), _fc("c")], expected, "in_order", compare_args=False) == pytest.approx(2 / 3)


def test_any_order_matches_maximally_not_greedily() -> None:
    # A name-only expectation must not take the one call the specific expectation needed.
    expected = [ExpectedCall("a"), ExpectedCall("a", {"x": 1})]
    actual = [_fc("a", x=1), _fc("a", x=2)]
    assert match_score(actual, expected, "any_order", compare_args=True) == 1.0


# --- brute-force references ---------------------------------------------------------------------
def _brute_in_order(actual: list[FunctionCall], expected: list[ExpectedCall], compare_args: bool) -> float:
    if not expected:
        return 1.0
    for k in range(min(len(actual), len(expected)), 0, -1):
        for e_idx in combinations(range(len(expected)), k):
            for a_idx in combinations(range(len(actual)), k):
                if all(expected[i].matches(actual[j], compare_args) for i, j in zip(e_idx, a_idx, strict=True)):
                    return k / len(expected)
    return 0.0


def _brute_any_order(actual: list[FunctionCall], expected: list[ExpectedCall], compare_args: bool) -> float:
    if not expected:
        return 1.0
    for k in range(min(len(actual), len(expected)), 0, -1):
        for e_idx in combinations(range(len(expected)), k):
            for a_idx in permutations(range(len(actual)), k):
                if all(expected[i].matches(actual[j], compare_args) for i, j in zip(e_idx, a_idx, strict=True)):
                    return k / len(expected)
    return 0.0


_names = st.sampled_from(["a", "b", "c"])
_args = st.fixed_dictionaries({}, optional={"x": st.integers(0, 2)})
_actual = st.lists(st.builds(lambda n, a: FunctionCall(name=n, args=a), _names, _args), max_size=6)
_expected = st.lists(st.builds(ExpectedCall, _names, st.none() | _args), max_size=5)


@settings(max_examples=300, deadline=None)
@given(actual=_actual, expected=_expected, compare_args=st.booleans())
def test_in_order_equals_the_brute_force_longest_common_subsequence(
    actual: list[FunctionCall], expected: list[ExpectedCall], compare_args: bool
) -> None:
    assert match_score(actual, expected, "in_order", compare_args) == pytest.approx(
        _brute_in_order(actual, expected, compare_args))


@settings(max_examples=300, deadline=None)
@given(actual=_actual, expected=_expected, compare_args=st.booleans())
def test_any_order_equals_the_brute_force_maximum_matching(
    actual: list[FunctionCall], expected: list[ExpectedCall], compare_args: bool
) -> None:
    score = match_score(actual, expected, "any_order", compare_args)
    assert score == pytest.approx(_brute_any_order(actual, expected, compare_args))
    # Order never matters, and a full in-order match is a full any-order match.
    assert match_score(list(reversed(actual)), expected, "any_order", compare_args) == pytest.approx(score)
    assert score >= match_score(actual, expected, "in_order", compare_args) - 1e-9


@settings(max_examples=200, deadline=None)
@given(actual=_actual, expected=_expected, compare_args=st.booleans())
def test_all_or_nothing_is_one_exactly_when_partial_credit_is_full(
    actual: list[FunctionCall], expected: list[ExpectedCall], compare_args: bool
) -> None:
    for match in ("exact", "in_order", "any_order"):
        partial = match_score(actual, expected, match, compare_args)  # type: ignore[arg-type]
        binary = match_score(actual, expected, match, compare_args, credit="all_or_nothing")  # type: ignore[arg-type]
        assert binary == (1.0 if partial == 1.0 else 0.0)


# --- google-adk's semantics, per invocation --------------------------------------------------------
def _turn(invocation: str, *calls: tuple[str, dict[str, Any]]) -> list[Event]:
    return [
        Event(author="user", invocation_id=invocation, content=Content.user("go")),
        *(Event(author="bot", invocation_id=invocation, content=Content(role="model", parts=[Part.from_function_call(n, a)]))
          for n, a in calls),
        Event(author="bot", invocation_id=invocation, content=Content(role="model", parts=[Part(text="done")])),
    ]


# Three invocations; google-adk's TrajectoryEvaluator scores each 1.0 when the match type holds
# over the whole invocation, else 0.0, and averages. Recorded from its documented semantics and
# confirmed with google-adk 2.13.0 itself (bench/compare_trajectory_google_adk.py does it at random).
TRACE = Trace.from_events([
    *_turn("i1", ("a", {"x": 1}), ("b", {})),          # expected [a(x=1), b]
    *_turn("i2", ("c", {}), ("a", {"x": 1})),          # expected [a(x=1), c]
    *_turn("i3", ("a", {"x": 2})),                      # expected [b, a(x=2)]
])
PER_TURN = [[("a", {"x": 1}), ("b", {})], [("a", {"x": 1}), ("c", {})], [("b", {}), ("a", {"x": 2})]]


@pytest.mark.parametrize(
    ("match", "google_adk_scores", "partial_scores"),
    [
        ("exact", [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]),
        ("in_order", [1.0, 0.0, 0.0], [1.0, 0.5, 0.5]),
        ("any_order", [1.0, 1.0, 0.0], [1.0, 1.0, 0.5]),
    ],
)
async def test_all_or_nothing_per_invocation_scores_as_google_adk(
    match: Any, google_adk_scores: list[float], partial_scores: list[float]
) -> None:
    adk = await tool_trajectory(per_turn=PER_TURN, match=match, credit="all_or_nothing", threshold=0.6).evaluate(TRACE, CTX)
    assert adk.value == google_adk_scores
    assert adk.score == pytest.approx(sum(google_adk_scores) / 3)
    assert adk.passed is (adk.score >= 0.6)
    partial = await tool_trajectory(per_turn=PER_TURN, match=match).evaluate(TRACE, CTX)
    assert partial.value == pytest.approx(partial_scores)


def test_an_unknown_credit_is_refused_with_the_choices() -> None:
    from adk_core.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="all_or_nothing"):
        tool_trajectory(["a"], credit="most")  # type: ignore[arg-type]
