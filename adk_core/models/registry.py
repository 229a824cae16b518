"""Resolve model names to Model instances.

Built in: ``gemini-*`` (Google Gemini API), ``claude-*`` (Anthropic Messages), ``gpt-*`` / ``o1*`` /
``o3*`` / ``o4*`` (OpenAI Chat Completions), and ``openai/<model>`` for any OpenAI-compatible
server (Ollama, vLLM, llama.cpp) at ``OPENAI_BASE_URL``. Register more with ``register_model``.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable

from ..errors import ConfigurationError
from .base import Model

ModelFactory = Callable[[str], Model]

_BUILTIN: list[tuple[str, str]] = [
    (r"gemini-.*", "adk_core.models.gemini:GeminiModel"),
    (r"claude-.*", "adk_core.models.anthropic:AnthropicModel"),
    (r"(gpt-|o1|o3|o4|chatgpt-).*", "adk_core.models.openai:OpenAIModel"),
    (r"openai/.+", "adk_core.models.openai:OpenAIModel"),
]

_factories: list[tuple[re.Pattern[str], ModelFactory | str]] = []
_instances: dict[str, Model] = {}


def register_model(pattern: str, factory: ModelFactory) -> None:
    """Resolve names fully matching ``pattern`` with ``factory(name)``; later registrations win."""
    _factories.insert(0, (re.compile(pattern), factory))
    _instances.clear()


def resolve_model(name: str) -> Model:
    """The Model for ``name`` (one instance per name, reused)."""
    if name in _instances:
        return _instances[name]
    for pattern, factory in [*_factories, *((re.compile(p), f) for p, f in _BUILTIN)]:
        if pattern.fullmatch(name):
            if isinstance(factory, str):
                module, attr = factory.split(":")
                factory = getattr(importlib.import_module(module), attr)
            model = factory(name)
            _instances[name] = model
            return model
    raise ConfigurationError(
        f"no model provider matches {name!r}; use a name like 'gemini-2.5-flash', 'claude-sonnet-4-5', "
        "'gpt-4o' or 'openai/<model>', pass a Model instance to the agent, or call "
        "adk_core.models.register_model(pattern, factory)"
    )
