"""The parts of an Anthropic Messages API response, and of its stream events, that we read.

Content blocks and deltas of types we do not read (server tool results, citations ...) validate
as ``OtherBlock`` / ``OtherDelta`` and are skipped.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Tag

from ._http import WireModel


def _kind(known: tuple[str, ...]) -> Discriminator:
    # Unknown types fall through to the "other" member instead of failing the whole response.
    def pick(value: Any) -> str:
        kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
        return kind if kind in known else "other"

    return Discriminator(pick)


class TextBlock(WireModel):
    type: Literal["text"]
    text: str


class ThinkingBlock(WireModel):
    type: Literal["thinking"]
    thinking: str
    signature: str | None = None


class RedactedThinkingBlock(WireModel):
    # Thinking the safety systems encrypted: no text, and like a signature it must go back unchanged.
    type: Literal["redacted_thinking"]
    data: str


class ToolUseBlock(WireModel):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any] | None = None


class OtherBlock(WireModel):
    type: str


Block = Annotated[
    Annotated[TextBlock, Tag("text")]
    | Annotated[ThinkingBlock, Tag("thinking")]
    | Annotated[RedactedThinkingBlock, Tag("redacted_thinking")]
    | Annotated[ToolUseBlock, Tag("tool_use")]
    | Annotated[OtherBlock, Tag("other")],
    _kind(("text", "thinking", "redacted_thinking", "tool_use")),
]


class UsageWire(WireModel):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None


class MessageWire(WireModel):
    """A Messages API response body."""

    content: list[Block]
    stop_reason: str | None = None
    usage: UsageWire | None = None
    model: str | None = None


class MessageStartBody(WireModel):
    usage: UsageWire | None = None
    model: str | None = None


class MessageStart(WireModel):
    message: MessageStartBody


class ContentBlockStart(WireModel):
    index: int
    content_block: Block


class TextDelta(WireModel):
    type: Literal["text_delta"]
    text: str


class ThinkingDelta(WireModel):
    type: Literal["thinking_delta"]
    thinking: str


class InputJsonDelta(WireModel):
    type: Literal["input_json_delta"]
    partial_json: str


class SignatureDelta(WireModel):
    type: Literal["signature_delta"]
    signature: str


class OtherDelta(WireModel):
    type: str


Delta = Annotated[
    Annotated[TextDelta, Tag("text_delta")]
    | Annotated[ThinkingDelta, Tag("thinking_delta")]
    | Annotated[InputJsonDelta, Tag("input_json_delta")]
    | Annotated[SignatureDelta, Tag("signature_delta")]
    | Annotated[OtherDelta, Tag("other")],
    _kind(("text_delta", "thinking_delta", "input_json_delta", "signature_delta")),
]


class ContentBlockDelta(WireModel):
    index: int
    delta: Delta


class MessageDeltaBody(WireModel):
    stop_reason: str | None = None


class MessageDelta(WireModel):
    delta: MessageDeltaBody
    usage: UsageWire | None = None


StreamEvent = MessageStart | ContentBlockStart | ContentBlockDelta | MessageDelta

EVENTS: dict[str, type[StreamEvent]] = {
    "message_start": MessageStart,
    "content_block_start": ContentBlockStart,
    "content_block_delta": ContentBlockDelta,
    "message_delta": MessageDelta,
}
"""The stream events we read, by type; others (ping, content_block_stop, message_stop) carry nothing we need."""
