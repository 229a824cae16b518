"""RemoteA2aAgent's client, without a server: SDK errors sorted into retried (A2aUnavailableError)
and not retried (A2aCallError), a task or message turned into the outcome the agent reads, and the
card check."""

from __future__ import annotations

import httpx
import pytest
from a2a.client import A2AClientError, A2AClientTimeoutError, AgentCardResolutionError
from a2a.helpers import new_task, new_text_artifact, new_text_message
from a2a.types import AgentCard, AgentInterface, TaskNotFoundError, TaskState, TaskStatus

from adk_core.a2a import A2aCallError, A2aUnavailableError
from adk_core.a2a._client import outcome_of_message, outcome_of_task, sdk_errors, validated_card


def _status_error(status: int) -> A2AClientError:
    request = httpx.Request("POST", "http://remote/")
    cause = httpx.HTTPStatusError("x", request=request, response=httpx.Response(status, request=request))
    try:
        raise A2AClientError(f"HTTP Error {status}") from cause
    except A2AClientError as error:
        return error


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (A2AClientTimeoutError("slow"), A2aUnavailableError),
        (_status_error(503), A2aUnavailableError),
        (_status_error(429), A2aUnavailableError),
        (_status_error(401), A2aCallError),
        (TaskNotFoundError("no such task"), A2aCallError),
        (AgentCardResolutionError("down", status_code=None), A2aUnavailableError),
        (AgentCardResolutionError("not found", status_code=404), A2aCallError),
        (ConnectionRefusedError("refused"), A2aUnavailableError),
    ],
)
def test_sdk_errors_are_sorted_by_whether_trying_again_can_help(raised: Exception, expected: type) -> None:
    with pytest.raises(expected, match="asking"), sdk_errors("asking"):
        raise raised


def test_a_task_answers_with_its_artifacts_else_its_status_message() -> None:
    done = new_task("t1", "c1", TaskState.TASK_STATE_COMPLETED, artifacts=[new_text_artifact("answer", "42")])
    assert outcome_of_task(done) == {"kind": "task", "task_id": "t1", "context_id": "c1", "state": "completed",
                                     "text": "42", "data": [], "status_text": ""}  # fmt: skip
    failed = new_task("t2", "c1", TaskState.TASK_STATE_FAILED)
    failed.status.CopyFrom(TaskStatus(state=TaskState.TASK_STATE_FAILED, message=new_text_message("out of stock")))
    assert (outcome_of_task(failed)["state"], outcome_of_task(failed)["text"]) == ("failed", "out of stock")
    assert outcome_of_message(new_text_message("hi", context_id="c9"))["text"] == "hi"


def test_a_card_without_a_name_or_an_http_interface_says_what_to_fix() -> None:
    card = AgentCard(name="", supported_interfaces=[AgentInterface(protocol_binding="GRPC", url="grpc://h:1")])
    with pytest.raises(A2aCallError, match="no name; it offers no JSONRPC or HTTP\\+JSON interface.*fix the remote's card"):
        validated_card(card, "http://h/")
