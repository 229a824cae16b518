"""A response schema in the subset of JSON Schema that Claude's structured outputs take.

The API refuses a schema with keywords outside its subset (numeric bounds, string lengths, ``oneOf``,
an object that allows extra properties ...), which would fail every turn with a 400. The official
SDK rewrites schemas before sending them; these are its rules: objects get
``additionalProperties: false``, ``oneOf`` becomes ``anyOf``, strings keep only the formats the API
knows, arrays only ``minItems`` of 0 or 1, and every other keyword is moved into the description,
where the model can still read it.
"""

from __future__ import annotations

from typing import Any

from adk_core.errors import ConfigurationError

_STRING_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` rewritten into the subset Claude takes (a new dict; ``schema`` is not changed)."""
    rest = dict(schema)
    out: dict[str, Any] = {}
    if (defs := rest.pop("$defs", None)) is not None:
        out["$defs"] = {name: strict_schema(sub) for name, sub in defs.items()}
    if (ref := rest.pop("$ref", None)) is not None:
        return {**out, "$ref": ref}
    kind = rest.pop("type", None)
    variants = rest.pop("anyOf", None) or rest.pop("oneOf", None)
    every = rest.pop("allOf", None)
    if isinstance(enum := rest.get("enum"), list) and enum and all(map(_primitive, enum)):
        out["enum"] = rest.pop("enum")
    if "const" in rest and _primitive(rest["const"]):
        out["const"] = rest.pop("const")
    literal = "enum" in out or "const" in out
    if isinstance(variants, list):
        out["anyOf"] = [strict_schema(v) for v in variants]
    elif isinstance(every, list):
        out["allOf"] = [strict_schema(v) for v in every]
    elif not literal:
        if kind not in _TYPES:
            raise ConfigurationError(
                f"the response schema has a part with no usable type ({_short(schema)}); give each part a "
                "'type', an 'anyOf', an 'allOf', a 'const' or an 'enum' of plain values"
            )
        out["type"] = kind
    for key in ("description", "title"):
        if key in rest:
            out[key] = rest.pop(key)
    if kind == "object" and not literal:
        out["properties"] = {name: strict_schema(sub) for name, sub in rest.pop("properties", {}).items()}
        rest.pop("additionalProperties", None)
        out["additionalProperties"] = False
        if "required" in rest:
            out["required"] = list(rest.pop("required"))
    elif kind == "string" and rest.get("format") in _STRING_FORMATS:
        out["format"] = rest.pop("format")
    elif kind == "array":
        if "items" in rest:
            out["items"] = strict_schema(rest.pop("items"))
        if rest.get("minItems") in (0, 1):
            out["minItems"] = rest.pop("minItems")
    if rest:
        # Keywords the API does not take: kept as words the model reads rather than dropped.
        extra = "{" + ", ".join(f"{key}: {value}" for key, value in rest.items()) + "}"
        out["description"] = f"{out['description']}\n\n{extra}" if "description" in out else extra
    return out


def _primitive(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _short(schema: dict[str, Any]) -> str:
    text = repr(schema)
    return text if len(text) <= 80 else text[:77] + "..."
