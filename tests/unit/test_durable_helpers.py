"""Pure pieces of the durable runtime: the worker's stored-events cache, the resumable tail, and
which events of a commit a followed turn's stream gets."""

from __future__ import annotations

from typing import Any

from adk_core.flow.functions import resumable_tail_start
from adk_core.sessions import GetSessionConfig, InMemorySessionService
from adk_core.types import Content, Event, Part
from adk_temporal.activities._history import StoredEventsCache
from adk_temporal.workflows._turn_stream import TurnStream


def _event(eid: str, author: str = "user", **kw: Any) -> Event:
    return Event(id=eid, author=author, invocation_id="i", timestamp=float(len(eid)), content=Content.user(eid), **kw)


class CountingSessions(InMemorySessionService):
    def __init__(self) -> None:
        super().__init__()
        self.reads: list[GetSessionConfig | None] = []

    async def get_session(self, *, app_name, user_id, session_id, config=None):  # type: ignore[override]
        self.reads.append(config)
        return await super().get_session(app_name=app_name, user_id=user_id, session_id=session_id, config=config)


async def test_cache_reads_only_new_events_and_answers_prefixes_from_memory() -> None:
    sessions = CountingSessions()
    session = await sessions.create_session(app_name="a", user_id="u", session_id="s")
    for eid in ["e1", "e2", "e3"]:
        await sessions.append_event(session, _event(eid))
    cache = StoredEventsCache(sessions)
    key = ("a", "u", "s")
    assert [e.id for e in await cache.through(key, "e3") or []] == ["e1", "e2", "e3"]
    assert [e.id for e in await cache.through(key, "e2") or []] == ["e1", "e2"]
    assert len(sessions.reads) == 1, "a prefix of what is cached needs no read"
    await sessions.append_event(session, _event("e4"))
    assert [e.id for e in await cache.through(key, "e4") or []] == ["e1", "e2", "e3", "e4"]
    assert sessions.reads[-1] is not None and sessions.reads[-1].after_event_id == "e3"
    assert await cache.through(key, "missing") is None


async def test_cache_notices_a_recreated_session() -> None:
    sessions = CountingSessions()
    session = await sessions.create_session(app_name="a", user_id="u", session_id="s")
    await sessions.append_event(session, _event("old"))
    cache = StoredEventsCache(sessions)
    await cache.through(("a", "u", "s"), "old")
    await sessions.delete_session(app_name="a", user_id="u", session_id="s")
    session = await sessions.create_session(app_name="a", user_id="u", session_id="s")
    await sessions.append_event(session, _event("new"))
    assert [e.id for e in await cache.through(("a", "u", "s"), "new") or []] == ["new"]


def test_resumable_tail_starts_at_the_last_agent_event() -> None:
    events = [_event("u1"), _event("a1", "bot"), _event("u2"), _event("a2", "bot"), _event("u3")]
    assert resumable_tail_start(events) == 3
    assert resumable_tail_start([_event("u1")]) == 0


def test_resumable_tail_keeps_calls_still_waiting_for_a_reply() -> None:
    waiting = Event(
        id="lr", author="bot", invocation_id="i",
        content=Content(role="model", parts=[Part.from_function_call("approve", {}, id="c1")]),
        long_running_tool_ids=["c1"],
    )
    events = [_event("u1"), waiting, _event("u2"), _event("a2", "bot")]
    assert resumable_tail_start(events) == 1
    answered = Event(
        id="r", author="user", invocation_id="j",
        content=Content(role="user", parts=[Part.from_function_response("approve", {"ok": True}, id="c1")]),
    )
    assert resumable_tail_start([*events, answered, _event("a3", "bot")]) == 5


async def test_cache_takes_events_the_workflow_says_follow_its_prefix() -> None:
    sessions = CountingSessions()
    session = await sessions.create_session(app_name="a", user_id="u", session_id="s")
    await sessions.append_event(session, _event("e1"))
    cache = StoredEventsCache(sessions)
    key = ("a", "u", "s")
    await cache.through(key, "e1")
    assert cache.extend(key, "e1", [_event("e2"), _event("e3")])
    assert cache.extend(key, "e1", [_event("e2"), _event("e3")]), "a retried activity is fine"
    assert not cache.extend(key, "elsewhere", [_event("e9")])
    assert not cache.extend(key, None, [_event("e9")])
    reads = len(sessions.reads)
    assert [e.id for e in await cache.through(key, "e3") or []] == ["e1", "e2", "e3"]
    assert len(sessions.reads) == reads, "served from the cache"


async def test_durable_sessions_track_what_the_next_commit_follows() -> None:
    from adk_core.sessions import Session
    from adk_temporal.activities.contracts import SessionKey
    from adk_temporal.workflows.services import DurableSessionService

    sessions = DurableSessionService(SessionKey(app_name="a", user_id="u", session_id="s"))
    sessions.stored_through = "e0"
    live = Session(id="s", app_name="a", user_id="u")

    async def append(eid: str) -> None:
        await sessions.append_event(live, _event(eid))

    await append("e1")
    await append("e2")
    short = sessions.take_commits()
    await append("e3")
    long = sessions.take_commits()
    assert sessions.commit_after() == "e0"
    sessions.acknowledge(long)
    assert sessions.commit_after() == "e3" and sessions.unacked == []
    sessions.acknowledge(short)  # a slower, shorter batch coming back later must not move it back
    assert sessions.commit_after() == "e3"
    sessions.stored_elsewhere.add("c1")
    await append("c1")
    assert sessions.commit_after() is None and sessions.unacked == []


