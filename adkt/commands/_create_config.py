"""The files of `adkt create --config NAME`: an agent declared in YAML, its tools in Python."""

from __future__ import annotations

ROOT_AGENT = """\
# The {name} agent, declared in YAML (adk_core.config; google-adk's Agent Config shape).
#   adkt run {name}/root_agent.yaml "What time is it in Tokyo?"    durable: Temporal + Postgres, started for you
#   adkt dev --app {name}/root_agent.yaml                          the Temporal UI, Postgres and a worker
agent_class: LlmAgent
name: {name}
description: Tells the time zone of a city.
# A model name (gemini-2.5-flash, claude-sonnet-4-5, gpt-4o, ...) or package.module:attr holding a Model.
# tools.py's `model` is ADK_MODEL when set, else a scripted stand-in that needs no key.
model: {name}.tools:model
instruction: Answer questions about the time in a city with the city_time tool.
# Tool names are looked up in this registry, then among the built-in tools (exit_loop, load_memory,
# load_artifacts), then as package.module:attr. A name that binds nothing stops the app from loading,
# unless `tool_validation: permissive` (then it is left out, with a warning).
tool_registry: {name}.tools:registry
tools:
  - city_time
generate_content_config:
  temperature: 0.2
"""

TOOLS = '''"""The {name} agent's tools, the registry its root_agent.yaml names, and a model that needs no key."""

from __future__ import annotations

import os
from datetime import timedelta

from adk_core import FunctionTool, LlmRequest, LlmResponse, ScriptedModel
from adk_core.models import function_call_response, text_response
from adk_core.tools import ToolExecution, ToolRegistry

UTC_OFFSETS = {{"tokyo": 9, "paris": 1, "london": 0, "new york": -5}}

registry = ToolRegistry()


def city_time(city: str) -> dict:
    """The UTC offset of a city's time zone.

    Args:
        city: the city's name, e.g. "Tokyo".
    """
    offset = UTC_OFFSETS.get(city.strip().lower())
    if offset is None:
        return {{"error": f"unknown city {{city!r}}; try one of {{', '.join(UTC_OFFSETS)}}"}}
    return {{"city": city, "utc_offset_hours": offset}}


# In durable runs a tool is an activity, with its own timeout and retries.
registry.register(FunctionTool(city_time, execution=ToolExecution(start_to_close_timeout=timedelta(seconds=30))))


def scripted(request: LlmRequest) -> LlmResponse:
    """Stands in for a model: calls the tool for a city named in the message, then answers with its result."""
    results = [p.function_response.response for c in request.contents for p in c.parts if p.function_response]
    if results:
        result = results[-1]
        if "error" in result:
            return text_response(result["error"])
        return text_response(f"{{result['city']}} is at UTC{{result['utc_offset_hours']:+d}}.")
    message = request.contents[-1].text.lower() if request.contents else ""
    city = next((c for c in UTC_OFFSETS if c in message), None)
    if city is None:
        return text_response(f"Ask me about the time in one of: {{', '.join(UTC_OFFSETS)}}.")
    return function_call_response("city_time", {{"city": city.title()}})


model = os.environ.get("ADK_MODEL") or ScriptedModel(scripted, name="scripted-{name}")
'''

TEST = '''"""Runs the {name} agent from its YAML in-process on the scripted model: `pytest {name}` (no key, no servers)."""

import asyncio
from pathlib import Path

from adk_core import InMemoryRunner
from adk_core.config import load_config_app


def test_the_agent_calls_its_tool_and_answers() -> None:
    app = load_config_app(Path(__file__).with_name("root_agent.yaml"))
    events = asyncio.run(InMemoryRunner(app=app).run("What time is it in Tokyo?"))
    calls = [call.name for event in events for call in event.function_calls()]
    assert calls == ["city_time"]
    assert events[-1].text == "Tokyo is at UTC+9."
'''


def config_files(name: str) -> dict[str, str]:
    """File name -> text for a config-based app called ``name``."""
    return {
        "__init__.py": "",
        "root_agent.yaml": ROOT_AGENT.format(name=name),
        "tools.py": TOOLS.format(name=name),
        "test_agent.py": TEST.format(name=name),
    }
