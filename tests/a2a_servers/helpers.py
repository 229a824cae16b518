"""Real a2a-sdk servers on loopback for the A2A tests: one in this process (uvicorn, bounded start
and stop) and a plain a2a-sdk agent (``EchoExecutor``) that records what it was sent."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from a2a.helpers import new_task, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, TaskState
from starlette.applications import Starlette

from tests.mcp_servers.helpers import free_port


@contextlib.asynccontextmanager
async def serving(app: Any, port: int | None = None) -> AsyncIterator[str]:
    """Serve an ASGI app on a loopback port; yields its base URL. Start and stop are bounded."""
    port = port or free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(200):  # up to 10 s
            if server.started:
                break
            if task.done():
                task.result()
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the A2A test server did not start in 10 s")
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        server.force_exit = True  # open SSE streams would hold a graceful stop
        await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), timeout=10)
        await _end_a2a_leftovers()


async def _end_a2a_leftovers() -> None:
    """End here, on this loop's thread, what the a2a-sdk left running when its server stopped (its
    task producers). Left alone, a producer is finalized whenever the garbage collector runs, in
    whatever thread that is: a Temporal workflow thread of the same process then blocked in the
    producer's queue shutdown, and the worker (and the session's teardown) never stopped."""
    def from_a2a(task: asyncio.Task[Any]) -> bool:
        code = getattr(task.get_coro(), "cr_code", None)
        return code is not None and f"{os.sep}a2a{os.sep}" in code.co_filename

    leftovers = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and from_a2a(t)]
    for leftover in leftovers:
        leftover.cancel()
    if leftovers:
        await asyncio.wait(leftovers, timeout=5)
    gc.collect()  # coroutines dropped without a task are finalized now, on this thread


@dataclass
class EchoExecutor(AgentExecutor):
    """Answers "echo: <text>" after ``delay`` seconds; "fail" fails the task; "ask me ..." leaves it
    input-required ("what exactly?"), and the next message into that task is echoed. Records each message."""

    delay: float = 0.0
    seen: list[dict[str, Any]] = field(default_factory=list)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        headers = context.call_context.state.get("headers", {}) if context.call_context else {}
        self.seen.append({"message_id": context.message.message_id, "context_id": context.context_id,
                          "task_id": context.task_id, "text": context.get_user_input(),
                          "authorization": headers.get("authorization")})  # fmt: skip
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        if context.current_task is None:
            await event_queue.enqueue_event(
                new_task(context.task_id or "", context.context_id or "", TaskState.TASK_STATE_SUBMITTED, history=[context.message])
            )
        await updater.start_work()
        await asyncio.sleep(self.delay)
        if context.get_user_input().endswith("fail"):
            await updater.failed(updater.new_agent_message([new_text_part("cannot do that")]))
            return
        if context.get_user_input().startswith("ask me"):
            await updater.requires_input(updater.new_agent_message([new_text_part("what exactly?")]))
            return
        await updater.add_artifact([new_text_part(f"echo: {context.get_user_input()}")], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


def echo_app(port: int, executor: EchoExecutor, *, streaming: bool = True, binding: str = "JSONRPC") -> Starlette:
    url = f"http://127.0.0.1:{port}/"
    card = AgentCard(
        name="echo", description="echoes", version="1",
        supported_interfaces=[AgentInterface(protocol_binding=binding, url=url, protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=streaming), default_input_modes=["text/plain"],
        default_output_modes=["text/plain"], skills=[AgentSkill(id="echo", name="echo", description="echo", tags=["t"])],
    )  # fmt: skip
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])
