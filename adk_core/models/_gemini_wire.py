"""The parts of a Gemini API generateContent response we read (each streamed chunk has the same shape).

Field names are the wire's camelCase; everything not listed here is ignored.
"""

from __future__ import annotations

from typing import Any

from pydantic import Base64Bytes, ConfigDict
from pydantic.alias_generators import to_camel

from ._http import WireModel


class _Wire(WireModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class FunctionCallWire(_Wire):
    name: str
    args: dict[str, Any] | None = None
    id: str | None = None


class BlobWire(_Wire):
    mime_type: str
    data: Base64Bytes


class FileDataWire(_Wire):
    file_uri: str
    mime_type: str | None = None


class PartWire(_Wire):
    text: str | None = None
    thought: bool | None = None
    thought_signature: Base64Bytes | None = None
    function_call: FunctionCallWire | None = None
    inline_data: BlobWire | None = None
    file_data: FileDataWire | None = None


class ContentWire(_Wire):
    # A candidate stopped by MAX_TOKENS or SAFETY can carry a content with a role and no parts.
    parts: list[PartWire] = []


class CandidateWire(_Wire):
    content: ContentWire | None = None
    finish_reason: str | None = None
    finish_message: str | None = None


class PromptFeedbackWire(_Wire):
    block_reason: str | None = None
    block_reason_message: str | None = None


class UsageWire(_Wire):
    prompt_token_count: int | None = None
    candidates_token_count: int | None = None
    total_token_count: int | None = None
    thoughts_token_count: int | None = None
    cached_content_token_count: int | None = None


class ResponseWire(_Wire):
    """A generateContent response, or one chunk of streamGenerateContent."""

    # Empty when the prompt was blocked (promptFeedback says why) and in usage-only stream chunks.
    candidates: list[CandidateWire] = []
    prompt_feedback: PromptFeedbackWire | None = None
    usage_metadata: UsageWire | None = None
    model_version: str | None = None
