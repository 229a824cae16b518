"""ResolvedContext (seed 003): the instruction a model call gets never names a tool it cannot call."""

from __future__ import annotations

from adk_core import InMemoryRunner, LlmAgent, LlmRequest, LlmResponse, ScriptedModel, ToolRegistry
from adk_core.flow import ResolvedContext, resolve_context
from adk_core.flow.resolved_context import prune_instruction
from adk_core.models import text_response


def get_order(order_id: str) -> dict:
    """Look an order up.

    Args:
        order_id: the order's id.
    """
    return {"order_id": order_id, "status": "shipped"}


def refund(order_id: str) -> dict:
    """Refund an order.

    Args:
        order_id: the order's id.
    """
    return {"refunded": order_id}


INSTRUCTION = """You help with orders.
Look an order up with get_order. Refund it with `refund` only if the user asks.
- refund: needs a reason
Be brief."""


def test_sentences_and_lines_that_name_an_omitted_tool_are_removed() -> None:
    assert prune_instruction(INSTRUCTION, ["refund"]) == (
        "You help with orders.\nLook an order up with get_order.\nBe brief."
    )
    # Whole words only: "refunds" and "refund_policy" are not the tool.
    assert prune_instruction("Explain refunds. See refund_policy.", ["refund"]) == "Explain refunds. See refund_policy."
    # A reference's tool name counts too; nothing to omit leaves the text as is.
    assert prune_instruction("Use send_sms. Be kind.", ["pkg.tools:send_sms"]) == "Be kind."
    assert prune_instruction(INSTRUCTION, []) == INSTRUCTION


async def test_a_permissive_agent_never_tells_the_model_about_a_tool_it_lacks() -> None:
    seen: list[LlmRequest] = []

    def model(request: LlmRequest) -> LlmResponse:
        seen.append(request)
        return text_response("done")

    registry = ToolRegistry([get_order])  # refund is not registered
    agent = LlmAgent(name="orders", model=ScriptedModel(model), instruction=INSTRUCTION, tool_registry=registry,
                     tools=["get_order", "refund"], tool_validation="permissive")  # fmt: skip
    runner = InMemoryRunner(agent, app_name="orders")
    await runner.run("refund order 7")
    instruction = seen[0].config.system_instruction or ""
    assert "get_order" in instruction and "You help with orders." in instruction
    assert "refund" not in instruction.replace("refunds", "")
    assert list(seen[0].tools_dict) == ["get_order"]

    session = await runner.session_service.create_session(app_name="orders", user_id="u")
    resolved = await resolve_context(agent, runner.new_invocation_context(session))
    assert isinstance(resolved, ResolvedContext)
    assert resolved.tool_names == ["get_order"] and resolved.omitted == ("refund",)


async def test_a_strict_agent_with_every_tool_keeps_its_instruction_whole() -> None:
    seen: list[LlmRequest] = []

    def model(request: LlmRequest) -> LlmResponse:
        seen.append(request)
        return text_response("done")

    agent = LlmAgent(name="orders", model=ScriptedModel(model), instruction=INSTRUCTION,
                     tool_registry=ToolRegistry([get_order, refund]), tools=["get_order", "refund"])  # fmt: skip
    await InMemoryRunner(agent, app_name="orders").run("hi")
    assert INSTRUCTION in (seen[0].config.system_instruction or "")
    assert sorted(seen[0].tools_dict) == ["get_order", "refund"]
