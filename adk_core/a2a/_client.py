"""Talking to one remote A2A agent with the a2a-sdk client: its card (fetched once per process and
checked), sending a message, reading a task. Results are plain dicts (``outcome``), because they
cross the activity boundary and are recorded in a durable run's history.

Every SDK failure is sorted into A2aUnavailableError (no answer: network, timeout, 408/429/5xx:
worth retrying) or A2aCallError (an answer that refuses: retrying gives the same).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError
from ._errors import A2aCallError, A2aUnavailableError

if TYPE_CHECKING:
    from a2a.client import Client
    from a2a.types import AgentCard, Task

logger = logging.getLogger(__name__)

Headers = Mapping[str, str] | Callable[[], Mapping[str, str]]
"""Fixed headers, or a function called on every request (a token read where the call runs)."""

WAITING_STATES = frozenset({"submitted", "working"})
"""A task in these states is still running: poll (or stream) on."""
FAILED_STATES = frozenset({"failed", "rejected", "canceled"})
LOST = "lost"
"""Not an A2A state: the remote answered that it does not know the task (tasks/get: TaskNotFoundError)."""
_USABLE_BINDINGS = ("JSONRPC", "HTTP+JSON")  # what the SDK's HTTP client speaks without gRPC
_RETRYABLE_STATUS = frozenset({408, 425, 429})


def _import_sdk() -> None:
    try:
        import a2a.client  # noqa: F401
    except ImportError as error:
        raise ConfigurationError(
            f"RemoteA2aAgent needs the a2a-sdk package ({error}): pip install 'adk-temporal[a2a]'"
        ) from error


class A2aConnection:
    """The remote agent at ``url`` (its base URL, or the full URL of its agent card)."""

    def __init__(
        self, url: str, *, headers: Headers | None, timeout: timedelta, card_path: str | None
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"RemoteA2aAgent url {url!r} is not an http(s) URL; e.g. 'http://localhost:8001'"
            )
        self.url = url
        self.headers = headers
        self.timeout = timeout
        self.card_path = card_path
        self._card: AgentCard | None = None

    def _headers(self) -> dict[str, str]:
        given = self.headers() if callable(self.headers) else self.headers
        return dict(given or {})

    @contextlib.asynccontextmanager
    async def _http(self) -> AsyncIterator[Any]:
        import httpx

        async with httpx.AsyncClient(headers=self._headers(), timeout=self.timeout.total_seconds()) as http:
            yield http

    async def card(self, *, refresh: bool = False) -> AgentCard:
        """The remote's agent card, fetched once per process (``refresh`` fetches it again), checked."""
        if self._card is not None and not refresh:
            return self._card
        _import_sdk()
        from a2a.client import A2ACardResolver

        # A URL of the card itself is fetched as is ("/": the SDK's "no path after the base").
        path = self.card_path or ("/" if self.url.endswith(".json") else None)
        async with self._http() as http:
            with sdk_errors(f"fetching the agent card of {self.url}"):
                card = await A2ACardResolver(http, self.url).get_agent_card(relative_card_path=path)
        self._card = validated_card(card, self.url)
        return self._card

    @contextlib.asynccontextmanager
    async def client(self, *, streaming: bool) -> AsyncIterator[Client]:
        """An SDK client for one call (its own httpx client: calls may come from different loops)."""
        card = await self.card()
        from a2a.client import ClientConfig, ClientFactory

        async with self._http() as http:
            config = ClientConfig(
                streaming=streaming, httpx_client=http, supported_protocol_bindings=list(_USABLE_BINDINGS)
            )
            try:
                client = ClientFactory(config).create(card)
            except ValueError as error:
                raise A2aCallError(f"cannot talk to the A2A agent at {self.url}: {error}") from error
            yield client

    async def send(
        self, *, text: str, message_id: str, context_id: str, task_id: str | None, stream: bool
    ) -> dict[str, Any]:
        """Send one user message. Without streaming the remote answers at once (``return_immediately``)
        with the task as it stands; with streaming this follows the task's events until it stops
        running, then reads the whole task. Returns the ``outcome``."""
        from a2a.types import Message, Part, Role, SendMessageConfiguration, SendMessageRequest

        card = await self.card()
        stream = stream and bool(card.capabilities.streaming)
        message = Message(
            role=Role.ROLE_USER, message_id=message_id, context_id=context_id, parts=[Part(text=text)]
        )
        if task_id:
            message.task_id = task_id
        request = SendMessageRequest(
            message=message, configuration=SendMessageConfiguration(return_immediately=not stream)
        )
        try:
            return await self._send(request, stream)
        except _TaskGone as gone:
            if not task_id:
                raise A2aCallError(
                    f"sending a message to the A2A agent at {self.url}: {gone.error}"
                ) from None
            # The task this message continues is gone (a remote that restarted keeps no tasks; or it
            # ended): send it as a new task of the same conversation, under the same message id, so
            # a retried attempt that meets the same refusal sends the same message again.
            logger.warning("A2A agent at %s no longer takes task %s (%s); sending the message as a new task",
                           self.url, task_id, gone.error)  # fmt: skip
            request.message.ClearField("task_id")
            try:
                return await self._send(request, stream)
            except _TaskGone as again:
                raise A2aCallError(
                    f"sending a message to the A2A agent at {self.url}: {again.error}"
                ) from None

    async def _send(self, request: Any, stream: bool) -> dict[str, Any]:
        from a2a.types import TaskNotFoundError, UnsupportedOperationError

        message_id = request.message.message_id
        last: Any = None
        async with self.client(streaming=stream) as client:
            with sdk_errors(f"sending a message to the A2A agent at {self.url}"):
                try:
                    async for event in client.send_message(request):
                        last = event
                        if event.HasField("message"):
                            return outcome_of_message(event.message)
                        if event.HasField("task") and _state(event.task.status.state) not in WAITING_STATES:
                            return outcome_of_task(event.task)
                        if (
                            event.HasField("status_update")
                            and _state(event.status_update.status.state) not in WAITING_STATES
                        ):
                            break
                except (TaskNotFoundError, UnsupportedOperationError) as error:
                    # The a2a-sdk server refuses a message into a task it does not know, or into one
                    # that ended, with these (no error of its own for the second: its text says so).
                    if isinstance(error, TaskNotFoundError) or "terminal state" in str(error):
                        raise _TaskGone(error) from None
                    raise
        if last is None:
            raise A2aUnavailableError(
                f"the A2A agent at {self.url} ended the answer to message {message_id!r} without an event"
            )
        found_id = _task_id(last)
        if not stream:
            return outcome_of_task(last.task)
        return await self.get_task(found_id)

    async def get_task(self, task_id: str) -> dict[str, Any]:
        from a2a.types import GetTaskRequest, TaskNotFoundError

        async with self.client(streaming=False) as client:
            with sdk_errors(f"reading task {task_id!r} of the A2A agent at {self.url}"):
                try:
                    task = await client.get_task(GetTaskRequest(id=task_id))
                except TaskNotFoundError:
                    # A remote that restarted without keeping its tasks: the agent sends the message
                    # again under the same id, which a deduplicating remote answers from the first turn.
                    return {"kind": "task", "task_id": task_id, "context_id": None, "state": LOST, "text": "",
                            "data": [], "status_text": ""}  # fmt: skip
        return outcome_of_task(task)

    async def wait(self, task_id: str, *, budget: timedelta, interval: timedelta) -> dict[str, Any]:
        """Read the task until it stops running or ``budget`` is spent; returns the last ``outcome``."""
        deadline = time.monotonic() + budget.total_seconds()
        while True:
            outcome = await self.get_task(task_id)
            if (
                outcome["state"] not in WAITING_STATES
                or time.monotonic() + interval.total_seconds() > deadline
            ):
                return outcome
            await asyncio.sleep(interval.total_seconds())


