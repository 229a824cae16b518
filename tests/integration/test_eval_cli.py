"""`adkt eval`: run (in-process and durable, exit codes), list, show, compare; in-process with typer's
CliRunner against the test session's Postgres and worker, and once as a subprocess that starts its
own embedded stack the way a user's first run does."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from adk_core.eval.store import EvalResultStore
from adk_core.sql import migrate
from adkt.main import app
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
ENV = {"COLUMNS": "200", "NO_COLOR": "1"}


async def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    # On a thread: the command runs its own event loop (asyncio.run), which must not be this one.
    return await asyncio.to_thread(CliRunner().invoke, app, list(args), env={**ENV, **(env or {})})


def _id() -> str:
    return f"cli-{uuid.uuid4().hex[:8]}"


async def test_run_list_show_compare_in_process(database_url: str) -> None:
    await migrate(database_url)
    db = ("--database-url", database_url)
    good, bad, fixed = _id(), _id(), _id()
    ran = await invoke("eval", "run", "tests.integration.eval_apps:good", "--run-id", good, *db)
    assert ran.exit_code == 0, ran.output
    assert "greets" in ran.stdout and "sums" in ran.stdout and "2 passed" in ran.stdout
    failed = await invoke("eval", "run", "tests.integration.eval_apps:bad", "--run-id", bad, "--trials", "2", *db)
    assert failed.exit_code == 1, failed.output  # a case failed
    assert "failed: right_sum" in failed.stdout and "0/2" in failed.stdout
    assert (await invoke("eval", "run", "tests.integration.eval_apps:bad_then_fixed", "--run-id", fixed, *db)).exit_code == 1

    listed = await invoke("eval", "list", *db)
    assert listed.exit_code == 0, listed.output
    assert all(run in listed.stdout for run in (good, bad, fixed)) and "in_process" in listed.stdout

    shown = await invoke("eval", "show", bad, "--case", "sums", *db)
    assert shown.exit_code == 0, shown.output
    assert "✗ right_sum" in shown.stdout and "✓ used_lookup" in shown.stdout
    assert "calc → lookup" in shown.stdout and "the sum is 3" in shown.stdout  # the stored trace, both trials
    assert shown.stdout.count("the sum is 3") == 2

    compared = await invoke("eval", "compare", good, bad, *db)
    assert compared.exit_code == 0, compared.output
    assert "regression right_sum" in compared.stdout
    assert "1 case regressions, 0 case fixes; 1 metric regressions, 0 metric fixes" in compared.stdout
    both_ways = await invoke("eval", "compare", bad, fixed, *db)
    assert "1 case regressions, 1 case fixes; 1 metric regressions, 1 metric fixes" in both_ways.stdout
    assert "fix right_sum" in both_ways.stdout and "regression says_hello" in both_ways.stdout

    missing = await invoke("eval", "show", "no-such-run", *db)
    assert missing.exit_code == 1 and "no eval run 'no-such-run'" in missing.stderr


async def test_a_case_nothing_checks_is_not_evaluated_and_fails_the_run(database_url: str) -> None:
    await migrate(database_url)
    run_id = _id()
    ran = await invoke("eval", "run", "tests.integration.eval_apps:unchecked", "--run-id", run_id,
                       "--database-url", database_url)
    assert ran.exit_code == 1, ran.output  # a case nobody checked did not pass
    assert "not_evaluated" in ran.stdout and "the case has no metrics" in ran.stdout
    assert "1 passed" in ran.stdout and "1 not evaluated" in ran.stdout
    store = EvalResultStore(database_url)
    try:
        detail = await store.get_run(run_id)
    finally:
        await store.close()
    assert detail is not None and detail.run.status == "failed"
    assert detail.run.summary is not None and detail.run.summary.not_evaluated == 1
    assert {c.case_name: c.status for c in detail.cases} == {"unchecked-greets": "passed", "unchecked-no-metrics": "not_evaluated"}
    shown = await invoke("eval", "show", run_id, "--database-url", database_url)
    assert shown.exit_code == 0 and "not_evaluated" in shown.stdout and "the case has no metrics" in shown.stdout


async def test_rescore_scores_stored_traces_with_new_metrics_as_a_linked_run(database_url: str) -> None:
    from tests.integration.eval_apps import system_model_calls

    await migrate(database_url)
    db = ("--database-url", database_url)
    bad, rescored = _id(), _id()
    assert (await invoke("eval", "run", "tests.integration.eval_apps:bad", "--run-id", bad, "--trials", "2", *db)).exit_code == 1
    calls = len(system_model_calls)
    ran = await invoke("eval", "rescore", bad, "--metrics", "tests.integration.eval_apps:rescore_metrics",
                       "--run-id", rescored, *db)  # fmt: skip
    assert ran.exit_code == 0, ran.output  # the new metrics pass on the same traces
    assert len(system_model_calls) == calls  # the system's model was not called again
    store = EvalResultStore(database_url)
    try:
        old, new = await store.get_run(bad), await store.get_run(rescored)
    finally:
        await store.close()
    assert old is not None and new is not None
    assert new.run.config == {"rescored_from": bad, "metrics": "tests.integration.eval_apps:rescore_metrics"}
    assert (new.run.suite, new.run.status) == (old.run.suite, "passed")
    assert [(t.case_name, t.trial, t.session) for t in new.trials] == [(t.case_name, t.trial, t.session) for t in old.trials]
    assert all(sorted(t.metrics) == ["answers", "sum_is_3"] for t in new.trials)
    compared = await invoke("eval", "compare", bad, rescored, *db)
    assert "0 case regressions, 1 case fixes" in compared.stdout, compared.stdout  # sums: failed -> passed

    # A trial whose run failed before scoring keeps its error: its trace is not a finished conversation.
    errored, rescored_error = _id(), _id()
    assert (await invoke("eval", "run", "tests.integration.eval_apps:unmocked", "--run-id", errored, *db)).exit_code == 1
    again = await invoke("eval", "rescore", errored, "--metrics", "tests.integration.eval_apps:rescore_metrics",
                         "--run-id", rescored_error, *db)  # fmt: skip
    assert again.exit_code == 1 and "system error" in again.stdout and "lookup" in again.stdout, again.output

    missing = await invoke("eval", "rescore", "no-such-run", "--metrics", "tests.integration.eval_apps:rescore_metrics", *db)
    assert missing.exit_code == 1 and "no eval run 'no-such-run'" in missing.stderr
    not_metrics = await invoke("eval", "rescore", bad, "--metrics", "tests.integration.eval_apps:good", *db)
    assert not_metrics.exit_code == 1 and "is not a Metric" in not_metrics.stderr
    assert "--metrics" in (await invoke("eval", "rescore", "--help")).stdout


async def test_run_durable_on_a_configured_stack(durable_stack: DurableStack) -> None:
    run_id = _id()
    ran = await invoke(
        "eval", "run", "examples.eval_chest_pain", "--durable", "--trials", "2", "--parallel", "1", "--run-id", run_id,
        "--address", durable_stack.address, "--database-url", durable_stack.database_url,
        env={"ADK_TASK_QUEUE": durable_stack.task_queue},
    )
    assert ran.exit_code == 0, ran.output
    assert "chest-pain-escalation" in ran.stdout and "2/2" in ran.stdout
    store = EvalResultStore(durable_stack.database_url)
    try:
        detail = await store.get_run(run_id)
    finally:
        await store.close()
    assert detail is not None and detail.run.mode == "durable" and detail.run.config == {"trials": 2, "max_concurrency": 1}
    assert [(t.trial, t.status) for t in detail.trials] == [(0, "passed"), (1, "passed")]

    failing_id = _id()
    failing = await invoke(
        "eval", "run", "tests.integration.eval_apps:failing", "--durable", "--address", durable_stack.address,
        "--database-url", durable_stack.database_url, "--model-calls", "activity", "--run-id", failing_id,
        env={"ADK_TASK_QUEUE": durable_stack.task_queue},
    )
    assert failing.exit_code == 1, failing.output
    store = EvalResultStore(durable_stack.database_url)
    try:
        failed = await store.get_run(failing_id)
    finally:
        await store.close()
    assert failed is not None and failed.run.config == {"model_calls": "activity"}  # the default is left out


def test_durable_run_on_an_embedded_stack_then_list(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "ADK_"))}
    env |= {"HOME": str(tmp_path), "PYTHONPATH": str(REPO), **ENV}

    def adkt(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "adkt.main", "eval", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip

    ran = adkt("run", "examples.eval_chest_pain", "--durable", "--run-id", "first")
    assert ran.returncode == 0, ran.stderr
    assert "starting an embedded stack" in ran.stderr and "chest-pain-escalation" in ran.stdout
    listed = adkt("list")  # reads the embedded Postgres the run left under .adk/
    assert listed.returncode == 0, listed.stderr
    assert "first" in listed.stdout and "durable" in listed.stdout
