"""Signing in on the pages when the server requires authentication (API keys here): the dev page
asks for a key when the API answers 401, refuses a wrong one with the server's reason, and with the
right one chats (the turn streams, a confirmation is answered); the key travels in the Authorization
header only, never in a URL. The simulator's page signs in the same way and its live updates (an
event stream read with fetch) carry the key. ADK_SCREENSHOT_DIR=docs/img refreshes docs/img/sign-in.png."""

from __future__ import annotations

import secrets
import uuid

import pytest

from adkt.web.api.backend import ApiBackend
from adkt.web.api.models import AppInfo
from adkt.web.security import ApiKeys, HostAllowlist, WebAccess
from adkt.web.security._guard import LOOPBACK_HOSTS
from adkt.web.serve import durable_service, serving
from tests.browser import dev_app
from tests.browser.conftest import Screenshots
from tests.integration.conftest import DurableStack

pytestmark = pytest.mark.integration


async def test_the_pages_ask_for_a_key_refuse_a_wrong_one_and_chat_with_the_right_one(
    durable_stack: DurableStack, chromium: str, screenshots: Screenshots
) -> None:
    from playwright.async_api import async_playwright, expect

    app = durable_stack.register(dev_app.teller(f"bank_{uuid.uuid4().hex[:6]}"))
    ana_key, operator_key = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    access = WebAccess(HostAllowlist(LOOPBACK_HOSTS), ApiKeys.parse(f"ana:{ana_key},ops:{operator_key}:operator",
                                                                     source="the test"))  # fmt: skip
    backend = ApiBackend.open(durable_stack.client, durable_stack.database_url, apps=[AppInfo(name=app.name)])
    simulator = durable_service(durable_stack.database_url, durable_stack.client.client)
    session_id = f"s-{uuid.uuid4().hex[:8]}"
    try:
        async with serving(simulator, port=0, api=backend, access=access) as base, async_playwright() as p:
            browser = await p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = await browser.new_page(viewport={"width": 1100, "height": 700})
            urls: list[str] = []
            page.on("request", lambda request: urls.append(request.url))
            await page.goto(f"{base}/#/chat/{app.name}/ana/{session_id}")

            form = page.get_by_test_id("sign-in-form")
            await expect(form).to_be_visible()
            await expect(page.get_by_test_id("sign-in-error")).to_be_hidden()
            await page.get_by_test_id("token").fill("not-a-key-" + secrets.token_urlsafe(8))
            await page.get_by_test_id("sign-in").click()
            error = page.get_by_test_id("sign-in-error")
            await expect(error).to_contain_text("Refused: the bearer token is not a known API key")
            await screenshots.take(page, "sign-in")

            await page.get_by_test_id("token").fill(ana_key)
            await page.get_by_test_id("token").press("Enter")
            await expect(form).to_have_count(0)
            await expect(page.get_by_test_id("empty")).to_be_visible()
            await expect(page.get_by_test_id("sign-out")).to_be_visible()

            # The turn streams (a fetch-read event stream with the header), the confirmation is answered.
            await page.get_by_test_id("message").fill("Please send 50 to Ana")
            await page.get_by_test_id("message").press("Enter")
            log = page.get_by_test_id("log")
            await expect(log.get_by_test_id("call-get_balance")).to_be_visible(timeout=30_000)
            await page.get_by_test_id("pending").get_by_test_id("approve").click()
            await expect(log).to_contain_text("Done: sent 50 to Ana; the balance was 1200.", timeout=30_000)

            # A non-operator key does not open the simulator; signing out and in as an operator does,
            # and its live updates connect with the key.
            await page.get_by_test_id("sign-out").click()
            await page.goto(f"{base}/sim")
            await page.get_by_test_id("token").fill(operator_key)
            await page.get_by_test_id("sign-in").click()
            await expect(page.locator("#live")).to_have_text("live", timeout=15_000)
            await browser.close()
        assert not [u for u in urls if ana_key in u or operator_key in u], "a key went into a URL"
        screenshots.publish()
    finally:
        await backend.close()
        await simulator.store.close()
