"""A small run of the chaos bench (bench/chaos): a few SIGKILLed workers on the default timeouts.

Opt-in (ADK_CHAOS=1 python -m pytest tests/chaos): it takes a minute or two and loads the machine.
The full run is ``python -m bench.chaos.run --kills 100 --turns 100`` (bench/README.md).
"""

from __future__ import annotations

import os

import pytest

from bench.chaos import run

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.environ.get("ADK_CHAOS") != "1", reason="chaos runs on request: set ADK_CHAOS=1"),
]

RECOVERY_BOUND_S = 60.0
"""Heartbeat (10 s), sticky queue (10 s) and workflow task (10 s) timeouts, retried once or twice,
under the load of kills close together: measured medians 11-17 s, maxima up to ~35 s."""


async def test_kills_on_default_timeouts_lose_and_double_nothing() -> None:
    report = await run.main(run._parser().parse_args(["--kills", "5", "--turns", "40", "--seed", "7"]))
    run.print_table(report)
    assert report["all_runs_finished"], report["turns"]["failed"]
    assert not report["client_errors"], report["client_errors"]
    assert report["events"] == {"lost": 0, "doubled": 0, "stored_not_returned": 0, "shape_errors": []}
    assert not any(report["answers"].values()), report["answers"]
    assert report["tool_effects"]["duplicate_effects_after_dedupe"] == 0
    assert report["kills"] == 5
    worst = report["recovery_s"]["max"]
    assert worst is None or worst < RECOVERY_BOUND_S, report["per_kill"]
