"""AdkClient's retry loop: what it retries, when it queues by signal, when it gives up."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.service import RPCError, RPCStatusCode

from adkt.client import AdkClient


class _FakeHandle:
    id = "adk-session/app/u/s"


def _client(retry_seconds: float = 5.0) -> AdkClient:
    # _retrying only uses the Temporal client to check for failing workflow tasks, which it does
    # after 5 s of waiting: these calls answer at once, so no client is needed.
    return AdkClient(client=None, retry_seconds=retry_seconds)  # type: ignore[arg-type]


def _failing(*statuses: RPCStatusCode, result: Any = "ok"):
    calls: list[int] = []

    async def call() -> Any:
        calls.append(1)
        if len(calls) <= len(statuses):
            raise RPCError("boom", statuses[len(calls) - 1], b"")
        return result

    return call, calls


async def test_transport_errors_are_retried_until_the_call_succeeds() -> None:
    call, calls = _failing(RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED)
    queued: list[int] = []

    async def busy() -> None:
        queued.append(1)

    assert await _client()._retrying(call, _FakeHandle(), busy=busy) == "ok"  # type: ignore[arg-type]
    assert len(calls) == 3 and queued == []


async def test_a_refusal_for_too_many_updates_queues_by_signal_instead() -> None:
    call, calls = _failing(RPCStatusCode.RESOURCE_EXHAUSTED)
    queued: list[int] = []

    async def busy() -> None:
        queued.append(1)

    assert await _client()._retrying(call, _FakeHandle(), busy=busy) is None  # type: ignore[arg-type]
    assert len(calls) == 1 and queued == [1]


async def test_errors_that_are_not_transport_errors_are_raised_at_once() -> None:
    call, calls = _failing(RPCStatusCode.INVALID_ARGUMENT)

    async def busy() -> None:
        raise AssertionError("not busy")

    with pytest.raises(RPCError):
        await _client()._retrying(call, _FakeHandle(), busy=busy)  # type: ignore[arg-type]
    assert len(calls) == 1


async def test_transport_errors_stop_being_retried_after_retry_seconds() -> None:
    call, calls = _failing(*[RPCStatusCode.UNAVAILABLE] * 1000)

    async def busy() -> None:
        raise AssertionError("not busy")

    with pytest.raises(RPCError):
        await _client(retry_seconds=0.3)._retrying(call, _FakeHandle(), busy=busy)  # type: ignore[arg-type]
    assert 1 < len(calls) < 20


def test_a_waiting_send_checks_for_failing_tasks_soon_then_less_and_less_often() -> None:
    import itertools

    from adkt.client import TASK_FAILURE_CHECK_MAX_SECONDS, TASK_FAILURE_CHECK_SECONDS, failure_check_delays

    delays = list(itertools.islice(failure_check_delays(), 8))
    assert delays[0] == TASK_FAILURE_CHECK_SECONDS  # a task failing on its code is reported soon
    assert delays == sorted(delays) and delays[1] == 2 * delays[0]
    assert delays[-1] == TASK_FAILURE_CHECK_MAX_SECONDS
    # A send waiting 120 s (a burst) reads the history 4 times, not 24 (issue 21).
    waited, checks = 0.0, 0
    for delay in failure_check_delays():
        waited += delay
        if waited > 120:
            break
        checks += 1
    assert checks == 4
