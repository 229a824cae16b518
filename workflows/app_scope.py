"""How workflow code finds the apps of the worker it runs on.

Workflow classes are instantiated by Temporal, not by us, so they cannot take the worker's
AppRegistry as an argument. AdkPlugin installs AppsInterceptor, which hands the registry to the
workflows of that one worker as a Temporal extern function (the same per-worker channel
Temporal's own OpenTelemetry interceptor uses to reach out of the sandbox). Nothing is global:
two workers in one process see their own apps.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.worker import Interceptor, WorkflowInboundInterceptor, WorkflowInterceptorClassInput

with workflow.unsafe.imports_passed_through():
    from adk_core.errors import ConfigurationError
    from adk_temporal.activities.apps import AppRegistry

EXTERN_NAME = "adk_temporal.apps"


def worker_apps() -> AppRegistry:
    """The registry of the worker running the current workflow."""
    get = workflow.extern_functions().get(EXTERN_NAME)
    if get is None:
        raise ConfigurationError(
            "this workflow runs on a worker without AdkPlugin's apps; build workers with "
            "adk_temporal.worker.build_worker(...) or Worker(..., plugins=[AdkPlugin(activities, apps=...)])"
        )
    return get()


class AppsInterceptor(Interceptor):
    """Gives one worker's workflows its AppRegistry; intercepts nothing else."""

    def __init__(self, apps: AppRegistry) -> None:
        self.apps = apps

    def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput) -> type[WorkflowInboundInterceptor] | None:
        apps = self.apps

        def get_apps() -> AppRegistry:
            return apps

        input.unsafe_extern_functions[EXTERN_NAME] = get_apps
        return None

    def __repr__(self) -> str:
        return f"AppsInterceptor({self.apps.names()!r})"
