"""The workflow sandbox our plugin configures: Temporal's, with two costs taken out of every activation.

Temporal's sandboxed instance answers two questions by executing a source string inside the sandbox,
compiled anew on each call:

- ``get_serialization_context`` / ``get_external_store_context``: asked once per payload and per
  conversion pass while an activation is decoded and its completion encoded (about 80 times in a W1
  turn). The answer is a lookup in the instance's own pending-command tables; nothing in it imports,
  reads the clock or touches a restricted module, so the instance built inside the sandbox answers it
  directly here, on the same thread, while no activation runs.
- ``activate`` (and the other entries): the same few source strings every time, so each is compiled
  once per process.

Both change where Python looks for code, not what runs: the workflow's code still executes inside the
sandbox, under its importer and restrictions. The shortcut relies on private names of temporalio's
sandbox (``_Instance.globals_and_locals``, ``__temporal_in_sandbox``, ``_run_code``); an SDK that
renames them keeps working unchanged, only slower, and ``tests/unit/test_sandbox_runner.py`` fails so
the change is seen.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Sequence
from typing import Any

import temporalio.workflow
from temporalio.worker import WorkflowInstance, WorkflowInstanceDetails
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

PASSTHROUGH = (
    "adk_core",
    "adk_temporal",
    "pydantic",
    "pydantic_core",
    "annotated_types",
    "opentelemetry",
    "jsonschema",
    "docstring_parser",
    "httpx",
    "httpx_sse",
)
"""Modules shared with the sandbox rather than re-imported for every workflow run: deterministic by
design, and re-importing them would cost more than the run itself."""


@dataclasses.dataclass(frozen=True)
class AdkSandboxedWorkflowRunner(SandboxedWorkflowRunner):
    """``SandboxedWorkflowRunner`` whose instances skip the per-call compile and sandbox entry for
    serialization contexts (see the module docstring). Same restrictions, same isolation."""

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        instance = super().create_instance(det)
        shortcut_sandbox_calls(instance)
        return instance


def sandbox_runner(extra_passthrough: Sequence[str] = ()) -> AdkSandboxedWorkflowRunner:
    restrictions = SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH, *extra_passthrough)
    return AdkSandboxedWorkflowRunner(restrictions=restrictions)


def as_adk_runner(runner: SandboxedWorkflowRunner, extra_passthrough: Sequence[str]) -> AdkSandboxedWorkflowRunner:
    """A user's sandboxed runner, keeping its restrictions and runner class, with our passthrough
    modules and the shortcuts."""
    return AdkSandboxedWorkflowRunner(
        restrictions=runner.restrictions.with_passthrough_modules(*PASSTHROUGH, *extra_passthrough),
        runner_class=runner.runner_class,
    )


def shortcut_sandbox_calls(instance: Any) -> bool:
    """Install the shortcuts on a sandboxed instance; False (instance unchanged) when this temporalio
    does not have the internals they rely on."""
    in_sandbox = getattr(instance, "globals_and_locals", {}).get("__temporal_in_sandbox")
    run_code = getattr(instance, "_run_code", None)
    if in_sandbox is None or run_code is None or not hasattr(in_sandbox, "get_serialization_context"):
        return False
    instance.get_serialization_context = in_sandbox.get_serialization_context
    instance.get_external_store_context = in_sandbox.get_external_store_context
    instance._run_code = functools.partial(_run_compiled_code, instance)
    return True


@functools.lru_cache(maxsize=64)
def _compiled(code: str) -> Any:
    return compile(code, "workflow_sandbox.py", "exec")


def _run_compiled_code(instance: Any, code: str, **extra_globals: Any) -> None:
    """temporalio's ``_Instance._run_code`` with the code compiled once: the same globals in and out,
    the same in-sandbox flag and thread id around the exec."""
    scope = instance.globals_and_locals
    scope.update(extra_globals)
    try:
        temporalio.workflow.unsafe._set_in_sandbox(True)
        instance._current_thread_id = threading.get_ident()
        exec(_compiled(code), scope, scope)
    finally:
        temporalio.workflow.unsafe._set_in_sandbox(False)
        instance._current_thread_id = None
        for key in extra_globals:
            scope.pop(key, None)
