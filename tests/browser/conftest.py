"""Browser tests: the durable stack of tests/integration plus Debian's chromium driven by playwright.

``chromium`` is the browser's path ($ADK_CHROMIUM, else Debian's); ``screenshots`` takes full-page
screenshots into the test's folder and, with $ADK_SCREENSHOT_DIR set (docs/img refreshes the
screenshots in docs/web.md and docs/simulator.md), publishes them there once the test has passed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import durable_stack  # noqa: F401  (the fixture, reused)

EXPECT_TIMEOUT_MS = 20_000
"""How long playwright's expect() waits by default (its own default is 5 s): a page on a loaded 2-core
machine, right after chromium's cold start, can take longer than that, and a bounded wait that
passes sooner costs nothing."""


@pytest.fixture(autouse=True)
def _patient_expect() -> None:
    from playwright.async_api import expect

    expect.set_options(timeout=EXPECT_TIMEOUT_MS)


@pytest.fixture
def chromium() -> str:
    path = os.environ.get("ADK_CHROMIUM", "/usr/bin/chromium")
    if not Path(path).exists():
        pytest.fail(f"no chromium at {path}: apt-get install chromium (.ci/run does), or set ADK_CHROMIUM")
    return path


class Screenshots:
    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._taken: list[Path] = []

    async def take(self, page: Any, name: str) -> None:
        path = self._folder / f"{name}.png"
        await page.screenshot(path=str(path), full_page=True)
        self._taken.append(path)

    def publish(self) -> None:
        """Copy them to $ADK_SCREENSHOT_DIR, if set; call at the end of a test that passed."""
        target = os.environ.get("ADK_SCREENSHOT_DIR")
        if target:
            for path in self._taken:
                shutil.copy(path, Path(target) / path.name)


@pytest.fixture
def screenshots(tmp_path: Path) -> Screenshots:
    return Screenshots(tmp_path)
