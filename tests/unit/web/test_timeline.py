"""The timeline of a conversation (adkt/web/api/timeline.py, timeline_history.py): bars from the
events the engine stores, sharpened by a workflow history's activities, retries, continue-as-new and
trace ids."""

from __future__ import annotations

import json

import pytest
from temporalio.api.common.v1 import Payload

from adk_core import InMemorySessionService, Runner
from adk_core.types import Content, Event, Part
from adk_core.types.event import REQUEST_CONFIRMATION_FUNCTION
from adkt.web.api.timeline import build_turns, totals
from adkt.web.api.timeline_history import Activity, ConversationHistory, _named, _trace_id, enrich
from tests.browser import dev_app

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


async def _teller_session() -> list[Event]:
    """dev_app's teller, in process: a balance lookup, send_money asks to be confirmed, the person
    approves in a second invocation, the money is sent and the model answers."""
    runner = Runner(app=dev_app.teller("bank"), session_service=InMemorySessionService())
    session = await runner.session_service.create_session(app_name="bank", user_id="u")
    events = [e async for e in runner.run_async(user_id="u", session_id=session.id, new_message=Content.user("send 50 to Ana"))]
    [question] = [c for e in events for c in e.function_calls() if c.name == REQUEST_CONFIRMATION_FUNCTION]
    approve = Content(role="user", parts=[Part.from_function_response(REQUEST_CONFIRMATION_FUNCTION, {"confirmed": True}, id=question.id)])
    async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=approve):
        pass
    stored = await runner.session_service.get_session(app_name="bank", user_id="u", session_id=session.id)
    assert stored is not None
    return stored.events


async def test_a_turn_with_a_confirmation_is_one_timeline_with_its_wait() -> None:
    events = await _teller_session()
    assert len({e.invocation_id for e in events}) == 2  # the approval runs as an invocation of its own
    [turn] = build_turns(events, now=events[-1].timestamp + 60)
    assert turn.message == "send 50 to Ana" and turn.status == "done" and turn.model_calls == 0  # scripted: no usage
    kinds = [(s.kind, s.name) for s in turn.spans]
    assert kinds == [
        ("agent", "teller"), ("model", "model → get_balance"), ("tool", "get_balance"), ("model", "model → send_money"),
        ("tool", "send_money"), ("wait", "confirm send_money"), ("tool", "send_money"), ("model", "model → answer"),
    ]  # fmt: skip
    agent, wait = turn.spans[0], turn.spans[5]
    assert agent.start <= min(s.start for s in turn.spans) and agent.end == max(s.end for s in turn.spans)
    approved_at = next(e.timestamp for e in events if e.author == "user" and e.function_responses())
    assert (wait.end, wait.open, wait.response) == (approved_at, False, {"confirmed": True})
    lookup = turn.spans[2]
    assert lookup.request == {"account": "checking"} and lookup.response == {"account": "checking", "balance": 1200}
    assert turn.spans[1].request["parts"][0]["text"] == "send 50 to Ana"  # what the model call answered
    assert all(s.end >= s.start for s in turn.spans)


async def test_an_open_question_is_drawn_up_to_now() -> None:
    events = await _teller_session()
    asked = [e for e in events if e.invocation_id == events[0].invocation_id]
    [turn] = build_turns(asked, now=asked[-1].timestamp + 30)
    [wait] = [s for s in turn.spans if s.kind == "wait"]
    assert turn.status == "waiting" and wait.open and wait.end == asked[-1].timestamp + 30


