"""Tool declarations from Python signatures, and checking the arguments a model sends back.

Both directions read the signature once per (function, ignore) pair: ``coerce_args`` runs on every
tool call.
"""

from __future__ import annotations

import functools
import inspect
import json
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import docstring_parser
import jsonschema
import pydantic_core
from pydantic import PydanticUserError, TypeAdapter, ValidationError

from adk_core.errors import ConfigurationError, InvalidInputError
from adk_core.models.base import FunctionDeclaration

IgnoreParam = Callable[[inspect.Parameter, Any], bool]
"""Called with each parameter and its resolved annotation; True leaves it out of the schema."""

_IMPLICIT = frozenset({"self", "cls"})

# JSON schema keywords whose values are subschemas; everything else is data (default, enum, ...).
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "dependentSchemas"})
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SCHEMA_ONE = frozenset({"items", "additionalProperties", "not", "contains", "propertyNames"})


class _RecursiveModel(Exception):
    """A model refers to itself; Gemini rejects $ref, so it cannot be described."""


@dataclass(frozen=True, slots=True)
class _Param:
    name: str
    annotation: Any
    adapter: TypeAdapter[Any]
    default: Any  # inspect.Parameter.empty when required


def build_declaration(
    func: Callable[..., Any], *, name: str | None = None, ignore: IgnoreParam | None = None
) -> FunctionDeclaration:
    """Describe ``func`` to a model: its name, docstring and a JSON schema of its parameters.

    Args:
        func: The tool function. Annotations may be strings (``from __future__ import annotations``).
        name: The tool name; defaults to ``func.__name__``.
        ignore: Returns True for parameters the framework injects (e.g. a ToolContext).

    Raises:
        ConfigurationError: A parameter's annotation cannot be expressed as a JSON schema.
    """
    func_name, params = _signature(func, ignore)
    doc = docstring_parser.parse(inspect.getdoc(func) or "")
    arg_docs = {p.arg_name: p.description for p in doc.params if p.description}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in params:
        try:
            raw = param.adapter.json_schema()
            schema = _clean(raw, raw.get("$defs", {}), frozenset())
        except PydanticUserError as e:
            raise _unsupported(func_name, param.name, param.annotation, e) from e
        except _RecursiveModel as e:
            raise ConfigurationError(
                f"Parameter '{param.name}' of tool function '{func_name}' uses a recursive model, "
                "which cannot be inlined into a schema without $ref. Flatten the model."
            ) from e
        if param.name in arg_docs:
            schema["description"] = arg_docs[param.name]
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
        else:
            try:
                schema["default"] = pydantic_core.to_jsonable_python(param.default)
            except pydantic_core.PydanticSerializationError:
                pass  # a default the model cannot see is still applied when the arg is omitted
        properties[param.name] = schema
    description = "\n\n".join(d for d in (doc.short_description, doc.long_description) if d)
    return FunctionDeclaration(
        name=name or func_name,
        description=description,
        parameters={"type": "object", "properties": properties, "required": required},
    )


def coerce_args(
    func: Callable[..., Any], args: dict[str, Any], *, ignore: IgnoreParam | None = None
) -> dict[str, Any]:
    """Validate a model's JSON arguments and convert them to what ``func`` expects.

    Conversion is pydantic's lax mode: dicts become models, values become Enum members, "3"
    becomes 3. Unknown arguments are dropped, as are omitted optional arguments and nulls sent
    for them, so the function's default applies.

    Raises:
        InvalidInputError: One line per missing or invalid argument, fit to show the model.
    """
    func_name, params = _signature(func, ignore)
    result: dict[str, Any] = {}
    problems: list[str] = []
    for param in params:
        if param.name not in args:
            if param.default is inspect.Parameter.empty:
                problems.append(f"{param.name}: missing required argument")
            continue
        value = args[param.name]
        try:
            result[param.name] = param.adapter.validate_python(value)
        except ValidationError as e:
            if value is None and param.default is not inspect.Parameter.empty:
                continue  # models often send null to mean "use the default"
            problems.extend(_format_error(param.name, err) for err in e.errors(include_url=False))
    if problems:
        lines = "\n".join(f"- {p}" for p in problems)
        raise InvalidInputError(
            f"Invalid arguments for tool '{func_name}':\n{lines}\nFix these arguments and call the tool again."
        )
    return result


def validate_args_against_schema(schema: dict[str, Any], args: dict[str, Any]) -> list[str]:
    """Check ``args`` against a raw JSON schema (Draft 2020-12); returns problems, empty if valid.

    Raises:
        ConfigurationError: ``schema`` itself is not a valid JSON schema.
    """
    validator = _validator(json.dumps(schema, sort_keys=True))
    errors = sorted(validator.iter_errors(args), key=lambda e: ([str(p) for p in e.absolute_path], e.message))
    return [f"{'.'.join(str(p) for p in e.absolute_path) or 'arguments'}: {e.message}" for e in errors]


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> jsonschema.Draft202012Validator:
    schema = json.loads(schema_json)
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as e:
        raise ConfigurationError(
            f"Tool parameters are not a valid JSON schema: {e.message}. Fix the declared schema."
        ) from e
    return jsonschema.Draft202012Validator(schema)


