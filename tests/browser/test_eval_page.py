"""Eval on the dev page, in a real headless browser over the durable stack (issue 19, item 6): start a
quick scripted suite from the page and follow it to the end, open a trial's trace, compare it with
an earlier run (the regression highlighted), see the trend chart, run only some of a suite's cases,
cancel a run and resume it, and save a chat as an eval case that replays.

ADK_SCREENSHOT_DIR=docs/img refreshes eval-run.png, eval-trace.png, eval-compare.png, eval-trend.png and
eval-pick-cases.png."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import httpx
import pytest

from adk_core import App, LlmAgent, LlmRequest, ScriptedModel
from adk_core.eval import run_eval
from adk_core.eval.metrics.base import MetricResult
from adk_core.eval.results import EvalSummary
from adk_core.eval.store import CaseRecord, EvalResultStore, RunRecord, TrialRecord
from adk_core.models import LlmResponse, function_call_response, text_response, tool_responses_this_turn
from adk_core.simulator import SimulatorExport, eval_case
from adkt.web.api.backend import ApiBackend
from adkt.web.api.models import AppInfo
from adkt.web.serve import serving
from tests.browser.conftest import Screenshots
from tests.integration.conftest import DurableStack
from tests.integration.eval_page_suite import SUITE
from tests.integration.worker_wait import worker_polls

pytestmark = pytest.mark.integration

LONG = 60_000  # ms: the whole suite runs on a worker shared with other tests


def get_balance(account: str) -> dict:
    """Look up an account's balance."""
    return {"account": account, "balance": 1200}


def _teller(request: LlmRequest) -> LlmResponse:
    done = tool_responses_this_turn(request)
    if not done:
        return function_call_response("get_balance", {"account": "checking"})
    return text_response(f"Your balance is {done[-1]['balance']}.")


def _bank(name: str, model: ScriptedModel) -> App:
    return App(name=name, root_agent=LlmAgent(name="teller", model=model, tools=[get_balance]))


async def _earlier_runs(store: EvalResultStore) -> list[str]:
    """Two stored runs of the suite an hour and half an hour ago: the trend's history. In the later
    one escalate-angry passed, so today's run regresses it."""
    ids = [f"earlier-{i}-{uuid.uuid4().hex[:6]}" for i in (1, 2)]
    for i, run_id in enumerate(ids):
        started = time.time() - 3600 + 1800 * i
        await store.start_run(RunRecord(run_id=run_id, suite=SUITE, mode="durable", start_time=started))
        refund = {"tool_trajectory": MetricResult(i == 1, 0.5 + 0.5 * i), "refund_recorded": MetricResult(True),
                  "helpful": MetricResult(True, 0.6 + 0.2 * i, evidence=["pass: fine"])}  # fmt: skip
        angry = {"offers_manager": MetricResult(i == 1), "helpful": MetricResult(i == 1, 0.3 + 0.4 * i)}
        for case, metrics in (("refund-order", refund), ("escalate-angry", angry)):
            status = "passed" if all(m.passed for m in metrics.values()) else "failed"
            await store.record_trial(run_id, TrialRecord(case_name=case, status=status, metrics=metrics, turns=1))
        cases = [CaseRecord(case_name="refund-order", status="passed" if i else "failed", passed_trials=i),
                 CaseRecord(case_name="escalate-angry", status="passed" if i else "failed", passed_trials=i)]  # fmt: skip
        await store.finish_run(run_id, status="passed" if i else "failed", cases=cases, end_time=started + 5,
                               summary=EvalSummary(total=2, passed=2 * i, failed=2 - 2 * i))  # fmt: skip
    return ids


