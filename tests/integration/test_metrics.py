"""Prometheus metrics, scraped over HTTP as Prometheus would: a worker whose runtime serves them
(Temporal's SDK metrics and ours) after a W1 turn, a failed turn and a pending confirmation; and
`adkt api --metrics-port` while a turn streams."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from httpx_sse import aconnect_sse
from prometheus_client.parser import text_string_to_metric_families
from temporalio.client import Client
from temporalio.runtime import TelemetryConfig

from adk_core import App, LlmAgent, LlmRequest, LlmResponse, ScriptedModel
from adk_core.compaction import EventsCompactionConfig, LlmEventsSummarizer
from adk_core.errors import ModelError
from adk_core.models import UsageMetadata, function_call_response, text_response, tool_responses_this_turn
from adk_core.models.pricing import COST_KEY, ModelPrice, PriceTable, turn_usage
from adk_core.tools import FunctionTool
from adk_temporal.metrics import runtime_with_metrics
from adk_temporal.worker import build_worker
from adk_temporal.workflows import AdkPlugin
from adk_temporal.workflows.eval import EvalSuiteInput, EvalSuiteRunResult, EvalSuiteWorkflow
from adkt.client import AdkClient, TurnFailedError
from adkt.embedded import TemporalDevServer
from examples import w1
from tests.deploy_queries import TEMPORAL_SDK_METRICS, referenced_names
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PRICE = ModelPrice(input=1.0, output=4.0)  # USD per million tokens: round numbers to check against
USAGE = UsageMetadata(prompt_token_count=1000, candidates_token_count=50)
CALL_COST = (1000 * 1.0 + 50 * 4.0) / 1_000_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _priced_w1(request: LlmRequest) -> LlmResponse:
    """W1's script (examples/w1.py), with the usage a provider would report."""
    response = w1.w1_script(request)
    response.usage_metadata = USAGE.model_copy()
    return response


def _refuse(request: LlmRequest) -> LlmResponse:
    raise ModelError("the request is malformed", status=400, retryable=False, provider="scripted",
                     error_type="InvalidRequest")  # fmt: skip


def _confirming(request: LlmRequest) -> Any:
    done = tool_responses_this_turn(request)
    return text_response(f"sent: {done[-1]}") if done else function_call_response("transfer", {"amount": 5})


def transfer(amount: int) -> dict:
    """Send money."""
    return {"sent": amount}


