"""tool_trajectory: compare the tools the system called with the expected ones.

Match types (google-adk's, and the usual ones):
    exact       the same calls, in the same order, nothing else
    in_order    the expected calls appear in this order; other calls may come between
    any_order   every expected call appears (each actual call counts once); order and extras ignored

Credit (``credit=``):
    partial         (default) exact: 1 or 0; in_order: the longest common subsequence of expected and
                    actual calls over the number expected; any_order: the largest one-to-one matching
                    of expected to actual calls over the number expected. So one missing call costs one
                    call's share, and a name-only expectation never takes the call a specific one needs.
    all_or_nothing  google-adk's TrajectoryEvaluator: 1 when the match type holds in full, else 0
                    (per turn with ``per_turn``, then averaged). Imported google-adk criteria use it, so
                    their thresholds mean what they meant there.

With ``compare_args`` a call matches only with equal arguments; without, names alone. Expected calls
are ``"name"`` (name only, always), ``("name", {args})``, ``{"name": ..., "args": {...}}`` or a
FunctionCall. ``per_turn`` compares each system turn with its own list (google-adk eval sets) and
averages (google-adk's tool_trajectory_avg_score). The metric passes when the score reaches
``threshold`` (default 1.0: every call, every turn).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ...errors import ConfigurationError
from ...types import REQUEST_CONFIRMATION_FUNCTION, FunctionCall
from ..trace import Trace
from .base import MetricContext, MetricResult

MatchType = Literal["exact", "in_order", "any_order"]
_MATCHES = ("exact", "in_order", "any_order")
Credit = Literal["partial", "all_or_nothing"]
_CREDITS = ("partial", "all_or_nothing")


@dataclass(frozen=True)
class ExpectedCall:
    name: str
    args: Mapping[str, Any] | None = None
    """None: any arguments."""

    def matches(self, call: FunctionCall, compare_args: bool) -> bool:
        if call.name != self.name:
            return False
        return not compare_args or self.args is None or dict(call.args) == dict(self.args)

    def __str__(self) -> str:
        return self.name if self.args is None else f"{self.name}({dict(self.args)})"


def expected_call(spec: Any) -> ExpectedCall:
    if isinstance(spec, ExpectedCall):
        return spec
    if isinstance(spec, str):
        return ExpectedCall(spec)
    if isinstance(spec, FunctionCall):
        return ExpectedCall(spec.name, dict(spec.args))
    if isinstance(spec, Mapping) and isinstance(spec.get("name"), str):
        return ExpectedCall(spec["name"], spec.get("args"))
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
        return ExpectedCall(spec[0], spec[1])
    raise ConfigurationError(
        f"expected tool call {spec!r}: give 'name', ('name', {{args}}), {{'name': ..., 'args': {{...}}}} or a FunctionCall"
    )


def match_score(
    actual: Sequence[FunctionCall], expected: Sequence[ExpectedCall], match: MatchType, compare_args: bool,
    credit: Credit = "partial",
) -> float:
    """1.0 for a full match. exact: 1 or 0; in_order / any_order: the share of expected calls found
    (longest common subsequence / maximum matching), or with ``all_or_nothing`` 1 only when all are."""
    if match == "exact":
        return float(len(actual) == len(expected) and all(e.matches(a, compare_args) for a, e in zip(actual, expected, strict=False)))
    if not expected:
        return 1.0
    found = _common_subsequence(actual, expected, compare_args) if match == "in_order" else _matching(actual, expected, compare_args)
    if credit == "all_or_nothing":
        return float(found == len(expected))
    return found / len(expected)


def _common_subsequence(actual: Sequence[FunctionCall], expected: Sequence[ExpectedCall], compare_args: bool) -> int:
    """Length of the longest common subsequence, "common" meaning ``expected[i].matches(actual[j])``."""
    previous = [0] * (len(actual) + 1)
    for e in expected:
        row = [0] * (len(actual) + 1)
        for j, a in enumerate(actual):
            row[j + 1] = previous[j] + 1 if e.matches(a, compare_args) else max(previous[j + 1], row[j])
        previous = row
    return previous[-1]


def _matching(actual: Sequence[FunctionCall], expected: Sequence[ExpectedCall], compare_args: bool) -> int:
    """Size of a maximum bipartite matching of expected to actual calls (Kuhn's augmenting paths:
    trajectories are short, so O(expected x edges) is nothing)."""
    edges = [[j for j, a in enumerate(actual) if e.matches(a, compare_args)] for e in expected]
    owner: list[int | None] = [None] * len(actual)  # actual call -> the expected call it is matched to

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges[i]:
            if j in seen:
                continue
            seen.add(j)
            current = owner[j]
            if current is None or augment(current, seen):
                owner[j] = i
                return True
        return False

    return sum(augment(i, set()) for i in range(len(expected)))


@dataclass(frozen=True)
class ToolTrajectory:
    name: str
    expected: tuple[ExpectedCall, ...] | None
    per_turn: tuple[tuple[ExpectedCall, ...], ...] | None
    match: MatchType
    compare_args: bool
    ignore: tuple[str, ...]
    threshold: float = 1.0
    credit: Credit = "partial"

    async def evaluate(self, trace: Trace, ctx: MetricContext) -> MetricResult:
        if self.per_turn is None:
            actual = trace.tool_calls(ignore=self.ignore)
            score = match_score(actual, self.expected or (), self.match, self.compare_args, self.credit)
            return MetricResult(passed=score >= self.threshold, score=score, value=[c.name for c in actual],
                                evidence=[_describe(actual, self.expected or ())])
        if not self.per_turn:
            # No turn to compare: not a pass (any calls would do); per_turn=[[]] still expects no calls.
            return MetricResult(passed=False, evaluated=False,
                                evidence=[f"{self.name}: per_turn lists no turn, so nothing was compared"])  # fmt: skip
        turns = trace.turns()
        scores, evidence = [], []
        for i, expected in enumerate(self.per_turn):
            actual = Trace(turns[i]).tool_calls(ignore=self.ignore) if i < len(turns) else []
            scores.append(match_score(actual, expected, self.match, self.compare_args, self.credit))
            evidence.append(f"turn {i + 1}: " + _describe(actual, expected))
        score = sum(scores) / len(scores)
        return MetricResult(passed=score >= self.threshold, score=score, value=scores, evidence=evidence)


def _describe(actual: Sequence[FunctionCall], expected: Sequence[ExpectedCall]) -> str:
    got = ", ".join(f"{c.name}({dict(c.args)})" for c in actual) or "no calls"
    want = ", ".join(str(e) for e in expected) or "no calls"
    return f"expected [{want}], got [{got}]"


def tool_trajectory(
    expected: Sequence[Any] | None = None,
    *,
    per_turn: Sequence[Sequence[Any]] | None = None,
    match: MatchType = "exact",
    compare_args: bool = True,
    name: str = "tool_trajectory",
    ignore: Sequence[str] = (REQUEST_CONFIRMATION_FUNCTION,),
    threshold: float = 1.0,
    credit: Credit = "partial",
) -> ToolTrajectory:
    """Pass when the system's tool calls match ``expected`` (the whole run) or ``per_turn`` (each system turn).

    Args:
        expected: the expected calls over the whole run.
        per_turn: one list of expected calls per system turn, instead of ``expected`` (an empty
            list compares nothing: the result is not evaluated).
        match: ``exact`` (default), ``in_order`` or ``any_order``.
        compare_args: compare arguments too (default), or names only.
        name: the metric's name.
        ignore: tool names left out of the actual calls (confirmation requests by default).
        threshold: the lowest passing score (per_turn: the mean over turns).
        credit: ``partial`` (default: the share of expected calls matched) or ``all_or_nothing``
            (google-adk's: 1 for a full match, else 0; per turn, then averaged).
    """
    if (expected is None) == (per_turn is None):
        raise ConfigurationError("tool_trajectory: give expected=[...] or per_turn=[[...], ...], exactly one")
    if match not in _MATCHES:
        raise ConfigurationError(f"tool_trajectory: match must be one of {_MATCHES}, not {match!r}")
    if credit not in _CREDITS:
        raise ConfigurationError(f"tool_trajectory: credit must be one of {_CREDITS}, not {credit!r}")
    if not 0.0 <= threshold <= 1.0:
        raise ConfigurationError(f"tool_trajectory: threshold must be within [0, 1], not {threshold}")
    return ToolTrajectory(
        name=name,
        expected=tuple(expected_call(s) for s in expected) if expected is not None else None,
        per_turn=tuple(tuple(expected_call(s) for s in turn) for turn in per_turn) if per_turn is not None else None,
        match=match,
        compare_args=compare_args,
        ignore=tuple(ignore),
        threshold=threshold,
        credit=credit,
    )
