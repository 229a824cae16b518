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
- entering the sandbox (``Importer.applied``): seven nested context managers, one per global it swaps
  for a thread-local stand-in (``sys.modules``, ``__import__``, five builtins), about 16 us hot and
  60 us in a worker, on each of a W1 turn's 8 activations. ``_SandboxEntry`` makes the same swaps, in
  the same order, under the same locks, in one step (about 5 us hot).

Both change where Python looks for code, not what runs: the workflow's code still executes inside the
sandbox, under its importer and restrictions. The shortcut relies on private names of temporalio's
sandbox (``_Instance.globals_and_locals``, ``__temporal_in_sandbox``, ``_run_code``, the importer's
thread-local overrides); an SDK that renames them keeps working unchanged, only slower, and
``tests/unit/test_sandbox_runner.py`` fails so the change is seen. The one-step entry is used only on
the temporalio versions it was checked against (``ONE_STEP_ENTRY_VERIFIED``).
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import sys
import threading
from collections.abc import Sequence
from typing import Any

import temporalio
import temporalio.workflow
from temporalio.worker import WorkflowInstance, WorkflowInstanceDetails
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions
from temporalio.worker.workflow_sandbox import _importer as sandbox_importer

ONE_STEP_ENTRY_VERIFIED = ("1.35.",)
"""temporalio versions whose ``Importer.applied`` (workflow_sandbox/_importer.py) ``_SandboxEntry``
was checked against: the same swaps, in the same order. Add a version after reading it again."""

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
    importer = getattr(instance, "importer", None)
    instance._adk_entry = _SandboxEntry.for_importer(importer) if importer is not None else None
    return True


@functools.lru_cache(maxsize=64)
def _compiled(code: str) -> Any:
    return compile(code, "workflow_sandbox.py", "exec")


def _run_compiled_code(instance: Any, code: str, **extra_globals: Any) -> None:
    """temporalio's ``_Instance._run_code`` with the code compiled once: the same globals in and out,
    the same in-sandbox flag and thread id around the exec."""
    scope = instance.globals_and_locals
    entry = instance._adk_entry
    if entry is not None and extra_globals.get("__temporal_importer") is entry.importer:
        extra_globals["__temporal_importer"] = entry  # the code's ``__temporal_importer.applied()``
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


class _SandboxEntry:
    """An importer's ``applied()`` made in one step: temporalio's ``Importer.applied`` nests a context
    manager per swapped global (``_ThreadLocalOverride.applied``); this makes the same swaps in the same
    order, each under its override's lock and counter, so a thread entering or leaving the sandbox this
    way and one using temporalio's own path see the same globals. Built once per workflow instance."""

    __slots__ = ("importer", "_overrides")

    def __init__(self, importer: Any, overrides: tuple[tuple[Any, Any, str, Any], ...]) -> None:
        self.importer = importer
        self._overrides = overrides

    @classmethod
    def for_importer(cls, importer: Any) -> _SandboxEntry | None:
        """None (temporalio's own path stays) unless this is a temporalio whose ``Importer.applied`` was
        read against this one (``ONE_STEP_ENTRY_VERIFIED``) and has every internal the swaps need. A
        newer temporalio may swap more globals or in another order; until someone reads it again and
        adds its version, its workers enter the sandbox its own way, only slower."""
        if not temporalio.__version__.startswith(ONE_STEP_ENTRY_VERIFIED):
            return None
        try:
            overrides = (
                (sandbox_importer._thread_local_sys_modules, sys, "modules", importer.new_modules),
                (sandbox_importer._thread_local_import, builtins, "__import__", importer.import_func),
                *((override, builtins, name, restrict) for name, override, restrict in importer.restricted_builtins),
            )
        except (AttributeError, TypeError, ValueError):
            return None
        needed = ("thread_local", "applied_counter", "applied_counter_lock", "orig")
        if not hasattr(sandbox_importer.Importer, "_thread_local_current") or not all(
            hasattr(override, attr) for override, *_ in overrides for attr in needed
        ):
            return None
        return cls(importer, overrides)

    def applied(self) -> _Applied:
        return _Applied(self)


class _Applied:
    __slots__ = ("_entry", "_previous", "_outer_importer")

    def __init__(self, entry: _SandboxEntry) -> None:
        self._entry = entry
        self._previous: list[Any] = []

    def __enter__(self) -> None:
        current = sandbox_importer.Importer._thread_local_current
        self._outer_importer = current.__dict__.get("importer")
        current.importer = self._entry.importer
        try:
            for override, owner, attr, value in self._entry._overrides:
                local = override.thread_local.__dict__
                previous = local.get("data")
                with override.applied_counter_lock:
                    override.applied_counter += 1
                    if getattr(owner, attr) is not override:
                        setattr(owner, attr, override)
                local["data"] = value
                self._previous.append(previous)
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def __exit__(self, *exc_info: object) -> None:
        self._leave(len(self._previous) - 1)

    def _leave(self, index: int) -> None:
        """Undo swap ``index``, then the ones before it, each in a ``finally``: an exception raised
        into this thread meanwhile (temporalio's deadlock interruption does that) leaves at most the
        swap it hit undone, as temporalio's nested context managers do."""
        if index < 0:
            self._previous.clear()
            sandbox_importer.Importer._thread_local_current.importer = self._outer_importer
            return
        try:
            override, owner, attr, _ = self._entry._overrides[index]
            previous = self._previous[index]
            local = override.thread_local.__dict__
            if previous is None:
                local.pop("data", None)
            else:
                local["data"] = previous
            with override.applied_counter_lock:
                override.applied_counter -= 1
                if override.applied_counter == 0:
                    setattr(owner, attr, override.orig)
        finally:
            self._leave(index - 1)
