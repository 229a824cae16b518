"""Models: the Model protocol, request/response types, the name registry and ScriptedModel.

Providers (imported on demand by the registry): ``adk_core.models.gemini.GeminiModel``,
``adk_core.models.anthropic.AnthropicModel``, ``adk_core.models.openai.OpenAIModel``.
"""

from .base import (
    FunctionDeclaration,
    GenerateContentConfig,
    LlmRequest,
    LlmResponse,
    Model,
    PromptCacheConfig,
    ThinkingConfig,
    UsageMetadata,
)
from .registry import register_model, resolve_model
from .rules import ModelRules, model_rules, register_model_rules
from .scripted import ScriptedModel, function_call_response, text_response, tool_responses_this_turn

__all__ = [
    "FunctionDeclaration",
    "GenerateContentConfig",
    "LlmRequest",
    "LlmResponse",
    "Model",
    "ModelRules",
    "PromptCacheConfig",
    "ScriptedModel",
    "ThinkingConfig",
    "UsageMetadata",
    "function_call_response",
    "model_rules",
    "register_model",
    "register_model_rules",
    "resolve_model",
    "text_response",
    "tool_responses_this_turn",
]
