"""RemoteA2aAgent: an agent served elsewhere over A2A, used as a sub-agent (google-adk's name).

Every exchange with the remote goes through the runtime's tool call (``Runtime.run_tool``), as MCP
and OpenAPI tools do, so a durable run makes each one in an ``adk.run_tool`` activity (timeouts,
heartbeats, bounded retries of A2aUnavailableError) and an in-process run calls it directly:

- ``A2aSend`` sends the user's message. Its A2A message id is the call's idempotency key, identical
  on every attempt, so a remote that deduplicates by message id (``adkt a2a`` does: the id becomes
  the durable conversation's message id) runs the turn once however often the send is retried.
  With ``streaming`` and a remote that offers it, the send follows the task's events until the task
  stops running; otherwise the remote answers at once with the task as it stands.
- ``A2aPoll`` reads the task (``tasks/get``) until it stops running or its budget is spent; the
  agent polls again, ``max_wait`` in all. A worker that dies mid-poll is noticed by the heartbeat
  timeout and the poll runs again elsewhere: the task is not sent twice.

The remote's answer becomes one event of this agent (its text; data parts as JSON). A task that
fails, and a remote that cannot be reached when retries are spent, become an event with
``error_code`` and the reason as text, so the user (and a coordinating model) can see it.
The remote's context id is kept in session state under ``_a2a:<agent name>``, so the next turn
continues the same remote conversation (and the task, when the remote asked for input). A remote
that refuses the message into that task (it lost it in a restart, or the task ended) gets it again
as a new task (A2aConnection.send); an error event forgets the task unless the remote gave no answer.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..agents.base import BaseAgent, new_event
from ..errors import ConfigurationError, RemoteError
from ..tools.base import BaseTool
from ..tools.execution import ToolExecution, remote_tool_execution
from ..types import Content, Event, EventActions
from ._client import FAILED_STATES, LOST, WAITING_STATES, A2aConnection, Headers
from ._errors import A2aCallError, A2aUnavailableError

if TYPE_CHECKING:
    from ..agents.context import InvocationContext, ToolContext

MAX_RESENDS = 2
"""How often the message is sent again when the remote no longer knows its task (a restart)."""
STATE_PREFIX = "_a2a:"
"""Session state key prefix holding each remote agent's context id (and task id while it waits)."""


