"""Eval cases the durable eval tests import by reference (workers rebuild them from here).

    app_state_case      a tool counts calls in ``app:`` state; each trial must see a fresh count (1)
    good / bad          the same two case names, once passing and once with ``sums`` failing, for
    / bad_then_fixed    `adkt eval compare` (in-process: one worker must not serve two cases of one name)
    failing             one case whose metric fails, for the CLI's exit code
    stops               a failing case then a passing one, for stop_on_first_failure
    unchecked           a passing case and one without metrics: not evaluated, so the run fails
    unmocked            a case whose system calls a tool without a mock: an ``error`` in phase system
    refused             a case whose model refuses the request; its on_model_error callback falls back
    rescore_metrics     metrics for `adkt eval rescore`: the sum is 3 (the run's own ``right_sum`` wanted 4)
    imported            google-adk's weather eval set with judged criteria (data/judged_test_config.json):
                        two static cases pass, the scenario case is not evaluated on its trajectory

Every model here is a function of the request (a retry or replay answers the same).
"""

from __future__ import annotations

import json
from pathlib import Path

from adk_core import App, LlmAgent, LlmRequest, ScriptedModel, ToolContext
from adk_core.errors import ModelError
from adk_core.eval import (
    END_CONVERSATION,
    EvalCase,
    ToolMock,
    load_adk_eval_set,
    metric,
    passthrough,
    state_metric,
    tool_trajectory,
)
from adk_core.models import LlmResponse, function_call_response, text_response


def _responses(request: LlmRequest) -> list[tuple[str, dict]]:
    return [(r.name, r.response) for c in request.contents for r in c.function_responses()]


# --- app: state isolation -----------------------------------------------------------------------------
def bump(tool_context: ToolContext) -> dict:
    """Count this call in app-wide state."""
    count = int(tool_context.state.get("app:count") or 0) + 1
    tool_context.state["app:count"] = count
    return {"count": count}


def _bump_script(request: LlmRequest) -> LlmResponse:
    done = _responses(request)
    return text_response(f"count is {done[-1][1]['count']}") if done else function_call_response("bump", {})


app_state_case = EvalCase(
    "app-state-isolation",
    app_or_agent=App(name="counter", root_agent=LlmAgent(
        name="counter", model=ScriptedModel(_bump_script, name="scripted-counter"), tools=[bump])),
    tool_mocks=passthrough(bump),
    first_message="count once",
    metrics=[state_metric(name="fresh_app_state", key="count", scope="app", assertion=lambda v: v == 1)],
)


# --- two runs of the same cases, for compare ----------------------------------------------------------
def lookup(key: str) -> dict:
    """Look a key up in an external service."""
    raise RuntimeError("never called in eval: mocked")


system_model_calls: list[int] = []
"""One entry per call of the ``calc`` system model (in this process): `adkt eval rescore` adds none."""


def _sum_script(request: LlmRequest) -> LlmResponse:
    system_model_calls.append(1)
    done = _responses(request)
    if not done:
        return function_call_response("lookup", {"key": "x"})
    return text_response(f"the sum is {done[-1][1]['value'] + 1}")


def _cases(expected_sum: int, greeting: str, prefix: str = "") -> list[EvalCase]:
    def agent() -> LlmAgent:
        return LlmAgent(name="calc", model=ScriptedModel(_sum_script, name="scripted-calc"), tools=[lookup])

    return [
        EvalCase(
            f"{prefix}greets",
            app_or_agent=LlmAgent(name="greeter", model=ScriptedModel(lambda r: text_response("hello there"), name="hi")),
            first_message="hi",
            metrics=[metric("says_hello", lambda trace: greeting in trace.final_response())],
        ),
        EvalCase(
            f"{prefix}sums",
            app_or_agent=agent(),
            tool_mocks={"lookup": ToolMock(execute=lambda args: {"value": 2})},
            first_message="add one to x",
            metrics=[
                metric("right_sum", lambda trace: f"the sum is {expected_sum}" in trace.final_response()),
                tool_trajectory(["lookup"], name="used_lookup"),
            ],
        ),
    ]


good = _cases(expected_sum=3, greeting="hello")
"""Both pass."""
bad = _cases(expected_sum=4, greeting="hello there")
"""``sums`` fails its ``right_sum`` metric; ``greets`` passes."""
bad_then_fixed = _cases(expected_sum=3, greeting="goodbye")
"""``sums`` passes again, ``greets`` fails: against ``bad``, one fix and one regression."""
failing = _cases(expected_sum=4, greeting="hello", prefix="failing-")[1:]
"""``failing-sums`` fails (durable in the CLI test: a name of its own, the worker serves ``good`` too)."""
stops = _cases(expected_sum=3, greeting="goodbye", prefix="stop-")
"""``stop-greets`` fails first (a durable run: names of their own, so one worker can serve them)."""