class Held:
    """A tool that runs until the test lets it finish: a turn whose stream stays open meanwhile."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    async def hold(self) -> dict:
        """Wait."""
        self.started.set()
        await asyncio.wait_for(self.release.wait(), 30)
        return {"held": True}


class Metrics:
    def __init__(self, url: str, client: AdkClient, apps: dict[str, App], held: Held, stack: DurableStack) -> None:
        self.url, self.client, self.apps, self.held, self.stack = url, client, apps, held, stack

    async def scrape(self, url: str | None = None) -> dict[tuple[str, frozenset], float]:
        return await scrape(url or self.url)


async def scrape(url: str) -> dict[tuple[str, frozenset], float]:
    """Every sample of the endpoint, by name and labels (``service_name`` left out)."""
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.get(url)
    assert response.status_code == 200, response.text
    samples = {}
    for family in text_string_to_metric_families(response.text):
        for s in family.samples:
            labels = frozenset((k, v) for k, v in s.labels.items() if k != "service_name")
            samples[(s.name, labels)] = s.value
    return samples


def value(samples: dict[tuple[str, frozenset], float], name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels`` (0 when there are none)."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def metrics(durable_stack: DurableStack, temporal_server: TemporalDevServer) -> AsyncIterator[Metrics]:
    """A worker of its own, on a Temporal runtime that serves Prometheus metrics on a free port."""
    port = _free_port()
    runtime = runtime_with_metrics(TelemetryConfig(), port, host="127.0.0.1")
    client = await Client.connect(
        temporal_server.address, namespace=temporal_server.namespace, runtime=runtime, plugins=[AdkPlugin()]
    )
    suffix = uuid.uuid4().hex[:6]
    held = Held()
    apps = {
        "w1": App(name=f"w1_{suffix}", root_agent=LlmAgent(
            name="assistant", model=ScriptedModel(_priced_w1, name="w1-priced"), tools=[w1.add, w1.lookup]),
            # A compaction after every turn (the summary is written in adk.summarize_events).
            events_compaction_config=EventsCompactionConfig(1, 0, summarizer=LlmEventsSummarizer(
                ScriptedModel(lambda r: text_response("they added numbers"))))),
        "broken": App(name=f"broken_{suffix}", root_agent=LlmAgent(
            name="refuser", model=ScriptedModel(_refuse, name="w1-priced"))),
        "confirm": App(name=f"confirm_{suffix}", root_agent=LlmAgent(
            name="banker", model=ScriptedModel(_confirming, name="gpt-4o-mini"),
            tools=[FunctionTool(transfer, require_confirmation=True)])),
        "held": App(name=f"held_{suffix}", root_agent=LlmAgent(
            name="holder", model=ScriptedModel(
                lambda r: text_response("held") if tool_responses_this_turn(r) else function_call_response("hold", {})),
            tools=[held.hold])),
    }  # fmt: skip
    queue = f"adk-metrics-{suffix}"
    # The defaults plus a price for the scripted W1 model: a user's table extends ours.
    prices = PriceTable.default().merged(PriceTable({"w1-priced": PRICE}))
    # No workflow cache: every workflow task replays the history from the start, so a count that
    # replay repeated would show here as more than one turn.
    worker = build_worker(client, list(apps.values()), task_queue=queue, session_service=durable_stack.sessions,
                          prices=prices, max_cached_workflows=0)  # fmt: skip
    run = asyncio.create_task(worker.run())
    try:
        yield Metrics(f"http://127.0.0.1:{port}/metrics", AdkClient(client, task_queue=queue), apps, held,
                      durable_stack)
    finally:
        await asyncio.wait_for(worker.shutdown(), timeout=60)
        await asyncio.wait_for(asyncio.gather(run, return_exceptions=True), timeout=10)


async def test_a_w1_turn_a_failed_turn_and_a_pending_confirmation(metrics: Metrics) -> None:
    w1_app, broken, confirm = (metrics.apps[k].name for k in ("w1", "broken", "confirm"))
    result = await metrics.client.send(w1_app, "u", "s1", w1.USER_MESSAGE)
    w1.check_turn(result.events)
    # Usage and cost are recorded with the turn's events.
    usage = turn_usage(result.events)
    assert (usage.model_calls, usage.input_tokens, usage.output_tokens) == (4, 4000, 200)
    assert usage.cost_usd == pytest.approx(4 * CALL_COST)
    assert all(e.custom_metadata[COST_KEY] == pytest.approx(CALL_COST) for e in result.events if e.usage_metadata)

    with pytest.raises(TurnFailedError):
        await metrics.client.send(broken, "u", "s1", "hello")

    asked = await metrics.client.send(confirm, "u", "s1", "send 5")
    [pending] = await metrics.client.pending(confirm, "u", "s1")
    assert pending.kind == "tool_confirmation" and asked.final_text == ""

    s = await metrics.scrape()
    turn = {"app": w1_app, "agent": "assistant"}
    assert value(s, "adk_turns_started_total", **turn) == 1
    assert value(s, "adk_turns_completed_total", **turn) == 1
    assert value(s, "adk_turns_failed_total", **turn) == 0
    assert value(s, "adk_turn_duration_seconds_count", **turn) == 1
    assert 0 < value(s, "adk_turn_duration_seconds_sum", **turn) < 60
    assert value(s, "adk_turn_cost_usd_sum", **turn) == pytest.approx(4 * CALL_COST)
    # One message, queued behind none.
    assert value(s, "adk_conversation_queued_messages_count", app=w1_app) == 1
    assert value(s, "adk_conversation_queued_messages_sum", app=w1_app) == 0
    model = {"app": w1_app, "agent": "assistant", "provider": "scripted", "model": "w1-priced"}
    assert value(s, "adk_model_calls_total", **model) == 4
    assert value(s, "adk_model_call_errors_total", **model) == 0
    assert value(s, "adk_model_call_duration_seconds_count", **model) == 4
    assert value(s, "adk_model_tokens_total", **model, type="input") == 4000
    assert value(s, "adk_model_tokens_total", **model, type="output") == 200
    assert value(s, "adk_model_call_cost_usd_sum", **model) == pytest.approx(4 * CALL_COST)
    assert value(s, "adk_tool_calls_total", app=w1_app, tool="add") == 2
    assert value(s, "adk_tool_calls_total", app=w1_app, tool="lookup") == 1
    assert value(s, "adk_tool_call_duration_seconds_count", app=w1_app) == 3
    assert value(s, "adk_tool_call_errors_total", app=w1_app) == 0
    assert value(s, "adk_compactions_total", app=w1_app, when="after_invocation") == 1

    # The failed turn: by error type, its one model call failed (not retried: a 400).
    assert value(s, "adk_turns_failed_total", app=broken, agent="refuser", error_type="ModelError") == 1
    assert value(s, "adk_turns_completed_total", app=broken) == 0
    assert value(s, "adk_model_call_errors_total", app=broken, error_type="InvalidRequest") == 1
    assert value(s, "adk_model_calls_total", app=broken) == 1

    # The confirmation: the turn completed, asking a person; priced by the default table (gpt-4o-mini
    # without usage costs nothing, so no cost series for it).
    assert value(s, "adk_turns_completed_total", app=confirm) == 1
    assert value(s, "adk_human_waits_started_total", app=confirm, kind="tool_confirmation") == 1
    assert value(s, "adk_human_waits_answered_total", app=confirm) == 0
    assert value(s, "adk_model_calls_total", app=confirm, model="gpt-4o-mini") == 1
    assert value(s, "adk_model_call_cost_usd_count", app=confirm) == 0
    # The tool's activity ran once, to ask (FunctionTool with require_confirmation).
    assert value(s, "adk_tool_calls_total", app=confirm, tool="transfer") == 1

    # Temporal's own SDK metrics are on the same endpoint, for this worker's task queue.
    queue = metrics.client.task_queue
    assert value(s, "temporal_workflow_task_execution_latency_count", task_queue=queue, workflow_type="SessionWorkflow") > 0
    assert value(s, "temporal_activity_execution_latency_count", task_queue=queue, activity_type="adk.generate_content") >= 6

    # The answer: the wait ends (its age recorded), the tool runs, the turn completes.
    answered = await metrics.client.reply(confirm, "u", "s1", pending.call_id, {"confirmed": True})
    assert answered.final_text == "sent: {'sent': 5}"
    s = await metrics.scrape()
    assert value(s, "adk_human_waits_answered_total", app=confirm, kind="tool_confirmation") == 1
    assert value(s, "adk_human_wait_duration_seconds_count", app=confirm) == 1
    assert value(s, "adk_tool_calls_total", app=confirm, tool="transfer") == 2  # and again, confirmed
    assert value(s, "adk_turns_completed_total", app=confirm) == 2


async def test_eval_trials_are_counted_by_status(metrics: Metrics) -> None:
    """A durable eval suite on the metrics worker (tests/integration/eval_apps.py ``bad``: one case
    passes, one fails); each recorded trial is counted under its status."""
    before = await metrics.scrape()
    run_id, queue = f"m-{uuid.uuid4().hex[:8]}", f"adk-metrics-eval-{uuid.uuid4().hex[:6]}"
    # A worker of its own on the same runtime (so the same endpoint), with its workflow cache.
    worker = build_worker(metrics.client.client, [], task_queue=queue, session_service=metrics.stack.sessions,
                          eval_cases=["tests.integration.eval_apps:bad"])  # fmt: skip
    run = asyncio.create_task(worker.run())
    try:
        suite = await asyncio.wait_for(metrics.client.client.execute_workflow(
            EvalSuiteWorkflow.run, EvalSuiteInput(suite="tests.integration.eval_apps:bad", run_id=run_id),
            id=f"adk-eval/{run_id}", task_queue=queue, result_type=EvalSuiteRunResult,
        ), 60)  # fmt: skip
    finally:
        await asyncio.wait_for(worker.shutdown(), timeout=30)
        await asyncio.gather(run, return_exceptions=True)
    statuses = sorted(r.status for r in suite.results)
    assert statuses == ["failed", "passed"], statuses
    after = await metrics.scrape()
    for status in ("passed", "failed"):
        counted = value(after, "adk_eval_trials_total", status=status) - value(before, "adk_eval_trials_total", status=status)
        assert counted == 1, (status, counted)


def _spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, *args], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=env)


async def _until_ready(process: subprocess.Popen, ready: Any, log: Path) -> None:
    for _ in range(600):  # bounded: 60 s on a loaded machine
        if process.poll() is not None:
            pytest.fail(f"{process.args} exited: {log.read_text()}")
        if await ready():
            return
        await asyncio.sleep(0.1)
    pytest.fail(f"{process.args} did not start in 60 s: {log.read_text()}")


async def _stop(process: subprocess.Popen, log: Path) -> None:
    process.send_signal(signal.SIGINT)
    code = await asyncio.to_thread(process.wait, 30)
    assert code in (0, 130), log.read_text()


async def test_worker_and_api_processes_serve_their_metrics(
    durable_stack: DurableStack, temporal_server: TemporalDevServer, metrics: Metrics, tmp_path: Path
) -> None:
    """The production paths, both processes started at once: `python worker.py --metrics-port`
    (configure_logging's runtime, log forwarding kept) after a W1 turn of examples/w1.py, and
    `adkt api` with ADK_METRICS_PORT while a turn streams."""
    worker_port, api_port, api_metrics = _free_port(), _free_port(), _free_port()
    queue = f"adk-metrics-cli-{uuid.uuid4().hex[:6]}"
    worker_log, api_log = tmp_path / "worker.log", tmp_path / "api.log"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "ADK_"))} | {"PYTHONPATH": str(ROOT)}
    worker = _spawn(["worker.py", "--app", "examples.w1:app", "--address", temporal_server.address,
                     "--database-url", durable_stack.database_url, "--task-queue", queue,
                     "--metrics-port", str(worker_port)], clean, worker_log)  # fmt: skip
    held = metrics.apps["held"].name
    api_env = clean | {"ADK_TASK_QUEUE": metrics.client.task_queue, "ADK_METRICS_PORT": str(api_metrics)}
    api = _spawn(["-m", "adkt.main", "api", "--app", held, "--address", durable_stack.address,
                  "--database-url", durable_stack.database_url, "--port", str(api_port)], api_env, api_log)  # fmt: skip
    base = f"http://127.0.0.1:{api_port}"
    try:
        async def worker_ready() -> bool:
            return "metrics: http://" in worker_log.read_text()

        async def api_ready() -> bool:
            async with httpx.AsyncClient(timeout=5) as http:
                with contextlib.suppress(httpx.TransportError):
                    return (await http.get(base + "/api/v1/apps")).status_code == 200
            return False

        await asyncio.gather(_until_ready(worker, worker_ready, worker_log), _until_ready(api, api_ready, api_log))
        client = AdkClient(durable_stack.client.client, task_queue=queue)
        result = await asyncio.wait_for(client.send("w1", "u", uuid.uuid4().hex[:8], w1.USER_MESSAGE), 60)
        w1.check_turn(result.events)
        w = await scrape(f"http://127.0.0.1:{worker_port}/metrics")

        path = f"/api/v1/apps/{held}/users/u/sessions/{uuid.uuid4().hex[:8]}/messages/stream"
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            assert (await http.get("/api/v1/no-such-route")).status_code == 404
            async with aconnect_sse(http, "POST", path, json={"text": "hold"}) as source:
                events = source.aiter_sse()
                assert (await anext(events)).event == "start"
                await asyncio.wait_for(metrics.held.started.wait(), 30)
                during = await scrape(f"http://127.0.0.1:{api_metrics}/metrics")
                metrics.held.release.set()
                kinds = [sse.event async for sse in events]
        assert kinds[-1] == "done", kinds
        after = await scrape(f"http://127.0.0.1:{api_metrics}/metrics")
    finally:
        await asyncio.gather(_stop(worker, worker_log), _stop(api, api_log))

    assert value(w, "adk_turns_completed_total", app="w1", agent="assistant", task_queue=queue) == 1
    assert value(w, "adk_model_calls_total", app="w1", model="w1-scripted", provider="scripted") == 4
    assert value(w, "adk_model_tokens_total", app="w1") == 0  # W1's scripted model reports no usage
    assert value(w, "adk_tool_calls_total", app="w1", tool="add") == 2
    assert value(w, "adk_tool_calls_total", app="w1", tool="lookup") == 1
    # Temporal's SDK metrics, from the same runtime: not replaced by ours.
    assert value(w, "temporal_activity_execution_latency_count", task_queue=queue) == 7
    assert value(w, "temporal_worker_task_slots_available", task_queue=queue) > 0

    stream = "/api/v1/apps/{app}/users/{user}/sessions/{session}/messages/stream"
    assert value(during, "adk_streams_open", route=stream) == 1
    assert value(after, "adk_streams_open", route=stream) == 0
    assert value(after, "adk_http_requests_total", route="/api/v1/apps", method="GET", status="200") >= 1
    assert value(after, "adk_http_requests_total", route="unmatched", method="GET", status="404") == 1
    assert value(after, "adk_http_requests_total", route=stream, method="POST", status="200") == 1
    assert value(after, "adk_http_request_duration_seconds_count", route="/api/v1/apps") >= 1
    # The API's Temporal client reports through the same runtime (the SDK's own client metrics).
    assert value(after, "temporal_request_total") + value(after, "temporal_long_request_total") > 0


async def test_deploy_dashboard_and_rules_read_what_the_worker_exports(metrics: Metrics) -> None:
    """The Temporal SDK metrics deploy/grafana and deploy/prometheus read are on a real worker's
    endpoint under those names, once a workflow task has failed too (a workflow type no worker
    registered: its tasks fail until it is terminated). Ours are checked against
    adk_temporal/metrics.py (tests/unit/test_deploy_observability.py) and scraped by the tests above."""
    # A turn of its own, so its activities are counted when this test runs alone.
    w1.check_turn((await metrics.client.send(metrics.apps["w1"].name, "u", "deploy", w1.USER_MESSAGE)).events)
    handle = await metrics.client.client.start_workflow(
        "NoSuchWorkflow", id=f"deploy-names-{uuid.uuid4().hex[:6]}", task_queue=metrics.client.task_queue
    )
    try:
        for _ in range(100):  # bounded: 10 s
            names = {name for name, _ in await metrics.scrape()}
            if "temporal_workflow_task_execution_failed_total" in names:
                break
            await asyncio.sleep(0.1)
    finally:
        await handle.terminate(reason="test done")
    assert TEMPORAL_SDK_METRICS <= referenced_names()
    missing = TEMPORAL_SDK_METRICS - names
    assert not missing, f"deploy/ reads Temporal metrics this worker does not export: {sorted(missing)}"