async def test_start_follow_trace_compare_trend_and_save_a_chat(
    durable_stack: DurableStack, chromium: str, screenshots: Screenshots, tmp_path: Path
) -> None:
    from playwright.async_api import async_playwright, expect

    bank = durable_stack.register(_bank(f"bank_{uuid.uuid4().hex[:6]}", ScriptedModel(_teller)))
    backend = ApiBackend.open(durable_stack.client, durable_stack.database_url, apps=[AppInfo(name=bank.name, agent="teller")],
                              eval_suites=["tests.integration"])  # fmt: skip
    assert backend.evals is not None
    await worker_polls(backend, durable_stack.task_queue)
    earlier = await _earlier_runs(backend.evals)
    try:
        async with serving(None, port=0, api=backend) as base, async_playwright() as p:
            browser = await p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = await browser.new_page(viewport={"width": 1280, "height": 860})

            # Start a run: the suite picker offers the suite (an earlier run named it); 2 trials, 2 at once.
            await page.goto(f"{base}/#/evals")
            suite = page.get_by_test_id("suite")
            await expect(page.locator(f"#eval-suites option[value='{SUITE}']")).to_have_count(1)
            await suite.fill("os:path")  # a module the server does not allow: refused, nothing starts
            await page.get_by_test_id("start").click()
            await expect(page.get_by_test_id("start-error")).to_contain_text("not one this server may start")
            await suite.fill(SUITE)
            await page.get_by_test_id("trials").fill("2")
            await page.get_by_test_id("parallel").fill("2")
            await page.get_by_test_id("start").click()

            # Followed live: the progress card counts trials until the workflow completes.
            await expect(page.get_by_test_id("progress")).to_be_visible(timeout=LONG)
            await expect(page.get_by_test_id("progress-count")).to_have_text("4 of 4 trials", timeout=LONG)
            run = page.get_by_test_id("run")
            await expect(run).to_contain_text("1 passed, 1 failed, 0 errors of 2", timeout=LONG)
            run_id = (await page.locator("h1").text_content() or "").strip()
            trials = page.get_by_test_id("trials")
            await expect(trials.locator("tr")).to_have_count(5)  # header + 2 cases x 2 trials
            await expect(trials).to_contain_text("offers_manager")
            await expect(page.get_by_test_id("compare-with").locator(f"option[value='{earlier[1]}']")).to_have_count(1)
            await screenshots.take(page, "eval-run")

            # A trial's trace: conversation, tool calls with arguments and results, state, the judge's rationale.
            await page.get_by_test_id("trace-refund-order-1").click()
            await expect(page.get_by_test_id("trace-log")).to_contain_text("Please refund order 42")
            await expect(page.get_by_test_id("trace-log")).to_contain_text("Refunded 30 for order 42.")
            calls = page.get_by_test_id("tool-calls")
            await expect(calls).to_contain_text("lookup_order")
            await expect(calls).to_contain_text('"total": 30')
            await expect(calls).to_contain_text('"amount": 30')
            await expect(page.get_by_test_id("state-before")).to_contain_text("customer")
            await expect(page.get_by_test_id("state-before")).not_to_contain_text("refund_status")
            await expect(page.get_by_test_id("state-changes")).to_contain_text("refund_status")
            await expect(page.get_by_test_id("state-after")).to_contain_text('"approved"')
            judge = page.get_by_test_id("judge-helpful")
            await expect(judge).to_contain_text("judge")
            await expect(judge).to_contain_text("The agent looked the order up and confirmed the refund amount.")
            await screenshots.take(page, "eval-trace")

            # Compare the later earlier run with today's: escalate-angry passed there and fails now.
            await page.goto(f"{base}/#/evals")
            await page.get_by_test_id("compare-a").select_option(earlier[1])
            await page.get_by_test_id("compare-b").select_option(run_id)
            await page.get_by_test_id("compare").click()
            angry = page.get_by_test_id("case-escalate-angry")
            await expect(angry).to_have_class("case-row regression")
            await expect(page.get_by_test_id("metric-escalate-angry-offers_manager")).to_have_class("metric-row regression")
            await expect(page.get_by_test_id("case-refund-order")).to_have_class("case-row same")
            await expect(page.get_by_test_id("compare-summary")).to_contain_text("3 regressions")
            await screenshots.take(page, "eval-compare")

            # The trend of the suite: one point per run for each metric, oldest first.
            await page.goto(f"{base}/#/evals/{run_id}")
            await page.get_by_test_id("trend-link").click()
            helpful = page.get_by_test_id("trend-helpful")
            await expect(helpful.locator("circle")).to_have_count(3)
            await expect(helpful.locator("circle").last).to_have_attribute("data-run", run_id)
            await expect(page.get_by_test_id("trend-offers_manager").locator("circle.fail")).to_have_count(2)
            await screenshots.take(page, "eval-trend")

            # Run only some cases: choosing a suite shows its cases, all checked; the run has only the checked ones.
            await page.goto(f"{base}/#/evals")
            await page.get_by_test_id("suite").fill(SUITE)
            refund, angry = page.get_by_test_id("case-pick-refund-order"), page.get_by_test_id("case-pick-escalate-angry")
            await expect(refund).to_be_checked()
            await expect(angry).to_be_checked()
            await expect(page.get_by_test_id("case-pick-count")).to_have_text("2 of 2 cases")
            await page.get_by_test_id("case-pick-none").click()  # nothing picked: refused on the page, nothing starts
            await page.get_by_test_id("start").click()
            await expect(page.get_by_test_id("start-error")).to_contain_text("Pick at least one case")
            await page.get_by_test_id("case-pick-all").click()
            await expect(page.get_by_test_id("start-error")).to_be_hidden()
            await angry.uncheck()
            await expect(page.get_by_test_id("case-pick-count")).to_have_text("1 of 2 cases")
            await expect(refund).to_be_checked()
            await screenshots.take(page, "eval-pick-cases")
            await page.get_by_test_id("start").click()
            await expect(page.get_by_test_id("progress-count")).to_have_text("1 of 1 trials", timeout=LONG)
            await expect(page.get_by_test_id("run")).to_contain_text("1 passed, 0 failed, 0 errors of 1", timeout=LONG)
            await expect(page.get_by_test_id("cases")).to_contain_text("refund-order")
            await expect(page.get_by_test_id("cases")).not_to_contain_text("escalate-angry")
            picked = await backend.evals.get_run((await page.locator("h1").text_content() or "").strip())
            assert picked is not None and picked.run.config == {"cases": ["refund-order"]}
            assert [c.case_name for c in picked.cases] == ["refund-order"]
            assert [t.case_name for t in picked.trials] == ["refund-order"]

            # Cancel a run from its page, then resume it: it ends with every trial, none run twice.
            await page.goto(f"{base}/#/evals")
            await page.get_by_test_id("suite").fill("tests.integration.eval_scale_apps:slow")
            await page.get_by_test_id("trials").fill("2")  # 8 trials one at a time, 0.4 s each: time to cancel
            await page.get_by_test_id("parallel").fill("1")
            await page.get_by_test_id("start").click()
            await page.get_by_test_id("cancel-run").click(timeout=LONG)
            await expect(page.get_by_test_id("progress")).to_contain_text("canceled", timeout=LONG)
            await expect(page.get_by_test_id("run")).to_contain_text("cancelled", timeout=LONG)
            await page.get_by_test_id("resume-run").click()
            await expect(page.get_by_test_id("progress")).to_contain_text("completed", timeout=LONG)
            await expect(page.get_by_test_id("run")).to_contain_text("4 passed, 0 failed, 0 errors of 4")
            slow_id = (await page.locator("h1").text_content() or "").strip()
            stored = await backend.evals.get_run(slow_id)
            assert stored is not None and stored.run.status == "passed" and len(stored.trials) == 8
            assert stored.run.config.get("resume") == 1  # resumed once, under the same id
            async with httpx.AsyncClient(base_url=f"{base}/api/v1") as http:  # what a closed run refuses
                closed = await http.post(f"/evals/runs/{slow_id}/cancel", json={})
                assert closed.status_code == 409 and "not running" in closed.json()["message"]
                finished = await http.post(f"/evals/runs/{slow_id}/resume", json={})
                assert finished.status_code == 409 and "nothing to resume" in finished.json()["message"]
                taken = await http.post("/evals/runs", json={"suite": SUITE, "run_id": slow_id})
                assert taken.status_code == 409 and "is taken" in taken.json()["message"]

            # Save a chat as an eval case: the download replays without the app's model.
            session_id = f"s-{uuid.uuid4().hex[:8]}"
            await page.goto(f"{base}/#/chat/{bank.name}/ana/{session_id}")
            await page.get_by_test_id("message").fill("What is my balance?")
            await page.get_by_test_id("send").click()
            await expect(page.get_by_test_id("log")).to_contain_text("Your balance is 1200.", timeout=LONG)
            async with page.expect_download() as download_info:
                await page.get_by_test_id("save-case").click()
            download = await download_info.value
            assert download.suggested_filename == f"{session_id}.eval-case.json"
            saved = tmp_path / download.suggested_filename
            await download.save_as(saved)
            await expect(page.get_by_test_id("case-saved")).to_contain_text("eval_case(")
            await browser.close()

        exported = SimulatorExport.model_validate_json(saved.read_text())
        assert exported.user_messages == ["What is my balance?"] and exported.app_name == bank.name

        def never(request: LlmRequest) -> LlmResponse:
            raise AssertionError("the saved answers replay instead of the model")

        replayed = await run_eval(eval_case(exported, _bank(bank.name, ScriptedModel(never))))
        assert replayed.status == "passed", replayed.metrics
        screenshots.publish()
    finally:
        await backend.close()
