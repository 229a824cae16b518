"""RemoteA2aAgent in-process against a real a2a-sdk server on loopback: polling and streaming, the
remote context kept across turns, auth headers, a failed task, an unreachable remote and a card it
cannot use, each as the agent's event; a task waiting for input that the remote lost or ended, and
which errors forget it. (The durable side: test_a2a_durable.py, test_a2a_crash.py.)"""

from __future__ import annotations

from datetime import timedelta

import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import CancelTaskRequest
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from adk_core import InMemoryRunner, SequentialAgent
from adk_core.a2a import A2aCallError, RemoteA2aAgent
from adk_core.errors import ConfigurationError
from tests.a2a_servers.helpers import EchoExecutor, echo_app, serving
from tests.mcp_servers.helpers import free_port

pytestmark = pytest.mark.integration

FAST = {"poll_interval": timedelta(seconds=0.05), "poll_budget": timedelta(seconds=5), "max_wait": timedelta(seconds=20)}


def runner_for(remote: RemoteA2aAgent) -> InMemoryRunner:
    return InMemoryRunner(SequentialAgent(name="root", sub_agents=[remote]))


async def test_polls_a_running_task_keeps_the_context_and_sends_the_headers() -> None:
    port = free_port()
    executor = EchoExecutor(delay=0.3)
    async with serving(echo_app(port, executor), port) as url:
        remote = RemoteA2aAgent(name="echo", agent_card=url, headers=lambda: {"Authorization": "Bearer t0k"}, **FAST)
        runner = runner_for(remote)
        first = await runner.run("hi")
        second = await runner.run("again")
    assert [e.content.text for e in first if e.content] == ["echo: hi"]
    assert first[-1].author == "echo" and first[-1].custom_metadata["a2a"]["state"] == "completed"
    assert [e.content.text for e in second if e.content] == ["echo: again"]
    one, two = executor.seen
    assert one["context_id"] == two["context_id"]  # the second turn continues the remote conversation
    assert one["message_id"] != two["message_id"] and one["authorization"] == "Bearer t0k"
    assert one["message_id"] == f"{first[-1].invocation_id}:{one['message_id'].split(':', 1)[1]}"  # the call's key


async def test_streams_when_the_remote_offers_it_and_reads_a_card_url() -> None:
    port = free_port()
    executor = EchoExecutor(delay=0.1)
    async with serving(echo_app(port, executor), port) as url:
        remote = RemoteA2aAgent(name="echo", agent_card=f"{url}.well-known/agent-card.json", streaming=True, **FAST)
        events = await runner_for(remote).run("hi")
    assert [e.content.text for e in events if e.content] == ["echo: hi"]


async def test_a_failed_task_and_an_unreachable_remote_are_events_the_user_sees() -> None:
    port = free_port()
    async with serving(echo_app(port, EchoExecutor()), port) as url:
        failed = await runner_for(RemoteA2aAgent(name="echo", agent_card=url, **FAST)).run("please fail")
    assert failed[-1].error_code == "A2A_TASK_FAILED" and "cannot do that" in failed[-1].content.text
    gone = await runner_for(RemoteA2aAgent(name="echo", agent_card=url, **FAST)).run("hi")  # the server stopped
    assert gone[-1].error_code == "A2A_CALL_FAILED" and url.rstrip("/") in gone[-1].content.text


async def test_a_card_without_an_http_interface_is_refused_with_what_to_fix() -> None:
    port = free_port()
    async with serving(echo_app(port, EchoExecutor(), binding="GRPC"), port) as url:
        remote = RemoteA2aAgent(name="echo", agent_card=url, **FAST)
        with pytest.raises(A2aCallError, match="no JSONRPC or HTTP\\+JSON interface.*fix the remote's card"):
            await remote.connection.card()
        events = await runner_for(remote).run("hi")
    assert events[-1].error_code == "A2A_CALL_FAILED"


def test_poll_settings_out_of_order_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="poll_interval <= poll_budget <= max_wait"):
        RemoteA2aAgent(name="x", agent_card="http://h/", poll_budget=timedelta(seconds=10), max_wait=timedelta(seconds=1))
    with pytest.raises(ConfigurationError, match="not an http"):
        RemoteA2aAgent(name="x", agent_card="localhost:8001")


async def test_a_conversation_goes_on_after_the_remote_lost_or_ended_its_waiting_task() -> None:
    port = free_port()
    remote = RemoteA2aAgent(name="echo", agent_card=f"http://127.0.0.1:{port}/", **FAST)
    runner = runner_for(remote)
    async with serving(echo_app(port, EchoExecutor()), port):
        asked = await runner.run("ask me a question")
    assert asked[-1].custom_metadata["a2a"]["state"] == "input_required"
    executor = EchoExecutor()
    async with serving(echo_app(port, executor), port) as url:  # restarted: the a2a-sdk kept its tasks in memory
        lost = await runner.run("the answer")  # into the task the remote no longer knows: sent as a new task
        asked_again = await runner.run("ask me again")
        client = await create_client(url, ClientConfig(streaming=False))
        await client.cancel_task(CancelTaskRequest(id=asked_again[-1].custom_metadata["a2a"]["task_id"]))
        await client.close()
        ended = await runner.run("after the cancel")  # into a task that ended: sent as a new task
    assert [(e[-1].error_code, e[-1].content.text) for e in (lost, ended)] == [
        (None, "echo: the answer"), (None, "echo: after the cancel")
    ]
    contexts = {m["context_id"] for m in executor.seen}
    assert len(contexts) == 1 and contexts == {asked[-1].custom_metadata["a2a"]["context_id"]}  # one conversation
    # The remote refused the sends into the lost and the ended task before running anything; the
    # executor saw each message once, in a new task but for the one continuing the waiting task.
    sent = [(m["text"], m["task_id"] == asked_again[-1].custom_metadata["a2a"]["task_id"]) for m in executor.seen]
    assert sent == [("the answer", False), ("ask me again", True), ("after the cancel", False)]


async def test_an_error_forgets_the_waiting_task_unless_the_remote_gave_no_answer() -> None:
    port = free_port()
    remote = RemoteA2aAgent(name="echo", agent_card=f"http://127.0.0.1:{port}/", **FAST)
    runner = runner_for(remote)
    async with serving(echo_app(port, EchoExecutor()), port):
        asked = await runner.run("ask me a question")
    down = await runner.run("the answer")  # nothing listens: no answer, the task may still wait
    refusing = Starlette(routes=[Route("/", lambda _: JSONResponse({"detail": "forbidden"}, status_code=403), methods=["POST"])])
    async with serving(refusing, port):
        refused = await runner.run("the answer")  # a refusal: the task is forgotten
    assert [e[-1].error_code for e in (down, refused)] == ["A2A_CALL_FAILED", "A2A_CALL_FAILED"]
    assert "403" in refused[-1].content.text
    assert remote.state_key not in down[-1].actions.state_delta  # kept: the remote may still hold the task
    context = asked[-1].custom_metadata["a2a"]["context_id"]
    assert refused[-1].actions.state_delta[remote.state_key] == {"context_id": context, "task_id": None}
