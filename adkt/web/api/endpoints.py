"""The HTTP API's operations and their route table (``ENDPOINTS``).

Paths follow google-adk's api_server where it has the same operation
(``/apps/{app}/users/{user}/sessions/{session}``). Streaming uses server-sent events; the event
types are listed on the endpoint (see docs/web.md) and clients ignore types they do not know, so
new ones (token-level ``partial`` events) can be added without breaking them.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

from adk_core.errors import InvalidInputError, SessionNotFoundError
from adk_core.eval.store import EvalResultStore
from adk_core.state import APP_PREFIX
from adk_core.types import Event
from adk_temporal.workflows import session_workflow_id
from adk_temporal.workflows.contracts import final_text

from ..security.principal import ForbiddenError
from .deletion_endpoints import DELETION_ENDPOINTS
from .errors import NotFoundError, error_body
from .eval_endpoints import EVAL_ENDPOINTS
from .models import (
    AppList,
    CreateSessionBody,
    ErrorBody,
    EvalRunList,
    ListRunsQuery,
    ListSessionsQuery,
    MessageBody,
    PendingList,
    ReplyBody,
    RunDetail,
    SessionDetail,
    SessionList,
    StreamDone,
    StreamStart,
    TurnResponse,
)
from .routes import Call, Endpoint, Sse
from .sse import with_keepalive
from .timeline import SessionTimeline
from .timeline_history import session_timeline


def _ids(call: Call) -> tuple[str, str, str]:
    return call.path["app"], call.path["user"], call.path["session"]


def _known_app(call: Call) -> str:
    """The app of the path, when this server knows it (or knows no list of apps)."""
    app = call.path["app"]
    names = [a.name for a in call.backend.apps]
    if names and app not in names:
        raise NotFoundError(
            f"no app named {app!r} here; this server serves {', '.join(map(repr, names))} (GET /api/v1/apps). "
            "Start the server with --app module:attr for another app"
        )
    return app


async def list_apps(call: Call) -> AppList:
    b = call.backend
    return AppList(apps=b.apps, temporal_ui=b.temporal_ui, namespace=b.namespace, simulator_page=b.simulator_page)


async def list_sessions(call: Call) -> SessionList:
    """An operator lists every user's sessions (or one user's); anyone else only their own."""
    query: ListSessionsQuery = call.query
    user_id, me = query.user_id, call.principal
    if not me.operator:
        if user_id is not None and user_id != me.user:
            raise ForbiddenError(
                f"you are {me.describe()}; you may list only your own sessions (user_id={me.user!r}, or no user_id)"
            )
        user_id = me.user
    found = await call.backend.sessions.list_sessions(app_name=call.path["app"], user_id=user_id)
    newest_first = sorted(found.sessions, key=lambda s: s.last_update_time, reverse=True)
    return SessionList(sessions=[call.backend.summary(s) for s in newest_first])


async def create_session(call: Call) -> SessionDetail:
    body: CreateSessionBody = call.body
    app, user = _known_app(call), call.path["user"]
    _refuse_app_state(call, body.state)
    session = await call.backend.sessions.create_session(
        app_name=app, user_id=user, state=body.state, session_id=body.session_id
    )
    return SessionDetail(**call.backend.summary(session).model_dump(), events=session.events)


def _refuse_app_state(call: Call, state: dict | None) -> None:
    """``app:`` keys are shared by every user and session of the app: a session created with them
    rewrites what every other user's sessions read. Only an operator sets them; a user's own keys
    (session and ``user:``) stay theirs to set."""
    shared = sorted(k for k in state or {} if k.startswith(APP_PREFIX))
    if shared and not call.principal.operator:
        raise ForbiddenError(
            f"you are {call.principal.describe()}; app state ({', '.join(map(repr, shared))}) is shared by every "
            "user of the app and is the operator's to set. Drop the app: keys, or ask an operator"
        )


async def get_session(call: Call) -> SessionDetail:
    app, user, session_id = _ids(call)
    session = await call.backend.sessions.get_session(app_name=app, user_id=user, session_id=session_id)
    if session is None:
        raise SessionNotFoundError(
            f"no session {session_id!r} for app {app!r}, user {user!r}; "
            f"list them with GET /api/v1/apps/{{app}}/sessions?user_id=..."
        )
    summary = call.backend.summary(session)
    return SessionDetail(**summary.model_dump(), events=session.events,
                         worker_version=await call.backend.worker_version(summary.workflow_id))  # fmt: skip


async def get_timeline(call: Call) -> SessionTimeline:
    return await session_timeline(call.backend, *_ids(call))


async def send_message(call: Call) -> TurnResponse:
    body: MessageBody = call.body
    app, user, session_id = _known_app(call), call.path["user"], call.path["session"]
    if body.partial:
        raise InvalidInputError(
            "partial events are streamed only: POST .../messages/stream with partial=true, or drop partial here"
        )
    await call.backend.require_worker(app)
    turn = await call.backend.client.send(app, user, session_id, body.message(), message_id=body.message_id)
    pending = await call.backend.pending(app, user, session_id)
    return TurnResponse(
        message_id=turn.message_id or body.message_id or "", invocation_id=turn.invocation_id,
        final_text=turn.final_text, events=turn.events, pending=pending,
    )  # fmt: skip


async def stream_message(call: Call) -> AsyncIterator[Sse | None]:
    """Checks everything that can be checked before the stream opens (a 4xx, not an SSE error)."""
    body: MessageBody = call.body
    app, user, session_id = _known_app(call), call.path["user"], call.path["session"]
    message_id = body.message_id or uuid.uuid4().hex
    workflow_id = session_workflow_id(app, user, session_id)
    backend = call.backend
    await backend.require_worker(app)

    async def events() -> AsyncIterator[Sse]:
        yield Sse("start", StreamStart(message_id=message_id, workflow_id=workflow_id,
                                       workflow_url=backend.workflow_url(workflow_id)))  # fmt: skip
        seen = []
        try:
            async for event in backend.client.stream(
                app, user, session_id, body.message(), message_id=message_id, partial=body.partial
            ):
                if event.partial:  # shown, never stored: no id to resume from
                    yield Sse("partial", event)
                    continue
                seen.append(event)
                yield Sse("event", event, id=f"{message_id}:{len(seen)}")
            pending = await backend.pending(app, user, session_id)
        except Exception as e:  # noqa: BLE001 - the stream is open: the failure goes out as an event
            _, kind, message = error_body(e)
            yield Sse("error", ErrorBody(error=kind, message=message))
            return
        yield Sse("done", StreamDone(message_id=message_id, final_text=final_text(seen), event_count=len(seen),
                                     pending=pending))  # fmt: skip

    return with_keepalive(events())


async def list_pending(call: Call) -> PendingList:
    app, user, session_id = _ids(call)
    return PendingList(pending=await call.backend.pending(app, user, session_id))


async def reply(call: Call) -> TurnResponse:
    body: ReplyBody = call.body
    app, user, session_id = _known_app(call), call.path["user"], call.path["session"]
    call_id = call.path["call_id"]
    pending = await call.backend.pending(app, user, session_id)
    request = next((p for p in pending if p.call_id == call_id), None)
    if request is None:
        waiting = ", ".join(repr(p.call_id) for p in pending) or "nothing"
        raise NotFoundError(
            f"session {session_id!r} does not wait for call {call_id!r}; it waits for {waiting} "
            "(GET .../pending lists them)"
        )
    if request.kind == "tool_confirmation" and not isinstance(body.response.get("confirmed"), bool):
        raise InvalidInputError(
            f"call {call_id!r} asks to confirm {request.name}: answer "
            '{"response": {"confirmed": true}} to allow it or {"response": {"confirmed": false}} to refuse'
        )
    await call.backend.require_worker(app)
    turn = await call.backend.client.reply(app, user, session_id, call_id, body.response, reply_id=body.reply_id)
    return TurnResponse(
        message_id=turn.message_id, invocation_id=turn.invocation_id, final_text=turn.final_text, events=turn.events,
        pending=await call.backend.pending(app, user, session_id),
    )  # fmt: skip


def _evals(call: Call) -> EvalResultStore:
    if call.backend.evals is None:
        raise NotFoundError("this server has no eval results store; start it with a database URL")
    return call.backend.evals


async def list_eval_runs(call: Call) -> EvalRunList:
    query: ListRunsQuery = call.query
    return EvalRunList(runs=await _evals(call).list_runs(limit=query.limit))


async def get_eval_run(call: Call) -> RunDetail:
    run = await _evals(call).get_run(call.path["run_id"])
    if run is None:
        raise NotFoundError(f"no eval run {call.path['run_id']!r}; GET /api/v1/evals/runs lists the stored ones")
    return run


_SESSION = "/apps/{app}/users/{user}/sessions/{session}"

ENDPOINTS: list[Endpoint] = [
    Endpoint("GET", "/apps", list_apps, "List the apps this server serves", AppList),
    Endpoint("GET", "/apps/{app}/sessions", list_sessions, "List an app's stored sessions, newest first",
             SessionList, query=ListSessionsQuery, errors=(400, 422)),
    Endpoint("POST", "/apps/{app}/users/{user}/sessions", create_session, "Create a session",
             SessionDetail, body=CreateSessionBody, status=201, errors=(400, 404, 409, 422)),
    Endpoint("GET", _SESSION, get_session, "A session: state and events", SessionDetail, errors=(400, 404)),
    Endpoint("GET", _SESSION + "/timeline", get_timeline, "A conversation's turns as timelines", SessionTimeline,
             errors=(400, 404), description="Per turn: a bar per agent, model call, tool call, wait for a person, "
             "retry and continue-as-new, with durations, tokens and cost; the conversation's totals (docs/web.md)."),
    *DELETION_ENDPOINTS,
    Endpoint("POST", _SESSION + "/messages", send_message, "Send a message and wait for the turn's events",
             TurnResponse, body=MessageBody, errors=(400, 404, 409, 422, 502, 503),
             description="Starts the conversation's workflow (and the session) if needed."),
    Endpoint("POST", _SESSION + "/messages/stream", stream_message, "Send a message; stream the turn's events (SSE)",
             body=MessageBody, errors=(400, 404, 409, 422, 503),
             events={"start": StreamStart, "event": Event, "partial": Event, "done": StreamDone, "error": ErrorBody},
             description="Server-sent events: `start`, then one `event` per stored ADK event (with "
             "`partial: true` in the body, `partial` events carry the model's text as it is made; one whose "
             "custom_metadata holds `adk_stream_reset` says: drop this model call's partial text so far), then "
             "`done` (or `error`). Clients must ignore event types they do not know. Closing the stream does "
             "not stop the turn."),
    Endpoint("GET", _SESSION + "/pending", list_pending, "What the conversation waits for", PendingList,
             errors=(400,)),
    Endpoint("POST", _SESSION + "/pending/{call_id}", reply, "Answer a confirmation or a long-running tool",
             TurnResponse, body=ReplyBody, errors=(400, 404, 409, 422, 502, 503),
             description='A confirmation takes {"response": {"confirmed": true|false}}; a long-running tool '
             "takes its final result. Returns the events of the turn that the answer continues."),
    Endpoint("GET", "/evals/runs", list_eval_runs, "Stored eval runs, newest first", EvalRunList,
             query=ListRunsQuery, errors=(422,), operator=True),
    Endpoint("GET", "/evals/runs/{run_id}", get_eval_run, "An eval run with its cases and trials", RunDetail,
             errors=(400, 404), operator=True),
    *EVAL_ENDPOINTS,
]  # fmt: skip
