"""Browser tests: the durable stack of tests/integration plus Debian's chromium driven by playwright."""

from __future__ import annotations

from tests.integration.conftest import durable_stack  # noqa: F401  (the fixture, reused)
