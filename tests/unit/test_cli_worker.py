"""`adkt worker` options that need no servers."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from adk_core.errors import ConfigurationError
from adk_temporal.worker import (
    DEFAULT_GRACEFUL_SHUTDOWN,
    DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS,
    WorkerVersion,
)
from adkt.commands.serve import GRACEFUL_SHUTDOWN_SECONDS, MAX_WORKFLOW_TASKS
from adkt.main import app


def test_worker_needs_an_app_or_eval_cases() -> None:
    result = CliRunner().invoke(app, ["worker"])
    assert result.exit_code == 2
    assert "--app" in result.output and "--eval" in result.output


def test_worker_takes_eval_cases() -> None:
    result = CliRunner().invoke(app, ["worker", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "--eval" in result.output


def test_worker_help_shows_the_deployment_and_lifecycle_options() -> None:
    result = CliRunner().invoke(app, ["worker", "--help"], env={"COLUMNS": "200"})
    for option in ("--deployment-name", "--build-id", "--graceful-timeout", "--health-port", "--max-workflow-tasks",
                   "--max-cached-workflows"):
        assert option in result.output
    assert "ADK_BUILD_ID" in result.output


def test_a_deployment_needs_both_its_name_and_build_id() -> None:
    result = CliRunner().invoke(app, ["worker", "--app", "examples.w1:app", "--build-id", "b1"], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "--deployment-name and --build-id together" in result.output


def test_a_build_id_with_a_colon_is_refused_with_the_fix() -> None:
    with pytest.raises(ConfigurationError, match="without ':'"):
        WorkerVersion("desk", "v1:2")


def test_the_cli_default_graceful_timeout_is_the_workers() -> None:
    assert GRACEFUL_SHUTDOWN_SECONDS == DEFAULT_GRACEFUL_SHUTDOWN.total_seconds()


def test_the_cli_default_workflow_tasks_is_the_workers() -> None:
    assert MAX_WORKFLOW_TASKS == DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS


def test_the_console_script_exits_with_the_commands_code() -> None:
    # adkt.main.main ends the process itself (os._exit, past interpreter finalization).
    ok = subprocess.run([sys.executable, "-m", "adkt.main", "--help"], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "Usage" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "adkt.main", "no-such-command"], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert bad.returncode == 2 and "No such command" in bad.stderr


def test_the_worker_flags_become_worker_options() -> None:
    from temporalio.worker import PollerBehaviorSimpleMaximum, UnsandboxedWorkflowRunner

    from adkt.commands.serve import worker_options

    assert worker_options() == {}  # build_worker's defaults (adk_temporal/worker.py) fill the rest
    options = worker_options(unsandboxed=True, max_workflow_tasks=4, max_cached_workflows=50, workflow_task_polls=3)
    assert isinstance(options.pop("workflow_runner"), UnsandboxedWorkflowRunner)
    polls = options.pop("workflow_task_poller_behavior")
    assert isinstance(polls, PollerBehaviorSimpleMaximum) and polls.maximum == 3
    assert options == {"max_concurrent_workflow_tasks": 4, "max_cached_workflows": 50}


def test_the_cli_default_workflow_task_polls_is_the_workers() -> None:
    from adk_temporal.worker import WORKFLOW_TASK_POLLS

    assert isinstance(WORKFLOW_TASK_POLLS.maximum, int) and WORKFLOW_TASK_POLLS.maximum == MAX_WORKFLOW_TASKS
    result = CliRunner().invoke(app, ["worker", "--help"], env={"COLUMNS": "200"})
    assert "--workflow-task-polls" in result.output and "ADK_WORKFLOW_TASK_POLLS" in result.output
