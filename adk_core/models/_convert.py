"""Translation helpers the providers share: our types to a provider's JSON and back.

Request side: JSON-safe values, tool choice, tool-call ids, ``extra`` merging. Response side: tool-call
arguments, partial and error responses built the same way for every provider.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any, TypedDict

from pydantic_core import to_jsonable_python

from adk_core.types import Content, FunctionCall, FunctionResponse, Part

from .base import GenerateContentConfig, LlmResponse


def merge_extra(body: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Merge ``extra`` into ``body`` recursively, so extra={"generationConfig": {...}} adds keys, not replaces."""
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(body.get(key), dict):
            merge_extra(body[key], value)
        else:
            body[key] = value
    return body


def jsonable(value: Any) -> Any:
    """Tool results may hold datetimes, models or bytes: turn them into plain JSON values."""
    return to_jsonable_python(value, fallback=str, bytes_mode="base64")


def json_text(value: Any) -> str:
    return json.dumps(jsonable(value), ensure_ascii=False)


def b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def parse_arguments(raw: str | None) -> dict[str, Any] | None:
    """Tool-call arguments as a dict, or None when the model produced something that is not a JSON object."""
    if not raw or not raw.strip():
        return {}
    try:
        args = json.loads(raw)
    except ValueError:
        return None
    return args if isinstance(args, dict) else None


def malformed_call(name: str, raw: str, **fields: Any) -> LlmResponse:
    """The response for a tool call whose arguments are not a JSON object; the call itself is dropped."""
    return LlmResponse(
        error_code="MALFORMED_FUNCTION_CALL",
        error_message=(
            f"the model called tool {name!r} with arguments that are not a JSON object: {raw[:200]!r}; "
            "the call was not run. Retry the turn, or use a model that follows the tool schema more reliably"
        ),
        turn_complete=True,
        **fields,
    )


def tool_choice(config: GenerateContentConfig) -> tuple[str, str | None] | None:
    """Normalise ``config.tool_choice`` to ("auto" | "none" | "any" | "tool", tool name)."""
    choice = config.tool_choice
    if choice is None:
        return None
    lowered = choice.lower()
    if lowered in ("auto", "none"):
        return lowered, None
    if lowered in ("any", "required"):
        return "any", None
    return "tool", choice


class ToolCallIds:
    """Ids for function calls and responses that arrived without one (Anthropic and OpenAI require them).

    Ids derive from the call's position and name, so the same request always gets the same ids, and a
    response without an id takes the oldest unanswered call of the same name.
    """

    def __init__(self) -> None:
        self._count = 0
        self._pending: dict[str, list[str]] = {}

    def _new(self, name: str) -> str:
        self._count += 1
        return f"call_{self._count}_{re.sub(r'[^a-zA-Z0-9_-]', '_', name)}"[:40]

    def for_call(self, call: FunctionCall) -> str:
        if call.id:
            return call.id
        new_id = self._new(call.name)
        self._pending.setdefault(call.name, []).append(new_id)
        return new_id

    def for_response(self, response: FunctionResponse) -> str:
        if response.id:
            return response.id
        pending = self._pending.get(response.name)
        return pending.pop(0) if pending else self._new(response.name)


def partial_text(text: str, *, thought: bool = False) -> LlmResponse:
    """The partial response carrying one streamed text (or thought) chunk."""
    part = Part(text=text, thought=thought or None)
    return LlmResponse(content=Content(role="model", parts=[part]), partial=True)


class ErrorFields(TypedDict, total=False):
    """LlmResponse's error fields, as keyword arguments."""

    error_code: str
    error_message: str


def no_content_error(content: Content | None, finish_reason: str | None, provider: str) -> ErrorFields:
    """error_code/error_message for a response that ended without content for a reason other than STOP."""
    if content is not None or not finish_reason or finish_reason == "STOP":
        return {}
    return {"error_code": finish_reason, "error_message": f"{provider} returned no content ({finish_reason})"}
