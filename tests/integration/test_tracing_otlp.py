"""One trace across two processes: a client here, `python worker.py --tracing` exporting with OTLP
(the standard OTEL_* variables) to a receiver in this test."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import aconnect_sse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import ReadableSpan

from adkt.client import AdkClient, connect
from adkt.embedded import TemporalDevServer
from examples import w1
from tests.integration import crash_app
from tests.integration.conftest import DurableStack
from tests.integration.processes import forget_sticky_queues, release
from tests.integration.test_tracing import _exporter

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


class OtlpReceiver:
    """The OTLP/HTTP traces endpoint of a collector, keeping what it receives."""

    def __init__(self) -> None:
        self.spans: list[Any] = []
        self.resources: list[dict[str, Any]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802  (http.server's naming)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest.FromString(body)
                for resource_spans in request.resource_spans:
                    attributes = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
                    receiver.resources.append(attributes)
                    for scope_spans in resource_spans.scope_spans:
                        receiver.spans.extend(scope_spans.spans)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> OtlpReceiver:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as r:
        yield r


def _attributes(span: Any) -> dict[str, Any]:
    values = {}
    for a in span.attributes:
        kind = a.value.WhichOneof("value")
        values[a.key] = getattr(a.value, kind) if kind else None
    return values


def _spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


async def _until(process: subprocess.Popen, says: str, log: Path) -> None:
    for _ in range(600):  # bounded: 60 s on a loaded machine
        if process.poll() is not None:
            pytest.fail(f"{process.args} exited: {log.read_text()}")
        if says in log.read_text():
            return
        await asyncio.sleep(0.1)
    pytest.fail(f"{process.args} did not start in 60 s: {log.read_text()}")


async def _stop(process: subprocess.Popen, log: Path) -> None:
    process.send_signal(signal.SIGINT)  # each process flushes its batched spans as it stops
    code = await asyncio.to_thread(process.wait, 30)
    assert code in (0, 130), log.read_text()


async def test_a_turn_is_one_trace_across_processes(
    durable_stack: DurableStack, temporal_server: TemporalDevServer, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    """Two turns of examples/w1.py on a `python worker.py --tracing` process: one sent by a client in
    this process, one by an HTTP request to `adkt api --tracing` carrying a W3C traceparent."""
    local = _exporter()  # this process's spans (the client's)
    queue, worker_log, api_log = f"adk-otlp-{uuid.uuid4().hex[:6]}", tmp_path / "worker.log", tmp_path / "api.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "ADK_", "OTEL_"))}
    env |= {"PYTHONPATH": str(ROOT), "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100",
            "ADK_TRACING": "1", "ADK_TASK_QUEUE": queue}  # fmt: skip
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        api_port = sock.getsockname()[1]
    worker = _spawn(["worker.py", "--app", "examples.w1:app", "--address", temporal_server.address,
                     "--database-url", durable_stack.database_url], env | {"OTEL_SERVICE_NAME": "w1-worker"},
                    worker_log)  # fmt: skip
    api = _spawn(["-m", "adkt.main", "api", "--app", "w1", "--address", temporal_server.address, "--database-url",
                  durable_stack.database_url, "--port", str(api_port)], env | {"OTEL_SERVICE_NAME": "w1-api"},
                 api_log)  # fmt: skip
    caller_trace, caller_span = uuid.uuid4().hex, uuid.uuid4().hex[:16]
    try:
        await asyncio.gather(_until(worker, "worker for w1", worker_log), _until(api, "HTTP API on", api_log))
        client = await connect(temporal_server.address, namespace=temporal_server.namespace, tracing=True)
        result = await asyncio.wait_for(
            AdkClient(client, task_queue=queue).run_once("w1", "u", uuid.uuid4().hex[:8], w1.USER_MESSAGE), 60
        )
        w1.check_turn(result.events)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{api_port}", timeout=60) as http:
            sent = await http.post(f"/api/v1/apps/w1/users/u/sessions/{uuid.uuid4().hex[:8]}/messages",
                                   json={"text": w1.USER_MESSAGE},
                                   headers={"traceparent": f"00-{caller_trace}-{caller_span}-01"})  # fmt: skip
            assert sent.status_code == 200, sent.text
            assert sent.json()["final_text"] == "done"
            # A streamed turn: sent as the stream is read, after its request's span ended.
            stream_trace = uuid.uuid4().hex
            async with aconnect_sse(http, "POST", f"/api/v1/apps/w1/users/u/sessions/{uuid.uuid4().hex[:8]}/messages/stream",
                                    json={"text": w1.USER_MESSAGE},
                                    headers={"traceparent": f"00-{stream_trace}-{caller_span}-01"}) as source:
                kinds = [sse.event async for sse in source.aiter_sse()]
            assert kinds[0] == "start" and kinds[-1] == "done", kinds
    finally:
        await asyncio.gather(_stop(worker, worker_log), _stop(api, api_log))
    assert {"w1-worker", "w1-api"} == {r.get("service.name") for r in receiver.resources}

    # Through the HTTP API: the request's span continues the caller's trace, and the turn it sends
    # (the SessionWorkflow's update, its model and tool calls on the worker) runs inside it.
    http_trace = [s for s in receiver.spans if s.trace_id == bytes.fromhex(caller_trace)]
    route = "POST /api/v1/apps/{app}/users/{user}/sessions/{session}/messages"
    [request] = [s for s in http_trace if s.name == route]
    assert request.parent_span_id == bytes.fromhex(caller_span)
    assert _attributes(request)["http.response.status_code"] == 200
    http_names = [s.name for s in http_trace]
    assert http_names.count("RunActivity:adk.generate_content") == 4, http_names
    assert http_names.count("generate_content w1-scripted") == 4, http_names
    streamed = [s.name for s in receiver.spans if s.trace_id == bytes.fromhex(stream_trace)]
    assert streamed.count(route + "/stream") == 1, streamed
    assert streamed.count("chat w1-scripted") == 4, streamed

    [start] = [s for s in local.get_finished_spans() if s.name == "StartWorkflow:AgentRunWorkflow"]
    assert isinstance(start, ReadableSpan) and start.context is not None
    trace_id = start.context.trace_id.to_bytes(16, "big")
    spans = [s for s in receiver.spans if s.trace_id == trace_id]
    names = [s.name for s in spans]
    # The worker's spans continue the client's trace: the run's span is a child of the client's start.
    [run] = [s for s in spans if s.name == "RunWorkflow:AgentRunWorkflow"]
    assert run.parent_span_id == start.context.span_id.to_bytes(8, "big")
    assert names.count("RunActivity:adk.generate_content") == 4, names
    assert names.count("RunActivity:adk.run_tool") == 3, names
    # The engine's spans, once each, with the gen_ai attributes.
    models = [s for s in spans if s.name == "generate_content w1-scripted"]
    assert len(models) == 4, names
    assert all(_attributes(s)["gen_ai.request.model"] == "w1-scripted" for s in models)
    # The provider call itself, in each model activity: gen_ai's client span, timed where it ran.
    by_id = {s.span_id: s for s in spans}
    calls = [s for s in spans if s.name == "chat w1-scripted"]
    assert len(calls) == 4, names
    assert all(by_id[s.parent_span_id].name == "RunActivity:adk.generate_content" for s in calls)
    assert all(_attributes(s)["gen_ai.provider.name"] == "scripted" for s in calls)
    assert all(_attributes(s)["adk.attempt"] == 1 for s in calls)
    tools = [_attributes(s)["gen_ai.tool.name"] for s in spans if s.name.startswith("execute_tool ")]
    assert sorted(tools) == ["add", "add", "lookup"], names
    assert any(s.name.startswith("invoke_agent") for s in spans), names
    # One tree: every worker span's parent is a span of this trace (or the client's start).
    known = {s.span_id for s in spans} | {start.context.span_id.to_bytes(8, "big")}
    orphans = [s.name for s in spans if s.parent_span_id not in known]
    assert not orphans, orphans
    # The store's own spans, inside the activities that do them: the session read and the event writes.
    loads = [s for s in spans if s.name == "adk.session.load"]
    appends = [s for s in spans if s.name == "adk.session.append_events"]
    assert loads and all(by_id[s.parent_span_id].name == "RunActivity:adk.load_session" for s in loads), names
    assert appends and all(by_id[s.parent_span_id].name.startswith("RunActivity:adk.") for s in appends), names
    assert sum(_attributes(s)["adk.events.count"] for s in appends) >= 8, names  # W1 stores 8 events
    # The engine's spans nest in the run: model call in agent in invocation in RunWorkflow.

    def ancestors(span: Any) -> list[str]:
        chain = []
        while span.parent_span_id in by_id:
            span = by_id[span.parent_span_id]
            chain.append(span.name)
        return chain

    expected = ["invoke_agent assistant", "invocation", "RunWorkflow:AgentRunWorkflow"]
    assert all(ancestors(s) == expected for s in models), [ancestors(s) for s in models]



async def test_a_worker_killed_mid_turn_leaves_one_trace_with_the_retried_call(
    durable_stack: DurableStack, temporal_server: TemporalDevServer, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    """The worker dies (SIGKILL) inside a model call; the next worker replays the turn and retries the
    call: one trace, one invocation span from the turn's start to its end, the retry as attempt 2.
    Both workers run without a workflow cache: every workflow task replays the history from the start,
    as after an eviction, and the engine's spans still come out once each, around what they cover."""
    markers = tmp_path / "markers"
    markers.mkdir()
    (markers / crash_app.TOOL_MARKER).write_text("pre-set")  # only the model call hangs
    queue, log = f"adk-otlp-crash-{uuid.uuid4().hex[:6]}", tmp_path / "worker.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "ADK_", "OTEL_"))}
    env |= {"PYTHONPATH": str(ROOT), "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100",
            "CRASH_MARKER_DIR": str(markers)}  # fmt: skip
    # crash_app with a 3 s heartbeat timeout: the killed worker's model call is retried sooner.
    args = ["-m", "tests.integration.otlp_worker", temporal_server.address, durable_stack.database_url, queue,
            "tests.integration.crash_app:fast_heartbeat", "no-cache"]  # fmt: skip
    go, second_log = tmp_path / "go", tmp_path / "worker2.log"
    first = _spawn(args, env, log)
    # The fresh worker that takes over after the kill, held (imports done) until then.
    second = _spawn([*args, f"held-until={go}"], env, second_log)
    workflow_id = f"otlp-crash/{uuid.uuid4().hex[:8]}"
    try:
        await _until(first, "worker running", log)
        adk = AdkClient(await connect(temporal_server.address, namespace=temporal_server.namespace, tracing=True),
                        task_queue=queue)  # fmt: skip
        run = asyncio.create_task(adk.run_once(crash_app.app.name, "u", uuid.uuid4().hex[:8], crash_app.USER_MESSAGE,
                                               workflow_id=workflow_id))  # fmt: skip
        for _ in range(600):  # bounded: 60 s
            if (markers / crash_app.MODEL_MARKER).exists():
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail(f"the model call never started: {log.read_text()}")
        await asyncio.sleep(0.5)  # the spans ended so far reach the receiver (batched every 100 ms)
        first.kill()
        first.wait(timeout=10)
        await forget_sticky_queues(adk.client, workflow_id)
        release(second, go, second_log)
        result = await asyncio.wait_for(run, 60)
        assert result.final_text == "done"
    finally:
        if first.poll() is None:
            first.kill()
        if go.exists():
            await _stop(second, second_log)  # flushes its spans
        else:
            second.kill()
            second.wait(timeout=10)
    spans = receiver.spans
    names = [s.name for s in spans]
    assert len({s.trace_id for s in spans}) == 1, "both workers' spans continue the client's trace"
    [invocation] = [s for s in spans if s.name == "invocation"]
    calls = [s for s in spans if s.name == "chat slow-once"]
    # The first worker's call of the hanging attempt died with it; its retry shows as attempt 2.
    attempts = sorted(_attributes(s)["adk.attempt"] for s in calls)
    assert attempts == [1, 1, 2], attempts
    assert invocation.start_time_unix_nano <= min(s.start_time_unix_nano for s in calls)
    assert invocation.end_time_unix_nano >= max(s.end_time_unix_nano for s in calls)
    assert names.count("execute_tool slow_step") == 1 and names.count("execute_tool add") == 1, names
    assert names.count("invoke_agent crasher") == 1, names
    # Each engine model span covers its provider call (the one that lived): started in one workflow
    # task, ended in a later one, on another worker for the retried call.
    models = [s for s in spans if s.name == "generate_content slow-once"]
    assert len(models) == 3, names
    for model in models:
        inside = [c for c in calls if model.start_time_unix_nano <= c.start_time_unix_nano
                  and c.end_time_unix_nano <= model.end_time_unix_nano]  # fmt: skip
        assert len(inside) == 1, (model.start_time_unix_nano, model.end_time_unix_nano)
    assert not [s.name for s in spans if s.status.code == 2], "no span ended in error"  # STATUS_CODE_ERROR
