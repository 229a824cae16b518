"""The HTTP API (adkt/web/api) on a real uvicorn server, over the durable stack: real Temporal, real
Postgres. Every endpoint, the SSE stream, a confirmation and a long-running tool answered through
the API, and the 4xx answers to bad input."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import pytest_asyncio
from httpx_sse import aconnect_sse
from temporalio.service import RPCError, RPCStatusCode

from adk_core import App, Content, LlmAgent, LlmRequest, LlmResponse, ScriptedModel
from adk_core.errors import ModelError
from adk_core.eval.metrics import MetricResult
from adk_core.eval.results import EvalSummary
from adk_core.eval.store import CaseRecord, EvalResultStore, RunRecord, TrialRecord
from adk_core.models import text_response
from adk_temporal.workflows import session_workflow_id
from adkt.client import AdkClient
from adkt.web.api.backend import ApiBackend
from adkt.web.api.endpoints import ENDPOINTS
from adkt.web.api.models import AppInfo, ErrorBody
from adkt.web.api.routes import Sse
from adkt.web.api.sse import with_keepalive
from adkt.web.serve import serving
from tests.browser import dev_app
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _unique(name: str) -> str:
    return f"{name}_{uuid.uuid4().hex[:6]}"


def _broken_app(name: str) -> App:
    def refuse(request: LlmRequest) -> Any:
        raise ModelError("the provider refused the request (400)", status=400, provider="scripted")

    return App(name=name, root_agent=LlmAgent(name="broken", model=ScriptedModel(refuse)))


class _Words:
    """A model that streams its answer word by word (partial responses), then the whole text."""

    name = "words"

    async def generate_content(self, request: LlmRequest, *, stream: bool = False) -> AsyncIterator[LlmResponse]:
        if stream:
            for word in WORDS:
                yield LlmResponse(content=Content.model(word), partial=True)
        yield text_response("".join(WORDS))


WORDS = ["Durable ", "agents ", "stream ", "too."]


class Api:
    def __init__(
        self, http: httpx.AsyncClient, backend: ApiBackend, teller: str, helpdesk: str, broken: str, words: str
    ) -> None:
        self.http, self.backend = http, backend
        self.teller, self.helpdesk, self.broken, self.words = teller, helpdesk, broken, words

    def session(self, app: str, user: str, session: str, rest: str = "") -> str:
        return f"/api/v1/apps/{quote(app, safe='')}/users/{quote(user, safe='')}/sessions/{quote(session, safe='')}{rest}"


@pytest_asyncio.fixture(loop_scope="session")
async def api(durable_stack: DurableStack) -> AsyncIterator[Api]:
    teller = durable_stack.register(dev_app.teller(_unique("api_teller"))).name
    helpdesk = durable_stack.register(dev_app.helpdesk(_unique("api_helpdesk"))).name
    broken = durable_stack.register(_broken_app(_unique("api_broken"))).name
    words = durable_stack.register(App(name=_unique("api_words"), root_agent=LlmAgent(name="poet", model=_Words()))).name
    backend = ApiBackend.open(
        durable_stack.client, durable_stack.database_url,
        apps=[AppInfo(name=teller), AppInfo(name=helpdesk), AppInfo(name=broken), AppInfo(name=words)],
        temporal_ui="http://localhost:8233/",
    )  # fmt: skip
    try:
        async with serving(None, port=0, api=backend, page=False) as url:
            async with httpx.AsyncClient(base_url=url, timeout=60) as http:
                yield Api(http, backend, teller, helpdesk, broken, words)
    finally:
        await backend.close()


def _error(response: httpx.Response, status: int, kind: str | None = None) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "message"}, body
    if kind is not None:
        assert body["error"] == kind, body
    return body["message"]


async def test_openapi_documents_every_route_and_resolves(api: Api) -> None:
    schema = (await api.http.get("/api/v1/openapi.json")).json()
    documented = {(method.upper(), path) for path, ops in schema["paths"].items() for method in ops}
    assert documented == {(e.method, "/api/v1" + e.path) for e in ENDPOINTS}
    refs = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "$ref" in node:
                refs.add(node["$ref"].rsplit("/", 1)[-1])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    assert refs and refs <= set(schema["components"]["schemas"]), refs - set(schema["components"]["schemas"])
    stream = schema["paths"]["/api/v1/apps/{app}/users/{user}/sessions/{session}/messages/stream"]["post"]
    assert set(stream["x-sse-events"]) == {"start", "event", "partial", "done", "error"}
    assert (await api.http.get("/")).json()["openapi"] == "/api/v1/openapi.json"


async def test_apps(api: Api) -> None:
    body = (await api.http.get("/api/v1/apps")).json()
    assert [a["name"] for a in body["apps"]] == [api.teller, api.helpdesk, api.broken, api.words]
    assert body["temporal_ui"] == "http://localhost:8233"
    assert body["simulator_page"] is None


async def test_session_lifecycle(api: Api) -> None:
    base = f"/api/v1/apps/{api.teller}/users/ana/sessions"
    created = await api.http.post(base, json={"session_id": "s/1", "state": {"color": "blue", "user:tier": "gold"}})
    assert created.status_code == 201, created.text
    session = created.json()
    assert session["session_id"] == "s/1" and session["state"]["color"] == "blue"
    assert session["workflow_id"] == f"adk-session/{api.teller}/ana/s%2F1"
    assert session["workflow_url"] == (
        "http://localhost:8233/namespaces/default/workflows/" + quote(session["workflow_id"], safe="")
    )
    _error(await api.http.post(base, json={"session_id": "s/1"}), 409, "AlreadyExistsError")
    random_id = (await api.http.post(base, json={})).json()["session_id"]
    assert random_id and random_id != "s/1"

    path = api.session(api.teller, "ana", "s/1")
    got = (await api.http.get(path)).json()
    assert got["state"] == {"color": "blue", "user:tier": "gold"} and got["events"] == []
    listed = (await api.http.get(f"/api/v1/apps/{api.teller}/sessions", params={"user_id": "ana"})).json()
    assert {s["session_id"] for s in listed["sessions"]} == {"s/1", random_id}
    assert (await api.http.get(f"/api/v1/apps/{api.teller}/sessions", params={"user_id": "bo"})).json() == {"sessions": []}

    deleted = await api.http.delete(path)
    assert deleted.json() == {"deleted": True, "workflow_terminated": False}
    _error(await api.http.get(path), 404, "SessionNotFoundError")


async def test_send_message_waits_for_the_turn(api: Api) -> None:
    path = api.session(api.helpdesk, "ana", _unique("s"), "/messages")
    turn = (await api.http.post(path, json={"text": "my vpn is down", "message_id": "m-1"})).json()
    assert turn["final_text"].startswith("Opened T-vpn")
    assert [p["name"] for p in turn["pending"]] == ["open_ticket"]
    again = (await api.http.post(path, json={"text": "my vpn is down", "message_id": "m-1"})).json()
    assert again["invocation_id"] == turn["invocation_id"]  # the same message id is the same turn


async def _stream(api: Api, path: str, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    received = []
    async with aconnect_sse(api.http, "POST", path, json=body) as source:
        assert source.response.headers["content-type"].startswith("text/event-stream")
        async for sse in source.aiter_sse():
            received.append((sse.event, json.loads(sse.data)))
    return received


async def test_stream_then_confirm_through_the_api(api: Api) -> None:
    session = _unique("s")
    base = api.session(api.teller, "ana", session)
    received = await _stream(api, base + "/messages/stream", {"text": "send 50 to Ana"})
    kinds = [kind for kind, _ in received]
    assert kinds[0] == "start" and kinds[-1] == "done" and set(kinds[1:-1]) == {"event"}
    assert received[0][1]["workflow_id"].endswith(f"/ana/{session}")
    calls = [p["function_call"]["name"] for _, e in received[1:-1] for p in e["content"]["parts"] if p.get("function_call")]
    assert calls[:2] == ["get_balance", "send_money"] and "adk_request_confirmation" in calls
    done = received[-1][1]
    assert done["event_count"] == len(received) - 2
    [request] = done["pending"]
    assert request["kind"] == "tool_confirmation" and request["name"] == "send_money"
    assert (await api.http.get(base + "/pending")).json()["pending"] == [request]

    reply = base + f"/pending/{quote(request['call_id'], safe='')}"
    message = _error(await api.http.post(reply, json={"response": {"ok": True}}), 400, "InvalidInputError")
    assert '{"response": {"confirmed": true}}' in message
    _error(await api.http.post(base + "/pending/no-such-call", json={"response": {"confirmed": True}}), 404)
    _error(await api.http.post(reply, json={"confirmed": True}), 422, "ValidationError")

    turn = (await api.http.post(reply, json={"response": {"confirmed": True}})).json()
    assert turn["final_text"] == "Done: sent 50 to Ana; the balance was 1200."
    assert turn["pending"] == []
    stored = (await api.http.get(base)).json()
    assert stored["events"][-1]["content"]["parts"][0]["text"] == turn["final_text"]

    deleted = (await api.http.delete(base)).json()
    assert deleted == {"deleted": True, "workflow_terminated": True}
    # Terminated, and deleted with its history in the background (adk_temporal.deletion): either may be seen.
    try:
        described = await api.backend.client.client.get_workflow_handle(stored["workflow_id"]).describe()
        assert described.status is not None and described.status.name == "TERMINATED"
    except RPCError as e:
        assert e.status == RPCStatusCode.NOT_FOUND


async def test_long_running_tool_answered_through_the_api(api: Api) -> None:
    base = api.session(api.helpdesk, "bo", _unique("s"))
    first = (await api.http.post(base + "/messages", json={"text": "vpn"})).json()
    [request] = first["pending"]
    assert request["kind"] == "long_running_tool"
    turn = (await api.http.post(base + f"/pending/{request['call_id']}",
                                json={"response": {"status": "closed", "resolution": "router restarted"}})).json()  # fmt: skip
    assert turn["final_text"] == "Ticket closed: router restarted."


async def test_stream_with_partial_events(api: Api) -> None:
    base = api.session(api.words, "ana", _unique("s"))
    received = await _stream(api, base + "/messages/stream", {"text": "go", "partial": True})
    kinds = [kind for kind, _ in received]
    assert kinds == ["start", *["partial"] * len(WORDS), "event", "done"], kinds
    assert [e["content"]["parts"][0]["text"] for kind, e in received if kind == "partial"] == WORDS
    assert received[-2][1]["content"]["parts"][0]["text"] == "".join(WORDS)
    assert received[-1][1]["final_text"] == "".join(WORDS) and received[-1][1]["event_count"] == 1
    # Without partial=true the same turn streams the stored events only.
    plain = await _stream(api, api.session(api.words, "ana", _unique("s"), "/messages/stream"), {"text": "go"})
    assert [kind for kind, _ in plain] == ["start", "event", "done"]
    message = _error(await api.http.post(base + "/messages", json={"text": "go", "partial": True}), 400)
    assert "/messages/stream" in message


async def test_an_app_no_worker_serves_is_refused_before_anything_is_sent(durable_stack: DurableStack) -> None:
    nobody = f"nobody-polls-{uuid.uuid4().hex[:6]}"
    client = AdkClient(durable_stack.client.client, task_queue=nobody)
    backend = ApiBackend.open(client, durable_stack.database_url, apps=[AppInfo(name="orphan")])
    try:
        async with serving(None, port=0, api=backend, page=False) as url, httpx.AsyncClient(base_url=url) as http:
            path = "/api/v1/apps/orphan/users/u/sessions/s"
            for rest in ("/messages", "/messages/stream", "/pending/c1"):
                body = {"response": {"confirmed": True}} if "pending" in rest else {"text": "hi"}
                message = _error(await http.post(path + rest, json=body), 503 if "pending" not in rest else 404)
                if "pending" not in rest:
                    assert nobody in message and "adkt worker --app" in message
    finally:
        await backend.close()
    with pytest.raises(RPCError) as error:  # nothing was started
        await client.client.get_workflow_handle(session_workflow_id("orphan", "u", "s")).describe()
    assert error.value.status == RPCStatusCode.NOT_FOUND


async def test_a_turn_that_fails_after_the_stream_opened_ends_it_with_an_error_event(api: Api) -> None:
    received = await _stream(api, api.session(api.broken, "ana", _unique("s"), "/messages/stream"), {"text": "hi"})
    # Every event the turn made reaches the stream before the error, here the stored error event
    # (once depending on when the client last polled; now always: a failed turn keeps its events).
    assert [kind for kind, _ in received] == ["start", "event", "error"]
    error_event = received[1][1]
    assert error_event["author"] == "broken" and error_event["error_code"]
    assert "the provider refused the request" in error_event["error_message"]
    assert received[-1][1]["error"] == "TurnFailedError"
    assert "the provider refused the request" in received[-1][1]["message"]
    # The same failure on the waiting endpoint: a 502 (not the caller's fault), JSON with the reason.
    message = _error(await api.http.post(api.session(api.broken, "ana", _unique("s"), "/messages"), json={"text": "hi"}), 502)
    assert "the provider refused the request" in message


async def test_bad_input_is_4xx_with_a_fix(api: Api) -> None:
    http = api.http
    message = _error(await http.get(f"/api/v1/apps/{api.teller}/users/%20ana/sessions/s"), 400, "InvalidInputError")
    assert "leading or trailing whitespace" in message
    _error(await http.get(f"/api/v1/apps/{api.teller}/users/a%00b/sessions/s"), 400, "InvalidInputError")
    _error(await http.get(f"/api/v1/apps/{api.teller}/users/%FF/sessions/s"), 400, "InvalidInputError")
    message = _error(await http.post("/api/v1/apps/nope/users/u/sessions", json={}), 404, "NotFoundError")
    assert api.teller in message and "--app" in message
    path = api.session(api.teller, "u", "s", "/messages")
    message = _error(await http.post(path, content=b"{not json", headers={"Content-Type": "application/json"}), 400, "InvalidJson")
    _error(await http.post(path, json={"text": "a", "content": {"parts": [{"text": "b"}]}}), 422, "ValidationError")
    message = _error(await http.post(path, json={"txt": "hi"}), 422, "ValidationError")
    assert "txt" in message and "text" in message
    _error(await http.post(path + "/stream", json={}), 422, "ValidationError")
    _error(await http.post(api.session("nope", "u", "s", "/messages/stream"), json={"text": "hi"}), 404)
    _error(await http.post(f"/api/v1/apps/{api.teller}/users/u/sessions", json={"state": {"": 1}}), 400)
    _error(await http.put(api.session(api.teller, "u", "s")), 405, "MethodNotAllowed")
    message = _error(await http.get("/api/v1/no/such/route"), 404, "NotFoundError")
    assert "openapi.json" in message
    _error(await http.get("/api/v1/evals/runs", params={"limit": 0}), 422, "ValidationError")
    _error(await http.get(f"/api/v1/apps/{api.teller}/sessions", params={"user": "x"}), 422, "ValidationError")


async def test_eval_runs_are_readable(api: Api, durable_stack: DurableStack) -> None:
    store = EvalResultStore(durable_stack.database_url)
    run_id = _unique("run")
    try:
        await store.start_run(RunRecord(run_id=run_id, suite="tests.suite:cases", mode="in_process", start_time=time.time()))
        await store.record_trial(run_id, TrialRecord(case_name="refund", trial=0, status="passed", turns=2))
        unchecked = MetricResult(False, evaluated=False, evidence=["google-adk criterion 'safety_v1' is not supported"])
        await store.record_trial(run_id, TrialRecord(case_name="tone", trial=0, status="not_evaluated",
                                                     metrics={"safety_v1": unchecked}))  # fmt: skip
        await store.finish_run(
            run_id, status="completed", summary=EvalSummary(total=2, passed=1, not_evaluated=1),
            cases=[CaseRecord(case_name="refund", status="passed", passed_trials=1),
                   CaseRecord(case_name="tone", status="not_evaluated")],
        )  # fmt: skip
    finally:
        await store.close()
    runs = (await api.http.get("/api/v1/evals/runs", params={"limit": 500})).json()["runs"]
    assert run_id in [r["run_id"] for r in runs]
    detail = (await api.http.get(f"/api/v1/evals/runs/{run_id}")).json()
    assert detail["run"]["status"] == "completed"
    assert [(t["case_name"], t["status"]) for t in detail["trials"]] == [("refund", "passed"), ("tone", "not_evaluated")]
    assert detail["trials"][1]["metrics"]["safety_v1"]["evaluated"] is False
    assert detail["run"]["summary"]["not_evaluated"] == 1
    assert [(c["case_name"], c["status"]) for c in detail["cases"]] == [("refund", "passed"), ("tone", "not_evaluated")]
    _error(await api.http.get("/api/v1/evals/runs/nope"), 404, "NotFoundError")


@contextlib.asynccontextmanager
async def _adkt_serving(
    args: list[str], env: dict[str, str], log: Path, *, start_seconds: float, stop_seconds: float
) -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, Any]]]:
    """``python -m adkt.main *args --port P`` on a free port, as a user runs it. Yields an HTTP client
    for it and its /api/v1/apps, once it answers (within ``start_seconds``); then Ctrl-C, after which
    it must exit cleanly (within ``stop_seconds``), without a traceback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = args[0]
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "adkt.main", *args, "--port", str(port)],
                                   stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=env)  # fmt: skip
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
            for _ in range(int(start_seconds * 10)):  # bounded
                if process.poll() is not None:
                    pytest.fail(f"adkt {command} exited: {log.read_text()}")
                try:
                    apps = (await http.get("/api/v1/apps")).json()
                    break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)
            else:
                pytest.fail(f"adkt {command} did not answer in {start_seconds:.0f} s: {log.read_text()}")
            yield http, apps
    finally:
        process.send_signal(signal.SIGINT)
        code = await asyncio.to_thread(process.wait, stop_seconds)
    assert code in (0, 130), log.read_text()
    assert "Traceback" not in log.read_text(), log.read_text()


