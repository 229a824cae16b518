"""Function declarations built from signatures, and coercion of model-produced arguments."""

from __future__ import annotations

import enum
import inspect
import json
from typing import TYPE_CHECKING, Annotated, Any, Literal, Optional

import pytest
from pydantic import BaseModel, Field

from adk_core.errors import ConfigurationError, InvalidInputError
from adk_core.tools._schema import (
    _cached_signature,
    _clean,
    build_declaration,
    coerce_args,
    validate_args_against_schema,
)

if TYPE_CHECKING:
    from adk_core.tools.context import ToolContext  # noqa: F401 - deliberately unresolvable at run time


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Address(BaseModel):
    """A postal address."""

    street: str
    color: Color = Color.RED


class Person(BaseModel):
    name: str
    title: str = Field(description="Mr, Ms, Dr ...")
    home: Address
    previous: list[Address] = []


class Opaque:
    pass


class Node(BaseModel):
    children: list[Node] = []


def _props(func: Any, **kwargs: Any) -> dict[str, Any]:
    params = build_declaration(func, **kwargs).parameters
    assert params is not None
    return params["properties"]


def _walk_keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node) | {k for v in node.values() for k in _walk_keys(v)}
    if isinstance(node, list):
        return {k for v in node for k in _walk_keys(v)}
    return set()


def _is_ctx(param: inspect.Parameter, annotation: Any) -> bool:
    return param.name == "tool_context" or annotation == "ToolContext"


# --- build_declaration -------------------------------------------------------------------------


def test_scalars_and_containers() -> None:
    def f(s: str, i: int, x: float, b: bool, tags: list[str], scores: dict[str, float]) -> None:
        pass

    decl = build_declaration(f)
    assert decl.name == "f"
    assert decl.parameters == {
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "x": {"type": "number"},
            "b": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "scores": {"type": "object", "additionalProperties": {"type": "number"}},
        },
        "required": ["s", "i", "x", "b", "tags", "scores"],
    }


def test_optional_defaults_and_required() -> None:
    def f(a: Optional[int], b: int | None = None, c: str = "x", d: list[int] | None = None) -> None:  # noqa: UP045
        pass

    decl = build_declaration(f)
    assert decl.parameters is not None
    assert decl.parameters["required"] == ["a"]
    props = decl.parameters["properties"]
    null_or_int = [{"type": "integer"}, {"type": "null"}]
    assert props["a"] == {"anyOf": null_or_int}
    assert props["b"] == {"anyOf": null_or_int, "default": None}
    assert props["c"] == {"type": "string", "default": "x"}
    assert props["d"]["default"] is None


def test_non_json_default_is_omitted_but_param_stays_optional() -> None:
    sentinel = object()

    def f(a: Any = sentinel, color: Color = Color.GREEN) -> None:
        pass

    decl = build_declaration(f)
    assert decl.parameters is not None
    assert decl.parameters["properties"]["a"] == {}
    assert decl.parameters["properties"]["color"]["default"] == "green"
    assert decl.parameters["required"] == []


def test_literal_enum_and_unannotated() -> None:
    def f(mode: Literal["fast", "slow"], color: Color, anything) -> None:  # type: ignore[no-untyped-def]
        pass

    props = _props(f)
    assert props["mode"] == {"type": "string", "enum": ["fast", "slow"]}
    assert props["color"] == {"type": "string", "enum": ["red", "green"]}
    assert props["anything"] == {}


def test_nested_model_is_inlined_without_refs_or_titles() -> None:
    def f(person: Person) -> None:
        pass

    schema = _props(f)["person"]
    keys = _walk_keys(schema)
    assert not keys & {"$ref", "$defs", "allOf"}
    # The "title" keyword is stripped, but a property named "title" survives.
    assert schema["properties"]["title"] == {"type": "string", "description": "Mr, Ms, Dr ..."}
    assert "title" not in schema["properties"]["home"]
    home = schema["properties"]["home"]
    assert home["description"] == "A postal address."
    assert home["properties"]["color"] == {"type": "string", "enum": ["red", "green"], "default": "red"}
    assert schema["properties"]["previous"]["items"]["properties"]["street"] == {"type": "string"}


