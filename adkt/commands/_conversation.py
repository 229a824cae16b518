"""What `run`, `chat` and `reply` share: reaching a worker that serves the app, and telling the user
what the conversation waits for, what happens on Ctrl-C and what a setting does not change.

A connection is to the configured Temporal or a running `adkt dev` ("remote": the app must be
served by a worker there, which is checked before anything is sent, so no workflow is started that
no one runs), else to an embedded stack this command starts with a worker for the app.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, timedelta
from typing import TYPE_CHECKING, Any

from adkt.commands._common import require_app
from adkt.commands._render import err
from adkt.settings import Settings

if TYPE_CHECKING:
    from adk_core import App
    from adk_temporal.workflows import PendingRequest, TurnResult
    from adkt.client import AdkClient
    from adkt.commands._apps import AppSpec
    from adkt.commands._devstate import DevState

POLLER_FRESH = timedelta(seconds=90)
"""A worker long-polls for up to a minute, then polls again, so a live one was seen within this;
Temporal lists pollers for minutes after they went away, so older ones are not counted."""
COMMAND_STACK_GRACE = timedelta(seconds=1)
"""How long the worker of a command's own embedded stack lets in-flight activities run when it stops."""


@dataclass
class Connection:
    """A client for one app, and where it runs.

    Attributes:
        mode: "embedded" (this command's own stack), "dev" (a running `adkt dev`) or "configured".
        database_url: the sessions database when known (embedded, dev, or configured).
    """

    client: AdkClient
    app: str
    spec: AppSpec
    mode: str
    namespace: str
    database_url: str | None = None
    dev: DevState | None = None
    settings: Settings = field(default_factory=Settings.load)

    @property
    def remote(self) -> bool:
        return self.mode != "embedded"

    def workflow_id(self, user: str, session: str) -> str:
        from adk_temporal.workflows import session_workflow_id

        return session_workflow_id(self.app, user, session)

    def workflow_url(self, user: str, session: str) -> str | None:
        from urllib.parse import quote

        if self.dev is None or not self.dev.ui_url:
            return None
        return f"{self.dev.ui_url}/namespaces/{self.namespace}/workflows/{quote(self.workflow_id(user, session), safe='')}"


@contextlib.asynccontextmanager
async def open_connection(
    loaded: App | None, spec: AppSpec, name: str, *, address: str | None, database_url: str | None
) -> AsyncIterator[Connection]:
    """Connect to the configured Temporal or `adkt dev` (after checking a worker serves the app), else
    start an embedded stack that serves `loaded` for as long as the context lasts."""
    from adkt.client import AdkClient, connect
    from adkt.commands._devstate import resolve
    from adkt.commands._stack import embedded_stack

    settings = Settings.load()
    target = resolve(settings, address=address, database_url=database_url)
    if target.address is not None:
        client = AdkClient(await connect(target.address, namespace=target.namespace), task_queue=target.task_queue,
                           database_url=target.database_url)
        mode = "dev" if target.dev is not None else "configured"
        connection = Connection(client, name, spec, mode, client.client.namespace, target.database_url, target.dev,
                                settings)  # fmt: skip
        note_model_setting(connection)
        await require_served(connection)
        yield connection
        return
    app = require_app(loaded, spec.text)
    err.print("[dim]no Temporal configured and no `adkt dev` running: starting an embedded stack for this command[/]")
    log_worker_to_file(settings)
    try:
        # This Temporal is in memory and stops with the command: letting a tool that is mid-way finish
        # for 30 s after a Ctrl-C only keeps the user waiting (its result would go nowhere).
        async with embedded_stack([app], settings, database_url=target.database_url,
                                  graceful_shutdown=COMMAND_STACK_GRACE) as stack:
            yield Connection(stack.client, name, spec, "embedded", stack.temporal.namespace, stack.database_url,
                             settings=settings)  # fmt: skip
    except asyncio.CancelledError:  # Ctrl-C: stopping the servers takes a few seconds; say so at once
        err.print("[dim]interrupted: stopping the embedded Temporal, Postgres and worker…[/]")
        raise


