"""evaluate_trace: score any trace (a stored production session, say) with metrics, outside a case."""

from __future__ import annotations

from collections.abc import Sequence

from ..agents.llm_agent import LlmAgent
from ..runner import InMemoryRunner
from ..sessions import Session
from ..types import Content, Event
from .metrics.base import JudgeRun, Metric, MetricContext, MetricResult, evaluate_metrics
from .trace import Trace


async def run_judge_in_process(agent: LlmAgent, message: Content) -> list[Event]:
    """Run a judge agent once, in a scratch in-memory session."""
    runner = InMemoryRunner(agent, app_name="eval-judge")
    return [e for e in await runner.run(message) if not e.partial]


async def evaluate_trace(
    metrics: Sequence[Metric], trace: Trace | Session, *, run_judge: JudgeRun | None = run_judge_in_process
) -> dict[str, MetricResult]:
    """Score a trace (or a session, e.g. loaded from Postgres) with ``metrics``.

    A metric that raises gets a failed result whose evidence says why.
    """
    if isinstance(trace, Session):
        trace = Trace.from_session(trace)
    results, _ = await evaluate_metrics(metrics, trace, MetricContext(run_judge=run_judge))
    return results