def test_inlining_handles_single_allof_wrappers_and_leaves_data_alone() -> None:
    # Older pydantic wraps "$ref + description" in a one-element allOf; "default" is data, not schema.
    schema = {
        "$defs": {"A": {"title": "A", "type": "object", "properties": {"x": {"type": "integer"}}}},
        "type": "object",
        "properties": {
            "a": {"allOf": [{"$ref": "#/$defs/A"}], "description": "d", "default": {"title": "keep"}}
        },
    }
    assert _clean(schema, schema["$defs"], frozenset()) == {
        "type": "object",
        "properties": {
            "a": {
                "type": "object",
                "properties": {"x": {"type": "integer"}},
                "description": "d",
                "default": {"title": "keep"},
            }
        },
    }


def test_recursive_model_is_a_configuration_error() -> None:
    def f(tree: Node) -> None:
        pass

    with pytest.raises(ConfigurationError, match="recursive model"):
        build_declaration(f)


def test_annotated_field_constraints_are_kept() -> None:
    def f(n: Annotated[int, Field(ge=1, le=10)] = 5) -> None:
        pass

    assert _props(f)["n"] == {"type": "integer", "minimum": 1, "maximum": 10, "default": 5}


def test_schema_is_deterministic_json() -> None:
    def f(person: Person, color: Color = Color.RED) -> None:
        pass

    first = json.dumps(build_declaration(f).parameters)
    assert first == json.dumps(build_declaration(f).parameters)


def test_google_docstring() -> None:
    def f(city: str, days: int = 1) -> str:
        """Get the weather forecast.

        Uses the national service.

        Args:
            city: City name, e.g. "Paris".
            days: How many days ahead.

        Returns:
            The forecast.
        """
        return ""

    decl = build_declaration(f)
    assert decl.description == "Get the weather forecast.\n\nUses the national service."
    props = _props(f)
    assert props["city"]["description"] == 'City name, e.g. "Paris".'
    assert props["days"] == {"type": "integer", "description": "How many days ahead.", "default": 1}


def test_rest_docstring() -> None:
    def f(city: str) -> None:
        """Look up a city.

        :param city: The city to find.
        """

    assert build_declaration(f).description == "Look up a city."
    assert _props(f)["city"]["description"] == "The city to find."


def test_numpy_docstring() -> None:
    def f(city: str) -> None:
        """Look up a city.

        Parameters
        ----------
        city : str
            The city to find.
        """

    assert _props(f)["city"]["description"] == "The city to find."


def test_name_override_and_no_docstring() -> None:
    def f() -> None:
        pass

    decl = build_declaration(f, name="other")
    assert (decl.name, decl.description) == ("other", "")
    assert decl.parameters == {"type": "object", "properties": {}, "required": []}


def test_excludes_varargs_self_and_ignored_params() -> None:
    class Tools:
        def lookup(self, query: str, tool_context: ToolContext, *args: Any, **kwargs: Any) -> None:
            pass

    seen: list[tuple[str, Any]] = []

    def ignore(param: inspect.Parameter, annotation: Any) -> bool:
        seen.append((param.name, annotation))
        return _is_ctx(param, annotation)

    # The ToolContext annotation only exists under TYPE_CHECKING: ignore still sees it (as a string).
    assert list(_props(Tools().lookup, ignore=ignore)) == ["query"]
    assert list(_props(Tools.lookup, ignore=ignore)) == ["query"]
    assert ("tool_context", "ToolContext") in seen


def test_ignore_by_annotation() -> None:
    def f(ctx: Opaque, q: str) -> None:
        pass

    assert list(_props(f, ignore=lambda p, a: a is Opaque)) == ["q"]


def test_unsupported_annotation_names_function_and_parameter() -> None:
    def search(query: str, client: Opaque) -> None:
        pass

    with pytest.raises(ConfigurationError) as info:
        build_declaration(search)
    message = str(info.value)
    assert "'client'" in message and "'search'" in message and "Opaque" in message
    assert "pydantic BaseModel" in message


def test_unresolvable_annotation_is_a_configuration_error() -> None:
    def f(tool_context: ToolContext) -> None:
        pass

    with pytest.raises(ConfigurationError, match="TYPE_CHECKING"):
        build_declaration(f)