class RemoteA2aAgent(BaseAgent):
    """A sub-agent whose turns run on a remote A2A agent.

    Args:
        name: this agent's name in the tree (events are authored by it).
        agent_card: the remote's base URL (its card is read from ``/.well-known/agent-card.json``)
            or the full URL of its agent card.
        description: what it does, for a coordinator's transfers (default: the remote card's is not
            known before the first call, so give one).
        headers: HTTP headers for every request (auth), or a function returning them, called where
            the request is made (on the worker: tokens never enter a durable run's history).
        card_path: the card's path relative to ``agent_card`` when it is not the well-known one.
        streaming: follow the task over ``message/stream`` when the remote offers it; else poll.
        request_timeout: how long one HTTP request may wait for an answer.
        poll_interval: between two ``tasks/get`` of a running task.
        poll_budget: how long one poll activity polls before it returns and the agent polls again
            (keep it under ``execution.start_to_close_timeout``).
        max_wait: how long the agent waits for the remote's task in all.
        execution: how durable runs run the send and each poll (default: three attempts at most of
            a call that got no answer; a refusal is not retried).
    """

    def __init__(
        self,
        *,
        name: str,
        agent_card: str,
        description: str = "",
        headers: Headers | None = None,
        card_path: str | None = None,
        streaming: bool = False,
        request_timeout: timedelta = timedelta(seconds=60),
        poll_interval: timedelta = timedelta(seconds=1),
        poll_budget: timedelta = timedelta(seconds=60),
        max_wait: timedelta = timedelta(minutes=30),
        execution: ToolExecution | None = None,
        **callbacks: Any,
    ) -> None:
        super().__init__(name=name, description=description, **callbacks)
        if poll_interval <= timedelta(0) or poll_budget < poll_interval or max_wait < poll_budget:
            raise ConfigurationError(
                f"RemoteA2aAgent {name!r}: need 0 < poll_interval <= poll_budget <= max_wait "
                f"(got {poll_interval}, {poll_budget}, {max_wait})"
            )
        self.connection = A2aConnection(
            agent_card, headers=headers, timeout=request_timeout, card_path=card_path
        )
        self.streaming = streaming
        self.poll_interval = poll_interval
        self.poll_budget = poll_budget
        self.max_wait = max_wait
        send_timeout = max_wait if streaming else request_timeout * 2  # a stream lasts as long as the task
        self._send = A2aSend(self, execution or remote_tool_execution("A2aCallError", timeout=send_timeout))
        self._poll = A2aPoll(
            self, execution or remote_tool_execution("A2aCallError", timeout=poll_budget + request_timeout)
        )

    @property
    def state_key(self) -> str:
        return f"{STATE_PREFIX}{self.name}"

    def tool_named(self, name: str) -> BaseTool | None:
        """The agent's own call named ``name``: how a tool activity finds it (adk_core.tools.lookup)."""
        return next((t for t in (self._send, self._poll) if t.name == name), None)

    async def close(self) -> None:
        """Nothing is held between calls (each call opens its own HTTP client); kept for close_tools."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncIterator[Event]:
        remembered = dict(ctx.session.state.get(self.state_key) or {})
        context_id = remembered.get("context_id") or ctx.runtime.new_id()
        # The A2A message id: deterministic (the runtime's ids), the same on every attempt of the send
        # and on a send made again after the remote lost the task, so the remote can deduplicate it.
        message_id = f"{ctx.invocation_id}:a2a-{ctx.runtime.new_id()}"
        args = {
            "text": self._message_text(ctx),
            "context_id": context_id,
            "task_id": remembered.get("task_id"),
            "message_id": message_id,
        }
        try:
            outcome = await self._call(ctx, self._send, args)
            polls, resends = math.ceil(self.max_wait / self.poll_budget), MAX_RESENDS
            while polls > 0:
                if outcome["state"] == LOST and resends > 0:
                    resends -= 1
                    outcome = await self._call(ctx, self._send, args)
                    continue
                if outcome["state"] not in WAITING_STATES:
                    break
                polls -= 1
                outcome = await self._call(ctx, self._poll, {"task_id": outcome["task_id"]})
        except (A2aCallError, A2aUnavailableError, RemoteError) as error:
            # A remote that gave no answer may still hold the task waiting for input: the next turn
            # continues it. Any other failure forgets the task (the next message starts a new one).
            unreachable = isinstance(error, A2aUnavailableError) or (  # durably: retries spent, or timed out
                isinstance(error, RemoteError) and error.error_type in ("A2aUnavailableError", "TimeoutError")
            )
            yield self._error_event(ctx, "A2A_CALL_FAILED", f"the remote agent could not be asked: {error}",
                                    None if unreachable else remembered)  # fmt: skip
            return
        if outcome["state"] == LOST:
            yield self._error_event(
                ctx,
                "A2A_TASK_LOST",
                f"the remote agent no longer knows task {outcome['task_id']}",
                remembered,
            )
            return
        if outcome["state"] in WAITING_STATES:
            yield self._error_event(
                ctx,
                "A2A_TIMEOUT",
                f"the remote task {outcome['task_id']} still runs after {self.max_wait}",
                remembered,
            )
            return
        yield self._answer_event(ctx, outcome, context_id)

    async def _call(self, ctx: InvocationContext, tool: BaseTool, args: dict[str, Any]) -> dict[str, Any]:
        """One exchange with the remote, through the runtime's tool call (an activity when durable)."""
        from ..agents.context import ToolContext

        call_id = f"{tool.name.rpartition('.')[2]}-{ctx.runtime.new_id()}"
        return dict(await ctx.runtime.run_tool(tool, args, ToolContext(ctx, function_call_id=call_id)))

    def _message_text(self, ctx: InvocationContext) -> str:
        """The user's message, after what other agents said in this turn (as google-adk's agent does)."""
        said = [
            f"For context: [{e.author}] said: {e.content.text}"
            for e in ctx.session.events
            if e.invocation_id == ctx.invocation_id and e.author not in ("user", self.name)
            and not e.partial and e.content is not None and e.content.text
        ]  # fmt: skip
        user = ctx.user_content.text if ctx.user_content is not None else ""
        return "\n".join([*said, user]) if said else user

    def _answer_event(self, ctx: InvocationContext, outcome: dict[str, Any], context_id: str) -> Event:
        state = outcome["state"]
        waits = state in ("input_required", "auth_required")
        remembered = {
            "context_id": outcome.get("context_id") or context_id,
            "task_id": outcome["task_id"] if waits else None,
        }
        actions = EventActions(state_delta={self.state_key: remembered})
        metadata = {
            "a2a": {"task_id": outcome.get("task_id"), "context_id": remembered["context_id"], "state": state}
        }
        text = str(outcome.get("status_text") if waits and outcome.get("status_text") else outcome["text"])
        if not text and outcome.get("data"):
            text = json.dumps(outcome["data"], ensure_ascii=False)
        if state in FAILED_STATES:
            reason = outcome.get("status_text") or outcome["text"] or "(no reason given)"
            return new_event(ctx, author=self.name, content=Content.model(f"[{self.name}] the remote task ended {state}: {reason}"),
                             error_code=f"A2A_TASK_{state.upper()}", error_message=reason, actions=actions,
                             custom_metadata=metadata)  # fmt: skip
        return new_event(
            ctx, author=self.name, content=Content.model(text), actions=actions, custom_metadata=metadata
        )

    def _error_event(
        self, ctx: InvocationContext, code: str, message: str, forget: dict[str, Any] | None
    ) -> Event:
        """The failure as the agent's event. With ``forget`` (the remembered state) holding a task id,
        the event forgets it: a task id the remote refused would fail every later turn."""
        actions = EventActions()
        if forget and forget.get("task_id"):
            actions.state_delta[self.state_key] = {**forget, "task_id": None}
        return new_event(ctx, author=self.name, content=Content.model(f"[{self.name}] {message}"), error_code=code,
                         error_message=message, actions=actions)  # fmt: skip