def log_worker_to_file(settings: Settings) -> None:
    """Send the in-process worker's log to `.adk/worker.log`: the command reports a failed turn in one
    line itself, and the worker's warnings (a failed activity with its traceback) would bury it.
    With --debug the log stays on stderr. Called before any client connects (see configure_logging)."""
    import logging

    from adk_temporal.worker import LOG_FORMAT, configure_logging

    configure_logging()
    if settings.debug:
        return
    settings.adk_dir.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(settings.adk_dir / "worker.log")
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    for previous in root.handlers[:]:
        root.removeHandler(previous)
    root.addHandler(handler)


def worker_hint(spec: AppSpec, mode: str) -> str:
    """The commands that start a worker for the app, as the user can paste them."""
    app = shlex.quote(spec.text) if spec.loadable else "path/to/your/agent.py"
    if mode == "dev":
        return f"`adkt worker --app {app}` in another terminal (it finds `adkt dev` by itself), or restart `adkt dev --app {app}`"
    return f"`adkt worker --app {app}` (with the same TEMPORAL_ADDRESS and ADK_DATABASE_URL)"


async def require_served(connection: Connection) -> None:
    """Refuse to send when no worker polls the app's task queue: the message would start a
    conversation that nothing runs (and, on a queue shared with other apps, fails for good)."""
    from datetime import datetime

    from temporalio.api.enums.v1 import TaskQueueKind, TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    from adk_core.errors import ConfigurationError

    client = connection.client
    queue = client.queue_of(connection.app)
    response = await client.client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.client.namespace,
            task_queue=TaskQueue(name=queue, kind=TaskQueueKind.TASK_QUEUE_KIND_NORMAL),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        )
    )
    now = datetime.now(UTC)
    live = [p for p in response.pollers if now - p.last_access_time.ToDatetime(UTC) < POLLER_FRESH]
    if live:
        return
    where = "the running `adkt dev`" if connection.mode == "dev" else f"Temporal at {client.client.service_client.config.target_host}"
    raise ConfigurationError(
        f"no worker serves app {connection.app!r} on {where} (nothing polls task queue {queue!r}); "
        f"start one with {worker_hint(connection.spec, connection.mode)}"
    )


def note_model_setting(connection: Connection) -> None:
    """ADK_MODEL is read where the app is imported, which for a remote worker is not this process."""
    model = connection.settings.model
    if model is None:
        return
    if connection.dev is not None:
        if connection.dev.adk_model == model:
            return
        started = f"ADK_MODEL={connection.dev.adk_model}" if connection.dev.adk_model else "no ADK_MODEL"
        err.print(f"note: ADK_MODEL={model} is not used here: the running `adkt dev` (pid {connection.dev.pid}) "
                  f"loaded its apps with {started}; restart it with ADK_MODEL={model} to switch models",
                  markup=False)  # fmt: skip
        return
    err.print(f"note: ADK_MODEL={model} is not used here: the worker that serves {connection.app!r} loaded the app "
              "with its own environment; set ADK_MODEL where that worker runs", markup=False)  # fmt: skip


async def waiting(connection: Connection, user: str, session: str) -> list[PendingRequest]:
    """What the conversation waits for: asked of its workflow when it runs, else read from the store
    (after an embedded run the workflow is gone but the request is a stored event)."""
    from temporalio.client import WorkflowQueryFailedError
    from temporalio.service import RPCError

    try:
        return await connection.client.pending(connection.app, user, session)
    except (RPCError, WorkflowQueryFailedError):
        if connection.database_url is None:
            return []
    return await stored_pending(connection.database_url, connection.app, user, session)


async def stored_pending(database_url: str, app: str, user: str, session: str) -> list[PendingRequest]:
    """The requests no reply has answered yet, from the session's stored events."""
    from adk_core.sessions.sql import DatabaseSessionService
    from adk_temporal.workflows._invocation import pending_requests

    service = DatabaseSessionService(database_url)
    try:
        stored = await service.get_session(app_name=app, user_id=user, session_id=session)
    finally:
        await service.close()
    return pending_requests(stored.events) if stored is not None else []


LOAD_WAIT_SECONDS = 20.0
"""How long a reply waits for a conversation that is starting to load its session from the store."""


