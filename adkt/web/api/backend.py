"""What the HTTP API serves from: a client of the durable conversations (AdkClient), the sessions
database (read, create, delete) and the stored eval runs."""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.api.enums.v1 import TaskQueueKind, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from adk_core.eval.store import EvalResultStore
from adk_core.sessions import Session, SessionService
from adk_core.sessions.sql import DatabaseSessionService
from adk_core.sql import open_engine
from adk_temporal.activities.eval_allow import EvalSuites
from adk_temporal.workflows import PendingRequest, session_workflow_id
from adk_temporal.workflows._invocation import pending_requests
from adkt._stream_follow import close_stream_hubs
from adkt.client import AdkClient

from .errors import NoWorkerError
from .models import AppInfo, SessionSummary

WORKER_VERSION_SECONDS = 2.0
"""How long a session read waits for Temporal to say which worker version its run is on."""
POLLER_FRESH = timedelta(seconds=90)
"""A worker long-polls for up to a minute and then polls again, so a live one was seen within this
(Temporal lists pollers for minutes after they went away)."""


@dataclass
class ApiBackend:
    """The API's dependencies. ``apps`` empty means any app name is accepted (a worker elsewhere
    may serve it); otherwise an app outside it is a 404 that lists the known ones."""

    client: AdkClient
    sessions: SessionService
    evals: EvalResultStore | None = None
    apps: list[AppInfo] = field(default_factory=list)
    temporal_ui: str | None = None
    simulator_page: str | None = None
    eval_suites: EvalSuites = field(default_factory=EvalSuites)
    """The eval suites the page may start (the modules the serving worker allows; none by default)."""
    eval_refs: list[str] = field(default_factory=list)
    """Suite references the page offers to start (``module:attr``), besides those of stored runs."""
    _engine: AsyncEngine | None = None

    @classmethod
    def open(
        cls, client: AdkClient, database_url: str, *, apps: list[AppInfo], temporal_ui: str | None = None,
        eval_suites: list[str] | None = None,
    ) -> ApiBackend:
        """Sessions and eval runs on one small connection pool; ``close()`` releases it."""
        engine = open_engine(database_url, pool_size=5, max_overflow=10)
        if client.database_url is None:  # stream(partial=True) reads partials from this database
            client = copy.copy(client)
            client.database_url = database_url
        return cls(
            client, DatabaseSessionService(engine), EvalResultStore(engine), apps,
            temporal_ui.rstrip("/") if temporal_ui else None, _engine=engine,
            eval_suites=EvalSuites(eval_suites or ()), eval_refs=[r for r in eval_suites or () if ":" in r],
        )  # fmt: skip

    async def close(self) -> None:
        if self._engine is not None:
            await self._engine.dispose()
        # The streams this server followed share one LISTEN connection per process: close it too.
        await close_stream_hubs()

    @property
    def namespace(self) -> str:
        return self.client.client.namespace

    def workflow_url(self, workflow_id: str) -> str | None:
        if not self.temporal_ui:
            return None
        return f"{self.temporal_ui}/namespaces/{quote(self.namespace, safe='')}/workflows/{quote(workflow_id, safe='')}"

    def summary(self, session: Session) -> SessionSummary:
        workflow_id = session_workflow_id(session.app_name, session.user_id, session.id)
        return SessionSummary(
            app_name=session.app_name, user_id=session.user_id, session_id=session.id, state=session.state,
            last_update_time=session.last_update_time, workflow_id=workflow_id,
            workflow_url=self.workflow_url(workflow_id),
        )  # fmt: skip

    async def worker_version(self, workflow_id: str) -> str | None:
        """The worker version the conversation's open run is on (docs/versioning.md); None when it is
        not running, runs unversioned, or Temporal does not answer in time (the page then shows none)."""
        try:
            async with asyncio.timeout(WORKER_VERSION_SECONDS):
                description = await self.client.client.get_workflow_handle(workflow_id).describe()
        except (RPCError, TimeoutError):
            return None
        if description.status != WorkflowExecutionStatus.RUNNING:
            return None
        version = description.raw_description.workflow_execution_info.versioning_info.deployment_version
        return f"{version.deployment_name}:{version.build_id}" if version.build_id else None

    async def require_worker(self, app: str) -> None:
        """Refuse to send to an app no worker serves: the conversation would start and wait for one
        (on a queue shared with other apps, a worker without the app would fail it for good)."""
        queue = self.client.queue_of(app)
        if await self.has_worker(queue):
            return
        raise NoWorkerError(
            f"no worker serves app {app!r} (nothing polls task queue {queue!r}); nothing was sent. Start one with "
            f"`adkt worker --app path/to/agent.py` (same TEMPORAL_ADDRESS and ADK_DATABASE_URL), or serve the app "
            "from `adkt dev --app ...` or `adkt web --app ...` with nothing configured"
        )

    async def has_worker(self, queue: str) -> bool:
        """Whether a live worker polls ``queue`` for workflow tasks."""
        response = await self.client.client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=self.namespace, task_queue=TaskQueue(name=queue, kind=TaskQueueKind.TASK_QUEUE_KIND_NORMAL),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            )
        )  # fmt: skip
        now = datetime.now(UTC)
        return any(now - p.last_access_time.ToDatetime(UTC) < POLLER_FRESH for p in response.pollers)

    async def pending(self, app: str, user_id: str, session_id: str) -> list[PendingRequest]:
        """What the conversation waits for. Its workflow answers while it runs; once it has ended
        (idle), the stored events say the same (the next message or reply starts it again)."""
        try:
            return await self.client.pending(app, user_id, session_id)
        except RPCError as e:
            if e.status != RPCStatusCode.NOT_FOUND:
                raise
        session = await self.sessions.get_session(app_name=app, user_id=user_id, session_id=session_id)
        return pending_requests(session.events) if session else []