@pytest.mark.parametrize("command", ["api", "web"])
async def test_adkt_api_and_web_commands(command: str, api: Api, durable_stack: DurableStack, tmp_path: Path) -> None:
    """The commands as a user runs them, against a configured Temporal and Postgres; Ctrl-C stops them."""
    env = {**os.environ, "ADK_DIR": str(tmp_path), "ADK_TASK_QUEUE": durable_stack.task_queue}
    args = [command, "--app", api.helpdesk, "--address", durable_stack.address,
            "--database-url", durable_stack.database_url, "--temporal-ui", "http://ui.example:8233"]  # fmt: skip
    async with _adkt_serving(args, env, tmp_path / "log.txt", start_seconds=20, stop_seconds=30) as (http, apps):
        assert [a["name"] for a in apps["apps"]] == [api.helpdesk]
        assert apps["temporal_ui"] == "http://ui.example:8233"
        turn = (await http.post(api.session(api.helpdesk, "cli", _unique("s"), "/messages"), json={"text": "vpn"})).json()
        assert turn["final_text"] == "Opened T-vpn; waiting for it to close."
        root = await http.get("/")
        if command == "web":
            assert root.headers["content-type"].startswith("text/html") and "dev.js" in root.text
            assert apps["simulator_page"] == "/sim" and (await http.get("/sim")).status_code == 200
        else:
            assert root.json()["openapi"] == "/api/v1/openapi.json" and apps["simulator_page"] is None


