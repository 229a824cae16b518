"""User agents: loop and tool yields, the shared isolated session, concurrency, the bridge, scripted
and simulated users, and failures with the seed's text."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from eval_fixtures import agent, calls, function_responses, user_texts

from adk_core import BaseAgent, InvocationContext, LlmRequest, LongRunningFunctionTool
from adk_core.agents.base import new_event
from adk_core.eval import (
    END_CONVERSATION,
    Bridge,
    EvalCase,
    LocalCaseHost,
    TerminateWhen,
    UserAgents,
    YieldInfo,
    drive_case,
    run_eval,
    scripted_user,
    simulated_user,
    state_metric,
    with_state_change,
)
from adk_core.models import function_call_response, text_response
from adk_core.types import Content, Event


def ask(question: str) -> None:
    """Ask the user a question; the answer comes later."""


def request_approval(request: str) -> None:
    """Ask for approval; the answer comes later."""


def _asking_system(*questions: str, then: str = "thanks, done") -> Any:
    """Asks each question with the long-running ``ask`` tool, one per turn, then answers ``then``."""

    def script(request: LlmRequest) -> Any:
        answered = [r for n, r in function_responses(request) if n == "ask"]
        if len(answered) < len(questions):
            return function_call_response("ask", {"question": questions[len(answered)]})
        return text_response(f"{then}: {[a.get('result', a) for a in answered]}")

    return agent(script, tools=[LongRunningFunctionTool(ask), LongRunningFunctionTool(request_approval)])


SEED_TEXT = """Tool 'request_approval' yielded but no user agent was provided.

Add a tool yield agent:
  user_agents=UserAgents(
      tools={
          "request_approval": LlmAgent(...),
      },
  )

