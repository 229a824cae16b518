"""Check request bodies against the official SDKs' own request types, unknown keys refused.

``anthropic`` and ``openai`` describe request bodies as TypedDicts. pydantic's TypeAdapter over them is
not strict enough here: their content unions also admit the SDKs' response models (which allow any
extra key) and ``Iterable`` fields are validated lazily. So this walks the type hints itself: a
TypedDict must be a dict with its required keys and no others, a Literal must match, a union must
have one member that accepts the value (response models are skipped), lists are checked item by item.

``google-genai`` describes the REST body's parts (Content, Tool, ToolConfig, GenerationConfig) as
pydantic models that already forbid extra keys and take the wire's camelCase names.
"""

from __future__ import annotations

import collections.abc
import functools
import json
import types
import typing
from typing import Any

import typing_extensions
from anthropic.types.message_create_params import (
    MessageCreateParamsNonStreaming,
    MessageCreateParamsStreaming,
)
from openai.types.chat.completion_create_params import (
    CompletionCreateParamsNonStreaming,
    CompletionCreateParamsStreaming,
)
from pydantic import BaseModel

from adk_core.models import model_rules
from adk_core.models.anthropic import AnthropicModel


class SdkTypeError(AssertionError):
    """A body that the SDK's request type does not describe."""


def check_typed(value: Any, annotation: Any, path: str = "body") -> None:
    """Raise SdkTypeError when ``value`` is not an instance of the SDK's param type ``annotation``."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Annotated, typing_extensions.Annotated):
        return check_typed(value, args[0], path)
    if origin in (
        typing_extensions.Required,
        typing_extensions.NotRequired,
        typing.Required,
        typing.NotRequired,
    ):
        return check_typed(value, args[0], path)
    if annotation is Any or annotation is object:
        return None
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if not (isinstance(a, type) and issubclass(a, BaseModel))]
        errors = []
        for member in members:
            try:
                check_typed(value, member, path)
                return None
            except SdkTypeError as e:
                errors.append(str(e))
        raise SdkTypeError(
            f"{path}: no member of the union accepts {value!r:.120}:\n  " + "\n  ".join(errors)
        )
    if origin in (typing.Literal, typing_extensions.Literal):
        if value not in args:
            raise SdkTypeError(f"{path}: {value!r} is not one of {args}")
        return None
    if annotation is type(None):
        if value is not None:
            raise SdkTypeError(f"{path}: expected null")
        return None
    if typing_extensions.is_typeddict(annotation):
        return _check_typeddict(value, annotation, path)
    if origin in (dict, collections.abc.Mapping) or annotation is dict:
        if not isinstance(value, dict):
            raise SdkTypeError(f"{path}: expected an object, got {type(value).__name__}")
        if args:
            for key, item in value.items():
                check_typed(item, args[1], f"{path}.{key}")
        return None
    if origin in (list, collections.abc.Iterable, collections.abc.Sequence) or _is_sequence_not_str(
        annotation
    ):
        if not isinstance(value, list):
            raise SdkTypeError(f"{path}: expected an array, got {type(value).__name__}")
        item_type = args[0] if args else Any
        for index, item in enumerate(value):
            check_typed(item, item_type, f"{path}[{index}]")
        return None
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SdkTypeError(f"{path}: expected a number, got {value!r}")
        return None
    if annotation in (str, int, bool):
        if not isinstance(value, annotation) or (annotation is int and isinstance(value, bool)):
            raise SdkTypeError(f"{path}: expected {annotation.__name__}, got {value!r:.80}")
        return None
    if isinstance(annotation, typing.TypeVar | typing_extensions.TypeAliasType):
        return check_typed(value, getattr(annotation, "__value__", Any), path)
    raise SdkTypeError(f"{path}: no rule for the SDK type {annotation!r}")


def _is_sequence_not_str(annotation: Any) -> bool:
    # The SDKs' SequenceNotStr[str] is a Protocol generic; a JSON array is what it means on the wire.
    origin = typing.get_origin(annotation)
    return getattr(origin, "__name__", "") == "SequenceNotStr"


def _check_typeddict(value: Any, typed_dict: Any, path: str) -> None:
    if not isinstance(value, dict):
        raise SdkTypeError(f"{path}: expected an object ({typed_dict.__name__}), got {type(value).__name__}")
    hints = _hints(typed_dict)
    unknown = set(value) - set(hints)
    if unknown:
        raise SdkTypeError(f"{path}: {typed_dict.__name__} has no key {sorted(unknown)}")
    missing = _required(typed_dict) - set(value)
    if missing:
        raise SdkTypeError(f"{path}: {typed_dict.__name__} requires {sorted(missing)}")
    for key, item in value.items():
        check_typed(item, hints[key], f"{path}.{key}")


@functools.cache
def _hints(typed_dict: Any) -> dict[str, Any]:
    return typing.get_type_hints(typed_dict, include_extras=True)


def _required_keys(typed_dict: Any, hints: dict[str, Any]) -> set[str]:
    # With postponed annotations typing_extensions cannot see Required[...] itself, and a TypedDict's
    # __annotations__ holds its bases' keys too: walk the bases, each with its own totality.
    bases = [b for b in getattr(typed_dict, "__orig_bases__", ()) if typing_extensions.is_typeddict(b)]
    required: set[str] = set()
    inherited: set[str] = set()
    for base in bases:
        required |= _required_keys(base, hints)
        inherited |= set(base.__annotations__)
    total = typed_dict.__dict__.get("__total__", True)
    for key in set(typed_dict.__annotations__) - inherited:
        origin = typing.get_origin(hints.get(key))
        if origin in (typing_extensions.Required, typing.Required) or (
            total and origin not in (typing_extensions.NotRequired, typing.NotRequired)
        ):
            required.add(key)
    return required


@functools.cache
def _required(typed_dict: Any) -> frozenset[str]:
    return frozenset(_required_keys(typed_dict, _hints(typed_dict)))


GEMINI_BODY_KEYS = {
    "contents": "Content[]",
    "systemInstruction": "Content",
    "tools": "Tool[]",
    "toolConfig": "ToolConfig",
    "generationConfig": "GenerationConfig",
    "safetySettings": "SafetySetting[]",
    "cachedContent": "str",
    "labels": "dict",
}
"""The generateContent REST body's fields (the SDK's _GenerateContentParameters_to_mldev writes these)."""


def check_gemini_body(body: dict[str, Any]) -> None:
    """Each part of a generateContent body against google-genai's models (which forbid extra keys)."""
    from google.genai import types as genai

    unknown = set(body) - set(GEMINI_BODY_KEYS)
    if unknown:
        raise SdkTypeError(f"body: generateContent has no field {sorted(unknown)}")
    if "contents" not in body:
        raise SdkTypeError("body: generateContent requires contents")
    checks: list[tuple[str, type[BaseModel], Any]] = [
        *((f"contents[{i}]", genai.Content, c) for i, c in enumerate(body["contents"])),
        *((f"tools[{i}]", genai.Tool, t) for i, t in enumerate(body.get("tools", []))),
        *(
            (f"safetySettings[{i}]", genai.SafetySetting, s)
            for i, s in enumerate(body.get("safetySettings", []))
        ),
    ]
    for key, model in (
        ("systemInstruction", genai.Content),
        ("toolConfig", genai.ToolConfig),
        ("generationConfig", genai.GenerationConfig),
    ):
        if key in body:
            checks.append((key, model, body[key]))
    for path, model, value in checks:
        try:
            model.model_validate_json(json.dumps(value))
        except ValueError as e:
            raise SdkTypeError(f"{path}: not a google.genai.types.{model.__name__}: {e}") from None


