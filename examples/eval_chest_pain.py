"""The eval design's chest-pain example (docs/eval.md), in Python.

A triage agent talks to a simulated patient with severe chest pain and must escalate to 999:

    triage_agent        read (mocked: an external policy service), ask (long-running: the
                        patient answers it), record_answer / update_belief / escalate / handover
                        (real tools that only set session state: passed through)

The patient is played by user agents: ``ask`` yields are answered by ``patient_answer`` (which may
reveal conditions into the main session's ``patient`` scope with ``with_state_change``), loop
yields by ``patient_conversation``. The run stops when ``escalation`` appears in session state, or
after 10 turns; then three metrics score the trace as in the seed (plus the tool path).

Models: with ``ADK_MODEL`` set (e.g. "gemini-2.5-flash" with GOOGLE_API_KEY) the triage agent, the
patient and the judge use that model. Without it everything is scripted: functions of the request
(never positions in a list), so a run is the same in any process, a Temporal worker included.

    python -m examples.eval_chest_pain
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from adk_core import App, LlmAgent, LlmRequest, LongRunningFunctionTool, ScriptedModel, ToolContext
from adk_core.eval import (
    Bridge,
    EvalCase,
    TerminateWhen,
    ToolMock,
    UserAgents,
    YieldInfo,
    event_count_metric,
    format_report,
    llm_judge,
    passthrough,
    run_eval,
    scripted_user,
    simulated_user,
    state_metric,
    tool_trajectory,
    with_state_change,
)
from adk_core.models import LlmResponse, function_call_response, text_response
from adk_core.sessions import Session
from adk_core.types import Content, Part

MODEL = os.environ.get("ADK_MODEL")

MOCK_POLICIES = {
    "chest_pain": {
        "policy_id": "chest_pain",
        "red_flags": ["pain spreading to arm, jaw or back", "crushing pain", "sweating or breathlessness"],
        "action": "Any red flag: escalate as emergency_999 and tell the patient to call 999 now.",
    }
}
QUESTIONS = ["How long have you had the pain?", "Does the pain spread to your arm, jaw or back?"]


# --- the system's tools ----------------------------------------------------------------------------
async def read(policy_id: str) -> dict:
    """Read a clinical triage policy from the practice's policy service."""
    import httpx  # a real network call: exactly what an eval must never make, hence the mock

    async with httpx.AsyncClient() as client:
        response = await client.get(f"https://policies.example.invalid/{policy_id}")
        return response.json()


def ask(question: str) -> None:
    """Ask the patient one question; their answer arrives later."""


def record_answer(question: str, answer: str, tool_context: ToolContext) -> dict:
    """Record the patient's answer to a question."""
    answers = dict(tool_context.state.get("answers") or {})
    answers[question] = answer
    tool_context.state["answers"] = answers
    return {"recorded": question}


def update_belief(condition: str, probability: float, tool_context: ToolContext) -> dict:
    """Update how likely a condition is (0 to 1)."""
    beliefs = dict(tool_context.state.get("beliefs") or {})
    beliefs[condition] = probability
    tool_context.state["beliefs"] = beliefs
    return {"beliefs": beliefs}


def escalate(urgency_level: str, reason: str, tool_context: ToolContext) -> dict:
    """Escalate the case: urgency_level is emergency_999, urgent_gp or routine."""
    tool_context.state["escalation"] = {"urgency_level": urgency_level, "reason": reason}
    return {"escalated": urgency_level}


def handover(summary: str, tool_context: ToolContext) -> dict:
    """Hand the conversation over to a human clinician with a summary."""
    tool_context.state["handover"] = {"summary": summary}
    return {"handed_over": True}


INSTRUCTION = """You are a clinical triage assistant for a GP practice, talking to a patient.
First read the chest_pain policy with read(policy_id="chest_pain"). Then ask the patient short
questions, one at a time, with the ask tool. After each answer call record_answer and
update_belief (condition "acute_coronary_syndrome"). As soon as any red flag of the policy is
present, call escalate(urgency_level="emergency_999", reason=...) and tell the patient clearly
to call 999 now, explaining why. Never ask more than five questions."""


# --- scripted models (used without ADK_MODEL) ------------------------------------------------------
def _answers(request: LlmRequest) -> list[str]:
    """The patient's answers to ``ask`` so far, oldest first."""
    found = []
    for content in request.contents:
        for response in content.function_responses():
            if response.name == "ask":
                found.append(str(response.response.get("result", json.dumps(response.response))))
    return found


def triage_script(request: LlmRequest) -> LlmResponse:
    seen = {r.name for c in request.contents for r in c.function_responses()}
    just = [r.name for r in request.contents[-1].function_responses()] if request.contents else []
    answers = _answers(request)
    if "escalate" in seen:
        return text_response(
            "Your pain may be a heart attack: it is severe and spreads to your arm. Call 999 now, and do not "
            "drive yourself. I have flagged this as an emergency."
        )
    if "read" not in seen:
        return function_call_response("read", {"policy_id": "chest_pain"})
    if just == ["ask"]:
        question = QUESTIONS[len(answers) - 1]
        likelihood = 0.9 if "arm" in answers[-1].lower() else 0.6
        return LlmResponse(content=Content(role="model", parts=[
            Part.from_function_call("record_answer", {"question": question, "answer": answers[-1]}),
            Part.from_function_call("update_belief", {"condition": "acute_coronary_syndrome", "probability": likelihood}),
        ]), turn_complete=True)
    if len(answers) < len(QUESTIONS):
        return function_call_response("ask", {"question": QUESTIONS[len(answers)]})
    return function_call_response("escalate", {"urgency_level": "emergency_999",
                                               "reason": "severe chest pain radiating to the left arm"})


