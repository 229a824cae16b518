"""Differential check: our all-or-nothing tool_trajectory scores against google-adk's TrajectoryEvaluator.

Imported google-adk criteria use ``tool_trajectory(..., credit="all_or_nothing")`` so that an
imported threshold means what it meant in google-adk. This script draws random invocations (a few
tool names, small integer arguments) and asserts that, for EXACT / IN_ORDER / ANY_ORDER, with and
without ``ignore_args``, every invocation's score and their mean are the same in both.

Not part of the test suite (google-adk is only in the ``bench`` extra); the unit tests keep the
scores it produced as recorded values (tests/unit/eval/test_eval_trajectory_scoring.py).

Run:  pip install -e '.[bench]'  then  python bench/compare_trajectory_google_adk.py [--cases 2000] [--seed 7]
"""

from __future__ import annotations

import argparse
import random
from typing import Any

from google.adk.evaluation.eval_case import IntermediateData, Invocation
from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator
from google.genai import types

from adk_core.eval.metrics.trajectory import ExpectedCall, match_score
from adk_core.types import FunctionCall

MATCHES = {"EXACT": "exact", "IN_ORDER": "in_order", "ANY_ORDER": "any_order"}


def _calls(rng: random.Random) -> list[tuple[str, dict[str, Any]]]:
    return [(rng.choice("abc"), {"x": rng.randint(0, 2)} if rng.random() < 0.6 else {}) for _ in range(rng.randint(0, 5))]


def _invocation(calls: list[tuple[str, dict[str, Any]]]) -> Invocation:
    return Invocation(user_content=types.Content(parts=[types.Part(text="go")]),
                      intermediate_data=IntermediateData(tool_uses=[types.FunctionCall(name=n, args=a) for n, a in calls]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000, help="random eval cases (each 1-3 invocations)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    checked = 0
    for _ in range(args.cases):
        turns = [(_calls(rng), _calls(rng)) for _ in range(rng.randint(1, 3))]  # (actual, expected) per invocation
        for match_type, match in MATCHES.items():
            for ignore_args in (False, True):
                criterion = ToolTrajectoryCriterion(threshold=0.5, match_type=match_type, ignore_args=ignore_args)
                theirs = TrajectoryEvaluator(eval_metric=EvalMetric(metric_name="t", criterion=criterion)).evaluate_invocations(
                    [_invocation(a) for a, _ in turns], [_invocation(e) for _, e in turns])
                ours = [match_score([FunctionCall(name=n, args=x) for n, x in actual], [ExpectedCall(n, x) for n, x in expected],
                                    match, compare_args=not ignore_args, credit="all_or_nothing")  # type: ignore[arg-type]
                        for actual, expected in turns]  # fmt: skip
                assert ours == [p.score for p in theirs.per_invocation_results], (match_type, ignore_args, turns, ours)
                assert sum(ours) / len(ours) == theirs.overall_score
                checked += 1
    print(f"{checked} comparisons ({args.cases} cases x 3 match types x ignore_args on/off): identical scores")


if __name__ == "__main__":
    main()
