"""The dev chat page in a real headless browser (playwright driving Debian's chromium), served by
the one web app (dev page, HTTP API and simulator) over the durable stack: a person sends a message,
sees the tool calls stream in, approves the confirmation with a button and sees the final answer;
the sessions list, the Temporal UI link, the eval runs view and the simulator's page at /sim.

ADK_SCREENSHOT_DIR=docs/img refreshes the screenshots in docs/web.md."""

from __future__ import annotations

import time
import uuid
from urllib.parse import quote

import pytest

from adk_core.eval.metrics.base import MetricResult
from adk_core.eval.results import EvalSummary
from adk_core.eval.store import CaseRecord, EvalResultStore, RunRecord, TrialRecord
from adk_temporal.workflows import session_workflow_id
from adkt.web.api.backend import ApiBackend
from adkt.web.api.models import AppInfo
from adkt.web.serve import durable_service, serving
from tests.browser import dev_app
from tests.browser.conftest import Screenshots
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration

TEMPORAL_UI = "http://localhost:8233"


async def _store_eval_run(database_url: str, run_id: str, app_name: str) -> None:
    store = EvalResultStore(database_url)
    try:
        await store.start_run(RunRecord(run_id=run_id, suite="examples.support_desk_evals:cases", mode="durable",
                                        start_time=time.time()))  # fmt: skip
        for case, passed in (("refund_within_policy", True), ("escalate_angry_customer", False)):
            metrics = {"tool_trajectory": MetricResult(passed=passed, score=1.0 if passed else 0.5),
                       "final_response_contains": MetricResult(passed=True, score=1.0)}  # fmt: skip
            await store.record_trial(run_id, TrialRecord(
                case_name=case, trial=0, status="passed" if passed else "failed", metrics=metrics, turns=2,
                duration_ms=840.0,
            ))  # fmt: skip
        unchecked = {"safety_v1": MetricResult(False, evaluated=False, evidence=["criterion 'safety_v1' is not supported"])}
        await store.record_trial(run_id, TrialRecord(case_name="tone_policy", trial=0, status="not_evaluated",
                                                     metrics=unchecked, turns=1))  # fmt: skip
        await store.finish_run(
            run_id, status="failed", summary=EvalSummary(total=3, passed=1, failed=1, not_evaluated=1, pass_hat_k=1 / 3),
            cases=[CaseRecord(case_name="refund_within_policy", status="passed", passed_trials=1, pass_hat_k=1.0,
                              duration_ms=840.0),
                   CaseRecord(case_name="escalate_angry_customer", status="failed", passed_trials=0, pass_hat_k=0.0,
                              duration_ms=840.0),
                   CaseRecord(case_name="tone_policy", status="not_evaluated", passed_trials=0, pass_hat_k=0.0)],
        )  # fmt: skip
    finally:
        await store.close()


