"""One trace across two processes: a client here, `python worker.py --tracing` exporting with OTLP
(the standard OTEL_* variables) to a receiver in this test."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import ReadableSpan

from adkt.client import AdkClient, connect
from adkt.embedded import TemporalDevServer
from examples import w1
from tests.integration.conftest import DurableStack
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


async def test_a_turn_is_one_trace_from_the_client_to_the_worker_process(
    durable_stack: DurableStack, temporal_server: TemporalDevServer, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    local = _exporter()  # this process's spans (the client's)
    queue, log = f"adk-otlp-{uuid.uuid4().hex[:6]}", tmp_path / "worker.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "ADK_", "OTEL_"))}
    env |= {"PYTHONPATH": str(ROOT), "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_SERVICE_NAME": "w1-worker", "ADK_TRACING": "1"}  # fmt: skip
    command = [sys.executable, "worker.py", "--app", "examples.w1:app", "--address", temporal_server.address,
               "--database-url", durable_stack.database_url, "--task-queue", queue]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        for _ in range(600):  # bounded: 60 s
            if process.poll() is not None:
                pytest.fail(f"the worker exited: {log.read_text()}")
            if "worker for w1" in log.read_text():
                break
            await asyncio.sleep(0.1)
        else:
            pytest.fail(f"the worker did not start in 60 s: {log.read_text()}")
        client = await connect(temporal_server.address, namespace=temporal_server.namespace, tracing=True)
        result = await asyncio.wait_for(
            AdkClient(client, task_queue=queue).run_once("w1", "u", uuid.uuid4().hex[:8], w1.USER_MESSAGE), 60
        )
        w1.check_turn(result.events)
    finally:
        process.send_signal(signal.SIGINT)  # the worker flushes its batched spans as it stops
        code = await asyncio.to_thread(process.wait, 30)
    assert code == 0, log.read_text()

    [start] = [s for s in local.get_finished_spans() if s.name == "StartWorkflow:AgentRunWorkflow"]
    assert isinstance(start, ReadableSpan) and start.context is not None
    trace_id = start.context.trace_id.to_bytes(16, "big")
    spans = [s for s in receiver.spans if s.trace_id == trace_id]
    names = [s.name for s in spans]
    assert {"w1-worker"} == {r.get("service.name") for r in receiver.resources}
    # The worker's spans continue the client's trace: the run's span is a child of the client's start.
    [run] = [s for s in spans if s.name == "RunWorkflow:AgentRunWorkflow"]
    assert run.parent_span_id == start.context.span_id.to_bytes(8, "big")
    assert names.count("RunActivity:adk.generate_content") == 4, names
    assert names.count("RunActivity:adk.run_tool") == 3, names
    # The engine's spans, once each, with the gen_ai attributes.
    models = [s for s in spans if s.name == "generate_content w1-scripted"]
    assert len(models) == 4, names
    assert all(_attributes(s)["gen_ai.request.model"] == "w1-scripted" for s in models)
    tools = [_attributes(s)["gen_ai.tool.name"] for s in spans if s.name.startswith("execute_tool ")]
    assert sorted(tools) == ["add", "add", "lookup"], names
    assert any(s.name.startswith("invoke_agent") for s in spans), names
    # One tree: every worker span's parent is a span of this trace (or the client's start).
    known = {s.span_id for s in spans} | {start.context.span_id.to_bytes(8, "big")}
    orphans = [s.name for s in spans if s.parent_span_id not in known]
    assert not orphans, orphans
    # The engine's spans nest: model call in agent in invocation, under the client's call. (Workflow
    # code runs in the context Temporal's headers carry, so they sit beside RunWorkflow, not in it.)
    by_id = {s.span_id: s for s in spans}

    def ancestors(span: Any) -> list[str]:
        chain = []
        while span.parent_span_id in by_id:
            span = by_id[span.parent_span_id]
            chain.append(span.name)
        return chain

    assert all(ancestors(s) == ["invoke_agent assistant", "invocation"] for s in models), [ancestors(s) for s in models]
    [invocation] = [s for s in spans if s.name == "invocation"]
    assert invocation.parent_span_id == start.context.span_id.to_bytes(8, "big")

