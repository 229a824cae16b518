"""Worker and CLI subprocesses in integration tests: wait for a condition and stop a process, each
within a bound, failing with the processes' logs so a hang or a crash explains itself."""

from __future__ import annotations

import asyncio
import inspect
import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import ResetStickyTaskQueueRequest
from temporalio.client import Client


def log_tails(logs: Sequence[Path], chars: int = 2000) -> str:
    return "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-chars:]}" for log in logs if log.exists())


async def wait_until(
    check: Callable[[], bool | Awaitable[bool]], what: str, *, timeout: float, logs: Sequence[Path] = (),
    procs: Sequence[subprocess.Popen] = (), interval: float = 0.2,
) -> None:
    """Poll ``check`` (sync or async) until true; fail after ``timeout`` seconds, or as soon as one of
    ``procs`` exits, with the tails of ``logs``."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        for proc in procs:
            if proc.poll() is not None:
                raise AssertionError(f"{what}: {proc.args[:4]} exited with {proc.returncode}\n{log_tails(logs)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s\n{log_tails(logs)}")
        await asyncio.sleep(interval)


def stop_process(proc: subprocess.Popen, *, sig: int = signal.SIGINT, timeout: float = 60) -> int:
    """Send ``sig`` to the process group (started with ``start_new_session=True``) and wait up to
    ``timeout`` seconds; a process that does not stop is killed and fails the test."""
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
    return wait_exit(proc, timeout=timeout, after=signal.Signals(sig).name)


def wait_exit(proc: subprocess.Popen, *, timeout: float, after: str = "") -> int:
    """The process's exit code within ``timeout`` seconds; otherwise it is killed and the test fails."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        since = f" of {after}" if after else ""
        raise AssertionError(f"{proc.args[:6]} did not exit within {timeout:g} s{since}") from None


def worker_script(held_until: Path | None = None) -> list[str]:
    """What follows ``python`` (in the repository root) to run ``worker.py``; with ``held_until``, a
    standby worker (tests/integration/standby_worker.py) that imports now and starts once that file
    exists (``release``)."""
    return ["worker.py"] if held_until is None else ["-m", "tests.integration.standby_worker", str(held_until)]


def release(standby: subprocess.Popen, go: Path, log: Path) -> None:
    """Let a standby worker (started with ``worker_script(held_until=go)``) start polling."""
    if standby.poll() is not None:
        raise AssertionError(f"standby worker exited with {standby.returncode}:\n{log.read_text()[-3000:]}")
    go.write_text("go")


async def forget_sticky_queues(client: Client, *workflow_ids: str) -> None:
    """A dead or stopped worker's sticky queue would hold each workflow's next task until its
    schedule-to-start timeout sends it to the shared queue; production waits that out, tests skip it."""
    for workflow_id in workflow_ids:
        await client.workflow_service.reset_sticky_task_queue(ResetStickyTaskQueueRequest(
            namespace=client.namespace, execution=WorkflowExecution(workflow_id=workflow_id)))  # fmt: skip