async def test_adkt_web_with_nothing_configured_serves_its_apps_from_an_embedded_stack(tmp_path: Path) -> None:
    """No Temporal configured, no `adkt dev`: the command starts Temporal (with its UI) and Postgres
    for its --app apps, and the page's workflow links point at that UI."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "ADK_"))}
    env["ADK_DIR"] = str(tmp_path / "adk")
    args = ["web", "--app", "examples.w1:app"]
    # Starting Temporal and Postgres takes a while on a loaded machine: up to 60 s.
    async with _adkt_serving(args, env, tmp_path / "log.txt", start_seconds=60, stop_seconds=60) as (http, apps):
        assert [a["name"] for a in apps["apps"]] == ["w1"]
        assert apps["temporal_ui"] and apps["temporal_ui"].startswith("http://127.0.0.1:")
        path = "/api/v1/apps/w1/users/u/sessions/s1"
        turn = (await http.post(path + "/messages", json={"text": "Please add 1 and 2."})).json()
        assert turn["final_text"], turn
        session = (await http.get(path)).json()
        assert session["workflow_url"].startswith(apps["temporal_ui"] + "/namespaces/default/workflows/")
        assert (await http.get(apps["temporal_ui"])).status_code == 200


async def test_a_quiet_stream_gets_keepalives_and_keeps_its_order() -> None:
    async def slow() -> AsyncIterator[Sse]:
        yield Sse("start", ErrorBody(error="a", message="first"))
        await asyncio.sleep(0.35)
        yield Sse("done", ErrorBody(error="b", message="after a pause"))

    items = [item async for item in with_keepalive(slow(), every=0.1)]
    assert items[0] is not None and items[0].event == "start"
    assert items[-1] is not None and items[-1].event == "done"
    assert 2 <= items.count(None) <= 4  # a keep-alive about every 0.1 s of the pause

    async def failing() -> AsyncIterator[Sse]:
        yield Sse("start", ErrorBody(error="a", message="first"))
        raise RuntimeError("the source failed")

    with pytest.raises(RuntimeError, match="the source failed"):
        async for _ in with_keepalive(failing(), every=0.1):
            pass
