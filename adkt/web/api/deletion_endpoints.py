"""DELETE of a session and of a user through the HTTP API (docs/security.md, "Deleting a session or a
user"). The route table's access rule applies: a path naming ``{user}`` serves that user and operators.

With a Postgres session store the deletion is ``adk_temporal.deletion``'s: the workflows (terminated,
histories deleted, not waited for: the request answers once Temporal accepted), the large payloads
they reference, then every table. Another store (tests, an in-memory API) gets its own deletion and
the conversations' workflows terminated.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.service import RPCError, RPCStatusCode

from adk_temporal import deletion
from adk_temporal.workflows import session_workflow_id

from .models import Deleted
from .routes import Call, Endpoint


def _engine(call: Call) -> AsyncEngine | None:
    engine = getattr(call.backend.sessions, "engine", None)
    return engine if isinstance(engine, AsyncEngine) else None


async def _terminate(call: Call, app: str, user: str, session_id: str) -> bool:
    handle = call.backend.client.client.get_workflow_handle(session_workflow_id(app, user, session_id))
    try:
        await handle.terminate(reason="deleted through the HTTP API")
    except RPCError as e:
        if e.status != RPCStatusCode.NOT_FOUND:  # not running: nothing to stop
            raise
        return False
    return True


async def delete_session(call: Call) -> Deleted:
    """The conversation's workflow goes with its session: left running, it would answer from a
    session the store no longer has."""
    app, user, session_id = call.path["app"], call.path["user"], call.path["session"]
    engine = _engine(call)
    if engine is not None:
        report = await deletion.delete_session(call.backend.client.client, engine, app, user, session_id, wait=False)
        return Deleted(workflow_terminated=bool(report.workflows))
    terminated = await _terminate(call, app, user, session_id)
    await call.backend.sessions.delete_session(app_name=app, user_id=user, session_id=session_id)
    return Deleted(workflow_terminated=terminated)


async def delete_user(call: Call) -> Deleted:
    app, user = call.path["app"], call.path["user"]
    engine = _engine(call)
    if engine is not None:
        report = await deletion.delete_user(call.backend.client.client, engine, app, user, wait=False)
        return Deleted(workflow_terminated=bool(report.workflows))
    sessions = (await call.backend.sessions.list_sessions(app_name=app, user_id=user)).sessions
    terminated = [await _terminate(call, app, user, s.id) for s in sessions]
    await call.backend.sessions.delete_user(app_name=app, user_id=user)
    return Deleted(workflow_terminated=any(terminated))


_SESSION = "/apps/{app}/users/{user}/sessions/{session}"

DELETION_ENDPOINTS: list[Endpoint] = [
    Endpoint("DELETE", _SESSION, delete_session, "Delete a session everywhere (workflows, events, memory, artifacts...)",
             Deleted, errors=(400,),
             description="Its conversation's workflows are terminated and deleted, then its events, memory entries, "
             "artifacts, large payloads, streamed partials, simulator and eval sessions. Safe to repeat."),
    Endpoint("DELETE", "/apps/{app}/users/{user}", delete_user, "Delete a user everywhere (the user, or an operator)",
             Deleted, errors=(400,),
             description="Every session of the user in the app as above, and their user: state and user: artifacts. "
             "Safe to repeat."),
]  # fmt: skip
