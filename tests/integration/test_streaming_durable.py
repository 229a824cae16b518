"""Token streaming under the durable runtime (RunConfig streaming_mode "sse", AdkClient.stream(partial=True)).

A recorded provider stream reaches a durable client as the same partials, in the same places, as
in-process; the committed answer reaches it as soon as it is stored, before the turn's result; a
worker killed mid-stream: the retry's reset and partials leave the client with the right text;
partials stay out of workflow history.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

from adk_core import App, InMemoryRunner, LlmAgent, RunConfig
from adk_core.compaction import EventsCompactionConfig, LlmEventsSummarizer
from adk_core.models import text_response
from adk_core.models.base import LlmRequest, LlmResponse
from adk_core.models.gemini import GeminiModel
from adk_core.sql import migrate, postgres_url
from adk_core.sql.schema import stream_chunks
from adk_core.types import Content, Event
from adk_temporal.activities.streaming import is_stream_reset
from adk_temporal.workflows import session_workflow_id
from adkt.client import AdkClient, connect
from adkt.embedded import TemporalDevServer
from tests.integration import stream_crash_app
from tests.integration.conftest import DurableStack
from tests.integration.processes import forget_sticky_queues, release, worker_script

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PAYLOADS = ROOT / "tests" / "unit" / "models" / "payloads"


def gemini_sse(pieces: list[str]) -> str:
    """A Gemini stream in the recorded format (gemini_stream.sse): one text piece per event."""
    events = []
    for i, piece in enumerate(pieces):
        candidate: dict[str, Any] = {"content": {"parts": [{"text": piece}], "role": "model"}, "index": 0}
        if i == len(pieces) - 1:
            candidate["finishReason"] = "STOP"
        data = {"candidates": [candidate], "modelVersion": "gemini-2.5-flash", "responseId": "r1"}
        events.append(f"data: {json.dumps(data)}\r\n\r\n")
    return "".join(events)


def _gemini(answer: Any) -> GeminiModel:
    """A Gemini model on httpx.MockTransport; ``answer(request_body) -> sse text``."""

    def handler(request: httpx.Request) -> httpx.Response:
        body = answer(json.loads(request.content))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())

    return GeminiModel("gemini-2.5-flash", api_key="k", http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))


def _weather_answer(body: dict) -> str:
    answered = any("functionResponse" in p for c in body["contents"] for p in c.get("parts", []))
    if not answered:
        return (PAYLOADS / "gemini_stream.sse").read_text()  # thought, text pieces, then get_weather
    return gemini_sse(["It is 21", " degrees", " in Paris."])


def get_weather(city: str) -> dict:
    """Current weather for a city."""
    return {"city": city, "temp_c": 21}


def _shape(event: Event) -> tuple:
    parts = event.content.parts if event.content else []
    return (
        event.author, bool(event.partial),
        [(p.text, bool(p.thought), p.function_call.name if p.function_call else None,
          p.function_response.name if p.function_response else None) for p in parts],
    )


def _as_applied(events: list[Event]) -> list[Event]:
    """``events`` as a client that applies resets keeps them: a reset drops the partials since the last
    committed event (one agent here). A loaded machine can retry a model call (a late heartbeat); the
    crash test below checks resets themselves."""
    kept: list[Event] = []
    for event in events:
        if is_stream_reset(event):
            while kept and kept[-1].partial:
                kept.pop()
        else:
            kept.append(event)
    return kept


def _client(stack: DurableStack) -> AdkClient:
    return AdkClient(stack.client.client, task_queue=stack.client.task_queue, database_url=stack.database_url)


async def test_a_recorded_provider_stream_reaches_the_durable_client_as_in_process(durable_stack: DurableStack) -> None:
    app = App(name=f"stream_{uuid.uuid4().hex[:6]}",
              root_agent=LlmAgent(name="weather", model=_gemini(_weather_answer), tools=[get_weather]))
    runner = InMemoryRunner(app=app)
    local = [e async for e in runner.run_async(user_id="u", session_id="s", new_message=Content.user("Paris?"),
                                               run_config=RunConfig(streaming_mode="sse"))]
    durable_stack.register(app)
    durable = [e async for e in _client(durable_stack).stream(app.name, "u", "s", "Paris?", partial=True)]

    durable = _as_applied(durable)
    assert [_shape(e) for e in durable] == [_shape(e) for e in local]
    partials = [e for e in durable if e.partial]
    assert [e.text for e in partials if e.text] == ["Let me check", " the weather in Paris.", "It is 21", " degrees",
                                                    " in Paris."]
    assert all(e.invocation_id == durable[-1].invocation_id for e in partials)
    # Partials are shown, never stored: the session holds the committed events only.
    session = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert session is not None
    assert [e.id for e in session.events[1:]] == [e.id for e in durable if not e.partial]
    # The client deleted the turn's rows once it had the committed events.
    engine = create_async_engine(postgres_url(durable_stack.database_url))
    try:
        async with engine.connect() as conn:
            prefix = session_workflow_id(app.name, "u", "s") + "#"
            left = await conn.scalar(sa.select(sa.func.count()).where(stream_chunks.c.stream_id.startswith(prefix)))
    finally:
        await engine.dispose()
    assert left == 0


class SlowSummarizerModel:
    """A summarizer that takes ``seconds`` to answer."""

    name = "slow-summarizer"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.calls = 0
        self.answered = asyncio.Event()

    async def generate_content(self, request: LlmRequest, *, stream: bool = False) -> AsyncIterator[LlmResponse]:
        self.calls += 1
        await asyncio.sleep(self.seconds)
        self.answered.set()
        yield text_response("They greeted each other.")


async def test_a_streamed_turn_ends_with_its_answer_not_after_the_compaction_it_makes_due(
    durable_stack: DurableStack,
) -> None:
    """The end-of-turn commit reaches the turn's stream, and the stream ends with the turn's result,
    while the 1.5 s compaction the turn makes due is still being written (it runs after the reply).
    Each event once, as stored."""
    summarizer = SlowSummarizerModel(1.5)
    app = App(
        name=f"stream_{uuid.uuid4().hex[:6]}",
        root_agent=LlmAgent(name="greeter", model=_gemini(lambda body: gemini_sse(["Hello", " there."]))),
        events_compaction_config=EventsCompactionConfig(1, summarizer=LlmEventsSummarizer(summarizer)),
    )
    durable_stack.register(app)
    stream = _client(durable_stack).stream(app.name, "u", "s", "hi", partial=True, poll_interval=30.0)
    arrivals = [e async for e in stream]

    assert not summarizer.answered.is_set(), "the turn ended before its compaction"
    committed = [e for e in arrivals if not e.partial]
    assert [e.text for e in committed] == ["Hello there."]
    assert [e.text for e in arrivals if e.partial] == ["Hello", " there."]
    await asyncio.wait_for(summarizer.answered.wait(), timeout=20)
    assert summarizer.calls == 1
    session = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id="s")
    assert session is not None
    assert [e.id for e in session.events if e.author == "greeter"] == [committed[0].id]


async def _history_bytes(stack: DurableStack, workflow_id: str) -> tuple[int, int]:
    """(bytes of the whole history, bytes of the model activity's input and result payloads in it)."""
    history = await stack.client.client.get_workflow_handle(workflow_id).fetch_history()
    model_calls: set[int] = set()
    model_bytes = 0
    for event in history.events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            scheduled = event.activity_task_scheduled_event_attributes
            if scheduled.activity_type.name == "adk.generate_content":
                model_calls.add(event.event_id)
                model_bytes += sum(p.ByteSize() for p in scheduled.input.payloads)
        elif event.HasField("activity_task_completed_event_attributes"):
            completed = event.activity_task_completed_event_attributes
            if completed.scheduled_event_id in model_calls:
                model_bytes += sum(p.ByteSize() for p in completed.result.payloads)
    return len(history.to_json()), model_bytes


async def test_history_bytes_do_not_grow_with_the_number_of_partials(durable_stack: DurableStack) -> None:
    text = "".join(f"{i:04d}" for i in range(500))  # 2,000 characters, streamed in 10 or in 200 pieces

    def split(n: int) -> list[str]:
        size = len(text) // n
        return [text[i:i + size] for i in range(0, len(text), size)]

    model = _gemini(lambda body: gemini_sse(split(int(body["contents"][-1]["parts"][0]["text"]))))
    app = durable_stack.register(App(name=f"history_{uuid.uuid4().hex[:6]}", root_agent=LlmAgent(name="a", model=model)))
    client = _client(durable_stack)
    sizes = {}
    for pieces in (10, 200):
        session = f"pieces-{pieces:03d}"
        events = [e async for e in client.stream(app.name, "u", session, str(pieces), partial=True)]
        assert len([e for e in events if e.partial]) == pieces
        assert events[-1].text == text and not events[-1].partial
        sizes[pieces] = await _history_bytes(durable_stack, session_workflow_id(app.name, "u", session))
    (whole_10, model_10), (whole_200, model_200) = sizes[10], sizes[200]
    # The model call's bytes in history: its input (a reference and the stream target) and its result
    # (the complete answer only). Equal up to the digits of the call's inputs.
    assert model_10 > len(text) and abs(model_200 - model_10) <= 16, sizes
    # The whole history does not grow with the partials either. A partial in history would cost at least
    # one event (over 40 bytes) each, 190 more for 200 pieces; a loaded machine may add a retried task
    # (about 1.5 KB) to either run, which this margin allows.
    assert whole_200 - whole_10 < 190 * 40, sizes


def _start_worker(
    address: str, database_url: str, task_queue: str, marker_dir: Path, log: Path, *,
    held_until: Path | None = None,
) -> subprocess.Popen:  # fmt: skip
    """``python worker.py`` for the app; with ``held_until``, a standby worker
    (tests/integration/standby_worker.py) that imports now and starts once that file exists."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STREAM_MARKER_DIR": str(marker_dir)}
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, *worker_script(held_until), "--app", "tests.integration.stream_crash_app:app", "--address", address,
             "--database-url", database_url, "--task-queue", task_queue],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )


async def _until(condition: Any, worker: subprocess.Popen, log: Path, timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if worker.poll() is not None:
            raise AssertionError(f"worker exited with {worker.returncode}:\n{log.read_text()[-3000:]}")
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out; worker log:\n{log.read_text()[-3000:]}")
        await asyncio.sleep(0.05)


async def test_a_worker_killed_mid_stream_the_client_discards_the_lost_attempts_text(
    temporal_server: TemporalDevServer, database_url: str, tmp_path: Path
) -> None:
    await migrate(database_url)  # the client reads the stream table before the first worker is up
    marker_dir = tmp_path / "markers"
    marker_dir.mkdir()
    log = tmp_path / "worker.log"
    task_queue = f"stream-crash-{uuid.uuid4().hex[:8]}"
    client = AdkClient(await connect(temporal_server.address, namespace=temporal_server.namespace),
                       task_queue=task_queue, database_url=database_url)
    app, session = stream_crash_app.app.name, f"s-{uuid.uuid4().hex[:6]}"
    seen: list[Event] = []

    async def follow() -> None:
        async for event in client.stream(app, "u1", session, "talk", partial=True):
            seen.append(event)

    go = tmp_path / "go"
    # The second is the fresh worker that takes over after the kill, held until then.
    workers = [_start_worker(temporal_server.address, database_url, task_queue, marker_dir, log),
               _start_worker(temporal_server.address, database_url, task_queue, marker_dir, log, held_until=go)]
    try:
        run = asyncio.create_task(follow())
        hang, marker = stream_crash_app.HANG_AFTER, marker_dir / stream_crash_app.MARKER
        # The client can show the fifth word a moment before the model writes its marker and hangs: wait for both.
        await _until(lambda: len([e for e in seen if e.partial]) >= hang and marker.exists(), workers[0], log)
        assert not run.done()
        os.kill(workers[0].pid, signal.SIGKILL)
        workers[0].wait(timeout=10)
        await forget_sticky_queues(client.client, session_workflow_id(app, "u1", session))
        release(workers[1], go, log)
        await asyncio.wait_for(run, timeout=60)
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
            worker.wait(timeout=10)

    words = stream_crash_app.WORDS
    resets = [i for i, e in enumerate(seen) if is_stream_reset(e)]
    assert len(resets) == 1, [(_shape(e), e.custom_metadata) for e in seen]
    before, after = seen[:resets[0]], seen[resets[0] + 1:]
    assert [e.text for e in before] == words[:hang], "the lost attempt's words, shown before the kill"
    assert seen[resets[0]].custom_metadata == {"adk_stream_reset": {"attempt": 2}}
    assert [e.text for e in after if e.partial] == words, "the retry's words, each once"
    # What a client that applies the reset shows equals the one committed answer.
    shown = ""
    for event in seen:
        if is_stream_reset(event):
            shown = ""
        elif event.partial:
            shown += event.text
    final = [e for e in seen if not e.partial]
    assert len(final) == 1 and final[0].text == shown == "".join(words)


async def test_adkt_chat_prints_the_tokens_as_they_arrive_and_the_answer_once(
    durable_stack: DurableStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / stream_crash_app.MARKER).write_text("pre-set: this model does not stop")
    monkeypatch.setenv("STREAM_MARKER_DIR", str(tmp_path))
    monkeypatch.setenv("STREAM_WORD_SECONDS", "0.1")  # 20 words over two seconds
    durable_stack.register(stream_crash_app.app)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ADK_TASK_QUEUE": durable_stack.task_queue}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "adkt.main", "chat", "tests.integration.stream_crash_app:app",
        "--address", durable_stack.address, "--database-url", durable_stack.database_url,
        "--session", f"chat-{uuid.uuid4().hex[:8]}",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        cwd=ROOT, env=env,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(b"talk\n")
    loop = asyncio.get_running_loop()
    output, first_word_at, last_word_at = b"", None, None
    async with asyncio.timeout(90):
        while last_word_at is None:
            data = await process.stdout.read(4096)
            assert data, output.decode()
            output += data
            first_word_at = first_word_at or (loop.time() if b"w0 " in output else None)
            last_word_at = loop.time() if b"w19" in output else None
        process.stdin.write(b"/quit\n")
        rest, _ = await process.communicate()
    text = (output + rest).decode()
    assert process.returncode == 0, text
    assert first_word_at is not None and last_word_at - first_word_at > 1.0, "the first words came before the last"
    assert "streamer: " + "".join(stream_crash_app.WORDS).rstrip() in text, text
    assert text.count("w19") == 1, text
