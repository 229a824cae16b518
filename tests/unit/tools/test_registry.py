"""Tools by name (seed 003): a ToolRegistry, STRICT and PERMISSIVE binding, references to code."""

from __future__ import annotations

import logging

import pytest

from adk_core import AgentTool, FunctionTool, LlmAgent, ScriptedModel, ToolRegistry, ValidationMode
from adk_core.errors import ConfigurationError
from adk_core.models import text_response
from adk_core.tools import McpToolset, OpenApiToolset, StdioServer
from adk_core.tools.builtin import exit_loop

MODEL = ScriptedModel(lambda request: text_response("ok"))


def get_weather(city: str) -> dict:
    """The weather in a city.

    Args:
        city: the city.
    """
    return {"city": city, "sky": "sunny"}


def send_sms(to: str, text: str) -> dict:
    """Send a text message.

    Args:
        to: the number.
        text: the message.
    """
    return {"sent": True}


NOT_A_TOOL = 42


def registry() -> ToolRegistry:
    reg = ToolRegistry([get_weather])
    reg.register(LlmAgent(name="helper", model=MODEL, description="helps"))
    reg.register(McpToolset(StdioServer(command="true")), name="files")
    return reg


def test_a_registry_maps_names_to_function_tools_toolsets_and_agents() -> None:
    reg = registry()
    assert reg.names() == ["files", "get_weather", "helper"]
    assert isinstance(reg.get("get_weather"), FunctionTool)
    assert isinstance(reg.get("helper"), AgentTool)
    assert isinstance(reg.get("files"), McpToolset)
    assert reg.get("exit_loop") is exit_loop and "exit_loop" in reg  # built-ins resolve through every registry
    assert reg.get("nope") is None
    openapi = OpenApiToolset(spec={"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {}},
                             base_url="http://127.0.0.1:1")  # fmt: skip
    reg.register(openapi, name="shop")
    assert reg.get("shop") is openapi


def test_registering_a_taken_name_or_a_non_tool_is_refused() -> None:
    reg = registry()
    with pytest.raises(ConfigurationError, match="already has 'get_weather'.*another name"):
        reg.register(send_sms, name="get_weather")
    with pytest.raises(ConfigurationError, match="is a int, not a tool"):
        reg.register(NOT_A_TOOL, name="x")


def test_strict_binds_registry_names_builtins_and_references_in_order() -> None:
    reg = registry()
    agent = LlmAgent(
        name="a", model=MODEL, tool_registry=reg,
        tools=["get_weather", "exit_loop", "tests.unit.tools.test_registry:send_sms", "files"],
    )  # fmt: skip
    assert [getattr(t, "name", None) for t in agent.tools[:3]] == ["get_weather", "exit_loop", "send_sms"]
    assert agent.tools[3] is reg.get("files")  # a toolset is bound as is: its tools are listed per model call
    assert agent.omitted_tools == ()


def test_strict_refuses_an_agent_with_a_missing_tool_and_says_how_to_fix_it() -> None:
    with pytest.raises(ConfigurationError) as raised:
        LlmAgent(name="a", model=MODEL, tool_registry=registry(), tools=["get_wether", "tests.nowhere:tool"])
    message = str(raised.value)
    assert "agent 'a'" in message
    assert "'get_wether' is not in the tool registry" in message
    assert "no module 'tests.nowhere'" in message
    assert "Did you mean 'get_weather'" in message
    assert "registry.register" in message and "permissive" in message


def test_a_name_without_a_registry_is_missing_and_a_bad_reference_is_not_swallowed() -> None:
    with pytest.raises(ConfigurationError, match="not in the built-in tools .the agent has no tool_registry"):
        LlmAgent(name="a", model=MODEL, tools=["get_weather"])
    with pytest.raises(ConfigurationError, match="has no 'nope'"):
        LlmAgent(name="a", model=MODEL, tools=["tests.unit.tools.test_registry:nope"])
    # Even PERMISSIVE does not leave out something that is there but is not a tool: that is a mistake.
    with pytest.raises(ConfigurationError, match="is a int, not a tool"):
        LlmAgent(name="a", model=MODEL, tools=["tests.unit.tools.test_registry:NOT_A_TOOL"], tool_validation="permissive")


def test_permissive_binds_what_exists_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="adk_core.tools.registry")
    for _ in range(2):
        agent = LlmAgent(name="perm_once", model=MODEL, tool_registry=registry(), tools=["get_weather", "send_sms"],
                         tool_validation=ValidationMode.PERMISSIVE)  # fmt: skip
        assert [t.name for t in agent.tools] == ["get_weather"]
        assert agent.omitted_tools == ("send_sms",)
    warnings = [r.getMessage() for r in caplog.records if "perm_once" in r.getMessage()]
    assert len(warnings) == 1 and "send_sms" in warnings[0]


def test_an_unknown_validation_mode_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="'strict', 'permissive'"):
        LlmAgent(name="a", model=MODEL, tools=[], tool_validation="lenient")
