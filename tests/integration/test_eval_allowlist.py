"""A worker imports only the eval suites it registered (issue 24, item 5): a suite reference in
workflow input names code the worker would run, so anything else is refused before any import,
with an error that says what to register, and the workflow fails once instead of retrying."""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError

from adk_temporal.workflows.eval import EvalCaseInput, EvalCaseWorkflow, EvalSuiteInput, EvalSuiteWorkflow
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration


def _planted(tmp_path: Path) -> tuple[Path, Path]:
    """A file outside the working directory whose import leaves a marker: what an attacker would name."""
    marker = tmp_path / "ran"
    module = tmp_path / f"planted_{uuid.uuid4().hex[:6]}.py"
    module.write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text('code ran on the worker')\ncases = []\n")
    return module, marker


def _cause(failed: pytest.ExceptionInfo[WorkflowFailureError]) -> ApplicationError:
    cause = failed.value.cause
    while not isinstance(cause, ApplicationError) and cause is not None:
        cause = cause.cause
    assert isinstance(cause, ApplicationError), failed.value
    return cause


@pytest.mark.parametrize("kind", ["file", "module"])
async def test_a_suite_the_worker_did_not_register_is_refused_before_any_import(
    durable_stack: DurableStack, tmp_path: Path, kind: str
) -> None:
    module, marker = _planted(tmp_path)
    suite = f"{module}:cases" if kind == "file" else "antigravity"  # an installed module with side effects
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(durable_stack.client.client.execute_workflow(
            EvalSuiteWorkflow.run, EvalSuiteInput(suite=suite, run_id=f"refused-{uuid.uuid4().hex[:8]}"),
            id=f"adk-eval/refused-{uuid.uuid4().hex[:8]}", task_queue=durable_stack.task_queue,
        ), timeout=30)

    cause = _cause(failed)
    assert cause.type == "ConfigurationError" and cause.non_retryable
    assert f"eval suite {suite!r} is not registered on this worker" in cause.message
    assert "adkt worker --eval" in cause.message and "eval_suites=" in cause.message
    assert "tests.integration" in cause.message  # what this worker does allow
    assert not marker.exists(), "the planted module ran on the worker"


async def test_a_case_workflow_started_directly_is_refused_the_same_way(durable_stack: DurableStack) -> None:
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(durable_stack.client.client.execute_workflow(
            EvalCaseWorkflow.run,
            EvalCaseInput(suite="antigravity:cases", case_name="x", run_id="direct", record=False),
            id=f"adk-eval/direct-{uuid.uuid4().hex[:8]}", task_queue=durable_stack.task_queue,
        ), timeout=30)
    cause = _cause(failed)
    assert cause.type == "ConfigurationError"
    assert "eval suite 'antigravity:cases' is not registered on this worker" in cause.message
    assert "antigravity" not in sys.modules  # never imported (it would open a web browser)