def test_usage_and_cost_per_call_and_in_the_totals() -> None:
    def event(i: int, author: str, content: Content, **fields: object) -> Event:
        return Event(id=f"e{i}", invocation_id="inv", author=author, timestamp=100.0 + i, content=content, **fields)

    usage = {"prompt_token_count": 1000, "candidates_token_count": 50}
    events = [
        event(0, "user", Content.user("hi")),
        event(1, "a", Content.model("hello"), usage_metadata=usage, custom_metadata={"adk_cost_usd": 0.0012}),
        event(2, "a", Content.model("again"), usage_metadata=usage, error_code="MALFORMED", error_message="bad output"),
    ]
    [turn] = build_turns(events, now=200.0)
    first = turn.spans[1]
    assert (first.kind, first.start, first.end, first.input_tokens, first.output_tokens, first.cost_usd) == (
        "model", 100.0, 101.0, 1000, 50, 0.0012)  # fmt: skip
    assert turn.status == "failed" and turn.spans[-1].kind == "error" and turn.spans[-1].error == "bad output"
    assert totals([turn]).model_dump() == {"turns": 1, "model_calls": 2, "tool_calls": 0, "input_tokens": 2000,
                                          "output_tokens": 100, "cost_usd": 0.0012}  # fmt: skip


async def test_the_history_moves_bars_to_their_activities_and_adds_retries_and_continue_as_new() -> None:
    events = await _teller_session()
    [turn] = build_turns(events, now=events[-1].timestamp)
    model, tool = turn.spans[1], turn.spans[2]
    history = ConversationHistory(
        activities=[
            Activity("model", scheduled=model.start + 0.01, started=model.start + 0.02, closed=model.end - 0.001),
            Activity("tool", scheduled=tool.start + 0.001, started=tool.start + 1.5, closed=tool.end + 0.1, attempt=3,
                     failure="connection refused"),
        ],
        continued_as_new=[turn.end + 5],
        # Accepted when the task that began the turn completed (a second later on a busy worker);
        # the person's answer later in the turn came with a trace of its own.
        updates=[(turn.start + 1.0, TRACE), (turn.start + 2.0, "0" * 32)],
    )  # fmt: skip
    enrich([turn], history)
    assert (model.start, model.attempts) == (pytest.approx(history.activities[0].scheduled), 1)
    assert (tool.attempts, tool.error, tool.end) == (3, "connection refused", pytest.approx(history.activities[1].closed))
    retry = turn.spans[turn.spans.index(tool) + 1]  # drawn under its call
    assert (retry.kind, retry.name, retry.depth) == ("retry", "2 failed attempt(s)", tool.depth + 1)
    assert retry.end == pytest.approx(tool.start + 1.5 - 0.001)
    assert turn.spans[-1].kind == "continue_as_new" and turn.end == pytest.approx(history.continued_as_new[0])
    assert turn.trace_id == TRACE
    assert turn.spans[0].end >= tool.end  # the agent's bar still covers its calls


def test_a_trace_id_is_read_from_the_tracing_header_unless_a_codec_hides_it() -> None:
    carrier = {"traceparent": f"00-{TRACE}-00f067aa0ba902b7-01"}
    plain = Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(carrier).encode())
    assert _trace_id(plain) == TRACE
    assert _trace_id(Payload(metadata={"encoding": b"binary/encrypted"}, data=b"\x00")) is None
    assert _trace_id(Payload(metadata={"encoding": b"json/plain"}, data=b'{"traceparent": "garbage"}')) is None
    assert _trace_id(None) is None


async def test_an_activity_goes_to_the_bar_its_summary_names() -> None:
    """A tool that ran in the workflow (transfer_to_agent: no activity) must not take the next
    tool's activity, however close in time: the summary names the agent and tool."""
    events = await _teller_session()
    [turn] = build_turns(events, now=events[-1].timestamp)
    lookup = turn.spans[2]
    other = Activity("tool", scheduled=lookup.start, started=lookup.start, closed=lookup.end)
    _named(other, "teller -> send_money")
    assert (other.agent, other.tool) == ("teller", "send_money") and not other.fits(lookup)
    mine = Activity("tool", scheduled=lookup.start, started=lookup.start, closed=lookup.end)
    _named(mine, "teller -> get_balance")
    assert mine.fits(lookup)
    model = Activity("model", scheduled=turn.spans[1].start, closed=turn.spans[1].end)
    _named(model, "teller: send 50 to Ana (scripted)")
    assert model.agent == "teller" and model.fits(turn.spans[1])
    _named(unnamed := Activity("tool", scheduled=lookup.start, closed=lookup.end), None)  # a codec hid it
    assert unnamed.fits(lookup)