class _TaskGone(Exception):  # noqa: N818  (a signal inside A2aConnection.send)
    """The remote refused a message into the task it names: it does not know the task, or it ended."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = f"{type(error).__name__}: {error}"


def validated_card(card: AgentCard, url: str) -> AgentCard:
    """Refuse a card this client cannot use, saying what is missing."""
    problems = []
    if not card.name:
        problems.append("it has no name")
    bindings = [i.protocol_binding for i in card.supported_interfaces]
    if not any(b in _USABLE_BINDINGS for b in bindings):
        problems.append(f"it offers no JSONRPC or HTTP+JSON interface (offers: {bindings or 'none'})")
    for interface in card.supported_interfaces:
        if (
            not interface.url.startswith(("http://", "https://"))
            and interface.protocol_binding in _USABLE_BINDINGS
        ):
            problems.append(f"interface URL {interface.url!r} is not an http(s) URL")
    if problems:
        raise A2aCallError(
            f"the agent card at {url} cannot be used: {'; '.join(problems)}; fix the remote's card"
        )
    return card


def _state(value: int) -> str:
    from a2a.types import TaskState

    return TaskState.Name(value).removeprefix("TASK_STATE_").lower()


def _task_id(event: Any) -> str:
    for field in ("task", "status_update", "artifact_update"):
        if event.HasField(field):
            value = getattr(event, field)
            return str(value.id if field == "task" else value.task_id)
    raise A2aCallError("the A2A agent answered with an event that names no task")


def _parts(parts: Any) -> tuple[list[str], list[Any]]:
    from google.protobuf.json_format import MessageToDict

    texts, data = [], []
    for part in parts:
        if part.HasField("text"):
            texts.append(part.text)
        elif part.HasField("data"):
            data.append(MessageToDict(part.data))
        elif part.HasField("url"):
            texts.append(part.url)
    return texts, data


def outcome_of_message(message: Any) -> dict[str, Any]:
    texts, data = _parts(message.parts)
    return {"kind": "message", "task_id": message.task_id or None, "context_id": message.context_id or None,
            "state": "completed", "text": "\n".join(texts), "data": data}  # fmt: skip


def outcome_of_task(task: Task) -> dict[str, Any]:
    """The task's answer: its artifacts' text and data; else its status message's."""
    texts: list[str] = []
    data: list[Any] = []
    for artifact in task.artifacts:
        more_texts, more_data = _parts(artifact.parts)
        texts += more_texts
        data += more_data
    status_texts, status_data = (
        _parts(task.status.message.parts) if task.status.HasField("message") else ([], [])
    )
    if not texts and not data:
        texts, data = status_texts, status_data
    return {"kind": "task", "task_id": task.id, "context_id": task.context_id or None, "state": _state(task.status.state),
            "text": "\n".join(texts), "data": data, "status_text": "\n".join(status_texts)}  # fmt: skip


