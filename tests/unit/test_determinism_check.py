"""The determinism check (adk_temporal.determinism, `adkt check`, and its warning at `adkt worker`
start): workflow code that reads the clock, randomness or fresh ids directly is named with the fix;
the same app written with the runtime seam passes; activity code and the framework are left alone."""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adk_temporal.determinism import check_app
from adkt.commands.check import warn_if_nondeterministic
from examples import support_desk, w1
from tests.replay import apps as replay_apps
from tests.unit import determinism_apps

REPO = Path(__file__).resolve().parents[2]
CLOCK_FIX = "use ctx.runtime.now()"


async def test_each_direct_call_is_named_with_its_function_and_fix() -> None:
    report = await check_app(determinism_apps.bad)
    assert report.stopped is None, report.stopped  # the whole scripted turn ran; no model was called
    found = {(f.function.split(" ")[0], f.call, f.fix.split(" (")[0]) for f in report.findings}
    assert found == {
        ("greeting_by_time_of_day", "datetime.datetime.now()", CLOCK_FIX),  # an instruction provider
        ("tag_request", "uuid.uuid4()", "use ctx.runtime.new_id()"),  # a before-model callback
        ("SamplingPlugin.after_model_callback", "random.random()", "use ctx.runtime.random()"),  # a plugin
        ("stamp", "time.time()", CLOCK_FIX),  # an inline tool
        ("remember_when", "time.time()", CLOCK_FIX),  # a sub-agent's callback, reached by transfer; `from time import time`
    }
    # fetch_quote reads the clock too, but runs in an activity: not workflow code.
    assert not any("fetch_quote" in f.function for f in report.findings)
    [stamp] = [f for f in report.findings if f.function.startswith("stamp")]
    assert stamp.location.endswith(f"determinism_apps.py:{_line_of(determinism_apps.stamp, 'time.time()')}")


async def test_a_custom_agent_is_workflow_code_a_tools_confirmation_rule_is_not() -> None:
    """FunctionTool evaluates require_confirmation in run_async, which for an activity tool runs in
    the activity (adk.run_tool): its clock read is recorded there, not replayed."""
    report = await check_app(determinism_apps.custom)
    found = {(f.function.split(" ")[0], f.call) for f in report.findings}
    assert found == {("Stamper._run_async_impl", "time.monotonic()")}, report.lines()


async def test_the_same_app_through_the_runtime_seam_passes() -> None:
    report = await check_app(determinism_apps.good)
    assert report.ok and report.stopped is None, report.lines()


@pytest.mark.parametrize("app", [w1.app, support_desk.app, replay_apps.children, replay_apps.confirm], ids=lambda a: a.name)
async def test_our_examples_pass(app) -> None:
    report = await check_app(app)
    assert report.ok, report.lines()


async def test_the_callback_that_breaks_replay_is_caught_before_it_ships() -> None:
    """tests/integration/test_replay.py shows this callback failing replay of a recorded W1 run."""
    report = await check_app(replay_apps.w1_clock_callback)
    [finding] = report.findings
    assert finding.function.startswith("_free_lookups_until_promo_ends") and finding.call == "time.time()"


async def test_a_worker_warns_at_start(capsys: pytest.CaptureFixture[str]) -> None:
    await warn_if_nondeterministic([determinism_apps.good, determinism_apps.bad])
    err = capsys.readouterr().err
    assert "warning: app 'bad_desk' has workflow code that will not replay" in err
    assert "good_desk" not in err
    assert "tag_request" in err and "use ctx.runtime.new_id()" in err


def _line_of(function, text: str) -> int:
    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _adkt(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "ADK_"))}
    env |= {"PYTHONPATH": str(REPO), "COLUMNS": "250", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "adkt.main", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


async def test_adkt_check_exit_codes_and_output() -> None:
    bad = await asyncio.to_thread(_adkt, "check", "tests.unit.determinism_apps:bad", "examples.w1:app")
    assert bad.returncode == 1, bad.stderr
    assert "FAILED  bad_desk: workflow code that will not replay:" in bad.stderr
    first = inspect.getsourcelines(determinism_apps.greeting_by_time_of_day)[1]
    assert f"greeting_by_time_of_day (tests/unit/determinism_apps.py:{first}) calls datetime.datetime.now() at " in bad.stderr
    assert "ok      w1:" in bad.stderr
    good = await asyncio.to_thread(_adkt, "check", "tests.unit.determinism_apps:good", "--message", "hi", "--message", "again")
    assert good.returncode == 0, good.stderr
    assert "ok      good_desk" in good.stderr
    shown = await asyncio.to_thread(_adkt, "check", "--help")
    assert shown.returncode == 0 and "time.time()" in shown.stdout


async def test_a_simulator_wait_is_answered_and_a_looping_script_is_cut_short() -> None:
    """Neither may hold up `adkt worker`'s start: a person in the simulator gets a scripted decision,
    and a script that calls a tool 680 times stops at the check's model-call limit, saying so."""
    simulated = await asyncio.wait_for(check_app(replay_apps.simulator), timeout=10)
    assert simulated.ok and simulated.stopped is None, simulated.lines()
    looping = await asyncio.wait_for(check_app(replay_apps.long_turn), timeout=10)
    assert looping.ok and looping.stopped is not None and "max_llm_calls" in looping.stopped


async def test_adkt_worker_warns_before_it_connects(tmp_path: Path) -> None:
    """The warning comes from `adkt worker` itself, before it connects (here to nothing: it then
    fails as it would without the check)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "ADK_"))}
    env |= {"PYTHONPATH": str(REPO), "HOME": str(tmp_path), "COLUMNS": "250", "NO_COLOR": "1"}
    started = await asyncio.to_thread(subprocess.run, [
        sys.executable, "-m", "adkt.main", "worker", "--app", "tests.unit.determinism_apps:bad",
        "--address", "127.0.0.1:1", "--database-url", "postgresql+psycopg://nobody@127.0.0.1:1/none",
    ], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert started.returncode == 1
    warning, _, rest = started.stderr.partition("error: cannot connect to Temporal")
    assert rest, started.stderr
    assert "warning: app 'bad_desk' has workflow code that will not replay (run `adkt check` for details)" in warning
    assert "tag_request (" in warning and "use ctx.runtime.new_id()" in warning
