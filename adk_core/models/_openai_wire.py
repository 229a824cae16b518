"""The parts of a Chat Completions response, and of each streamed chunk, that we read.

Compatible servers (Ollama, vLLM, llama.cpp) add fields of their own; only these must be well formed.
"""

from __future__ import annotations

from pydantic import Field

from ._http import WireModel


class _Reasoning(WireModel):
    # Not part of OpenAI's API: vLLM and DeepSeek send reasoning_content, Ollama and OpenRouter reasoning.
    reasoning_content: str | None = None
    reasoning: str | None = None

    @property
    def thought(self) -> str | None:
        return self.reasoning_content or self.reasoning or None


class FunctionWire(WireModel):
    name: str
    arguments: str | None = None


class ToolCallWire(WireModel):
    id: str | None = None
    function: FunctionWire


class MessageWire(_Reasoning):
    content: str | None = None
    tool_calls: list[ToolCallWire] | None = None
    refusal: str | None = None


class ChoiceWire(WireModel):
    message: MessageWire
    finish_reason: str | None = None


class CompletionTokensDetails(WireModel):
    reasoning_tokens: int | None = None


class PromptTokensDetails(WireModel):
    cached_tokens: int | None = None


class UsageWire(WireModel):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    completion_tokens_details: CompletionTokensDetails | None = None
    prompt_tokens_details: PromptTokensDetails | None = None


class CompletionWire(WireModel):
    """A chat.completion response body."""

    choices: list[ChoiceWire] = Field(min_length=1)
    usage: UsageWire | None = None
    model: str | None = None


class FunctionDeltaWire(WireModel):
    name: str | None = None
    arguments: str | None = None


class ToolCallDeltaWire(WireModel):
    # Arguments arrive in pieces keyed by index; id and name come with the first piece.
    index: int = 0
    id: str | None = None
    function: FunctionDeltaWire | None = None


class DeltaWire(_Reasoning):
    content: str | None = None
    tool_calls: list[ToolCallDeltaWire] | None = None


class ChunkChoiceWire(WireModel):
    delta: DeltaWire | None = None
    finish_reason: str | None = None


class ChunkWire(WireModel):
    """One chat.completion.chunk; the usage-only chunk at the end has no choices."""

    choices: list[ChunkChoiceWire] | None = None
    usage: UsageWire | None = None
    model: str | None = None
