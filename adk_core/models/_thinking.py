"""One thinking setting (ThinkingConfig), in each provider's terms: a token budget or an effort level."""

from __future__ import annotations

from .base import ThinkingConfig

EFFORT_BUDGETS = {"low": 2048, "medium": 8192, "high": 24576, "max": 32768}
"""Token budget for an effort level, for models that take a budget (Gemini 2.5, Claude 4.5/4.6)."""


def budget_of(thinking: ThinkingConfig) -> int | None:
    """The token budget ``thinking`` asks for; None leaves it to the model."""
    if thinking.budget_tokens is not None:
        return thinking.budget_tokens
    if thinking.effort == "none":
        return 0
    return EFFORT_BUDGETS.get(thinking.effort) if thinking.effort else None


def effort_of(thinking: ThinkingConfig) -> str | None:
    """The effort level ``thinking`` asks for: the nearest level at or above a budget; None: the model's."""
    if thinking.effort is not None:
        return thinking.effort
    budget = thinking.budget_tokens
    if budget is None:
        return None
    if budget == 0:
        return "none"
    return next((level for level, cap in EFFORT_BUDGETS.items() if budget <= cap), "max")


_SCALE = ("none", "minimal", "low", "medium", "high", "xhigh", "max")


def nearest_effort(effort: str, allowed: tuple[str, ...] | None) -> str:
    """``effort``, or the level of ``allowed`` nearest to it (the lower one on a tie)."""
    if not allowed or effort in allowed:
        return effort
    wanted = _SCALE.index(effort)
    return min(allowed, key=lambda level: (abs(_SCALE.index(level) - wanted), _SCALE.index(level)))
