"""A prompt's size in tokens, estimated, for models that report none.

The token trigger reads the prompt tokens a model reported for its newest call. A model that
reports none (a local OpenAI-compatible server without usage, a stream without the usage chunk, a
``ScriptedModel``) would never trip it, and its conversations would grow until the provider
refuses them. So wherever a runtime calls the model, and only for apps with a token threshold, a
final response without ``prompt_token_count`` gets an estimate of the request it answered, under
``custom_metadata[ESTIMATED_PROMPT_TOKENS_KEY]``: the usage figures stay what the provider said.

The estimate is google-adk's rule, a token for every four characters, counted over what the
request sends: the system instruction, each part's text, each call's and response's JSON, each
tool declaration, and a fixed figure for each image or file. It counts the request the provider
receives, after a durable call resolved its history reference, so the in-process and durable
runtimes estimate the same request alike.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ..models.base import LlmRequest, LlmResponse
from ..types import Content, Event
from .config import EventsCompactionConfig

ESTIMATED_PROMPT_TOKENS_KEY = "adk_estimated_prompt_tokens"
CHARS_PER_TOKEN = 4
TOKENS_PER_MEDIA_PART = 258
"""An image, audio or file part: Gemini's figure for an image (a provider's own counts vary)."""


def estimate_prompt_tokens(request: LlmRequest) -> int:
    """About how many tokens ``request`` takes as a prompt (its history already resolved)."""
    config = request.config
    chars = len(config.system_instruction or "")
    chars += sum(len(declaration.model_dump_json(exclude_none=True)) for declaration in config.tools)
    media = 0
    for content in request.contents:
        part_chars, part_media = _content_size(content)
        chars += part_chars
        media += part_media
    return -(-chars // CHARS_PER_TOKEN) + media * TOKENS_PER_MEDIA_PART


def _content_size(content: Content) -> tuple[int, int]:
    chars = media = 0
    for part in content.parts:
        if part.text:
            chars += len(part.text)
        if part.function_call is not None:
            chars += len(part.function_call.name) + _json_chars(part.function_call.args)
        if part.function_response is not None:
            chars += len(part.function_response.name) + _json_chars(part.function_response.response)
        if part.inline_data is not None or part.file_data is not None:
            media += 1
    return chars, media


def _json_chars(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str)) if value else 0


def wants_estimate(config: EventsCompactionConfig | None) -> bool:
    """Whether calls of an app with ``config`` need an estimate: only the token trigger reads it."""
    return config is not None and config.token_threshold is not None


def add_prompt_estimate(request: LlmRequest, responses: Iterable[LlmResponse]) -> None:
    """Put the estimate of ``request`` on each final response that reports no prompt tokens."""
    estimate: int | None = None
    for response in responses:
        if response.partial or _reported(response):
            continue
        if estimate is None:
            estimate = estimate_prompt_tokens(request)
        response.custom_metadata = {**(response.custom_metadata or {}), ESTIMATED_PROMPT_TOKENS_KEY: estimate}


def _reported(response: LlmResponse) -> bool:
    usage = response.usage_metadata
    return usage is not None and usage.prompt_token_count is not None


def prompt_tokens(event: Event) -> int | None:
    """The prompt tokens of the model call that made ``event``: what the model reported, else the
    estimate stored with it, else None (not a model response)."""
    reported = (event.usage_metadata or {}).get("prompt_token_count")
    if isinstance(reported, int):
        return reported
    estimated = (event.custom_metadata or {}).get(ESTIMATED_PROMPT_TOKENS_KEY)
    return estimated if isinstance(estimated, int) and not isinstance(estimated, bool) else None
