"""What tests/integration/yaml_durable.yaml names by reference: a scripted model that reports what the
workflow sent it (the tools, and whether the instruction names the tool the agent lacks)."""

from __future__ import annotations

from adk_core import LlmRequest, LlmResponse, ScriptedModel
from adk_core.models import text_response
from examples.yaml_agent.tools import scripted


def reporting(request: LlmRequest) -> LlmResponse:
    response = scripted(request)
    if response.content is not None and response.content.parts[0].function_call is not None:
        return response
    instruction = request.config.system_instruction or ""
    return text_response(
        f"{response.content.text if response.content else ''} | tools={sorted(d.name for d in request.config.tools)} "
        f"| names send_sms: {'send_sms' in instruction} | names get_weather: {'get_weather' in instruction}"
    )


model = ScriptedModel(reporting, name="scripted-yaml-durable")
