"""`adkt create NAME`: a new app folder, ready to run and test without a model key.

    NAME/__init__.py
    NAME/agent.py         an LlmAgent with one tool; ADK_MODEL picks a real model, else a ScriptedModel
    NAME/test_agent.py    a pytest test that runs the agent in-process on the scripted model

`adkt create --config NAME` declares the agent in YAML instead (adk_core.config):

    NAME/root_agent.yaml  the agent: model, instruction, tools by name
    NAME/tools.py         the tool, the ToolRegistry the YAML names, and the scripted model

`adkt run NAME/agent.py "hi"` (or NAME/root_agent.yaml), `adkt dev --app ...` and `pytest NAME` work right away.
"""

from __future__ import annotations

import keyword
from pathlib import Path
from typing import Annotated

import typer

from adkt.commands._render import err

AGENT = '''"""The {name} app: an agent with one tool.

    adkt run {name}/agent.py "What time is it in Tokyo?"     durable: Temporal + Postgres, started for you
    adkt chat {name}/agent.py                                a conversation in the terminal
    ADK_MODEL=gemini-2.5-flash GOOGLE_API_KEY=... adkt run {name}/agent.py "..."   a real model

Without ADK_MODEL the agent runs on a ScriptedModel: a function of the request that stands in for a
model, so it runs (and its test passes) with no key.
"""

from __future__ import annotations

import os
from datetime import timedelta

from adk_core import App, FunctionTool, LlmAgent, LlmRequest, LlmResponse, ScriptedModel
from adk_core.models import function_call_response, text_response
from adk_core.tools import ToolExecution

UTC_OFFSETS = {{"tokyo": 9, "paris": 1, "london": 0, "new york": -5}}


def city_time(city: str) -> dict:
    """The UTC offset of a city's time zone.

    Args:
        city: the city's name, e.g. "Tokyo".
    """
    offset = UTC_OFFSETS.get(city.strip().lower())
    if offset is None:
        return {{"error": f"unknown city {{city!r}}; try one of {{', '.join(UTC_OFFSETS)}}"}}
    return {{"city": city, "utc_offset_hours": offset}}


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


root_agent = LlmAgent(
    name="{name}_agent",
    model=os.environ.get("ADK_MODEL") or ScriptedModel(scripted, name="scripted-{name}"),
    instruction="Answer questions about the time in a city with the city_time tool.",
    # In durable runs a tool is an activity, with its own timeout and retries.
    tools=[FunctionTool(city_time, execution=ToolExecution(start_to_close_timeout=timedelta(seconds=30)))],
)

app = App(name="{name}", root_agent=root_agent)
'''

TEST = '''"""Runs the {name} agent in-process on its scripted model: `pytest {name}` (no key, no servers)."""

import asyncio

from adk_core import InMemoryRunner

from .agent import app


def test_the_agent_calls_its_tool_and_answers() -> None:
    events = asyncio.run(InMemoryRunner(app=app).run("What time is it in Tokyo?"))
    calls = [call.name for event in events for call in event.function_calls()]
    assert calls == ["city_time"]
    assert events[-1].text == "Tokyo is at UTC+9."
'''


def create(
    name: Annotated[str, typer.Argument(help="the app's name: a new folder of that name holds it")],
    force: Annotated[bool, typer.Option("--force", help="overwrite the files if the folder exists")] = False,
    config: Annotated[
        bool, typer.Option("--config", help="declare the agent in YAML (root_agent.yaml) with its tools in tools.py")
    ] = False,
) -> None:
    """Create a new app folder (agent, tool, scripted-model test) that runs without a model key."""
    folder = Path(name)
    app_name = folder.name
    if not app_name.isidentifier() or keyword.iskeyword(app_name):
        raise typer.BadParameter(
            f"{app_name!r} must be a Python name (letters, digits and underscores, not starting with a digit), "
            "since the folder is imported as a package; e.g. my_agent"
        )
    if config:
        from adkt.commands._create_config import config_files

        files = config_files(app_name)
    else:
        files = {"__init__.py": "", "agent.py": AGENT.format(name=app_name), "test_agent.py": TEST.format(name=app_name)}
    entry = "root_agent.yaml" if config else "agent.py"
    taken = [f for f in files if (folder / f).exists()]
    if taken and not force:
        err.print(f"error: {folder}/ already has {', '.join(taken)}; pick another name or pass --force", markup=False)
        raise typer.Exit(1)
    folder.mkdir(parents=True, exist_ok=True)
    for file, text in files.items():
        (folder / file).write_text(text)
    err.print(
        f"created {folder}/ ({', '.join(f for f in files if f != '__init__.py')}). Try:\n"
        f"  adkt run {folder}/{entry} \"What time is it in Tokyo?\"\n"
        f"  pytest {folder}\n"
        f"  adkt dev --app {folder}/{entry}        Temporal UI, Postgres and a worker, until Ctrl-C",
        markup=False,
    )
