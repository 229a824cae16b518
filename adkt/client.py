"""AdkClient: send messages to durable agents, stream their events, answer what they wait for."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

from temporalio.client import Client, WithStartWorkflowOperation, WorkflowUpdateStage
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.envconfig import ClientConfig

from adk_core.types import Content, Event
from workflows import (
    TASK_QUEUE,
    AdkPlugin,
    AgentRunInput,
    AgentRunResult,
    AgentRunWorkflow,
    PendingRequest,
    Reply,
    SendMessage,
    SessionWorkflow,
    SessionWorkflowInput,
    TurnResult,
    session_workflow_id,
)


async def connect(address: str | None = None, *, namespace: str | None = None, tracing: bool = False) -> Client:
    """A Temporal client with the ADK plugin. Address and namespace come from the arguments, else
    Temporal's envconfig (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, profiles), else localhost:7233."""
    config = ClientConfig.load_client_connect_config()
    if address:
        config["target_host"] = address
    if namespace:
        config["namespace"] = namespace
    config.setdefault("target_host", "localhost:7233")
    return await Client.connect(**config, plugins=[AdkPlugin(tracing=tracing)])


class AdkClient:
    """Conversations run as SessionWorkflows, one per (app, user, session)."""

    def __init__(self, client: Client, *, task_queue: str = TASK_QUEUE, idle_timeout_seconds: float | None = None) -> None:
        """``idle_timeout_seconds``: how long a conversation's workflow waits for the next message
        before it ends (the next message starts it again); None keeps the workflow's default."""
        self.client = client
        self.task_queue = task_queue
        self.idle_timeout_seconds = idle_timeout_seconds

    def _start(self, app: str, user_id: str, session_id: str, initial_state: dict[str, Any] | None) -> WithStartWorkflowOperation:
        return WithStartWorkflowOperation(
            SessionWorkflow.run,
            SessionWorkflowInput(
                app_name=app,
                user_id=user_id,
                session_id=session_id,
                initial_state=initial_state,
                **({"idle_timeout_seconds": self.idle_timeout_seconds} if self.idle_timeout_seconds else {}),
            ),
            id=session_workflow_id(app, user_id, session_id),
            task_queue=self.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )

    async def send(
        self,
        app: str,
        user_id: str,
        session_id: str,
        message: str | Content,
        *,
        state_delta: dict[str, Any] | None = None,
        max_llm_calls: int = 500,
        initial_state: dict[str, Any] | None = None,
    ) -> TurnResult:
        """Send a message (starting the conversation's workflow if needed); returns the turn's events."""
        content = Content.user(message) if isinstance(message, str) else message
        return await self.client.execute_update_with_start_workflow(
            SessionWorkflow.send_message,
            SendMessage(message=content, state_delta=state_delta, max_llm_calls=max_llm_calls),
            start_workflow_operation=self._start(app, user_id, session_id, initial_state),
        )

    async def stream(
        self, app: str, user_id: str, session_id: str, message: str | Content, *, poll_interval: float = 0.05
    ) -> AsyncIterator[Event]:
        """Send a message and yield its events as the workflow makes them."""
        content = Content.user(message) if isinstance(message, str) else message
        handle = await self.client.start_update_with_start_workflow(
            SessionWorkflow.send_message,
            SendMessage(message=content),
            start_workflow_operation=self._start(app, user_id, session_id, None),
            wait_for_stage=WorkflowUpdateStage.ACCEPTED,
        )
        workflow = self.client.get_workflow_handle(session_workflow_id(app, user_id, session_id))
        result_task = asyncio.ensure_future(handle.result())
        seen = 0
        while True:
            done = result_task.done()
            if done:
                events = (await result_task).events[seen:]
            else:
                events = await workflow.query(SessionWorkflow.events, seen)
            for event in events:
                yield event
            seen += len(events)
            if done:
                return
            await asyncio.wait([result_task], timeout=poll_interval)

    async def pending(self, app: str, user_id: str, session_id: str) -> list[PendingRequest]:
        """What the conversation waits for (tool confirmations, long-running tools)."""
        handle = self.client.get_workflow_handle(session_workflow_id(app, user_id, session_id))
        return await handle.query(SessionWorkflow.pending)

    async def reply(self, app: str, user_id: str, session_id: str, call_id: str, response: dict[str, Any]) -> TurnResult:
        """Answer a pending request; the conversation continues and this returns the turn's events."""
        return await self.client.execute_update_with_start_workflow(
            SessionWorkflow.reply,
            Reply(call_id=call_id, response=response),
            start_workflow_operation=self._start(app, user_id, session_id, None),
        )

    async def run_once(
        self, app: str, user_id: str, session_id: str, message: str | Content, *, workflow_id: str | None = None,
        **options: Any,
    ) -> AgentRunResult:
        """One invocation as its own AgentRunWorkflow (no conversation workflow kept running)."""
        content = Content.user(message) if isinstance(message, str) else message
        run_input = AgentRunInput(app_name=app, user_id=user_id, session_id=session_id, message=content, **options)
        return await self.client.execute_workflow(
            AgentRunWorkflow.run,
            run_input,
            id=workflow_id or f"adk-run/{app}/{user_id}/{session_id}/{uuid.uuid4().hex[:12]}",
            task_queue=self.task_queue,
        )
