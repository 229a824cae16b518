"""adk_core raises its own errors (the AdkError tree in adk_core.errors), whose messages say how to fix
the problem; a builtin exception only where a Python protocol asks for that exact type."""

from __future__ import annotations

import ast
import builtins
import dataclasses

import pytest

from adk_core import InMemoryRunner, LlmAgent, ToolContext
from adk_core.errors import ConfigurationError
from tests.unit.structure.source_tree import modules

# Protocols that name the exception: abstract methods, Mapping.__getitem__, __getattr__, pytest asserts.
PROTOCOL_EXCEPTIONS = {"NotImplementedError", "KeyError", "AttributeError", "AssertionError", "StopAsyncIteration"}


def test_adk_core_raises_no_plain_builtin_exception():
    raised = []
    for module in modules():
        if module.name.split(".")[0] != "adk_core":
            continue
        for node in ast.walk(module.tree):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = target.id if isinstance(target, ast.Name) else None
            if name and isinstance(getattr(builtins, name, None), type) and name not in PROTOCOL_EXCEPTIONS:
                raised.append(f"{module.rel}:{node.lineno}: {name}")
    assert not raised, "raise an adk_core.errors class (AdkError tree) instead:\n" + "\n".join(raised)


async def test_context_misuse_is_a_configuration_error_that_says_what_to_do():
    runner = InMemoryRunner(LlmAgent(name="a", model="m"), app_name="app")
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    ctx = dataclasses.replace(runner.new_invocation_context(session), artifact_service=None, memory_service=None)
    tool_context = ToolContext(ctx)  # no function call: as a callback, not a tool, would hold it
    with pytest.raises(ConfigurationError, match="only valid inside a tool call"):
        _ = tool_context.idempotency_key
    with pytest.raises(ConfigurationError, match="require_confirmation=True"):
        tool_context.request_confirmation(hint="sure?")
    with pytest.raises(ConfigurationError, match="pass artifact_service= to the Runner"):
        await tool_context.load_artifact("f.txt")
    with pytest.raises(ConfigurationError, match="pass memory_service= to the Runner"):
        await tool_context.search_memory("q")
