"""The HTTP API's rules that need no server: how a failure becomes a status, how a path finds its
route (ids percent-encoded), and that the OpenAPI document lists exactly the route table."""

from __future__ import annotations

import pytest
from temporalio.service import RPCError, RPCStatusCode

from adk_core.errors import AlreadyExistsError, InvalidInputError, SessionNotFoundError, StateKeyError
from adkt.client import MessageRejectedError, TurnFailedError, WorkflowTaskFailedError
from adkt.web.api.dispatch import _ids, _route
from adkt.web.api.endpoints import ENDPOINTS
from adkt.web.api.errors import NotFoundError, NoWorkerError, error_body
from adkt.web.api.openapi import openapi_schema


@pytest.mark.parametrize(
    ("error", "status", "kind"),
    [
        (InvalidInputError("bad id"), 400, "InvalidInputError"),
        (StateKeyError("bad key"), 400, "StateKeyError"),
        (NotFoundError("no route"), 404, "NotFoundError"),
        (SessionNotFoundError("no session"), 404, "SessionNotFoundError"),
        (AlreadyExistsError("taken"), 409, "AlreadyExistsError"),
        (MessageRejectedError("refused"), 409, "MessageRejectedError"),
        (TurnFailedError("model said no", error_type="ModelError"), 502, "TurnFailedError"),
        (WorkflowTaskFailedError("stuck"), 503, "WorkflowTaskFailedError"),
        (NoWorkerError("no worker"), 503, "NoWorkerError"),
        (RPCError("down", RPCStatusCode.UNAVAILABLE, b""), 503, "TemporalUnavailable"),
        (RPCError("no", RPCStatusCode.INVALID_ARGUMENT, b""), 502, "TemporalError"),
        (KeyError("x"), 500, "InternalError"),
    ],
)
def test_errors_map_to_statuses(error: BaseException, status: int, kind: str) -> None:
    got_status, got_kind, message = error_body(error)
    assert (got_status, got_kind) == (status, kind)
    assert message


def test_routes_match_raw_segments_and_decode_ids_after() -> None:
    endpoint, raw = _route(ENDPOINTS, "GET", "/apps/shop/users/ana/sessions/a%2Fb")
    assert endpoint.handler.__name__ == "get_session"
    assert _ids(raw) == {"app": "shop", "user": "ana", "session": "a/b"}
    endpoint, _ = _route(ENDPOINTS, "POST", "/apps/shop/users/ana/sessions/s/messages/stream")
    assert endpoint.streams
    assert _ids({"user": "caf%C3%A9"}) == {"user": "café"}
    with pytest.raises(InvalidInputError, match="not UTF-8"):
        _ids({"user": "%FF"})
    with pytest.raises(InvalidInputError, match="whitespace"):
        _ids({"session": "%20s"})
    with pytest.raises(NotFoundError, match="openapi.json"):
        _route(ENDPOINTS, "GET", "/apps/shop/nothing")


def test_the_schema_lists_exactly_the_route_table() -> None:
    schema = openapi_schema(ENDPOINTS)
    documented = sorted((m.upper(), p) for p, ops in schema["paths"].items() for m in ops)
    assert documented == sorted((e.method, "/api/v1" + e.path) for e in ENDPOINTS)
    for endpoint in ENDPOINTS:
        operation = schema["paths"]["/api/v1" + endpoint.path][endpoint.method.lower()]
        assert [p["name"] for p in operation.get("parameters", []) if p["in"] == "path"] == endpoint.params
        assert "500" in operation["responses"]
