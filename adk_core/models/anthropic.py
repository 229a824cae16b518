"""Anthropic Claude through the Messages API (``POST /v1/messages``, streamed as server-sent events)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx

from adk_core.errors import ModelError
from adk_core.types import Content, FunctionCall, Part

from ._http import (
    HttpModel,
    ToolCallIds,
    b64encode,
    json_text,
    jsonable,
    malformed_call,
    merge_extra,
    no_content_error,
    parse_arguments,
    partial_text,
    status_error,
    tool_choice,
)
from .base import LlmRequest, LlmResponse, UsageMetadata

_FINISH_REASONS = {
    "end_turn": "STOP",
    "stop_sequence": "STOP",
    "tool_use": "STOP",
    "pause_turn": "STOP",
    "max_tokens": "MAX_TOKENS",
    "model_context_window_exceeded": "MAX_TOKENS",
    "refusal": "SAFETY",
}
# Status each error type is sent with over plain HTTP, for errors that arrive inside a stream.
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


class AnthropicModel(HttpModel):
    """A Claude model served by the Anthropic Messages API.

    Args:
        model: the model name, e.g. ``"claude-sonnet-4-5"``.
        api_key: the API key; defaults to ``ANTHROPIC_API_KEY``, read at call time.
        base_url: the API root, up to and including ``/v1``.
        http_client: an httpx client to use instead of one per call (tests, proxies, pooling).
        timeout: seconds for each network operation when this class builds the client.
        max_tokens: the output cap sent when the request's config sets no ``max_output_tokens``
            (the Messages API requires one).
        anthropic_version: the ``anthropic-version`` header.
    """

    provider = "anthropic"
    api_key_env = ("ANTHROPIC_API_KEY",)
    api_key_help = "a key from https://console.anthropic.com/settings/keys"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str = "https://api.anthropic.com/v1",
        http_client: httpx.AsyncClient | None = None,
        timeout: float = 600,
        max_tokens: int = 4096,
        anthropic_version: str = "2023-06-01",
    ) -> None:
        super().__init__(model, api_key=api_key, base_url=base_url, http_client=http_client, timeout=timeout)
        self._max_tokens = max_tokens
        self._version = anthropic_version

    async def generate_content(
        self, request: LlmRequest, *, stream: bool = False
    ) -> AsyncIterator[LlmResponse]:
        headers = {"x-api-key": self._key() or "", "anthropic-version": self._version}
        body = self.build_request(request)
        url = f"{self._base_url}/messages"
        if not stream:
            data = await self._post_json(url, body, headers)
            yield _parse(
                data.get("content") or [], data.get("stop_reason"), data.get("usage"), data.get("model")
            )
            return
        body["stream"] = True
        blocks: dict[int, dict[str, Any]] = {}
        usage: dict[str, Any] = {}
        stop_reason = model = None
        async for event in self._post_sse(url, body, headers):
            if event.event == "ping" or not event.data:
                continue
            data = event.json()
            kind = data.get("type", event.event)
            if kind == "error":
                error_type = (data.get("error") or {}).get("type")
                raise status_error(
                    _ERROR_STATUS.get(error_type, 500),
                    data,
                    None,
                    provider=self.provider,
                    secret=self._key(required=False),
                )
            if kind == "message_start":
                message = data.get("message") or {}
                usage.update(message.get("usage") or {})
                model = message.get("model")
            elif kind == "content_block_start":
                block = dict(data["content_block"])
                if block.get("type") == "tool_use":
                    block["input"] = ""  # filled by input_json_delta fragments
                blocks[data["index"]] = block
            elif kind == "content_block_delta":
                block, delta = blocks[data["index"]], data["delta"]
                if delta["type"] == "text_delta":
                    block["text"] = block.get("text", "") + delta["text"]
                    yield partial_text(delta["text"])
                elif delta["type"] == "thinking_delta":
                    block["thinking"] = block.get("thinking", "") + delta["thinking"]
                    yield partial_text(delta["thinking"], thought=True)
                elif delta["type"] == "input_json_delta":
                    block["input"] += delta["partial_json"]
                elif delta["type"] == "signature_delta":
                    block["signature"] = block.get("signature", "") + delta["signature"]
            elif kind == "message_delta":
                stop_reason = (data.get("delta") or {}).get("stop_reason") or stop_reason
                usage.update(data.get("usage") or {})
        ordered = [blocks[i] for i in sorted(blocks)]
        for block in ordered:
            if block.get("type") == "tool_use":
                args = parse_arguments(block["input"])
                if args is None:
                    yield malformed_call(
                        block["name"], block["input"], usage_metadata=_usage(usage), model_version=model
                    )
                    return
                block["input"] = args
        yield _parse(ordered, stop_reason, usage, model)

    def build_request(self, request: LlmRequest) -> dict[str, Any]:
        """The Messages API request body for ``request``."""
        config = request.config
        body: dict[str, Any] = {
            "model": self._model,
            "max_tokens": config.max_output_tokens or self._max_tokens,
            "messages": _messages(request.contents),
        }
        if config.system_instruction:
            body["system"] = config.system_instruction
        if config.tools:
            body["tools"] = [
                {
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters or {"type": "object", "properties": {}},
                }
                for t in config.tools
            ]
            if choice := tool_choice(config):
                mode, name = choice
                body["tool_choice"] = {"type": mode, "name": name} if name else {"type": mode}
        for field, wire in (("temperature", "temperature"), ("top_p", "top_p"), ("top_k", "top_k")):
            if (value := getattr(config, field)) is not None:
                body[wire] = value
        if config.stop_sequences:
            body["stop_sequences"] = config.stop_sequences
        return merge_extra(body, config.extra)


def _messages(contents: list[Content]) -> list[dict[str, Any]]:
    ids = ToolCallIds()
    messages: list[dict[str, Any]] = []
    for content in contents:
        role = "assistant" if content.role == "model" else "user"
        blocks = [b for b in (_block(part, role, ids) for part in content.parts) if b is not None]
        if not blocks:
            continue
        # The API needs strictly alternating roles, so adjacent same-role contents become one message.
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})
    for message in messages:
        # tool_result blocks must open the user message that answers the tool_use turn.
        message["content"].sort(key=lambda block: block["type"] != "tool_result")
    return messages


def _block(part: Part, role: str, ids: ToolCallIds) -> dict[str, Any] | None:
    if part.thought:
        # Thinking can only be replayed with the signature Anthropic issued for it.
        if role != "assistant" or not part.thought_signature or not part.text:
            return None
        return {"type": "thinking", "thinking": part.text, "signature": part.thought_signature.decode()}
    if part.text is not None:
        return {"type": "text", "text": part.text} if part.text else None
    if part.function_call is not None:
        call = part.function_call
        return {"type": "tool_use", "id": ids.for_call(call), "name": call.name, "input": jsonable(call.args)}
    if part.function_response is not None:
        response = part.function_response
        return {
            "type": "tool_result",
            "tool_use_id": ids.for_response(response),
            "content": json_text(response.response),
        }
    if part.inline_data is not None:
        blob = part.inline_data
        source = {"type": "base64", "media_type": blob.mime_type, "data": b64encode(blob.data)}
        return {"type": _media_block(blob.mime_type), "source": source}
    if part.file_data is not None:
        file = part.file_data
        return {"type": _media_block(file.mime_type or ""), "source": {"type": "url", "url": file.file_uri}}
    return None


def _media_block(mime_type: str) -> str:
    if mime_type.startswith("image/"):
        return "image"
    if mime_type == "application/pdf":
        return "document"
    raise ModelError(
        f"anthropic models accept images and PDFs, not {mime_type or 'untyped'!r} data; "
        "convert it to text or one of those types before sending it",
        provider="anthropic",
        error_type="unsupported_content",
    )


def _parse(
    blocks: list[dict[str, Any]], stop_reason: str | None, usage: dict[str, Any] | None, model: str | None
) -> LlmResponse:
    parts: list[Part] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            parts.append(Part(text=block["text"]))
        elif kind == "thinking":
            signature = block.get("signature")
            parts.append(
                Part(
                    text=block.get("thinking", ""),
                    thought=True,
                    thought_signature=signature.encode() if signature else None,
                )
            )
        elif kind == "tool_use":
            call = FunctionCall(name=block["name"], args=block.get("input") or {}, id=block["id"])
            parts.append(Part(function_call=call))
    content = Content(role="model", parts=parts) if parts else None
    finish_reason = _FINISH_REASONS.get(stop_reason, stop_reason.upper()) if stop_reason else None
    return LlmResponse(
        content=content,
        turn_complete=True,
        finish_reason=finish_reason,
        usage_metadata=_usage(usage) if usage else None,
        model_version=model,
        **no_content_error(content, finish_reason, "anthropic"),
    )


def _usage(usage: dict[str, Any]) -> UsageMetadata:
    # input_tokens excludes cache reads and writes; the prompt is all three together.
    cached = usage.get("cache_read_input_tokens") or 0
    prompt = (usage.get("input_tokens") or 0) + (usage.get("cache_creation_input_tokens") or 0) + cached
    output = usage.get("output_tokens") or 0
    return UsageMetadata(
        prompt_token_count=prompt,
        candidates_token_count=output,
        total_token_count=prompt + output,
        cached_content_token_count=cached or None,
    )
