"""The OpenAPI 3.1 document, generated from the route table and its pydantic models."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from adk_core.ids import MAX_ID_LENGTH

from .models import ErrorBody
from .routes import PATH_PARAMS, PREFIX, Endpoint

REF = "#/components/schemas/{model}"
_REASONS = {400: "Bad input (an id, JSON)", 401: "No or bad credentials (Authorization: Bearer ...)",
            403: "Not allowed: another user's data, an operator's endpoint or app: state, or a cross-site request",
            404: "Not found", 405: "Method not allowed", 409: "Conflict",
            413: "The body is larger than the server's limit (ADK_MAX_BODY_BYTES)",
            422: "The body or query does not match its schema", 502: "The turn failed",
            503: "Temporal is unavailable, or the workflow cannot make progress"}  # fmt: skip


def openapi_schema(endpoints: list[Endpoint], *, version: str = "1") -> dict[str, Any]:
    models: list[tuple[type[BaseModel], Any]] = [(ErrorBody, "serialization")]
    for e in endpoints:
        models += [(m, "validation") for m in (e.body,) if m is not None]
        models += [(m, "serialization") for m in (e.response, *e.events.values()) if m is not None]
    refs, defs = models_json_schema(list(dict.fromkeys(models)), ref_template=REF)
    paths: dict[str, dict[str, Any]] = {}
    for e in endpoints:
        paths.setdefault(PREFIX + e.path, {})[e.method.lower()] = _operation(e, refs, defs)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "adk-temporal HTTP API",
            "version": version,
            "description": "Durable agent conversations: sessions, messages (JSON or server-sent events), pending "
            "confirmations and long-running tools, stored eval runs. Errors are "
            '{"error": kind, "message": what to do}. See docs/web.md.',
        },
        "paths": paths,
        "components": {"schemas": defs.get("$defs", {})},
    }


def _operation(e: Endpoint, refs: dict[Any, Any], defs: dict[str, Any]) -> dict[str, Any]:
    op: dict[str, Any] = {"operationId": e.handler.__name__, "summary": e.summary}
    if e.description:
        op["description"] = e.description
    params = [
        {"name": name, "in": "path", "required": True, "description": f"the {PATH_PARAMS[name]}; percent-encode '/'",
         "schema": {"type": "string", "minLength": 1, "maxLength": MAX_ID_LENGTH}}
        for name in e.params
    ]  # fmt: skip
    if e.query is not None:
        schema = e.query.model_json_schema(ref_template=REF)
        for name, prop in schema.get("properties", {}).items():
            params.append({"name": name, "in": "query", "required": name in schema.get("required", []), "schema": prop})
    if params:
        op["parameters"] = params
    if e.body is not None:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": refs[(e.body, "validation")]}}}
    if e.streams:
        op["responses"] = {str(e.status): {
            "description": "text/event-stream; each event's `data` is JSON of the schema named in x-sse-events",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        }}  # fmt: skip
        op["x-sse-events"] = {name: refs[(model, "serialization")] for name, model in e.events.items()}
    else:
        assert e.response is not None, f"{e.path}: a JSON endpoint needs a response model"
        op["responses"] = {str(e.status): {
            "description": "OK", "content": {"application/json": {"schema": refs[(e.response, "serialization")]}},
        }}  # fmt: skip
    error_ref = refs[(ErrorBody, "serialization")]
    if e.operator:
        op["description"] = (op.get("description", "") + " Needs the operator role.").strip()
    for status in sorted({*e.errors, 401, 403, 500, *((413,) if e.body is not None else ())}):
        op["responses"][str(status)] = {
            "description": _REASONS.get(status, "A bug: the message and the server log say what"),
            "content": {"application/json": {"schema": error_ref}},
        }
    return op
