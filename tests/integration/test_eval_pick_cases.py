"""Running only some cases of a suite (issue 19, item 6) on the real dev server and Postgres: a durable
run with two of three cases stores exactly those two; an unknown name fails the suite at once with the
suite's case names (no retrying task); `adkt eval run --case` in-process and durable; the HTTP API
lists a suite's cases and refuses an unknown pick before anything starts. The page's picker:
tests/browser/test_eval_page.py."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from typer.testing import CliRunner, Result

from adk_core import LlmAgent, LlmRequest, ScriptedModel
from adk_core.eval import EvalCase, metric
from adk_core.eval.store import EvalResultStore
from adk_core.models import LlmResponse, text_response
from adk_core.sql import migrate
from adk_temporal.workflows.eval import EvalSuiteInput, EvalSuiteRunResult, EvalSuiteWorkflow
from adkt.main import app
from adkt.web.api.backend import ApiBackend
from adkt.web.site import create_site
from tests.integration.conftest import DurableStack
from tests.integration.worker_wait import worker_polls

pytestmark = pytest.mark.integration

SUITE = "tests.integration.test_eval_pick_cases:three"
NAMES = ["pick-one", "pick-two", "pick-three"]
FAILS_FAST_S = 30.0
"""An unknown name fails the suite on its first listing (non-retryable); far below any retry loop."""


def _answer(request: LlmRequest) -> LlmResponse:
    return text_response("ok")


_quick = LlmAgent(name="picker", model=ScriptedModel(_answer, name="scripted-picker"))
three = [EvalCase(name, app_or_agent=_quick, first_message="hi", metrics=[metric("ok", lambda t: t.final_response() == "ok")])
         for name in NAMES]  # fmt: skip
"""Three one-turn cases the worker imports by reference (the tests.integration modules are allowed)."""


async def _stored(database_url: str, run_id: str) -> tuple[list[str], list[tuple[str, int]], dict] | None:
    store = EvalResultStore(database_url)
    try:
        detail = await store.get_run(run_id)
    finally:
        await store.close()
    if detail is None:
        return None
    return [c.case_name for c in detail.cases], sorted((t.case_name, t.trial) for t in detail.trials), detail.run.config


async def test_a_durable_run_of_two_of_three_cases_stores_exactly_those_two(durable_stack: DurableStack) -> None:
    run_id = f"pick-{uuid.uuid4().hex[:8]}"
    result = await durable_stack.client.client.execute_workflow(
        EvalSuiteWorkflow.run, EvalSuiteInput(suite=SUITE, run_id=run_id, cases=["pick-three", "pick-one"]),
        id=f"adk-eval/{run_id}", task_queue=durable_stack.task_queue, result_type=EvalSuiteRunResult,
    )  # fmt: skip
    assert [r.name for r in result.results] == ["pick-one", "pick-three"]  # the suite's order
    assert result.summary.total == 2 and result.passed
    stored = await _stored(durable_stack.database_url, run_id)
    assert stored is not None
    cases, trials, config = stored
    assert cases == ["pick-one", "pick-three"] and trials == [("pick-one", 0), ("pick-three", 0)]
    assert config == {"cases": ["pick-three", "pick-one"]}  # a resume (EvalSuiteInput.resume_of) keeps the pick


async def test_an_unknown_case_fails_the_suite_at_once_naming_the_suite_cases(durable_stack: DurableStack) -> None:
    run_id = f"pick-{uuid.uuid4().hex[:8]}"
    async with asyncio.timeout(FAILS_FAST_S):
        with pytest.raises(WorkflowFailureError) as failed:
            await durable_stack.client.client.execute_workflow(
                EvalSuiteWorkflow.run, EvalSuiteInput(suite=SUITE, run_id=run_id, cases=["pick-one", "pick-four"]),
                id=f"adk-eval/{run_id}", task_queue=durable_stack.task_queue,
            )  # fmt: skip
    cause = failed.value.cause.cause  # the listing activity's error (ActivityError -> ApplicationError)
    assert isinstance(cause, ApplicationError) and cause.type == "InvalidInputError" and cause.non_retryable
    assert cause.message == f"eval suite {SUITE!r} has no case named 'pick-four'; its cases are: pick-one, pick-two, pick-three"
    assert await _stored(durable_stack.database_url, run_id) is None  # refused before the run was recorded


async def _invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    # On a thread: the command runs its own event loop (asyncio.run), which must not be this one.
    return await asyncio.to_thread(CliRunner().invoke, app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1", **(env or {})})


async def test_the_cli_runs_only_the_picked_cases_in_process_and_durably(durable_stack: DurableStack) -> None:
    db = ("--database-url", durable_stack.database_url)
    await migrate(durable_stack.database_url)
    local = f"pick-{uuid.uuid4().hex[:8]}"
    ran = await _invoke("eval", "run", SUITE, "--case", "pick-two", "--run-id", local, *db)
    assert ran.exit_code == 0, ran.output
    assert "pick-two" in ran.stdout and "pick-one" not in ran.stdout and "1 cases" in ran.stdout
    assert await _stored(durable_stack.database_url, local) == (["pick-two"], [("pick-two", 0)], {"cases": ["pick-two"]})

    durable = f"pick-{uuid.uuid4().hex[:8]}"
    on_stack = ("--durable", "--address", durable_stack.address, *db)
    queue = {"ADK_TASK_QUEUE": durable_stack.task_queue}
    ran = await _invoke("eval", "run", SUITE, "-c", "pick-one", "--case", "pick-two", "--run-id", durable, *on_stack, env=queue)
    assert ran.exit_code == 0, ran.output
    stored = await _stored(durable_stack.database_url, durable)
    assert stored is not None and stored[:2] == (["pick-one", "pick-two"], [("pick-one", 0), ("pick-two", 0)])

    refused_id = f"pick-{uuid.uuid4().hex[:8]}"
    refused = await _invoke("eval", "run", SUITE, "--case", "nope", "--run-id", refused_id, *on_stack, env=queue)
    assert refused.exit_code == 1 and "has no case named 'nope'; its cases are: pick-one, pick-two, pick-three" in refused.stderr
    found = durable_stack.client.client.list_workflows(f"WorkflowId = 'adk-eval/{refused_id}'")
    assert [w async for w in found] == []  # refused before a workflow started


@pytest_asyncio.fixture(loop_scope="session")
async def http(durable_stack: DurableStack) -> AsyncIterator[httpx.AsyncClient]:
    backend = ApiBackend.open(durable_stack.client, durable_stack.database_url, apps=[], eval_suites=["tests.integration"])
    await worker_polls(backend, durable_stack.task_queue)
    transport = httpx.ASGITransport(app=create_site(backend))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1/api/v1") as client:
        yield client
    await backend.close()


async def test_the_api_lists_a_suite_cases_and_refuses_an_unknown_pick(http: httpx.AsyncClient, durable_stack: DurableStack) -> None:
    listed = await http.get("/evals/suites", params={"suite": SUITE})
    assert listed.status_code == 200, listed.text
    assert [(c["name"], c["trials"]) for c in listed.json()["cases"]] == [(n, 1) for n in NAMES]
    assert (await http.get("/evals/suites")).json()["cases"] is None  # only when asked for a suite
    not_allowed = await http.get("/evals/suites", params={"suite": "os:path"})
    assert not_allowed.status_code == 400 and "not one this server may start" in not_allowed.json()["message"]

    run_id = f"pick-{uuid.uuid4().hex[:8]}"
    refused = await http.post("/evals/runs", json={"suite": SUITE, "run_id": run_id, "cases": ["pick-one", "pick-4"]})
    assert refused.status_code == 400, refused.text
    assert refused.json()["message"].endswith("has no case named 'pick-4'; its cases are: pick-one, pick-two, pick-three")
    found = durable_stack.client.client.list_workflows(f"WorkflowId = 'adk-eval/{run_id}'")
    assert [w async for w in found] == []
    empty = await http.post("/evals/runs", json={"suite": SUITE, "cases": []})
    assert empty.status_code == 422, empty.text

    # Started around the API (the temporal CLI, say): the run fails, and its progress says why.
    started_id = f"pick-{uuid.uuid4().hex[:8]}"
    handle = await durable_stack.client.client.start_workflow(
        EvalSuiteWorkflow.run, EvalSuiteInput(suite=SUITE, run_id=started_id, cases=["pick-4"]),
        id=f"adk-eval/{started_id}", task_queue=durable_stack.task_queue,
    )  # fmt: skip
    async with asyncio.timeout(FAILS_FAST_S):
        with pytest.raises(WorkflowFailureError):
            await handle.result()
    progress = (await http.get(f"/evals/runs/{started_id}/progress")).json()
    assert progress["status"] == "failed" and "has no case named 'pick-4'; its cases are: pick-one" in progress["error"]
