"""The eval endpoints' refusals over the durable stack (real Temporal, real Postgres): a suite outside
the allowed modules, a file path, a queue no worker polls, an unknown run, a chat holding a tool
confirmation saved as a case. Starting, following, cancelling and resuming (and what a closed run
refuses) are tested through the page: tests/browser/test_eval_page.py."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio

from adk_core import Runner
from adk_core.types import Content
from adkt.client import AdkClient
from adkt.web.api.backend import ApiBackend
from adkt.web.site import create_site
from tests.browser import dev_app
from tests.integration.conftest import DurableStack
from tests.integration.eval_page_suite import SUITE
from tests.integration.worker_wait import worker_polls

pytestmark = pytest.mark.integration


@pytest_asyncio.fixture(loop_scope="session")
async def api(durable_stack: DurableStack) -> AsyncIterator[tuple[httpx.AsyncClient, ApiBackend]]:
    backend = ApiBackend.open(durable_stack.client, durable_stack.database_url, apps=[], eval_suites=["tests.integration"])
    await worker_polls(backend, durable_stack.task_queue)
    transport = httpx.ASGITransport(app=create_site(backend))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1/api/v1") as http:
        yield http, backend
    await backend.close()


async def _workflows_of(stack: DurableStack, run_id: str) -> int:
    found = stack.client.client.list_workflows(f"WorkflowId = 'adk-eval/{run_id}'")
    return len([w async for w in found])


async def test_only_allowed_suites_start(api: tuple[httpx.AsyncClient, ApiBackend], durable_stack: DurableStack) -> None:
    http, _ = api
    suites = (await http.get("/evals/suites")).json()
    assert suites["allowed_modules"] == ["tests.integration"] and suites["task_queue"] == durable_stack.task_queue

    run_id = f"refused-{uuid.uuid4().hex[:6]}"
    refused = await http.post("/evals/runs", json={"suite": "os:path", "run_id": run_id})
    assert refused.status_code == 400, refused.text
    assert "not one this server may start" in refused.json()["message"] and "tests.integration" in refused.json()["message"]

    by_file = await http.post("/evals/runs", json={"suite": "tests/integration/eval_page_suite.py"})
    assert by_file.status_code == 422 and "not by file" in by_file.json()["message"]
    assert await _workflows_of(durable_stack, run_id) == 0


async def test_no_worker_on_the_queue_starts_nothing(durable_stack: DurableStack) -> None:
    lonely = AdkClient(durable_stack.client.client, task_queue=f"nobody-{uuid.uuid4().hex[:6]}")
    backend = ApiBackend.open(lonely, durable_stack.database_url, apps=[], eval_suites=["tests.integration"])
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_site(backend)),
                                     base_url="http://127.0.0.1/api/v1") as http:  # fmt: skip
            run_id = f"queued-{uuid.uuid4().hex[:6]}"
            answer = await http.post("/evals/runs", json={"suite": SUITE, "run_id": run_id})
            assert answer.status_code == 503 and "no worker polls task queue" in answer.json()["message"], answer.text
            assert await _workflows_of(durable_stack, run_id) == 0
            missing = await http.get(f"/evals/runs/{run_id}/progress")
            assert missing.status_code == 404 and "nothing stored" in missing.json()["message"]
    finally:
        await backend.close()


async def test_a_chat_with_a_confirmation_is_not_saved_as_a_case(
    api: tuple[httpx.AsyncClient, ApiBackend], durable_stack: DurableStack
) -> None:
    http, _ = api
    app = dev_app.teller(f"bank_{uuid.uuid4().hex[:6]}")
    runner = Runner(app_name=app.name, agent=app.root_agent, session_service=durable_stack.sessions)
    await durable_stack.sessions.create_session(app_name=app.name, user_id="ana", session_id="s1")
    async for _ in runner.run_async(user_id="ana", session_id="s1", new_message=Content.user("send 50 to Ana")):
        pass
    answer = await http.get(f"/apps/{app.name}/users/ana/sessions/s1/eval-case")
    assert answer.status_code == 400, answer.text
    assert "asked to confirm send_money" in answer.json()["message"]
    empty = await http.get(f"/apps/{app.name}/users/ana/sessions/nope/eval-case")
    assert empty.status_code == 404
