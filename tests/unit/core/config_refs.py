"""What the agent config tests' YAML files name by reference (package.module:attr)."""

from __future__ import annotations

from adk_core import LlmAgent, ScriptedModel, ToolRegistry
from adk_core.models import text_response

MODEL = ScriptedModel(lambda request: text_response("ok"), name="cfg-test")
REGISTRY = ToolRegistry()
calls: list[str] = []


@REGISTRY.register
def lookup(item: str) -> dict:
    """Look an item up.

    Args:
        item: what to look up.
    """
    return {"item": item}


def note_model_call(callback_context: object, llm_request: object) -> None:
    calls.append("before_model")


def looped_agent() -> LlmAgent:
    return LlmAgent(name="looped", model=MODEL)


looped = looped_agent()
"""A sub-agent a config names with `code:` (an agent has one parent: one config may name it)."""