async def test_an_answer_its_call_stored_but_never_committed_is_forgotten_at_the_next_flush() -> None:
    from adk_core.sessions import Session
    from adk_temporal.activities.contracts import SessionKey
    from adk_temporal.workflows.services import DurableSessionService

    sessions = DurableSessionService(SessionKey(app_name="a", user_id="u", session_id="s"))
    live = Session(id="s", app_name="a", user_id="u")
    sessions.stored_ahead["a1"] = _event("a1")  # its turn failed before the engine committed it
    await sessions.flush()  # nothing queued: no activity runs
    assert sessions.stored_ahead == {}
    await sessions.append_event(live, _event("a1"))  # committed all the same: stored again, idempotently
    assert [e.id for e in sessions.unacked] == ["a1"]


async def test_cache_evicts_least_recently_used_sessions_past_its_event_budget() -> None:
    sessions = CountingSessions()
    for sid in ("s1", "s2", "s3"):
        session = await sessions.create_session(app_name="a", user_id="u", session_id=sid)
        for i in range(3):
            await sessions.append_event(session, _event(f"{sid}-{i}"))
    cache = StoredEventsCache(sessions, max_events=6)
    for sid in ("s1", "s2", "s3"):
        await cache.through(("a", "u", sid), f"{sid}-2")
    reads = len(sessions.reads)
    await cache.through(("a", "u", "s3"), "s3-2")
    await cache.through(("a", "u", "s2"), "s2-2")
    assert len(sessions.reads) == reads, "the two most recent sessions are still cached"
    await cache.through(("a", "u", "s1"), "s1-2")
    assert len(sessions.reads) == reads + 1, "the oldest was evicted to stay within 6 events"


def test_converter_drops_none_fields_but_keeps_none_values_and_round_trips() -> None:
    from adk_core.models import LlmRequest
    from adk_core.types import EventActions
    from adk_temporal.activities.contracts import ModelCallInput, SessionKey
    from adk_temporal.workflows.converter import adk_data_converter

    event = Event(
        id="e1", author="user", invocation_id="i", timestamp=1.0, content=Content.user("hi"),
        actions=EventActions(state_delta={"deleted": None}),
    )
    call = ModelCallInput(
        app_name="a", agent_name="m", key=SessionKey(app_name="a", user_id="u", session_id="s"),
        request=LlmRequest(model="x"), commit=[event],
    )
    [payload] = adk_data_converter.payload_converter.to_payloads([call])
    assert b"null" not in payload.data.replace(b'"deleted":null', b""), "no None-valued field is sent"
    assert b'"deleted":null' in payload.data, "a None inside a dict is data, not a default"
    [back] = adk_data_converter.payload_converter.from_payloads([payload], [ModelCallInput])
    assert back == call


def test_a_turn_stream_gets_the_commits_events_that_are_the_turns_latest() -> None:
    turn = [_event("call", "a"), _event("result", "a"), _event("answer", "a")]
    stream = TurnStream("conv#m1", turn, InMemorySessionService())
    user = _event("question")
    # The first commit holds the user's message (no event of the turn) before the turn's events.
    target = stream.committed([user, *turn])
    assert target is not None and (target.stream_id, target.first, target.count) == ("conv#m1", 0, 3)
    target = stream.committed([turn[2]])  # the end-of-turn commit; the others rode along earlier
    assert target is not None and (target.first, target.count) == (2, 1)
    assert stream.committed([user]) is None
    assert stream.committed([turn[1]]) is None, "not the turn's latest: its index is not known this way"
    assert stream.committed([]) is None


def test_every_payload_converter_shares_one_table_and_needs_no_serialization_context() -> None:
    from temporalio.converter import DefaultPayloadConverter, WorkflowSerializationContext

    from adk_temporal.workflows.converter import AdkPayloadConverter

    default = DefaultPayloadConverter()
    first, second = AdkPayloadConverter(), AdkPayloadConverter()
    assert first.converters is second.converters and list(first.converters) == list(default.converters)
    context = WorkflowSerializationContext(namespace="n", workflow_id="w")
    assert first.with_context(context) is first  # no component takes a context: nothing to rebuild
    for value in (None, b"raw", {"a": 1}):
        [payload] = first.to_payloads([value])
        assert payload.metadata["encoding"] == default.to_payloads([value])[0].metadata["encoding"]
        assert first.from_payloads([payload]) == [value]


def test_strings_and_models_skip_the_other_converters_and_encode_as_the_composite_would(
    monkeypatch: Any,
) -> None:
    import enum

    from temporalio.api.common.v1 import WorkflowExecution
    from temporalio.common import RawValue
    from temporalio.converter import BinaryNullPayloadConverter, CompositePayloadConverter

    from adk_temporal.activities.contracts import SessionKey
    from adk_temporal.workflows.converter import AdkPayloadConverter

    class Colour(enum.StrEnum):  # a str subclass: the composite's way, as before
        RED = "red"

    fast = AdkPayloadConverter()
    composite = CompositePayloadConverter(*fast.converters.values())
    model = SessionKey(app_name="a", user_id="u", session_id="s")
    raw = composite.to_payloads(["raw"])[0]
    values = [
        "summary", model, None, b"bytes", WorkflowExecution(workflow_id="w"), RawValue(raw), 7, {"k": [1, None]},
        Colour.RED, ["x", model],
    ]
    assert fast.to_payloads(values) == composite.to_payloads(values)  # the same payloads, in order

    asked: list[Any] = []
    probe = BinaryNullPayloadConverter.to_payload
    monkeypatch.setattr(BinaryNullPayloadConverter, "to_payload", lambda self, v: asked.append(v) or probe(self, v))
    fast.to_payloads(["summary", model, None, 7])
    assert asked == [None, 7], "a str or a model goes straight to the JSON converter"