class A2aSend(BaseTool):
    """RemoteA2aAgent's own call that sends the user's message. Never shown to a model."""

    toolset_internal = True
    """An agent's own call, not a tool of a model: eval interception leaves it alone."""

    def __init__(self, agent: RemoteA2aAgent, execution: ToolExecution) -> None:
        super().__init__(name=f"{agent.name}.a2a_send", description=f"send a message to A2A agent {agent.connection.url}",
                         execution=execution)  # fmt: skip
        self.agent = agent

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        agent = self.agent
        return await agent.connection.send(
            text=args["text"], message_id=args.get("message_id") or tool_context.idempotency_key,
            context_id=args["context_id"], task_id=args.get("task_id"), stream=agent.streaming,
        )  # fmt: skip


class A2aPoll(BaseTool):
    """RemoteA2aAgent's own call that waits for a running task (``tasks/get``). Never shown to a model."""

    toolset_internal = True

    def __init__(self, agent: RemoteA2aAgent, execution: ToolExecution) -> None:
        super().__init__(name=f"{agent.name}.a2a_poll", description=f"wait for a task of A2A agent {agent.connection.url}",
                         execution=execution)  # fmt: skip
        self.agent = agent

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        agent = self.agent
        return await agent.connection.wait(
            args["task_id"], budget=agent.poll_budget, interval=agent.poll_interval
        )


__all__ = ["STATE_PREFIX", "A2aPoll", "A2aSend", "RemoteA2aAgent"]
