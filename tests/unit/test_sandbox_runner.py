"""workflows.sandbox: the runner our plugin installs answers serialization contexts without entering
the sandbox, and gives the same answers Temporal's own path gives. Fails when a temporalio upgrade
renames the internals the shortcut relies on (the runner then still works, only slower)."""

from __future__ import annotations

import pytest
import temporalio.converter
import temporalio.workflow
from temporalio.api.common.v1 import Payloads
from temporalio.api.enums.v1 import CommandType
from temporalio.api.failure.v1 import Failure
from temporalio.worker import WorkflowInstanceDetails
from temporalio.worker._command_aware_visitor import CommandInfo
from temporalio.worker.workflow_sandbox._runner import _fake_info

from adk_temporal.workflows.sandbox import AdkSandboxedWorkflowRunner, sandbox_runner, shortcut_sandbox_calls
from adk_temporal.workflows.session import SessionWorkflow


def _instance(runner: AdkSandboxedWorkflowRunner):
    converter = temporalio.converter.DataConverter.default
    return runner.create_instance(WorkflowInstanceDetails(
        payload_converter_factory=converter._new_payload_converter,
        failure_converter_class=converter.failure_converter_class,
        interceptor_classes=[],
        defn=temporalio.workflow._Definition.must_from_class(SessionWorkflow),
        info=_fake_info,
        randomness_seed=1,
        extern_functions={},
        disable_eager_activity_execution=False,
        worker_level_failure_exception_types=[],
        patch_activation_callback=None,
        last_completion_result=Payloads(),
        last_failure=Failure(),
    ))


async def test_the_shortcut_is_installed_and_answers_as_the_sandbox_does() -> None:
    instance = _instance(sandbox_runner())
    assert "get_serialization_context" in vars(instance), "shortcut not installed: temporalio internals changed"
    activity = CommandInfo(command_type=CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK, command_seq=7)
    for command in (None, activity):
        through_sandbox = type(instance).get_serialization_context(instance, command)
        assert instance.get_serialization_context(command) == through_sandbox
        assert instance.get_external_store_context(command) == type(instance).get_external_store_context(instance, command)
    assert instance.get_serialization_context(None) == temporalio.converter.WorkflowSerializationContext(
        namespace=_fake_info.namespace, workflow_id=_fake_info.workflow_id
    )


def test_an_instance_without_the_internals_is_left_as_it_is() -> None:
    class Other:
        pass

    other = Other()
    assert shortcut_sandbox_calls(other) is False and vars(other) == {}


async def test_code_run_in_the_sandbox_is_compiled_once() -> None:
    from adk_temporal.workflows import sandbox

    sandbox._compiled.cache_clear()
    instance = _instance(sandbox_runner())
    instance._run_code("__temporal_probe = 1 + 1\n")
    instance._run_code("__temporal_probe = 1 + 1\n")
    assert instance.globals_and_locals.pop("__temporal_probe") == 2
    info = sandbox._compiled.cache_info()
    assert info.hits >= 1 and info.misses >= 1


def _sandbox_globals(importer) -> tuple:
    """What entering the sandbox swaps, as seen from this thread: the globals and what they stand for here."""
    import builtins
    import sys

    from temporalio.worker.workflow_sandbox._importer import Importer

    swapped = (sys.modules, builtins.__import__, builtins.isinstance, builtins.issubclass, builtins.open)
    here = tuple(getattr(g, "current", g) for g in swapped)
    return swapped, here, Importer.current_importer()


async def test_entering_the_sandbox_in_one_step_swaps_what_temporalios_importer_swaps() -> None:
    instance = _instance(sandbox_runner())
    entry = instance._adk_entry
    assert entry is not None, "one-step sandbox entry not installed: temporalio internals changed"
    importer = instance.importer
    outside = _sandbox_globals(importer)
    with importer.applied():
        theirs = _sandbox_globals(importer)
    with entry.applied():
        ours = _sandbox_globals(importer)
    assert ours == theirs and ours != outside
    assert ours[1][0] is importer.new_modules and ours[2] is importer
    assert _sandbox_globals(importer) == outside  # all put back


