"""Anthropic Claude through the Messages API (``POST /v1/messages``, streamed as server-sent events)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx

from adk_core.errors import ModelError
from adk_core.types import Content, FunctionCall, Part

from ._anthropic_cache import mark_breakpoints
from ._anthropic_schema import strict_schema
from ._anthropic_wire import (
    EVENTS,
    Block,
    ContentBlockDelta,
    ContentBlockStart,
    Delta,
    InputJsonDelta,
    MessageDelta,
    MessageStart,
    MessageWire,
    OtherBlock,
    OtherDelta,
    RedactedThinkingBlock,
    SignatureDelta,
    StreamEvent,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
    UsageWire,
)
from ._convert import (
    ToolCallIds,
    b64encode,
    json_text,
    jsonable,
    malformed_call,
    merge_extra,
    no_content_error,
    parse_arguments,
    partial_text,
    tool_choice,
)
from ._http import (
    HttpModel,
    malformed_response,
    read_wire,
    sse_json,
    status_error,
)
from ._thinking import budget_of, effort_of, nearest_effort
from .base import LlmRequest, LlmResponse, PromptCacheConfig, ThinkingConfig, UsageMetadata
from .rules import ModelRules

_MIN_BUDGET = 1024  # the smallest budget_tokens the API takes
_EFFORTS = ("low", "medium", "high", "xhigh", "max")  # output_config.effort; "none" turns thinking off
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
        http_client: an httpx client to use instead of the model's own (tests, proxies); never closed here.
        timeout: seconds for each network operation when this class builds the client.
        max_tokens: the output cap sent when the request's config sets no ``max_output_tokens``
            (the Messages API requires one).
        anthropic_version: the ``anthropic-version`` header.
        rules: what this model accepts, instead of the table's row for its name (adk_core.models.rules).
        prompt_cache: prompt caching when a request's config sets none; on (5 minute entries) by
            default. ``PromptCacheConfig(enabled=False)`` turns it off, ``ttl="1h"`` keeps entries longer.
    """

    provider = "anthropic"
    api_key_env = ("ANTHROPIC_API_KEY",)
    api_key_help = "a key from https://console.anthropic.com/settings/keys"
    # response_schema goes out as output_config.format; the API has no JSON mode without a schema.
    provider_rules = ModelRules(
        r"claude-.*",
        accepts=frozenset({"temperature", "top_p", "top_k", "stop_sequences"}),
        json_mode=False,
        thinking="budget",
        # Extended thinking takes no temperature (other than 1), no top_k and no forced tool use.
        thinking_excludes=frozenset({"temperature", "top_k", "tool_choice"}),
        reason="the Anthropic Messages API",
    )

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
        rules: ModelRules | None = None,
        prompt_cache: PromptCacheConfig | None = None,
    ) -> None:
        super().__init__(
            model, api_key=api_key, base_url=base_url, http_client=http_client, timeout=timeout, rules=rules
        )
        self._max_tokens = max_tokens
        self._version = anthropic_version
        self._prompt_cache = prompt_cache or PromptCacheConfig()

    async def generate_content(
        self, request: LlmRequest, *, stream: bool = False
    ) -> AsyncIterator[LlmResponse]:
        key = self._key()
        headers = {"x-api-key": key or "", "anthropic-version": self._version}
        body = self.build_request(request)
        url = f"{self._base_url}/messages"
        if not stream:
            data = await self._post_json(url, body, headers)
            message = read_wire(MessageWire, data, provider=self.provider, what="response body", secret=key)
            yield _parse(message.content, message.stop_reason, message.usage, message.model)
            return
        async for response in self._stream(url, {**body, "stream": True}, headers, key):
            yield response

    async def _stream(
        self, url: str, body: dict[str, Any], headers: dict[str, str], key: str | None
    ) -> AsyncIterator[LlmResponse]:
        message = _StreamedMessage()
        async for event in self._post_sse(url, body, headers):
            if event.event == "ping" or not event.data:
                continue
            data = sse_json(event, provider=self.provider, secret=key)
            kind = data.get("type", event.event) if isinstance(data, dict) else event.event
            if kind == "error":
                error = data.get("error") if isinstance(data, dict) else None
                error_type = error.get("type") if isinstance(error, dict) else None
                status = _ERROR_STATUS.get(error_type, 500) if isinstance(error_type, str) else 500
                raise status_error(status, data, None, provider=self.provider, secret=key)
            if (shape := EVENTS.get(kind)) is not None:
                wire = read_wire(shape, data, provider=self.provider, what=f"{kind} event", secret=key)
                if partial := message.add(wire):
                    yield partial
        yield message.final()

    def build_request(self, request: LlmRequest) -> dict[str, Any]:
        """The Messages API request body for ``request``, without what the model refuses."""
        config, rules = self.applied_rules(request.config)
        body: dict[str, Any] = {
            "model": self._model,
            "max_tokens": config.max_output_tokens or self._max_tokens,
            "messages": _messages(request.contents),
        }
        if config.thinking is not None:
            efforts = rules.efforts or _EFFORTS
            body.update(_thinking(config.thinking, rules.thinking or "budget", body["max_tokens"], efforts))
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
        if config.response_schema is not None:
            schema = {"type": "json_schema", "schema": strict_schema(config.response_schema)}
            body["output_config"] = {**body.get("output_config", {}), "format": schema}
        if (cache := config.prompt_cache or self._prompt_cache).enabled:
            mark_breakpoints(body, cache)
        return merge_extra(body, config.extra)


