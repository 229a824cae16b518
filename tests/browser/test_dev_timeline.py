"""The dev page's turn timeline in a real browser over the durable stack: a turn with a transfer, a
tool that Temporal retries and a confirmation drawn as bars with durations, tokens and cost; a bar
clicked shows its request and response; the conversation's totals in its header. A new session
opens without a request the browser reports as an error.

ADK_SCREENSHOT_DIR=docs/img refreshes docs/img/dev-timeline.png."""

from __future__ import annotations

import re
import uuid
from urllib.parse import quote

import pytest

from adk_temporal.workflows import session_workflow_id
from adkt.web.api.backend import ApiBackend
from adkt.web.api.models import AppInfo
from adkt.web.serve import serving
from tests.browser import timeline_app
from tests.browser.conftest import Screenshots
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration

TEMPORAL_UI = "http://localhost:8233"
DURATION = re.compile(r"\d+(\.\d+)? (ms|s)")


async def test_a_turn_drawn_as_a_timeline(durable_stack: DurableStack, chromium: str, screenshots: Screenshots) -> None:
    from playwright.async_api import async_playwright, expect

    app = durable_stack.register(timeline_app.concierge(f"dinner_{uuid.uuid4().hex[:6]}"))
    session_id = f"s-{uuid.uuid4().hex[:8]}"
    info = AppInfo(name=app.name, agent=app.root_agent.name, description=app.root_agent.description)
    backend = ApiBackend.open(durable_stack.client, durable_stack.database_url, apps=[info], temporal_ui=TEMPORAL_UI)
    try:
        async with serving(None, port=0, api=backend) as base, async_playwright() as p:
            browser = await p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            await page.goto(f"{base}/#/chat/{app.name}/ana/{session_id}")
            await expect(page.get_by_test_id("empty")).to_be_visible()
            await expect(page.get_by_test_id("timeline")).to_be_hidden()
            assert errors == [], errors  # a new session is asked about, not fetched into a 404

            await page.get_by_test_id("message").fill("A table for two at Luigi's at eight, please")
            await page.get_by_test_id("message").press("Enter")
            card = page.get_by_test_id("pending")
            await expect(card).to_contain_text("wants to run book_table", timeout=30_000)
            await card.get_by_test_id("approve").click()
            await expect(page.get_by_test_id("log")).to_contain_text("Booked: Luigi's, table 12 at 20:00.", timeout=30_000)

            timeline = page.get_by_test_id("timeline")
            chart = timeline.get_by_test_id("timeline-chart")
            # The approval continues the turn that asked; its timeline has every kind of bar.
            await expect(chart.locator('[data-testid="bar-wait"]')).to_have_count(1, timeout=10_000)
            await expect(chart.get_by_test_id("bar-agent")).to_have_count(2)
            agents = await chart.get_by_test_id("bar-agent").evaluate_all("bars => bars.map(b => b.dataset.name)")
            assert agents == ["concierge", "booker"], agents
            await expect(chart.get_by_test_id("bar-model")).to_have_count(4)  # transfer, find, book, answer
            tools = await chart.get_by_test_id("bar-tool").evaluate_all("bars => bars.map(b => b.dataset.name)")
            assert tools == ["transfer_to_agent", "find_table", "book_table", "book_table"], tools  # asked, then run
            await expect(chart.get_by_test_id("bar-retry")).to_have_count(1)  # find_table's first attempt failed
            wait = chart.locator(".tl-row.wait")
            await expect(wait).to_contain_text("confirm book_table")
            await expect(wait.locator(".tl-text")).to_have_text(DURATION)
            # Each model call: its duration, its tokens and its cost (the default price of gemini-2.5-flash).
            model_text = chart.locator(".tl-row.model .tl-text").first
            await expect(model_text).to_have_text(re.compile(r"^\d+(\.\d+)? (ms|s) · 1,200 in / 40 out tok · \$0\.000\d+$"))
            find = chart.locator('.tl-row.tool:has([data-name="find_table"]) .tl-text')
            await expect(find).to_contain_text("attempt 2")
            await expect(page.get_by_test_id("totals")).to_have_text(
                re.compile(r"^\d turns? · 4 model calls · 4 tool calls · 4,800 in / 160 out tokens · \$0\.00\d+$")
            )

            # A bar clicked: what the call was given and what it returned.
            await chart.locator('[data-testid="bar-tool"][data-name="find_table"]').click()
            detail = timeline.get_by_test_id("span-detail")
            await expect(detail.get_by_test_id("span-request")).to_contain_text('"restaurant": "Luigi\'s"')
            await expect(detail.get_by_test_id("span-response")).to_contain_text('"table": 12')
            await expect(detail).to_contain_text("attempts")
            await expect(detail).to_contain_text("did not answer")  # the failed attempt's error
            await chart.get_by_test_id("bar-model").first.click()
            await expect(detail.get_by_test_id("span-request")).to_contain_text("A table for two")
            await expect(detail.get_by_test_id("span-response")).to_contain_text("transfer_to_agent")
            await screenshots.take(page, "dev-timeline")

            # From the Temporal UI back: the conversation's workflow details link to its page.
            workflow_id = session_workflow_id(app.name, "ana", session_id)
            details = await (await durable_stack.client.client.get_workflow_handle(workflow_id).describe()).static_details()
            link = f"{base}/#/chat/{app.name}/ana/{session_id}"
            assert f"]({link})" in (details or ""), details
            await page.get_by_test_id("workflow-link").wait_for()
            assert await page.get_by_test_id("workflow-link").get_attribute("href") == (
                f"{TEMPORAL_UI}/namespaces/default/workflows/{quote(workflow_id, safe='')}")  # fmt: skip
            assert errors == [], errors
            await browser.close()
    finally:
        await backend.close()
    screenshots.publish()