async def test_chat_stream_and_approve_from_the_page(
    durable_stack: DurableStack, chromium: str, screenshots: Screenshots
) -> None:
    from playwright.async_api import async_playwright, expect

    app = durable_stack.register(dev_app.teller(f"bank_{uuid.uuid4().hex[:6]}"))
    other = durable_stack.register(dev_app.helpdesk(f"helpdesk_{uuid.uuid4().hex[:6]}"))
    session_id = f"s-{uuid.uuid4().hex[:8]}"
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    await _store_eval_run(durable_stack.database_url, run_id, app.name)
    infos = [AppInfo(name=a.name, agent=a.root_agent.name, description=a.root_agent.description) for a in (app, other)]
    backend = ApiBackend.open(durable_stack.client, durable_stack.database_url, apps=infos, temporal_ui=TEMPORAL_UI)
    simulator = durable_service(durable_stack.database_url, durable_stack.client.client)
    try:
        async with serving(simulator, port=0, api=backend) as base, async_playwright() as p:
            browser = await p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = await browser.new_page(viewport={"width": 1280, "height": 860})
            await page.goto(f"{base}/#/chat/{app.name}/ana/{session_id}")
            await expect(page.get_by_test_id("empty")).to_be_visible()
            await expect(page.get_by_test_id("app")).to_have_value(app.name)

            await page.get_by_test_id("message").fill("Please send 50 to Ana")
            await page.get_by_test_id("message").press("Enter")
            # The events arrive as the workflow makes them: the tool call, its response, the question.
            log = page.get_by_test_id("log")
            await expect(log.get_by_test_id("call-get_balance")).to_be_visible(timeout=30_000)
            await expect(log.get_by_test_id("response-get_balance")).to_contain_text('"balance":1200')
            await expect(log.get_by_test_id("confirmation-request")).to_contain_text("confirm send_money")
            card = page.get_by_test_id("pending")
            await expect(card).to_contain_text("teller wants to run send_money")
            await expect(page.get_by_test_id("running")).to_have_count(0)
            await log.get_by_test_id("call-get_balance").locator("summary").click()  # expandable
            await expect(log.get_by_test_id("call-get_balance").locator("pre")).to_contain_text('"account": "checking"')
            await screenshots.take(page, "dev-confirm")

            await card.get_by_test_id("approve").click()
            await expect(log).to_contain_text("Done: sent 50 to Ana; the balance was 1200.", timeout=30_000)
            await expect(page.get_by_test_id("pending")).to_have_count(0)
            await expect(log.get_by_test_id("response-send_money").last).to_contain_text('"sent":50')
            await expect(page.get_by_test_id("sessions")).to_contain_text(session_id)
            workflow_id = session_workflow_id(app.name, "ana", session_id)
            await expect(page.get_by_test_id("workflow-link")).to_have_attribute(
                "href", f"{TEMPORAL_UI}/namespaces/default/workflows/{quote(workflow_id, safe='')}"
            )
            await screenshots.take(page, "dev-chat")

            # Reloaded, the conversation comes back from the store, with nothing waiting.
            await page.reload()
            await expect(page.get_by_test_id("log")).to_contain_text("Done: sent 50 to Ana")
            await expect(page.get_by_test_id("event")).to_have_count(
                len((await durable_stack.sessions.get_session(app_name=app.name, user_id="ana",
                                                              session_id=session_id)).events)  # type: ignore[union-attr]
            )  # fmt: skip

            # Another app from the picker: a new session; its long-running tool is answered from the page.
            await page.get_by_test_id("app").select_option(other.name)
            await expect(page.get_by_test_id("empty")).to_be_visible()
            await page.get_by_test_id("message").fill("My VPN is down")
            await page.get_by_test_id("send").click()
            card = page.get_by_test_id("pending")
            await expect(card).to_contain_text("helpdesk waits for the result of open_ticket", timeout=30_000)
            await card.get_by_test_id("tool-result").fill("not json")
            await card.get_by_test_id("send-result").click()
            await expect(card.get_by_test_id("reply-error")).to_contain_text("not JSON")
            await card.get_by_test_id("tool-result").fill('{"status": "closed", "resolution": "router restarted"}')
            await expect(card.get_by_test_id("reply-error")).to_be_hidden()
            await screenshots.take(page, "dev-long-running")
            await card.get_by_test_id("send-result").click()
            await expect(page.get_by_test_id("log")).to_contain_text("Ticket closed: router restarted.", timeout=30_000)
            await expect(page.get_by_test_id("pending")).to_have_count(0)

            await page.get_by_role("link", name="Eval runs").click()
            await page.get_by_role("link", name=run_id).click()
            await expect(page.get_by_test_id("run")).to_contain_text("1 passed, 1 failed, 0 errors, 1 not evaluated of 3")
            await expect(page.get_by_test_id("run")).to_contain_text("examples.support_desk_evals:cases")
            await expect(page.get_by_test_id("cases")).to_contain_text("escalate_angry_customer")
            await expect(page.get_by_test_id("trials")).to_contain_text("tool_trajectory")
            # A case nothing checked shows as such, with why: never as passed.
            await expect(page.get_by_test_id("cases").locator(".badge.not-evaluated")).to_have_text("not_evaluated")
            await expect(page.get_by_test_id("trials")).to_contain_text(
                "not evaluated: safety_v1 (criterion 'safety_v1' is not supported)")
            await screenshots.take(page, "dev-evals")

            await page.goto(f"{base}/sim")
            await expect(page.locator("#live")).to_have_text("live")
            await expect(page.locator("a.brand")).to_have_attribute("href", "/sim/")
            await browser.close()

        session = await durable_stack.sessions.get_session(app_name=app.name, user_id="ana", session_id=session_id)
        assert session is not None
        calls = [p.function_call.name for e in session.events if e.content for p in e.content.parts if p.function_call]
        assert calls[:2] == ["get_balance", "send_money"]
        screenshots.publish()
    finally:
        await backend.close()
        await simulator.store.close()
