"""Eval cases whose model answers differently every time it is asked (a real model's way), for the
lost-workflow-task test (test_eval_lost_task.py): ``asked`` counts the answers in this process.

    case                the model answers at once: the whole trial is one workflow task
    after_a_tool        the model calls ``look`` (passed through: an activity, so the task before it is
                        recorded), then answers: the task after the tool is the one lost
"""

from __future__ import annotations

import itertools

from adk_core import LlmAgent, LlmRequest, ScriptedModel
from adk_core.eval import EvalCase, metric, passthrough
from adk_core.models import LlmResponse, function_call_response, text_response

asked = itertools.count(1)


def _answer(request: LlmRequest) -> LlmResponse:
    return text_response(f"answer {next(asked)}")


def _look_then_answer(request: LlmRequest) -> LlmResponse:
    looked = any(c.function_responses() for c in request.contents)
    return _answer(request) if looked else function_call_response("look", {})


def look() -> dict:
    """Look around."""
    return {"seen": "nothing new"}


def _answered(trace) -> bool:  # noqa: ANN001
    return (trace.final_response() or "").startswith("answer ")


case = EvalCase(
    "changing-answers",
    app_or_agent=LlmAgent(name="oracle", model=ScriptedModel(_answer)),
    first_message="what is the answer?",
    metrics=[metric("answered", _answered)],
)

after_a_tool = EvalCase(
    "changing-answers-after-a-tool",
    app_or_agent=LlmAgent(name="oracle", model=ScriptedModel(_look_then_answer), tools=[look]),
    tool_mocks=passthrough(look),
    first_message="look, then tell me the answer",
    metrics=[metric("answered", _answered)],
)
