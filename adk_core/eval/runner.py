"""run_eval: one case in-process (in-memory stores, LocalRuntime), every trial isolated."""

from __future__ import annotations

from collections.abc import Callable

from ..runtime import Runtime
from .case import EvalCase
from .driver import drive_case
from .host import LocalCaseHost
from .results import EvalResult, combine_trials


async def run_eval(case: EvalCase, *, runtime_factory: Callable[[], Runtime] | None = None) -> EvalResult:
    """Run every trial of ``case`` in this process and return its result.

    Each trial gets a fresh ``LocalCaseHost``: its own stores, main session and user-agent session,
    so trials (and cases) never share state. Trials run one after another.

    Args:
        case: the case.
        runtime_factory: makes each trial's runtime (default ``LocalRuntime``), e.g. a fake clock in tests.
    """
    results = []
    for trial in range(case.trials):
        host = LocalCaseHost(case, runtime=runtime_factory() if runtime_factory else None)
        results.append(await drive_case(case, host, trial=trial))
    return combine_trials(results)
