"""OpenAI Chat Completions, and any server that speaks it (Ollama, vLLM, llama.cpp) as ``openai/<model>``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx

from adk_core.errors import ConfigurationError, ModelError
from adk_core.types import Content, FunctionCall, Part

from ._convert import (
    ToolCallIds,
    b64encode,
    json_text,
    malformed_call,
    merge_extra,
    no_content_error,
    parse_arguments,
    partial_text,
    tool_choice,
)
from ._http import (
    HttpModel,
    env_value,
    malformed_response,
    read_wire,
    sse_json,
    stream_error,
)
from ._openai_wire import (
    ChunkWire,
    CompletionTokensDetails,
    CompletionWire,
    DeltaWire,
    FunctionDeltaWire,
    FunctionWire,
    PromptTokensDetails,
    ToolCallWire,
    UsageWire,
)
from ._thinking import effort_of, nearest_effort
from .base import GenerateContentConfig, LlmRequest, LlmResponse, UsageMetadata
from .rules import ModelRules

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_FINISH_REASONS = {
    "stop": "STOP",
    "tool_calls": "STOP",
    "function_call": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
}


def split_server(name: str) -> tuple[str, str | None]:
    """``("openai/<model>", "<url>")`` from ``"openai/<model>@<url>"``; ``(name, None)`` for other names.

    Only an ``@`` followed by ``http://`` or ``https://`` starts a URL, so model names that hold an
    ``@`` of their own (some proxies' aliases) stay whole.
    """
    at = max(name.rfind("@http://"), name.rfind("@https://"))
    if not name.startswith("openai/") or at < 0:
        return name, None
    return name[:at], name[at + 1 :]


class OpenAIModel(HttpModel):
    """A model behind the OpenAI Chat Completions API.

    A name ``"openai/<model>"`` addresses an OpenAI-compatible server (vLLM, Ollama, OpenRouter, a
    LiteLLM proxy): ``<model>`` is sent as the model and the API key is optional (Ollama needs none).
    ``"openai/<model>@<base_url>"`` names the server too, so agents can use different servers by
    name alone (docs/models.md, "OpenAI-compatible servers"). Plain names (``"gpt-4o"``) go to OpenAI itself.

    Args:
        model: ``"gpt-4o"``, ``"o4-mini"``, ``"openai/llama3.2"`` ...
        api_key: the API key; defaults to ``OPENAI_API_KEY``, read at call time. Required only
            when calling api.openai.com.
        base_url: the API root; defaults to ``OPENAI_BASE_URL``, then ``https://api.openai.com/v1``.
        http_client: an httpx client to use instead of the model's own (tests, proxies); never closed here.
        timeout: seconds for each network operation when this class builds the client.
        rules: what this model accepts, instead of the table's row for its name (adk_core.models.rules).
    """

    provider = "openai"
    api_key_env = ("OPENAI_API_KEY",)
    api_key_help = "a key from https://platform.openai.com/api-keys"
    provider_rules = ModelRules(
        r"(gpt-|chatgpt-).*",
        accepts=frozenset({"temperature", "top_p", "seed", "stop_sequences"}),
        token_limit_field="max_completion_tokens",
        thinking="none",
        reason="the Chat Completions API",
    )
    # Compatible servers (Ollama, vLLM, llama.cpp) know max_tokens, not OpenAI's newer field.
    compatible_rules = ModelRules(
        r"openai/.*",
        accepts=frozenset({"temperature", "top_p", "seed", "stop_sequences"}),
        token_limit_field="max_tokens",
        thinking="none",
        reason="the Chat Completions API",
    )

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: float = 600,
        rules: ModelRules | None = None,
    ) -> None:
        super().__init__(
            model, api_key=api_key, base_url=base_url, http_client=http_client, timeout=timeout, rules=rules
        )
        model, url = split_server(model)
        if url is not None and base_url is not None and url.rstrip("/") != base_url.rstrip("/"):
            raise ConfigurationError(
                f"model {model!r} names the server {url!r} and base_url= names {base_url!r}; give one of them"
            )
        self._model = model
        self._base_url = (base_url or url or "").rstrip("/") or None
        self._compatible = model.startswith("openai/")
        self._wire_model = model.removeprefix("openai/")

    def _defaults(self) -> ModelRules:
        return self.compatible_rules if self._compatible else self.provider_rules

    async def generate_content(
        self, request: LlmRequest, *, stream: bool = False
    ) -> AsyncIterator[LlmResponse]:
        base_url = (self._base_url or env_value("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        key = self._key(required=base_url == DEFAULT_BASE_URL)
        headers = {"authorization": f"Bearer {key}"} if key else {}
        body = self.build_request(request)
        url = f"{base_url}/chat/completions"
        if not stream:
            data = await self._post_json(url, body, headers)
            completion = read_wire(
                CompletionWire, data, provider=self.provider, what="response body", secret=key
            )
            choice = completion.choices[0]
            message = choice.message
            yield _response(
                message.content,
                message.thought,
                message.tool_calls or [],
                choice.finish_reason,
                completion.usage,
                completion.model,
                message.refusal,
            )
            return
        async for response in self._stream(url, body, headers, key):
            yield response

    async def _stream(
        self, url: str, body: dict[str, Any], headers: dict[str, str], key: str | None
    ) -> AsyncIterator[LlmResponse]:
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        text = reasoning = ""
        calls: dict[int, ToolCallWire] = {}
        usage: UsageWire | None = None
        finish_reason = model = None
        saw_choice = False
        async for event in self._post_sse(url, body, headers):
            if event.data.strip() == "[DONE]":
                break
            if not event.data:
                continue
            data = sse_json(event, provider=self.provider, secret=key)
            if error := stream_error(data, provider=self.provider, secret=key):
                raise error
            chunk = read_wire(ChunkWire, data, provider=self.provider, what="streamed chunk", secret=key)
            model = chunk.model or model
            usage = chunk.usage or usage
            for choice in chunk.choices or []:
                saw_choice = True
                finish_reason = choice.finish_reason or finish_reason
                delta = choice.delta or DeltaWire()
                if thought := delta.thought:
                    reasoning += thought
                    yield partial_text(thought, thought=True)
                if delta.content:
                    text += delta.content
                    yield partial_text(delta.content)
                for fragment in delta.tool_calls or []:
                    call = calls.setdefault(fragment.index, ToolCallWire(function=FunctionWire(name="")))
                    function = fragment.function or FunctionDeltaWire()
                    call.id = fragment.id or call.id
                    call.function.name = call.function.name or function.name or ""
                    call.function.arguments = (call.function.arguments or "") + (function.arguments or "")
        if not saw_choice:
            raise malformed_response(self.provider, "the event stream had no choices", key)
        tool_calls = [calls[i] for i in sorted(calls)]
        yield _response(text or None, reasoning or None, tool_calls, finish_reason, usage, model, None)

    def build_request(self, request: LlmRequest) -> dict[str, Any]:
        """The Chat Completions request body for ``request``, without what the model refuses."""
        config, rules = self.applied_rules(request.config)
        body: dict[str, Any] = {"model": self._wire_model, "messages": _messages(request.contents, config)}
        if config.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters or {"type": "object", "properties": {}},
                    },
                }
                for t in config.tools
            ]
            if choice := tool_choice(config):
                mode, name = choice
                if name:
                    body["tool_choice"] = {"type": "function", "function": {"name": name}}
                else:
                    body["tool_choice"] = "required" if mode == "any" else mode
        for field in ("temperature", "top_p", "seed"):
            if (value := getattr(config, field)) is not None:
                body[field] = value
        if config.max_output_tokens is not None:
            # OpenAI's reasoning models take only max_completion_tokens; compatible servers know max_tokens.
            body[rules.token_limit_field or self._defaults().token_limit_field or "max_tokens"] = config.max_output_tokens
        if config.stop_sequences:
            body["stop"] = config.stop_sequences
        if config.thinking is not None and (effort := effort_of(config.thinking)):
            body["reasoning_effort"] = nearest_effort(effort, rules.efforts)
        if config.response_schema is not None:
            schema = {"name": "response", "schema": config.response_schema}
            body["response_format"] = {"type": "json_schema", "json_schema": schema}
        elif config.response_mime_type == "application/json":
            body["response_format"] = {"type": "json_object"}
        cache = config.prompt_cache
        # OpenAI caches long prefixes by itself; the key only groups requests. Compatible servers
        # may refuse a field they do not know, so they never get it.
        if cache is not None and cache.enabled and cache.key and not self._compatible:
            body["prompt_cache_key"] = cache.key
        return merge_extra(body, config.extra)


def _messages(contents: list[Content], config: GenerateContentConfig) -> list[dict[str, Any]]:
    ids = ToolCallIds()
    messages: list[dict[str, Any]] = []
    if config.system_instruction:
        messages.append({"role": "system", "content": config.system_instruction})
    for content in contents:
        if content.role == "model":
            text = "".join(p.text for p in content.parts if p.text and not p.thought)
            calls = [
                {
                    "id": ids.for_call(call),
                    "type": "function",
                    "function": {"name": call.name, "arguments": json_text(call.args)},
                }
                for call in content.function_calls()
            ]
            if text or calls:
                messages.append(
                    {"role": "assistant", "content": text or None, **({"tool_calls": calls} if calls else {})}
                )
            continue
        # Tool results are messages of their own and must come straight after the assistant's calls.
        for response in content.function_responses():
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": ids.for_response(response),
                    "content": json_text(response.response),
                }
            )
        parts = [wire for wire in map(_user_part, content.parts) if wire is not None]
        if len(parts) == 1 and parts[0]["type"] == "text":
            messages.append({"role": "user", "content": parts[0]["text"]})
        elif parts:
            messages.append({"role": "user", "content": parts})
    return messages


def _user_part(part: Part) -> dict[str, Any] | None:
    if part.thought or part.function_response is not None or part.function_call is not None:
        return None
    if part.text is not None:
        return {"type": "text", "text": part.text}
    if part.inline_data is not None:
        blob = part.inline_data
        data_url = f"data:{blob.mime_type};base64,{b64encode(blob.data)}"
        if blob.mime_type.startswith("image/"):
            return {"type": "image_url", "image_url": {"url": data_url}}
        if blob.mime_type == "application/pdf":
            return {
                "type": "file",
                "file": {"filename": blob.display_name or "document.pdf", "file_data": data_url},
            }
        if blob.mime_type in ("audio/wav", "audio/mpeg", "audio/mp3"):
            audio_format = "wav" if blob.mime_type == "audio/wav" else "mp3"
            return {
                "type": "input_audio",
                "input_audio": {"data": b64encode(blob.data), "format": audio_format},
            }
        _unsupported(blob.mime_type)
    if part.file_data is not None:
        if not (part.file_data.mime_type or "").startswith("image/"):
            _unsupported(part.file_data.mime_type or "untyped")
        return {"type": "image_url", "image_url": {"url": part.file_data.file_uri}}
    return None


def _unsupported(mime_type: str) -> None:
    raise ModelError(
        f"Chat Completions accepts images, PDFs and wav/mp3 audio inline (images by URL), not {mime_type!r}; "
        "convert the data or send it as text",
        provider="openai",
        error_type="unsupported_content",
    )


def _response(
    text: str | None,
    reasoning: str | None,
    tool_calls: list[ToolCallWire],
    finish_reason: str | None,
    usage: UsageWire | None,
    model: str | None,
    refusal: str | None,
) -> LlmResponse:
    fields: dict[str, Any] = {"usage_metadata": _usage(usage) if usage else None, "model_version": model}
    parts = [Part(text=reasoning, thought=True)] if reasoning else []
    if text:
        parts.append(Part(text=text))
    for call in tool_calls:
        function = call.function
        args = parse_arguments(function.arguments)
        if args is None:
            return malformed_call(function.name, function.arguments or "", **fields)
        parts.append(Part(function_call=FunctionCall(name=function.name, args=args, id=call.id)))
    content = Content(role="model", parts=parts) if parts else None
    reason = _FINISH_REASONS.get(finish_reason, finish_reason.upper()) if finish_reason else None
    error = no_content_error(content, reason, "openai")
    if refusal:
        error = {"error_code": "SAFETY", "error_message": f"the model refused: {refusal}"}
    return LlmResponse(content=content, turn_complete=True, finish_reason=reason, **error, **fields)


def _usage(usage: UsageWire) -> UsageMetadata:
    details = usage.completion_tokens_details or CompletionTokensDetails()
    prompt_details = usage.prompt_tokens_details or PromptTokensDetails()
    # completion_tokens includes reasoning_tokens (a breakdown of it); UsageMetadata counts as Gemini
    # does, candidates without thoughts, and pricing and metrics add the two: subtract them here.
    candidates = usage.completion_tokens
    if candidates is not None and details.reasoning_tokens:
        candidates = max(0, candidates - details.reasoning_tokens)
    return UsageMetadata(
        prompt_token_count=usage.prompt_tokens,
        candidates_token_count=candidates,
        total_token_count=usage.total_tokens,
        thoughts_token_count=details.reasoning_tokens,
        cached_content_token_count=prompt_details.cached_tokens,
    )
