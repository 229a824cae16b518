"""Replaying one trial of a durable eval run from its recorded model responses (issue 19, item 4b):
the replay reproduces the stored trace and scores without calling a model, a changed callback
shows up in the trace and the scores, and an agent that asks for more than the recording holds
stops the replay with ReplayDivergedError; the CLI prints the same. A trial whose after-model
callback rewrote the model's answer replays from what the model said (the stored event keeps it)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from adk_core import LlmAgent, LlmRequest, ScriptedModel
from adk_core.eval import EvalCase, ToolMock, metric
from adk_core.eval.replay import replay_trial
from adk_core.eval.store import EvalResultStore
from adk_core.models import LlmResponse, function_call_response, text_response
from adk_temporal.workflows.eval import EvalSuiteInput, EvalSuiteRunResult, EvalSuiteWorkflow
from adkt.main import app as cli
from tests.integration import eval_scale_apps as apps
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration


async def _cli(*args: str, database_url: str) -> Result:
    # On a thread: the command runs its own event loop (asyncio.run), which must not be this one.
    env = {"COLUMNS": "200", "NO_COLOR": "1", "ADK_DATABASE_URL": database_url}
    return await asyncio.to_thread(CliRunner().invoke, cli, list(args), env=env)


async def _recorded_run(stack: DurableStack, suite: str = "tests.integration.eval_scale_apps:replayed") -> str:
    run_id = f"replay-{uuid.uuid4().hex[:8]}"
    result = await stack.client.client.execute_workflow(
        EvalSuiteWorkflow.run, EvalSuiteInput(suite=suite, run_id=run_id),
        id=f"adk-eval/{run_id}", task_queue=stack.task_queue, result_type=EvalSuiteRunResult,
    )
    assert [r.status for r in result.results] == ["passed"]
    return run_id


async def test_a_replay_reproduces_the_trial_then_shows_a_changed_callback_and_a_divergence(
    durable_stack: DurableStack,
) -> None:
    run_id = await _recorded_run(durable_stack)
    store = EvalResultStore(durable_stack.database_url)
    try:
        calls = len(apps.replay_calls)
        same = await replay_trial(store, durable_stack.sessions, run_id, apps.replayed)
        assert same.reproduced, (same.diverged, same.trace_changes, same.metric_changes)
        assert len(apps.replay_calls) == calls  # no model was called
        assert {k: (m.passed, m.score) for k, m in same.replayed.metrics.items()} == {
            k: (m.passed, m.score) for k, m in same.recorded.metrics.items()}  # fmt: skip
        assert same.replayed.turns == same.recorded.turns and same.unused_responses == {}

        changed = await replay_trial(store, durable_stack.sessions, run_id, apps.replayed_changed)
        assert changed.diverged is None and not changed.reproduced
        assert changed.metric_changes == {"marked_x": ((True, None), (False, None))}
        assert changed.replayed.status == "failed" and changed.recorded.status == "passed"
        assert any("'changed'" in line for line in changed.trace_changes), changed.trace_changes

        diverged = await replay_trial(store, durable_stack.sessions, run_id, apps.replayed_diverging)
        assert diverged.diverged is not None
        assert "agent 'marker' asked for model response #3, but the recording has 2 responses" in diverged.diverged
        assert diverged.replayed.status == "error" and diverged.replayed.error is not None
        assert diverged.replayed.error.error_type == "ReplayDivergedError"
        assert len(apps.replay_calls) == calls
    finally:
        await store.close()

    db = durable_stack.database_url
    shown = await _cli("eval", "replay", run_id, "--trial", "replayed#0", database_url=db)
    assert shown.exit_code == 0, shown.output
    assert "reproduced the recorded trace and verdicts" in shown.output
    moved = await _cli("eval", "replay", run_id, "--trial", "replayed",
                       "--cases", "tests.integration.eval_scale_apps:replayed_changed", database_url=db)  # fmt: skip
    assert moved.exit_code == 1 and "marked_x" in moved.output and "trace:" in moved.output, moved.output
    bad = await _cli("eval", "replay", run_id, "--trial", "replayed#x", database_url=db)
    assert bad.exit_code != 0 and "give CASE or CASE#N" in bad.output, bad.output


# --- an after-model callback that rewrites the answer (the worker imports these cases by reference) ---
checker_calls: list[int] = []


def look_up(key: str) -> dict:
    """Look a key up."""
    raise RuntimeError("mocked")


def _checker_script(request: LlmRequest) -> LlmResponse:
    checker_calls.append(1)
    done = [r.response for c in request.contents for r in c.function_responses()]
    return text_response(f"value {done[-1]['value']}") if done else function_call_response("look_up", {"key": "x"})


def _mark_checked(callback_context: Any, llm_response: LlmResponse) -> LlmResponse | None:
    """Appends a marker to a text answer: applied to its own output it would append a second one."""
    text = llm_response.content.text if llm_response.content else ""
    return text_response(f"{text} [checked]") if text else None


def _checked_case(after_model: Any) -> EvalCase:
    agent = LlmAgent(name="checker", model=ScriptedModel(_checker_script, name="scripted-checker"), tools=[look_up],
                     after_model_callback=after_model)  # fmt: skip
    return EvalCase("rewritten", app_or_agent=agent, tool_mocks={"look_up": ToolMock(execute=lambda args: {"value": 2})},
                    first_message="look x up", metrics=[metric("checked", lambda t: t.final_response().endswith("[checked]"))])  # fmt: skip


rewritten = _checked_case(_mark_checked)
rewritten_unchecked = _checked_case(None)


async def test_a_trial_whose_after_model_callback_rewrote_the_answer_replays_from_the_models_own(
    durable_stack: DurableStack,
) -> None:
    run_id = await _recorded_run(durable_stack, "tests.integration.test_eval_replay:rewritten")
    store = EvalResultStore(durable_stack.database_url)
    try:
        calls = len(checker_calls)
        same = await replay_trial(store, durable_stack.sessions, run_id, rewritten)
        assert same.reproduced, (same.diverged, same.trace_changes, same.metric_changes)

        unchecked = await replay_trial(store, durable_stack.sessions, run_id, rewritten_unchecked)
        assert unchecked.diverged is None and unchecked.replayed.events[-1].text == "value 2"
        assert unchecked.metric_changes == {"checked": ((True, None), (False, None))}
        assert len(checker_calls) == calls  # no model was called

        detail = await store.get_run(run_id)
        assert detail is not None and detail.trials[0].session is not None
        ref = detail.trials[0].session
        stored = await durable_stack.sessions.get_session(app_name=ref.app_name, user_id=ref.user_id, session_id=ref.session_id)
        assert stored is not None
        answer = stored.events[-1]  # built in the workflow, stored by an activity, read back from Postgres
        assert answer.text == "value 2 [checked]" and answer.callback_response is not None
        assert answer.callback_response.model_response is not None
        assert answer.callback_response.model_response.content is not None
        assert answer.callback_response.model_response.content.text == "value 2"
        assert [e.callback_response for e in stored.events[:-1]] == [None] * (len(stored.events) - 1)
    finally:
        await store.close()