def _signature(func: Callable[..., Any], ignore: IgnoreParam | None) -> tuple[str, tuple[_Param, ...]]:
    try:
        hash((func, ignore))
    except TypeError:  # e.g. a bound method of an unhashable dataclass instance
        return _read_signature(func, ignore)
    return _cached_signature(func, ignore)


@functools.lru_cache(maxsize=1024)
def _cached_signature(func: Callable[..., Any], ignore: IgnoreParam | None) -> tuple[str, tuple[_Param, ...]]:
    return _read_signature(func, ignore)


def _read_signature(func: Callable[..., Any], ignore: IgnoreParam | None) -> tuple[str, tuple[_Param, ...]]:
    func_name = getattr(func, "__name__", type(func).__name__)
    hints = _type_hints(func)
    params: list[_Param] = []
    for p in inspect.signature(func).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in _IMPLICIT:
            continue
        annotation = hints.get(p.name, Any if p.annotation is p.empty else p.annotation)
        if ignore is not None and ignore(p, annotation):
            continue
        if isinstance(annotation, str):
            raise ConfigurationError(
                f"Cannot resolve the annotation {annotation!r} of parameter '{p.name}' of tool function "
                f"'{func_name}'. Import that name at module level, not only under TYPE_CHECKING."
            )
        if p.kind is p.POSITIONAL_ONLY:
            raise ConfigurationError(
                f"Parameter '{p.name}' of tool function '{func_name}' is positional-only; tools are "
                "called with keyword arguments. Remove the '/' from the signature."
            )
        try:
            adapter: TypeAdapter[Any] = TypeAdapter(annotation)
        except PydanticUserError as e:
            raise _unsupported(func_name, p.name, annotation, e) from e
        params.append(_Param(p.name, annotation, adapter, p.default))
    return func_name, tuple(params)


def _type_hints(func: Callable[..., Any]) -> dict[str, Any]:
    target = func if inspect.isroutine(func) else type(func).__call__
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception:  # fall back per parameter, so the caller sees which one failed
        pass
    # One unresolvable name (often a TYPE_CHECKING-only import of ToolContext) must not hide the rest:
    # resolve each annotation alone and leave failures as strings for ``ignore`` to see.
    unwrapped = inspect.unwrap(target)
    globalns = getattr(unwrapped, "__globals__", {})
    hints: dict[str, Any] = {}
    for key, annotation in getattr(unwrapped, "__annotations__", {}).items():
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, globalns)  # what typing.get_type_hints does
            except Exception:
                pass  # left as a string: ``ignore`` may still match it
        hints[key] = annotation
    return hints


def _unsupported(func_name: str, param: str, annotation: Any, cause: Exception) -> ConfigurationError:
    shown = getattr(annotation, "__name__", None) or repr(annotation)
    return ConfigurationError(
        f"Cannot build a JSON schema for parameter '{param}' of tool function '{func_name}': "
        f"type {shown} is not supported ({type(cause).__name__}). Use str, int, float, bool, list[X], "
        "dict[str, X], Literal[...], an Enum, X | None or a pydantic BaseModel, or have the framework "
        "inject the parameter instead."
    )


def _format_error(param: str, err: Any) -> str:
    where = ".".join([param, *(str(p) for p in err["loc"])])
    if err["type"] == "missing":
        return f"{where}: missing required field"
    shown = repr(err["input"])
    shown = shown[:77] + "..." if len(shown) > 80 else shown
    return f"{where}: {err['msg']} (got {shown})"


def _clean(node: Any, defs: dict[str, Any], active: frozenset[str]) -> Any:
    """Replace each ``$ref`` with a copy of its definition (Gemini rejects $ref) and drop titles."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    if "$ref" in node:
        ref = node["$ref"].rsplit("/", 1)[-1]
        if ref in active:
            raise _RecursiveModel(ref)
        out.update(_clean(defs[ref], defs, active | {ref}))
    all_of = node.get("allOf")
    unwrap = isinstance(all_of, list) and len(all_of) == 1  # older pydantic: "$ref + description"
    if isinstance(all_of, list) and unwrap:
        out.update(_clean(all_of[0], defs, active))
    skip = {"$ref", "$defs", "allOf"} if unwrap else {"$ref", "$defs"}
    for key, value in node.items():
        if key in skip or (key == "title" and isinstance(value, str)):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {k: _clean(v, defs, active) for k, v in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_clean(v, defs, active) for v in value]
        elif key in _SCHEMA_ONE:
            out[key] = _clean(value, defs, active)
        else:
            out[key] = value
    return out


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema (e.g. ``Model.model_json_schema()``) with ``$ref``s inlined and titles dropped."""
    return _clean(schema, schema.get("$defs", {}), frozenset())
