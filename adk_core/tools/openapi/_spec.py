"""Reading an OpenAPI 3.x document: each operation as a tool name, a JSON schema for its arguments,
and where each argument goes in the request."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...errors import ConfigurationError
from .._names import provider_safe_name

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
BODY = "body"
"""The argument that holds the request body (JSON, or a form sent url-encoded)."""
JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
MAX_INLINED_NODES = 2000
"""At most this many schema objects in one argument's schema once its ``$ref``s are inlined (see
``_Refs.inline``): schemas that refer to each other would otherwise grow factorially."""


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
    body_media_type: str | None = None
    """The document's media type of the ``body`` argument (a JSON one, or FORM); None: no body."""


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
    media_type = _body_media_type(body.get("content") or {})
    if media_type is not None:
        sent = body["content"][media_type] or {}
        schema = resolver.inline(sent.get("schema") or {"type": "object"})
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
        body_media_type=media_type,
    )


def _body_media_type(content: dict[str, Any]) -> str | None:
    """The request body media type the toolset sends: plain JSON first, then any JSON one
    (``application/merge-patch+json``, ``application/json; charset=utf-8``), then a url-encoded
    form. Other bodies (multipart, binary, XML) are not sent: the operation gets no ``body``."""
    json_types = [m for m in content if is_json(m)]
    if json_types:
        return next((m for m in json_types if _essence(m) == JSON), json_types[0])
    return next((m for m in content if _essence(m) == FORM), None)


def is_json(media_type: str) -> bool:
    essence = _essence(media_type)
    return essence == JSON or (essence.startswith("application/") and essence.endswith("+json"))


def _essence(media_type: str) -> str:
    """``application/json`` of ``Application/JSON; charset=utf-8``."""
    return media_type.split(";", 1)[0].strip().lower()


def _scheme_names(requirements: Any) -> tuple[str, ...]:
    return tuple(name for requirement in requirements or [] for name in requirement)


class _Refs:
    """Local ``$ref``s (``#/components/...``) inlined, within bounds (docs/tools.md "OpenAPI"):

    - a ``$ref`` already being inlined further up (a schema that refers to itself, directly or
      through others) is not inlined again there;
    - one argument's schema holds at most MAX_INLINED_NODES schema objects. Schemas that refer to
      each other (a customer with invoices with a customer ...) grow factorially when every path
      through them is inlined; such a schema is inlined down to the deepest nesting of ``$ref``s
      that fits, and the ``$ref``s below it are not inlined. A ``$ref`` to a schema without
      ``$ref``s of its own (an enum, a plain object) is always inlined: it cannot grow.

    A ``$ref`` not inlined becomes a permissive schema of its target's type (``{"type": "object"}``
    for an object) with the target's description: the model may send any value, the API judges it.
    """

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self._leaf: dict[str, bool] = {}

    def resolve(self, node: Any) -> Any:
        seen = set()
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            if ref in seen:
                raise ConfigurationError(f"OpenAPI $ref {ref!r} refers to itself")
            seen.add(ref)
            node = self._target(ref)
        return node

    def inline(self, node: Any) -> Any:
        try:
            return self._inline(node, frozenset(), None, [0])
        except _TooBig:
            pass
        # Too big in full: the deepest nesting that fits (the size only grows with the nesting).
        # Doubling, then halving, keeps this to a few bounded tries; nesting 0 is always taken.
        fits, low, high = self._inline(node, frozenset(), 0, None), 0, None
        while high is None or high - low > 1:
            trial = 2 * low + 1 if high is None else (low + high) // 2
            try:
                fits, low = self._inline(node, frozenset(), trial, [0]), trial
            except _TooBig:
                high = trial
        return fits

    def _inline(self, node: Any, active: frozenset[str], depth: int | None, count: list[int] | None) -> Any:
        """``depth``: how many more nested ``$ref``s (to schemas with ``$ref``s) may be inlined below
        (None: any); ``count``: schema objects made so far, bounded (None: not counted)."""
        if isinstance(node, list):
            return [self._inline(v, active, depth, count) for v in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            ref = node["$ref"]
            target = self._target(ref)
            if ref in active or (depth == 0 and not self._is_leaf(ref)):
                _made(count)
                return _stub(target)
            if depth is not None and not self._is_leaf(ref):
                depth -= 1
            return self._inline(target, active | {ref}, depth, count)
        _made(count)
        inlined: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DOC_ONLY_KEYWORDS:
                continue
            if key in _NAMED_SCHEMAS and isinstance(value, dict):
                # Property names, not keywords: a property may be called "example" or "xml".
                inlined[key] = {name: self._inline(sub, active, depth, count) for name, sub in value.items()}
            else:
                inlined[key] = self._inline(value, active, depth, count)
        return inlined

    def _is_leaf(self, ref: str) -> bool:
        """Whether the schema ``ref`` points at holds no ``$ref`` itself."""
        if ref not in self._leaf:
            def has_ref(node: Any) -> bool:
                if isinstance(node, list):
                    return any(has_ref(v) for v in node)
                return isinstance(node, dict) and ("$ref" in node or any(has_ref(v) for v in node.values()))

            self._leaf[ref] = not has_ref(self._target(ref))
        return self._leaf[ref]

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


_DOC_ONLY_KEYWORDS = ("xml", "example", "examples")
"""Schema keywords left out of a declaration: documentation that providers' schema subsets refuse."""
_NAMED_SCHEMAS = ("properties", "patternProperties")
"""Keywords whose value maps names to schemas: the names are data, never dropped as keywords."""


def _made(count: list[int] | None) -> None:
    """One more schema object in the inlined schema; too many raise _TooBig."""
    if count is not None:
        count[0] += 1
        if count[0] > MAX_INLINED_NODES:
            raise _TooBig()


class _TooBig(Exception):  # noqa: N818  (a signal inside _Refs.inline)
    """The inlined schema would hold more than MAX_INLINED_NODES schema objects."""


def _stub(target: Any) -> dict[str, Any]:
    """A ``$ref`` not inlined: any value of its target's type, described as the target is."""
    kind = target.get("type") if isinstance(target, dict) else None
    scalar_or_array = ("string", "number", "integer", "boolean", "array")
    stub: dict[str, Any] = {"type": kind if kind in scalar_or_array else "object"}
    if kind == "array":
        stub["items"] = {"type": "object"}
    if isinstance(target, dict) and isinstance(target.get("description"), str):
        stub["description"] = target["description"]
    return stub