async def test_a_thread_leaving_the_sandbox_leaves_it_in_place_for_one_still_inside() -> None:
    import builtins
    import threading

    instance = _instance(sandbox_runner())
    importer, entry = instance.importer, instance._adk_entry
    plain_isinstance = builtins.isinstance
    inside, leave = threading.Event(), threading.Event()
    seen: list[object] = []

    def other_thread() -> None:  # temporalio's own path, as another workflow's activation takes it
        with importer.applied():
            inside.set()
            leave.wait(5)
            seen.append(builtins.isinstance)

    thread = threading.Thread(target=other_thread)
    thread.start()
    assert inside.wait(5)
    with entry.applied():
        pass
    leave.set()
    thread.join(5)
    assert seen and seen[0] is not plain_isinstance  # still swapped for the thread inside
    assert builtins.isinstance is plain_isinstance  # and put back once both left


async def test_an_activation_enters_the_sandbox_in_one_step() -> None:
    instance = _instance(sandbox_runner())
    instance._run_code("__temporal_probe = __temporal_importer\n", __temporal_importer=instance.importer)
    assert instance.globals_and_locals.pop("__temporal_probe") is instance._adk_entry


async def test_code_entered_in_one_step_is_still_restricted() -> None:
    instance = _instance(sandbox_runner())
    probe = (
        "with __temporal_importer.applied():\n"
        "  __temporal_probe = []\n"
        "  for attempt in (lambda: open('/dev/null'), lambda: __import__('datetime').datetime.now()):\n"
        "    try:\n"
        "      attempt()\n"
        "    except BaseException as e:\n"
        "      __temporal_probe.append(type(e).__name__)\n"
    )
    instance.importer.restriction_context.is_runtime = True  # as an activation sets it
    try:
        instance._run_code(probe, __temporal_importer=instance.importer)
    finally:
        instance.importer.restriction_context.is_runtime = False
    assert instance.globals_and_locals.pop("__temporal_probe") == ["RestrictedWorkflowAccessError"] * 2


async def test_an_exception_while_leaving_the_sandbox_still_undoes_every_other_swap() -> None:
    """temporalio raises into a workflow thread it judges deadlocked; that may land while the thread
    leaves the sandbox. What was not being undone at that moment must still be undone."""
    import builtins
    import sys

    from temporalio.worker.workflow_sandbox._importer import Importer

    instance = _instance(sandbox_runner())
    entry = instance._adk_entry
    override, owner, attr, _ = entry._overrides[2]  # the third swap (a restricted builtin)
    real_lock = override.applied_counter_lock

    class Interrupted(Exception):
        pass

    class LockThatRaisesOnLeave:
        armed = False

        def __enter__(self):
            if self.armed:
                raise Interrupted
            return real_lock.__enter__()

        def __exit__(self, *exc):
            return real_lock.__exit__(*exc)

    lock = LockThatRaisesOnLeave()
    counter_before = override.applied_counter
    override.applied_counter_lock = lock
    plain = (sys.modules, builtins.__import__, builtins.isinstance)
    try:
        applied = entry.applied()
        applied.__enter__()
        lock.armed = True
        with pytest.raises(Interrupted):
            applied.__exit__(None, None, None)
        assert (sys.modules, builtins.__import__, builtins.isinstance) == plain
        assert Importer.current_importer() is None
    finally:  # undo what the interruption left, so the rest of the session runs unsandboxed
        override.applied_counter_lock = real_lock
        if override.applied_counter > counter_before:
            override.applied_counter = counter_before
            if counter_before == 0:
                setattr(owner, attr, override.orig)


async def test_a_temporalio_the_entry_was_not_checked_against_enters_its_own_way(monkeypatch) -> None:
    import temporalio

    monkeypatch.setattr(temporalio, "__version__", "1.99.0")
    instance = _instance(sandbox_runner())
    assert instance._adk_entry is None
    instance._run_code("__temporal_probe = __temporal_importer\n", __temporal_importer=instance.importer)
    assert instance.globals_and_locals.pop("__temporal_probe") is instance.importer
