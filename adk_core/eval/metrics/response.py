"""response_match: ROUGE-1 between the system's final response and a reference.

ROUGE-1 F1 is computed here (a dozen lines) rather than with ``rouge-score``, which would bring
nltk, absl and numpy into adk_core for one formula. Tokens are lowercased runs of letters and
digits, as rouge-score tokenizes; unlike google-adk's use of it there is no Porter stemming, so
"booked" and "book" do not match and scores on inflected text can be a little lower.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import ConfigurationError
from ..trace import Trace
from .base import MetricContext, MetricResult

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def rouge1(candidate: str, reference: str) -> float:
    """ROUGE-1 F1 of ``candidate`` against ``reference`` (1.0 when both are empty)."""
    cand, ref = Counter(tokenize(candidate)), Counter(tokenize(reference))
    if not cand and not ref:
        return 1.0
    overlap = sum((cand & ref).values())
    if overlap == 0:
        return 0.0
    precision = overlap / sum(cand.values())
    recall = overlap / sum(ref.values())
    return 2 * precision * recall / (precision + recall)


@dataclass(frozen=True)
class ResponseMatch:
    name: str
    expected: str | None
    per_turn: tuple[str | None, ...] | None
    threshold: float

    async def evaluate(self, trace: Trace, ctx: MetricContext) -> MetricResult:
        if self.per_turn is None:
            actual = trace.final_response()
            score = rouge1(actual, self.expected or "")
            return MetricResult(passed=score >= self.threshold, score=score, value=actual,
                                evidence=[f"ROUGE-1 {score:.2f} (threshold {self.threshold}): {actual[:200]!r}"])
        turns = trace.turns()
        scores: list[float] = []
        evidence: list[str] = []
        for i, reference in enumerate(self.per_turn):
            if reference is None:
                continue  # no reference for this turn
            actual = trace.final_response(turns[i]) if i < len(turns) else ""
            score = rouge1(actual, reference)
            scores.append(score)
            evidence.append(f"turn {i + 1}: ROUGE-1 {score:.2f}: {actual[:200]!r}")
        if not scores:
            # Nothing was compared: not a pass (any reply would do), as the importer says for such cases.
            return MetricResult(passed=False, evaluated=False, evidence=[
                f"{self.name}: no turn has a reference (every per_turn entry is None), so nothing was compared"
            ])  # fmt: skip
        score = sum(scores) / len(scores)
        return MetricResult(passed=score >= self.threshold, score=score, value=scores, evidence=evidence)


def response_match(
    expected: str | None = None,
    *,
    per_turn: Sequence[str | None] | None = None,
    threshold: float = 0.8,
    name: str = "response_match",
) -> ResponseMatch:
    """Pass when the final response's ROUGE-1 F1 against ``expected`` reaches ``threshold``.

    Args:
        expected: the reference for the run's last final response.
        per_turn: one reference per system turn instead (None skips a turn); the mean score is
            compared with the threshold, as google-adk's response_match_score does. With no
            reference in any turn nothing is compared: the result is not evaluated.
        threshold: the lowest passing score (google-adk's default 0.8).
        name: the metric's name.
    """
    if (expected is None) == (per_turn is None):
        raise ConfigurationError("response_match: give expected='...' or per_turn=[...], exactly one")
    if not 0.0 <= threshold <= 1.0:
        raise ConfigurationError(f"response_match: threshold must be within [0, 1], not {threshold}")
    return ResponseMatch(name=name, expected=expected, per_turn=tuple(per_turn) if per_turn is not None else None,
                         threshold=threshold)
