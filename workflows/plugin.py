"""AdkPlugin: one Temporal plugin for clients and workers.

It sets the data converter (workflows.converter: pydantic, without None-valued fields), registers
the workflows and the activities, and lets adk_core, the boundary types and the apps' own
modules pass through the workflow sandbox: they are deterministic by design, and re-importing
them for every workflow run would cost more than the run itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from temporalio.contrib.opentelemetry import (
    OpenTelemetryInterceptor,
    ReplaySafeTracerProvider,
    TracingInterceptor,
)
from temporalio.converter import StorageDriver
from temporalio.plugin import SimplePlugin
from temporalio.worker import UnsandboxedWorkflowRunner, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from adk_core.errors import AdkError
from adk_temporal import payload_passes
from adk_temporal.activities.adk_activities import AdkActivities
from adk_temporal.activities.eval_activities import EvalActivities
from adk_temporal.activities.simulator_activities import SimulatorActivities

from .agent_run import AgentBranchWorkflow, AgentRunWorkflow, AgentToolWorkflow
from .app_scope import AppsInterceptor
from .converter import adk_converter
from .eval import EvalCaseWorkflow, EvalSuiteWorkflow
from .payload_storage import with_payload_storage
from .sandbox import as_adk_runner, sandbox_runner
from .session import SessionWorkflow

WORKFLOWS = [AgentRunWorkflow, AgentToolWorkflow, AgentBranchWorkflow, SessionWorkflow, EvalSuiteWorkflow, EvalCaseWorkflow]


def _runner_with_passthrough(extra_passthrough: Sequence[str]) -> Callable[[WorkflowRunner | None], WorkflowRunner]:
    """Keep the caller's runner choice: a sandboxed runner gains our passthrough modules and
    shortcuts (workflows.sandbox), an unsandboxed one (``UnsandboxedWorkflowRunner``, faster, for
    code you trust) stays as it is."""

    def configure(existing: WorkflowRunner | None) -> WorkflowRunner:
        if isinstance(existing, SandboxedWorkflowRunner):
            return as_adk_runner(existing, extra_passthrough)
        if isinstance(existing, UnsandboxedWorkflowRunner):
            return existing
        return sandbox_runner(extra_passthrough)

    return configure


def _simulator_activities(activities: AdkActivities) -> list:
    """SimulatorPlugin's activities, storing beside the worker's sessions."""
    return SimulatorActivities.for_sessions(activities.sessions).all()


class AdkPlugin(SimplePlugin):
    """Add to ``Client.connect(plugins=[...])``; a worker built from that client gets the rest.

    Args:
        activities: the worker's AdkActivities (None for a client-only plugin).
        passthrough_modules: your apps' modules, so agent trees are shared with workflows rather
            than re-imported inside the sandbox.
        tracing: add Temporal's OpenTelemetry interceptor (use on client and worker): the replay-safe
            one (spans with their real durations across cache evictions and worker restarts) when
            the process's tracer provider is Temporal's ``ReplaySafeTracerProvider``
            (adk_temporal.tracing.configure_tracing installs one), else TracingInterceptor.
        payload_storage: where payloads too large for Temporal go (workflows.payload_storage);
            give clients and workers the same one.
        eval_activities: the worker's EvalActivities (the eval workflows' listing and recording).
    """

    def __init__(
        self,
        activities: AdkActivities | None = None,
        *,
        passthrough_modules: Sequence[str] = (),
        tracing: bool = False,
        payload_storage: StorageDriver | None = None,
        eval_activities: EvalActivities | None = None,
    ) -> None:
        self.apps = activities.apps if activities is not None else None
        """The worker's AppRegistry (its activities' registry, handed to its workflows); None on a client."""
        interceptors: list = []
        if self.apps is not None:
            interceptors.append(AppsInterceptor(self.apps))
            payload_passes.install()  # no payload walk that cannot change anything (adk_temporal/payload_passes.py)
        if tracing:
            # Temporal's interceptor links client -> workflow -> activity spans and knows about
            # replay; the engine's own spans (invoke_agent, generate_content, execute_tool) nest in them.
            interceptors.append(_tracing_interceptor())
        super().__init__(
            "adk-temporal",
            # A callable: the client's own converter (its codec above all) is kept, not replaced.
            data_converter=lambda existing: with_payload_storage(adk_converter(existing), payload_storage),
            interceptors=interceptors or None,
            workflows=WORKFLOWS if activities is not None else None,
            activities=None if activities is None else [
                *activities.all(), *_simulator_activities(activities), *(eval_activities.all() if eval_activities else []),
            ],
            workflow_runner=_runner_with_passthrough(passthrough_modules) if activities is not None else None,
            workflow_failure_exception_types=[AdkError],
        )


def _tracing_interceptor() -> OpenTelemetryInterceptor | TracingInterceptor:
    from opentelemetry import trace

    if isinstance(trace.get_tracer_provider(), ReplaySafeTracerProvider):
        return OpenTelemetryInterceptor(add_temporal_spans=True)
    return TracingInterceptor()
