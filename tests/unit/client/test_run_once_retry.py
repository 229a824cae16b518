"""run_once and the read calls retry transport errors without running anything twice (issue 24, item 9)."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from adk_temporal.workflows import AgentRunInput
from adkt.client import RUN_CALL_MEMO, AdkClient


class _Description:
    def __init__(self, memo: dict[str, Any], status: WorkflowExecutionStatus) -> None:
        self._memo, self.status = memo, status

    async def memo(self) -> dict[str, Any]:
        return self._memo


class _Handle:
    def __init__(self, server: _Server) -> None:
        self.server = server

    async def describe(self) -> _Description:
        return _Description(self.server.memo, self.server.status)


class _Server:
    """A Temporal that holds one workflow id: starts land, but the first answers may be lost."""

    def __init__(self, *, lose_answers: int, memo: dict[str, Any] | None = None,
                 status: WorkflowExecutionStatus = WorkflowExecutionStatus.COMPLETED) -> None:
        self.lose_answers = lose_answers
        self.memo = memo or {}
        self.status = status
        self.started: list[dict[str, Any]] = []
        self.policies: list[WorkflowIDReusePolicy] = []

    async def start_workflow(self, fn: Any, arg: Any, *, id: str, task_queue: str,
                             id_reuse_policy: WorkflowIDReusePolicy, memo: dict[str, Any], **_: Any) -> Any:
        self.policies.append(id_reuse_policy)
        if self.memo and (id_reuse_policy == WorkflowIDReusePolicy.REJECT_DUPLICATE
                          or self.status == WorkflowExecutionStatus.RUNNING):
            raise WorkflowAlreadyStartedError(id, "AgentRunWorkflow")
        self.started.append(memo)
        self.memo, self.status = memo, WorkflowExecutionStatus.COMPLETED  # a quick run: closed by the retry
        if self.lose_answers:
            self.lose_answers -= 1
            raise RPCError("transport error", RPCStatusCode.UNAVAILABLE, b"")
        return _Handle(self)

    def get_workflow_handle_for(self, fn: Any, workflow_id: str) -> _Handle:
        return _Handle(self)


def _start(server: _Server) -> Any:
    client = AdkClient(client=server, task_queue="q", retry_seconds=5)  # type: ignore[arg-type]
    run_input = AgentRunInput(app_name="app", user_id="u", session_id="s")
    return client._start_run(run_input, "adk-run/app/u/s/1", "app", {"memo": {RUN_CALL_MEMO: "this-call"}})


async def test_a_start_whose_answer_was_lost_is_found_again_not_started_twice() -> None:
    server = _Server(lose_answers=1)
    handle = await _start(server)
    assert isinstance(handle, _Handle)
    assert server.started == [{RUN_CALL_MEMO: "this-call"}]  # once, though the run closed before the retry
    assert server.policies == [WorkflowIDReusePolicy.ALLOW_DUPLICATE, WorkflowIDReusePolicy.REJECT_DUPLICATE]


async def test_a_closed_run_of_another_call_under_the_id_does_not_stand_for_this_one() -> None:
    server = _Server(lose_answers=0, memo={RUN_CALL_MEMO: "earlier-call"})
    # The first attempt sees the id free to reuse only if the old run is closed: it starts.
    handle = await _start(server)
    assert isinstance(handle, _Handle) and server.started == [{RUN_CALL_MEMO: "this-call"}]


async def test_a_running_run_of_another_call_is_refused_as_on_a_first_attempt() -> None:
    server = _Server(lose_answers=0, memo={RUN_CALL_MEMO: "earlier-call"}, status=WorkflowExecutionStatus.RUNNING)
    with pytest.raises(WorkflowAlreadyStartedError):
        await _start(server)
    assert server.started == []


async def test_reads_retry_transport_errors_only() -> None:
    client = AdkClient(client=None, retry_seconds=5)  # type: ignore[arg-type]
    calls: list[int] = []

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise RPCError("tcp connect error", RPCStatusCode.UNAVAILABLE, b"")
        return "ok"

    assert await client._reading(flaky) == "ok" and len(calls) == 3

    async def refused() -> str:
        raise RPCError("not found", RPCStatusCode.NOT_FOUND, b"")

    with pytest.raises(RPCError, match="not found"):
        await client._reading(refused)
