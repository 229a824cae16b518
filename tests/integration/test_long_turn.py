"""One turn with 1,200 sequential tool calls: it outgrows one workflow run, goes on in a child
workflow that continues-as-new, and no payload or run history gets near Temporal's limits
(docs/durability.md, "Long turns"). The default run proves the same path at a sixth of the size
(200 calls against a run budget of 600 events instead of 4,000: the same number of runs, in 15 s
instead of 90); `pytest -m scale` runs the full size."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from adk_core import App, LlmAgent, LlmRequest, LlmResponse, ScriptedModel
from adk_core.models import function_call_response, text_response, tool_responses_this_turn
from adk_temporal.workflows import agent_run, session, session_workflow_id
from adkt.client import TurnFailedError
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration

PAYLOAD_WARNING = 512 * 1024
RUN_EVENTS_WARNING = 10_240
RUN_BYTES_WARNING = 10 * 1024 * 1024


async def step(i: int) -> dict:
    """Do step i."""
    return {"done": i}


def _script(calls: int) -> Callable[[LlmRequest], LlmResponse]:
    def answer(request: LlmRequest) -> LlmResponse:
        n = len(tool_responses_this_turn(request))
        return function_call_response("step", {"i": n}) if n < calls else text_response(f"done after {n}")

    return answer


@pytest.mark.parametrize(("CALLS", "run_budget"), [
    (200, 600),
    pytest.param(1200, agent_run.TURN_HISTORY_EVENTS, marks=pytest.mark.scale),
])  # fmt: skip
async def test_a_turn_of_many_tool_calls_stays_within_temporals_limits(
    durable_stack: DurableStack, monkeypatch: pytest.MonkeyPatch, CALLS: int, run_budget: int  # noqa: N803
) -> None:
    # The worker runs in this process and the sandbox passes adk_temporal through: its workflows read these.
    monkeypatch.setattr(agent_run, "TURN_HISTORY_EVENTS", run_budget)
    monkeypatch.setattr(session, "TURN_HISTORY_EVENTS", run_budget)
    app = durable_stack.register(App(
        name=f"long_{uuid.uuid4().hex[:6]}",
        root_agent=LlmAgent(name="worker", model=ScriptedModel(_script(CALLS)), tools=[step]),
    ))
    result = await durable_stack.client.send(app.name, "u1", "s1", "go", max_llm_calls=CALLS + 5)
    assert result.final_text == f"done after {CALLS}"
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u1", session_id="s1")
    assert stored is not None
    # The user message, then one call and one result per step, then the answer; each exactly once.
    assert len(stored.events) == 1 + 2 * CALLS + 1
    assert len({e.id for e in stored.events}) == len(stored.events)
    assert [r.response for e in stored.events for r in e.function_responses()] == [{"done": i} for i in range(CALLS)]
    assert result.events[-1].text == f"done after {CALLS}"
    assert result.events_omitted + len(result.events) == 2 * CALLS + 1  # every event but the user's, counted
    # The events left out are the oldest: the result holds the turn's newest, in order, none twice.
    assert [e.id for e in result.events] == [e.id for e in stored.events[1 + result.events_omitted:]]

    client = durable_stack.client.client
    conversation = session_workflow_id(app.name, "u1", "s1")
    runs = []
    async for execution in client.list_workflows(f'WorkflowId STARTS_WITH "{conversation}"'):
        history = await client.get_workflow_handle(execution.id, run_id=execution.run_id).fetch_history()
        events = list(history.events)
        runs.append((execution.id, len(events), history.to_json().encode(), max(e.ByteSize() for e in events)))
    assert len(runs) >= 3, "the turn should have outgrown one run: the conversation, then the child's runs"
    for workflow_id, count, raw, largest in runs:
        assert count < min(RUN_EVENTS_WARNING / 2, run_budget + 100), (workflow_id, count)
        assert len(raw) < RUN_BYTES_WARNING / 2, (workflow_id, len(raw))
        assert largest < PAYLOAD_WARNING, (workflow_id, largest)


async def test_a_long_turn_failing_in_its_child_says_why(durable_stack: DurableStack, monkeypatch: pytest.MonkeyPatch) -> None:
    """The child that finishes a long turn fails with the turn's own reason, and the sender hears that
    reason (here: the model call limit, and how to raise it), not that a child workflow failed."""
    monkeypatch.setattr(agent_run, "TURN_HISTORY_EVENTS", 600)
    monkeypatch.setattr(session, "TURN_HISTORY_EVENTS", 600)
    app = durable_stack.register(App(
        name=f"long_{uuid.uuid4().hex[:6]}",
        root_agent=LlmAgent(name="worker", model=ScriptedModel(_script(200)), tools=[step]),
    ))
    with pytest.raises(TurnFailedError) as failed:
        await durable_stack.client.send(app.name, "u1", "s1", "go", max_llm_calls=120)  # the child goes past 120
    assert failed.value.error_type == "LlmCallsLimitExceededError", failed.value
    assert "max_llm_calls" in failed.value.reason and "Child Workflow" not in str(failed.value)
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u1", session_id="s1")
    assert stored is not None and stored.events[-1].error_code == "LlmCallsLimitExceededError"


async def test_streaming_a_long_turn_yields_each_event_once_in_order(
    durable_stack: DurableStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client streaming a turn whose child continued as new is given each event once, in the
    store's order (the events the result leaves out are skipped, not repeated)."""
    monkeypatch.setattr(agent_run, "TURN_HISTORY_EVENTS", 600)
    monkeypatch.setattr(session, "TURN_HISTORY_EVENTS", 600)
    app = durable_stack.register(App(
        name=f"long_stream_{uuid.uuid4().hex[:6]}",
        root_agent=LlmAgent(name="worker", model=ScriptedModel(_script(200)), tools=[step]),
    ))
    streamed = [e async for e in durable_stack.client.stream(app.name, "u1", "s1", "go")]
    assert streamed[-1].text == "done after 200"
    stored = await durable_stack.sessions.get_session(app_name=app.name, user_id="u1", session_id="s1")
    assert stored is not None
    order = {e.id: i for i, e in enumerate(stored.events)}
    positions = [order[e.id] for e in streamed]
    assert positions == sorted(set(positions)), "an event streamed twice or out of order"
