"""The app the simulator's durable tests run (also in worker subprocesses they SIGKILL).

A pipeline of three agents: ``planner`` (a tool, get_weather) and ``reviewer`` are played by a
person through SimulatorPlugin; ``writer`` keeps its (scripted) model.
"""

from __future__ import annotations

from adk_core import App, FunctionTool, LlmAgent, ScriptedModel, SequentialAgent
from adk_core.models import text_response
from adk_core.simulator import SimulatorPlugin


def get_weather(city: str, days: int = 1) -> dict:
    """Weather forecast for a city.

    Args:
        city: the city name.
        days: how many days ahead (1-7).
    """
    return {"city": city, "days": days, "sky": "sunny"}


def _unused(request):  # a targeted agent's model is never called
    raise AssertionError("the simulator should have answered")


planner = LlmAgent(name="planner", model=ScriptedModel(_unused), instruction="Find the weather with get_weather.",
                   tools=[FunctionTool(get_weather)])
writer = LlmAgent(name="writer", model=ScriptedModel(lambda request: text_response("draft from the real model")))
reviewer = LlmAgent(name="reviewer", model=ScriptedModel(_unused), instruction="Review the draft.")

app = App(
    name="simulator_pipeline",
    root_agent=SequentialAgent(name="pipeline", sub_agents=[planner, writer, reviewer]),
    plugins=[SimulatorPlugin(["planner", "reviewer"])],
)

single = App(
    name="simulator_single",
    root_agent=LlmAgent(name="weather", model=ScriptedModel(_unused), instruction="Answer with get_weather.",
                        tools=[FunctionTool(get_weather)]),
    plugins=[SimulatorPlugin()],
)