def _thinking(thinking: ThinkingConfig, style: str, max_tokens: int, efforts: tuple[str, ...]) -> dict[str, Any]:
    """The thinking (and output_config.effort) fields for ``thinking`` on a model of ``style``."""
    if thinking.off:
        return {"thinking": {"type": "disabled"}}
    if style == "adaptive":
        # The adaptive models (Opus 4.7 and later) omit the thinking text unless asked: their
        # `display` defaults to "omitted", where earlier models summarize. So say which, both ways.
        display = "summarized" if thinking.include_thoughts else "omitted"
        fields: dict[str, Any] = {"thinking": {"type": "adaptive", "display": display}}
        if effort := effort_of(thinking):
            fields["output_config"] = {"effort": nearest_effort(effort, efforts)}
        return fields
    hidden = {} if thinking.include_thoughts else {"display": "omitted"}
    budget = max(_MIN_BUDGET, budget_of(thinking) or budget_of(ThinkingConfig(effort="medium")) or _MIN_BUDGET)
    # The budget is part of max_tokens and must stay below it: keep max_tokens for the answer itself.
    fields = {"thinking": {"type": "enabled", "budget_tokens": budget, **hidden}}
    if max_tokens <= budget:
        fields["max_tokens"] = budget + max_tokens
    return fields


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
        # Thinking can only be replayed with the signature Anthropic issued for it; in a tool loop the
        # API requires it back before the tool_use (400 "... must start with a thinking block").
        if role != "assistant" or not part.thought_signature:
            return None
        if part.text is None:
            # A redacted_thinking block, kept (see _parse) as a thought with no text whose
            # signature holds the block's encrypted data.
            return {"type": "redacted_thinking", "data": part.thought_signature.decode()}
        # The text may be "" (display "omitted": Opus 4.7's default, and include_thoughts=False):
        # the signature carries the thinking, and the block must still go back.
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


