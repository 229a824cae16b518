"""LongRunningFunctionTool: the call is marked long-running, the turn ends, and the result arriving
later as a FunctionResponse message goes to the agent that made the call, and to the model right
after the call (adk_core.flow.contents.pair_answers)."""

from __future__ import annotations

from typing import Any

from adk_core import (
    Content,
    FunctionTool,
    InMemoryRunner,
    LlmAgent,
    LlmRequest,
    LongRunningFunctionTool,
    ScriptedModel,
)
from adk_core.flow.functions import unanswered_long_running_calls
from adk_core.models import LlmResponse, function_call_response, text_response, tool_responses_this_turn
from adk_core.models.anthropic import AnthropicModel
from adk_core.types import REQUEST_CONFIRMATION_FUNCTION, Part

requested: list[int] = []


def ask_for_approval(amount: int) -> None:
    """Ask a manager to approve a refund."""
    requested.append(amount)  # the answer arrives later, from the manager


def _refunds_script(request: LlmRequest) -> Any:
    done = tool_responses_this_turn(request)
    if done:
        return text_response(f"refund decision: {done[-1]}")
    return function_call_response("ask_for_approval", {"amount": 50})


def _app() -> tuple[LlmAgent, LlmAgent]:
    refunds = LlmAgent(
        name="refunds",
        description="Handles refunds.",
        model=ScriptedModel(_refunds_script),
        tools=[LongRunningFunctionTool(ask_for_approval)],
        # Without the call id, the next message would go back to the root: this agent may not be
        # talked to directly across the tree.
        disallow_transfer_to_parent=True,
    )
    front = LlmAgent(
        name="front",
        model=ScriptedModel(lambda r: function_call_response("transfer_to_agent", {"agent_name": "refunds"})),
        sub_agents=[refunds],
    )
    return front, refunds


async def test_long_running_call_ends_the_turn_and_the_later_result_continues_it() -> None:
    requested.clear()
    front, refunds = _app()
    runner = InMemoryRunner(front)
    first = await runner.run("I want a refund", session_id="s")
    call_event = first[-1]
    call = call_event.function_calls()[0]
    assert (call_event.author, call.name, call.args) == ("refunds", "ask_for_approval", {"amount": 50})
    assert call.id and call_event.long_running_tool_ids == [call.id]
    assert call_event.is_final_response()
    assert requested == [50]
    assert not any(e.function_responses() for e in first if e.author == "refunds"), "no result yet"
    assert "long-running operation" in refunds.model.requests[0].config.tools[0].description  # type: ignore[union-attr]

    answer = Content(role="user", parts=[Part.from_function_response("ask_for_approval", {"approved": True}, id=call.id)])
    second = await runner.run(answer, session_id="s")
    assert [(e.author, e.text) for e in second] == [("refunds", "refund decision: {'approved': True}")]
    assert len(front.model.requests) == 1  # type: ignore[union-attr]
    last_request = refunds.model.requests[-1]  # type: ignore[union-attr]
    assert last_request.contents[-1].function_responses()[0].id == call.id


async def test_without_the_call_id_the_message_goes_to_the_root() -> None:
    front, _ = _app()
    runner = InMemoryRunner(front)
    await runner.run("I want a refund", session_id="s")
    events = await runner.run("hello?", session_id="s")
    assert events[0].author == "front"


# --- what the model is sent around a long-running call --------------------------------------------
# Anthropic (and OpenAI) take a tool result only in the message right after its call, and every call
# of that message needs its result there: anything else is a 400. Claude 4.6 and later also refuse
# a request that ends with the model's own turn (no assistant prefill).


def _sent(request: LlmRequest) -> list[dict[str, Any]]:
    """The messages Anthropic's API would be sent for ``request``."""
    return AnthropicModel("claude-sonnet-4-5", api_key="test").build_request(request)["messages"]


def _assert_providers_take_it(request: LlmRequest) -> None:
    messages = _sent(request)
    for i, message in enumerate(messages):
        uses = {b["id"] for b in message["content"] if b["type"] == "tool_use"}
        results = {b["tool_use_id"] for b in message["content"] if b["type"] == "tool_result"}
        after = messages[i + 1]["content"] if i + 1 < len(messages) else []
        before = messages[i - 1]["content"] if i else []
        assert uses <= {b["tool_use_id"] for b in after if b["type"] == "tool_result"}, f"a call without its result: {messages}"
        assert results <= {b["id"] for b in before if b["type"] == "tool_use"}, f"a result not after its call: {messages}"
    assert messages[-1]["role"] == "user", f"ends with the model's turn: {messages}"


def _shown(request: LlmRequest) -> list[tuple[str | None, list[str]]]:
    """Each content as (role, [text, "call <id>" or "<id>: <response>" per part])."""
    def part(p: Part) -> str:
        if p.function_call is not None:
            return f"call {p.function_call.id}"
        if p.function_response is not None:
            return f"{p.function_response.id}: {p.function_response.response}"
        return p.text or ""

    return [(c.role, [part(p) for p in c.parts]) for c in request.contents]


def get_weather(city: str) -> dict:
    """Current weather for a city."""
    return {"temp_c": 18}


def request_approval(amount: int) -> None:
    """Ask a manager to approve a spend; the answer comes later."""
    requested.append(amount)


def open_ticket(amount: int) -> dict:
    """Open an approval ticket; the decision arrives later."""
    return {"status": "pending", "ticket": "T1"}


