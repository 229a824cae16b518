"""The Metric protocol, MetricResult, and scoring a trace with a list of metrics."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field, model_validator
from pydantic_core import PydanticCustomError

from ..._callables import call_maybe_async
from ...agents.llm_agent import LlmAgent
from ...errors import ConfigurationError
from ...types import Content, Event
from ..trace import Trace


class MetricResult(BaseModel):
    """One metric's verdict on a trace.

    Attributes:
        passed: whether the trace meets the metric.
        score: a number in [0, 1] where the metric has one (ROUGE-1 F1, trajectory match, judge vote share).
        value: what was measured (a state value, a count); JSON.
        evidence: short human-readable reasons.
        evaluated: False when the metric could not check the trace at all (a criterion nothing here
            can run, a comparison without its reference); such a result never passes, and its case is
            ``not_evaluated`` unless another metric failed. ``evidence`` says why.
    """

    passed: bool
    score: float | None = None
    value: Any = None
    evidence: list[str] = Field(default_factory=list)
    evaluated: bool = True

    def __init__(
        self, passed: bool, score: float | None = None, value: Any = None, evidence: list[str] | None = None, **data: Any
    ) -> None:
        # Positional like the seed's shape (MetricResult(True, 0.9)); pydantic models are keyword-only.
        super().__init__(passed=passed, score=score, value=value, evidence=evidence or [], **data)

    @model_validator(mode="after")
    def _not_evaluated_never_passes(self) -> MetricResult:
        if self.passed and not self.evaluated:
            raise PydanticCustomError(  # pydantic's own error type: the model's ValidationError carries it
                "not_evaluated_passes", "a metric result that was not evaluated cannot pass; return passed=False with evaluated=False"
            )
        return self


JudgeRun = Callable[[LlmAgent, Content], Awaitable[list[Event]]]
"""Runs a judge agent on one message in a scratch session and returns its events (through the
engine, so under the durable runtime the model call is an activity)."""


@dataclass(frozen=True)
class MetricContext:
    """What a metric may use besides the trace: a way to call a judge model."""

    run_judge: JudgeRun | None = None


@runtime_checkable
class Metric(Protocol):
    """Scores a trace. ``evaluate`` may be sync or async and must read only ``trace`` (and use
    ``ctx.run_judge`` for model calls), so it scores stored sessions as well as simulated runs.

    A metric that runs agents (a judge) lists them in ``agents``, so a durable worker can register
    them (adk_core.eval.apps.case_apps).
    """

    @property
    def name(self) -> str: ...  # read-only, so frozen dataclasses are metrics too

    def evaluate(self, trace: Trace, ctx: MetricContext) -> MetricResult | Awaitable[MetricResult]: ...


@dataclass(frozen=True)
class FunctionMetric:
    """A metric from a function of the trace returning a bool or a MetricResult."""

    name: str
    fn: Callable[[Trace], bool | MetricResult | Awaitable[bool | MetricResult]]

    async def evaluate(self, trace: Trace, ctx: MetricContext) -> MetricResult:
        result = await call_maybe_async(lambda: self.fn(trace))
        return result if isinstance(result, MetricResult) else MetricResult(passed=bool(result))


@dataclass(frozen=True)
class UnsupportedMetric:
    """A metric asked for (by an imported eval set, say) that cannot run here: it reports itself as not
    evaluated, so its case is never counted as passed."""

    name: str
    reason: str

    def evaluate(self, trace: Trace, ctx: MetricContext) -> MetricResult:
        return MetricResult(passed=False, evaluated=False, evidence=[self.reason])


def unsupported_metric(name: str, reason: str) -> UnsupportedMetric:
    """A metric named ``name`` that is always "not evaluated", with ``reason`` as its evidence."""
    return UnsupportedMetric(name, reason)


def metric(name: str, fn: Callable[[Trace], Any]) -> FunctionMetric:
    """A custom metric: ``metric("short", lambda trace: len(trace.events) < 30)``."""
    return FunctionMetric(name, fn)


def check_metrics(metrics: Sequence[Any], *, where: str = "metrics") -> None:
    names: set[str] = set()
    for m in metrics:
        name = getattr(m, "name", None)
        if not isinstance(name, str) or not name or not callable(getattr(m, "evaluate", None)):
            raise ConfigurationError(f"{where}: {m!r} is not a Metric (it needs a name and evaluate(trace, ctx))")
        if name in names:
            raise ConfigurationError(f"{where}: two metrics are named {name!r}; metric names must be unique")
        names.add(name)


async def evaluate_metrics(
    metrics: Sequence[Metric], trace: Trace, ctx: MetricContext | None = None
) -> tuple[dict[str, MetricResult], dict[str, str]]:
    """Score ``trace`` with every metric: ``(results, errors)``.

    A metric that raises does not stop the others: it gets a failed result and its error
    (``"TypeName: message"``) is reported in ``errors`` under its name.
    """
    ctx = ctx or MetricContext()
    results: dict[str, MetricResult] = {}
    errors: dict[str, str] = {}
    for m in metrics:
        try:
            result = await call_maybe_async(lambda m=m: m.evaluate(trace, ctx))
            if not isinstance(result, MetricResult):
                raise ConfigurationError(f"evaluate() returned {type(result).__name__}, not a MetricResult")
        except Exception as error:  # noqa: BLE001  (reported as the metric's error; other metrics still run)
            message = f"{type(error).__name__}: {error}"
            errors[m.name] = message
            result = MetricResult(passed=False, evidence=[f"metric raised {message}"])
        results[m.name] = result
    return results, errors


def agents_of(metrics: Sequence[Any]) -> list[Any]:
    """The agents metrics run (judges), for registration with a durable worker."""
    return [a for m in metrics for a in getattr(m, "agents", ())]