# Claude models before Opus 4.7 still take these, but the SDK's request type no longer declares
# them (it follows the newest models). They are allowed only where the rules table says so.
LEGACY_ANTHROPIC_SAMPLING = ("temperature", "top_p", "top_k")


def check_anthropic(body: dict[str, Any], model: str, *, stream: bool) -> None:
    """A Messages body against MessageCreateParams; sampling keys only where ``model``'s rules take them."""
    accepted = (model_rules(model) or AnthropicModel.provider_rules).accepts
    legacy = {key for key in LEGACY_ANTHROPIC_SAMPLING if key in body}
    assert legacy <= accepted, f"{model} was sent {sorted(legacy - accepted)}, which it refuses"
    declared = {key: body[key] for key in body if key not in legacy}
    check_typed(declared, MessageCreateParamsStreaming if stream else MessageCreateParamsNonStreaming)


def check_openai(body: dict[str, Any], model: str, *, stream: bool) -> None:
    """A Chat Completions body against CompletionCreateParams."""
    check_typed(body, CompletionCreateParamsStreaming if stream else CompletionCreateParamsNonStreaming)


def check_gemini(body: dict[str, Any], model: str, *, stream: bool) -> None:
    """A generateContent body (the same for a streamed call) against google-genai's models."""
    check_gemini_body(body)