unchecked = [
    *_cases(expected_sum=3, greeting="hello", prefix="unchecked-")[:1],
    EvalCase(
        "unchecked-no-metrics",
        app_or_agent=LlmAgent(name="greeter", model=ScriptedModel(lambda r: text_response("hello there"), name="hi")),
        first_message="hi",
    ),
]
"""``unchecked-greets`` passes; ``unchecked-no-metrics`` checks nothing, so it is not evaluated."""


def get_weather(city: str) -> dict:
    """Current weather for a city (the eval set's recorded responses answer instead)."""
    raise AssertionError("the eval set's recorded responses answer get_weather")


def _weather_script(request: LlmRequest) -> LlmResponse:
    if request.contents[-1].function_responses():
        w = _responses(request)[-1][1]
        return text_response(f"It is {w['sky']} in {w['city']}, {w['celsius']} degrees.")
    said = [c.text for c in request.contents if c.role == "user" and c.text][-1]
    city = next((c for c in ("Paris", "Rome") if c.lower() in said.lower()), None)
    if city is None:
        return text_response("Hello! Ask me about the weather in any city.")
    return function_call_response("get_weather", {"city": city})


def _judge_script(request: LlmRequest) -> LlmResponse:
    """Agrees when the last agent line names the reference's sky (or there is no reference)."""
    rubric, transcript = (request.contents[-1].text or "").split("\nTranscript:\n", 1)
    last = [line for line in transcript.splitlines() if line.startswith("[weather_agent]")][-1]
    reference = rubric.split("Reference answer:\n", 1)[1] if "Reference answer:\n" in rubric else None
    agrees = reference is None or any(word in reference and word in last for word in ("sunny", "rainy", "Hello"))
    return text_response(json.dumps({"passed": agrees, "reasoning": f"reference: {reference!r}"}))


def _user_script(request: LlmRequest) -> LlmResponse:
    said = [c.text for c in request.contents if c.role == "user" and c.text]
    return text_response("What is the weather in Paris?" if len(said) < 2 else END_CONVERSATION)


imported = load_adk_eval_set(
    Path(__file__).parents[1] / "unit" / "eval" / "data" / "weather.evalset.json",
    LlmAgent(name="weather_agent", model=ScriptedModel(_weather_script, name="scripted-weather"), tools=[get_weather]),
    config_path=Path(__file__).parent / "data" / "judged_test_config.json",
    user_simulator_model=ScriptedModel(_user_script, name="scripted-traveller"),
    judge_model=ScriptedModel(_judge_script, name="scripted-judge"),
)
"""google-adk's weather set with judged criteria: both static cases pass; the scenario case is not evaluated."""


unmocked = [
    EvalCase(
        "unmocked-lookup",
        app_or_agent=LlmAgent(name="calc", model=ScriptedModel(_sum_script, name="scripted-calc"), tools=[lookup]),
        first_message="add one to x",
        metrics=[metric("answers", lambda trace: bool(trace.final_response()))],
    ),
]
"""``lookup`` has no mock, so the trial ends in an EvalToolError (phase ``system``)."""

def _refuse(request: LlmRequest) -> LlmResponse:
    raise ModelError("temperature is not supported with this model", status=400, provider="scripted")


def _fall_back(callback_context, llm_request, error) -> LlmResponse | None:  # noqa: ANN001
    if isinstance(error, ModelError) and error.status == 400:
        return text_response(f"fell back after {error.status}")
    return None  # anything else (not the ModelError the model raised) ends the trial in an error


refused = [
    EvalCase(
        "refused",
        app_or_agent=LlmAgent(name="calc", model=ScriptedModel(_refuse, name="scripted-refusing"),
                              on_model_error_callback=_fall_back),  # fmt: skip
        first_message="add one to x",
        metrics=[metric("fell_back", lambda trace: trace.final_response() == "fell back after 400")],
    ),
]
"""The model refuses the request (a non-retryable ModelError); an on_model_error callback that knows
that error (class and status) answers instead, so the case passes only if the callback got it."""

rescore_metrics = [
    metric("answers", lambda trace: bool(trace.final_response())),
    metric("sum_is_3", lambda trace: "the sum is 3" in trace.final_response() or "hello" in trace.final_response()),
]
"""Both pass on the stored traces of ``bad``, whose ``right_sum`` failed them."""
