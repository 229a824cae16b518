"""The README's quickstart: an agent with a tool, run in-process and durably.

    python -m examples.quickstart                     # in-process, scripted model
    adkt run examples.quickstart:app "What is the weather in Paris?"   # durable, embedded servers
    ADK_MODEL=gemini-2.5-flash GOOGLE_API_KEY=... adkt run examples.quickstart:app "..."   # a real model
"""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta

from adk_core import App, FunctionTool, InMemoryRunner, LlmAgent, LlmRequest, LlmResponse, ScriptedModel
from adk_core.models import function_call_response, text_response
from adk_core.tools import ToolExecution


async def get_weather(city: str) -> dict:
    """Current weather for a city.

    Args:
        city: the city's name, e.g. "Paris".
    """
    return {"city": city, "sky": "sunny", "celsius": 21}


def scripted(request: LlmRequest) -> LlmResponse:
    """Stands in for a real model when ADK_MODEL is not set: asks for the weather, then answers."""
    answered = [p.function_response.response for c in request.contents for p in c.parts if p.function_response]
    if not answered:
        return function_call_response("get_weather", {"city": "Paris"})
    weather = answered[-1]
    return text_response(f"It is {weather['sky']} and {weather['celsius']}°C in {weather['city']}.")


root_agent = LlmAgent(
    name="weather_agent",
    model=os.environ.get("ADK_MODEL") or ScriptedModel(scripted, name="scripted-weather"),
    instruction="Answer weather questions with the get_weather tool.",
    tools=[
        # In durable runs this tool is an activity with its own timeout and retries.
        FunctionTool(get_weather, execution=ToolExecution(start_to_close_timeout=timedelta(seconds=30))),
    ],
)

app = App(name="quickstart", root_agent=root_agent)


async def main() -> None:
    runner = InMemoryRunner(app=app)
    for event in await runner.run("What is the weather in Paris?"):
        print(f"{event.author}: {event.text or event.function_calls() or event.function_responses()}")


if __name__ == "__main__":
    asyncio.run(main())
