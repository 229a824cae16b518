"""Reading an OpenAPI 3.x document: each operation as a tool name, a JSON schema for its arguments,
and where each argument goes in the request."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...errors import ConfigurationError
from .._names import provider_safe_name

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
BODY = "body"
"""The argument that holds a JSON request body."""


@dataclass(frozen=True)
class Operation:
    name: str
    method: str
    path: str
    description: str
    parameters: dict[str, Any]
    """The JSON schema (type object) of the tool's arguments."""
    locations: dict[str, str] = field(default_factory=dict)
    """Argument name -> ``path``, ``query``, ``header``, ``cookie`` or ``body``."""
    security: tuple[str, ...] = ()
    """Names of the security schemes this operation accepts (any one of them)."""


def read_operations(doc: dict[str, Any]) -> list[Operation]:
    version = str(doc.get("openapi", ""))
    if not version.startswith("3."):
        raise ConfigurationError(
            f"OpenApiToolset reads OpenAPI 3.x documents; this one says openapi={version or 'nothing'!r}. "
            "Convert a Swagger 2.0 document first (e.g. with swagger2openapi)"
        )
    resolver = _Refs(doc)
    default_security = _scheme_names(doc.get("security"))
    operations: list[Operation] = []
    for path, item in (doc.get("paths") or {}).items():
        item = resolver.resolve(item)
        shared = item.get("parameters", [])
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            operations.append(_operation(resolver, path, method, op, shared, default_security))
    names = [o.name for o in operations]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigurationError(f"the OpenAPI document gives two operations the tool name(s) {dupes}; set unique operationIds")
    return operations


def _operation(
    resolver: _Refs, path: str, method: str, op: dict[str, Any], shared: list[Any], default_security: tuple[str, ...]
) -> Operation:
    properties: dict[str, Any] = {}
    required: list[str] = []
    locations: dict[str, str] = {}
    by_key = {}
    for param in [*shared, *op.get("parameters", [])]:
        param = resolver.resolve(param)
        by_key[(param["name"], param["in"])] = param  # an operation's own parameter overrides the path's
    for param in by_key.values():
        name = param["name"]
        schema = resolver.inline(param.get("schema") or {"type": "string"})
        if param.get("description"):
            schema = {**schema, "description": param["description"]}
        properties[name] = schema
        locations[name] = param["in"]
        if param.get("required") or param["in"] == "path":
            required.append(name)
    body = resolver.resolve(op.get("requestBody") or {})
    json_body = (body.get("content") or {}).get("application/json")
    if json_body is not None:
        schema = resolver.inline(json_body.get("schema") or {"type": "object"})
        if body.get("description"):
            schema = {**schema, "description": body["description"]}
        properties[BODY] = schema
        locations[BODY] = BODY
        if body.get("required"):
            required.append(BODY)
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    security = _scheme_names(op["security"]) if "security" in op else default_security
    return Operation(
        name=provider_safe_name(op.get("operationId") or f"{method}_{path}"),
        method=method.upper(),
        path=path,
        description=op.get("description") or op.get("summary") or f"{method.upper()} {path}",
        parameters=parameters,
        locations=locations,
        security=security,
    )




def _scheme_names(requirements: Any) -> tuple[str, ...]:
    return tuple(name for requirement in requirements or [] for name in requirement)


class _Refs:
    """Local ``$ref``s (``#/components/...``) inlined; a schema that refers to itself stops at a plain object."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc

    def resolve(self, node: Any) -> Any:
        seen = set()
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            if ref in seen:
                raise ConfigurationError(f"OpenAPI $ref {ref!r} refers to itself")
            seen.add(ref)
            node = self._target(ref)
        return node

    def inline(self, node: Any, active: frozenset[str] = frozenset()) -> Any:
        if isinstance(node, list):
            return [self.inline(v, active) for v in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            ref = node["$ref"]
            if ref in active:
                return {"type": "object"}
            return self.inline(self._target(ref), active | {ref})
        return {k: self.inline(v, active) for k, v in node.items() if k not in ("xml", "example", "examples")}

    def _target(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            raise ConfigurationError(f"OpenApiToolset resolves only local $refs ('#/...'); bundle {ref!r} into the document")
        node: Any = self.doc
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                raise ConfigurationError(f"OpenAPI $ref {ref!r} points at nothing in the document")
            node = node[part]
        return node