Yield occurred with args:
  {"request": "Can we proceed with treatment?"}"""


async def test_a_missing_tool_yield_agent_fails_with_the_seed_text() -> None:
    system = agent(lambda r: function_call_response("request_approval", {"request": "Can we proceed with treatment?"}),
                   tools=[LongRunningFunctionTool(request_approval)])
    result = await run_eval(EvalCase("no-agent", app_or_agent=system, first_message="treat me"))
    assert result.status == "error"
    assert result.error is not None and result.error.phase == "user_agent"
    assert result.error.error_type == "EvalUserAgentError"
    assert result.error.message == SEED_TEXT
    assert result.turns == 1


async def test_tool_yields_are_answered_and_the_default_prompt_names_the_tool() -> None:
    patient = scripted_user("patient", ["30 minutes", "my left arm"])
    case = EvalCase("asks", app_or_agent=_asking_system("How long?", "Where?"), first_message="chest pain",
                    user_agents=UserAgents(tools={"ask": patient}))
    host = LocalCaseHost(case)
    result = await drive_case(case, host)
    assert result.status == "not_evaluated" and result.turns == 3
    assert result.events[-1].text == "thanks, done: ['30 minutes', 'my left arm']"
    prompts = [e.text for e in (await host.user_session()).events if e.author == "user"]
    assert prompts == ['Tool: ask\nArgs: {"question": "How long?"}', 'Tool: ask\nArgs: {"question": "Where?"}']


async def test_user_agents_share_one_session_isolated_from_the_main_one() -> None:
    loop = scripted_user("chatty", ["hello again"])
    answerer = scripted_user("answerer", ["fine"])

    def script(request: LlmRequest) -> Any:
        said = user_texts(request)
        if [n for n, _ in function_responses(request)] == [] and said == ["hi"]:
            return function_call_response("ask", {"question": "how are you?"})
        return text_response("noted")

    system = agent(script, tools=[LongRunningFunctionTool(ask)])
    case = EvalCase("shared", app_or_agent=system, first_message="hi", initial_state={"session": {"secret": 1}},
                    user_agents=UserAgents(loop=loop, tools={"ask": answerer}))
    host = LocalCaseHost(case)
    result = await drive_case(case, host)
    assert result.status == "not_evaluated", result.error
    users = await host.user_session()
    assert {e.author for e in users.events} == {"user", "chatty", "answerer"}  # both agents, one session
    assert "secret" not in users.state  # the main session's state is not theirs
    main = await host.main_session()
    assert not {"chatty", "answerer"} & {e.author for e in main.events}
    assert users.app_name != main.app_name


async def test_several_pending_tool_yields_are_answered_concurrently() -> None:
    barrier = asyncio.Barrier(2)

    class Waiting(BaseAgent):
        """Answers only once both answerers are running at the same time."""

        async def _run_async_impl(self, ctx: InvocationContext) -> AsyncIterator[Event]:
            await asyncio.wait_for(barrier.wait(), timeout=5)
            yield new_event(ctx, author=self.name, content=Content.model(f"{self.name} answers"))

    def script(request: LlmRequest) -> Any:
        if function_responses(request):
            return text_response(str(sorted(str(r) for _, r in function_responses(request))))
        return calls(("ask", {"question": "a?"}), ("request_approval", {"request": "b?"}))

    system = agent(script, tools=[LongRunningFunctionTool(ask), LongRunningFunctionTool(request_approval)])
    case = EvalCase("parallel", app_or_agent=system, first_message="go",
                    user_agents=UserAgents(tools={"ask": Waiting(name="one"), "request_approval": Waiting(name="two")}))
    result = await run_eval(case)
    assert result.status == "not_evaluated", result.error
    answer = next(e for e in result.events if e.author == "user" and e.function_responses())
    assert [(r.name, r.response) for r in answer.function_responses()] == [
        ("ask", {"result": "one answers"}), ("request_approval", {"result": "two answers"})]


async def test_the_loop_agent_answers_turn_ends_and_ends_the_conversation() -> None:
    system = agent(lambda r: text_response(f"you said {user_texts(r)[-1]!r}"))
    case = EvalCase("loop", app_or_agent=system, first_message="one",
                    user_agents=UserAgents(loop=scripted_user("human", ["two", "three"])))
    result = await run_eval(case)
    assert result.status == "not_evaluated" and result.turns == 3 and result.termination_reason is None
    assert [e.text for e in result.events if e.author == "user"] == ["one", "two", "three"]


async def test_without_first_message_the_loop_agent_opens() -> None:
    system = agent(lambda r: text_response("hello"))
    opener = scripted_user("opener", lambda prompt, turn: "I need help" if turn == 0 else END_CONVERSATION)
    host_case = EvalCase("opens", app_or_agent=system, user_agents=UserAgents(loop=opener))
    host = LocalCaseHost(host_case)
    result = await drive_case(host_case, host)
    assert result.status == "not_evaluated" and result.events[0].text == "I need help"
    first_prompt = (await host.user_session()).events[0].text
    assert "not started" in first_prompt


async def test_scripted_user_keeps_its_place_in_session_state() -> None:
    system = agent(lambda r: text_response("ok"))
    user = scripted_user("scripted_patient", ["I have chest pain", "About 30 minutes"], then="I don't know")
    case = EvalCase("script", app_or_agent=system, first_message="hi", user_agents=UserAgents(loop=user),
                    terminate_when=TerminateWhen(max_turns=4))
    host = LocalCaseHost(case)
    result = await drive_case(case, host)
    assert [e.text for e in result.events if e.author == "user"] == ["hi", "I have chest pain", "About 30 minutes",
                                                                     "I don't know"]
    assert (await host.user_session()).state["scripted_patient:turn"] == 4
    assert result.status == "terminated" and result.termination_reason == "max_turns"


async def test_a_simulated_user_plays_a_persona_through_a_plan() -> None:
    seen: list[str] = []

    def user_model(request: LlmRequest) -> Any:
        seen.append(request.config.system_instruction or "")
        return "Book me a table for two" if len(user_texts(request)) < 2 else END_CONVERSATION

    user = simulated_user(persona="Ann, 40, impatient.", plan="Book a table for two; then stop.",
                          model=agent(user_model).model)  # type: ignore[arg-type]
    system = agent(lambda r: text_response("What can I do for you?"))
    result = await run_eval(EvalCase("simulated", app_or_agent=system, first_message="hi",
                                     user_agents=UserAgents(loop=user)))
    assert result.status == "not_evaluated" and result.turns == 2
    assert "Ann, 40, impatient." in seen[0] and "Book a table for two; then stop." in seen[0] and END_CONVERSATION in seen[0]


async def test_with_state_change_from_a_user_agents_tool_reaches_the_main_session() -> None:
    def reveal_condition(condition: str) -> dict:
        """Use when revealing a condition from your history."""
        return with_state_change({"revealed": condition}, {"patient": {"revealed_conditions": {condition: True}},
                                                           "session": {"patient_mentioned_condition": True}})

    def patient_script(request: LlmRequest) -> Any:
        done = [r for n, r in function_responses(request) if n == "reveal_condition"]
        if len(done) == len(user_texts(request)):
            return text_response("I have " + " and ".join(r["revealed"] for r in done[-1:]))
        return function_call_response("reveal_condition", {"condition": ["hypertension", "asthma"][len(done)]})

    patient = agent(patient_script, name="patient_answer", tools=[reveal_condition])
    case = EvalCase(
        "reveals", app_or_agent=_asking_system("History?", "Anything else?"), first_message="hi",
        initial_state={"patient": {"revealed_conditions": {"diabetes": True}}},
        user_agents=UserAgents(tools={"ask": patient}),
        metrics=[state_metric(name="all_revealed", scope="patient", key="revealed_conditions",
                              assertion=lambda v: v == {"diabetes": True, "hypertension": True, "asthma": True})],
    )
    result = await run_eval(case)
    assert result.status == "passed", result.metrics
    deltas = [e.actions.state_delta for e in result.events if e.author == "user" and e.actions.state_delta]
    assert deltas[0]["patient:revealed_conditions"] == {"diabetes": True, "hypertension": True}  # deep merge
    assert deltas[0]["patient_mentioned_condition"] is True


async def test_a_custom_bridge_shapes_prompts_and_responses() -> None:
    seen: list[YieldInfo] = []

    def format_prompt(main_session: Any, info: YieldInfo) -> str:
        seen.append(info)
        return f"Q: {info.args['question']} (state {sorted(main_session.state)})"

    async def format_response(output: Any, user_session: Any, info: YieldInfo) -> Any:
        return {"answer": output.upper(), "asked_by": info.tool_name}

    case = EvalCase("bridge", app_or_agent=_asking_system("How long?"), first_message="hi",
                    initial_state={"session": {"k": 1}},
                    user_agents=UserAgents(tools={"ask": scripted_user("p", ["ten minutes"])}),
                    bridge=Bridge(format_prompt=format_prompt, format_response=format_response))
    host = LocalCaseHost(case)
    result = await drive_case(case, host)
    assert result.status == "not_evaluated"
    assert (await host.user_session()).events[0].text == "Q: How long? (state ['k'])"
    answer = next(e for e in result.events if e.author == "user" and e.function_responses())
    assert answer.function_responses()[0].response == {"answer": "TEN MINUTES", "asked_by": "ask"}
    (info,) = seen
    assert info.type == "tool" and info.call_id and info.invocation_id == result.events[0].invocation_id


async def test_a_failing_or_silent_user_agent_is_an_error_naming_it() -> None:
    class Broken(BaseAgent):
        async def _run_async_impl(self, ctx: InvocationContext) -> AsyncIterator[Event]:
            raise RuntimeError("model overloaded")
            yield  # pragma: no cover

    system = agent(lambda r: text_response("hi"))
    broken = await run_eval(EvalCase("broken", app_or_agent=system, first_message="x",
                                     user_agents=UserAgents(loop=Broken(name="broken_user"))))
    assert broken.status == "error" and broken.error is not None and broken.error.phase == "user_agent"
    assert broken.error.message == "user agent 'broken_user' failed on the conversation: model overloaded"
    silent = await run_eval(EvalCase("silent", app_or_agent=system, first_message="x",
                                     user_agents=UserAgents(loop=agent(lambda r: text_response(""), name="mute"))))
    assert silent.status == "error" and silent.error is not None
    assert silent.error.error_type == "EvalUserAgentError" and "gave no answer" in silent.error.message


async def test_structured_user_output_goes_to_the_tool_as_is() -> None:
    approver = scripted_user("approver", [{"approved": True, "note": "go ahead"}])

    def script(request: LlmRequest) -> Any:
        results = [r for n, r in function_responses(request) if n == "request_approval"]
        return text_response(json.dumps(results[-1])) if results else function_call_response(
            "request_approval", {"request": "ok?"})

    system = agent(script, tools=[LongRunningFunctionTool(request_approval)])
    result = await run_eval(EvalCase("structured", app_or_agent=system, first_message="x",
                                     user_agents=UserAgents(tools={"request_approval": approver})))
    assert json.loads(result.events[-1].text) == {"approved": True, "note": "go ahead"}
