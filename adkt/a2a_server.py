"""An app served over A2A: other agents (google-adk's RemoteA2aAgent, ours, any A2A client) send it
messages as tasks. ``adkt a2a APP`` runs it; the a2a-sdk's own server does the protocol (agent card
at /.well-known/agent-card.json, JSON-RPC at /: message/send, message/stream, tasks/get,
tasks/cancel), and this module's executor runs each task's message as a turn of a durable
conversation (the app's SessionWorkflow), as ``adkt mcp`` does (adkt/mcp_server.py).

- The A2A context id is the session id (one conversation per context), so a client that continues
  a context continues the conversation. The conversation belongs to the caller's user when the
  server authenticates callers (API keys or OIDC, as ``adkt api``: adkt/web/security), else to the
  server's ``--user``. Task records are kept per caller too, so one user cannot read another's.
- The A2A message id, digested, is the turn's message id, the conversation's idempotency key: a
  message the caller sends again (a RemoteA2aAgent retrying after its worker died) gets the first
  turn's result, in a new A2A task, instead of a second turn.
- The turn runs in Temporal: a worker that dies mid-turn is replaced and the task still completes.
  The A2A task records themselves are in this process's memory: tasks/get after a restart of this
  server does not know older tasks (their turns are in the session store).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from a2a.auth.user import UnauthenticatedUser, User
from a2a.helpers import new_task, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Message, TaskState
from starlette.applications import Starlette
from starlette.requests import Request

from adk_core.errors import AdkError
from adkt.web.security import WebAccess
from adkt.web.security.principal import PRINCIPAL_KEY

if TYPE_CHECKING:
    from adkt.client import AdkClient

MESSAGE_ID_PREFIX = "a2a-"


def agent_card(app: str, url: str, *, description: str = "", version: str = "1") -> AgentCard:
    """The card of ``app`` served at ``url`` (the address clients reach, e.g. http://host:8001/)."""
    about = description or f"The agent app {app!r}, each conversation durable on Temporal."
    return AgentCard(
        name=app,
        description=about,
        version=version,
        supported_interfaces=[AgentInterface(protocol_binding="JSONRPC", url=url, protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id=app, name=app, description=about, tags=["adk-temporal"])],
    )


def app_a2a_server(
    client: AdkClient, app: str, *, url: str, description: str = "", user_id: str = "a2a", version: str = "1",
    access: WebAccess | None = None,
) -> Starlette:
    """A Starlette app serving ``app`` over A2A (JSON-RPC at the root of ``url``) through ``client``.
    ``access`` (default: loopback only, no authentication) checks Host, Origin and credentials as the
    web app does; an authenticated caller's conversations and tasks are their own user's."""
    card = agent_card(app, url, description=description, version=version)
    handler = DefaultRequestHandler(
        agent_executor=ConversationExecutor(client, app, user_id),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/", context_builder=_CallerContext())]
    return Starlette(routes=routes, middleware=(access or WebAccess.local()).middleware())


class _Caller(User):
    """The authenticated caller (adkt/web/security's Principal) as the a2a-sdk sees a user: its task
    store keeps each user's tasks apart by ``user_name``."""

    def __init__(self, user: str) -> None:
        self._user = user

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self._user


class _CallerContext(DefaultServerCallContextBuilder):
    def build_user(self, request: Request) -> User:
        principal = request.scope.get(PRINCIPAL_KEY)
        if principal is not None and principal.user is not None:
            return _Caller(principal.user)
        return UnauthenticatedUser()  # the developer on loopback, or --insecure: the server's --user


def turn_message_id(a2a_message_id: str) -> str:
    """The conversation's message id for an A2A message id (a digest: the id is the caller's own format)."""
    return MESSAGE_ID_PREFIX + hashlib.sha256(a2a_message_id.encode()).hexdigest()[:32]


class ConversationExecutor(AgentExecutor):
    """Runs each A2A task's message as a turn of the durable conversation named by its context id."""

    def __init__(self, client: AdkClient, app: str, user_id: str) -> None:
        self.client = client
        self.app = app
        self.user_id = user_id

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id or "", context.context_id or ""
        updater = TaskUpdater(event_queue, task_id, context_id)
        if context.current_task is None:  # the SDK wants the task before any status update
            history = [context.message] if context.message is not None else []
            await event_queue.enqueue_event(
                new_task(task_id, context_id, TaskState.TASK_STATE_SUBMITTED, history=history)
            )
        text = context.get_user_input()
        if not text or context.message is None:
            await updater.reject(
                self._say("send the message as a text part: this agent reads text only", context)
            )
            return
        await updater.start_work()
        user_id = context.call_context.user.user_name or self.user_id
        try:
            result = await self.client.send(
                self.app,
                user_id,
                context_id,
                text,
                message_id=turn_message_id(context.message.message_id),
            )
        except AdkError as error:  # a failed turn, a refused message: the caller sees why
            await updater.failed(self._say(f"{type(error).__name__}: {error}", context))
            return
        if not result.final_text:
            waiting = await self.client.pending(self.app, user_id, context_id)
            if waiting:
                names = ", ".join(w.name for w in waiting)
                await updater.requires_input(
                    self._say(f"the conversation waits for a human: {names}", context)
                )
                return
        await updater.add_artifact([new_text_part(result.final_text)], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        # The SDK cancels execute(); a turn the conversation already accepted still runs to its end
        # (it is durable), and its events land in the session. The A2A task is canceled either way.
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()

    @staticmethod
    def _say(text: str, context: RequestContext) -> Message:
        return new_text_message(text, context_id=context.context_id, task_id=context.task_id)