class _StreamedMessage:
    """A message as its stream events arrive: blocks by index, tool inputs as JSON text, usage."""

    def __init__(self) -> None:
        self.started = False
        self.blocks: dict[int, Block] = {}
        self.inputs: dict[int, str] = {}  # tool_use input arrives as fragments of JSON text
        self.usage: UsageWire | None = None
        self.stop_reason: str | None = None
        self.model: str | None = None

    def add(self, event: StreamEvent) -> LlmResponse | None:
        """Apply one event; returns the partial response to yield for streamed text, if any."""
        if isinstance(event, MessageStart):
            self.started, self.model = True, event.message.model
            self.usage = _merge_usage(self.usage, event.message.usage)
        elif isinstance(event, ContentBlockStart):
            self.blocks[event.index] = event.content_block
            if isinstance(event.content_block, ToolUseBlock):
                self.inputs[event.index] = ""
        elif isinstance(event, ContentBlockDelta):
            return self._add_delta(event.index, event.delta)
        elif isinstance(event, MessageDelta):
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            self.usage = _merge_usage(self.usage, event.usage)
        return None

    def _add_delta(self, index: int, delta: Delta) -> LlmResponse | None:
        block = self.blocks.get(index)
        if block is None:
            raise _malformed(f"a content_block_delta names block {index}, which never started")
        if isinstance(delta, TextDelta) and isinstance(block, TextBlock):
            block.text += delta.text
            return partial_text(delta.text)
        if isinstance(delta, ThinkingDelta) and isinstance(block, ThinkingBlock):
            block.thinking += delta.thinking
            return partial_text(delta.thinking, thought=True)
        if isinstance(delta, SignatureDelta) and isinstance(block, ThinkingBlock):
            block.signature = (block.signature or "") + delta.signature
        elif isinstance(delta, InputJsonDelta) and isinstance(block, ToolUseBlock):
            self.inputs[index] += delta.partial_json
        elif not isinstance(delta, OtherDelta) and not isinstance(block, OtherBlock):
            # Blocks we do not read (server tool use ...) get deltas we skip too; ours must match.
            raise _malformed(f"a {delta.type} arrived for a {block.type} block")
        return None

    def final(self) -> LlmResponse:
        """The aggregated response once the stream has ended."""
        if not self.started:
            raise _malformed("the event stream had no message_start event")
        ordered = [self.blocks[i] for i in sorted(self.blocks)]
        for index, block in sorted(self.blocks.items()):
            if isinstance(block, ToolUseBlock):
                args = parse_arguments(self.inputs[index])
                if args is None:
                    usage = _usage(self.usage) if self.usage else None
                    return malformed_call(
                        block.name, self.inputs[index], usage_metadata=usage, model_version=self.model
                    )
                block.input = args
        return _parse(ordered, self.stop_reason, self.usage, self.model)


def _malformed(problem: str) -> ModelError:
    return malformed_response("anthropic", problem, None)


def _parse(
    blocks: list[Block], stop_reason: str | None, usage: UsageWire | None, model: str | None
) -> LlmResponse:
    parts: list[Part] = []
    for block in blocks:
        if isinstance(block, TextBlock) and block.text:
            parts.append(Part(text=block.text))
        elif isinstance(block, ThinkingBlock):
            signature = block.signature.encode() if block.signature else None
            parts.append(Part(text=block.thinking, thought=True, thought_signature=signature))
        elif isinstance(block, RedactedThinkingBlock):
            # No text to show, only opaque data to send back unchanged: a signed thought without
            # text, which round-trips through stored events as thought_signature does (base64).
            parts.append(Part(thought=True, thought_signature=block.data.encode()))
        elif isinstance(block, ToolUseBlock):
            call = FunctionCall(name=block.name, args=block.input or {}, id=block.id)
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


def _merge_usage(usage: UsageWire | None, update: UsageWire | None) -> UsageWire | None:
    # message_delta repeats the counts that changed; a null or absent count keeps the earlier value.
    if usage is None or update is None:
        return update or usage
    return usage.model_copy(update=update.model_dump(exclude_none=True))


def _usage(usage: UsageWire) -> UsageMetadata:
    # input_tokens excludes cache reads and writes; the prompt is all three together.
    cached = usage.cache_read_input_tokens or 0
    prompt = (usage.input_tokens or 0) + (usage.cache_creation_input_tokens or 0) + cached
    output = usage.output_tokens or 0
    return UsageMetadata(
        prompt_token_count=prompt,
        candidates_token_count=output,
        total_token_count=prompt + output,
        cached_content_token_count=cached or None,
        cache_creation_token_count=usage.cache_creation_input_tokens or None,
    )
