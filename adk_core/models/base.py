"""The Model contract and the request/response types every provider speaks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from ..types import Content

if TYPE_CHECKING:
    from ..tools.base import BaseTool


class FunctionDeclaration(BaseModel):
    """What the model is told about one tool. ``parameters`` is a JSON schema (type object)."""

    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None
    response: dict[str, Any] | None = None


class ThinkingConfig(BaseModel):
    """How much the model reasons before it answers: one setting, mapped to each provider's own.

    Give an ``effort`` or a ``budget_tokens``; a provider that takes the other gets the nearest
    equivalent (docs/models.md, "Thinking"). Neither means "on, at the model's default".
    """

    model_config = ConfigDict(extra="forbid")

    effort: Literal["none", "low", "medium", "high", "max"] | None = None
    budget_tokens: int | None = Field(default=None, ge=0)
    """Tokens the model may spend thinking; 0 turns thinking off where the model allows it."""
    include_thoughts: bool = True
    """Return the thoughts (summarized) with the answer; False keeps only what the provider needs
    to continue (Anthropic's signatures)."""

    @property
    def off(self) -> bool:
        return self.effort == "none" or self.budget_tokens == 0


class PromptCacheConfig(BaseModel):
    """Prompt caching: reuse of the request's stable prefix (tools, system instruction, earlier turns).

    Anthropic caches only what the request marks: with this on (the default for Claude models) the
    adapter marks the tools, the system instruction and the conversation tail (docs/models.md,
    "Prompt caching"). OpenAI and Gemini cache long prefixes on their own; ``key`` routes OpenAI
    requests that share a prefix to the same cache.
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    ttl: Literal["5m", "1h"] | None = None
    """How long Anthropic keeps a cached prefix after its last use; None: the API's default (5 minutes).
    A 1 hour entry costs twice the input price to write, a 5 minute one 1.25 times."""
    key: str | None = Field(default=None, min_length=1, max_length=1024)
    """OpenAI's ``prompt_cache_key``: requests with the same key and prefix are served from one cache
    (e.g. an app or agent name). Sent to OpenAI only, never to a compatible server."""


class GenerateContentConfig(BaseModel):
    """Generation settings. Providers map what they support and ignore None fields.

    ``extra`` is passed through to the provider's request body as-is, for knobs we do not model.
    """

    model_config = ConfigDict(extra="forbid")

    system_instruction: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_output_tokens: int | None = None
    stop_sequences: list[str] | None = None
    seed: int | None = None
    response_mime_type: str | None = None
    response_schema: dict[str, Any] | None = None
    tools: list[FunctionDeclaration] = Field(default_factory=list)
    tool_choice: str | None = None
    """"auto" (default), "none", "required", or a tool name to force."""
    labels: dict[str, str] | None = None
    thinking: ThinkingConfig | None = None
    """Thinking / reasoning (Gemini thinkingConfig, Anthropic thinking and effort, OpenAI reasoning_effort)."""
    prompt_cache: PromptCacheConfig | None = None
    """Prompt caching; None: the model's default (on where the provider supports it)."""
    extra: dict[str, Any] = Field(default_factory=dict)


class UsageMetadata(BaseModel):
    prompt_token_count: int | None = None
    candidates_token_count: int | None = None
    total_token_count: int | None = None
    thoughts_token_count: int | None = None
    cached_content_token_count: int | None = None
    """Prompt tokens served from the provider's cache (part of prompt_token_count)."""
    cache_creation_token_count: int | None = None
    """Prompt tokens written to the provider's cache (part of prompt_token_count); Anthropic
    charges them above the input price."""


class ContentsRef(BaseModel):
    """Conversation history by reference: the contents built from a session's stored events up to
    and including ``through_event_id``, as ``agent_name`` on ``branch`` sees them.

    The durable runtime sends this instead of the transcript, so what each model call puts in
    workflow history does not grow with the conversation. Whoever calls the provider resolves it
    first (adk_core.flow.contents.resolve_contents_ref); providers never see it.
    """

    app_name: str
    user_id: str
    session_id: str
    through_event_id: str
    agent_name: str
    branch: str | None = None
    current_turn_only: bool = False


class LlmRequest(BaseModel):
    """What the flow sends to a model: contents, config and the tools it may call."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: str | None = None
    contents: list[Content] = Field(default_factory=list)
    history: ContentsRef | None = None
    """Stored contents that come before ``contents`` (durable runs only)."""
    config: GenerateContentConfig = Field(default_factory=GenerateContentConfig)
    tools_dict: dict[str, Any] = Field(default_factory=dict, exclude=True)
    """name -> BaseTool for the tools declared in config.tools; never serialized."""
    _stored_prefix: Any = PrivateAttr(default=None)
    """Set by the flow (adk_core.flow.history) when the leading contents stand for stored events:
    what a durable runtime may send by reference. Never serialized."""

    def append_instructions(self, *instructions: str) -> None:
        text = "\n\n".join(i for i in instructions if i)
        if not text:
            return
        current = self.config.system_instruction
        self.config.system_instruction = f"{current}\n\n{text}" if current else text

    def append_tools(self, tools: list[BaseTool]) -> None:
        for tool in tools:
            declaration = tool.declaration()
            if declaration is None:
                continue
            self.config.tools.append(declaration)
            self.tools_dict[tool.name] = tool


class LlmResponse(BaseModel):
    """One model response, or one streamed chunk of it (``partial=True``)."""

    content: Content | None = None
    partial: bool | None = None
    turn_complete: bool | None = None
    finish_reason: str | None = None
    usage_metadata: UsageMetadata | None = None
    error_code: str | None = None
    error_message: str | None = None
    interrupted: bool | None = None
    model_version: str | None = None
    custom_metadata: dict[str, Any] | None = None


@runtime_checkable
class Model(Protocol):
    """A model provider. Implementations do no client-side retries: they raise ModelError with
    status/retryable/retry_after and let the caller (Temporal, in durable runs) decide."""

    @property
    def name(self) -> str: ...

    def generate_content(self, request: LlmRequest, *, stream: bool = False) -> AsyncIterator[LlmResponse]: ...