def test_positional_only_is_rejected() -> None:
    def f(a: int, /) -> None:
        pass

    with pytest.raises(ConfigurationError, match="positional-only"):
        build_declaration(f)


# --- coerce_args --------------------------------------------------------------------------------


def test_coerce_builds_models_enums_and_lax_numbers() -> None:
    def f(person: Person, color: Color, n: int, tags: list[str] | None = None) -> None:
        pass

    raw = {
        "person": {"name": "Ada", "title": "Dr", "home": {"street": "Main", "color": "green"}},
        "color": "red",
        "n": "3",
        "unknown": 1,
    }
    out = coerce_args(f, raw)
    assert set(out) == {"person", "color", "n"}  # extra dropped, omitted optional left to the default
    assert isinstance(out["person"], Person) and out["person"].home.color is Color.GREEN
    assert out["color"] is Color.RED and out["n"] == 3


def test_coerce_reports_every_problem() -> None:
    def add(a: int, b: int, person: Person | None = None) -> int:
        return a + b

    with pytest.raises(InvalidInputError) as info:
        coerce_args(add, {"b": "x", "person": {"name": "Ada", "title": "Dr"}})
    message = str(info.value)
    assert "Invalid arguments for tool 'add'" in message
    assert "- a: missing required argument" in message
    assert "- b: Input should be a valid integer" in message and "(got 'x')" in message
    assert "- person.home: missing required field" in message


def test_coerce_invalid_enum_value() -> None:
    def f(color: Color) -> None:
        pass

    with pytest.raises(InvalidInputError, match=r"color: Input should be 'red' or 'green' \(got 'blue'\)"):
        coerce_args(f, {"color": "blue"})


def test_coerce_null_for_defaulted_param_uses_default() -> None:
    def f(limit: int = 10, maybe: int | None = 3) -> None:
        pass

    assert coerce_args(f, {"limit": None, "maybe": None}) == {"maybe": None}


def test_coerce_drops_ignored_and_unknown_args() -> None:
    def f(q: str, tool_context: Any = None, **kwargs: Any) -> None:
        pass

    # The schema never offered these, so the model cannot supply them (not even a spoofed context).
    out = coerce_args(f, {"q": "hi", "tool_context": "spoofed", "extra": 1}, ignore=_is_ctx)
    assert out == {"q": "hi"}


def test_coerce_is_cached_per_function() -> None:
    def f(a: int, b: int) -> int:
        return a + b

    assert coerce_args(f, {"a": 1, "b": "2"}) == {"a": 1, "b": 2}
    hits = _cached_signature.cache_info().hits
    coerce_args(f, {"a": 1, "b": 2})
    assert _cached_signature.cache_info().hits == hits + 1


def test_coerce_unhashable_callable_still_works() -> None:
    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

        def run(self, a: int) -> int:
            return a

    assert coerce_args(Unhashable().run, {"a": "4"}) == {"a": 4}


# --- validate_args_against_schema ---------------------------------------------------------------

RAW_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer", "minimum": 1},
        "opts": {"type": "object", "properties": {"unit": {"enum": ["c", "f"]}}},
    },
    "required": ["city"],
}


def test_validate_valid_args() -> None:
    assert validate_args_against_schema(RAW_SCHEMA, {"city": "Paris", "days": 2}) == []


def test_validate_reports_readable_problems() -> None:
    problems = validate_args_against_schema(RAW_SCHEMA, {"days": 0, "opts": {"unit": "k"}})
    assert problems == [
        "arguments: 'city' is a required property",
        "days: 0 is less than the minimum of 1",
        "opts.unit: 'k' is not one of ['c', 'f']",
    ]


def test_validate_with_invalid_schema_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="not a valid JSON schema"):
        validate_args_against_schema({"type": 5}, {})


def test_declaration_schema_accepts_its_own_coerced_inputs() -> None:
    def f(person: Person, color: Color = Color.RED) -> None:
        pass

    schema = build_declaration(f).parameters
    assert schema is not None
    args = {"person": {"name": "A", "title": "Dr", "home": {"street": "S"}}, "color": "green"}
    assert validate_args_against_schema(schema, args) == []
    assert validate_args_against_schema(schema, {"color": "blue"}) == [
        "arguments: 'person' is a required property",
        "color: 'blue' is not one of ['red', 'green']",
    ]