async def test_a_long_running_call_beside_a_plain_one_waits_for_its_result_before_the_model_is_called() -> None:
    def script(request: LlmRequest) -> Any:
        done = tool_responses_this_turn(request)
        if not done:
            return LlmResponse(content=Content(role="model", parts=[
                Part.from_function_call("request_approval", {"amount": 5}, id="toolu_A"),
                Part.from_function_call("get_weather", {"city": "Paris"}, id="toolu_B"),
            ]))
        return text_response(f"done: {done}")

    requested.clear()
    agent = LlmAgent(name="w", model=ScriptedModel(script), tools=[get_weather, LongRunningFunctionTool(request_approval)])
    runner = InMemoryRunner(agent, app_name="t")
    first = await runner.run("Approve 5 and tell me the weather", session_id="s")
    # The plain call ran and its result is kept; the model is not called again while the other waits.
    assert len(agent.model.requests) == 1  # type: ignore[attr-defined]
    assert first[-2].long_running_tool_ids == ["toolu_A"] and first[-2].is_final_response()
    assert [(r.id, r.response) for r in first[-1].function_responses()] == [("toolu_B", {"temp_c": 18})]
    assert requested == [5]
    session = await runner.session_service.get_session(app_name="t", user_id="user", session_id="s")
    assert session is not None
    assert [call.id for _, _, call in unanswered_long_running_calls(session.events)] == ["toolu_A"]

    answer = Content(role="user", parts=[Part.from_function_response("request_approval", {"approved": True}, id="toolu_A")])
    second = await runner.run(answer, session_id="s")
    assert second[-1].text == "done: [{'temp_c': 18}, {'approved': True}]"
    last = agent.model.requests[-1]  # type: ignore[attr-defined]
    _assert_providers_take_it(last)
    assert _shown(last)[-2:] == [
        ("model", ["call toolu_A", "call toolu_B"]),
        ("user", ["toolu_B: {'temp_c': 18}", "toolu_A: {'approved': True}"]),
    ]


async def test_a_long_running_tools_final_result_replaces_its_first_one_right_after_the_call() -> None:
    def script(request: LlmRequest) -> Any:
        done = tool_responses_this_turn(request)
        if not done:
            return function_call_response("open_ticket", {"amount": 5}, id="toolu_A") if len(request.contents) == 1 else text_response("You're welcome.")
        if done[-1].get("status") == "pending":
            return text_response("Ticket T1 opened, waiting.")
        return text_response("Approved.")

    model = ScriptedModel(script)
    runner = InMemoryRunner(LlmAgent(name="w", model=model, tools=[LongRunningFunctionTool(open_ticket)]), app_name="t")
    await runner.run("Approve 5", session_id="s")
    answer = Content(role="user", parts=[Part.from_function_response("open_ticket", {"approved": True}, id="toolu_A")])
    assert (await runner.run(answer, session_id="s"))[-1].text == "Approved."
    # Right after the answer: the answer in place of the first result, and the request ends with it
    # (what the model said meanwhile is left out of this one call, as google-adk does).
    _assert_providers_take_it(model.requests[-1])
    assert _shown(model.requests[-1]) == [
        ("user", ["Approve 5"]),
        ("model", ["call toolu_A"]),
        ("user", ["toolu_A: {'approved': True}"]),
    ]
    await runner.run("Thanks", session_id="s")
    # Later calls show everything, in order, with the answer still right after its call.
    _assert_providers_take_it(model.requests[-1])
    assert _shown(model.requests[-1]) == [
        ("user", ["Approve 5"]),
        ("model", ["call toolu_A"]),
        ("user", ["toolu_A: {'approved': True}"]),
        ("model", ["Ticket T1 opened, waiting."]),
        ("model", ["Approved."]),
        ("user", ["Thanks"]),
    ]


async def test_a_confirmed_long_running_call_with_no_result_yet_ends_the_invocation() -> None:
    requested.clear()
    model = ScriptedModel(lambda r: function_call_response("request_approval", {"amount": 7}, id="toolu_A")
                          if not tool_responses_this_turn(r) else text_response(f"done: {tool_responses_this_turn(r)}"))
    agent = LlmAgent(name="w", model=model, tools=[LongRunningFunctionTool(request_approval, require_confirmation=True)])
    runner = InMemoryRunner(agent, app_name="t")
    asked = await runner.run("Approve 7", session_id="s")
    confirmation = asked[-1].function_calls()[0]
    assert confirmation.name == REQUEST_CONFIRMATION_FUNCTION
    confirm = Content(role="user", parts=[Part.from_function_response(confirmation.name, {"confirmed": True}, id=confirmation.id)])
    await runner.run(confirm, session_id="s")
    assert requested == [7] and len(model.requests) == 1, "the model waits for the approval's result"
    answer = Content(role="user", parts=[Part.from_function_response("request_approval", {"approved": True}, id="toolu_A")])
    assert (await runner.run(answer, session_id="s"))[-1].text == "done: [{'approved': True}]"
    _assert_providers_take_it(model.requests[-1])



async def test_a_confirmation_sent_again_does_not_run_the_confirmed_tool_again() -> None:
    """A client's retry (or a second click) of the same confirmation: the tool ran on the first one."""
    paid: list[int] = []

    def pay(amount: int) -> dict:
        """Pay an amount."""
        paid.append(amount)
        return {"paid": amount}

    def script(request: LlmRequest) -> LlmResponse:
        done = tool_responses_this_turn(request)
        return text_response(f"done {done}") if done else function_call_response("pay", {"amount": 5}, id="c1")

    runner = InMemoryRunner(LlmAgent(name="w", model=ScriptedModel(script),
                                     tools=[FunctionTool(pay, require_confirmation=True)]))  # fmt: skip
    (request,) = (await runner.run("pay 5"))[-1].function_calls()
    assert request.name == REQUEST_CONFIRMATION_FUNCTION and paid == []
    yes = Content(role="user", parts=[Part.from_function_response(request.name, {"confirmed": True}, id=request.id)])
    await runner.run(yes)
    assert paid == [5]
    await runner.run(yes)
    assert paid == [5]
