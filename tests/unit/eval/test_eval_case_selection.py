"""Running only some cases of a suite (issue 19, item 6): select_cases keeps the suite's order and
refuses an unknown or empty pick with the suite's case names; run_eval_suite(case_names=...), the
durable listing activity, the suite input, the HTTP body and `adkt eval run --case` all use it."""

from __future__ import annotations

import pytest
from eval_fixtures import agent
from pydantic import ValidationError
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from typer.testing import CliRunner

from adk_core.errors import AdkError, InvalidInputError
from adk_core.eval import EvalCase, metric, run_eval_suite, select_cases
from adk_core.eval.suite import MAX_NAMES_LISTED
from adk_core.models import text_response
from adk_temporal.activities import eval_contracts as ec
from adk_temporal.activities.apps import AppRegistry
from adk_temporal.activities.eval_activities import EvalActivities
from adk_temporal.workflows.eval import EvalSuiteInput
from adkt.main import app
from adkt.web.api.eval_models import StartEvalRunBody, SuitesQuery

SUITE = "tests.integration.eval_apps:good"
"""Two cases, ``greets`` and ``sums``; importable without servers."""


def _cases(*names: str) -> list[EvalCase]:
    return [EvalCase(n, app_or_agent=agent(lambda r: text_response("ok")), first_message="x",
                     metrics=[metric("ok", lambda t: True)]) for n in names]  # fmt: skip


def test_picked_cases_keep_the_suite_order_and_none_picks_all() -> None:
    cases = _cases("a", "b", "c")
    assert [c.name for c in select_cases(cases, ["c", "a", "c"])] == ["a", "c"]
    assert select_cases(cases, None) == cases


def test_an_unknown_or_empty_pick_lists_the_suite_cases() -> None:
    cases = _cases("a", "b", "c")
    with pytest.raises(InvalidInputError) as unknown:
        select_cases(cases, ["a", "zz", "yy"], suite="my.evals:cases")
    assert str(unknown.value) == "eval suite 'my.evals:cases' has no case named 'zz', 'yy'; its cases are: a, b, c"
    with pytest.raises(InvalidInputError, match="no cases picked; pick one or more of a, b, c"):
        select_cases(cases, [])
    assert issubclass(InvalidInputError, AdkError)


def test_a_large_suite_lists_only_the_first_names() -> None:
    cases = _cases(*(f"n{i}" for i in range(MAX_NAMES_LISTED + 7)))
    with pytest.raises(InvalidInputError) as error:
        select_cases(cases, ["nope"])
    assert str(error.value).endswith(f"n{MAX_NAMES_LISTED - 1} ... (7 more)")


async def test_run_eval_suite_runs_only_the_picked_cases() -> None:
    result = await run_eval_suite(_cases("a", "b", "c"), case_names=["c", "a"])
    assert [r.name for r in result.results] == ["a", "c"] and result.summary.total == 2
    with pytest.raises(InvalidInputError, match="its cases are: a, b, c"):
        await run_eval_suite(_cases("a", "b", "c"), case_names=["d"])


async def test_the_listing_activity_lists_only_picked_cases_and_refuses_unknown_ones_without_retry() -> None:
    apps = AppRegistry()
    apps.eval_suites.allow(["tests.integration"])
    activities = EvalActivities(None, apps)
    env = ActivityEnvironment()
    listed = await env.run(activities.list_cases, ec.ListCasesInput(suite=SUITE, names=["sums"]))
    assert [c.name for c in listed.cases] == ["sums"]
    everything = await env.run(activities.list_cases, ec.ListCasesInput(suite=SUITE))
    assert [c.name for c in everything.cases] == ["greets", "sums"]
    with pytest.raises(ApplicationError) as error:
        await env.run(activities.list_cases, ec.ListCasesInput(suite=SUITE, names=["greets", "nope"]))
    assert error.value.non_retryable and error.value.type == "InvalidInputError"
    assert error.value.message == f"eval suite {SUITE!r} has no case named 'nope'; its cases are: greets, sums"


def test_the_suite_input_and_the_http_body_carry_the_pick() -> None:
    assert EvalSuiteInput(suite=SUITE).cases is None  # old histories' inputs: every case
    assert EvalSuiteInput.model_validate({"suite": SUITE, "cases": ["sums"]}).cases == ["sums"]
    assert StartEvalRunBody(suite=SUITE, cases=["sums"]).cases == ["sums"]
    with pytest.raises(ValidationError):
        StartEvalRunBody(suite=SUITE, cases=[])  # nothing to run: refused, not "all"
    assert SuitesQuery().suite is None
    with pytest.raises(ValidationError, match="not by file"):
        SuitesQuery(suite="tests/integration/eval_apps.py:good")


def test_the_cli_offers_case_and_refuses_an_unknown_one_before_running(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ADK_DATABASE_URL", raising=False)
    runner = CliRunner()
    env = {"COLUMNS": "200", "NO_COLOR": "1"}
    shown = runner.invoke(app, ["eval", "run", "--help"], env=env)
    assert "--case" in shown.stdout and "run only this case" in shown.stdout
    refused = runner.invoke(app, ["eval", "run", SUITE, "--case", "sums", "--case", "nope"], env=env)
    assert refused.exit_code == 1
    assert f"eval suite {SUITE!r} has no case named 'nope'; its cases are: greets, sums" in refused.stderr
    assert "greets" not in refused.stdout  # nothing ran
