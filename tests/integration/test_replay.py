"""Replay checked-in histories (tests/replay/histories, recorded by tests/replay/record_histories.py)
against today's workflow code: a change that would break running workflows fails here, offline.

No server needed: the Replayer runs the workflow code against the recorded events.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from adk_core import App, LlmAgent, ScriptedModel
from adk_core.errors import AdkError
from adk_core.tools import FunctionTool
from adk_core.tools.execution import ToolExecution
from adk_temporal.activities import AppRegistry
from adk_temporal.workflows.app_scope import AppsInterceptor
from adk_temporal.workflows.converter import adk_data_converter
from adk_temporal.workflows.plugin import WORKFLOWS
from adk_temporal.workflows.sandbox import sandbox_runner
from examples import w1
from tests.replay import record_histories

HISTORIES = sorted(record_histories.HISTORIES.glob("*.json"))
INLINE = ToolExecution(mode="inline", start_to_close_timeout=timedelta(seconds=1))


def _history(path: Path) -> WorkflowHistory:
    return WorkflowHistory.from_json(record_histories.WORKFLOW_IDS.get(path.stem, path.stem), path.read_text())


def _replayer(apps: list[App]) -> Replayer:
    return Replayer(
        workflows=WORKFLOWS,
        interceptors=[AppsInterceptor(AppRegistry(apps))],
        data_converter=adk_data_converter,
        workflow_runner=sandbox_runner(),
        workflow_failure_exception_types=[AdkError],
    )


@pytest.fixture
def recorded_apps() -> list[App]:
    """The apps the histories were recorded with."""
    return list(record_histories.apps())


def test_histories_are_checked_in() -> None:
    assert {p.name for p in HISTORIES} >= {"agent_run_w1.json", "session_confirm.json"}


def test_the_recorded_session_id_is_the_one_the_workflow_expects() -> None:
    from adk_temporal.workflows import session_workflow_id

    assert record_histories.WORKFLOW_IDS["session_confirm"] == session_workflow_id(
        record_histories.CONFIRM_APP, record_histories.USER_ID, record_histories.CONFIRM_SESSION
    )


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_history_replays(path: Path, recorded_apps: list[App]) -> None:
    result = await _replayer(recorded_apps).replay_workflow(_history(path), raise_on_replay_failure=True)
    assert result.replay_failure is None


def _w1_with_inline_add() -> App:
    agent = LlmAgent(
        name="assistant",
        model=ScriptedModel(w1.w1_script, name="w1-scripted"),
        instruction="You are a helpful assistant. Use the tools add and lookup when asked.",
        tools=[FunctionTool(w1.add, execution=INLINE), w1.lookup],
    )
    return App(name=w1.app.name, root_agent=agent)


@pytest.mark.parametrize(
    ("history", "changed_app"),
    [
        ("agent_run_w1", _w1_with_inline_add),
        ("session_confirm", lambda: record_histories.build_confirm_app(tool_execution=INLINE)),
    ],
)
async def test_changed_app_fails_replay(history: str, changed_app, recorded_apps: list[App]) -> None:
    """A tool moved from an activity into the workflow changes the commands: nondeterminism."""
    changed = changed_app()
    apps = [changed, *(app for app in recorded_apps if app.name != changed.name)]
    path = record_histories.HISTORIES / f"{history}.json"
    with pytest.raises(NondeterminismError, match="Nondeterminism error"):
        await _replayer(apps).replay_workflow(_history(path), raise_on_replay_failure=True)
