"""Replay without servers (adk_core.eval.replay): the recorded responses per agent, a replay of an
in-process trial, divergence, judges refused unless allowed; and resuming a stored run's input."""

from __future__ import annotations

import pytest

from adk_core import LlmAgent, LlmRequest, ScriptedModel
from adk_core.eval import EvalCase, ToolMock, llm_judge, metric, run_eval
from adk_core.eval.replay import recorded_responses, replay_case
from adk_core.eval.store import RunRecord
from adk_core.models import LlmResponse, function_call_response, text_response
from adk_temporal.workflows.eval import EvalSuiteInput

calls: list[str] = []


def lookup(key: str) -> dict:
    """Look a key up."""
    raise RuntimeError("mocked")


def _script(request: LlmRequest) -> LlmResponse:
    calls.append("system")
    done = [r.response for c in request.contents for r in c.function_responses()]
    return text_response(f"value {done[-1]['value']}") if done else function_call_response("lookup", {"key": "k"})


def _case(value: int = 2, **fields: object) -> EvalCase:
    return EvalCase("replay-unit", app_or_agent=LlmAgent(name="sys", model=ScriptedModel(_script), tools=[lookup]),
                    tool_mocks={"lookup": ToolMock(execute=lambda args: {"value": value})}, first_message="go",
                    metrics=fields.pop("metrics", [metric("two", lambda t: t.final_response() == "value 2")]),
                    **fields)  # type: ignore[arg-type]  # fmt: skip


async def test_a_replay_answers_from_the_recording_and_sees_a_changed_mock() -> None:
    recorded = await run_eval(_case())
    assert [r.content.function_calls()[0].name if r.content.function_calls() else r.content.text
            for r in recorded_responses(recorded.events)["sys"]] == ["lookup", "value 2"]  # fmt: skip
    before = len(calls)
    again, runtime = await replay_case(_case(), recorded.events)
    assert len(calls) == before and runtime.unused() == {} and runtime.diverged is None
    assert again.status == "passed"
    assert [(e.author, e.text) for e in again.events] == [(e.author, e.text) for e in recorded.events]
    # The mock now answers 3, but the recorded model still says "value 2": the replay keeps the
    # model's words and shows the tool's new result in the trace.
    changed, _ = await replay_case(_case(value=3), recorded.events)
    assert [r.response for e in changed.events for r in e.function_responses()] == [{"value": 3}]
    assert changed.status == "passed" and len(calls) == before


async def test_more_calls_than_recorded_diverge_and_a_judge_is_refused_unless_allowed() -> None:
    recorded = await run_eval(_case())
    short = [e for e in recorded.events if e.text != "value 2"]  # the final answer was never recorded
    result, runtime = await replay_case(_case(), short)
    assert result.status == "error" and result.error is not None and result.error.error_type == "ReplayDivergedError"
    assert runtime.diverged is not None and "asked for model response #2, but the recording has 1 response" in str(runtime.diverged)

    verdict = text_response('{"passed": true, "score": 1, "reasoning": "ok"}')
    judge = llm_judge(name="judged", prompt="Is it right?", model=ScriptedModel(lambda r: verdict))
    judged, runtime = await replay_case(_case(metrics=[judge]), recorded.events)
    assert runtime.diverged is not None and "judges=True" in str(runtime.diverged)
    allowed, runtime = await replay_case(_case(metrics=[judge]), recorded.events, judges=True)
    assert runtime.diverged is None and "judged" in allowed.metrics


def test_resume_of_takes_the_stored_runs_options_and_counts_resumes() -> None:
    run = RunRecord(run_id="r1", suite="m:cases", mode="durable",
                    config={"trials": 3, "max_concurrency": 4, "max_history_events": 900, "resume": 1})  # fmt: skip
    again = EvalSuiteInput.resume_of(run)
    assert (again.suite, again.run_id, again.trials, again.max_concurrency, again.max_history_events, again.resume) == (
        "m:cases", "r1", 3, 4, 900, 2)  # fmt: skip
    assert again.model_calls == "local_activity"  # the default, left out of the stored config
    as_activities = EvalSuiteInput.resume_of(run.model_copy(update={"config": {"model_calls": "activity"}}))
    assert as_activities.model_calls == "activity"  # a resume calls models as the run did
    with pytest.raises(ValueError, match="only durable runs resume"):
        EvalSuiteInput.resume_of(run.model_copy(update={"mode": "in_process"}))
    with pytest.raises(ValueError, match="must be 0"):
        EvalSuiteInput(suite="m", resume=-1)