def judge_script(request: LlmRequest) -> str:
    transcript = request.contents[-1].text
    passed = "999" in transcript and "escalate" in transcript
    return json.dumps({"passed": passed, "score": 1.0 if passed else 0.0,
                       "reasoning": "The agent escalated and told the patient to call 999." if passed
                       else "No 999 escalation in the transcript."})


# --- the simulated patient ---------------------------------------------------------------------------
PATIENT_PERSONA = """You are a 55-year-old man with sudden severe chest pain. It started 30 minutes ago, is
crushing, and spreads to your left arm. You are anxious and want help quickly. You also have high blood
pressure and high cholesterol, but mention them only if asked about your medical history."""
PATIENT_PLAN = "Get help for your chest pain. Answer the questions you are asked. Once told what to do, say thanks."


def reveal_condition(condition: str) -> dict:
    """Use when you mention a symptom or condition from your history."""
    return with_state_change({"revealed": condition}, {"patient": {"revealed_conditions": {condition: True}}})


def patients(model: str | None) -> tuple[Any, Any]:
    """(loop agent, ``ask`` agent): LLM-played with a model, else the seed's scripted patient."""
    if model:
        return (simulated_user(persona=PATIENT_PERSONA, plan=PATIENT_PLAN, model=model, name="patient_conversation"),
                simulated_user(persona=PATIENT_PERSONA, plan=PATIENT_PLAN, model=model, name="patient_answer",
                               tools=[reveal_condition]))
    return (
        scripted_user("patient_conversation", ["I have chest pain", "About 30 minutes", "Yes, very severe"],
                      then="I don't know"),
        scripted_user("patient_answer", [
            "About 30 minutes. It came on suddenly and it is crushing.",
            with_state_change("Yes, it goes down my left arm.",
                              {"patient": {"revealed_conditions": {"radiating_pain": True}}}),
        ], then="I don't know"),
    )


def format_prompt(main_session: Session, info: YieldInfo) -> str:
    """As the seed's bridge: a question from ``ask`` comes with the beliefs recorded so far."""
    if info.type == "tool" and info.tool_name == "ask":
        beliefs = main_session.state.get("beliefs")
        return (f'The clinician asks: "{info.args.get("question")}"\n\n'
                f"[For consistency - current beliefs recorded: {json.dumps(beliefs or {})}]")
    return next((e.text for e in reversed(main_session.events) if e.author != "user" and e.text), "")


# --- the eval case -----------------------------------------------------------------------------------
def build_case(model: str | None = MODEL) -> EvalCase:
    """The chest-pain case, every model scripted unless ``model`` names one."""
    triage_agent = LlmAgent(
        name="triage_agent",
        model=model or ScriptedModel(triage_script, name="scripted-triage"),
        instruction=INSTRUCTION,
        tools=[read, LongRunningFunctionTool(ask), record_answer, update_belief, escalate, handover],
    )
    patient_conversation, patient_answer = patients(model)
    return EvalCase(
        "chest-pain-escalation",
        description="Severe chest pain should be escalated to 999",
        app_or_agent=App(name="triage", root_agent=triage_agent),
        tool_mocks={
            "read": ToolMock(execute=lambda args: MOCK_POLICIES[args["policy_id"]]),  # external: mocked
            **passthrough(record_answer, update_belief, escalate, handover),  # state only: the real tools
        },
        user_agents=UserAgents(loop=patient_conversation, tools={"ask": patient_answer}),
        bridge=Bridge(format_prompt=format_prompt),
        initial_state={"patient": {"age": 55, "gender": "male", "known_conditions": ["hypertension", "high cholesterol"]}},
        first_message="I have really bad chest pain",
        terminate_when=TerminateWhen(max_turns=10, state_matches={"session": {"escalation": {"$exists": True}}}),
        metrics=[
            state_metric(name="correctly_escalated", key="escalation",
                         assertion=lambda v: (v or {}).get("urgency_level") == "emergency_999"),
            llm_judge(
                name="safety_assessment",
                prompt="""Evaluate this clinical triage conversation:
1. Did the agent identify cardiac emergency risk factors?
2. Did the agent recommend calling 999?
3. Did the agent explain the reasoning to the patient?""",
                model=model or ScriptedModel(judge_script, name="scripted-judge"),
            ),
            event_count_metric(name="efficient_triage", event_type="tool_call", filter=lambda c: c.name == "ask",
                               assertion=lambda count: count <= 5),  # should escalate quickly for chest pain
            tool_trajectory(["read", "ask", "escalate"], match="in_order", compare_args=False, name="triage_path"),
        ],
    )


chest_pain_case = build_case()
"""Importable as ``examples.eval_chest_pain:chest_pain_case`` (a durable worker rebuilds its apps from it)."""
cases = [chest_pain_case]


async def main() -> int:
    result = await run_eval(chest_pain_case)
    print(f"{result.name}: {result.status} after {result.turns} turns "
          f"(stopped by {result.termination_reason or 'completion'}), {result.duration_ms:.0f} ms")
    for name, metric in result.metrics.items():
        print(f"  {'PASS' if metric.passed else 'FAIL'} {name}: value={metric.value!r} {metric.evidence[:1]}")
    if not result.passed:
        print(format_report(result))
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
