"""Two apps on one durable stack, one delegating to the other over A2A: the specialist served by
adkt.a2a_server (a real a2a-sdk server on loopback), the front app's RemoteA2aAgent sending and
polling in run_tool activities. Also the served side alone, with the a2a-sdk's own client: the
card, a message sent twice under one message id (one turn), tasks/get and message/stream."""

from __future__ import annotations

import asyncio
import importlib
import uuid
from pathlib import Path

import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers import get_artifact_text, new_text_part
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)
from temporalio.api.enums.v1 import EventType

from adk_temporal.workflows import session_workflow_id
from adkt.a2a_server import app_a2a_server
from tests.a2a_servers.helpers import serving
from tests.integration import a2a_apps
from tests.integration.conftest import DurableStack
from tests.mcp_servers.helpers import free_port

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

ALICE_KEY, BOB_KEY = "alice-" + "a" * 30, "bob-" + "b" * 30


async def _served_specialist(durable_stack: DurableStack) -> tuple[str, int]:
    name = f"a2a_specialist_{uuid.uuid4().hex[:6]}"
    durable_stack.register(a2a_apps.specialist_app(name))
    return name, free_port()


async def test_front_app_delegates_to_the_served_app_through_activities(durable_stack: DurableStack) -> None:
    specialist, port = await _served_specialist(durable_stack)
    front = durable_stack.register(a2a_apps.front_app(f"http://127.0.0.1:{port}/", name=f"a2a_front_{uuid.uuid4().hex[:6]}"))
    server = app_a2a_server(durable_stack.client, specialist, url=f"http://127.0.0.1:{port}/")
    session = f"s-{uuid.uuid4().hex[:6]}"
    async with serving(server, port):
        first = await durable_stack.client.send(front.name, "u1", session, "what is 2+2?")
        second = await durable_stack.client.send(front.name, "u1", session, "and 3+3?")
    assert first.final_text == "specialist says: what is 2+2?"
    assert second.final_text == "specialist says: and 3+3?"
    stored = await durable_stack.sessions.get_session(app_name=front.name, user_id="u1", session_id=session)
    assert stored is not None
    answers = [e for e in stored.events if e.author == "specialist_remote"]
    assert [e.custom_metadata["a2a"]["state"] for e in answers] == ["completed", "completed"]
    context = answers[0].custom_metadata["a2a"]["context_id"]
    assert answers[1].custom_metadata["a2a"]["context_id"] == context  # one remote conversation
    remote = await durable_stack.sessions.get_session(app_name=specialist, user_id="a2a", session_id=context)
    assert remote is not None and [e.content.text for e in remote.events if e.author == "user"] == [
        "what is 2+2?", "and 3+3?"
    ]
    # The remote calls ran as activities of the front conversation, visible in its history.
    handle = durable_stack.client.client.get_workflow_handle(session_workflow_id(front.name, "u1", session))
    summaries = [
        e.user_metadata.summary.data.decode()
        async for e in handle.fetch_history_events()
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert any("specialist_remote -> specialist_remote.a2a_send" in s for s in summaries), summaries


async def test_served_app_answers_a2a_clients_once_per_message_id(durable_stack: DurableStack) -> None:
    specialist, port = await _served_specialist(durable_stack)
    server = app_a2a_server(durable_stack.client, specialist, url=f"http://127.0.0.1:{port}/", description="answers")
    context = f"ctx-{uuid.uuid4().hex[:6]}"

    def request(text: str, message_id: str) -> SendMessageRequest:
        message = Message(role=Role.ROLE_USER, message_id=message_id, context_id=context, parts=[new_text_part(text)])
        return SendMessageRequest(message=message, configuration=SendMessageConfiguration(return_immediately=False))

    async with serving(server, port) as url:
        client = await create_client(url, ClientConfig(streaming=False))
        assert client._card.name == specialist and client._card.description == "answers"  # noqa: SLF001
        tasks = [ev.task for _ in range(2) async for ev in client.send_message(request("hello", "m-1"))]
        assert [t.status.state for t in tasks] == [TaskState.TASK_STATE_COMPLETED] * 2
        assert tasks[0].id != tasks[1].id  # two A2A tasks ...
        again = await client.get_task(GetTaskRequest(id=tasks[0].id))
        assert [get_artifact_text(a) for a in again.artifacts] == ["specialist says: hello"]
        await client.close()
        streaming = await create_client(url, ClientConfig(streaming=True))
        events = [ev async for ev in streaming.send_message(request("streamed", "m-2"))]
        await streaming.close()
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    assert [get_artifact_text(e.artifact_update.artifact) for e in events if e.HasField("artifact_update")] == [
        "specialist says: streamed"
    ]
    remote = await durable_stack.sessions.get_session(app_name=specialist, user_id="a2a", session_id=context)
    assert remote is not None  # ... one turn each message id: the repeat got the first turn's answer
    assert [e.content.text for e in remote.events if e.author == "user"] == ["hello", "streamed"]



async def test_example_front_desk_asks_the_served_specialist(
    durable_stack: DurableStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    monkeypatch.setenv("A2A_SPECIALIST_URL", f"http://127.0.0.1:{port}/")  # read when the example is imported
    import examples.a2a_agents

    example = importlib.reload(examples.a2a_agents)
    durable_stack.register(example.specialist)
    durable_stack.register(example.app)
    server = app_a2a_server(durable_stack.client, example.specialist.name, url=f"http://127.0.0.1:{port}/")
    async with serving(server, port):
        result = await durable_stack.client.send(example.app.name, "u1", f"s-{uuid.uuid4().hex[:6]}", "Is 91 prime?")
    assert result.final_text == "91 is not prime: 7 divides it."


async def test_a_turn_waiting_for_a_human_needs_input_and_a_canceled_task_leaves_the_turn_running(
    durable_stack: DurableStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    waiting = durable_stack.register(a2a_apps.specialist_app(f"a2a_confirm_{uuid.uuid4().hex[:6]}", confirm=True))
    held, _ = await _served_specialist(durable_stack)
    port_a, port_b = free_port(), free_port()
    monkeypatch.setenv("A2A_HOLD_DIR", str(tmp_path))  # the held app's answer waits for tmp_path/release

    def request(text: str, context: str, *, at_once: bool) -> SendMessageRequest:
        message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, context_id=context, parts=[new_text_part(text)])
        return SendMessageRequest(message=message, configuration=SendMessageConfiguration(return_immediately=at_once))

    async with (
        serving(app_a2a_server(durable_stack.client, waiting.name, url=f"http://127.0.0.1:{port_a}/"), port_a) as url_a,
        serving(app_a2a_server(durable_stack.client, held, url=f"http://127.0.0.1:{port_b}/"), port_b) as url_b,
    ):
        client = await create_client(url_a, ClientConfig(streaming=False))
        [event] = [ev async for ev in client.send_message(request("hello", "ctx-confirm", at_once=False))]
        await client.close()
        assert event.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert "waits for a human: answer" in event.task.status.message.parts[0].text

        client = await create_client(url_b, ClientConfig(streaming=False))
        [event] = [ev async for ev in client.send_message(request("slow", "ctx-cancel", at_once=True))]
        for _ in range(200):  # the turn is running (bounded 10 s)
            if (tmp_path / "started").exists():
                break
            await asyncio.sleep(0.05)
        canceled = await client.cancel_task(CancelTaskRequest(id=event.task.id))
        assert canceled.status.state == TaskState.TASK_STATE_CANCELED
        (tmp_path / "release").write_text("go on")
        await client.close()
    # The accepted turn is durable: it ran to its end and its answer is in the session.
    for _ in range(200):  # bounded 10 s
        remote = await durable_stack.sessions.get_session(app_name=held, user_id="a2a", session_id="ctx-cancel")
        if remote is not None and any(e.content and e.content.text == "specialist says: slow" for e in remote.events):
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the canceled task's turn did not finish")


async def test_a_restarted_server_that_lost_the_task_gets_the_message_again_and_answers_once(
    durable_stack: DurableStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("A2A_HOLD_DIR", str(tmp_path))
    monkeypatch.setenv("A2A_TEST_LOG", str(tmp_path / "answers.jsonl"))
    specialist, port = await _served_specialist(durable_stack)
    front = durable_stack.register(a2a_apps.front_app(f"http://127.0.0.1:{port}/", name=f"a2a_front_{uuid.uuid4().hex[:6]}"))
    session = f"s-{uuid.uuid4().hex[:6]}"
    async with serving(app_a2a_server(durable_stack.client, specialist, url=f"http://127.0.0.1:{port}/"), port):
        run = asyncio.create_task(durable_stack.client.send(front.name, "u1", session, "hello"))
        for _ in range(200):  # the specialist's turn runs (bounded 10 s)
            if (tmp_path / "started").exists():
                break
            await asyncio.sleep(0.05)
    # The server is gone with its in-memory tasks; the durable turn it started goes on.
    async with serving(app_a2a_server(durable_stack.client, specialist, url=f"http://127.0.0.1:{port}/"), port):
        (tmp_path / "release").write_text("go on")
        result = await asyncio.wait_for(run, timeout=60)
    assert result.final_text == "specialist says: hello"
    assert len((tmp_path / "answers.jsonl").read_text().splitlines()) == 1  # one turn, answered twice
    handle = durable_stack.client.client.get_workflow_handle(session_workflow_id(front.name, "u1", session))
    sends = [
        e async for e in handle.fetch_history_events()
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED and b"a2a_send" in e.user_metadata.summary.data
    ]
    assert len(sends) == 2  # the first server's send, then the same message again to the second


async def test_with_api_keys_callers_authenticate_and_reach_only_their_own_tasks(durable_stack: DurableStack) -> None:
    """`adkt a2a` guards the served app as `adkt api` does: the card is public, every call needs a key,
    and each caller's conversation and task records are their own user's."""
    import httpx

    from adkt.settings import WebSettings
    from adkt.web.security import web_access

    specialist, port = await _served_specialist(durable_stack)
    access = web_access("127.0.0.1", WebSettings(api_keys=f"alice:{ALICE_KEY},bob:{BOB_KEY}"))
    server = app_a2a_server(durable_stack.client, specialist, url=f"http://127.0.0.1:{port}/", access=access)
    context = f"ctx-{uuid.uuid4().hex[:6]}"
    message = Message(role=Role.ROLE_USER, message_id="m-1", context_id=context, parts=[new_text_part("mine")])
    send = SendMessageRequest(message=message, configuration=SendMessageConfiguration(return_immediately=False))
    async with serving(server, port) as url:
        async with httpx.AsyncClient() as anonymous:
            card = await anonymous.get(url + ".well-known/agent-card.json")
            assert card.status_code == 200 and card.json()["name"] == specialist
            refused = await anonymous.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}})
            assert refused.status_code == 401
        alice_http = httpx.AsyncClient(headers={"Authorization": f"Bearer {ALICE_KEY}"}, timeout=30)
        bob_http = httpx.AsyncClient(headers={"Authorization": f"Bearer {BOB_KEY}"}, timeout=30)
        alice = await create_client(url, ClientConfig(streaming=False, httpx_client=alice_http))
        bob = await create_client(url, ClientConfig(streaming=False, httpx_client=bob_http))
        try:
            [event] = [ev async for ev in alice.send_message(send)]
            assert event.task.status.state == TaskState.TASK_STATE_COMPLETED
            with pytest.raises(Exception, match="(?i)not found"):
                await bob.get_task(GetTaskRequest(id=event.task.id))
            mine = await alice.get_task(GetTaskRequest(id=event.task.id))
            assert [get_artifact_text(a) for a in mine.artifacts] == ["specialist says: mine"]
        finally:
            await alice.close()
            await bob.close()
            await alice_http.aclose()
            await bob_http.aclose()
    stored = await durable_stack.sessions.get_session(app_name=specialist, user_id="alice", session_id=context)
    assert stored is not None and [e.content.text for e in stored.events if e.author == "user"] == ["mine"]
    assert await durable_stack.sessions.get_session(app_name=specialist, user_id="a2a", session_id=context) is None
