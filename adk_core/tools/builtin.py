"""Built-in tools: transfer_to_agent, exit_loop, load_memory, load_artifacts."""

from __future__ import annotations

import json
from typing import Any

from ..agents.context import ToolContext
from ..models.base import FunctionDeclaration, LlmRequest
from ..types import Content, Part
from .base import BaseTool

TRANSFER_TO_AGENT = "transfer_to_agent"


class TransferToAgentTool(BaseTool):
    """Hands the conversation to another agent. Built per request with the agents allowed from
    where the caller stands, so the model can only name a valid target."""

    def __init__(self, targets: list[str]) -> None:
        super().__init__(
            name=TRANSFER_TO_AGENT,
            description="Transfer the question to another agent that is better suited to answer it.",
        )
        self.targets = targets

    def declaration(self) -> FunctionDeclaration:
        return FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters={
                "type": "object",
                "properties": {
                    "agent_name": {"type": "string", "enum": list(self.targets), "description": "the agent to transfer to"}
                },
                "required": ["agent_name"],
            },
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        name = args.get("agent_name")
        if name not in self.targets:
            return {"error": f"cannot transfer to {name!r}; choose one of: {', '.join(self.targets)}"}
        tool_context.actions.transfer_to_agent = name
        return {"transferred_to": name}


class ExitLoopTool(BaseTool):
    """Ends the enclosing LoopAgent."""

    def __init__(self) -> None:
        super().__init__(
            name="exit_loop",
            description="Exits the loop. Call this function only when you are instructed to do so.",
        )

    def declaration(self) -> FunctionDeclaration:
        return FunctionDeclaration(name=self.name, description=self.description, parameters={"type": "object", "properties": {}})

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        tool_context.actions.escalate = True
        tool_context.actions.skip_summarization = True
        return {}


class LoadMemoryTool(BaseTool):
    """Searches the memory service for past conversations of this user."""

    def __init__(self) -> None:
        super().__init__(
            name="load_memory", description="Loads memories of past conversations relevant to the query."
        )

    def declaration(self) -> FunctionDeclaration:
        return FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters={
                "type": "object",
                "properties": {"query": {"type": "string", "description": "what to look for"}},
                "required": ["query"],
            },
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        response = await tool_context.search_memory(str(args.get("query", "")))
        return {
            "memories": [
                {"author": m.author, "timestamp": m.timestamp, "text": m.content.text} for m in response.memories
            ]
        }


class LoadArtifactsTool(BaseTool):
    """Lets the model see the session's artifacts: lists them in the instruction and, when the
    model asks, adds their content to the next request."""

    def __init__(self) -> None:
        super().__init__(name="load_artifacts", description="Loads the artifacts and adds them to the session.")

    def declaration(self) -> FunctionDeclaration:
        return FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters={
                "type": "object",
                "properties": {"artifact_names": {"type": "array", "items": {"type": "string"}}},
                "required": ["artifact_names"],
            },
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        names = [str(n) for n in args.get("artifact_names", [])]
        available = set(await tool_context.list_artifacts())
        missing = [n for n in names if n not in available]
        result: dict[str, Any] = {"artifact_names": [n for n in names if n in available]}
        if missing:
            result["not_found"] = missing
        return result

    async def process_llm_request(self, *, tool_context: ToolContext, llm_request: LlmRequest) -> None:
        await super().process_llm_request(tool_context=tool_context, llm_request=llm_request)
        if tool_context.invocation_context.artifact_service is None:
            return
        names = await tool_context.list_artifacts()
        if not names:
            return
        llm_request.append_instructions(
            f"You have a list of artifacts:\n{json.dumps(names)}\n\nWhen the user asks about any of them, "
            "call the `load_artifacts` function to load them before answering."
        )
        # If the model just asked for artifacts, attach their content to this request.
        last = llm_request.contents[-1] if llm_request.contents else None
        requested: list[str] = []
        for response in last.function_responses() if last else []:
            if response.name == self.name:
                requested.extend(response.response.get("artifact_names", []))
        for name in requested:
            artifact = await tool_context.load_artifact(name)
            if artifact is not None:
                llm_request.contents.append(
                    Content(role="user", parts=[Part(text=f"Artifact {name} is:"), artifact])
                )


exit_loop = ExitLoopTool()
load_memory = LoadMemoryTool()
load_artifacts = LoadArtifactsTool()
