"""Replay recorded workflow histories against today's code, before a deploy does.

A running conversation replays its history on whichever worker takes its next task. If the code
deployed since then makes different decisions (a tool moved from an activity into the workflow, a
callback that reads the clock, a changed agent tree), the replay fails with a nondeterminism error
and the conversation stops. Replaying exported histories in CI catches that first:

    temporal workflow show -w WORKFLOW_ID --output json > histories/support.json
    adkt replay histories/*.json --app my_app.agent:app

or, in a test (docs/replay.md)::

    from adk_temporal.replay import replay_histories

    async def test_running_conversations_survive_this_build():
        await replay_histories(Path("histories").glob("*.json"), apps=[app])

Histories replay with the worker's own setup (workflows, data converter, sandbox, the apps), so
the verdict is the one a worker of this build would reach.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.client import WorkflowHistory
from temporalio.converter import DataConverter
from temporalio.worker import Replayer, WorkflowRunner

from adk_core import App
from adk_core.errors import AdkError, ConfigurationError
from adk_temporal.activities import AppRegistry
from adk_temporal.activities.eval_allow import EvalSuites
from adk_temporal.workflows.app_scope import AppsInterceptor
from adk_temporal.workflows.contracts import session_workflow_id
from adk_temporal.workflows.converter import adk_data_converter
from adk_temporal.workflows.plugin import WORKFLOWS
from adk_temporal.workflows.sandbox import sandbox_runner

__all__ = ["HistoryReplay", "ReplayFailedError", "load_history", "replay_histories"]

# The children our workflows start are named after their parent's id (workflows/runtime.py,
# workflows/session.py), so a parent's id can be read back from a child's.
_CHILD_ID_MARKERS = ("/branch/", "/tool/", "/turn/", "/case/")
_APP_WORKFLOWS = {"SessionWorkflow", "AgentRunWorkflow", "AgentToolWorkflow", "AgentBranchWorkflow"}


class ReplayFailedError(AdkError):
    """One or more histories no longer replay on this code: deploying it would stop those workflows."""

    def __init__(self, failures: Sequence[HistoryReplay]) -> None:
        self.failures = list(failures)
        lines = [f"{len(self.failures)} workflow history(ies) no longer replay on this code:"]
        lines += [f"  {f.source}: workflow {f.workflow_id} ({f.workflow_type}): {f.reason}" for f in self.failures]
        lines.append(
            "Running workflows with these histories would fail on this build. Keep the old behaviour for "
            "them (workflow.patched(...)), or deploy as a new worker version so they finish on the old one "
            "(docs/versioning.md)."
        )
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class HistoryReplay:
    """The verdict on one history."""

    source: str
    workflow_id: str
    workflow_type: str
    failure: Exception | None

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def reason(self) -> str:
        """Why it failed, in one line: for a nondeterminism error, the core's message (e.g.
        ``[TMPRL1100] Nondeterminism error: Activity type of scheduled event ... does not match``)."""
        if self.failure is None:
            return ""
        text = str(self.failure)
        core = re.search(r'message: "((?:[^"\\]|\\.)*)"', text)
        return f"{type(self.failure).__name__}: {core.group(1) if core else text}"


def load_history(path: str | Path, workflow_id: str | None = None) -> WorkflowHistory:
    """A history exported with ``temporal workflow show --output json`` (or ``WorkflowHistory.to_json``;
    ``.gz`` files are decompressed).

    The workflow id matters: a SessionWorkflow checks that its id is its session's, and workflows
    name their children after themselves. When not given it is read from the history (its start
    event, else the ids of the children it started, else the session a SessionWorkflow serves);
    the file name is the last resort.
    """
    path = Path(path)
    raw = path.read_bytes()
    data = json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)
    return WorkflowHistory.from_json(workflow_id or _workflow_id_of(data) or path.stem, data)


def _workflow_id_of(data: dict[str, Any]) -> str | None:
    events = data.get("events") or []
    if not events:
        return None
    started = events[0].get("workflowExecutionStartedEventAttributes") or {}
    if started.get("workflowId"):
        return str(started["workflowId"])
    for event in events:
        child = event.get("startChildWorkflowExecutionInitiatedEventAttributes")
        if child:
            child_id = str(child.get("workflowId", ""))
            for marker in _CHILD_ID_MARKERS:
                if marker in child_id:
                    return child_id.split(marker, 1)[0]
    if (started.get("workflowType") or {}).get("name") == "SessionWorkflow":
        first = _first_input(started)
        if isinstance(first, dict) and {"app_name", "user_id", "session_id"} <= first.keys():
            return session_workflow_id(first["app_name"], first["user_id"], first["session_id"])
    return None


def _first_input(started: dict[str, Any]) -> Any:
    payloads = (started.get("input") or {}).get("payloads") or []
    if not payloads:
        return None
    try:
        return json.loads(base64.b64decode(payloads[0].get("data", "")))
    except ValueError:
        return None  # not JSON (an encrypted or externally stored payload): the id comes from elsewhere


def replayer(
    apps: Sequence[App], *, passthrough_modules: Sequence[str] = (), workflow_runner: WorkflowRunner | None = None,
    data_converter: DataConverter | None = None,
) -> Replayer:
    """A Replayer set up as ``build_worker`` sets up a worker for ``apps``."""
    modules = {type(app.root_agent).__module__ for app in apps} | set(passthrough_modules)
    return Replayer(
        workflows=WORKFLOWS,
        # Replaying starts nothing new: the eval suites the histories ran may be imported again.
        interceptors=[AppsInterceptor(AppRegistry(apps, eval_suites=EvalSuites(any_suite=True)))],
        data_converter=data_converter or adk_data_converter,
        workflow_runner=workflow_runner or sandbox_runner(sorted(m for m in modules if not m.startswith("adk_core"))),
        workflow_failure_exception_types=[AdkError],
    )


async def replay_histories(
    histories: Iterable[str | Path | WorkflowHistory],
    *,
    apps: Sequence[App],
    passthrough_modules: Sequence[str] = (),
    data_converter: DataConverter | None = None,
    raise_on_failure: bool = True,
) -> list[HistoryReplay]:
    """Replay each history against this code with ``apps``; the verdict on each, in order.

    Args:
        histories: files exported with ``temporal workflow show --output json``, or WorkflowHistory objects.
        apps: the apps the workers of this build serve (the histories' apps must be among them).
        passthrough_modules: as for ``build_worker``.
        data_converter: the workers' converter when it is not ours as it is: histories whose payloads
            a codec encrypted need ``dataclasses.replace(adk_data_converter, payload_codec=codec)``.
        raise_on_failure: raise ReplayFailedError naming every history that fails (the default, for
            tests); False returns the failures in the list instead.

    Raises:
        ReplayFailedError: a history does not replay (a nondeterminism error, or workflow code that
            raised on replay), with each workflow id and the reason.
    """
    loaded: list[tuple[str, WorkflowHistory]] = []
    for item in histories:
        if isinstance(item, WorkflowHistory):
            loaded.append((item.workflow_id, item))
        else:
            loaded.append((str(item), load_history(item)))
    if not loaded:
        raise ConfigurationError("no histories to replay; export some with `temporal workflow show -w ID --output json`")

    known = {app.name for app in apps}
    failures: list[Exception | None] = [None] * len(loaded)
    runnable: list[int] = []
    for index, (_, history) in enumerate(loaded):
        app_name = _app_of(history)
        if app_name is None or app_name in known or app_name.startswith("eval:"):
            runnable.append(index)
        else:  # replaying it would fail too, with a nondeterminism error that does not say why
            failures[index] = ConfigurationError(
                f"it ran app {app_name!r}, which is not among the apps given ({', '.join(sorted(known)) or 'none'}); "
                "pass that app too (--app module:attr)"
            )

    async def each() -> AsyncIterator[WorkflowHistory]:
        for index in runnable:
            yield loaded[index][1]

    if runnable:
        # One result per history, in order (replay_workflows keys failures by run id, which two
        # exports of one run would share).
        replay = replayer(apps, passthrough_modules=passthrough_modules, data_converter=data_converter)
        async with replay.workflow_replay_iterator(each()) as results:
            async for index, result in _zip(runnable, results):
                failures[index] = result.replay_failure
    verdicts = [
        HistoryReplay(
            source=source, workflow_id=history.workflow_id, workflow_type=_workflow_type(history), failure=failure,
        )
        for (source, history), failure in zip(loaded, failures, strict=True)
    ]
    failed = [v for v in verdicts if not v.ok]
    if failed and raise_on_failure:
        raise ReplayFailedError(failed)
    return verdicts


async def _zip(items: Sequence[Any], results: AsyncIterator[Any]) -> AsyncIterator[tuple[Any, Any]]:
    index = 0
    async for result in results:
        yield items[index], result
        index += 1


def _app_of(history: WorkflowHistory) -> str | None:
    """The app an ADK agent workflow ran (its input's ``app_name``), when the input is plain JSON."""
    if _workflow_type(history) not in _APP_WORKFLOWS:
        return None
    started = history.events[0].workflow_execution_started_event_attributes
    if not started.input.payloads:
        return None
    try:
        value = json.loads(started.input.payloads[0].data)
    except ValueError:
        return None  # encoded by a codec: replay itself will tell
    name = value.get("app_name") if isinstance(value, dict) else None
    return name if isinstance(name, str) else None


def _workflow_type(history: WorkflowHistory) -> str:
    started = history.events[0].workflow_execution_started_event_attributes if history.events else None
    return started.workflow_type.name if started is not None else "?"
