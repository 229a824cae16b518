"""The simulator's page in a real headless browser (playwright driving Debian's chromium): a durable
run waits, the page shows its request, a person answers with a function call through the form
generated from the tool's schema and then with text, and the run completes with those answers."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from adkt.web.serve import durable_service, serving
from tests.browser.conftest import Screenshots
from tests.integration import simulator_app
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration


async def test_a_person_answers_from_the_page(durable_stack: DurableStack, chromium: str, screenshots: Screenshots) -> None:
    from playwright.async_api import async_playwright, expect

    app = durable_stack.register(simulator_app.single)
    session_id = f"s-{uuid.uuid4().hex[:8]}"
    service = durable_service(durable_stack.database_url, durable_stack.client.client)
    try:
        async with serving(service, port=0) as base, async_playwright() as p:
            browser = await p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            await page.goto(base + "/")
            await expect(page.locator("#live")).to_have_text("live")
            run = asyncio.create_task(
                durable_stack.client.send(app.name, "u", session_id, "What's the weather in Lisbon for 2 days?")
            )
            # The list updates itself (SSE) when the run's request is stored.
            row = page.locator("tr", has_text=session_id)
            await expect(row.get_by_test_id("pending-count")).to_have_text("1 waiting", timeout=30_000)
            await screenshots.take(page, "simulator-sessions")

            await row.locator("a").click()
            head = page.get_by_test_id("head-request")
            await expect(head).to_contain_text("What's the weather in Lisbon for 2 days?")
            await expect(head).to_contain_text("Answer with get_weather.")
            await expect(page.get_by_test_id("tool-get_weather")).to_be_visible()

            # A function call through the generated form; the form checks before sending.
            await page.get_by_test_id("mode-calls").check()
            await page.get_by_test_id("arg-days").fill("2")
            await page.get_by_test_id("submit").click()
            await expect(page.get_by_test_id("composer-error")).to_contain_text("Fix the highlighted arguments")
            await expect(page.get_by_test_id("composer")).to_contain_text("required")
            await page.get_by_test_id("arg-city").fill("Lisbon")
            await screenshots.take(page, "simulator-session")
            await page.get_by_test_id("submit").click()

            # The tool ran in the durable run; its result is in the next request, shown live.
            await expect(head).to_contain_text('"sky": "sunny"', timeout=30_000)
            await page.get_by_test_id("answer-text").fill("Sunny in Lisbon for the next **2 days**.")
            await page.get_by_test_id("submit").click()
            await expect(page.get_by_test_id("no-head")).to_be_visible(timeout=30_000)
            await expect(page.get_by_test_id("timeline")).to_contain_text("Sunny in Lisbon")
            await screenshots.take(page, "simulator-timeline")
            await browser.close()

        result = await asyncio.wait_for(run, 30)
        assert result.final_text == "Sunny in Lisbon for the next **2 days**."
        session = await durable_stack.sessions.get_session(app_name=app.name, user_id="u", session_id=session_id)
        calls = [p.function_call for e in session.events if e.content for p in e.content.parts if p.function_call]
        assert [(c.name, c.args) for c in calls] == [("get_weather", {"city": "Lisbon", "days": 2})]
        assert session.events[-1].content.text == "Sunny in Lisbon for the next **2 days**."
        screenshots.publish()
    finally:
        await service.store.close()


async def test_a_request_whose_run_is_gone_shows_as_closed(chromium: str, screenshots: Screenshots) -> None:
    """A person answers a request whose run has ended: the page says why, the timeline shows the
    request closed unanswered, and the next request is the one to answer."""
    import time

    from playwright.async_api import async_playwright, expect

    from adk_core.simulator import SimulatorService

    service = SimulatorService()
    common = {"app_name": "shop", "user_id": "u", "adk_session_id": "s1", "agent_name": "helper"}
    orphan, live = str(uuid.uuid4()), str(uuid.uuid4())
    asked = {"contents": [{"role": "user", "parts": [{"text": "Where is my parcel?"}]}]}
    request = await service.submit_request(turn_id=orphan, event_id="e1", timestamp=time.time(), llm_request=asked, **common)
    again = {"contents": [{"role": "user", "parts": [{"text": "Hello? Where is my parcel?"}]}]}
    await service.submit_request(turn_id=live, event_id="e2", timestamp=time.time(), llm_request=again, **common)
    async with serving(service, port=0) as base, async_playwright() as p:
        browser = await p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = await browser.new_page(viewport={"width": 1280, "height": 900})
        await page.goto(base + "/")
        await page.get_by_test_id(f"session-{request.session_id}").locator("a").click()
        head = page.get_by_test_id("head-request")
        await expect(head).to_contain_text("Where is my parcel?")
        await page.get_by_test_id("answer-text").fill("It ships tomorrow.")
        await page.get_by_test_id("submit").click()
        await expect(page.get_by_test_id("composer-error")).to_contain_text("the in-process run that asked has ended")
        await page.reload()
        await expect(head).to_contain_text("Hello? Where is my parcel?")
        await expect(page.get_by_test_id("abandoned")).to_contain_text("Closed unanswered")
        await expect(page.get_by_test_id("closed-badge")).to_have_text("closed")
        await screenshots.take(page, "simulator-closed-request")
        await browser.close()
    assert (await service.view(request.session_id)).head.turn_id == live
    screenshots.publish()
