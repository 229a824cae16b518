"""run_eval_suite: many cases in-process, concurrently by default (cases are fully isolated);
select_cases: only some cases of a suite, by name (the CLI's ``--case``, the durable suite's ``cases``)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ..errors import ConfigurationError, InvalidInputError
from ..runtime import LocalRuntime
from .case import EvalCase
from .results import EvalResult, EvalSuiteResult, summarize
from .runner import run_eval

MAX_NAMES_LISTED = 50
"""An error about picked cases lists at most this many of the suite's case names."""


def select_cases(cases: Sequence[EvalCase], names: Sequence[str] | None, *, suite: str = "") -> list[EvalCase]:
    """The cases of ``cases`` named in ``names``, in the suite's order (None: all of them).

    Args:
        cases: the suite's cases.
        names: the cases to run; a name given twice runs once.
        suite: the suite's reference, for the error message.

    Raises:
        InvalidInputError: ``names`` is empty, or names a case the suite does not have (the message
            lists the suite's case names).
    """
    if names is None:
        return list(cases)
    known = [c.name for c in cases]
    known_set = set(known)
    unknown = [n for n in dict.fromkeys(names) if n not in known_set]
    if names and not unknown:
        picked = set(names)
        return [c for c in cases if c.name in picked]
    where = f"eval suite {suite!r}" if suite else "eval suite"
    listed = ", ".join(known[:MAX_NAMES_LISTED]) + (
        f" ... ({len(known) - MAX_NAMES_LISTED} more)" if len(known) > MAX_NAMES_LISTED else ""
    )
    if not names:
        raise InvalidInputError(f"{where}: no cases picked; pick one or more of {listed}, or leave the selection out to run all")
    raise InvalidInputError(f"{where} has no case named {', '.join(repr(n) for n in unknown)}; its cases are: {listed}")


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
    case_names: Sequence[str] | None = None,
) -> EvalSuiteResult:
    """Run ``cases`` in this process.

    Args:
        cases: the cases (unique names).
        parallel: run cases concurrently (safe: each has its own runners and sessions).
        max_concurrency: at most this many cases at once (None: no bound; ignored when not parallel).
        stop_on_first_failure: start no further case once one has not passed; cases already running
            finish. The rest are counted as ``skipped``.
        case_names: run only these cases (select_cases); None: all.

    Results are in the order of ``cases``.

    Raises:
        InvalidInputError: ``case_names`` is empty or names a case ``cases`` does not have.
    """
    check_suite(cases)
    cases = select_cases(cases, case_names)
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