@contextlib.contextmanager
def sdk_errors(doing: str) -> Any:
    """Sort what the SDK raises into our two errors."""
    from a2a.client import A2AClientTimeoutError, AgentCardResolutionError
    from a2a.utils.errors import A2AError

    try:
        yield
    except (A2aCallError, A2aUnavailableError):
        raise
    except A2AClientTimeoutError as error:
        raise A2aUnavailableError(f"{doing}: no answer in time ({error})") from error
    except AgentCardResolutionError as error:
        status = error.status_code
        if status is None or status >= 500 or status in _RETRYABLE_STATUS:
            raise A2aUnavailableError(f"{doing}: {error.message}") from error
        raise A2aCallError(f"{doing}: {error.message}; check the URL and the auth headers") from error
    except A2AError as error:
        if _no_answer(error):
            raise A2aUnavailableError(f"{doing}: {error}") from error
        raise A2aCallError(f"{doing}: {type(error).__name__}: {error}") from error
    except (TimeoutError, OSError) as error:
        raise A2aUnavailableError(f"{doing}: {error!r}") from error


def _no_answer(error: BaseException) -> bool:
    """An SDK error caused by the network, a timeout or a 5xx/408/429 status."""
    import httpx

    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, httpx.HTTPStatusError):
            status = cause.response.status_code
            return status >= 500 or status in _RETRYABLE_STATUS
        if isinstance(cause, httpx.TransportError):
            return True
        cause = cause.__cause__ or cause.__context__
    return False
