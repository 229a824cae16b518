"""The Python half of the YAML agent in this folder: its tools, the registry that names them, and a
stand-in model so it runs without a key (ADK_MODEL picks a real one).

    adkt run examples/yaml_agent/root_agent.yaml "What's the weather in Paris?"
"""

from __future__ import annotations

import os
from datetime import timedelta

from adk_core import FunctionTool, LlmRequest, LlmResponse, ScriptedModel
from adk_core.models import function_call_response, text_response
from adk_core.tools import ToolExecution, ToolRegistry

WEATHER = {"paris": ("sunny", 21), "london": ("rain", 14), "tokyo": ("cloudy", 18)}

registry = ToolRegistry()
"""The names root_agent.yaml's `tools:` may use (besides built-ins and package.module:attr references)."""


def get_weather(city: str) -> dict:
    """Today's weather in a city.

    Args:
        city: the city's name, e.g. "Paris".
    """
    found = WEATHER.get(city.strip().lower())
    if found is None:
        return {"error": f"no weather for {city!r}; try one of {', '.join(WEATHER)}"}
    return {"city": city, "sky": found[0], "celsius": found[1]}


# In durable runs a tool is an activity: its own timeout (and Temporal's retries).
registry.register(FunctionTool(get_weather, execution=ToolExecution(start_to_close_timeout=timedelta(seconds=30))))


def to_fahrenheit(celsius: float) -> float:
    """Celsius to Fahrenheit.

    Args:
        celsius: degrees Celsius.
    """
    return round(celsius * 9 / 5 + 32, 1)


def scripted(request: LlmRequest) -> LlmResponse:
    """Stands in for a model: asks for the weather of the city the user names, then reports it."""
    results = [p.function_response.response for c in request.contents for p in c.parts if p.function_response]
    if results:
        result = results[-1]
        if "error" in result:
            return text_response(result["error"])
        return text_response(f"{result['city']}: {result['sky']}, {result['celsius']} °C.")
    message = request.contents[-1].text.lower() if request.contents else ""
    city = next((c for c in WEATHER if c in message), None)
    if city is None:
        return text_response(f"Ask me about the weather in one of: {', '.join(WEATHER)}.")
    return function_call_response("get_weather", {"city": city.title()})


model = os.environ.get("ADK_MODEL") or ScriptedModel(scripted, name="scripted-yaml-weather")
"""root_agent.yaml's `model:` (a reference, so the file names no provider)."""
