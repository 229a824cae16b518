"""Streaming metrics (adk_core.eval.streaming): watchers see each event with the runtime's clock as the
run goes; their values land in EvalResult.measurements, are averaged over trials and cases, survive a
stored trial, are compared between runs, and never decide whether a case passed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from adk_core import LlmAgent, LlmRequest, ScriptedModel
from adk_core.errors import ConfigurationError
from adk_core.eval import EvalCase, EvalResult, ToolMock, combine_trials, metric, run_eval
from adk_core.eval.results import summarize
from adk_core.eval.store import RunDetail, RunRecord, TrialRecord, compare_runs
from adk_core.eval.streaming import (
    EventWatcher,
    Watchers,
    combine_measurements,
    cost_usd,
    flatten_measurements,
)
from adk_core.models import LlmResponse, function_call_response, text_response
from adk_core.models.base import UsageMetadata
from adk_core.models.pricing import COST_KEY
from adk_core.types import Content, Event, Part

MOCK_S = 0.05


def _event(author: str, *, text: str = "", call: str | None = None, response: str | None = None,
           usage: dict | None = None, **fields: Any) -> Event:  # fmt: skip
    parts = [Part(text=text)] if text else []
    if call:
        parts.append(Part.from_function_call(call, {}, id=f"id-{call}"))
    if response:
        parts.append(Part.from_function_response(response, {"ok": True}, id=f"id-{response}"))
    return Event(author=author, content=Content(role="model" if not response else "user", parts=parts),
                 usage_metadata=usage, **fields)  # fmt: skip


def test_watchers_time_each_event_with_the_runtime_clock() -> None:
    now = [100.0]
    watchers = Watchers([m for m in EvalCase.__dataclass_fields__["streaming_metrics"].default], lambda: now[0])
    watchers.turn_start()
    now[0] = 100.2
    watchers.see(_event("agent", call="lookup", usage={"prompt_token_count": 10, "candidates_token_count": 2},
                        model_version="gemini-2.5-flash"))  # fmt: skip
    now[0] = 100.5
    watchers.see(_event("agent", response="lookup"))
    now[0] = 100.6
    watchers.see(_event("agent", text="done", partial=True))  # the first text, streamed
    now[0] = 100.9
    watchers.see(_event("agent", text="done", usage={"prompt_token_count": 20, "candidates_token_count": 3},
                        custom_metadata={COST_KEY: 0.5}))  # fmt: skip
    values = watchers.values()
    assert values["time_to_first_response_ms"] == pytest.approx(600.0)
    assert values["tool_latency_ms"] == {"lookup": {"calls": 1, "mean_ms": pytest.approx(300.0), "max_ms": pytest.approx(300.0)}}
    assert values["tokens"] == {"input": 30, "output": 5, "model_calls": 2}
    # The durable activity's recorded cost wins; else the price table by model_version.
    flash = 10 * 0.30 / 1e6 + 2 * 2.50 / 1e6
    assert values["cost_usd"] == pytest.approx(0.5 + flash)


def test_a_watcher_that_raises_records_its_error_and_the_others_go_on() -> None:
    class Broken(EventWatcher):
        def on_event(self, event: Event, at: float) -> None:
            raise RuntimeError("boom")

        def value(self) -> Any:
            return 1

    class BrokenMetric:
        name = "broken"

        def watch(self) -> EventWatcher:
            return Broken()

    watchers = Watchers([BrokenMetric(), cost_usd()], lambda: 0.0)
    watchers.see(_event("agent", text="hi", usage={"prompt_token_count": 1}, model_version="no-such-model"))
    assert watchers.values() == {"broken": {"error": "RuntimeError: boom"}, "cost_usd": None}


def lookup(key: str) -> dict:
    """Look a key up."""
    raise RuntimeError("mocked")


async def _slow_mock(args: dict) -> dict:
    await asyncio.sleep(MOCK_S)
    return {"value": 1}


def _script(request: LlmRequest) -> LlmResponse:
    if not any(c.function_responses() for c in request.contents):
        return function_call_response("lookup", {"key": "k"})
    usage = UsageMetadata(prompt_token_count=100, candidates_token_count=10)
    return text_response("value 1").model_copy(update={"usage_metadata": usage, "model_version": "gpt-4o-mini"})


def _case(**fields: Any) -> EvalCase:
    return EvalCase("streamed", app_or_agent=LlmAgent(name="a", model=ScriptedModel(_script), tools=[lookup]),
                    tool_mocks={"lookup": ToolMock(execute=_slow_mock)}, first_message="go", **fields)  # fmt: skip


async def test_an_in_process_trial_measures_latency_tokens_and_cost_without_deciding_its_status() -> None:
    result = await run_eval(_case(trials=2))
    assert result.status == "not_evaluated"  # measurements are not metrics: nothing checked the case
    for trial in result.trials:
        m = trial.measurements
        assert m["tool_latency_ms"]["lookup"]["calls"] == 1 and m["tool_latency_ms"]["lookup"]["mean_ms"] >= MOCK_S * 1000
        assert m["time_to_first_response_ms"] >= MOCK_S * 1000  # the text came after the tool
        assert m["tokens"] == {"input": 100, "output": 10, "model_calls": 1}
        assert m["cost_usd"] == pytest.approx(100 * 0.15 / 1e6 + 10 * 0.60 / 1e6)
    assert result.measurements["tokens"] == {"input": 100, "output": 10, "model_calls": 1}  # the mean per trial
    stored = TrialRecord.from_result(result.trials[0])
    assert TrialRecord.model_validate_json(stored.model_dump_json()).to_result().measurements == result.trials[0].measurements


async def test_a_case_names_its_own_streaming_metrics() -> None:
    result = await run_eval(_case(streaming_metrics=[cost_usd()], metrics=[metric("ok", lambda t: True)]))
    assert list(result.measurements) == ["cost_usd"] and result.status == "passed"
    with pytest.raises(ConfigurationError, match="streaming_metrics must be StreamingMetrics"):
        _case(streaming_metrics=[cost_usd(), cost_usd()])


def test_measurements_average_over_trials_and_cases_and_compare_between_runs() -> None:
    one = EvalResult(name="c", status="passed", trial=0, measurements={"ttfr": 100.0, "tools": {"t": {"mean_ms": 10.0}}})
    two = EvalResult(name="c", status="passed", trial=1, measurements={"ttfr": 300.0, "tools": {"t": {"mean_ms": 30.0}}})
    assert combine_trials([one, two]).measurements == {"ttfr": 200.0, "tools": {"t": {"mean_ms": 20.0}}}
    assert combine_measurements([{"cost": None}, {"cost": 2.0}]) == {"cost": 2.0}
    assert summarize([combine_trials([one, two]), one]).measurements["ttfr"] == 150.0
    assert flatten_measurements({"tools": {"t": {"mean_ms": 1, "calls": 2}}, "x": "text"}) == {
        "tools.t.mean_ms": 1.0, "tools.t.calls": 2.0}  # fmt: skip

    def run(run_id: str, ttfr: float) -> RunDetail:
        trial = TrialRecord(case_name="c", status="passed", measurements={"ttfr": ttfr})
        return RunDetail(run=RunRecord(run_id=run_id, suite="s", mode="durable"), trials=[trial])

    (change,) = compare_runs(run("a", 100.0), run("b", 250.0))
    assert [(m.name, m.before, m.after) for m in change.measurements] == [("ttfr", 100.0, 250.0)]
