"""Google Gemini through the Gemini API's REST interface (generateContent / streamGenerateContent)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx

from adk_core.types import Blob, Content, FileData, FunctionCall, Part

from ._convert import (
    b64encode,
    jsonable,
    merge_extra,
    no_content_error,
    partial_text,
    tool_choice,
)
from ._gemini_cache import ContextCache
from ._gemini_wire import CandidateWire, PartWire, PromptFeedbackWire, ResponseWire
from ._http import (
    HttpModel,
    malformed_response,
    read_wire,
    sse_json,
    stream_error,
)
from ._thinking import budget_of, effort_of, nearest_effort
from .base import GenerateContentConfig, LlmRequest, LlmResponse, PromptCacheConfig, UsageMetadata
from .rules import ModelRules

_GENERATION_FIELDS = {
    "temperature": "temperature",
    "top_p": "topP",
    "top_k": "topK",
    "max_output_tokens": "maxOutputTokens",
    "stop_sequences": "stopSequences",
    "seed": "seed",
    "response_mime_type": "responseMimeType",
}


# Gemini 3 cannot turn thinking off; MINIMAL is the least it does.
_LEVELS = {
    "none": "MINIMAL", "minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM", "high": "HIGH", "xhigh": "XHIGH",
    "max": "XHIGH",
}  # fmt: skip


class GeminiModel(HttpModel):
    """A Gemini model served by the Gemini API.

    Args:
        model: the model name, e.g. ``"gemini-2.5-flash"``.
        api_key: the API key; defaults to ``GOOGLE_API_KEY`` or ``GEMINI_API_KEY``, read at call time.
            It is sent in the ``x-goog-api-key`` header, never in the URL.
        base_url: the API root, up to and including the version.
        http_client: an httpx client to use instead of the model's own (tests, proxies); never closed here.
        timeout: seconds for each network operation when this class builds the client.
        rules: what this model accepts, instead of the table's row for its name (adk_core.models.rules).
        context_cache: cache the instruction, tools and tool config explicitly (``cachedContents``)
            once they are above the model's minimum and reused; off by default, since Gemini 2.5+
            caches repeated prefixes implicitly (adk_core/models/_gemini_cache.py says when this pays).
            A request's ``PromptCacheConfig(enabled=False)`` skips it; its ``ttl`` is the entries' TTL.
    """

    provider = "gemini"
    api_key_env = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
    api_key_help = "a key from https://aistudio.google.com/apikey"
    provider_rules = ModelRules(r"gemini-.*", thinking="budget", reason="the Gemini API")

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str = "https://generativelanguage.googleapis.com/v1beta",
        http_client: httpx.AsyncClient | None = None,
        timeout: float = 600,
        rules: ModelRules | None = None,
        context_cache: bool = False,
    ) -> None:
        super().__init__(
            model, api_key=api_key, base_url=base_url, http_client=http_client, timeout=timeout, rules=rules
        )
        self._context_caches: dict[int, ContextCache] | None = {} if context_cache else None

    @property
    def api_root(self) -> str:
        return self._base_url or ""

    async def get_json(self, url: str, headers: dict[str, str]) -> Any:
        return await self._get_json(url, headers)

    async def post_json(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        return await self._post_json(url, body, headers)

    async def generate_content(
        self, request: LlmRequest, *, stream: bool = False
    ) -> AsyncIterator[LlmResponse]:
        key = self._key()
        headers = {"x-goog-api-key": key or ""}
        body = self.build_request(request)
        cache = request.config.prompt_cache or PromptCacheConfig()
        if self._context_caches is not None and cache.enabled:
            ttl = 3600 if cache.ttl == "1h" else 300
            entries = self._context_caches.setdefault(ttl, ContextCache(ttl_seconds=ttl))
            body = await entries.apply(self, body, headers)
        url = f"{self._base_url}/models/{self._model.removeprefix('models/')}"
        if not stream:
            yield parse_response(await self._post_json(f"{url}:generateContent", body, headers), secret=key)
            return
        acc = StreamAccumulator()
        last = ResponseWire()
        final: CandidateWire | None = None
        async for event in self._post_sse(f"{url}:streamGenerateContent?alt=sse", body, headers):
            if not event.data:
                continue
            data = sse_json(event, provider=self.provider, secret=key)
            if error := stream_error(data, provider=self.provider, secret=key):
                raise error
            chunk = read_wire(ResponseWire, data, provider=self.provider, what="streamed chunk", secret=key)
            if chunk.candidates:
                candidate = chunk.candidates[0]
                for part in _parts(candidate):
                    if part.text is not None and part.function_call is None:
                        partial = acc.add_text(
                            part.text, thought=bool(part.thought), signature=part.thought_signature
                        )
                        if part.text:
                            yield partial
                    else:
                        acc.add_part(part)
                final = final or CandidateWire()
                final.finish_reason = candidate.finish_reason or final.finish_reason
                final.finish_message = candidate.finish_message or final.finish_message
            last.usage_metadata = chunk.usage_metadata or last.usage_metadata
            last.model_version = chunk.model_version or last.model_version
            last.prompt_feedback = chunk.prompt_feedback or last.prompt_feedback
        yield _final(acc.content(), last, final)


    def build_request(self, request: LlmRequest) -> dict[str, Any]:
        """The generateContent request body for ``request``, without what the model refuses."""
        config, rules = self.applied_rules(request.config)
        request = request if config is request.config else request.model_copy(update={"config": config})
        return build_request(
            request,
            thinking_style=rules.thinking or "budget",
            efforts=rules.efforts,
            budgets=rules.thinking_budgets,
        )


class StreamAccumulator:
    """Collects streamed pieces into the final aggregated content, in the order they arrived."""

    def __init__(self) -> None:
        self.parts: list[Part] = []

    def add_text(self, text: str, *, thought: bool = False, signature: bytes | None = None) -> LlmResponse:
        """Record a text chunk and return the partial response to yield for it."""
        last = self.parts[-1] if self.parts else None
        if last is not None and last.text is not None and bool(last.thought) == thought:
            last.text += text
            last.thought_signature = signature or last.thought_signature
        else:
            self.parts.append(Part(text=text, thought=thought or None, thought_signature=signature))
        return partial_text(text, thought=thought)

    def add_part(self, part: Part) -> None:
        self.parts.append(part)

    def content(self) -> Content | None:
        return Content(role="model", parts=self.parts) if self.parts else None


def build_request(
    request: LlmRequest,
    *,
    thinking_style: str = "budget",
    efforts: tuple[str, ...] | None = None,
    budgets: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """The generateContent request body for ``request`` (``thinking_style``: "budget" or "level",
    ``efforts``: the levels the model takes, ``budgets``: the least and most thinking budget it takes)."""
    config = request.config
    body: dict[str, Any] = {"contents": [c for c in map(_content_to_wire, request.contents) if c["parts"]]}
    if config.system_instruction:
        body["systemInstruction"] = {"parts": [{"text": config.system_instruction}]}
    if config.tools:
        body["tools"] = [{"functionDeclarations": [_declaration(t) for t in config.tools]}]
    if config.tools and (choice := tool_choice(config)):
        mode, name = choice
        calling: dict[str, Any] = {"mode": "ANY" if mode == "tool" else mode.upper()}
        if name:
            calling["allowedFunctionNames"] = [name]
        body["toolConfig"] = {"functionCallingConfig": calling}
    if generation := _generation_config(config, thinking_style, efforts, budgets):
        body["generationConfig"] = generation
    return merge_extra(body, config.extra)


def _declaration(declaration: Any) -> dict[str, Any]:
    # parametersJsonSchema / responseJsonSchema take full JSON Schema; `parameters` only an OpenAPI subset.
    wire: dict[str, Any] = {"name": declaration.name, "description": declaration.description}
    if declaration.parameters is not None:
        wire["parametersJsonSchema"] = declaration.parameters
    if declaration.response is not None:
        wire["responseJsonSchema"] = declaration.response
    return wire


def _generation_config(
    config: GenerateContentConfig,
    thinking_style: str,
    efforts: tuple[str, ...] | None,
    budgets: tuple[int, int] | None,
) -> dict[str, Any]:
    generation = {
        wire: getattr(config, field)
        for field, wire in _GENERATION_FIELDS.items()
        if getattr(config, field) is not None
    }
    if (thinking := config.thinking) is not None:
        wire: dict[str, Any] = {"includeThoughts": thinking.include_thoughts}
        if thinking_style == "level" and (effort := effort_of(thinking)):
            wire["thinkingLevel"] = _LEVELS[nearest_effort(effort, efforts)]
        elif thinking_style != "level" and (budget := budget_of(thinking)) is not None:
            if budgets and budget:
                # A budget outside the model's range is a 400 (2.5 Flash takes at most 24,576, so
                # effort "max", 32,768, would be one): send the nearer end. 0 is off, which the
                # rules allow or replace before this (2.5 Pro cannot stop thinking).
                budget = min(max(budget, budgets[0]), budgets[1])
            wire["thinkingBudget"] = budget
        generation["thinkingConfig"] = wire
    if config.response_schema is not None:
        generation["responseJsonSchema"] = config.response_schema
        generation.setdefault("responseMimeType", "application/json")
    return generation


def _content_to_wire(content: Content) -> dict[str, Any]:
    parts = [wire for wire in map(_part_to_wire, content.parts) if wire is not None]
    return {"role": content.role or "user", "parts": parts}


def _part_to_wire(part: Part) -> dict[str, Any] | None:
    wire: dict[str, Any]
    if part.text is not None:
        wire = {"text": part.text}
        if part.thought:
            wire["thought"] = True
    elif part.inline_data is not None:
        wire = {
            "inlineData": {"mimeType": part.inline_data.mime_type, "data": b64encode(part.inline_data.data)}
        }
    elif part.file_data is not None:
        file_data = {"fileUri": part.file_data.file_uri}
        if part.file_data.mime_type:
            file_data["mimeType"] = part.file_data.mime_type
        wire = {"fileData": file_data}
    elif part.function_call is not None:
        call = part.function_call
        wire = {"functionCall": _with_id({"name": call.name, "args": jsonable(call.args)}, call.id)}
    elif part.function_response is not None:
        response = part.function_response
        wire = {
            "functionResponse": _with_id(
                {"name": response.name, "response": jsonable(response.response)}, response.id
            )
        }
    else:
        return None
    if part.thought_signature:
        # Gemini 2.5+/3 need the signature back on the part that carried it to keep reasoning across turns.
        wire["thoughtSignature"] = b64encode(part.thought_signature)
    return wire


def _with_id(wire: dict[str, Any], id: str | None) -> dict[str, Any]:
    return {**wire, "id": id} if id else wire


def _part_from_wire(wire: PartWire) -> Part | None:
    signature = wire.thought_signature or None
    if wire.function_call is not None:
        call = wire.function_call
        function_call = FunctionCall(name=call.name, args=call.args or {}, id=call.id)
        return Part(function_call=function_call, thought_signature=signature)
    if wire.text is not None:
        return Part(text=wire.text, thought=wire.thought or None, thought_signature=signature)
    if wire.inline_data is not None:
        return Part(inline_data=Blob(mime_type=wire.inline_data.mime_type, data=wire.inline_data.data))
    if wire.file_data is not None:
        return Part(file_data=FileData(file_uri=wire.file_data.file_uri, mime_type=wire.file_data.mime_type))
    return None  # executableCode and friends: not part of our Content model


def _parts(candidate: CandidateWire) -> list[Part]:
    wires = candidate.content.parts if candidate.content else []
    return [part for part in map(_part_from_wire, wires) if part is not None]


def parse_response(data: Any, *, secret: str | None = None) -> LlmResponse:
    """An LlmResponse from a generateContent response body (decoded JSON).

    Raises:
        ModelError: non-retryable, error_type "MalformedResponse", when the body does not have the
            generateContent shape or holds neither a candidate nor a reason the prompt was blocked.
    """
    response = read_wire(ResponseWire, data, provider="gemini", what="response body", secret=secret)
    candidate = response.candidates[0] if response.candidates else None
    parts = _parts(candidate) if candidate else []
    content = Content(role="model", parts=parts) if parts else None
    return _final(content, response, candidate)


def _final(content: Content | None, response: ResponseWire, candidate: CandidateWire | None) -> LlmResponse:
    feedback = response.prompt_feedback or PromptFeedbackWire()
    if candidate is None and not feedback.block_reason:
        # Nothing to answer with and no reason given: an empty answer would pass for a silent success.
        raise malformed_response(
            "gemini", "the response has no candidates and no promptFeedback.blockReason", None
        )
    finish_reason = candidate.finish_reason if candidate else None
    error_code = error_message = None
    if block := feedback.block_reason:
        error_code = block
        error_message = feedback.block_reason_message or f"Gemini blocked the prompt ({block})"
    elif error := no_content_error(content, finish_reason, "Gemini"):
        error_code = error["error_code"]
        error_message = (candidate.finish_message if candidate else None) or error["error_message"]
    usage = response.usage_metadata
    return LlmResponse(
        content=content,
        turn_complete=True,
        finish_reason=finish_reason,
        usage_metadata=UsageMetadata(**usage.model_dump()) if usage else None,
        error_code=error_code,
        error_message=error_message,
        model_version=response.model_version,
    )