async def send_reply(connection: Connection, user: str, session: str, call_id: str,
                     response: dict[str, Any]) -> TurnResult:  # fmt: skip
    """Answer a request. A conversation whose workflow is not running (after an embedded run, or
    once idle) starts again on the reply; workers from before the reply waited for the session's
    load (workflows/session.py, REPLY_WAITS_FOR_LOAD_PATCH) refuse it as still loading: that refusal
    is retried, the same reply id each time."""
    import time
    import uuid

    from adkt.client import MessageRejectedError

    reply_id = uuid.uuid4().hex
    deadline = time.monotonic() + LOAD_WAIT_SECONDS
    while True:
        try:
            return await connection.client.reply(connection.app, user, session, call_id, response, reply_id=reply_id)
        except MessageRejectedError as e:
            if "still loading" not in str(e) or time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.2)


def describe_request(request: PendingRequest, app: str) -> str:
    """`? support wants to run refund({"amount": 50}) — hint`, as plain text."""
    import json

    args = json.dumps(request.args, ensure_ascii=False)
    hint = f" — {request.hint}" if request.hint else ""
    if request.kind == "tool_confirmation":
        return f"? {request.agent or app} wants to run {request.name}({args}){hint}"
    return f"? {request.name}({args}) waits for its result{hint}"


def reply_commands(request: PendingRequest, spec: AppSpec, user: str, session: str) -> str:
    """The exact `adkt reply` command(s) that answer `request`."""
    base = " ".join(shlex.quote(part) for part in ("adkt", "reply", spec.text, user, session, request.call_id))
    if request.kind == "tool_confirmation":
        return f"  approve: {base} --approve\n  reject:  {base} --reject"
    return f"  answer:  {base} --answer " + shlex.quote('{"result": ...}')


def print_waiting(requests: list[PendingRequest], spec: AppSpec, app: str, user: str, session: str) -> None:
    for request in requests:
        err.print(describe_request(request, app), style="magenta", markup=False)
        err.print(reply_commands(request, spec, user, session), markup=False)


def interrupted_note(connection: Connection, user: str, session: str) -> str:
    """What Ctrl-C leaves behind, and where to look."""
    spec = shlex.quote(connection.spec.text)
    show = f"adkt sessions show {shlex.quote(connection.app)} {shlex.quote(user)} {shlex.quote(session)}"
    pending = f"adkt pending {spec} {shlex.quote(user)} {shlex.quote(session)}"
    if connection.remote:
        url = connection.workflow_url(user, session)
        where = f"\n  Temporal UI: {url}" if url else f"\n  temporal workflow show --workflow-id {shlex.quote(connection.workflow_id(user, session))}"
        return (f"stopped waiting; the run goes on durably in workflow {connection.workflow_id(user, session)}{where}\n"
                f"  its events: {show}\n  what it waits for: {pending}")  # fmt: skip
    return (
        "stopped: this command's embedded Temporal stops with it, so the turn stops where it was; what it "
        f"committed is stored in {connection.settings.adk_dir}/postgres.\n"
        f"  its events: {show}\n  continue: adkt run {spec} \"...\" --user {shlex.quote(user)} --session {shlex.quote(session)}\n"
        "  runs that go on without a terminal: start `adkt dev` and run against it"
    )


def response_for(request: PendingRequest, *, approve: bool = False, reject: bool = False,
                 answer: str | None = None) -> dict[str, Any]:  # fmt: skip
    """The reply's payload: a confirmation's `confirmed`, or a long-running tool's JSON result."""
    import json

    from adk_core.errors import InvalidInputError

    if sum((approve, reject, answer is not None)) != 1:
        raise InvalidInputError("give exactly one of --approve, --reject or --answer JSON")
    if request.kind == "tool_confirmation":
        if answer is not None:
            raise InvalidInputError(f"{request.call_id!r} asks to confirm {request.name}: reply --approve or --reject")
        return {"confirmed": approve}
    if answer is None:
        raise InvalidInputError(
            f"{request.call_id!r} waits for the result of {request.name}: reply --answer JSON, e.g. --answer "
            "'{\"status\": \"approved\"}'"
        )
    try:
        value = json.loads(answer)
    except json.JSONDecodeError as e:
        raise InvalidInputError(f"--answer is not JSON ({e}); e.g. --answer '{{\"status\": \"approved\"}}'") from None
    return value if isinstance(value, dict) else {"result": value}
