"""examples/eval_chest_pain.py with its scripted models: it passes, and broken variants of it fail
the way the seed says (an unmocked tool, a missing tool-yield agent, a max_turns stop)."""

from __future__ import annotations

import dataclasses

from adk_core.eval import TerminateWhen, UserAgents, assert_eval_passes, passthrough, run_eval
from examples import eval_chest_pain
from examples.eval_chest_pain import build_case, escalate, handover, record_answer, update_belief

ESCALATED = {"session": {"escalation": {"$exists": True}}}


async def test_the_chest_pain_case_passes_in_process() -> None:
    result = await assert_eval_passes(build_case(model=None))
    assert result.termination_reason == "state_matches" and result.turns == 3  # type: ignore[union-attr]
    assert set(result.metrics) == {"correctly_escalated", "safety_assessment", "efficient_triage", "triage_path"}  # type: ignore[union-attr]
    assert result.metrics["efficient_triage"].value == 2  # type: ignore[union-attr]
    answers = [e for e in result.events if e.author == "user" and e.function_responses()]  # type: ignore[union-attr]
    assert answers[-1].actions.state_delta == {"patient:revealed_conditions": {"radiating_pain": True}}
    assert eval_chest_pain.chest_pain_case.name == "chest-pain-escalation"


async def test_an_unmocked_tool_produces_the_seed_text() -> None:
    case = dataclasses.replace(build_case(model=None), tool_mocks=passthrough(record_answer, update_belief, escalate, handover))
    result = await run_eval(case)
    assert result.status == "error" and result.error is not None and result.error.phase == "system"
    assert result.error.message == (
        "Tool 'read' was called during eval but no mock was provided.\n\n"
        "Add a mock:\n"
        "  tool_mocks={\n"
        '      "read": ToolMock(execute=lambda args, ctx: {...}),\n'
        "  }\n\n"
        "Or if this tool has no side effects, provide the actual tool:\n"
        "  from examples.eval_chest_pain import read\n"
        '  tool_mocks={"read": read}\n\n'
        "Tool was called with args:\n"
        '  {"policy_id": "chest_pain"}'
    )


async def test_a_missing_tool_yield_agent_produces_the_seed_text() -> None:
    case = build_case(model=None)
    case = dataclasses.replace(case, user_agents=UserAgents(loop=case.user_agents.loop))
    result = await run_eval(case)
    assert result.status == "error" and result.error is not None and result.error.phase == "user_agent"
    assert result.error.error_type == "EvalUserAgentError"
    assert result.error.message == (
        "Tool 'ask' yielded but no user agent was provided.\n\n"
        "Add a tool yield agent:\n"
        "  user_agents=UserAgents(\n"
        "      tools={\n"
        '          "ask": LlmAgent(...),\n'
        "      },\n"
        "  )\n\n"
        "Yield occurred with args:\n"
        '  {"question": "How long have you had the pain?"}'
    )


async def test_state_matches_and_max_turns_stop_with_the_right_status_and_reason() -> None:
    reached = await run_eval(build_case(model=None))
    assert (reached.status, reached.termination_reason) == ("passed", "state_matches")
    cut = await run_eval(dataclasses.replace(build_case(model=None),
                                             terminate_when=TerminateWhen(max_turns=2, state_matches=ESCALATED)))
    assert (cut.status, cut.termination_reason, cut.turns) == ("terminated", "max_turns", 2)
    # metrics still ran on the partial trace: no escalation yet, two questions asked
    assert not cut.metrics["correctly_escalated"].passed and cut.metrics["efficient_triage"].value == 2
