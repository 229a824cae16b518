"""Serving the route table: one Starlette endpoint under /api/v1 finds the Endpoint, validates the
path ids (adk_core.ids), the query and the body against the table's models, calls the handler and
checks that what it returns is the documented model."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from urllib.parse import unquote_to_bytes

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from adk_core.errors import InvalidInputError
from adk_core.ids import validate_id
from adk_temporal.metrics import web_metrics
from adk_temporal.tracing import current_trace_context, http_server_span, in_trace_context, name_http_span

from ..body import MAX_BODY_BYTES, BodyError, read_json
from ..security.principal import ForbiddenError, Principal, principal_of, require_operator
from .backend import ApiBackend
from .endpoints import ENDPOINTS
from .errors import NotFoundError, error_body, first_error
from .openapi import openapi_schema
from .routes import PATH_PARAMS, PREFIX, Call, Endpoint, Sse

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
_ROUTE_KEY = "adk.route"
"""Where dispatch leaves the matched endpoint's path template for the request metrics."""


def api_endpoint(
    backend: ApiBackend, endpoints: list[Endpoint] = ENDPOINTS, *, max_body_bytes: int = MAX_BODY_BYTES
) -> Callable[[Request], Awaitable[Response]]:
    """The Starlette endpoint for ``/api/v1/{rest:path}``; bodies larger than ``max_body_bytes`` are a 413."""
    schema = openapi_schema(endpoints)

    async def dispatch(request: Request) -> Response:
        started = time.perf_counter()
        with http_server_span(request.method, request.headers) as span:
            response = await answer(request)
            route = request.scope.get(_ROUTE_KEY, "unmatched")
            name_http_span(span, request.method, route, response.status_code)
        labels = {"route": route, "method": request.method, "status": str(response.status_code)}
        metrics = web_metrics()
        metrics.requests.add(1, labels)
        metrics.duration.record(time.perf_counter() - started, labels)
        return response

    async def answer(request: Request) -> Response:
        # The raw path: a percent-encoded '/' inside an id must not split the segment.
        raw = (request.scope.get("raw_path") or request.url.path.encode()).decode("latin-1")
        path = raw[len(PREFIX):] if raw.startswith(PREFIX) else raw
        if path == "/openapi.json" and request.method == "GET":
            request.scope[_ROUTE_KEY] = PREFIX + path
            return JSONResponse(schema)
        try:
            endpoint, raw_params = _route(endpoints, request.method, path)
            request.scope[_ROUTE_KEY] = PREFIX + endpoint.path  # the template: ids stay out of the labels
            call = Call(backend, _ids(raw_params), principal_of(request))
            authorize(endpoint, call.principal, call.path)
            if endpoint.query is not None:
                call.query = _parse(endpoint.query, dict(request.query_params), "query")
            if endpoint.body is not None:
                call.body = _parse(endpoint.body, await _json(request, max_body_bytes), "body")
            if endpoint.streams:
                events = await endpoint.handler(call)
                return StreamingResponse(
                    _frames(endpoint, events, current_trace_context()), media_type="text/event-stream",
                    headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
                )  # fmt: skip
            result = await endpoint.handler(call)
            if not isinstance(result, endpoint.response or BaseModel):
                raise TypeError(f"{endpoint.path} returned {type(result).__name__}, not its {endpoint.response}")
        except _Refusal as e:
            return e.response
        except Exception as e:  # noqa: BLE001 - every failure is answered as JSON (errors.py says which status)
            return error_response(e)
        return JSONResponse(result.model_dump(mode="json"), status_code=endpoint.status)

    return dispatch


def authorize(endpoint: Endpoint, principal: Principal, path: dict[str, str]) -> None:
    """Refuse an operator endpoint to others, and a path naming a user to anyone but that user and
    operators. The user comes from the credentials, never from the path alone."""
    if endpoint.operator:
        require_operator(principal, f"{endpoint.method} {PREFIX}{endpoint.path}")
    if principal.operator or "user" not in path:
        return
    if path["user"] != principal.user:
        raise ForbiddenError(
            f"you are {principal.describe()}; this path names user {path['user']!r}. Use your own user id "
            f"({principal.user!r}) in the path"
        )


def error_response(error: BaseException) -> JSONResponse:
    status, kind, message = error_body(error)
    return JSONResponse({"error": kind, "message": message}, status_code=status)


class _Refusal(Exception):
    def __init__(self, status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> None:
        self.response = JSONResponse({"error": kind, "message": message}, status_code=status, headers=headers)


def _route(endpoints: list[Endpoint], method: str, path: str) -> tuple[Endpoint, dict[str, str]]:
    allowed = []
    for endpoint in endpoints:
        params = endpoint.match(path)
        if params is None:
            continue
        if endpoint.method == method:
            return endpoint, params
        allowed.append(endpoint.method)
    if allowed:
        raise _Refusal(405, "MethodNotAllowed", f"{method} is not served at {PREFIX}{path}; use {', '.join(allowed)}",
                       {"Allow": ", ".join(allowed)})  # fmt: skip
    raise NotFoundError(
        f"no API route {PREFIX}{path}; the routes are listed in {PREFIX}/openapi.json (ids holding '/' go "
        "percent-encoded as %2F)"
    )


def _ids(raw: dict[str, str]) -> dict[str, str]:
    ids = {}
    for name, value in raw.items():
        try:
            decoded = unquote_to_bytes(value.encode("latin-1")).decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInputError(f"the {PATH_PARAMS[name]} in the path is not UTF-8; percent-encode its UTF-8 bytes") from None
        ids[name] = validate_id(PATH_PARAMS[name], decoded)
    return ids


async def _json(request: Request, limit: int) -> object:
    # Bounded: a huge body is a 413 before it is held in memory; bad bytes or deep nesting a 400 (body.py).
    try:
        return await read_json(request, limit)
    except BodyError as e:
        raise _Refusal(e.status, e.kind, str(e)) from None


def _parse(model: type[BaseModel], value: object, where: str) -> BaseModel:
    try:
        return model.model_validate(value)
    except ValidationError as e:
        fields = ", ".join(model.model_fields)
        raise _Refusal(422, "ValidationError", f"{where}: {first_error(e, f'the fields are: {fields}')}") from None


async def _frames(endpoint: Endpoint, events: AsyncIterator[Sse | None], trace_context: object) -> AsyncIterator[str]:
    metrics, route = web_metrics(), PREFIX + endpoint.path
    metrics.stream_opened(route)
    try:
        # The turn is sent as the stream is read, after the request's span ended: in its context,
        # so the turn's spans still belong to the request's trace.
        with in_trace_context(trace_context):
            yield ": stream open\n\n"
            async for frame in _frame_items(endpoint, events):
                yield frame
    finally:
        metrics.stream_closed(route)


async def _frame_items(endpoint: Endpoint, events: AsyncIterator[Sse | None]) -> AsyncIterator[str]:
    async for item in events:
        if item is None:
            yield ": keep-alive\n\n"
            continue
        expected = endpoint.events.get(item.event)
        if expected is None or not isinstance(item.data, expected):
            raise TypeError(f"{endpoint.path} sent an undocumented event {item.event!r} ({type(item.data).__name__})")
        head = f"event: {item.event}\n" + (f"id: {item.id}\n" if item.id else "")
        yield head + f"data: {item.data.model_dump_json()}\n\n"
