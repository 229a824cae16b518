"""The simulator's function-call form lists a tool's arguments in the order the tool declares them
(`book_table(restaurant, people, time, notes)`), for a request stored in Postgres, whose JSONB
gives the keys back shortest first (tests/integration/test_simulator_arg_order.py)."""

from __future__ import annotations

import uuid

import pytest

from adk_core.models.base import LlmRequest
from adk_core.simulator.models import request_payload
from adk_core.tools import FunctionTool
from adk_core.types import Content
from adkt.web.serve import durable_service, serving
from tests.integration.conftest import DurableStack
from tests.integration.test_simulator_arg_order import book_table

pytestmark = pytest.mark.integration


async def test_the_form_keeps_the_declared_order(durable_stack: DurableStack, chromium: str) -> None:
    from playwright.async_api import async_playwright, expect

    request = LlmRequest(contents=[Content.user("a table for two")])
    request.append_tools([FunctionTool(book_table)])
    service = durable_service(durable_stack.database_url, durable_stack.client.client)
    adk_session = f"s-{uuid.uuid4().hex[:8]}"
    try:
        asked = await service.submit_request(
            app_name="dinner", user_id="u", adk_session_id=adk_session, agent_name="booker", turn_id=str(uuid.uuid4()),
            event_id=str(uuid.uuid4()), timestamp=1.0, llm_request=request_payload(request),
        )  # fmt: skip
        async with serving(service, port=0) as base, async_playwright() as p:
            browser = await p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = await browser.new_page()
            await page.goto(base + "/")
            await page.locator("tr", has_text=asked.session_id[:8]).locator("a").first.click()
            await page.get_by_test_id("mode-calls").check()
            fields = page.locator('[data-testid^="arg-"]')
            await expect(fields).to_have_count(4)
            names = await fields.evaluate_all("els => els.map(e => e.dataset.testid.slice(4))")
            assert names == ["restaurant", "people", "time", "notes"], names
            await browser.close()
    finally:
        await service.store.close()
