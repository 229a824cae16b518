"""run_eval_suite: many cases in-process, concurrently by default (cases are fully isolated)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ..errors import ConfigurationError
from ..runtime import LocalRuntime
from .case import EvalCase
from .results import EvalResult, EvalSuiteResult, summarize
from .runner import run_eval


def check_suite(cases: Sequence[EvalCase]) -> None:
    if not cases:
        # An empty suite would pass (all of nothing): refuse it, as a case without metrics is not passed.
        raise ConfigurationError("eval suite: no cases; pass at least one EvalCase")
    names = [c.name for c in cases]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigurationError(f"eval suite: case names must be unique; {duplicates} appear more than once")


async def run_eval_suite(
    cases: Sequence[EvalCase],
    parallel: bool = True,
    max_concurrency: int | None = None,
    stop_on_first_failure: bool = False,
) -> EvalSuiteResult:
    """Run ``cases`` in this process.

    Args:
        cases: the cases (unique names).
        parallel: run cases concurrently (safe: each has its own runners and sessions).
        max_concurrency: at most this many cases at once (None: no bound; ignored when not parallel).
        stop_on_first_failure: start no further case once one has not passed; cases already running
            finish. The rest are counted as ``skipped``.

    Results are in the order of ``cases``.
    """
    check_suite(cases)
    if max_concurrency is not None and max_concurrency < 1:
        raise ConfigurationError(f"max_concurrency must be >= 1 or None, not {max_concurrency}")
    clock = LocalRuntime()
    started = clock.now()
    limit = max_concurrency if parallel else 1
    gate = asyncio.Semaphore(limit or len(cases) or 1)
    stopped = asyncio.Event()

    async def one(case: EvalCase) -> EvalResult | None:
        async with gate:
            if stopped.is_set():
                return None
            result = await run_eval(case)
            if stop_on_first_failure and not result.passed:
                stopped.set()
            return result

    outcomes = await asyncio.gather(*(one(c) for c in cases))
    results = [r for r in outcomes if r is not None]
    return EvalSuiteResult(
        summary=summarize(results, skipped=len(outcomes) - len(results)),
        results=results,
        duration_ms=(clock.now() - started) * 1000.0,
    )
